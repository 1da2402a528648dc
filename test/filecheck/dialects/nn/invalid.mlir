// RUN: xnpu-opt %s --split-input-file --verify-diagnostics | filecheck %s

// Each case breaks one rule of an nn op's verifier; the message names the op and both
// sides of the disagreement.

func.func @conv_result(%x: tensor<1x4x8x8xf32>, %w: tensor<6x4x3x3xf32>) -> tensor<1x6x8x8xf32> {
  %y = nn.conv2d %x, %w {strides = array<i64: 1, 1>, pads = array<i64: 0, 0, 0, 0>, dilations = array<i64: 1, 1>, group = 1 : i64} : (tensor<1x4x8x8xf32>, tensor<6x4x3x3xf32>) -> tensor<1x6x8x8xf32>
  func.return %y : tensor<1x6x8x8xf32>
}

// CHECK: nn.conv2d: result shape is [1, 6, 8, 8] but the operands give [1, 6, 6, 6]

// -----

func.func @conv_group(%x: tensor<1x4x8x8xf32>, %w: tensor<6x1x3x3xf32>) -> tensor<1x6x6x6xf32> {
  %y = nn.conv2d %x, %w {strides = array<i64: 1, 1>, pads = array<i64: 0, 0, 0, 0>, dilations = array<i64: 1, 1>, group = 3 : i64} : (tensor<1x4x8x8xf32>, tensor<6x1x3x3xf32>) -> tensor<1x6x6x6xf32>
  func.return %y : tensor<1x6x6x6xf32>
}

// CHECK: nn.conv2d: group 3 must divide input channels 4 and output channels 6

// -----

func.func @conv_channels(%x: tensor<1x4x8x8xf32>, %w: tensor<6x2x3x3xf32>) -> tensor<1x6x6x6xf32> {
  %y = nn.conv2d %x, %w {strides = array<i64: 1, 1>, pads = array<i64: 0, 0, 0, 0>, dilations = array<i64: 1, 1>, group = 1 : i64} : (tensor<1x4x8x8xf32>, tensor<6x2x3x3xf32>) -> tensor<1x6x6x6xf32>
  func.return %y : tensor<1x6x6x6xf32>
}

// CHECK: nn.conv2d: weight expects 2 x group 1 = 2 input channels, input has 4

// -----

func.func @conv_bias(%x: tensor<1x4x8x8xf32>, %w: tensor<6x4x3x3xf32>, %b: tensor<4xf32>) -> tensor<1x6x6x6xf32> {
  %y = nn.conv2d %x, %w, %b {strides = array<i64: 1, 1>, pads = array<i64: 0, 0, 0, 0>, dilations = array<i64: 1, 1>, group = 1 : i64} : (tensor<1x4x8x8xf32>, tensor<6x4x3x3xf32>, tensor<4xf32>) -> tensor<1x6x6x6xf32>
  func.return %y : tensor<1x6x6x6xf32>
}

// CHECK: nn.conv2d: bias shape must be [6], got [4]

// -----

func.func @conv_kernel(%x: tensor<1x4x2x2xf32>, %w: tensor<6x4x3x3xf32>) -> tensor<1x6x1x1xf32> {
  %y = nn.conv2d %x, %w {strides = array<i64: 1, 1>, pads = array<i64: 0, 0, 0, 0>, dilations = array<i64: 1, 1>, group = 1 : i64} : (tensor<1x4x2x2xf32>, tensor<6x4x3x3xf32>) -> tensor<1x6x1x1xf32>
  func.return %y : tensor<1x6x1x1xf32>
}

// CHECK: nn.conv2d: kernel [3, 3] does not fit input [2, 2]

// -----

func.func @conv_strides(%x: tensor<1x4x8x8xf32>, %w: tensor<6x4x3x3xf32>) -> tensor<1x6x6x6xf32> {
  %y = nn.conv2d %x, %w {strides = array<i64: 0, 1>, pads = array<i64: 0, 0, 0, 0>, dilations = array<i64: 1, 1>, group = 1 : i64} : (tensor<1x4x8x8xf32>, tensor<6x4x3x3xf32>) -> tensor<1x6x6x6xf32>
  func.return %y : tensor<1x6x6x6xf32>
}

// CHECK: nn.conv2d: 'strides' values must be >= 1, got [0, 1]

// -----

func.func @conv_pads(%x: tensor<1x4x8x8xf32>, %w: tensor<6x4x3x3xf32>) -> tensor<1x6x6x6xf32> {
  %y = nn.conv2d %x, %w {strides = array<i64: 1, 1>, pads = array<i64: 0, 0>, dilations = array<i64: 1, 1>, group = 1 : i64} : (tensor<1x4x8x8xf32>, tensor<6x4x3x3xf32>) -> tensor<1x6x6x6xf32>
  func.return %y : tensor<1x6x6x6xf32>
}

// CHECK: nn.conv2d: 'pads' needs 4 values, got [0, 0]

// -----

func.func @add_broadcast(%a: tensor<2x3xf32>, %b: tensor<4xf32>) -> tensor<2x4xf32> {
  %y = nn.add %a, %b : (tensor<2x3xf32>, tensor<4xf32>) -> tensor<2x4xf32>
  func.return %y : tensor<2x4xf32>
}

// CHECK: nn.add: shapes [2, 3] and [4] do not broadcast

// -----

func.func @mul_result(%a: tensor<2x3xf32>, %b: tensor<3xf32>) -> tensor<3x2xf32> {
  %y = nn.mul %a, %b : (tensor<2x3xf32>, tensor<3xf32>) -> tensor<3x2xf32>
  func.return %y : tensor<3x2xf32>
}

// CHECK: nn.mul: result shape is [3, 2] but the operands give [2, 3]

// -----

func.func @transpose_perm(%x: tensor<2x3x4xf32>) -> tensor<2x3x4xf32> {
  %y = nn.transpose %x {perm = array<i64: 0, 0, 2>} : tensor<2x3x4xf32> -> tensor<2x3x4xf32>
  func.return %y : tensor<2x3x4xf32>
}

// CHECK: nn.transpose: perm [0, 0, 2] is not a permutation of 0..2

// -----

func.func @transpose_result(%x: tensor<2x3x4xf32>) -> tensor<2x3x4xf32> {
  %y = nn.transpose %x {perm = array<i64: 2, 1, 0>} : tensor<2x3x4xf32> -> tensor<2x3x4xf32>
  func.return %y : tensor<2x3x4xf32>
}

// CHECK: nn.transpose: result shape is [2, 3, 4] but the operands give [4, 3, 2]

// -----

func.func @reshape_count(%x: tensor<2x3xf32>) -> tensor<7xf32> {
  %y = nn.reshape %x : tensor<2x3xf32> -> tensor<7xf32>
  func.return %y : tensor<7xf32>
}

// CHECK: nn.reshape: cannot reshape [2, 3] (6 elements) to [7] (7 elements)

// -----

func.func @flatten_axis(%x: tensor<2x3xf32>) -> tensor<6x1xf32> {
  %y = nn.flatten %x {axis = 3 : i64} : tensor<2x3xf32> -> tensor<6x1xf32>
  func.return %y : tensor<6x1xf32>
}

// CHECK: nn.flatten: axis 3 is out of range for rank 2

// -----

func.func @clip_bounds(%x: tensor<4xf32>) -> tensor<4xf32> {
  %y = nn.clip %x {min = 6.0 : f32, max = 0.0 : f32} : tensor<4xf32> -> tensor<4xf32>
  func.return %y : tensor<4xf32>
}

// CHECK: nn.clip: min 6.0 is greater than max 0.0

// -----

func.func @relu_result(%x: tensor<2x3xf32>) -> tensor<3x2xf32> {
  %y = nn.relu %x : tensor<2x3xf32> -> tensor<3x2xf32>
  func.return %y : tensor<3x2xf32>
}

// CHECK: nn.relu: result shape is [3, 2] but the operands give [2, 3]

// -----

func.func @softmax_axis(%x: tensor<2x3xf32>) -> tensor<2x3xf32> {
  %y = nn.softmax %x {axis = 2 : i64} : tensor<2x3xf32> -> tensor<2x3xf32>
  func.return %y : tensor<2x3xf32>
}

// CHECK: nn.softmax: axis 2 is out of range for rank 2

// -----

func.func @concat_mismatch(%a: tensor<1x2x4xf32>, %b: tensor<1x3x5xf32>) -> tensor<1x5x4xf32> {
  %y = nn.concat %a, %b {axis = 1 : i64} : (tensor<1x2x4xf32>, tensor<1x3x5xf32>) -> tensor<1x5x4xf32>
  func.return %y : tensor<1x5x4xf32>
}

// CHECK: nn.concat: input shapes [[1, 2, 4], [1, 3, 5]] differ outside axis 1

// -----

func.func @concat_axis(%a: tensor<1x2xf32>) -> tensor<1x2xf32> {
  %y = nn.concat %a {axis = 2 : i64} : (tensor<1x2xf32>) -> tensor<1x2xf32>
  func.return %y : tensor<1x2xf32>
}

// CHECK: nn.concat: axis 2 is out of range for rank 2

// -----

func.func @concat_result(%a: tensor<1x2xf32>, %b: tensor<1x3xf32>) -> tensor<1x6xf32> {
  %y = nn.concat %a, %b {axis = 1 : i64} : (tensor<1x2xf32>, tensor<1x3xf32>) -> tensor<1x6xf32>
  func.return %y : tensor<1x6xf32>
}

// CHECK: nn.concat: result shape is [1, 6] but the operands give [1, 5]

// -----

func.func @gemm_inner(%a: tensor<2x3xf32>, %b: tensor<4x5xf32>) -> tensor<2x5xf32> {
  %y = nn.gemm %a, %b {alpha = 1.0 : f32, beta = 1.0 : f32, trans_a = 0 : i64, trans_b = 0 : i64} : (tensor<2x3xf32>, tensor<4x5xf32>) -> tensor<2x5xf32>
  func.return %y : tensor<2x5xf32>
}

// CHECK: nn.gemm: inner dimensions differ: A gives K=3, B gives K=4

// -----

func.func @gemm_c(%a: tensor<2x3xf32>, %b: tensor<3x5xf32>, %c: tensor<4xf32>) -> tensor<2x5xf32> {
  %y = nn.gemm %a, %b, %c {alpha = 1.0 : f32, beta = 1.0 : f32, trans_a = 0 : i64, trans_b = 0 : i64} : (tensor<2x3xf32>, tensor<3x5xf32>, tensor<4xf32>) -> tensor<2x5xf32>
  func.return %y : tensor<2x5xf32>
}

// CHECK: nn.gemm: C of shape [4] does not broadcast to [2, 5]

// -----

func.func @gemm_rank(%a: tensor<1x2x3xf32>, %b: tensor<3x5xf32>) -> tensor<2x5xf32> {
  %y = nn.gemm %a, %b {alpha = 1.0 : f32, beta = 1.0 : f32, trans_a = 0 : i64, trans_b = 0 : i64} : (tensor<1x2x3xf32>, tensor<3x5xf32>) -> tensor<2x5xf32>
  func.return %y : tensor<2x5xf32>
}

// CHECK: nn.gemm: A must have rank 2, got shape [1, 2, 3]

// -----

func.func @matmul_inner(%a: tensor<2x3xf32>, %b: tensor<4x5xf32>) -> tensor<2x5xf32> {
  %y = nn.matmul %a, %b : (tensor<2x3xf32>, tensor<4x5xf32>) -> tensor<2x5xf32>
  func.return %y : tensor<2x5xf32>
}

// CHECK: nn.matmul: inner dimensions differ: lhs gives K=3, rhs gives K=4

// -----

func.func @batch_norm_params(%x: tensor<1x4x2x2xf32>, %p: tensor<4xf32>, %q: tensor<3xf32>) -> tensor<1x4x2x2xf32> {
  %y = nn.batch_norm %x, %p, %p, %q, %p {epsilon = 1.0e-05 : f32} : (tensor<1x4x2x2xf32>, tensor<4xf32>, tensor<4xf32>, tensor<3xf32>, tensor<4xf32>) -> tensor<1x4x2x2xf32>
  func.return %y : tensor<1x4x2x2xf32>
}

// CHECK: nn.batch_norm: mean shape must be [4], got [3]

// -----

func.func @max_pool_pads(%x: tensor<1x4x8x8xf32>) -> tensor<1x4x5x5xf32> {
  %y = nn.max_pool %x {kernel_shape = array<i64: 2, 2>, strides = array<i64: 2, 2>, pads = array<i64: 2, 0, 0, 0>, dilations = array<i64: 1, 1>, ceil_mode = 0 : i64} : tensor<1x4x8x8xf32> -> tensor<1x4x5x5xf32>
  func.return %y : tensor<1x4x5x5xf32>
}

// CHECK: nn.max_pool: pads [2, 0, 0, 0] must be smaller than the kernel [2, 2]

// -----

func.func @average_pool_result(%x: tensor<1x4x8x8xf32>) -> tensor<1x4x4x4xf32> {
  %y = nn.average_pool %x {kernel_shape = array<i64: 3, 3>, strides = array<i64: 2, 2>, pads = array<i64: 1, 1, 1, 1>, count_include_pad = 0 : i64, ceil_mode = 1 : i64} : tensor<1x4x8x8xf32> -> tensor<1x4x4x4xf32>
  func.return %y : tensor<1x4x4x4xf32>
}

// CHECK: nn.average_pool: result shape is [1, 4, 4, 4] but the operands give [1, 4, 5, 5]

// -----

func.func @max_pool_kernel(%x: tensor<1x4x8x8xf32>) -> tensor<1x4x4x4xf32> {
  %y = nn.max_pool %x {kernel_shape = array<i64: 2>, strides = array<i64: 2, 2>, pads = array<i64: 0, 0, 0, 0>, dilations = array<i64: 1, 1>, ceil_mode = 0 : i64} : tensor<1x4x8x8xf32> -> tensor<1x4x4x4xf32>
  func.return %y : tensor<1x4x4x4xf32>
}

// CHECK: nn.max_pool: 'kernel_shape' needs 2 values, got [2]

// -----

func.func @global_pool_rank(%x: tensor<4x8xf32>) -> tensor<4x8xf32> {
  %y = nn.global_average_pool %x : tensor<4x8xf32> -> tensor<4x8xf32>
  func.return %y : tensor<4x8xf32>
}

// CHECK: nn.global_average_pool: input must have rank >= 3, got shape [4, 8]

// -----

func.func @constant_type() -> tensor<3xf32> {
  %c = "nn.constant"() <{value = dense<1.0> : tensor<2xf32>}> : () -> tensor<3xf32>
  func.return %c : tensor<3xf32>
}

// CHECK: nn.constant: value type tensor<2xf32> differs from result type tensor<3xf32>

// -----

func.func @constant_int() -> tensor<2xi32> {
  %c = nn.constant dense<1> : tensor<2xi32>
  func.return %c : tensor<2xi32>
}

// CHECK: result 'result' at position 0 does not verify:
// CHECK-NEXT: i32 should be of base attribute f32

// -----

func.func @clip_bound_twice(%x: tensor<4xf32>, %lo: tensor<f32>) -> tensor<4xf32> {
  %y = nn.clip %x min(%lo : tensor<f32>) {min = 0.0 : f32} : tensor<4xf32> -> tensor<4xf32>
  func.return %y : tensor<4xf32>
}

// CHECK: nn.clip: min is given both as an attribute and as an operand

// -----

func.func @clip_bound_not_scalar(%x: tensor<4xf32>, %hi: tensor<2xf32>) -> tensor<4xf32> {
  %y = nn.clip %x max(%hi : tensor<2xf32>) : tensor<4xf32> -> tensor<4xf32>
  func.return %y : tensor<4xf32>
}

// CHECK: nn.clip: max must be a scalar, got shape [2]

// -----

func.func @resize_fraction(%x: tensor<1x2x4x4xf32>) -> tensor<1x2x6x8xf32> {
  %y = nn.resize %x {mode = "nearest", coordinate_transformation_mode = "asymmetric", nearest_mode = "floor"} : tensor<1x2x4x4xf32> -> tensor<1x2x6x8xf32>
  func.return %y : tensor<1x2x6x8xf32>
}

// CHECK: nn.resize: [1, 2, 4, 4] -> [1, 2, 6, 8] is not an upsampling by integer factors

// -----

func.func @resize_channels(%x: tensor<1x2x4x4xf32>) -> tensor<1x4x8x8xf32> {
  %y = nn.resize %x {mode = "nearest", coordinate_transformation_mode = "asymmetric", nearest_mode = "floor"} : tensor<1x2x4x4xf32> -> tensor<1x4x8x8xf32>
  func.return %y : tensor<1x4x8x8xf32>
}

// CHECK: nn.resize: only H and W are resized, but [1, 2, 4, 4] becomes [1, 4, 8, 8]

// -----

func.func @resize_linear_by_4(%x: tensor<1x2x4x4xf32>) -> tensor<1x2x16x16xf32> {
  %y = nn.resize %x {mode = "linear", coordinate_transformation_mode = "half_pixel"} : tensor<1x2x4x4xf32> -> tensor<1x2x16x16xf32>
  func.return %y : tensor<1x2x16x16xf32>
}

// CHECK: nn.resize: linear resizing supports factors 1 and 2, got [4, 4]

// -----

func.func @resize_nearest_without_rounding(%x: tensor<1x2x4x4xf32>) -> tensor<1x2x8x8xf32> {
  %y = nn.resize %x {mode = "nearest", coordinate_transformation_mode = "half_pixel"} : tensor<1x2x4x4xf32> -> tensor<1x2x8x8xf32>
  func.return %y : tensor<1x2x8x8xf32>
}

// CHECK: nn.resize: nearest_mode must be one of round_prefer_floor, round_prefer_ceil, floor, ceil, got none

// -----

func.func @resize_cubic(%x: tensor<1x2x4x4xf32>) -> tensor<1x2x8x8xf32> {
  %y = nn.resize %x {mode = "cubic", coordinate_transformation_mode = "half_pixel"} : tensor<1x2x4x4xf32> -> tensor<1x2x8x8xf32>
  func.return %y : tensor<1x2x8x8xf32>
}

// CHECK: nn.resize: mode must be one of nearest, linear, got 'cubic'

// -----

func.func @resize_linear_asymmetric(%x: tensor<1x2x4x4xf32>) -> tensor<1x2x8x8xf32> {
  %y = nn.resize %x {mode = "linear", coordinate_transformation_mode = "asymmetric"} : tensor<1x2x4x4xf32> -> tensor<1x2x8x8xf32>
  func.return %y : tensor<1x2x8x8xf32>
}

// CHECK: nn.resize: linear coordinate_transformation_mode must be one of half_pixel, align_corners, got 'asymmetric'

// -----

func.func @conv_transpose_result(%x: tensor<1x4x5x5xf32>, %w: tensor<4x3x2x2xf32>) -> tensor<1x3x11x11xf32> {
  %y = nn.conv_transpose2d %x, %w {strides = array<i64: 2, 2>, pads = array<i64: 0, 0, 0, 0>, dilations = array<i64: 1, 1>, output_padding = array<i64: 0, 0>, group = 1 : i64} : (tensor<1x4x5x5xf32>, tensor<4x3x2x2xf32>) -> tensor<1x3x11x11xf32>
  func.return %y : tensor<1x3x11x11xf32>
}

// CHECK: nn.conv_transpose2d: result shape is [1, 3, 11, 11] but the operands give [1, 3, 10, 10]

// -----

func.func @conv_transpose_output_padding(%x: tensor<1x4x5x5xf32>, %w: tensor<4x3x2x2xf32>) -> tensor<1x3x12x12xf32> {
  %y = nn.conv_transpose2d %x, %w {strides = array<i64: 2, 2>, pads = array<i64: 0, 0, 0, 0>, dilations = array<i64: 1, 1>, output_padding = array<i64: 2, 2>, group = 1 : i64} : (tensor<1x4x5x5xf32>, tensor<4x3x2x2xf32>) -> tensor<1x3x12x12xf32>
  func.return %y : tensor<1x3x12x12xf32>
}

// CHECK: nn.conv_transpose2d: output_padding [2, 2] must be below the stride or the dilation

// -----

func.func @conv_transpose_channels(%x: tensor<1x4x5x5xf32>, %w: tensor<2x3x2x2xf32>) -> tensor<1x3x10x10xf32> {
  %y = nn.conv_transpose2d %x, %w {strides = array<i64: 2, 2>, pads = array<i64: 0, 0, 0, 0>, dilations = array<i64: 1, 1>, output_padding = array<i64: 0, 0>, group = 1 : i64} : (tensor<1x4x5x5xf32>, tensor<2x3x2x2xf32>) -> tensor<1x3x10x10xf32>
  func.return %y : tensor<1x3x10x10xf32>
}

// CHECK: nn.conv_transpose2d: weight has 2 input channels, input has 4

// -----

func.func @conv_transpose_bias(%x: tensor<1x4x5x5xf32>, %w: tensor<4x1x2x2xf32>, %b: tensor<1xf32>) -> tensor<1x2x10x10xf32> {
  %y = nn.conv_transpose2d %x, %w, %b {strides = array<i64: 2, 2>, pads = array<i64: 0, 0, 0, 0>, dilations = array<i64: 1, 1>, output_padding = array<i64: 0, 0>, group = 2 : i64} : (tensor<1x4x5x5xf32>, tensor<4x1x2x2xf32>, tensor<1xf32>) -> tensor<1x2x10x10xf32>
  func.return %y : tensor<1x2x10x10xf32>
}

// CHECK: nn.conv_transpose2d: bias shape must be [2], got [1]
