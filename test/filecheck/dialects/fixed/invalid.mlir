// RUN: xnpu-opt %s --split-input-file --verify-diagnostics | filecheck %s
// Each fixed verifier rejects its mistake with one clear message.

func.func @bad_multiplier(%a: tensor<4xi32>) {
  %r = fixed.rescale %a {multiplier = array<i64: 100>, shift = array<i64: 3>} : tensor<4xi32> -> tensor<4xi8>
  func.return
}
// CHECK: fixed.rescale: multiplier 100 must be 0 or in [16384, 32767] (R5)

// -----

func.func @bad_shift(%a: tensor<4xi32>) {
  %r = fixed.rescale %a {multiplier = array<i64: 16384>, shift = array<i64: -17>} : tensor<4xi32> -> tensor<4xi8>
  func.return
}
// CHECK: fixed.rescale: shift -17 must be in [-16, 62] (R6)

// -----

func.func @per_channel_without_axis(%a: tensor<1x2xi32>) {
  %r = fixed.rescale %a {multiplier = array<i64: 16384, 16384>, shift = array<i64: 3, 3>} : tensor<1x2xi32> -> tensor<1x2xi8>
  func.return
}
// CHECK: fixed.rescale: 2 multiplier values need an 'axis' naming the channel dimension

// -----

func.func @per_channel_count(%a: tensor<1x2xi32>) {
  %r = fixed.rescale %a {multiplier = array<i64: 16384, 16384, 16384>, shift = array<i64: 3, 3, 3>, axis = 1 : i64} : tensor<1x2xi32> -> tensor<1x2xi8>
  func.return
}
// CHECK: fixed.rescale: 3 multiplier values but dimension 1 has 2 channels

// -----

func.func @pair_count(%a: tensor<4xi32>) {
  %r = fixed.rescale %a {multiplier = array<i64: 16384>, shift = array<i64: 3, 4>} : tensor<4xi32> -> tensor<4xi8>
  func.return
}
// CHECK: fixed.rescale: 1 multipliers but 2 shifts; give one pair or one per channel

// -----

func.func @odd_width(%a: tensor<4xi32>) {
  %r = fixed.rescale %a {multiplier = array<i64: 16384>, shift = array<i64: 3>} : tensor<4xi32> -> tensor<4xi12>
  func.return
}
// CHECK: fixed.rescale: result element type is i12; expected i8, i16, i24, i32

// -----

func.func @bad_quantize_scale(%f: tensor<4xf32>) {
  %r = fixed.quantize %f {scale = -0.5 : f64} : tensor<4xf32> -> tensor<4xi8>
  func.return
}
// CHECK: fixed.quantize: scale values must be positive and finite, got [-0.5]

// -----

func.func @shift_range(%a: tensor<4xi32>) {
  %r = fixed.shift %a {shift = 32 : i64, rounding = 0 : i64} : tensor<4xi32> -> tensor<4xi16>
  func.return
}
// CHECK: fixed.shift: shift 32 must be in [-31, 31] (R7)

// -----

func.func @clamp_bounds(%a: tensor<4xi8>) {
  %r = fixed.clamp %a {min = -128 : i64, max = 127 : i64} : tensor<4xi8> -> tensor<4xi8>
  func.return
}
// CHECK: fixed.clamp: bounds [-128, 127] exceed the i8 range [-127, 127] (R2)

// -----

func.func @add_multiplier(%a: tensor<4xi8>, %b: tensor<4xi8>) {
  %r = fixed.add %a, %b {lhs_multiplier = 16384 : i64, lhs_shift = 0 : i64, rhs_multiplier = 40000 : i64, rhs_shift = 0 : i64} : (tensor<4xi8>, tensor<4xi8>) -> tensor<4xi24>
  func.return
}
// CHECK: fixed.add: rhs multiplier 40000 must be 0 or in [16384, 32767] (R5)

// -----

func.func @add_broadcast(%a: tensor<4xi8>, %b: tensor<3xi8>) {
  %r = fixed.add %a, %b {lhs_multiplier = 16384 : i64, lhs_shift = 0 : i64, rhs_multiplier = 16384 : i64, rhs_shift = 0 : i64} : (tensor<4xi8>, tensor<3xi8>) -> tensor<4xi24>
  func.return
}
// CHECK: fixed.add: shapes [4] and [3] do not broadcast

// -----

func.func @narrow_product(%a: tensor<4xi8>) {
  %r = fixed.mul %a, %a : (tensor<4xi8>, tensor<4xi8>) -> tensor<4xi8>
  func.return
}
// CHECK: fixed.mul: an i8 x i8 product needs an i16 result, got i8 (R12)

// -----

func.func @conv_input_width(%x: tensor<1x4x4x4xi16>, %w: tensor<2x4x1x1xi8>) {
  %r = fixed.conv2d %x, %w {strides = array<i64: 1, 1>, pads = array<i64: 0, 0, 0, 0>, dilations = array<i64: 1, 1>, group = 1 : i64} : (tensor<1x4x4x4xi16>, tensor<2x4x1x1xi8>) -> tensor<1x2x4x4xi32>
  func.return
}
// CHECK: fixed.conv2d: input element type is i16; expected i8

// -----

func.func @conv_bias_width(%x: tensor<1x4x4x4xi8>, %w: tensor<2x4x1x1xi8>, %b: tensor<2xi8>) {
  %r = fixed.conv2d %x, %w, %b {strides = array<i64: 1, 1>, pads = array<i64: 0, 0, 0, 0>, dilations = array<i64: 1, 1>, group = 1 : i64} : (tensor<1x4x4x4xi8>, tensor<2x4x1x1xi8>, tensor<2xi8>) -> tensor<1x2x4x4xi32>
  func.return
}
// CHECK: fixed.conv2d: bias element type is i8; expected i32

// -----

func.func @conv_group(%x: tensor<1x4x4x4xi8>, %w: tensor<2x4x1x1xi8>) {
  %r = fixed.conv2d %x, %w {strides = array<i64: 1, 1>, pads = array<i64: 0, 0, 0, 0>, dilations = array<i64: 1, 1>, group = 3 : i64} : (tensor<1x4x4x4xi8>, tensor<2x4x1x1xi8>) -> tensor<1x2x4x4xi32>
  func.return
}
// CHECK: fixed.conv2d: group 3 must divide input channels 4 and output channels 2

// -----

func.func @gemm_reduction(%a: tensor<1x140000xi8>, %b: tensor<140000x2xi8>) {
  %r = fixed.gemm %a, %b {trans_b = 0 : i64} : (tensor<1x140000xi8>, tensor<140000x2xi8>) -> tensor<1x2xi32>
  func.return
}
// CHECK: fixed.gemm: reduction length 140000 exceeds 131071; the int32 accumulator could overflow (R13)

// -----

func.func @avg_pool_pairs(%x: tensor<1x1x4x4xi8>) {
  %r = fixed.avg_pool %x {kernel_shape = array<i64: 2, 2>, strides = array<i64: 2, 2>, pads = array<i64: 0, 0, 0, 0>, ceil_mode = 0 : i64, multiplier = array<i64: 16384, 16384>, shift = array<i64: 16, 16>} : tensor<1x1x4x4xi8> -> tensor<1x1x2x2xi8>
  func.return
}
// CHECK: fixed.avg_pool: needs one (multiplier, shift) pair or 4 (one per output position), got 2 multipliers and 2 shifts

// -----

func.func @max_pool_width(%x: tensor<1x1x4x4xi8>) {
  %r = fixed.max_pool %x {kernel_shape = array<i64: 2, 2>, strides = array<i64: 2, 2>, pads = array<i64: 0, 0, 0, 0>, ceil_mode = 0 : i64, dilations = array<i64: 1, 1>} : tensor<1x1x4x4xi8> -> tensor<1x1x2x2xi16>
  func.return
}
// CHECK: fixed.max_pool: result is i16 but the input is i8

// -----

func.func @table_size(%x: tensor<4xi8>) {
  %r = fixed.table %x {table = array<i8: 1, 2, 3>} : tensor<4xi8> -> tensor<4xi8>
  func.return
}
// CHECK: fixed.table: the table needs 256 entries, got 3

// -----

func.func @concat_widths(%x: tensor<1x2xi8>, %y: tensor<1x2xi16>) {
  %r = fixed.concat %x, %y {axis = 1 : i64} : (tensor<1x2xi8>, tensor<1x2xi16>) -> tensor<1x4xi8>
  func.return
}
// CHECK: fixed.concat: input 1 is i16 but the input is i8

// -----

func.func @reshape_count(%x: tensor<1x6xi8>) {
  %r = fixed.reshape %x : tensor<1x6xi8> -> tensor<5xi8>
  func.return
}
// CHECK: fixed.reshape: cannot reshape [1, 6] (6 elements) to [5] (5 elements)

// -----

func.func @transposed_conv_bias(%x: tensor<1x2x2x2xi8>, %w: tensor<2x3x2x2xi8>, %b: tensor<2xi32>) {
  %r = fixed.conv_transpose2d %x, %w, %b {strides = array<i64: 2, 2>, pads = array<i64: 0, 0, 0, 0>, dilations = array<i64: 1, 1>, output_padding = array<i64: 0, 0>, group = 1 : i64} : (tensor<1x2x2x2xi8>, tensor<2x3x2x2xi8>, tensor<2xi32>) -> tensor<1x3x4x4xi32>
  func.return
}
// CHECK: fixed.conv_transpose2d: bias shape must be [3], got [2]

// -----

func.func @transposed_conv_width(%x: tensor<1x2x2x2xi8>, %w: tensor<2x3x2x2xi8>) {
  %r = fixed.conv_transpose2d %x, %w {strides = array<i64: 2, 2>, pads = array<i64: 0, 0, 0, 0>, dilations = array<i64: 1, 1>, output_padding = array<i64: 0, 0>, group = 1 : i64} : (tensor<1x2x2x2xi8>, tensor<2x3x2x2xi8>) -> tensor<1x3x4x4xi16>
  func.return
}
// CHECK: fixed.conv_transpose2d: result element type is i16; expected i32

// -----

func.func @nearest_source_outside(%x: tensor<1x1x2x2xi8>) {
  %r = fixed.resize %x {rows = array<i64: 0, 0, 1, 2>, cols = array<i64: 0, 0, 1, 1>} : tensor<1x1x2x2xi8> -> tensor<1x1x4x4xi8>
  func.return
}
// CHECK: fixed.resize: 'rows' holds positions outside [0, 2)

// -----

func.func @nearest_map_length(%x: tensor<1x1x2x2xi8>) {
  %r = fixed.resize %x {rows = array<i64: 0, 1>, cols = array<i64: 0, 0, 1, 1>} : tensor<1x1x2x2xi8> -> tensor<1x1x4x4xi8>
  func.return
}
// CHECK: fixed.resize: 'rows' needs 4 entries, got 2

// -----

func.func @linear_weights_differ(%x: tensor<1x1x2x2xi8>) {
  %r = fixed.resize_linear %x {rows = array<i64: 0, 1, 0, 1, 0, 1, 1, 1>, row_weights = array<i64: 4, 0, 3, 1, 1, 3, 2, 0>, cols = array<i64: 0, 1, 0, 1, 0, 1, 1, 1>, col_weights = array<i64: 4, 0, 3, 1, 1, 3, 4, 0>} : tensor<1x1x2x2xi8> -> tensor<1x1x4x4xi32>
  func.return
}
// CHECK: fixed.resize_linear: every pair of 'row_weights' must sum to one denominator >= 1 (R17)

// -----

func.func @linear_denominator_overflow(%x: tensor<1x1x1x1xi8>) {
  %r = fixed.resize_linear %x {rows = array<i64: 0, 0>, row_weights = array<i64: 5000, 0>, cols = array<i64: 0, 0>, col_weights = array<i64: 4000, 0>} : tensor<1x1x1x1xi8> -> tensor<1x1x1x1xi32>
  func.return
}
// CHECK: fixed.resize_linear: denominators 5000 x 4000 exceed 16777215; the int32 sum could overflow (R17)
