// RUN: not xnpu-opt %s 2>&1 | filecheck %s

// A verifier failure is one line at the op's file:line:col, naming the op and its ONNX node.

func.func @main(%x: tensor<1x2x4x4xf32>, %w: tensor<3x2x3x3xf32>) -> tensor<1x3x4x4xf32> {
  %y = nn.conv2d %x, %w {strides = array<i64: 1, 1>, pads = array<i64: 0, 0, 0, 0>, dilations = array<i64: 1, 1>, group = 1 : i64} : (tensor<1x2x4x4xf32>, tensor<3x2x3x3xf32>) -> tensor<1x3x4x4xf32> loc("Conv_12")
  func.return %y : tensor<1x3x4x4xf32>
}

// CHECK:      {{^}}{{.*}}verify_error.mlir:6:3: error: 'nn.conv2d' at loc("Conv_12"): result shape is [1, 3, 4, 4] but the operands give [1, 3, 2, 2]{{$}}
// CHECK-NOT:  {{.}}
