// Seed 000's worked example (SEEDS.md): lhs max 0.5348, rhs max 0.7731, sum max 0.9642, all /127.
// Direct requantization (R11): the int24 sum goes through one rescale by r_res = s_add / s_out,
// the same mantissa as the two-stage variant's second step with 8 more bits of shift.
// RUN: xnpu-opt %s -p 'lower-nn-to-fixed{variant=direct},fold-quantize-pairs' | filecheck %s

func.func @main(%a: tensor<3xf32> {nn.name = "lhs", nn.scale = 0.004211023449897766 : f32}, %b: tensor<3xf32> {nn.name = "rhs", nn.scale = 0.006087401881814003 : f32}) -> (tensor<3xf32> {nn.name = "out"}) {
  %0 = nn.add %a, %b {nn.scale = 0.0075921262614429 : f32} : (tensor<3xf32>, tensor<3xf32>) -> tensor<3xf32> loc("add")
  func.return %0 : tensor<3xf32>
}

// CHECK:      %[[L:.*]] = fixed.quantize %a {scale = 0.0042110234498977661 : f64} : tensor<3xf32> -> tensor<3xi8> loc("add")
// CHECK-NEXT: %[[R:.*]] = fixed.quantize %b {scale = 0.006087401881814003 : f64} : tensor<3xf32> -> tensor<3xi8> loc("add")
// CHECK-NEXT: %[[S:.*]] = fixed.add %[[L]], %[[R]] {lhs_multiplier = 22668 : i64, lhs_shift = 0 : i64, rhs_multiplier = 16384 : i64, rhs_shift = -1 : i64, {{.*}}} : (tensor<3xi8>, tensor<3xi8>) -> tensor<3xi24>
// CHECK-NEXT: %[[Q:.*]] = fixed.rescale %[[S]] {multiplier = array<i64: 26274>, shift = array<i64: 30>, {{.*}}} : tensor<3xi24> -> tensor<3xi8>
// CHECK-NOT:  fixed.shift
// CHECK-NEXT: %[[F:.*]] = fixed.dequantize %[[Q]] {scale = 0.0075921262614428997 : f64} : tensor<3xi8> -> tensor<3xf32>
// CHECK-NEXT: func.return %[[F]]
