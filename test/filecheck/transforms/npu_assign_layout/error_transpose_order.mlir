// RUN: not xnpu-opt %s -p npu-assign-layout 2>&1 | filecheck %s

// What has no DDR layout is one error line naming the op, its ONNX node and the target.

builtin.module attributes {npu.target = "xnpu_default"} {
  func.func @main(%x: tensor<1x2x3x4xf32> {nn.name = "x"}) -> (tensor<1x2x4x3xf32> {nn.name = "z"}) {
    %0 = fixed.quantize %x {scale = 0.1 : f64} : tensor<1x2x3x4xf32> -> tensor<1x2x3x4xi8>
    %1 = npu.transpose %0 {perm = array<i64: 0, 1, 3, 2>} : tensor<1x2x3x4xi8> -> tensor<1x2x4x3xi8> loc("odd")
    %2 = fixed.dequantize %1 {scale = 0.1 : f64} : tensor<1x2x4x3xi8> -> tensor<1x2x4x3xf32>
    func.return %2 : tensor<1x2x4x3xf32>
  }
}

// CHECK: xnpu-opt: error: {{.*}}error_transpose_order.mlir: in pass 'npu-assign-layout': 'npu.transpose' at loc("odd"): transpose [0, 1, 3, 2] of [1, 2, 3, 4] is neither the NHWC nor the NCHW order of its input (target xnpu_default)
