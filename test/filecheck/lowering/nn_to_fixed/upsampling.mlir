// Upsampling to fixed point: resize.mlir's patterns, the Python transposed-convolution lowering
// and tanh's table, with their integers:
// - nearest (asymmetric, ceil) moves codes at the input's scale (R16): output row i copies row
//   min(ceil(i / 2), 1), so rows 0, 1, 1, 1 and columns 0, 1, 1, 2, 2, 2.
// - linear half_pixel x2 (R17): weights (4, 0), (3, 1), (1, 3), ... over D = 4 per axis; the sum
//   is rescaled by s_in / (16 s_out) = 1/16 = 16384 * 2^-18.
// - linear align_corners 2 -> 4 and 3 -> 6: exact weights over D = 3 and 5, rescaled by 1/15 =
//   17476 * 2^-18 (no weight rounding).
// - conv_transpose2d, depthwise (R18): weights per output channel at max|w| / 127 (0.5 -> 64),
//   biases at s_x * s_w (0.125 / (0.0625 / 127) = 254), rescales s_x * s_w / s_y; tanh is a table.
// RUN: xnpu-opt %s -p lower-nn-to-fixed,fold-quantize-pairs | filecheck %s

func.func @main(%x: tensor<1x2x2x3xf32> {nn.name = "x", nn.scale = 0.0625 : f32}) -> (tensor<1x2x4x6xf32> {nn.name = "near"}, tensor<1x2x4x6xf32> {nn.name = "half"}, tensor<1x2x4x6xf32> {nn.name = "corners"}, tensor<1x2x4x6xf32> {nn.name = "up"}) {
  %n = nn.resize %x {mode = "nearest", coordinate_transformation_mode = "asymmetric", nearest_mode = "ceil", nn.scale = 0.5 : f32} : tensor<1x2x2x3xf32> -> tensor<1x2x4x6xf32> loc("nearest")
  %h = nn.resize %x {mode = "linear", coordinate_transformation_mode = "half_pixel", nn.scale = 0.0625 : f32} : tensor<1x2x2x3xf32> -> tensor<1x2x4x6xf32> loc("half_pixel")
  %c = nn.resize %x {mode = "linear", coordinate_transformation_mode = "align_corners", nn.scale = 0.0625 : f32} : tensor<1x2x2x3xf32> -> tensor<1x2x4x6xf32> loc("align_corners")
  %w = nn.constant dense<[[[[0.5, -0.25], [1.0, 0.0]]], [[[2.0, 1.0], [-1.0, 0.5]]]]> : tensor<2x1x2x2xf32>
  %b = nn.constant dense<[0.125, -1.0]> : tensor<2xf32>
  %t = nn.conv_transpose2d %x, %w, %b {strides = array<i64: 2, 2>, pads = array<i64: 0, 0, 0, 0>, dilations = array<i64: 1, 1>, output_padding = array<i64: 0, 0>, group = 2 : i64, nn.scale = 0.25 : f32} : (tensor<1x2x2x3xf32>, tensor<2x1x2x2xf32>, tensor<2xf32>) -> tensor<1x2x4x6xf32> loc("deconv")
  %th = nn.tanh %t {nn.scale = 0.0078125 : f32} : tensor<1x2x4x6xf32> -> tensor<1x2x4x6xf32> loc("tanh")
  func.return %n, %h, %c, %th : tensor<1x2x4x6xf32>, tensor<1x2x4x6xf32>, tensor<1x2x4x6xf32>, tensor<1x2x4x6xf32>
}

// CHECK:      %[[Q:.*]] = fixed.quantize %x {scale = 6.250000e-02 : f64}
// CHECK-NEXT: %[[N:.*]] = fixed.resize %[[Q]] {rows = array<i64: 0, 1, 1, 1>, cols = array<i64: 0, 1, 1, 2, 2, 2>, scale = 6.250000e-02 : f64} : tensor<1x2x2x3xi8> -> tensor<1x2x4x6xi8> loc("nearest")
// CHECK-NEXT: fixed.dequantize %[[N]] {scale = 6.250000e-02 : f64}
// CHECK-NEXT: %[[H:.*]] = fixed.resize_linear %[[Q]] {rows = array<i64: 0, 1, 0, 1, 0, 1, 1, 1>, row_weights = array<i64: 4, 0, 3, 1, 1, 3, 4, 0>, cols = array<i64: 0, 1, 0, 1, 0, 1, 1, 2, 1, 2, 2, 2>, col_weights = array<i64: 4, 0, 3, 1, 1, 3, 3, 1, 1, 3, 4, 0>, scale = 3.906250e-03 : f64} : tensor<1x2x2x3xi8> -> tensor<1x2x4x6xi32> loc("half_pixel")
// CHECK-NEXT: fixed.rescale %[[H]] {multiplier = array<i64: 16384>, shift = array<i64: 18>, scale = 6.250000e-02 : f64} : tensor<1x2x4x6xi32> -> tensor<1x2x4x6xi8> loc("half_pixel")
// CHECK-NEXT: fixed.dequantize
// CHECK-NEXT: %[[C:.*]] = fixed.resize_linear %[[Q]] {rows = array<i64: 0, 1, 0, 1, 0, 1, 1, 1>, row_weights = array<i64: 3, 0, 2, 1, 1, 2, 3, 0>, cols = array<i64: 0, 1, 0, 1, 0, 1, 1, 2, 1, 2, 2, 2>, col_weights = array<i64: 5, 0, 3, 2, 1, 4, 4, 1, 2, 3, 5, 0>
// CHECK-NEXT: fixed.rescale %[[C]] {multiplier = array<i64: 17476>, shift = array<i64: 18>, {{.*}} loc("align_corners")
// CHECK-NEXT: fixed.dequantize
// CHECK-NEXT: %[[W:.*]] = fixed.constant dense<{{\[\[\[\[}}64, -32], [127, 0]]], {{\[\[\[}}127, 64], [-64, 32]]]]> : tensor<2x1x2x2xi8> loc("deconv")
// CHECK-NEXT: %[[B:.*]] = fixed.constant dense<[254, -1016]> : tensor<2xi32> loc("deconv")
// CHECK-NEXT: %[[T:.*]] = fixed.conv_transpose2d %[[Q]], %[[W]], %[[B]] {strides = array<i64: 2, 2>, pads = array<i64: 0, 0, 0, 0>, dilations = array<i64: 1, 1>, output_padding = array<i64: 0, 0>, group = 2 : i64} : (tensor<1x2x2x3xi8>, tensor<2x1x2x2xi8>, tensor<2xi32>) -> tensor<1x2x4x6xi32> loc("deconv")
// CHECK-NEXT: %[[TQ:.*]] = fixed.rescale %[[T]] {multiplier = array<i64: 16513, 16513>, shift = array<i64: 23, 22>, axis = 1 : i64, scale = 2.500000e-01 : f64} {{.*}} loc("deconv")
// CHECK-NEXT: fixed.table %[[TQ]] {table = array<i8: -127, {{.*}}, -31, 0, 31, 59, {{.*}}, 127>, scale = 7.812500e-03 : f64} {{.*}} loc("tanh")
