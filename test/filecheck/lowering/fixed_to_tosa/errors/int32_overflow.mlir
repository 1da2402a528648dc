// RUN: not xnpu-opt %s -p convert-fixed-to-tosa 2>&1 | filecheck %s

// What has no exact TOSA form is one error line naming the op and its ONNX node.

// TOSA's integer arithmetic is int32: an intermediate that could leave it is refused.

builtin.module {
  func.func @main(%x: tensor<1x4xi32>) -> tensor<1x4xi8> {
    %0 = fixed.rescale %x {multiplier = array<i64: 16384>, shift = array<i64: 10>} : tensor<1x4xi32> -> tensor<1x4xi8> loc("gain")
    func.return %0 : tensor<1x4xi8>
  }
}

// CHECK: {{^}}xnpu-opt: error: {{.*}}int32_overflow.mlir: in pass 'convert-fixed-to-tosa': 'fixed.rescale' at loc("gain"): the rescaled value can reach 34359738368, beyond TOSA's int32; no exact TOSA form{{$}}
// CHECK-NOT: {{.}}
