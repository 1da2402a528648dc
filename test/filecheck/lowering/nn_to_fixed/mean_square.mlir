// A mean of squares over the last axis (R19): the codes' squares split into base-127 digits by
// two tables, summed exactly by two gemms by constant columns (127s, 1s), each sum rescaled by
// s_x^2 / (C s_y) = 0.1^2 / (4 * 0.05) = 0.05 = 26214 * 2^-19, the two added (R11).
// RUN: xnpu-opt %s -p lower-nn-to-fixed{variant=direct},fold-quantize-pairs | filecheck %s

func.func @main(%x: tensor<1x3x4xf32> {nn.name = "x", nn.scale = 0.1 : f32}) -> (tensor<1x3x1xf32> {nn.name = "v"}) {
  %v = nn.mean_square %x {nn.scale = 0.05 : f32} : tensor<1x3x4xf32> -> tensor<1x3x1xf32> loc("variance")
  func.return %v : tensor<1x3x1xf32>
}

// CHECK:      %[[Q:.*]] = fixed.quantize %x {{.*}} -> tensor<1x3x4xi8>
// CHECK-NEXT: %[[M:.*]] = fixed.reshape %[[Q]] {{.*}} : tensor<1x3x4xi8> -> tensor<3x4xi8> loc("variance")
// CHECK-NEXT: %[[HIGH:.*]] = fixed.table %[[M]] {table = array<i8: 0, 127, 125, 123,
// CHECK-NEXT: %[[W127:.*]] = fixed.constant dense<127> : tensor<4x1xi8>
// CHECK-NEXT: %[[B:.*]] = fixed.constant dense<[0]> : tensor<1xi32>
// CHECK-NEXT: %[[SH:.*]] = fixed.gemm %[[HIGH]], %[[W127]], %[[B]] {{.*}} -> tensor<3x1xi32>
// CHECK-NEXT: %[[RH:.*]] = fixed.rescale %[[SH]] {multiplier = array<i64: 26214>, shift = array<i64: 19>
// CHECK-NEXT: %[[LOW:.*]] = fixed.table %[[M]] {table = array<i8: 0, 0, 1, 4, 9,
// CHECK-NEXT: %[[W1:.*]] = fixed.constant dense<1> : tensor<4x1xi8>
// CHECK-NEXT: %[[SL:.*]] = fixed.gemm %[[LOW]], %[[W1]], %[[B]] {{.*}} -> tensor<3x1xi32>
// CHECK-NEXT: %[[RL:.*]] = fixed.rescale %[[SL]] {multiplier = array<i64: 26214>, shift = array<i64: 19>
// CHECK-NEXT: %[[S:.*]] = fixed.add %[[RH]], %[[RL]] {{.*}} -> tensor<3x1xi24>
// CHECK-NEXT: %[[Y:.*]] = fixed.rescale %[[S]] {{.*}} : tensor<3x1xi24> -> tensor<3x1xi8>
// CHECK-NEXT: %[[R:.*]] = fixed.reshape %[[Y]] {{.*}} : tensor<3x1xi8> -> tensor<1x3x1xi8>
// CHECK-NEXT: fixed.dequantize %[[R]]
