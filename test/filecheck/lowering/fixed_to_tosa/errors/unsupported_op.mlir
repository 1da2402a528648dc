// RUN: not xnpu-opt %s -p convert-fixed-to-tosa 2>&1 | filecheck %s

// What has no exact TOSA form is one error line naming the op and its ONNX node.

builtin.module {
  func.func @main(%x: tensor<1x4xf32>) -> tensor<1x4xf32> {
    %0 = nn.relu %x : tensor<1x4xf32> -> tensor<1x4xf32> loc("Relu_3")
    func.return %0 : tensor<1x4xf32>
  }
}

// CHECK: {{^}}xnpu-opt: error: {{.*}}unsupported_op.mlir: in pass 'convert-fixed-to-tosa': 'nn.relu' at loc("Relu_3"): no TOSA form for this op{{$}}
// CHECK-NOT: {{.}}
