// add.mlir's patterns, one per op and variant: seed 000's sub (the worked example's scales,
// lhs - rhs) and x + c with c an nn.constant, in both requantizations.
// sub: the larger-scale rhs is multiplied by exactly 2^15 (16384 << 1), lhs by 22668 (R11);
// two_stage shifts by rs1 = 8 to int16 and rescales by 26274 * 2^-22, direct by 26274 * 2^-30.
// c + x: c = [0.25, -0.5, 1] at 1/127 is the int8 data [32, -64, 127] (@quantize_constant) and
// has the larger scale; x gets 17524 (s_x / s_add), r_res = 25802 * 2^-30.
// RUN: xnpu-opt %s -p 'lower-nn-to-fixed{variant=two_stage}' | filecheck %s --check-prefix=TWO
// RUN: xnpu-opt %s -p 'lower-nn-to-fixed{variant=direct}' | filecheck %s --check-prefix=DIRECT

func.func @main(%a: tensor<3xf32> {nn.name = "lhs", nn.scale = 0.004211023449897766 : f32}, %b: tensor<3xf32> {nn.name = "rhs", nn.scale = 0.006087401881814003 : f32}) -> (tensor<3xf32> {nn.name = "diff"}, tensor<3xf32> {nn.name = "shifted"}) {
  %0 = nn.sub %a, %b {nn.scale = 0.0075921262614429 : f32} : (tensor<3xf32>, tensor<3xf32>) -> tensor<3xf32> loc("sub")
  %c = nn.constant dense<[0.25, -0.5, 1.0]> : tensor<3xf32>
  %1 = nn.add %c, %a {nn.scale = 0.01 : f32} : (tensor<3xf32>, tensor<3xf32>) -> tensor<3xf32> loc("add_c")
  func.return %0, %1 : tensor<3xf32>, tensor<3xf32>
}

// TWO:      %[[L:.*]] = fixed.quantize %a {{.*}} loc("sub")
// TWO-NEXT: %[[R:.*]] = fixed.quantize %b {{.*}} loc("sub")
// TWO-NEXT: %[[D:.*]] = fixed.sub %[[L]], %[[R]] {lhs_multiplier = 22668 : i64, lhs_shift = 0 : i64, rhs_multiplier = 16384 : i64, rhs_shift = -1 : i64, {{.*}}} : (tensor<3xi8>, tensor<3xi8>) -> tensor<3xi24> loc("sub")
// TWO-NEXT: %[[H:.*]] = fixed.shift %[[D]] {shift = 8 : i64, rounding = 0 : i64, {{.*}}} : tensor<3xi24> -> tensor<3xi16> loc("sub")
// TWO-NEXT: %[[Y:.*]] = fixed.rescale %[[H]] {multiplier = array<i64: 26274>, shift = array<i64: 22>, {{.*}}} : tensor<3xi16> -> tensor<3xi8> loc("sub")
// TWO-NEXT: fixed.dequantize %[[Y]] {scale = 0.0075921262614428997 : f64} : tensor<3xi8> -> tensor<3xf32> loc("sub")
// TWO-NEXT: %[[C:.*]] = fixed.constant dense<[32, -64, 127]> : tensor<3xi8> loc("add_c")
// TWO-NEXT: %[[X:.*]] = fixed.quantize %a {{.*}} loc("add_c")
// TWO-NEXT: %[[S:.*]] = fixed.add %[[C]], %[[X]] {lhs_multiplier = 16384 : i64, lhs_shift = -1 : i64, rhs_multiplier = 17524 : i64, rhs_shift = 0 : i64, {{.*}}} : (tensor<3xi8>, tensor<3xi8>) -> tensor<3xi24> loc("add_c")
// TWO-NEXT: %[[SH:.*]] = fixed.shift %[[S]] {shift = 8 : i64, rounding = 0 : i64, {{.*}} -> tensor<3xi16> loc("add_c")
// TWO-NEXT: fixed.rescale %[[SH]] {multiplier = array<i64: 25802>, shift = array<i64: 22>, {{.*}} -> tensor<3xi8> loc("add_c")

// DIRECT:      %[[D:.*]] = fixed.sub %{{.*}}, %{{.*}} {lhs_multiplier = 22668 : i64, lhs_shift = 0 : i64, rhs_multiplier = 16384 : i64, rhs_shift = -1 : i64, {{.*}} -> tensor<3xi24> loc("sub")
// DIRECT-NEXT: %[[Y:.*]] = fixed.rescale %[[D]] {multiplier = array<i64: 26274>, shift = array<i64: 30>, {{.*}}} : tensor<3xi24> -> tensor<3xi8> loc("sub")
// DIRECT-NEXT: fixed.dequantize %[[Y]]
// DIRECT-NEXT: %[[C:.*]] = fixed.constant dense<[32, -64, 127]> : tensor<3xi8> loc("add_c")
// DIRECT-NEXT: %[[X:.*]] = fixed.quantize %a
// DIRECT-NEXT: %[[S:.*]] = fixed.add %[[C]], %[[X]] {lhs_multiplier = 16384 : i64, lhs_shift = -1 : i64, rhs_multiplier = 17524 : i64, rhs_shift = 0 : i64, {{.*}} -> tensor<3xi24> loc("add_c")
// DIRECT-NEXT: fixed.rescale %[[S]] {multiplier = array<i64: 25802>, shift = array<i64: 30>, {{.*}} -> tensor<3xi8> loc("add_c")
// DIRECT-NOT:  fixed.shift
