// RUN: xnpu-opt %s --split-input-file -p convert-fixed-to-tosa --print-op-generic | filecheck %s

// R4 in float32 TOSA ops, bit for bit: the floor of |x| / s (by the float32 reciprocal) is
// the level or one below it; one comparison with the exact threshold of the next level
// (gathered from a table of float32 thresholds) decides; the sign goes back on by select.
// @main keeps its float input.

builtin.module {
  func.func @main(%x: tensor<1x2x2x3xf32>) -> tensor<1x2x2x3xi8> {
    %0 = fixed.quantize %x {scale = 0.01 : f64} : tensor<1x2x2x3xf32> -> tensor<1x2x2x3xi8> loc("q")
    func.return %0 : tensor<1x2x2x3xi8>
  }
}

// CHECK:      "func.func"() <{sym_name = "main", function_type = (tensor<1x2x2x3xf32>) -> tensor<1x2x2x3xi8>}>
// CHECK:      ^bb0(%[[X:.*]]: tensor<1x2x2x3xf32>):
// CHECK-NEXT:   %[[ABS:.*]] = "tosa.abs"(%[[X]]) : (tensor<1x2x2x3xf32>) -> tensor<1x2x2x3xf32> loc("q")
// CHECK-NEXT:   %[[INV:.*]] = "tosa.const"() <{values = dense<1.000000e+02> : tensor<1x1x1x1xf32>}>
// CHECK-NEXT:   %[[S0:.*]] = "tosa.const"() <{values = dense<0> : tensor<1xi8>}>
// CHECK-NEXT:   %[[EST:.*]] = "tosa.mul"(%[[ABS]], %[[INV]], %[[S0]])
// CHECK-NEXT:   %[[FL:.*]] = "tosa.floor"(%[[EST]])
// CHECK-NEXT:   %[[CL:.*]] = "tosa.clamp"(%[[FL]]) <{min_val = 0.000000e+00 : f32, max_val = 1.270000e+02 : f32, nan_mode = #tosa.nan_mode<IGNORE>}>
// CHECK-NEXT:   %[[LEVEL:.*]] = "tosa.cast"(%[[CL]]) : (tensor<1x2x2x3xf32>) -> tensor<1x2x2x3xi32>
// CHECK-NEXT:   %[[SH:.*]] = "tosa.const_shape"() <{values = dense<[1, 12]> : tensor<2xindex>}>
// CHECK-NEXT:   %[[IDX:.*]] = "tosa.reshape"(%[[LEVEL]], %[[SH]]) : (tensor<1x2x2x3xi32>, !tosa.shape<2>) -> tensor<1x12xi32>
// The thresholds of levels 1, 2, ...: 0.005, 0.015, ... as float32 (0x3BA3D70B, 0x3C75C290), then +inf.
// CHECK-NEXT:   %[[T:.*]] = "tosa.const"() <{values = dense<"0x0BD7A33B90C2753C{{.*}}0000807F"> : tensor<1x128x1xf32>}>
// CHECK-NEXT:   %[[G:.*]] = "tosa.gather"(%[[T]], %[[IDX]]) : (tensor<1x128x1xf32>, tensor<1x12xi32>) -> tensor<1x12x1xf32>
// CHECK-NEXT:   %[[SH4:.*]] = "tosa.const_shape"() <{values = dense<[1, 2, 2, 3]> : tensor<4xindex>}>
// CHECK-NEXT:   %[[NEXT:.*]] = "tosa.reshape"(%[[G]], %[[SH4]])
// CHECK-NEXT:   %[[GE:.*]] = "tosa.greater_equal"(%[[ABS]], %[[NEXT]]) : (tensor<1x2x2x3xf32>, tensor<1x2x2x3xf32>) -> tensor<1x2x2x3xi1>
// CHECK-NEXT:   %[[UP:.*]] = "tosa.cast"(%[[GE]]) : (tensor<1x2x2x3xi1>) -> tensor<1x2x2x3xi32>
// CHECK-NEXT:   %[[Q:.*]] = "tosa.add"(%[[LEVEL]], %[[UP]])
// CHECK-NEXT:   %[[HI:.*]] = "tosa.const"() <{values = dense<127> : tensor<1x1x1x1xi32>}>
// CHECK-NEXT:   %[[MIN:.*]] = "tosa.minimum"(%[[Q]], %[[HI]])
// CHECK-NEXT:   %[[LO:.*]] = "tosa.const"() <{values = dense<0> : tensor<1x1x1x1xi32>}>
// CHECK-NEXT:   %[[MAG:.*]] = "tosa.maximum"(%[[MIN]], %[[LO]])
// CHECK-NEXT:   %[[ZF:.*]] = "tosa.const"() <{values = dense<0.000000e+00> : tensor<1x1x1x1xf32>}>
// CHECK-NEXT:   %[[NEG:.*]] = "tosa.greater"(%[[ZF]], %[[X]])
// CHECK-NEXT:   %[[MINUS:.*]] = "tosa.sub"(%[[LO]], %[[MAG]])
// CHECK-NEXT:   %[[SIGNED:.*]] = "tosa.select"(%[[NEG]], %[[MINUS]], %[[MAG]])
// CHECK-NEXT:   %[[OUT:.*]] = "tosa.cast"(%[[SIGNED]]) : (tensor<1x2x2x3xi32>) -> tensor<1x2x2x3xi8>
// CHECK-NEXT:   "func.return"(%[[OUT]]) : (tensor<1x2x2x3xi8>) -> ()

// -----

// R4 dequantize, float32(float64(q) * s[c]): a gather from the table of every code's value,
// one row of 256 per channel (channel c's codes start at c * 256 + 128).

builtin.module {
  func.func @main(%q: tensor<1x2x2x3xi8>) -> tensor<1x2x2x3xf32> {
    %0 = fixed.dequantize %q {scale = array<f64: 0.5, 0.25>, axis = 1 : i64} : tensor<1x2x2x3xi8> -> tensor<1x2x2x3xf32> loc("dq")
    func.return %0 : tensor<1x2x2x3xf32>
  }
}

// CHECK:      ^bb0(%[[Q:.*]]: tensor<1x2x2x3xi8>):
// CHECK-NEXT:   %[[I:.*]] = "tosa.cast"(%[[Q]]) : (tensor<1x2x2x3xi8>) -> tensor<1x2x2x3xi32> loc("dq")
// CHECK-NEXT:   %[[OFF:.*]] = "tosa.const"() <{values = dense<{{\[\[\[\[}}128]], {{\[\[}}384]]]]> : tensor<1x2x1x1xi32>}>
// CHECK-NEXT:   %[[IDX:.*]] = "tosa.add"(%[[I]], %[[OFF]])
// CHECK-NEXT:   %[[SH:.*]] = "tosa.const_shape"() <{values = dense<[1, 12]> : tensor<2xindex>}>
// CHECK-NEXT:   %[[FLAT:.*]] = "tosa.reshape"(%[[IDX]], %[[SH]])
// -64.0 = 0xC2800000, -63.5, ..., then channel 1 from -32.0 = 0xC2000000
// CHECK-NEXT:   %[[TABLE:.*]] = "tosa.const"() <{values = dense<"0x000080C200007EC2{{.*}}000000C20000FEC1{{.*}}"> : tensor<1x512x1xf32>}>
// CHECK-NEXT:   %[[G:.*]] = "tosa.gather"(%[[TABLE]], %[[FLAT]]) : (tensor<1x512x1xf32>, tensor<1x12xi32>) -> tensor<1x12x1xf32>
// CHECK:        "func.return"({{.*}}) : (tensor<1x2x2x3xf32>) -> ()
