// RUN: xnpu-opt %s --split-input-file -p convert-fixed-to-tosa --print-op-generic | filecheck %s

// Float ops kept for the host (KeepOnHost) become TOSA float32 ops. A softmax is
// exp(x - max) / sum as MLIR's TOSA legalizations write it, along the axis in the value's
// layout.

builtin.module {
  func.func @main(%x: tensor<1x10xi8>) -> tensor<1x10xf32> {
    %0 = fixed.dequantize %x {scale = 0.125 : f64} : tensor<1x10xi8> -> tensor<1x10xf32>
    %1 = nn.softmax %0 {axis = -1 : i64} : tensor<1x10xf32> -> tensor<1x10xf32> loc("probs")
    func.return %1 : tensor<1x10xf32>
  }
}

// CHECK-LABEL: function_type = (tensor<1x10xi8>) -> tensor<1x10xf32>
// CHECK:        %[[X:.*]] = "tosa.reshape"(%{{.*}}, %{{.*}}) : (tensor<1x10x1xf32>, !tosa.shape<2>) -> tensor<1x10xf32>
// CHECK-NEXT:   %[[MAX:.*]] = "tosa.reduce_max"(%[[X]]) <{axis = 1 : i32}> : (tensor<1x10xf32>) -> tensor<1x1xf32> loc("probs")
// CHECK-NEXT:   %[[D:.*]] = "tosa.sub"(%[[X]], %[[MAX]]) : (tensor<1x10xf32>, tensor<1x1xf32>) -> tensor<1x10xf32> loc("probs")
// CHECK-NEXT:   %[[E:.*]] = "tosa.exp"(%[[D]]) : (tensor<1x10xf32>) -> tensor<1x10xf32> loc("probs")
// CHECK-NEXT:   %[[S:.*]] = "tosa.reduce_sum"(%[[E]]) <{axis = 1 : i32}> : (tensor<1x10xf32>) -> tensor<1x1xf32> loc("probs")
// CHECK-NEXT:   %[[R:.*]] = "tosa.reciprocal"(%[[S]]) : (tensor<1x1xf32>) -> tensor<1x1xf32> loc("probs")
// CHECK-NEXT:   %[[Z:.*]] = "tosa.const"() <{values = dense<0> : tensor<1xi8>}>
// CHECK-NEXT:   %[[P:.*]] = "tosa.mul"(%[[E]], %[[R]], %[[Z]]) : (tensor<1x10xf32>, tensor<1x1xf32>, tensor<1xi8>) -> tensor<1x10xf32> loc("probs")
// CHECK-NEXT:   "func.return"(%[[P]])

// -----

// A division by a tensor (TOSA 1.0 has no float division: reciprocal and mul) and a clip
// with a bound computed at run time (maximum with the operand, minimum with the constant),
// between the fixed level's dequantize and quantize.

builtin.module {
  func.func @main(%x: tensor<1x4xi8>, %y: tensor<1x4xi8>) -> tensor<1x4xi8> {
    %a = fixed.dequantize %x {scale = 0.125 : f64} : tensor<1x4xi8> -> tensor<1x4xf32>
    %b = fixed.dequantize %y {scale = 0.25 : f64} : tensor<1x4xi8> -> tensor<1x4xf32>
    %lo = nn.constant dense<-1.0> : tensor<f32>
    %0 = nn.div %a, %b : (tensor<1x4xf32>, tensor<1x4xf32>) -> tensor<1x4xf32> loc("ratio")
    %1 = nn.clip %0 min(%lo : tensor<f32>) {max = 2.0 : f32} : tensor<1x4xf32> -> tensor<1x4xf32> loc("bounded")
    %2 = fixed.quantize %1 {scale = 0.0625 : f64} : tensor<1x4xf32> -> tensor<1x4xi8>
    func.return %2 : tensor<1x4xi8>
  }
}

// CHECK-LABEL: function_type = (tensor<1x4xi8>, tensor<1x4xi8>) -> tensor<1x4xi8>
// CHECK:        %[[A:.*]] = "tosa.reshape"(%{{.*}}, %{{.*}}) : (tensor<1x4x1xf32>, !tosa.shape<2>) -> tensor<1x4xf32>
// CHECK:        %[[B:.*]] = "tosa.reshape"(%{{.*}}, %{{.*}}) : (tensor<1x4x1xf32>, !tosa.shape<2>) -> tensor<1x4xf32>
// CHECK-NEXT:   %[[INV:.*]] = "tosa.reciprocal"(%[[B]]) : (tensor<1x4xf32>) -> tensor<1x4xf32> loc("ratio")
// CHECK-NEXT:   %[[Z:.*]] = "tosa.const"() <{values = dense<0> : tensor<1xi8>}>
// CHECK-NEXT:   %[[Q:.*]] = "tosa.mul"(%[[A]], %[[INV]], %[[Z]]) : (tensor<1x4xf32>, tensor<1x4xf32>, tensor<1xi8>) -> tensor<1x4xf32> loc("ratio")
// CHECK-NEXT:   %[[LO:.*]] = "tosa.const"() <{values = dense<-1.000000e+00> : tensor<1x1xf32>}>
// CHECK-NEXT:   %[[UP:.*]] = "tosa.maximum"(%[[Q]], %[[LO]]) : (tensor<1x4xf32>, tensor<1x1xf32>) -> tensor<1x4xf32> loc("bounded")
// CHECK-NEXT:   %[[HI:.*]] = "tosa.const"() <{values = dense<2.000000e+00> : tensor<1x1xf32>}>
// CHECK-NEXT:   %[[C:.*]] = "tosa.minimum"(%[[UP]], %[[HI]]) : (tensor<1x4xf32>, tensor<1x1xf32>) -> tensor<1x4xf32> loc("bounded")
// CHECK-NEXT:   "tosa.abs"(%[[C]])
