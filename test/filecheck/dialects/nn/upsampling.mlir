// RUN: %roundtrip

// Upsampling: resize by integer factors (nearest with ONNX's coordinate modes and rounding,
// linear x2) and transposed convolution (stride 2, pads, output_padding, groups).

func.func @upsampling(%x: tensor<1x4x5x6xf32>, %w: tensor<4x3x2x2xf32>, %b: tensor<3xf32>, %dw: tensor<4x1x3x3xf32>) -> (tensor<1x4x10x12xf32>, tensor<1x4x40x18xf32>, tensor<1x4x10x6xf32>, tensor<1x3x10x12xf32>, tensor<1x4x10x12xf32>) {
  %nearest = nn.resize %x {mode = "nearest", coordinate_transformation_mode = "asymmetric", nearest_mode = "floor"} : tensor<1x4x5x6xf32> -> tensor<1x4x10x12xf32> loc("up_nearest")
  %by_eight_and_three = nn.resize %x {mode = "nearest", coordinate_transformation_mode = "half_pixel", nearest_mode = "round_prefer_ceil"} : tensor<1x4x5x6xf32> -> tensor<1x4x40x18xf32>
  %linear = nn.resize %x {mode = "linear", coordinate_transformation_mode = "align_corners"} : tensor<1x4x5x6xf32> -> tensor<1x4x10x6xf32>
  %deconv = nn.conv_transpose2d %x, %w, %b {strides = array<i64: 2, 2>, pads = array<i64: 0, 0, 0, 0>, dilations = array<i64: 1, 1>, output_padding = array<i64: 0, 0>, group = 1 : i64} : (tensor<1x4x5x6xf32>, tensor<4x3x2x2xf32>, tensor<3xf32>) -> tensor<1x3x10x12xf32> loc("deconv")
  %depthwise = nn.conv_transpose2d %x, %dw {strides = array<i64: 2, 2>, pads = array<i64: 1, 1, 1, 1>, dilations = array<i64: 1, 1>, output_padding = array<i64: 1, 1>, group = 4 : i64} : (tensor<1x4x5x6xf32>, tensor<4x1x3x3xf32>) -> tensor<1x4x10x12xf32>
  func.return %nearest, %by_eight_and_three, %linear, %deconv, %depthwise : tensor<1x4x10x12xf32>, tensor<1x4x40x18xf32>, tensor<1x4x10x6xf32>, tensor<1x3x10x12xf32>, tensor<1x4x10x12xf32>
}

// CHECK:      func.func @upsampling(
// CHECK-NEXT:   %nearest = nn.resize %x {mode = "nearest", coordinate_transformation_mode = "asymmetric", nearest_mode = "floor"} : tensor<1x4x5x6xf32> -> tensor<1x4x10x12xf32> loc("up_nearest")
// CHECK-NEXT:   %by_eight_and_three = nn.resize %x {mode = "nearest", coordinate_transformation_mode = "half_pixel", nearest_mode = "round_prefer_ceil"} : tensor<1x4x5x6xf32> -> tensor<1x4x40x18xf32>
// CHECK-NEXT:   %linear = nn.resize %x {mode = "linear", coordinate_transformation_mode = "align_corners"} : tensor<1x4x5x6xf32> -> tensor<1x4x10x6xf32>
// CHECK-NEXT:   %deconv = nn.conv_transpose2d %x, %w, %b {strides = array<i64: 2, 2>, pads = array<i64: 0, 0, 0, 0>, dilations = array<i64: 1, 1>, output_padding = array<i64: 0, 0>, group = 1 : i64} : (tensor<1x4x5x6xf32>, tensor<4x3x2x2xf32>, tensor<3xf32>) -> tensor<1x3x10x12xf32> loc("deconv")
// CHECK-NEXT:   %depthwise = nn.conv_transpose2d %x, %dw {strides = array<i64: 2, 2>, pads = array<i64: 1, 1, 1, 1>, dilations = array<i64: 1, 1>, output_padding = array<i64: 1, 1>, group = 4 : i64} : (tensor<1x4x5x6xf32>, tensor<4x1x3x3xf32>) -> tensor<1x4x10x12xf32>
