// RUN: xnpu-opt %s -p convert-fixed-to-tosa --print-op-generic | filecheck %s

// R13 gemm: tosa.matmul is batched (1 x M x K times 1 x K x N, int8 in, int32 out); a
// trans_b weight is transposed as a constant; the bias is added in int32, broadcast as 1 x N.

builtin.module {
  func.func @main(%a: tensor<2x3xi8>) -> tensor<2x2xi32> {
    %w = fixed.constant dense<[[1, 2, 3], [4, 5, 6]]> : tensor<2x3xi8>
    %b = fixed.constant dense<[7, -7]> : tensor<2xi32>
    %0 = fixed.gemm %a, %w, %b {trans_b = 1 : i64} : (tensor<2x3xi8>, tensor<2x3xi8>, tensor<2xi32>) -> tensor<2x2xi32> loc("fc")
    func.return %0 : tensor<2x2xi32>
  }
}

// CHECK:      ^bb0(%[[A:.*]]: tensor<2x3xi8>):
// CHECK-NEXT:   %[[S3:.*]] = "tosa.const_shape"() <{values = dense<[1, 2, 3]> : tensor<3xindex>}>
// CHECK-NEXT:   %[[A3:.*]] = "tosa.reshape"(%[[A]], %[[S3]]) : (tensor<2x3xi8>, !tosa.shape<3>) -> tensor<1x2x3xi8>
// CHECK-NEXT:   %[[W:.*]] = "tosa.const"() <{values = dense<{{\[\[}}1, 4], [2, 5], [3, 6]]> : tensor<3x2xi8>}>
// CHECK-NEXT:   %[[WS:.*]] = "tosa.const_shape"() <{values = dense<[1, 3, 2]> : tensor<3xindex>}>
// CHECK-NEXT:   %[[W3:.*]] = "tosa.reshape"(%[[W]], %[[WS]])
// CHECK-NEXT:   %[[Z:.*]] = "tosa.const"() <{values = dense<0> : tensor<1xi8>}>
// CHECK-NEXT:   %[[P:.*]] = "tosa.matmul"(%[[A3]], %[[W3]], %[[Z]], %[[Z]]) : (tensor<1x2x3xi8>, tensor<1x3x2xi8>, tensor<1xi8>, tensor<1xi8>) -> tensor<1x2x2xi32> loc("fc")
// CHECK-NEXT:   %[[S2:.*]] = "tosa.const_shape"() <{values = dense<2> : tensor<2xindex>}>
// CHECK-NEXT:   %[[P2:.*]] = "tosa.reshape"(%[[P]], %[[S2]]) : (tensor<1x2x2xi32>, !tosa.shape<2>) -> tensor<2x2xi32>
// CHECK-NEXT:   %[[B:.*]] = "tosa.const"() <{values = dense<{{\[\[}}7, -7]]> : tensor<1x2xi32>}>
// CHECK-NEXT:   %[[SUM:.*]] = "tosa.add"(%[[P2]], %[[B]]) : (tensor<2x2xi32>, tensor<1x2xi32>) -> tensor<2x2xi32>
// CHECK-NEXT:   "func.return"(%[[SUM]]) : (tensor<2x2xi32>) -> ()
