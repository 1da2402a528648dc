// The remaining lowering patterns, one op each, with their integer parameters:
// - batch_norm is a depthwise 1x1 conv: w = g / sqrt(v + eps) per channel (one int8 code 127
//   each), bias (beta - mean * w) at s_x * s_w = 1 / (0.0625 * 0.5 / 127) = 4064; it feeds only
//   the clip, so it takes the clip's scale 1/127: rescales 0.0625 * (2, 0.5) = 2^14 * 2^-(17, 19).
// - clip(-1, 1) at 1/127 is a clamp to [-127, 127] (R8); hard_swish is a 256-entry table (R15).
// - average_pool with count_include_pad = 0 divides each position by its own count (R14):
//   1, 2, 2, 4 valid taps -> 2^14 * 2^-(14, 15, 15, 16).
// - concat, transpose and flatten move codes at one scale (R16).
// - gemm: weights 0.25 -> 127 at 0.25/127; (1/127) * (0.25/127) / 0.03125 = 16643 * 2^-25.
// - div by the constant 2 is a mul by 0.5 (code 127): (1/32) * (0.5/127) / (1/64) = 16513 * 2^-21.
// RUN: xnpu-opt %s -p lower-nn-to-fixed,fold-quantize-pairs | filecheck %s

func.func @main(%x: tensor<1x2x2x2xf32> {nn.name = "x", nn.scale = 0.0625 : f32}) -> (tensor<1x3xf32> {nn.name = "y"}) {
  %bn_s = nn.constant dense<[2.0, 0.5]> : tensor<2xf32>
  %bn_b = nn.constant dense<[0.0, 1.0]> : tensor<2xf32>
  %bn_m = nn.constant dense<[0.0, 0.0]> : tensor<2xf32>
  %bn_v = nn.constant dense<[1.0, 1.0]> : tensor<2xf32>
  %bn = nn.batch_norm %x, %bn_s, %bn_b, %bn_m, %bn_v {epsilon = 0.0 : f32, nn.scale = 0.125 : f32} : (tensor<1x2x2x2xf32>, tensor<2xf32>, tensor<2xf32>, tensor<2xf32>, tensor<2xf32>) -> tensor<1x2x2x2xf32> loc("bn")
  %c = nn.clip %bn {min = -1.0 : f32, max = 1.0 : f32, nn.scale = 0.0078740157 : f32} : tensor<1x2x2x2xf32> -> tensor<1x2x2x2xf32> loc("hardtanh")
  %hs = nn.hard_swish %c {nn.scale = 0.0078740157 : f32} : tensor<1x2x2x2xf32> -> tensor<1x2x2x2xf32> loc("hswish")
  %ap = nn.average_pool %hs {ceil_mode = 0 : i64, count_include_pad = 0 : i64, kernel_shape = array<i64: 2, 2>, pads = array<i64: 1, 1, 0, 0>, strides = array<i64: 1, 1>, nn.scale = 0.0078740157 : f32} : tensor<1x2x2x2xf32> -> tensor<1x2x2x2xf32> loc("avgpool")
  %cat = nn.concat %ap, %c {axis = 1 : i64, nn.scale = 0.0078740157 : f32} : (tensor<1x2x2x2xf32>, tensor<1x2x2x2xf32>) -> tensor<1x4x2x2xf32> loc("concat")
  %t = nn.transpose %cat {perm = array<i64: 0, 2, 3, 1>, nn.scale = 0.0078740157 : f32} : tensor<1x4x2x2xf32> -> tensor<1x2x2x4xf32> loc("transpose")
  %f = nn.flatten %t {axis = 1 : i64, nn.scale = 0.0078740157 : f32} : tensor<1x2x2x4xf32> -> tensor<1x16xf32> loc("flatten")
  %w = nn.constant dense<0.25> : tensor<3x16xf32>
  %g = nn.gemm %f, %w {alpha = 1.0 : f32, beta = 1.0 : f32, trans_a = 0 : i64, trans_b = 1 : i64, nn.scale = 0.03125 : f32} : (tensor<1x16xf32>, tensor<3x16xf32>) -> tensor<1x3xf32> loc("fc")
  %two = nn.constant dense<2.0> : tensor<1x3xf32>
  %d = nn.div %g, %two {nn.scale = 0.015625 : f32} : (tensor<1x3xf32>, tensor<1x3xf32>) -> tensor<1x3xf32> loc("half")
  func.return %d : tensor<1x3xf32>
}

// CHECK:      %[[X:.*]] = fixed.quantize %x {scale = 6.250000e-02 : f64}
// CHECK-NEXT: %[[BW:.*]] = fixed.constant dense<127> : tensor<2x1x1x1xi8> loc("bn")
// CHECK-NEXT: %[[BB:.*]] = fixed.constant dense<[0, 4064]> : tensor<2xi32> loc("bn")
// CHECK-NEXT: %[[BC:.*]] = fixed.conv2d %[[X]], %[[BW]], %[[BB]] {{.*}}group = 2 : i64} {{.*}} loc("bn")
// CHECK-NEXT: %[[BN:.*]] = fixed.rescale %[[BC]] {multiplier = array<i64: 16384, 16384>, shift = array<i64: 17, 19>, axis = 1 : i64, {{.*}} loc("bn")
// CHECK-NEXT: %[[C:.*]] = fixed.clamp %[[BN]] {min = -127 : i64, max = 127 : i64, {{.*}} loc("hardtanh")
// CHECK-NEXT: %[[HS:.*]] = fixed.table %[[C]] {table = array<i8: -42, -42, {{.*}}} : tensor<1x2x2x2xi8> -> tensor<1x2x2x2xi8> loc("hswish")
// CHECK-NEXT: %[[AP:.*]] = fixed.avg_pool %[[HS]] {{.*}}multiplier = array<i64: 16384, 16384, 16384, 16384>, shift = array<i64: 14, 15, 15, 16>} {{.*}} loc("avgpool")
// CHECK-NEXT: %[[CAT:.*]] = fixed.concat %[[AP]], %[[C]] {axis = 1 : i64, {{.*}} -> tensor<1x4x2x2xi8> loc("concat")
// CHECK-NEXT: %[[T:.*]] = fixed.transpose %[[CAT]] {perm = array<i64: 0, 2, 3, 1>, {{.*}} -> tensor<1x2x2x4xi8> loc("transpose")
// CHECK-NEXT: %[[F:.*]] = fixed.flatten %[[T]] {axis = 1 : i64, {{.*}} -> tensor<1x16xi8> loc("flatten")
// CHECK-NEXT: %[[GW:.*]] = fixed.constant dense<127> : tensor<3x16xi8> loc("fc")
// CHECK-NEXT: %[[GB:.*]] = fixed.constant dense<0> : tensor<3xi32> loc("fc")
// CHECK-NEXT: %[[G:.*]] = fixed.gemm %[[F]], %[[GW]], %[[GB]] {trans_b = 1 : i64}
// CHECK-NEXT: %[[GQ:.*]] = fixed.rescale %[[G]] {multiplier = array<i64: 16643, 16643, 16643>, shift = array<i64: 25, 25, 25>, axis = 1 : i64, {{.*}} loc("fc")
// CHECK-NEXT: %[[HALF:.*]] = fixed.constant dense<127> : tensor<1x3xi8> loc("half")
// CHECK-NEXT: %[[P:.*]] = fixed.mul %[[GQ]], %[[HALF]] {{.*}} -> tensor<1x3xi16> loc("half")
// CHECK-NEXT: %[[D:.*]] = fixed.rescale %[[P]] {multiplier = array<i64: 16513>, shift = array<i64: 21>, {{.*}} loc("half")
// CHECK-NEXT: fixed.dequantize %[[D]] {scale = 1.562500e-02 : f64}
