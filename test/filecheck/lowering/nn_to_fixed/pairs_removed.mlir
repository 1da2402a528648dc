// Between two lowered ops no float remains: each dequantize -> quantize pair is removed when the
// scales agree (relu -> max_pool keeps the scale, R14), or becomes one rescale where they differ.
// RUN: xnpu-opt %s -p lower-nn-to-fixed,fold-quantize-pairs | filecheck %s

func.func @main(%x: tensor<1x1x2x2xf32> {nn.name = "x", nn.scale = 0.5 : f32}) -> (tensor<1x1x1x1xf32> {nn.name = "y"}) {
  %p = nn.max_pool %x {ceil_mode = 0 : i64, dilations = array<i64: 1, 1>, kernel_shape = array<i64: 2, 2>, pads = array<i64: 0, 0, 0, 0>, strides = array<i64: 2, 2>, nn.scale = 0.25 : f32} : tensor<1x1x2x2xf32> -> tensor<1x1x1x1xf32> loc("pool")
  %g = nn.global_average_pool %p {nn.scale = 0.125 : f32} : tensor<1x1x1x1xf32> -> tensor<1x1x1x1xf32> loc("gap")
  %s = nn.sigmoid %g {nn.scale = 0.0078125 : f32} : tensor<1x1x1x1xf32> -> tensor<1x1x1x1xf32> loc("sig")
  func.return %s : tensor<1x1x1x1xf32>
}

// CHECK:      %[[Q:.*]] = fixed.quantize %x {scale = 5.000000e-01 : f64}
// CHECK-NEXT: %[[P:.*]] = fixed.max_pool %[[Q]] {{.*}} : tensor<1x1x2x2xi8> -> tensor<1x1x1x1xi8> loc("pool")
// CHECK-NEXT: %[[S:.*]] = fixed.global_avg_pool %[[P]] {{.*}} -> tensor<1x1x1x1xi32> loc("gap")
// CHECK-NEXT: %[[G:.*]] = fixed.rescale %[[S]] {multiplier = array<i64: 16384>, shift = array<i64: 12>, scale = 1.250000e-01 : f64} : tensor<1x1x1x1xi32> -> tensor<1x1x1x1xi8> loc("gap")
// CHECK-NEXT: %[[T:.*]] = fixed.table %[[G]] {table = array<i8: 0, 0, {{.*}}, 127, 127>, scale = 7.812500e-03 : f64} : tensor<1x1x1x1xi8> -> tensor<1x1x1x1xi8> loc("sig")
// CHECK-NEXT: %[[F:.*]] = fixed.dequantize %[[T]]
// CHECK-NEXT: func.return %[[F]]
