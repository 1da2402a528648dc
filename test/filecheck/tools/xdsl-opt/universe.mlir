// RUN: xdsl-opt %s -p fold-batch-norm | filecheck %s

// Stock xdsl-opt finds xnpu's dialects and passes through the `xdsl.universe` entry point.

func.func @main(%x: tensor<1x1x2x2xf32>) -> tensor<1x1x2x2xf32> {
  %w = nn.constant dense<2.0> : tensor<1x1x1x1xf32>
  %b = nn.constant dense<1.0> : tensor<1xf32>
  %gamma = nn.constant dense<3.0> : tensor<1xf32>
  %beta = nn.constant dense<0.5> : tensor<1xf32>
  %mean = nn.constant dense<1.0> : tensor<1xf32>
  %var = nn.constant dense<3.0> : tensor<1xf32>
  %y = nn.conv2d %x, %w, %b {strides = array<i64: 1, 1>, pads = array<i64: 0, 0, 0, 0>, dilations = array<i64: 1, 1>, group = 1 : i64} : (tensor<1x1x2x2xf32>, tensor<1x1x1x1xf32>, tensor<1xf32>) -> tensor<1x1x2x2xf32>
  %z = nn.batch_norm %y, %gamma, %beta, %mean, %var {epsilon = 1.0 : f32} : (tensor<1x1x2x2xf32>, tensor<1xf32>, tensor<1xf32>, tensor<1xf32>, tensor<1xf32>) -> tensor<1x1x2x2xf32>
  func.return %z : tensor<1x1x2x2xf32>
}

// f = 3 / sqrt(3 + 1) = 1.5: w' = 3, b' = (1 - 1) * 1.5 + 0.5 = 0.5
// CHECK:      %w = nn.constant dense<3.000000e+00> : tensor<1x1x1x1xf32>
// CHECK-NEXT: %b = nn.constant dense<5.000000e-01> : tensor<1xf32>
// CHECK-NEXT: %z = nn.conv2d %x, %w, %b
// CHECK-NOT:  nn.batch_norm
