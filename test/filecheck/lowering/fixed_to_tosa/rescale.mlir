// RUN: xnpu-opt %s -p convert-fixed-to-tosa --print-op-generic | filecheck %s

// R9: tosa.rescale (16-bit multipliers, single rounding) then a clamp to the contract's
// symmetric range. Per-channel rescales run along TOSA's last dimension, so a conv output's
// channels (NCHW axis 1) are moved last; M = 0 is written with TOSA's smallest shift, 2.
// Seed 000's exact 2^15 (shift -1, below TOSA's 16-bit minimum of 2) is the same product as a
// 32-bit multiplier 2^17 at shift 2. An i24 result lives in i32, clamped by minimum/maximum
// (TOSA's clamp takes int8/int16 only).

builtin.module {
  func.func @main(%a: tensor<1x3x2x2xi32>, %b: tensor<1x4xi16>) -> (tensor<1x3x2x2xi8>, tensor<1x4xi8>, tensor<1x4xi24>) {
    %0 = fixed.rescale %a {multiplier = array<i64: 20000, 0, 32767>, shift = array<i64: 20, 0, 31>, axis = 1 : i64} : tensor<1x3x2x2xi32> -> tensor<1x3x2x2xi8> loc("conv_out")
    %1 = fixed.rescale %b {multiplier = array<i64: 26274>, shift = array<i64: 22>} : tensor<1x4xi16> -> tensor<1x4xi8> loc("stage2")
    %2 = fixed.rescale %b {multiplier = array<i64: 16384>, shift = array<i64: -1>} : tensor<1x4xi16> -> tensor<1x4xi24> loc("exact")
    func.return %0, %1, %2 : tensor<1x3x2x2xi8>, tensor<1x4xi8>, tensor<1x4xi24>
  }
}

// CHECK:      ^bb0(%[[A:.*]]: tensor<1x3x2x2xi32>, %[[B:.*]]: tensor<1x4xi16>):
// CHECK-NEXT:   %[[T:.*]] = "tosa.transpose"(%[[A]]) <{perms = array<i32: 0, 2, 3, 1>}> : (tensor<1x3x2x2xi32>) -> tensor<1x2x2x3xi32>
// CHECK-NEXT:   %[[M:.*]] = "tosa.const"() <{values = dense<[20000, 0, 32767]> : tensor<3xi16>}>
// CHECK-NEXT:   %[[S:.*]] = "tosa.const"() <{values = dense<[20, 2, 31]> : tensor<3xi8>}>
// CHECK-NEXT:   %[[ZI:.*]] = "tosa.const"() <{values = dense<0> : tensor<1xi32>}>
// CHECK-NEXT:   %[[ZO:.*]] = "tosa.const"() <{values = dense<0> : tensor<1xi8>}>
// CHECK-NEXT:   %[[R:.*]] = "tosa.rescale"(%[[T]], %[[M]], %[[S]], %[[ZI]], %[[ZO]]) <{scale32 = false, rounding_mode = #tosa.rounding_mode<SINGLE_ROUND>, per_channel = true, input_unsigned = false, output_unsigned = false}> : (tensor<1x2x2x3xi32>, tensor<3xi16>, tensor<3xi8>, tensor<1xi32>, tensor<1xi8>) -> tensor<1x2x2x3xi8> loc("conv_out")
// CHECK-NEXT:   %[[C:.*]] = "tosa.clamp"(%[[R]]) <{min_val = -127 : i8, max_val = 127 : i8}>
// CHECK:        %[[R2:.*]] = "tosa.rescale"(%[[B]], {{.*}}) <{scale32 = false, {{.*}} per_channel = false, {{.*}}}> : (tensor<1x4xi16>, tensor<1xi16>, tensor<1xi8>, tensor<1xi16>, tensor<1xi8>) -> tensor<1x4xi8> loc("stage2")
// CHECK-NEXT:   %[[C2:.*]] = "tosa.clamp"(%[[R2]]) <{min_val = -127 : i8, max_val = 127 : i8}>
// CHECK-NEXT:   %[[M3:.*]] = "tosa.const"() <{values = dense<131072> : tensor<1xi32>}>
// CHECK-NEXT:   %[[S3:.*]] = "tosa.const"() <{values = dense<2> : tensor<1xi8>}>
// CHECK-NEXT:   %[[R3:.*]] = "tosa.rescale"(%[[B]], %[[M3]], %[[S3]], {{.*}}) <{scale32 = true, {{.*}}}> : ({{.*}}) -> tensor<1x4xi32> loc("exact")
// CHECK-NEXT:   %[[HI:.*]] = "tosa.const"() <{values = dense<8388607> : tensor<1x1xi32>}>
// CHECK-NEXT:   %[[MIN:.*]] = "tosa.minimum"(%[[R3]], %[[HI]])
// CHECK-NEXT:   %[[LO:.*]] = "tosa.const"() <{values = dense<-8388607> : tensor<1x1xi32>}>
// CHECK-NEXT:   %[[MAX:.*]] = "tosa.maximum"(%[[MIN]], %[[LO]])
// CHECK-NEXT:   %[[BACK:.*]] = "tosa.transpose"(%[[C]]) <{perms = array<i32: 0, 3, 1, 2>}> : (tensor<1x2x2x3xi8>) -> tensor<1x3x2x2xi8>
// CHECK-NEXT:   "func.return"(%[[BACK]], %[[C2]], %[[MAX]]) : (tensor<1x3x2x2xi8>, tensor<1x4xi8>, tensor<1x4xi32>) -> ()
