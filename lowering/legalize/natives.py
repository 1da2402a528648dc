"""The native constraints and rewrites the shipped legalization patterns call by name.

Constraints answer questions PDL cannot ask (does the target run this op, is a scale a
power of two); rewrites compute parameters (biases, identity weights, shapes). Each takes
the `PatternContext` first, then the PDL values of the call. Register new ones the same
way in any module imported before the pass runs (docs/extending.md).
"""

from __future__ import annotations

import math

import numpy as np
from xdsl.dialects.builtin import DenseIntOrFPElementsAttr, IntegerAttr, StringAttr, TensorType
from xdsl.ir import Attribute, Operation, SSAValue

import xnpu.lowering.common_natives  # noqa: F401  (single_use, is_i8)
from xnpu.dialects import fixed
from xnpu.dialects.nn import i64_array, i64_attr, ints, shape_of
from xnpu.dialects.traits import is_native
from xnpu.pdl.patterns import PatternContext, native_constraint, native_rewrite


def _text(attr: Attribute) -> str:
    assert isinstance(attr, StringAttr), f"expected a string attribute, got {attr}"
    return attr.data


def _int(attr: Attribute) -> int:
    assert isinstance(attr, IntegerAttr)
    return attr.value.data


# --------------------------------------------------------------------------------------
# Constraints
# --------------------------------------------------------------------------------------


@native_constraint()
def not_native(ctx: PatternContext, op: Operation) -> bool:
    """The target has no instruction for this op instance: the op's own answer (its UnitForm),
    the one unit selection gives."""
    return not is_native(op, ctx.target)


@native_constraint()
def target_has(ctx: PatternContext, what: Attribute) -> bool:
    """`"fixed.<op>"`: the target runs that op natively; `"depthwise"`: its conv unit does depthwise."""
    name = _text(what)
    if name == "depthwise":
        return ctx.target.conv.depthwise
    capability = fixed.op_capabilities(ctx.target).get(name)
    if capability is None:
        raise AssertionError(f"target_has: unknown capability '{name}'")
    return capability.native


@native_constraint()
def target_lacks(ctx: PatternContext, what: Attribute) -> bool:
    return not target_has(ctx, what)


@native_constraint()
def one_rescale_pair(ctx: PatternContext, multiplier: Attribute) -> bool:
    return len(ints(multiplier)) == 1  # type: ignore[arg-type]


@native_constraint()
def same_sample_shape(ctx: PatternContext, a: SSAValue, b: SSAValue) -> bool:
    """Two operands of one shape, one sample (an NCHW map of batch 1, [1, L, C] tokens, a
    matrix): flattened, each element's product is one depthwise tap."""
    shape = shape_of(a)
    return shape == shape_of(b) and len(shape) >= 1 and shape[0] == 1


@native_constraint()
def channel_broadcast(ctx: PatternContext, x: SSAValue, s: SSAValue) -> bool:
    """x is 1 x C x H x W and s is 1 x C x 1 x 1 (a squeeze-excitation scale)."""
    xs, ss = shape_of(x), shape_of(s)
    return len(xs) == 4 and xs[0] == 1 and ss == (1, xs[1], 1, 1) and xs[2] * xs[3] > 1


def chosen_clamp_method(ctx: PatternContext, clamp: Operation) -> str | None:
    """bias (seed 001 method 2, exact) or saturate (method 1, power-of-two data) for this clamp."""
    method = ctx.options.get("clamp_method", "auto")
    if not ctx.target.conv.depthwise:
        return None  # both methods are identity depthwise convolutions
    if method == "auto":
        return "bias"
    if method == "saturate" and not saturate_applies(ctx, clamp):
        return "bias"
    return method


@native_constraint()
def clamp_method_is(ctx: PatternContext, clamp: Operation, method: Attribute) -> bool:
    return chosen_clamp_method(ctx, clamp) == _text(method)


def pow2_exponent(scale: float) -> int | None:
    """s with scale == 2^-s, or None."""
    mantissa, exponent = math.frexp(scale)
    return 1 - exponent if mantissa == 0.5 else None


def scale_of_value(value: SSAValue) -> float | None:
    owner = value.owner
    attr = owner.properties.get("scale") if isinstance(owner, Operation) else None
    values = fixed.scale_values(attr)
    return None if values is None or values.size != 1 else float(values[0])


@native_constraint()
def scale_is_pow2(ctx: PatternContext, value: SSAValue) -> bool:
    scale = scale_of_value(value)
    return scale is not None and pow2_exponent(scale) is not None


ABSORBING = (fixed.Conv2dOp, fixed.GemmOp, fixed.MulOp, fixed.AddOp, fixed.SubOp, fixed.DequantizeOp)


def _absorbing_rescale(user: Operation) -> fixed.RescaleOp | None:
    uses = list(user.results[0].uses)
    if len(uses) == 1 and isinstance(uses[0].operation, fixed.RescaleOp):
        return uses[0].operation
    return None


def saturate_applies(ctx: PatternContext, clamp: Operation) -> bool:
    """Method 1 fits: hard_tanh [-2^s, 2^s] on data x = q / 2^s (s < width - 1), and every
    user can take its input at scale 2^-(width-1) by a larger shift (nothing is rounded)."""
    assert isinstance(clamp, fixed.ClampOp)
    scale = scale_of_value(clamp.input)
    s = None if scale is None else pow2_exponent(scale)
    low, high = clamp.bounds()
    top = ctx.target.data.width - 1
    if s is None or not 0 <= s < top or low != -(1 << s) or high != (1 << s):
        return False
    if ctx.target.data.saturation_max != (1 << top) - 1 or ctx.target.data.saturation_min != -((1 << top) - 1):
        return False
    for use in clamp.result.uses:
        user = use.operation
        if not isinstance(user, ABSORBING):
            return False
        if isinstance(user, fixed.Conv2dOp) and use.index != 0:
            return False
        if isinstance(user, (fixed.Conv2dOp, fixed.GemmOp, fixed.MulOp)) and _absorbing_rescale(user) is None:
            return False
        if isinstance(user, fixed.GemmOp) and use.index != 0:
            return False
    return True


# --------------------------------------------------------------------------------------
# Rewrites: parameters
# --------------------------------------------------------------------------------------


def _dense(array: np.ndarray, bits: int) -> tuple[DenseIntOrFPElementsAttr, TensorType]:
    attr = fixed.dense_from_ints(array, bits)
    return attr, attr.type


@native_rewrite()
def saturating_clamp_biases(ctx: PatternContext, x: SSAValue, low: Attribute, high: Attribute):
    """Seed 001 method 2: biases b1, b2, b3 of three saturating bias-adds giving clip(q, lo, hi).

    With the unit saturating to [smin, smax]: q + (smax - hi) saturates exactly the values
    above hi; subtracting (smax - hi) + (lo - smin) brings lo to smin, where saturation
    cuts everything below; adding (lo - smin) restores the offset (docs/extending.md).
    """
    lo, hi = _int(low), _int(high)
    smin, smax = ctx.target.data.saturation_min, ctx.target.data.saturation_max
    channels = shape_of(x)[1]
    biases = (smax - hi, -(smax - hi) - (lo - smin), lo - smin)
    attrs = [_dense(np.full(channels, b, dtype=np.int32), 32)[0] for b in biases]
    return (*attrs, fixed.int_tensor(32, (channels,)))


@native_rewrite()
def pow2_saturate_weight(ctx: PatternContext, clamp: Operation):
    """Seed 001 method 1: weight 2^(width-1-s) moving x = q / 2^s to shift width - 1."""
    shift = _pow2_shift(ctx, clamp)
    channels = shape_of(clamp.operands[0])[1]
    return _dense(np.full((channels, 1, 1, 1), 1 << shift, dtype=np.int8), 8)


def _pow2_shift(ctx: PatternContext, clamp: Operation) -> int:
    s = pow2_exponent(scale_of_value(clamp.operands[0]))  # type: ignore[arg-type]
    assert s is not None
    return ctx.target.data.width - 1 - s


@native_rewrite()
def absorb_pow2_in_users(ctx: PatternContext, clamp: Operation, value: SSAValue):
    """The users of `clamp` read `value` (the data times 2^k): each divides by 2^k exactly
    through a larger shift of the rescale after it (or a smaller dequantize scale)."""
    k = _pow2_shift(ctx, clamp)
    scale = scale_of_value(clamp.operands[0])
    value.owner.properties["scale"] = fixed.scale_attr(scale / (1 << k))  # type: ignore[union-attr]
    for use in list(clamp.results[0].uses):
        user = use.operation
        if isinstance(user, fixed.DequantizeOp):
            user.properties["scale"] = fixed.scale_attr(float(user.scales()[0]) / (1 << k)) if user.scales().size == 1 else fixed.scale_attr(user.scales() / (1 << k))
        elif isinstance(user, (fixed.AddOp, fixed.SubOp)):
            for side in ("lhs", "rhs"):
                if getattr(user, side) is clamp.results[0]:
                    user.properties[f"{side}_shift"] = i64_attr(user.properties[f"{side}_shift"].value.data + k)
        else:
            rescale = _absorbing_rescale(user)
            assert rescale is not None
            rescale.properties["shift"] = i64_array([s + k for s in ints(rescale.shift)])


@native_rewrite()
def flat_mul_types(ctx: PatternContext, x: SSAValue):
    """Seed 002: the 1 x C1 x 1 x 1 data type, the C1 x 1 x 1 x 1 kernel type and the conv
    attributes for operands of C1 elements (H * W * C of a map, L * C of tokens)."""
    c1 = math.prod(shape_of(x))
    return (fixed.int_tensor(8, (1, c1, 1, 1)), fixed.int_tensor(8, (c1, 1, 1, 1)), fixed.int_tensor(32, (1, c1, 1, 1)),
            fixed.int_tensor(8, (1, c1, 1, 1)), i64_attr(c1))


@native_rewrite()
def channel_kernel_type(ctx: PatternContext, s: SSAValue):
    """Seed 002, squeeze-excitation: the 1 x C x 1 x 1 scale as C depthwise 1x1 kernels."""
    return fixed.int_tensor(8, (shape_of(s)[1], 1, 1, 1))

