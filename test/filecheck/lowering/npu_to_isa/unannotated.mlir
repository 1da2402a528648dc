// RUN: not xnpu-opt %s -p lower-npu-to-isa 2>&1 | filecheck %s

// Emission decides nothing: an op the passes before it did not annotate is one error line
// saying which pass to run.

builtin.module attributes {npu.target = "xnpu_default"} {
  func.func @main(%x: tensor<1x1x4x4xf32> {nn.name = "x"}) -> (tensor<1x1x4x4xf32> {nn.name = "y"}) {
    %0 = fixed.quantize %x {scale = 0.5 : f64} : tensor<1x1x4x4xf32> -> tensor<1x1x4x4xi8>
    %1 = npu.clamp %0 {min = 0 : i64, max = 64 : i64} : tensor<1x1x4x4xi8> -> tensor<1x1x4x4xi8> loc("clip")
    %2 = fixed.dequantize %1 {scale = 0.5 : f64} : tensor<1x1x4x4xi8> -> tensor<1x1x4x4xf32>
    func.return %2 : tensor<1x1x4x4xf32>
  }
}

// CHECK: xnpu-opt: error: {{.*}}unannotated.mlir: in pass 'lower-npu-to-isa': 'npu.clamp' at loc("clip"): has no npu.tile annotation; run npu-tile first{{$}}
