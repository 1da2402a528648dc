// RUN: xnpu-opt %s -p fold-batch-norm | filecheck %s

// f = gamma / sqrt(var + eps) = [2/2, 1/1, 0.5/4] = [1, 1, 0.125]
// w' = w * f per output channel; b' = (b - mean) * f + beta

func.func @folds(%x: tensor<1x2x4x4xf32>) -> tensor<1x3x4x4xf32> {
  %w = nn.constant dense<[[[[1.0]], [[2.0]]], [[[3.0]], [[4.0]]], [[[5.0]], [[6.0]]]]> : tensor<3x2x1x1xf32>
  %b = nn.constant dense<[0.5, 0.25, -1.0]> : tensor<3xf32>
  %gamma = nn.constant dense<[2.0, 1.0, 0.5]> : tensor<3xf32>
  %beta = nn.constant dense<[1.0, 0.0, -1.0]> : tensor<3xf32>
  %mean = nn.constant dense<[0.5, 1.0, 2.0]> : tensor<3xf32>
  %var = nn.constant dense<[3.0, 0.0, 15.0]> : tensor<3xf32>
  %y = nn.conv2d %x, %w, %b {strides = array<i64: 1, 1>, pads = array<i64: 0, 0, 0, 0>, dilations = array<i64: 1, 1>, group = 1 : i64} : (tensor<1x2x4x4xf32>, tensor<3x2x1x1xf32>, tensor<3xf32>) -> tensor<1x3x4x4xf32> loc("conv0")
  %z = nn.batch_norm %y, %gamma, %beta, %mean, %var {epsilon = 1.0 : f32} : (tensor<1x3x4x4xf32>, tensor<3xf32>, tensor<3xf32>, tensor<3xf32>, tensor<3xf32>) -> tensor<1x3x4x4xf32> loc("bn0")
  func.return %z : tensor<1x3x4x4xf32>
}

// CHECK-LABEL: func.func @folds
// CHECK-NEXT:    %w = nn.constant dense<{{\[\[\[\[}}1.000000e+00]], {{\[\[}}2.000000e+00]]], {{\[\[\[}}3.000000e+00]], {{\[\[}}4.000000e+00]]], {{\[\[\[}}6.250000e-01]], {{\[\[}}7.500000e-01]]]]> : tensor<3x2x1x1xf32>
// CHECK-NEXT:    %b = nn.constant dense<[1.000000e+00, -7.500000e-01, -1.375000e+00]> : tensor<3xf32>
// CHECK-NEXT:    %z = nn.conv2d %x, %w, %b {strides = array<i64: 1, 1>, pads = array<i64: 0, 0, 0, 0>, dilations = array<i64: 1, 1>, group = 1 : i64} : (tensor<1x2x4x4xf32>, tensor<3x2x1x1xf32>, tensor<3xf32>) -> tensor<1x3x4x4xf32> loc(fused["conv0", "bn0"])
// CHECK-NEXT:    func.return %z : tensor<1x3x4x4xf32>

// A conv without bias gets one: b' = (0 - mean) * f + beta.

func.func @adds_bias(%x: tensor<1x1x2x2xf32>) -> tensor<1x1x2x2xf32> {
  %w = nn.constant dense<2.0> : tensor<1x1x1x1xf32>
  %gamma = nn.constant dense<3.0> : tensor<1xf32>
  %beta = nn.constant dense<0.5> : tensor<1xf32>
  %mean = nn.constant dense<1.0> : tensor<1xf32>
  %var = nn.constant dense<0.0> : tensor<1xf32>
  %y = nn.conv2d %x, %w {strides = array<i64: 1, 1>, pads = array<i64: 0, 0, 0, 0>, dilations = array<i64: 1, 1>, group = 1 : i64} : (tensor<1x1x2x2xf32>, tensor<1x1x1x1xf32>) -> tensor<1x1x2x2xf32>
  %z = nn.batch_norm %y, %gamma, %beta, %mean, %var {epsilon = 1.0 : f32} : (tensor<1x1x2x2xf32>, tensor<1xf32>, tensor<1xf32>, tensor<1xf32>, tensor<1xf32>) -> tensor<1x1x2x2xf32> loc("bn1")
  func.return %z : tensor<1x1x2x2xf32>
}

// CHECK-LABEL: func.func @adds_bias
// CHECK-NEXT:    %w = nn.constant dense<6.000000e+00> : tensor<1x1x1x1xf32>
// CHECK-NEXT:    %bias = nn.constant dense<-2.500000e+00> : tensor<1xf32>
// CHECK-NEXT:    %z = nn.conv2d %x, %w, %bias {{.*}} loc("bn1")
// CHECK-NOT:     nn.batch_norm

// The unnormalized conv result is also returned: folding would lose it.

func.func @shared_conv(%x: tensor<1x1x2x2xf32>) -> (tensor<1x1x2x2xf32>, tensor<1x1x2x2xf32>) {
  %w = nn.constant dense<2.0> : tensor<1x1x1x1xf32>
  %p = nn.constant dense<1.0> : tensor<1xf32>
  %y = nn.conv2d %x, %w {strides = array<i64: 1, 1>, pads = array<i64: 0, 0, 0, 0>, dilations = array<i64: 1, 1>, group = 1 : i64} : (tensor<1x1x2x2xf32>, tensor<1x1x1x1xf32>) -> tensor<1x1x2x2xf32>
  %z = nn.batch_norm %y, %p, %p, %p, %p {epsilon = 1.0 : f32} : (tensor<1x1x2x2xf32>, tensor<1xf32>, tensor<1xf32>, tensor<1xf32>, tensor<1xf32>) -> tensor<1x1x2x2xf32>
  func.return %z, %y : tensor<1x1x2x2xf32>, tensor<1x1x2x2xf32>
}

// CHECK-LABEL: func.func @shared_conv
// CHECK:         %y = nn.conv2d %x, %w {
// CHECK-NEXT:    %z = nn.batch_norm %y, %p, %p, %p, %p
