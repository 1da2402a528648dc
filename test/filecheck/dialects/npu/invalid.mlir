// RUN: xnpu-opt %s --split-input-file --verify-diagnostics | filecheck %s
// Each npu verifier rejects its mistake with one clear message; with `npu.target` set, the
// target's limits (target/legality.py) are checked too.

func.func @epilogue_twice(%x: tensor<1x2x2x2xi8>) {
  %t = npu.pool "global_avg" %x {multiplier = array<i64: 16384>, shift = array<i64: 16>, clamp = array<i64: 0, 5>, table = array<i8: 1>} : tensor<1x2x2x2xi8> -> tensor<1x2x1x1xi8>
  func.return
}
// CHECK: npu.pool: an epilogue is a clamp or a table, not both

// -----

func.func @pairs(%x: tensor<1x2x4x4xi8>) {
  %w = fixed.constant dense<1> : tensor<3x2x1x1xi8>
  %y = npu.conv %x, %w {strides = array<i64: 1, 1>, pads = array<i64: 0, 0, 0, 0>, dilations = array<i64: 1, 1>, group = 1 : i64, multiplier = array<i64: 16384, 16384>, shift = array<i64: 3, 3>} : (tensor<1x2x4x4xi8>, tensor<3x2x1x1xi8>) -> tensor<1x3x4x4xi8>
  func.return
}
// CHECK: npu.conv: needs 1 or 3 (multiplier, shift) pairs, got 2 multipliers and 2 shifts

// -----

func.func @eltwise_broadcast(%a: tensor<1x3x4x4xi8>, %b: tensor<1x3x4x1xi8>) {
  %y = npu.eltwise "mul" %a, %b {multiplier = 16384 : i64, shift = 14 : i64} : (tensor<1x3x4x4xi8>, tensor<1x3x4x1xi8>) -> tensor<1x3x4x4xi8>
  func.return
}
// CHECK: npu.eltwise: the second operand [1, 3, 4, 1] is neither the first's shape [1, 3, 4, 4], one value per channel, nor one value

// -----

func.func @mul_rescales(%a: tensor<1x3x4x4xi8>) {
  %y = npu.eltwise "mul" %a, %a {multiplier = 16384 : i64, shift = 14 : i64, lhs_multiplier = 16384 : i64, lhs_shift = 0 : i64, rhs_multiplier = 16384 : i64, rhs_shift = 0 : i64} : (tensor<1x3x4x4xi8>, tensor<1x3x4x4xi8>) -> tensor<1x3x4x4xi8>
  func.return
}
// CHECK: npu.eltwise: mul takes no input rescales and no pre_shift

// -----

func.func @max_with_rescale(%x: tensor<1x2x4x4xi8>) {
  %y = npu.pool "max" %x {kernel_shape = array<i64: 2, 2>, strides = array<i64: 2, 2>, pads = array<i64: 0, 0, 0, 0>, multiplier = array<i64: 16384>, shift = array<i64: 14>} : tensor<1x2x4x4xi8> -> tensor<1x2x2x2xi8>
  func.return
}
// CHECK: npu.pool: max pooling takes no rescale (no multiplier or shift)

// -----

builtin.module attributes {npu.target = "xnpu_lite"} {
  func.func @lite_has_no_mul(%a: tensor<1x3x4x4xi8>) {
    %y = npu.eltwise "mul" %a, %a {multiplier = 16384 : i64, shift = 14 : i64} : (tensor<1x3x4x4xi8>, tensor<1x3x4x4xi8>) -> tensor<1x3x4x4xi8>
    func.return
  }
}
// CHECK: npu.eltwise: element-wise mul is not supported (supported: add, sub) (target xnpu_lite)

// -----

builtin.module attributes {npu.target = "xnpu_lite"} {
  func.func @lite_has_no_clamp(%a: tensor<1x3x4x4xi8>) {
    %y = npu.clamp %a {min = 0 : i64, max = 6 : i64} : tensor<1x3x4x4xi8> -> tensor<1x3x4x4xi8>
    func.return
  }
}
// CHECK: npu.clamp: the target has no clamp unit (target xnpu_lite)

// -----

builtin.module attributes {npu.target = "xnpu_lite"} {
  func.func @kernel_too_big(%x: tensor<1x2x16x16xi8>) {
    %w = fixed.constant dense<1> : tensor<3x2x9x9xi8>
    %y = npu.conv %x, %w {strides = array<i64: 1, 1>, pads = array<i64: 0, 0, 0, 0>, dilations = array<i64: 1, 1>, group = 1 : i64, multiplier = array<i64: 16384>, shift = array<i64: 20>} : (tensor<1x2x16x16xi8>, tensor<3x2x9x9xi8>) -> tensor<1x3x8x8xi8>
    func.return
  }
}
// CHECK: npu.conv: kernel 9x9 is outside [1, 7] (target xnpu_lite)

// -----

func.func @interleave_phase_count(%x: tensor<1x2x3x4xi8>) {
  %y = npu.interleave %x, %x {factors = array<i64: 2, 2>, offsets = array<i64: 0, 0, 0, 0>} : (tensor<1x2x3x4xi8>, tensor<1x2x3x4xi8>) -> tensor<1x2x6x8xi8>
  func.return
}
// CHECK: npu.interleave: factors 2x2 need 4 phases, got 2

// -----

func.func @interleave_phase_too_small(%x: tensor<1x2x3x4xi8>) {
  %y = npu.interleave %x, %x, %x, %x {factors = array<i64: 2, 2>, offsets = array<i64: 0, 0, 0, 1, 0, 0, 0, 0>} : (tensor<1x2x3x4xi8>, tensor<1x2x3x4xi8>, tensor<1x2x3x4xi8>, tensor<1x2x3x4xi8>) -> tensor<1x2x6x8xi8>
  func.return
}
// CHECK: npu.interleave: phase 1 [1, 2, 3, 4] does not hold rows 0..2 and columns 1..4 of a [1, 2] map

// -----

func.func @pad_mode(%x: tensor<1x2x3x4xi8>) {
  %y = npu.pad "reflect" %x {pads = array<i64: 1, 1, 1, 1>} : tensor<1x2x3x4xi8> -> tensor<1x2x5x6xi8>
  func.return
}
// CHECK: npu.pad: mode must be one of edge, got 'reflect'

// -----

func.func @pad_shape(%x: tensor<1x2x3x4xi8>) {
  %y = npu.pad "edge" %x {pads = array<i64: 1, 1, 1, 1>} : tensor<1x2x3x4xi8> -> tensor<1x2x5x5xi8>
  func.return
}
// CHECK: npu.pad: result shape is [1, 2, 5, 5] but the operands give [1, 2, 5, 6]

// -----

builtin.module attributes {npu.target = "xnpu_default"} {
  func.func @interleave_beyond_the_dma(%x: tensor<1x70000x1x1xi8>) {
    %y = npu.interleave %x, %x {factors = array<i64: 1, 2>, offsets = array<i64: 0, 0, 0, 0>} : (tensor<1x70000x1x1xi8>, tensor<1x70000x1x1xi8>) -> tensor<1x70000x1x2xi8>
    func.return
  }
}
// CHECK: npu.interleave: map 1x2x70000 is outside [1, 65535] (target xnpu_default)
