// RUN: xnpu-opt %s -p fold-batch-norm | filecheck %s

// A constant per output channel added to a conv's result is the conv's bias: b' = b + c
// ([1, C, 1, 1] as Paddle exports it, either operand order); a conv without bias gets c.

func.func @folds_add(%x: tensor<1x2x4x4xf32>) -> (tensor<1x3x4x4xf32>, tensor<1x3x4x4xf32>) {
  %w = nn.constant dense<1.0> : tensor<3x2x1x1xf32>
  %b = nn.constant dense<[0.5, 0.25, -1.0]> : tensor<3xf32>
  %c = nn.constant dense<[[[[1.0]], [[2.0]], [[3.0]]]]> : tensor<1x3x1x1xf32>
  %y = nn.conv2d %x, %w, %b {strides = array<i64: 1, 1>, pads = array<i64: 0, 0, 0, 0>, dilations = array<i64: 1, 1>, group = 1 : i64} : (tensor<1x2x4x4xf32>, tensor<3x2x1x1xf32>, tensor<3xf32>) -> tensor<1x3x4x4xf32> loc("conv0")
  %z = nn.add %y, %c : (tensor<1x3x4x4xf32>, tensor<1x3x1x1xf32>) -> tensor<1x3x4x4xf32> loc("add0")
  %v = nn.conv2d %x, %w {strides = array<i64: 1, 1>, pads = array<i64: 0, 0, 0, 0>, dilations = array<i64: 1, 1>, group = 1 : i64} : (tensor<1x2x4x4xf32>, tensor<3x2x1x1xf32>) -> tensor<1x3x4x4xf32> loc("conv1")
  %u = nn.add %c, %v : (tensor<1x3x1x1xf32>, tensor<1x3x4x4xf32>) -> tensor<1x3x4x4xf32> loc("add1")
  func.return %z, %u : tensor<1x3x4x4xf32>, tensor<1x3x4x4xf32>
}

// CHECK-LABEL: func.func @folds_add
// CHECK:         %b = nn.constant dense<[1.500000e+00, 2.250000e+00, 2.000000e+00]> : tensor<3xf32>
// CHECK-NEXT:    %z = nn.conv2d %x, %w, %b {{.*}} loc(fused["conv0", "add0"])
// CHECK:         %bias = nn.constant dense<[1.000000e+00, 2.000000e+00, 3.000000e+00]> : tensor<3xf32>
// CHECK-NEXT:    %u = nn.conv2d %x, %w, %bias {{.*}} loc(fused["conv1", "add1"])
// CHECK-NEXT:    func.return %z, %u

// An add along another axis, of a tensor, or after a conv another op also reads stays.

func.func @keeps_add(%x: tensor<1x2x4x4xf32>, %t: tensor<1x3x4x4xf32>) -> (tensor<1x3x4x4xf32>, tensor<1x3x4x4xf32>, tensor<1x3x4x4xf32>) {
  %w = nn.constant dense<1.0> : tensor<3x2x1x1xf32>
  %row = nn.constant dense<[1.0, 2.0, 3.0, 4.0]> : tensor<4xf32>
  %y = nn.conv2d %x, %w {strides = array<i64: 1, 1>, pads = array<i64: 0, 0, 0, 0>, dilations = array<i64: 1, 1>, group = 1 : i64} : (tensor<1x2x4x4xf32>, tensor<3x2x1x1xf32>) -> tensor<1x3x4x4xf32>
  %a = nn.add %y, %row : (tensor<1x3x4x4xf32>, tensor<4xf32>) -> tensor<1x3x4x4xf32>
  %v = nn.conv2d %x, %w {strides = array<i64: 1, 1>, pads = array<i64: 0, 0, 0, 0>, dilations = array<i64: 1, 1>, group = 1 : i64} : (tensor<1x2x4x4xf32>, tensor<3x2x1x1xf32>) -> tensor<1x3x4x4xf32>
  %b = nn.add %v, %t : (tensor<1x3x4x4xf32>, tensor<1x3x4x4xf32>) -> tensor<1x3x4x4xf32>
  %one = nn.constant dense<1.0> : tensor<1xf32>
  %u = nn.conv2d %x, %w {strides = array<i64: 1, 1>, pads = array<i64: 0, 0, 0, 0>, dilations = array<i64: 1, 1>, group = 1 : i64} : (tensor<1x2x4x4xf32>, tensor<3x2x1x1xf32>) -> tensor<1x3x4x4xf32>
  %c = nn.add %u, %one : (tensor<1x3x4x4xf32>, tensor<1xf32>) -> tensor<1x3x4x4xf32>
  %d = nn.add %u, %c : (tensor<1x3x4x4xf32>, tensor<1x3x4x4xf32>) -> tensor<1x3x4x4xf32>
  func.return %a, %b, %d : tensor<1x3x4x4xf32>, tensor<1x3x4x4xf32>, tensor<1x3x4x4xf32>
}

// CHECK-LABEL: func.func @keeps_add
// CHECK:         %a = nn.add %y, %row
// CHECK:         %b = nn.add %v, %t
// CHECK:         %c = nn.add %u, %one
// CHECK-NEXT:    %d = nn.add %u, %c
