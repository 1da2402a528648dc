// RUN: not xnpu-opt %s -p npu-assign-layout 2>&1 | filecheck %s

// What has no DDR layout is one error line naming the op, its ONNX node and the target.

builtin.module attributes {npu.target = "xnpu_default"} {
  func.func @main(%x: tensor<1x2xf32> {nn.name = "x"}) -> (tensor<1x2xf32> {nn.name = "y"}) {
    %0 = fixed.quantize %x {scale = 0.1 : f64} : tensor<1x2xf32> -> tensor<1x2xi8>
    %1 = fixed.dequantize %0 {scale = 0.1 : f64} : tensor<1x2xi8> -> tensor<1x2xf32> loc("dq")
    %2 = fixed.quantize %1 {scale = 0.1 : f64} : tensor<1x2xf32> -> tensor<1x2xi8> loc("q")
    %3 = fixed.dequantize %2 {scale = 0.1 : f64} : tensor<1x2xi8> -> tensor<1x2xf32>
    func.return %3 : tensor<1x2xf32>
  }
}

// CHECK: xnpu-opt: error: {{.*}}error_inner_dequantize.mlir: in pass 'npu-assign-layout': 'fixed.dequantize' at loc("dq"): a dequantize inside the graph has no instruction (only program outputs leave int8) (target xnpu_default)
