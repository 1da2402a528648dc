// RUN: not xnpu-opt %s -p convert-fixed-to-tosa 2>&1 | filecheck %s

// What has no exact TOSA form is one error line naming the op and its ONNX node.

builtin.module {
  func.func @main(%x: tensor<1x1x5x5xi8>) -> tensor<1x1x3x3xi8> {
    %0 = fixed.max_pool %x {kernel_shape = array<i64: 2, 2>, strides = array<i64: 1, 1>, pads = array<i64: 0, 0, 0, 0>, ceil_mode = 0 : i64, dilations = array<i64: 2, 2>} : tensor<1x1x5x5xi8> -> tensor<1x1x3x3xi8> loc("dilated")
    func.return %0 : tensor<1x1x3x3xi8>
  }
}

// CHECK: {{^}}xnpu-opt: error: {{.*}}dilated_max_pool.mlir: in pass 'convert-fixed-to-tosa': 'fixed.max_pool' at loc("dilated"): a dilated max pool has no TOSA form{{$}}
// CHECK-NOT: {{.}}
