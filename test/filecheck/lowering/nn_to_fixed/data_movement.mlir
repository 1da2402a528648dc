// pool.mlir's @max_pool and data_movement.mlir's @transpose and @reshape: each moves the codes of
// its input at the output scale, which refine_scales made the input's 0.02 (the calibrated 0.5
// would round twice); window attributes and the permutation are copied from the float op.
// RUN: xnpu-opt %s -p lower-nn-to-fixed | filecheck %s

func.func @main(%x: tensor<1x2x2x2xf32> {nn.name = "x", nn.scale = 0.02 : f32}) -> (tensor<2x4xf32> {nn.name = "y"}) {
  %p = nn.max_pool %x {ceil_mode = 0 : i64, dilations = array<i64: 1, 1>, kernel_shape = array<i64: 1, 2>, pads = array<i64: 0, 0, 0, 1>, strides = array<i64: 1, 1>, nn.scale = 0.5 : f32} : tensor<1x2x2x2xf32> -> tensor<1x2x2x2xf32> loc("pool")
  %t = nn.transpose %p {perm = array<i64: 0, 3, 2, 1>, nn.scale = 0.5 : f32} : tensor<1x2x2x2xf32> -> tensor<1x2x2x2xf32> loc("transpose")
  %r = nn.reshape %t {nn.scale = 0.5 : f32} : tensor<1x2x2x2xf32> -> tensor<2x4xf32> loc("reshape")
  func.return %r : tensor<2x4xf32>
}

// CHECK:      %[[Q:.*]] = fixed.quantize %x {scale = 0.019999999552965164 : f64} : tensor<1x2x2x2xf32> -> tensor<1x2x2x2xi8> loc("pool")
// CHECK-NEXT: %[[P:.*]] = fixed.max_pool %[[Q]] {kernel_shape = array<i64: 1, 2>, strides = array<i64: 1, 1>, pads = array<i64: 0, 0, 0, 1>, ceil_mode = 0 : i64, scale = 0.019999999552965164 : f64, dilations = array<i64: 1, 1>} : tensor<1x2x2x2xi8> -> tensor<1x2x2x2xi8> loc("pool")
// CHECK-NEXT: %[[PF:.*]] = fixed.dequantize %[[P]] {scale = 0.019999999552965164 : f64}
// CHECK-NEXT: %[[TQ:.*]] = fixed.quantize %[[PF]] {scale = 0.019999999552965164 : f64} {{.*}} loc("transpose")
// CHECK-NEXT: %[[T:.*]] = fixed.transpose %[[TQ]] {perm = array<i64: 0, 3, 2, 1>, scale = 0.019999999552965164 : f64} : tensor<1x2x2x2xi8> -> tensor<1x2x2x2xi8> loc("transpose")
// CHECK-NEXT: %[[TF:.*]] = fixed.dequantize %[[T]]
// CHECK-NEXT: %[[RQ:.*]] = fixed.quantize %[[TF]] {scale = 0.019999999552965164 : f64} {{.*}} loc("reshape")
// CHECK-NEXT: %[[R:.*]] = fixed.reshape %[[RQ]] {scale = 0.019999999552965164 : f64} : tensor<1x2x2x2xi8> -> tensor<2x4xi8> loc("reshape")
// CHECK-NEXT: fixed.dequantize %[[R]] {scale = 0.019999999552965164 : f64} : tensor<2x4xi8> -> tensor<2x4xf32> loc("reshape")
