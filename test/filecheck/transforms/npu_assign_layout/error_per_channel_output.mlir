// RUN: not xnpu-opt %s -p npu-assign-layout 2>&1 | filecheck %s

// What has no DDR layout is one error line naming the op, its ONNX node and the target.

builtin.module attributes {npu.target = "xnpu_default"} {
  func.func @main(%x: tensor<1x2x2x2xf32> {nn.name = "x"}) -> (tensor<1x2x2x2xf32> {nn.name = "y"}) {
    %0 = fixed.quantize %x {scale = 0.1 : f64} : tensor<1x2x2x2xf32> -> tensor<1x2x2x2xi8>
    %1 = fixed.dequantize %0 {scale = array<f64: 0.1, 0.2>, axis = 1 : i64} : tensor<1x2x2x2xi8> -> tensor<1x2x2x2xf32> loc("out")
    func.return %1 : tensor<1x2x2x2xf32>
  }
}

// CHECK: xnpu-opt: error: {{.*}}error_per_channel_output.mlir: in pass 'npu-assign-layout': 'fixed.dequantize' at loc("out"): a per-channel output scale cannot be described in the io table (target xnpu_default)
