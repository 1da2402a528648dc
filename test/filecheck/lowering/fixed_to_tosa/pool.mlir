// RUN: xnpu-opt %s -p convert-fixed-to-tosa --print-op-generic | filecheck %s

// R14. Max pool: tosa.max_pool2d, ceil mode as padding at the end. Average pool: window sums
// by a depthwise convolution with ones (padding adds 0), then R14's per-position multipliers
// as a per-channel rescale with the positions moved to the last dimension (N x C x OH*OW).
// Global average pool: int32 sums over H and W (reduce_sum), in the layout the input has.

builtin.module {
  func.func @main(%x: tensor<1x2x5x5xi8>) -> (tensor<1x2x3x3xi8>, tensor<1x2x3x3xi8>, tensor<1x2x1x1xi32>) {
    %0 = fixed.max_pool %x {kernel_shape = array<i64: 2, 2>, strides = array<i64: 2, 2>, pads = array<i64: 0, 0, 1, 1>, ceil_mode = 1 : i64, dilations = array<i64: 1, 1>} : tensor<1x2x5x5xi8> -> tensor<1x2x3x3xi8> loc("max")
    %1 = fixed.avg_pool %x {kernel_shape = array<i64: 3, 3>, strides = array<i64: 2, 2>, pads = array<i64: 1, 1, 1, 1>, ceil_mode = 0 : i64, multiplier = array<i64: 18961, 25281, 18961, 25281, 16854, 25281, 18961, 25281, 18961>, shift = array<i64: 15, 16, 15, 16, 16, 16, 15, 16, 15>} : tensor<1x2x5x5xi8> -> tensor<1x2x3x3xi8> loc("avg")
    %2 = fixed.global_avg_pool %x : tensor<1x2x5x5xi8> -> tensor<1x2x1x1xi32> loc("gap")
    func.return %0, %1, %2 : tensor<1x2x3x3xi8>, tensor<1x2x3x3xi8>, tensor<1x2x1x1xi32>
  }
}

// CHECK:      ^bb0(%[[X:.*]]: tensor<1x2x5x5xi8>):
// CHECK-NEXT:   %[[NHWC:.*]] = "tosa.transpose"(%[[X]]) <{perms = array<i32: 0, 2, 3, 1>}>
// CHECK-NEXT:   %[[MAX:.*]] = "tosa.max_pool2d"(%[[NHWC]]) <{stride = array<i64: 2, 2>, pad = array<i64: 0, 1, 0, 1>, kernel = array<i64: 2, 2>}> : (tensor<1x5x5x2xi8>) -> tensor<1x3x3x2xi8> loc("max")
// CHECK-NEXT:   %[[ONES:.*]] = "tosa.const"() <{values = dense<1> : tensor<3x3x2x1xi8>}>
// CHECK-NEXT:   %[[ZB:.*]] = "tosa.const"() <{values = dense<0> : tensor<2xi32>}>
// CHECK-NEXT:   %[[Z:.*]] = "tosa.const"() <{values = dense<0> : tensor<1xi8>}>
// CHECK-NEXT:   %[[SUMS:.*]] = "tosa.depthwise_conv2d"(%[[NHWC]], %[[ONES]], %[[ZB]], %[[Z]], %[[Z]]) <{stride = array<i64: 2, 2>, pad = array<i64: 1, 1, 1, 1>, dilation = array<i64: 1, 1>, acc_type = i32}> : {{.*}} -> tensor<1x3x3x2xi32> loc("avg")
// CHECK-NEXT:   %[[NCHW:.*]] = "tosa.transpose"(%[[SUMS]]) <{perms = array<i32: 0, 3, 1, 2>}>
// CHECK-NEXT:   %[[S:.*]] = "tosa.const_shape"() <{values = dense<[1, 2, 9]> : tensor<3xindex>}>
// CHECK-NEXT:   %[[POS:.*]] = "tosa.reshape"(%[[NCHW]], %[[S]]) : (tensor<1x2x3x3xi32>, !tosa.shape<3>) -> tensor<1x2x9xi32>
// CHECK-NEXT:   %[[M:.*]] = "tosa.const"() <{values = dense<[18961, 25281, 18961, 25281, 16854, 25281, 18961, 25281, 18961]> : tensor<9xi16>}>
// CHECK-NEXT:   %[[SH:.*]] = "tosa.const"() <{values = dense<[15, 16, 15, 16, 16, 16, 15, 16, 15]> : tensor<9xi8>}>
// CHECK-NEXT:   %[[ZI:.*]] = "tosa.const"() <{values = dense<0> : tensor<1xi32>}>
// CHECK-NEXT:   %[[R:.*]] = "tosa.rescale"(%[[POS]], %[[M]], %[[SH]], %[[ZI]], %[[Z]]) <{scale32 = false, {{.*}} per_channel = true, {{.*}}}> : (tensor<1x2x9xi32>, {{.*}}) -> tensor<1x2x9xi8>
// CHECK-NEXT:   %[[C:.*]] = "tosa.clamp"(%[[R]]) <{min_val = -127 : i8, max_val = 127 : i8}>
// CHECK-NEXT:   %[[S4:.*]] = "tosa.const_shape"() <{values = dense<[1, 2, 3, 3]> : tensor<4xindex>}>
// CHECK-NEXT:   %[[AVG:.*]] = "tosa.reshape"(%[[C]], %[[S4]]) : (tensor<1x2x9xi8>, !tosa.shape<4>) -> tensor<1x2x3x3xi8>
// CHECK-NEXT:   %[[W:.*]] = "tosa.cast"(%[[X]]) : (tensor<1x2x5x5xi8>) -> tensor<1x2x5x5xi32> loc("gap")
// CHECK-NEXT:   %[[H:.*]] = "tosa.reduce_sum"(%[[W]]) <{axis = 2 : i32}> : (tensor<1x2x5x5xi32>) -> tensor<1x2x1x5xi32>
// CHECK-NEXT:   %[[GAP:.*]] = "tosa.reduce_sum"(%[[H]]) <{axis = 3 : i32}> : (tensor<1x2x1x5xi32>) -> tensor<1x2x1x1xi32>
// CHECK-NEXT:   %[[MAXOUT:.*]] = "tosa.transpose"(%[[MAX]]) <{perms = array<i32: 0, 3, 1, 2>}>
// CHECK-NEXT:   "func.return"(%[[MAXOUT]], %[[AVG]], %[[GAP]])
