// RUN: not xnpu-opt %s -p convert-fixed-to-tosa 2>&1 | filecheck %s

// What has no exact TOSA form is one error line naming the op and its ONNX node. Float ops
// kept for the host have TOSA float forms where they are element-wise or a softmax; a float
// pool is not one of them.

builtin.module {
  func.func @main(%x: tensor<1x4x2x2xf32>) -> tensor<1x4x1x1xf32> {
    %0 = nn.global_average_pool %x : tensor<1x4x2x2xf32> -> tensor<1x4x1x1xf32> loc("GlobalAveragePool_3")
    func.return %0 : tensor<1x4x1x1xf32>
  }
}

// CHECK: {{^}}xnpu-opt: error: {{.*}}unsupported_op.mlir: in pass 'convert-fixed-to-tosa': 'nn.global_average_pool' at loc("GlobalAveragePool_3"): no TOSA form for this op{{$}}
// CHECK-NOT: {{.}}
