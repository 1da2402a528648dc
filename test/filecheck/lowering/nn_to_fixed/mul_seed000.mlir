// Seed 000's mul (R12): int8 x int8 -> int16, one rescale by s_l * s_r / s_out = 0.01583 = 16597 * 2^-20.
// RUN: xnpu-opt %s -p lower-nn-to-fixed,fold-quantize-pairs | filecheck %s

func.func @main(%a: tensor<3xf32> {nn.name = "lhs", nn.scale = 0.004211023449897766 : f32}, %b: tensor<3xf32> {nn.name = "rhs", nn.scale = 0.006087401881814003 : f32}) -> (tensor<3xf32> {nn.name = "out"}) {
  %0 = nn.mul %a, %b {nn.scale = 0.0016195599 : f32} : (tensor<3xf32>, tensor<3xf32>) -> tensor<3xf32> loc("mul")
  func.return %0 : tensor<3xf32>
}

// CHECK:      %[[P:.*]] = fixed.mul %{{.*}}, %{{.*}} {{.*}} : (tensor<3xi8>, tensor<3xi8>) -> tensor<3xi16> loc("mul")
// CHECK-NEXT: %[[Q:.*]] = fixed.rescale %[[P]] {multiplier = array<i64: 16597>, shift = array<i64: 20>, {{.*}}} : tensor<3xi16> -> tensor<3xi8> loc("mul")
// CHECK-NEXT: fixed.dequantize %[[Q]]
