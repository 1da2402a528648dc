// RUN: not xnpu-opt %s -p npu-assign-layout 2>&1 | filecheck %s

// What has no DDR layout is one error line naming the op, its ONNX node and the target.

builtin.module attributes {npu.target = "xnpu_default"} {
  func.func @main(%x: tensor<1x2x2x2xf32> {nn.name = "x"}, %y: tensor<1x2x2x2xf32> {nn.name = "y"}) -> (tensor<1x4x2x2xf32> {nn.name = "z"}) {
    %0 = fixed.quantize %x {scale = 0.1 : f64} : tensor<1x2x2x2xf32> -> tensor<1x2x2x2xi8>
    %1 = fixed.quantize %y {scale = 0.1 : f64} : tensor<1x2x2x2xf32> -> tensor<1x2x2x2xi8>
    %2 = npu.concat %0, %1 {axis = 3 : i64} : (tensor<1x2x2x2xi8>, tensor<1x2x2x2xi8>) -> tensor<1x2x2x4xi8> loc("cat")
    %3 = npu.reshape %2 : tensor<1x2x2x4xi8> -> tensor<1x4x2x2xi8>
    %4 = fixed.dequantize %3 {scale = 0.1 : f64} : tensor<1x4x2x2xi8> -> tensor<1x4x2x2xf32>
    func.return %4 : tensor<1x4x2x2xf32>
  }
}

// CHECK: xnpu-opt: error: {{.*}}error_concat_axis.mlir: in pass 'npu-assign-layout': 'npu.concat' at loc("cat"): only channel concatenation of NCHW maps has a DMA pattern (target xnpu_default)
