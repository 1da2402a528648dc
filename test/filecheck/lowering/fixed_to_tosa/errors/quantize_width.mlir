// RUN: not xnpu-opt %s -p convert-fixed-to-tosa 2>&1 | filecheck %s

// What has no exact TOSA form is one error line naming the op and its ONNX node.

builtin.module {
  func.func @main(%x: tensor<1x4xf32>) -> tensor<1x4xi32> {
    %0 = fixed.quantize %x {scale = 0.5 : f64} : tensor<1x4xf32> -> tensor<1x4xi32> loc("wide")
    func.return %0 : tensor<1x4xi32>
  }
}

// CHECK: {{^}}xnpu-opt: error: {{.*}}quantize_width.mlir: in pass 'convert-fixed-to-tosa': 'fixed.quantize' at loc("wide"): quantize to i32 has no exact TOSA form (a threshold table of 2^31){{$}}
// CHECK-NOT: {{.}}
