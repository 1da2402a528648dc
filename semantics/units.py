"""What one accelerator unit (one npu op, one instruction of its unit) computes, composed of
the contract's rules: the npu interpreter and the simulator both call these."""

from __future__ import annotations

import math
from collections.abc import Sequence

import numpy as np

from xnpu.semantics import fixed_point_loops
from xnpu.semantics.convolution import (
    ExactWeights,
    Requantization,
    conv_requantized_nhwc,
    conv_requantized_parts,
    depthwise_sums_nhwc,
    prepared_weights,
    requantization,
)
from xnpu.semantics.fixed_point import (
    DATA_BITS,
    clamp,
    int64_array,
    qmax,
    rescale,
    rescale_factors,
    storage_dtype,
    table_lookup,
)
from xnpu.semantics.windows import avg_pool_int, global_avg_pool_sum_int, max_pool_int


def relu(y) -> np.ndarray:
    """A unit's relu flag: max(y, 0) of a saturated int8 result is R8's clamp to [0, 127]."""
    return clamp(y, 0, qmax(DATA_BITS))


def _output_low(relu_flag: bool) -> int:
    """The least value a unit writes: R3's saturation, or 0 with its relu flag (R8)."""
    return 0 if relu_flag else -qmax(DATA_BITS)


def conv_unit_nhwc(x, weights, requant: Requantization, strides, pads, dilations, out=None) -> np.ndarray:
    """CONV on N x H x W x C maps, as the simulator runs one instruction: R13's exact sums
    (`weights` an ExactWeights of O x KH x KW x C for a dense convolution, or the KH x KW x C
    integer kernels of a depthwise one), then R13's bias, R9's rescale and the relu flag as
    `requant` (the `Requantization` of the unit's bias and records). Written into `out` when
    given (an integer N x OH x OW x O array)."""
    if isinstance(weights, ExactWeights):
        return conv_requantized_nhwc(x, weights, requant, strides, pads, dilations, out=out)
    return requant(depthwise_sums_nhwc(x, weights, strides, pads, dilations), out=out)


def conv_units_nhwc(x, weights: ExactWeights, requants: Sequence[Requantization], strides, pads, dilations,
                    outs: Sequence[np.ndarray]) -> None:
    """CONV of several output-channel tiles that read the same N x H x W x C map, as one: R13's
    exact sums with `weights` the tiles' weights side by side (convolution.stacked_weights),
    then each tile's columns through its own `requant` into its `out` (integer N x OH x OW x O_k
    arrays, in the order of the stacked weights; convolution.conv_requantized_parts). Each
    output channel is its own sums, so every tile's result is what `conv_unit_nhwc` gives it
    alone."""
    conv_requantized_parts(x, weights, requants, outs, strides, pads, dilations)


def conv_unit(x, weight, bias, strides, pads, dilations, group: int, multiplier, shift,
              relu_flag: bool = False) -> np.ndarray:
    """CONV on an NCHW map with an OIHW weight (R13, then R9 per channel or with one pair, and
    the relu flag, R8): `conv_unit_nhwc` per group (a depthwise convolution is one group of
    KH x KW kernels)."""
    x, weight = np.asarray(x), np.asarray(weight)
    nhwc = x.transpose(0, 2, 3, 1)
    out_channels, c_per_group, kh, kw = weight.shape
    multipliers = np.broadcast_to(int64_array(multiplier).reshape(-1), (out_channels,))
    shifts = np.broadcast_to(int64_array(shift).reshape(-1), (out_channels,))
    biases = None if bias is None else int64_array(bias).reshape(-1)
    low, high = _output_low(relu_flag), qmax(DATA_BITS)
    if group > 1 and c_per_group == 1 and out_channels == group:
        requant = requantization(biases, kh * kw, multipliers, shifts, low, high)
        y = conv_unit_nhwc(nhwc, weight[:, 0].transpose(1, 2, 0), requant, strides, pads, dilations)
        return y.transpose(0, 3, 1, 2)
    per_group, parts = out_channels // group, []
    for g in range(group):
        rows = slice(g * per_group, (g + 1) * per_group)
        weights = prepared_weights(weight) if group == 1 else ExactWeights(weight[rows].transpose(0, 2, 3, 1))
        requant = requantization(None if biases is None else biases[rows], c_per_group * kh * kw, multipliers[rows],
                                 shifts[rows], low, high)
        parts.append(conv_unit_nhwc(nhwc[..., g * c_per_group : (g + 1) * c_per_group], weights, requant, strides, pads,
                                    dilations))
    return (parts[0] if group == 1 else np.concatenate(parts, axis=3)).transpose(0, 3, 1, 2)


def gemm_unit(a, weight, bias, multiplier, shift, relu_flag: bool = False) -> np.ndarray:
    """CONV as a fully connected layer (R13, R9, R8): A (N x K) times weight (M x K)
    transposed, a 1x1 `conv_unit_nhwc` over N x 1 x 1 x K."""
    a = np.asarray(a)
    outputs = np.asarray(weight).shape[0]
    multipliers = np.broadcast_to(int64_array(multiplier).reshape(-1), (outputs,))
    shifts = np.broadcast_to(int64_array(shift).reshape(-1), (outputs,))
    requant = requantization(None if bias is None else int64_array(bias).reshape(-1), a.shape[1], multipliers, shifts,
                             _output_low(relu_flag), qmax(DATA_BITS))
    y = conv_unit_nhwc(a.reshape(a.shape[0], 1, 1, a.shape[1]), prepared_weights(weight, "NK"), requant, (1, 1),
                       (0, 0, 0, 0), (1, 1))
    return y.reshape(a.shape[0], outputs)


def eltwise_unit(
    op: str, a, b, multiplier: int, shift: int, a_multiplier: int = 0, a_shift: int = 0,
    b_multiplier: int = 0, b_shift: int = 0, pre_shift: int | None = None, relu_flag: bool = False,
) -> np.ndarray:
    """ELTWISE: mul is R12 then R9; add/sub is R10 into int24, the optional int16 stage
    (a truncating R7 shift by `pre_shift`, seed 000's two-stage variant), then R9 to int8;
    then the relu flag (R8)."""
    return eltwise_prepared(a, b, eltwise_factors(op, multiplier, shift, a_multiplier, a_shift, b_multiplier, b_shift,
                                                  pre_shift, relu_flag))


def eltwise_factors(
    op: str, multiplier: int, shift: int, a_multiplier: int = 0, a_shift: int = 0,
    b_multiplier: int = 0, b_shift: int = 0, pre_shift: int | None = None, relu_flag: bool = False,
) -> tuple:
    """The constants of `eltwise_unit`'s loop (R6's factors and rounding terms, the bounds), which
    its fields alone give: the simulator works them out once per instruction."""
    low, high = _output_low(relu_flag), qmax(DATA_BITS)
    pre_scale = 0.0 if pre_shift is None else math.ldexp(1.0, -pre_shift)
    return (op == "mul", *_scalar_factors(a_multiplier, a_shift), *_scalar_factors(b_multiplier, b_shift),
            -1.0 if op == "sub" else 1.0, float(qmax(24)), pre_scale, float(qmax(16)),
            *_scalar_factors(multiplier, shift), float(low), float(high))


def eltwise_prepared(a, b, factors: tuple) -> np.ndarray:
    """`eltwise_unit` with its `eltwise_factors`: one loop, R12, or R6 of each input, R10 into
    int24 and the optional int16 stage (R7); then R9 and the relu flag."""
    shape = np.broadcast_shapes(np.shape(a), np.shape(b))
    a, b = (np.ascontiguousarray(np.broadcast_to(x, shape)).reshape(-1) for x in (a, b))
    out = np.empty(a.shape, dtype=storage_dtype(DATA_BITS))
    fixed_point_loops.eltwise(a, b, *factors, out)
    return out.reshape(shape)


def _scalar_factors(multiplier: int, shift: int) -> tuple[float, float]:
    """R6's factor and rounding term (`rescale_factors`) of one (M, shift) pair, as floats."""
    factor, rounding = rescale_factors(multiplier, shift, None, 0)
    return float(factor), float(rounding)


def pool_unit(kind: str, x, kernel, strides, pads, out_hw, multiplier, shift) -> np.ndarray:
    """POOL: max over windows (R14, no rescale), average by per-position or single R14
    multipliers, or the global sum rescaled by one pair."""
    if kind == "max":
        return max_pool_int(x, kernel, strides, pads, (1, 1), out_hw)
    if kind == "global_avg":
        return rescale(global_avg_pool_sum_int(x), multiplier, shift, DATA_BITS)
    return avg_pool_int(x, kernel, strides, pads, out_hw, multiplier, shift, DATA_BITS)


def epilogue(y, bounds: Sequence[int] | None = None, table=None) -> np.ndarray:
    """What follows a unit's int8 result in SRAM: a CLAMP (R8), or a TABLE (R15)."""
    if bounds is not None:
        y = clamp(y, bounds[0], bounds[1])
    if table is not None:
        y = table_lookup(y, table)
    return y
