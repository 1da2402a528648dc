// RUN: xnpu-opt %s -p convert-fixed-to-tosa --print-op-generic | filecheck %s

// R16. Values keep the layout they were made in (the conv's NHWC) until an op needs the
// fixed order: the flatten and the reshape get the NCHW transpose first, the fixed transpose
// to NHWC is the value itself, and the concat joins in NHWC (fixed axis 2 is TOSA axis 1),
// with the NCHW input transposed to match (once: the conv already asked for it).
// A rescale that cannot reach the int8 limits (here |x| <= 64) needs no clamp.

builtin.module {
  func.func @main(%x: tensor<1x2x3x3xi8>) -> (tensor<1x18xi8>, tensor<1x3x3x2xi8>, tensor<1x3x3x6xi8>) {
    %w = fixed.constant dense<1> : tensor<2x2x1x1xi8>
    %c = fixed.conv2d %x, %w {strides = array<i64: 1, 1>, pads = array<i64: 0, 0, 0, 0>, dilations = array<i64: 1, 1>, group = 1 : i64} : (tensor<1x2x3x3xi8>, tensor<2x2x1x1xi8>) -> tensor<1x2x3x3xi32> loc("conv")
    %r = fixed.rescale %c {multiplier = array<i64: 16384>, shift = array<i64: 16>} : tensor<1x2x3x3xi32> -> tensor<1x2x3x3xi8> loc("conv")
    %0 = fixed.flatten %r {axis = 1 : i64} : tensor<1x2x3x3xi8> -> tensor<1x18xi8> loc("flatten")
    %1 = fixed.transpose %r {perm = array<i64: 0, 2, 3, 1>} : tensor<1x2x3x3xi8> -> tensor<1x3x3x2xi8> loc("transpose")
    %2 = fixed.concat %r, %x, %r {axis = 2 : i64} : (tensor<1x2x3x3xi8>, tensor<1x2x3x3xi8>, tensor<1x2x3x3xi8>) -> tensor<1x2x9x3xi8> loc("concat")
    %3 = fixed.reshape %2 : tensor<1x2x9x3xi8> -> tensor<1x3x3x6xi8> loc("reshape")
    %4 = fixed.reshape %3 : tensor<1x3x3x6xi8> -> tensor<1x3x3x6xi8> loc("reshape")
    func.return %0, %1, %4 : tensor<1x18xi8>, tensor<1x3x3x2xi8>, tensor<1x3x3x6xi8>
  }
}

// CHECK:      ^bb0(%[[X:.*]]: tensor<1x2x3x3xi8>):
// CHECK-NEXT:   %[[XT:.*]] = "tosa.transpose"(%[[X]]) <{perms = array<i32: 0, 2, 3, 1>}>
// CHECK:        %[[C:.*]] = "tosa.conv2d"(%[[XT]],
// CHECK:        %[[R:.*]] = "tosa.rescale"(%[[C]],
// CHECK-NOT:    "tosa.clamp"
// CHECK-NEXT:   %[[RN:.*]] = "tosa.transpose"(%[[R]]) <{perms = array<i32: 0, 3, 1, 2>}> : (tensor<1x3x3x2xi8>) -> tensor<1x2x3x3xi8> loc("flatten")
// CHECK-NEXT:   %[[S:.*]] = "tosa.const_shape"() <{values = dense<[1, 18]> : tensor<2xindex>}>
// CHECK-NEXT:   %[[FLAT:.*]] = "tosa.reshape"(%[[RN]], %[[S]]) : (tensor<1x2x3x3xi8>, !tosa.shape<2>) -> tensor<1x18xi8>
// CHECK-NEXT:   %[[CAT:.*]] = "tosa.concat"(%[[R]], %[[XT]], %[[R]]) <{axis = 1 : i32}> : (tensor<1x3x3x2xi8>, tensor<1x3x3x2xi8>, tensor<1x3x3x2xi8>) -> tensor<1x9x3x2xi8> loc("concat")
// CHECK-NEXT:   %[[CATN:.*]] = "tosa.transpose"(%[[CAT]]) <{perms = array<i32: 0, 3, 1, 2>}> : (tensor<1x9x3x2xi8>) -> tensor<1x2x9x3xi8> loc("reshape")
// CHECK-NEXT:   %[[S4:.*]] = "tosa.const_shape"() <{values = dense<[1, 3, 3, 6]> : tensor<4xindex>}>
// CHECK-NEXT:   %[[RS:.*]] = "tosa.reshape"(%[[CATN]], %[[S4]])
// CHECK-NEXT:   "func.return"(%[[FLAT]], %[[R]], %[[RS]]) : (tensor<1x18xi8>, tensor<1x3x3x2xi8>, tensor<1x3x3x6xi8>) -> ()
