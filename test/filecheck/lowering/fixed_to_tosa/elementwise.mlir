// RUN: xnpu-opt %s -p convert-fixed-to-tosa --print-op-generic | filecheck %s

// Seed 000's element-wise ops. R10 add/sub: each input through its own (M, shift) into
// int32 (the lhs's (22668, 0) and the rhs's exact 2^15 are below TOSA's 16-bit shift range,
// so 32-bit multipliers at shift 2), then tosa.add/sub with broadcasting; the i24 sum needs
// no clamp (R11: |sum| <= 2 * 128 * 2^15 < 2^23). R7: the two-stage shift is
// arithmetic_right_shift without rounding, then R9 to int8. R8: clamps. R12: mul in int32.
// R15: tosa.table with the 256 entries as an operand.

builtin.module {
  func.func @main(%a: tensor<1x2x2x3xi8>, %b: tensor<1x2x1x1xi8>) -> (tensor<1x2x2x3xi8>, tensor<1x2x2x3xi24>, tensor<1x2x2x3xi16>, tensor<1x2x2x3xi8>) {
    %0 = fixed.add %a, %b {lhs_multiplier = 22668 : i64, lhs_shift = 0 : i64, rhs_multiplier = 16384 : i64, rhs_shift = -1 : i64} : (tensor<1x2x2x3xi8>, tensor<1x2x1x1xi8>) -> tensor<1x2x2x3xi24> loc("add")
    %1 = fixed.shift %0 {shift = 8 : i64, rounding = 0 : i64} : tensor<1x2x2x3xi24> -> tensor<1x2x2x3xi16> loc("add")
    %2 = fixed.rescale %1 {multiplier = array<i64: 26274>, shift = array<i64: 22>} : tensor<1x2x2x3xi16> -> tensor<1x2x2x3xi8> loc("add")
    %3 = fixed.clamp %2 {min = 0 : i64, max = 100 : i64} : tensor<1x2x2x3xi8> -> tensor<1x2x2x3xi8> loc("relu")
    %4 = fixed.sub %a, %b {lhs_multiplier = 16384 : i64, lhs_shift = -1 : i64, rhs_multiplier = 20000 : i64, rhs_shift = 3 : i64} : (tensor<1x2x2x3xi8>, tensor<1x2x1x1xi8>) -> tensor<1x2x2x3xi24> loc("sub")
    %5 = fixed.clamp %4 {min = -1000 : i64, max = 1000 : i64} : tensor<1x2x2x3xi24> -> tensor<1x2x2x3xi24> loc("sub")
    %6 = fixed.mul %a, %b : (tensor<1x2x2x3xi8>, tensor<1x2x1x1xi8>) -> tensor<1x2x2x3xi16> loc("mul")
    %7 = fixed.table %a {table = array<i8: 0, -127, -126, -125, -124, -123, -122, -121, -120, -119, -118, -117, -116, -115, -114, -113, -112, -111, -110, -109, -108, -107, -106, -105, -104, -103, -102, -101, -100, -99, -98, -97, -96, -95, -94, -93, -92, -91, -90, -89, -88, -87, -86, -85, -84, -83, -82, -81, -80, -79, -78, -77, -76, -75, -74, -73, -72, -71, -70, -69, -68, -67, -66, -65, -64, -63, -62, -61, -60, -59, -58, -57, -56, -55, -54, -53, -52, -51, -50, -49, -48, -47, -46, -45, -44, -43, -42, -41, -40, -39, -38, -37, -36, -35, -34, -33, -32, -31, -30, -29, -28, -27, -26, -25, -24, -23, -22, -21, -20, -19, -18, -17, -16, -15, -14, -13, -12, -11, -10, -9, -8, -7, -6, -5, -4, -3, -2, -1, 0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16, 17, 18, 19, 20, 21, 22, 23, 24, 25, 26, 27, 28, 29, 30, 31, 32, 33, 34, 35, 36, 37, 38, 39, 40, 41, 42, 43, 44, 45, 46, 47, 48, 49, 50, 51, 52, 53, 54, 55, 56, 57, 58, 59, 60, 61, 62, 63, 64, 65, 66, 67, 68, 69, 70, 71, 72, 73, 74, 75, 76, 77, 78, 79, 80, 81, 82, 83, 84, 85, 86, 87, 88, 89, 90, 91, 92, 93, 94, 95, 96, 97, 98, 99, 100, 101, 102, 103, 104, 105, 106, 107, 108, 109, 110, 111, 112, 113, 114, 115, 116, 117, 118, 119, 120, 121, 122, 123, 124, 125, 126, 127>} : tensor<1x2x2x3xi8> -> tensor<1x2x2x3xi8> loc("table")
    func.return %3, %5, %6, %7 : tensor<1x2x2x3xi8>, tensor<1x2x2x3xi24>, tensor<1x2x2x3xi16>, tensor<1x2x2x3xi8>
  }
}

// CHECK:      ^bb0(%[[A:.*]]: tensor<1x2x2x3xi8>, %[[B:.*]]: tensor<1x2x1x1xi8>):
// CHECK-NEXT:   %[[LM:.*]] = "tosa.const"() <{values = dense<90672> : tensor<1xi32>}>
// CHECK-NEXT:   %[[S2:.*]] = "tosa.const"() <{values = dense<2> : tensor<1xi8>}>
// CHECK-NEXT:   %[[Z8:.*]] = "tosa.const"() <{values = dense<0> : tensor<1xi8>}>
// CHECK-NEXT:   %[[Z32:.*]] = "tosa.const"() <{values = dense<0> : tensor<1xi32>}>
// CHECK-NEXT:   %[[L:.*]] = "tosa.rescale"(%[[A]], %[[LM]], %[[S2]], %[[Z8]], %[[Z32]]) <{scale32 = true, {{.*}}}> : ({{.*}}) -> tensor<1x2x2x3xi32> loc("add")
// CHECK-NEXT:   %[[RM:.*]] = "tosa.const"() <{values = dense<131072> : tensor<1xi32>}>
// CHECK-NEXT:   %[[R:.*]] = "tosa.rescale"(%[[B]], %[[RM]], %[[S2]], %[[Z8]], %[[Z32]]) <{scale32 = true, {{.*}}}> : ({{.*}}) -> tensor<1x2x1x1xi32>
// CHECK-NEXT:   %[[SUM:.*]] = "tosa.add"(%[[L]], %[[R]]) : (tensor<1x2x2x3xi32>, tensor<1x2x1x1xi32>) -> tensor<1x2x2x3xi32>
// CHECK-NEXT:   %[[EIGHT:.*]] = "tosa.const"() <{values = dense<8> : tensor<1x1x1x1xi32>}>
// CHECK-NEXT:   %[[SHR:.*]] = "tosa.arithmetic_right_shift"(%[[SUM]], %[[EIGHT]]) <{round = false}>
// CHECK-NEXT:   %[[I16:.*]] = "tosa.cast"(%[[SHR]]) : (tensor<1x2x2x3xi32>) -> tensor<1x2x2x3xi16>
// CHECK:        %[[Y:.*]] = "tosa.rescale"(%[[I16]], {{.*}}) <{scale32 = false, {{.*}}}> : (tensor<1x2x2x3xi16>, tensor<1xi16>, tensor<1xi8>, tensor<1xi16>, tensor<1xi8>) -> tensor<1x2x2x3xi8>
// CHECK-NEXT:   %[[SAT:.*]] = "tosa.clamp"(%[[Y]]) <{min_val = -127 : i8, max_val = 127 : i8}>
// CHECK-NEXT:   %[[RELU:.*]] = "tosa.clamp"(%[[SAT]]) <{min_val = 0 : i8, max_val = 100 : i8}> {{.*}} loc("relu")
// CHECK-NEXT:   %[[SL:.*]] = "tosa.rescale"(%[[A]], %[[RM]], %[[S2]], %[[Z8]], %[[Z32]]) <{scale32 = true, {{.*}}}> {{.*}} loc("sub")
// CHECK-NEXT:   %[[M20:.*]] = "tosa.const"() <{values = dense<20000> : tensor<1xi16>}>
// CHECK-NEXT:   %[[S3:.*]] = "tosa.const"() <{values = dense<3> : tensor<1xi8>}>
// CHECK-NEXT:   %[[SR:.*]] = "tosa.rescale"(%[[B]], %[[M20]], %[[S3]], %[[Z8]], %[[Z32]]) <{scale32 = false, {{.*}}}>
// CHECK-NEXT:   %[[DIFF:.*]] = "tosa.sub"(%[[SL]], %[[SR]])
// CHECK-NEXT:   %[[HI:.*]] = "tosa.const"() <{values = dense<1000> : tensor<1x1x1x1xi32>}>
// CHECK-NEXT:   %[[MIN:.*]] = "tosa.minimum"(%[[DIFF]], %[[HI]])
// CHECK-NEXT:   %[[LO:.*]] = "tosa.const"() <{values = dense<-1000> : tensor<1x1x1x1xi32>}>
// CHECK-NEXT:   %[[CLIP:.*]] = "tosa.maximum"(%[[MIN]], %[[LO]])
// CHECK-NEXT:   %[[A32:.*]] = "tosa.cast"(%[[A]]) : (tensor<1x2x2x3xi8>) -> tensor<1x2x2x3xi32> loc("mul")
// CHECK-NEXT:   %[[B32:.*]] = "tosa.cast"(%[[B]]) : (tensor<1x2x1x1xi8>) -> tensor<1x2x1x1xi32>
// CHECK-NEXT:   %[[P:.*]] = "tosa.mul"(%[[A32]], %[[B32]], %[[Z8]]) : (tensor<1x2x2x3xi32>, tensor<1x2x1x1xi32>, tensor<1xi8>) -> tensor<1x2x2x3xi32>
// CHECK-NEXT:   %[[P16:.*]] = "tosa.cast"(%[[P]]) : (tensor<1x2x2x3xi32>) -> tensor<1x2x2x3xi16>
// CHECK-NEXT:   %[[TABLE:.*]] = "tosa.const"() <{values = dense<"0x008182838485{{.*}}7C7D7E7F"> : tensor<256xi8>}>
// CHECK-NEXT:   %[[T:.*]] = "tosa.table"(%[[A]], %[[TABLE]]) : (tensor<1x2x2x3xi8>, tensor<256xi8>) -> tensor<1x2x2x3xi8> loc("table")
// CHECK-NEXT:   "func.return"(%[[RELU]], %[[CLIP]], %[[P16]], %[[T]]) : (tensor<1x2x2x3xi8>, tensor<1x2x2x3xi32>, tensor<1x2x2x3xi16>, tensor<1x2x2x3xi8>) -> ()
