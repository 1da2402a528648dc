"""The native constraints and rewrites the `nn -> fixed` patterns call by name.

The pattern files say which integer ops replace a float op; these functions compute the
numbers they carry, from the calibrated scales, with `xnpu.semantics.fixed_point` (rule
numbers of docs/fixed-point.md in the docstrings). Each takes the `PatternContext` first,
then the PDL values of the call: an `SSAValue` for `!pdl.value`, an `Operation` for
`!pdl.operation`, an `Attribute` for `!pdl.attribute`.
"""

from __future__ import annotations

import math

import numpy as np
from xdsl.dialects.builtin import DenseArrayBase, FloatAttr, StringAttr, i8
from xdsl.ir import Attribute, Operation, SSAValue

import xnpu.lowering.common_natives  # noqa: F401  (the shared natives: is_i8, depthwise_1x1, ...)
from xnpu.dialects import fixed, nn
from xnpu.dialects.nn import i64_array, i64_attr, ints, shape_of
from xnpu.dialects.traits import ClampsCodes
from xnpu.lowering.nn_to_fixed.scales import DATA_BITS, scale_of
from xnpu.pdl.patterns import PatternContext, native_constraint, native_rewrite
from xnpu.semantics import fixed_point, float_ops, windows

# --------------------------------------------------------------------------------------
# Constraints
# --------------------------------------------------------------------------------------


@native_constraint()
def add_variant_is(ctx: PatternContext, variant: Attribute) -> bool:
    """The pass's `variant` option (seed 000's requantization of an add) is this one."""
    assert isinstance(variant, StringAttr)
    return ctx.options["variant"] == variant.data


@native_constraint()
def is_clamp(ctx: PatternContext, op: Operation) -> bool:
    """relu, or clip (relu6 and hard_tanh are clips) with constant bounds: a clamp of the codes (R8)."""
    return op.has_trait(ClampsCodes) and not (isinstance(op, nn.ClipOp) and op.has_operand_bounds)


@native_constraint()
def is_table_function(ctx: PatternContext, op: Operation) -> bool:
    """A pointwise float function (nn.PointwiseOp) other than a clamp: int8 inputs have 256
    values, so its results are a table (R15)."""
    return isinstance(op, nn.PointwiseOp) and not op.has_trait(ClampsCodes)


# --------------------------------------------------------------------------------------
# Rewrites: scales and types
# --------------------------------------------------------------------------------------


@native_rewrite()
def int8_codes(ctx: PatternContext, value: SSAValue):
    """(scale, type) of `value` as int8 codes: its calibrated scale, as the f64 `scale` of
    quantize and dequantize, and the i8 tensor type of its shape."""
    return fixed.scale_attr(scale_of(value)), int8_type(ctx, value)


@native_rewrite()
def int8_type(ctx: PatternContext, value: SSAValue):
    """The i8 tensor type of `value`'s shape."""
    return fixed.int_tensor(DATA_BITS, shape_of(value))


@native_rewrite()
def constant_codes(ctx: PatternContext, constant: Operation, scale: Attribute, codes_type: Attribute):
    """R4 at compile time: the codes of an nn.constant quantized at `scale`."""
    assert isinstance(constant, nn.ConstantOp) and isinstance(scale, FloatAttr)
    codes = fixed_point.quantize(constant.to_numpy(), scale.value.data, fixed.width_of(codes_type))
    return fixed.dense_from_ints(codes, fixed.width_of(codes_type))


# --------------------------------------------------------------------------------------
# Rewrites: element-wise add, sub and mul (seed 000)
# --------------------------------------------------------------------------------------


def _add_plan(op: Operation) -> fixed_point.AddPlan:
    """R11 of an nn.add or nn.sub, with one rescale of the int24 sum to int8 (direct); the
    two_stage variant refines that rescale afterwards (`two_stage_add`)."""
    assert isinstance(op, (nn.AddOp, nn.SubOp))
    return fixed_point.add_plan(scale_of(op.lhs), scale_of(op.rhs), scale_of(op.result), "direct",
                                subtract=isinstance(op, nn.SubOp))


def _rescale(multiplier: int, shift: int) -> tuple[Attribute, Attribute]:
    return i64_array([multiplier]), i64_array([shift])


@native_rewrite()
def add_inputs(ctx: PatternContext, op: Operation):
    """R11: (lhs_multiplier, lhs_shift, rhs_multiplier, rhs_shift) into the common scale
    s_add = max(s_l, s_r) / 2^15, that scale, and the int24 type of the sum."""
    plan = _add_plan(op)
    return (i64_attr(plan.lhs_multiplier), i64_attr(plan.lhs_shift), i64_attr(plan.rhs_multiplier),
            i64_attr(plan.rhs_shift), fixed.scale_attr(plan.base_scale), fixed.int_tensor(24, shape_of(op.results[0])))


@native_rewrite()
def add_rescale(ctx: PatternContext, op: Operation):
    """R11 direct: (multiplier, shift) of the rescale of the int24 sum to int8, r_res."""
    plan = _add_plan(op)
    return _rescale(plan.multiplier, plan.shift)


@native_constraint()
def int24_sum_to_int8(ctx: PatternContext, rescale: Operation) -> bool:
    """A rescale of an add's or sub's int24 sum straight to int8 (one multiplier)."""
    assert isinstance(rescale, fixed.RescaleOp)
    return (isinstance(rescale.input.owner, fixed.WideningAddOp) and fixed.width_of(rescale.input) == 24
            and fixed.width_of(rescale.result) == 8 and len(ints(rescale.multiplier)) == 1)


@native_rewrite()
def two_stage(ctx: PatternContext, rescale: Operation):
    """R11 two_stage from the sum's scale and the output's: the shift rs1 to int16, its scale
    s_add * 2^rs1 and type, and (multiplier, shift) of r_res * 2^rs1 to int8."""
    assert isinstance(rescale, fixed.RescaleOp)
    base, s_out = (float(fixed.scale_values(op.properties["scale"])[0]) for op in (rescale.input.owner, rescale))
    pre_shift, multiplier, shift = fixed_point.two_stage_requantization(base, s_out)
    return (i64_attr(pre_shift), fixed.scale_attr(base * 2**pre_shift), fixed.int_tensor(16, shape_of(rescale.input)),
            *_rescale(multiplier, shift))


@native_rewrite()
def mul_product(ctx: PatternContext, op: Operation):
    """R12: the exact int8 x int8 product's scale s_l * s_r and its int16 type (broadcast shape)."""
    assert isinstance(op, nn.MulOp)
    return fixed.scale_attr(scale_of(op.lhs) * scale_of(op.rhs)), fixed.int_tensor(16, shape_of(op.result))


@native_rewrite()
def mul_rescale(ctx: PatternContext, op: Operation):
    """R12: (multiplier, shift) of r = s_l * s_r / s_out."""
    assert isinstance(op, nn.MulOp)
    plan = fixed_point.mul_plan(scale_of(op.lhs), scale_of(op.rhs), scale_of(op.result))
    return _rescale(plan.multiplier, plan.shift)


# --------------------------------------------------------------------------------------
# Rewrites: clamps, tables, pools
# --------------------------------------------------------------------------------------


def clamp_codes(low: float, high: float, scale: float) -> tuple[int, int]:
    """R8: float bounds as codes at `scale`; an open bound is the int8 limit."""
    limit = fixed_point.qmax(DATA_BITS)
    lo = -limit if math.isinf(low) else int(np.clip(fixed_point.quantize(low, scale, 32), -limit, limit))
    hi = limit if math.isinf(high) else int(np.clip(fixed_point.quantize(high, scale, 32), -limit, limit))
    return lo, hi


@native_rewrite()
def clamp_bounds(ctx: PatternContext, op: Operation):
    """R8: (min, max) codes of a relu ([0, inf)) or clip at the op's output scale."""
    low, high = (0.0, math.inf) if isinstance(op, nn.ReluOp) else op.bounds()  # type: ignore[attr-defined]
    lo, hi = clamp_codes(low, high, scale_of(op.results[0]))
    return i64_attr(lo), i64_attr(hi)


@native_rewrite()
def table_entries(ctx: PatternContext, op: Operation):
    """R15: entry i = quantize(f(dequantize(i - 128, s_in)), s_out) for the op's function f."""
    assert isinstance(op, nn.PointwiseOp)
    table = fixed_point.build_table(lambda v: op.function(np.asarray(v, np.float32)), scale_of(op.operands[0]),
                                    scale_of(op.results[0]), DATA_BITS)
    return DenseArrayBase.from_list(i8, [int(v) for v in table])


@native_rewrite()
def average_pool_rescale(ctx: PatternContext, op: Operation):
    """R14: (multipliers, shifts) of s_in / (count * s_out), one pair per output position
    (count = the valid taps of its window), or one pair when every window counts the same."""
    assert isinstance(op, nn.AveragePoolOp)
    kernel, strides, pads = ints(op.kernel_shape), ints(op.strides), ints(op.pads)
    counts = float_ops.average_pool_counts(shape_of(op.input)[2:], kernel, strides, pads, shape_of(op.result)[2:],
                                           bool(op.count_include_pad.value.data))
    multiplier, shift = fixed_point.multiplier_from_scale(scale_of(op.input) / (counts.astype(np.float64) * scale_of(op.result)))
    if (multiplier == multiplier.flat[0]).all() and (shift == shift.flat[0]).all():
        multiplier, shift = multiplier.flat[:1], shift.flat[:1]
    return i64_array(multiplier.reshape(-1)), i64_array(shift.reshape(-1))


@native_rewrite()
def global_average_pool_sum(ctx: PatternContext, op: Operation):
    """R14: the int32 window sum's scale (the input's) and type (N x C x 1 x 1)."""
    return fixed.scale_attr(scale_of(op.operands[0])), fixed.int_tensor(32, shape_of(op.results[0]))


@native_rewrite()
def global_average_pool_rescale(ctx: PatternContext, op: Operation):
    """R14: (multiplier, shift) of s_in / (H * W * s_out)."""
    area = math.prod(shape_of(op.operands[0])[2:])
    return _rescale(*fixed_point.multiplier_from_scale(scale_of(op.operands[0]) / (area * scale_of(op.results[0]))))


# --------------------------------------------------------------------------------------
# Rewrites: resize
# --------------------------------------------------------------------------------------


def _resize_axes(op: Operation):
    """(in, out) sizes of H and W and the coordinate mode of an nn.resize."""
    assert isinstance(op, nn.ResizeOp)
    (h, w), (oh, ow) = shape_of(op.input)[2:], shape_of(op.result)[2:]
    return ((h, oh), (w, ow)), op.coordinate_transformation_mode.data


@native_rewrite()
def nearest_source_maps(ctx: PatternContext, op: Operation):
    """R16: the source row of every output row and the source column of every output column,
    as the float level defines them (float_ops.nearest_source_indices)."""
    axes, coordinates = _resize_axes(op)
    nearest = op.nearest_mode.data  # type: ignore[attr-defined]
    return tuple(i64_array(float_ops.nearest_source_indices(size, out, coordinates, nearest)) for size, out in axes)


@native_rewrite()
def linear_resize_taps(ctx: PatternContext, op: Operation):
    """R17: (rows, row_weights, cols, col_weights) of the exact integer taps, the scale of the
    int32 sums (s_in / (Dy * Dx)) and their type."""
    axes, coordinates = _resize_axes(op)
    taps = [windows.linear_resize_taps(size, out, coordinates) for size, out in axes]
    (rows, row_weights, dy), (cols, col_weights, dx) = taps
    arrays = (i64_array(a.reshape(-1)) for a in (rows, row_weights, cols, col_weights))
    return (*arrays, fixed.scale_attr(scale_of(op.operands[0]) / (dy * dx)), fixed.int_tensor(32, shape_of(op.results[0])))


@native_rewrite()
def linear_resize_rescale(ctx: PatternContext, op: Operation):
    """R17: (multiplier, shift) of s_in / (Dy * Dx * s_out)."""
    axes, coordinates = _resize_axes(op)
    area = math.prod(windows.linear_resize_taps(size, out, coordinates)[2] for size, out in axes)
    return _rescale(*fixed_point.multiplier_from_scale(scale_of(op.operands[0]) / (area * scale_of(op.results[0]))))
