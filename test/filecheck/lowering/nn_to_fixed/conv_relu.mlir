// A conv feeding only a relu takes the relu's scale, so the relu is a bare clamp to [0, 127]
// (no second rounding); weights are per-channel int8, the bias int32 at s_x * s_w[c] (R13).
// Channel 0: w = [1, -2] -> s_w = 2/127; channel 1: w = [0.5, 0.25] -> s_w = 0.5/127.
// s_x = 1/127, s_y = 4/127: r_c = s_x * s_w[c] / s_y = 1/254, 1/1016 = 16513 * 2^-22, 16513 * 2^-24.
// RUN: xnpu-opt %s -p lower-nn-to-fixed,fold-quantize-pairs | filecheck %s

func.func @main(%x: tensor<1x2x1x1xf32> {nn.name = "x", nn.scale = 0.007874015718698502 : f32}) -> (tensor<1x2x1x1xf32> {nn.name = "y"}) {
  %w = nn.constant dense<[[[[1.0]], [[-2.0]]], [[[0.5]], [[0.25]]]]> : tensor<2x2x1x1xf32>
  %b = nn.constant dense<[0.5, -1.0]> : tensor<2xf32>
  %c = nn.conv2d %x, %w, %b {dilations = array<i64: 1, 1>, group = 1 : i64, pads = array<i64: 0, 0, 0, 0>, strides = array<i64: 1, 1>, nn.scale = 0.1 : f32} : (tensor<1x2x1x1xf32>, tensor<2x2x1x1xf32>, tensor<2xf32>) -> tensor<1x2x1x1xf32> loc("conv")
  %r = nn.relu %c {nn.scale = 0.031496062874794006 : f32} : tensor<1x2x1x1xf32> -> tensor<1x2x1x1xf32> loc("relu")
  func.return %r : tensor<1x2x1x1xf32>
}

// CHECK:      %[[X:.*]] = fixed.quantize %x {scale = 0.0078740157186985016 : f64} : tensor<1x2x1x1xf32> -> tensor<1x2x1x1xi8>
// CHECK-NEXT: %[[W:.*]] = fixed.constant dense<{{\[\[\[\[}}64]], {{\[\[}}-127]]], {{\[\[\[}}127]], {{\[\[}}64]]]]> : tensor<2x2x1x1xi8>
// CHECK-NEXT: %[[B:.*]] = fixed.constant dense<[4032, -32258]> : tensor<2xi32>
// CHECK-NEXT: %[[C:.*]] = fixed.conv2d %[[X]], %[[W]], %[[B]] {{.*}} -> tensor<1x2x1x1xi32> loc("conv")
// CHECK-NEXT: %[[Q:.*]] = fixed.rescale %[[C]] {multiplier = array<i64: 16513, 16513>, shift = array<i64: 22, 24>, axis = 1 : i64, {{.*}}} : tensor<1x2x1x1xi32> -> tensor<1x2x1x1xi8> loc("conv")
// CHECK-NEXT: %[[R:.*]] = fixed.clamp %[[Q]] {min = 0 : i64, max = 127 : i64, {{.*}}} : tensor<1x2x1x1xi8> -> tensor<1x2x1x1xi8> loc("relu")
// CHECK-NEXT: fixed.dequantize %[[R]] {scale = 0.031496062874794006 : f64}
