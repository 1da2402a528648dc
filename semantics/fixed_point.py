"""Integer semantics of the fixed-point level: the one implementation of xnpu's integer contract.

Every rule here is written once, in docs/fixed-point.md (R1, R2, ...); each function cites the
rule it implements. The `fixed` interpreter, the ISA interpreter and the binary executor all
call these functions, so the three levels agree bit for bit by construction.

Integer tensors are numpy int64 arrays in and out (callers cast to their storage dtype); the
float-facing functions (`quantize`, `dequantize`) take and give float arrays. Everything is
vectorized; per-channel parameters broadcast along an `axis`.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass, field

import numpy as np

from xnpu.core.errors import XnpuError
from xnpu.semantics import float_ops

# R1: the integer widths of the contract.
WIDTHS = (8, 16, 24, 32)
# R5: multipliers carry a 15-bit mantissa; M is 0 or in [2^14, 2^15).
MULTIPLIER_BITS = 15
MULTIPLIER_MIN = 1 << (MULTIPLIER_BITS - 1)
MULTIPLIER_MAX = (1 << MULTIPLIER_BITS) - 1
# R6: the shift range for which int64 intermediates cannot overflow on int32 inputs.
SHIFT_MIN = -16
SHIFT_MAX = 62
# R13: conv/gemm reduction length for which the int32 accumulator cannot overflow.
MAX_REDUCTION = ((1 << 31) - 1) // (128 * 128)
# R17: a linear resize's int32 sum is at most 128 * Dy * Dx in magnitude.
MAX_RESIZE_DENOMINATOR = ((1 << 31) - 1) // 128
# R15: table lookups are indexed by q + 128.
TABLE_SIZE = 256
TABLE_OFFSET = 128


def qmax(bits: int) -> int:
    """R2: the largest value of a `bits`-wide tensor; the contract's range is [-qmax, qmax]."""
    return (1 << (bits - 1)) - 1


def storage_range(bits: int) -> tuple[int, int]:
    """R2: what the storage can hold: [-2^(bits-1), 2^(bits-1) - 1]."""
    return -(1 << (bits - 1)), (1 << (bits - 1)) - 1


def storage_dtype(bits: int) -> np.dtype:
    """R1: the numpy dtype a `bits`-wide tensor is stored in (i24 in int32)."""
    for width, dtype in ((8, np.int8), (16, np.int16), (32, np.int32), (64, np.int64)):
        if bits <= width:
            return np.dtype(dtype)
    raise XnpuError(f"no storage type for {bits}-bit integers")


def _ints(x) -> np.ndarray:
    return np.asarray(x, dtype=np.int64)


# --------------------------------------------------------------------------------------
# Saturation and shifts
# --------------------------------------------------------------------------------------


def clamp(x, low: int, high: int) -> np.ndarray:
    """R8: clip to [low, high] (inclusive integer bounds)."""
    if low > high:
        raise XnpuError(f"clamp bounds are reversed: min {low} > max {high}")
    return np.clip(_ints(x), low, high)


def saturate(x, bits: int) -> np.ndarray:
    """R3: symmetric saturation to [-(2^(bits-1) - 1), 2^(bits-1) - 1]."""
    limit = qmax(bits)
    return np.clip(_ints(x), -limit, limit)


def shift_right_rounding(x, n) -> np.ndarray:
    """R7: x * 2^-n rounded half up: (x + 2^(n-1)) >> n for n > 0; x << -n for n <= 0."""
    return shift_arithmetic(x, n, rounding=True)


def shift_arithmetic(x, n, rounding: bool = False) -> np.ndarray:
    """R7: arithmetic shift by n (right when n > 0, left when n < 0).

    Without rounding a right shift is floor(x / 2^n); with rounding it adds 2^(n-1) first
    (round half up). Left shifts are exact. `n` broadcasts against `x`.
    """
    x, n = _ints(x), _ints(n)
    right = np.maximum(n, 0)
    left = np.maximum(-n, 0)
    if rounding:
        bias = np.where(right > 0, np.left_shift(1, np.maximum(right - 1, 0)), 0)
        x = x + bias
    return np.left_shift(np.right_shift(x, right), left)


# --------------------------------------------------------------------------------------
# Quantize / dequantize
# --------------------------------------------------------------------------------------


def quantize(x, scale: float, bits: int = 8) -> np.ndarray:
    """R4: q = saturate(round_half_away(x / scale), bits), computed in float64.

    NaN maps to 0; +-inf saturate. `scale` must be positive and finite.
    """
    scale = float(scale)
    if not (scale > 0 and math.isfinite(scale)):
        raise XnpuError(f"quantize scale must be positive and finite, got {scale}")
    x = np.asarray(x)
    v = np.divide(x, scale, out=np.empty(x.shape, np.float64), dtype=np.float64)  # the loop in float64, not x's
    limit = qmax(bits)
    np.clip(v, -limit, limit, out=v)  # +-inf saturate; NaN stays NaN here
    magnitude = np.asarray(np.abs(v))
    magnitude += 0.5
    np.floor(magnitude, out=magnitude)
    np.copysign(magnitude, v, out=magnitude)
    magnitude[np.isnan(v)] = 0.0
    return magnitude.astype(np.int64)[()]  # a scalar in, a scalar out


def quantize_thresholds(scale: float, bits: int = 8) -> np.ndarray:
    """R4 on float32 inputs as a step function: entry k - 1 is the smallest non-negative
    float32 x with quantize(x, scale, bits) >= k, for k = 1 .. qmax(bits).

    quantize is monotone in x (float64 division rounds monotonically), so a float32 x >= 0
    quantizes to the number of thresholds it reaches. Exporters that compute in float32 (TOSA,
    docs/tosa.md) compare against these instead of dividing in float64. Found by bisection over
    the bit patterns of non-negative float32 values (ordered as integers), with quantize itself.
    """
    levels = np.arange(1, qmax(bits) + 1)
    below = np.zeros(levels.shape, np.uint32)  # 0.0 quantizes to 0 < k
    reach = np.full(levels.shape, np.float32(np.inf).view(np.uint32))  # +inf saturates to qmax >= k
    while np.any(reach - below > 1):
        middle = below + (reach - below) // 2
        reaches = quantize(middle.view(np.float32), scale, bits) >= levels
        reach = np.where(reaches, middle, reach)
        below = np.where(reaches, below, middle)
    return reach.view(np.float32)


def dequantize(q, scale, axis: int | None = None) -> np.ndarray:
    """R4: x = q * scale, computed in float64, returned as float32; per-channel scales along `axis`."""
    q = _ints(q)
    scales = np.asarray(scale, dtype=np.float64)
    if axis is not None and scales.size > 1:
        shape = [1] * q.ndim
        shape[axis] = scales.size
        scales = scales.reshape(shape)
    elif scales.size == 1:
        scales = scales.reshape(())
    return (q.astype(np.float64) * scales).astype(np.float32)


# --------------------------------------------------------------------------------------
# Multipliers
# --------------------------------------------------------------------------------------


def multiplier_from_scale(r):
    """R5: the (M, shift) pair carrying a rescale factor r >= 0.

    m, e = frexp(r); M = floor(m * 2^15 + 1/2); if M == 2^15 then M = 2^14, e += 1;
    shift = 15 - e, so that r ~= M * 2^-shift. r == 0, and any r so small that shift would
    exceed 62, give (0, 0): for every int32 input the result is 0 either way. r >= 2^31 - 2^15
    (shift < -16) is rejected. Scalars give Python ints; arrays give int64 arrays.
    """
    values = np.asarray(r, dtype=np.float64)
    if not np.all(np.isfinite(values)) or np.any(values < 0):
        raise XnpuError(f"rescale factors must be finite and >= 0, got {_describe(values)}")
    mantissa, exponent = np.frexp(values)
    multiplier = np.floor(mantissa * (1 << MULTIPLIER_BITS) + 0.5).astype(np.int64)
    carry = multiplier == (1 << MULTIPLIER_BITS)
    multiplier = np.where(carry, MULTIPLIER_MIN, multiplier)
    shift = MULTIPLIER_BITS - (exponent.astype(np.int64) + carry)
    vanishing = (values == 0) | (shift > SHIFT_MAX)
    multiplier = np.where(vanishing, 0, multiplier)
    shift = np.where(vanishing, 0, shift)
    if np.any(shift < SHIFT_MIN):
        raise XnpuError(
            f"rescale factor {_describe(values)} is too large: the contract carries factors below 2^31"
        )
    if values.ndim == 0:
        return int(multiplier), int(shift)
    return multiplier, shift


def _describe(values: np.ndarray) -> str:
    flat = values.reshape(-1)
    return repr(float(flat[0])) if flat.size == 1 else f"[{', '.join(repr(float(v)) for v in flat[:4])}{', ...' if flat.size > 4 else ''}]"


def check_multiplier(multiplier, shift) -> None:
    """R5/R6: reject (M, shift) pairs outside the contract's ranges."""
    m, s = _ints(multiplier), _ints(shift)
    bad_m = (m != 0) & ((m < MULTIPLIER_MIN) | (m > MULTIPLIER_MAX))
    if np.any(bad_m):
        raise XnpuError(f"multiplier {int(m[bad_m].reshape(-1)[0])} is not 0 or in [{MULTIPLIER_MIN}, {MULTIPLIER_MAX}]")
    bad_s = (s < SHIFT_MIN) | (s > SHIFT_MAX)
    if np.any(bad_s):
        raise XnpuError(f"shift {int(s[bad_s].reshape(-1)[0])} is not in [{SHIFT_MIN}, {SHIFT_MAX}]")


def multiplier_value(multiplier, shift):
    """The exact real factor M * 2^-shift a pair represents (float64)."""
    return np.ldexp(np.asarray(multiplier, dtype=np.float64), -_ints(shift))


def _along(values, axis: int | None, ndim: int) -> np.ndarray:
    values = _ints(values)
    if axis is None or values.size == 1:
        return values.reshape(()) if values.size == 1 else values
    axis = axis + ndim if axis < 0 else axis
    shape = [1] * ndim
    shape[axis] = values.size
    return values.reshape(shape)


def apply_multiplier(x, multiplier, shift, axis: int | None = None) -> np.ndarray:
    """R6: x * M * 2^-shift with one rounding, half up.

    (x * M + 2^(shift-1)) >> shift for shift > 0, (x * M) << -shift for shift <= 0. With
    per-channel parameters (arrays of length C) `axis` names the channel axis of x. Exact
    for |x| <= 2^31 and the (M, shift) ranges of R5/R6; computed by `rescale_float` where
    that holds (it is several times faster than int64 shifts), else in int64.
    """
    values = np.asarray(x)
    if _fits_int32(values):
        low, high = -np.inf, np.inf
        return rescale_float(values, multiplier, shift, low, high, axis).astype(np.int64)
    values = _ints(values)
    m = _along(multiplier, axis, values.ndim)
    s = _along(shift, axis, values.ndim)
    return shift_arithmetic(values * m, s, rounding=True)


def _fits_int32(values: np.ndarray) -> bool:
    """Whether |x| <= 2^31 holds for every element (without a pass over data whose type bounds it)."""
    if values.dtype.kind in "iu" and values.dtype.itemsize <= 4:
        return True
    if values.dtype.kind not in "iuf" or values.size == 0:
        return values.size == 0
    return max(float(values.max()), -float(values.min())) <= RESCALE_FLOAT_LIMIT


# R6 in float64: |x| <= 2^31 and M < 2^15 keep |x * M| < 2^46, below float64's 2^53.
RESCALE_FLOAT_LIMIT = float(1 << 31)


def rescale_factors(multiplier, shift, axis: int | None, ndim: int) -> tuple[np.ndarray, np.ndarray]:
    """R6 as float64 constants: factor M * 2^-shift (exact: M has 15 bits) and the rounding
    term, 1/2 where shift > 0 (half up) and 0 for left shifts; shaped to broadcast along `axis`."""
    m = _along(multiplier, axis, ndim)
    s = _along(shift, axis, ndim)
    factor = np.ldexp(m.astype(np.float64), -s)
    rounding = np.where(s > 0, 0.5, 0.0)
    return factor, rounding


def rescale_float(x, multiplier, shift, low: float, high: float, axis: int | None = None,
                  offset=None, out: np.ndarray | None = None) -> np.ndarray:
    """R6 then a clip to [low, high], in float64, for integer-valued x with |x + offset| <= 2^31.

    Returns clip(floor((x + offset) * M * 2^-shift + 1/2), low, high) (no 1/2 when shift <= 0)
    as float64 integers, equal to R6's integer result clipped: (x + offset) * M is an integer
    below 2^46 and scaling by 2^-shift is exact, so the product is exact; adding 1/2 is exact
    for shift <= 52 (the sum needs at most 53 significant bits), and for shift > 52 every
    |value| < 2^-6, so the sum, rounded or not, lies in (0, 1) and floors to R6's 0. With
    `offset` (an int32 bias, per channel along `axis`) the sum x * f + (offset * f + 1/2) is
    exact by the same count. `out` (float64, x's shape) saves the allocation.
    """
    values = np.asarray(x)
    factor, rounding = rescale_factors(multiplier, shift, axis, values.ndim)
    constant = rounding
    if offset is not None:
        constant = _along(offset, axis, values.ndim).astype(np.float64) * factor + rounding
    result = np.multiply(values, factor, out=out, dtype=np.float64)
    result += constant
    np.floor(result, out=result)
    return np.clip(result, low, high, out=result)


def rescale(x, multiplier, shift, out_bits: int, axis: int | None = None) -> np.ndarray:
    """R9: saturate(apply_multiplier(x, M, shift), out_bits) - TOSA RESCALE, scale32=false, single rounding."""
    values = np.asarray(x)
    if _fits_int32(values):
        limit = qmax(out_bits)
        return rescale_float(values, multiplier, shift, -limit, limit, axis).astype(np.int64)
    return saturate(apply_multiplier(values, multiplier, shift, axis), out_bits)


# --------------------------------------------------------------------------------------
# Element-wise arithmetic
# --------------------------------------------------------------------------------------


def add_widening(
    lhs, rhs, lhs_multiplier: int, lhs_shift: int, rhs_multiplier: int, rhs_shift: int,
    out_bits: int = 24, subtract: bool = False,
) -> np.ndarray:
    """R10: saturate(apply(lhs, Ml, sl) +- apply(rhs, Mr, sr), out_bits), numpy broadcasting.

    The accelerator's element-wise adder: each input passes its own (M, shift) into a wide
    common scale, the sum saturates to the result width (int24 in seed 000).
    """
    left = apply_multiplier(lhs, lhs_multiplier, lhs_shift)
    right = apply_multiplier(rhs, rhs_multiplier, rhs_shift)
    return saturate(left - right if subtract else left + right, out_bits)


def mul_widening(lhs, rhs, out_bits: int = 16) -> np.ndarray:
    """R12: saturate(lhs * rhs, out_bits); exact when out_bits >= the sum of the input widths."""
    return saturate(_ints(lhs) * _ints(rhs), out_bits)


# --------------------------------------------------------------------------------------
# Convolution, gemm, pools, tables
# --------------------------------------------------------------------------------------


# R13: a float32 sum of integer products is exact while every partial sum stays within
# 2^24, whatever order BLAS adds in. A call proves it from its operands: for output
# channel o, every partial sum is at most sum_c max|x[..., c]| * sum_taps |w[o, c]|; input
# channels are split into chunks whose bound stays below FLOAT32_EXACT_LIMIT (most calls
# need one), and the chunk sums are added in float64. float32 GEMMs are about twice as
# fast as float64 ones on CPUs.
FLOAT32_EXACT_LIMIT = float(1 << 24)


def _max_abs(x: np.ndarray) -> float:
    return max(float(x.max()), -float(x.min()))


def _type_max_abs(x: np.ndarray) -> float:
    """The largest |value| x's dtype can hold: a bound that reads no data (inf for floats)."""
    if x.dtype.kind not in "iu":
        return math.inf
    info = np.iinfo(x.dtype)
    return float(max(info.max, -int(info.min)))


def channel_max_abs(x: np.ndarray) -> np.ndarray:
    """R13: max|x| per channel of an N... x C integer array (the last axis), as float64: the input of the exactness bound."""
    flat = x.reshape(-1, x.shape[-1])
    if flat.shape[0] == 0:
        return np.zeros(x.shape[-1])
    high = flat.max(axis=0).astype(np.float64)
    low = flat.min(axis=0).astype(np.float64)
    return np.maximum(high, -low)


class ExactWeights:
    """A conv or gemm weight prepared once for exact float32 GEMMs (R13).

    `ohwi` is the integer weight as O x KH x KW x C (a gemm's B as N x 1 x 1 x K). Keeps
    channel_l1[c, o] = sum over taps |w[o, :, :, c]| for the exactness bound, and builds
    each float matrix a call needs (rows (kh, kw, c) of one tap row or all, columns o) once.
    """

    def __init__(self, ohwi) -> None:
        weight = np.asarray(ohwi)
        if weight.dtype.kind not in "iu":
            weight = _ints(weight)
        self.shape = weight.shape
        self.weight = weight
        self.channel_l1 = np.abs(weight.astype(np.int64)).sum(axis=(1, 2)).T.astype(np.float64)
        self.largest_l1 = float(self.channel_l1.sum(axis=0).max(initial=0.0))  # max over o of sum |w[o]|
        self._matrices: dict[tuple, np.ndarray] = {}

    def matrix(self, rows: tuple[int, int], channels: tuple[int, int], dtype) -> np.ndarray:
        """(taps of kernel rows [rows) x channels [channels)) x O, rows ordered (kh, kw, c)."""
        key = (rows, channels, np.dtype(dtype).char)
        matrix = self._matrices.get(key)
        if matrix is None:
            part = self.weight[:, rows[0] : rows[1], :, channels[0] : channels[1]]
            matrix = np.ascontiguousarray(part.reshape(self.shape[0], -1).T, dtype=dtype)
            self._matrices[key] = matrix
        return matrix

    def channel_chunks(self, max_abs: np.ndarray) -> list[tuple[int, int]] | None:
        """Input-channel ranges whose float32 sums are provably exact for inputs bounded by
        `max_abs` (per channel); None when one channel alone could exceed the limit."""
        channels = self.shape[3]
        contribution = max_abs[:, None] * self.channel_l1
        if channels == 0 or contribution.sum(axis=0).max(initial=0.0) < FLOAT32_EXACT_LIMIT:
            return [(0, channels)]
        cumulative = np.cumsum(contribution, axis=0)
        chunks, start, base = [], 0, np.zeros(self.shape[0])
        while start < channels:
            reach = (cumulative[start:] - base).max(axis=1)  # non-decreasing in the chunk's end
            count = int(np.searchsorted(reach, FLOAT32_EXACT_LIMIT, side="left"))
            if count == 0:
                return None
            chunks.append((start, start + count))
            base = cumulative[start + count - 1]
            start += count
        return chunks


def conv_sums_nhwc(x, weights: ExactWeights, strides, pads, dilations) -> np.ndarray:
    """R13: the exact sums of a dense convolution (no bias), N x OH x OW x O, as float32 (one
    provably exact chunk) or float64 integers.

    `x` is an N x H x W x C integer map (any integer dtype, or a strided view of one). The
    GEMMs read the padded input in place where they can: a 1x1 kernel is one GEMM on the
    map itself; with vertical stride 1 each kernel row is one GEMM on a slice of the
    horizontally gathered windows; otherwise one im2col GEMM (float_ops.conv_gemms_nhwc).
    """
    x = np.asarray(x)
    o, kh, kw, c = weights.shape
    chunks = [(0, c)]
    bound = weights.largest_l1
    # the dtype's range settles most calls on int8 maps without reading them
    if x.size and _type_max_abs(x) * bound >= FLOAT32_EXACT_LIMIT and _max_abs(x) * bound >= FLOAT32_EXACT_LIMIT:
        # the whole-tensor bound does not settle it: bound per input channel, chunk if needed
        chunks = weights.channel_chunks(channel_max_abs(x))
    dtype = np.float32 if chunks is not None else np.float64
    padded = float_ops.pad_nhwc(x, pads, dtype)
    total = None
    for channels in chunks or [(0, c)]:
        part = _conv_gemms(padded[..., channels[0] : channels[1]], weights, channels, strides, dilations, dtype)
        if total is None:
            total = part
        else:
            total = total.astype(np.float64) if total.dtype != np.float64 else total
            total += part
    return total


def _conv_gemms(padded, weights: ExactWeights, channels, strides, dilations, dtype) -> np.ndarray:
    _, kh, kw, _ = weights.shape
    return float_ops.conv_gemms_nhwc(
        padded, lambda rows: weights.matrix(rows, channels, dtype), (kh, kw), strides, dilations, weights.shape[0]
    )


def depthwise_sums_nhwc(x, weight_hwc, strides, pads, dilations) -> np.ndarray:
    """R13 for a depthwise convolution (no bias): N x OH x OW x C exact integer sums.

    One loop over the output (fixed_point_loops.depthwise_sums), accumulating in int32 when
    max|x| * sum_taps |w| < 2^31 for every channel (always, for int8 operands and kernels up
    to 362x362), else in int64.
    """
    x = _integer_array(x)
    weight = np.ascontiguousarray(_integer_array(weight_hwc))  # channels adjacent: the loop runs along them
    kh, kw, c = weight.shape
    taps_l1 = np.abs(weight.astype(np.int64)).sum(axis=(0, 1))
    largest_l1 = float(taps_l1.max(initial=0))
    fits = _type_max_abs(x) * largest_l1 <= qmax(32) or (channel_max_abs(x) * taps_l1).max(initial=0.0) <= qmax(32)
    dtype = np.int32 if fits else np.int64
    (sh, sw), (dh, dw) = strides, dilations
    oh, ow = float_ops.conv_output_hw(x.shape[1:3], (kh, kw), strides, pads, dilations)
    sums = np.empty((x.shape[0], oh, ow, c), dtype=dtype)
    return _loops().depthwise_sums(x, weight, sh, sw, dh, dw, pads[0], pads[1], sums)


def _integer_array(x) -> np.ndarray:
    x = np.asarray(x)
    return x if x.dtype.kind in "iu" else x.astype(np.int64)


def _loops():
    """fixed_point_loops, imported when first needed (numba's import is the cost)."""
    from xnpu.semantics import fixed_point_loops

    return fixed_point_loops


_PREPARED: dict[tuple[int, str], tuple[np.ndarray, ExactWeights]] = {}
_PREPARED_CACHE_SIZE = 512
_TO_OHWI = {
    "OIHW": lambda w: w.transpose(0, 2, 3, 1),
    "KN": lambda w: w.T[:, None, None, :],  # a gemm's B
    "NK": lambda w: w[:, None, None, :],  # a gemm's B with trans_b
}


def prepared_weights(weight: np.ndarray, layout: str = "OIHW") -> ExactWeights:
    """R13: ExactWeights of an OIHW conv weight (or a gemm's B, layout "KN", or "NK" with trans_b),
    kept for read-only arrays (the interpreters' decoded constants), which cannot change."""
    key = (id(weight), layout)
    cached = _PREPARED.get(key)
    if cached is not None and cached[0] is weight:
        return cached[1]
    prepared = ExactWeights(_TO_OHWI[layout](np.asarray(weight)))
    if isinstance(weight, np.ndarray) and not weight.flags.writeable:
        if len(_PREPARED) >= _PREPARED_CACHE_SIZE:
            del _PREPARED[next(iter(_PREPARED))]
        _PREPARED[key] = (weight, prepared)
    return prepared


def conv2d_accumulate_exact(x, weight, strides, pads, dilations, group: int, dtype=np.float32) -> np.ndarray:
    """R13: the exact int64 sums of an NCHW convolution with an OIHW weight (no bias).

    Dense and grouped convolutions are GEMMs (`conv_sums_nhwc`, per group), which prove their
    float32 sums exact per call (dtype=float64 forces float64 GEMMs, exact for any
    contract-sized reduction); depthwise ones are an integer loop (`depthwise_sums_nhwc`).
    """
    x, weight = np.asarray(x), np.asarray(weight)
    strides, pads, dilations = tuple(strides), tuple(pads), tuple(dilations)
    nhwc = x.transpose(0, 2, 3, 1)
    out_channels, c_per_group = weight.shape[:2]
    if group > 1 and c_per_group == 1 and out_channels == group:
        weight_hwc = weight[:, 0].transpose(1, 2, 0)
        return depthwise_sums_nhwc(nhwc, weight_hwc, strides, pads, dilations).astype(np.int64).transpose(0, 3, 1, 2)
    per_group = out_channels // group
    parts = []
    for g in range(group):
        group_weight = weight if group == 1 else weight[g * per_group : (g + 1) * per_group]
        prepared = prepared_weights(group_weight) if group == 1 else ExactWeights(group_weight.transpose(0, 2, 3, 1))
        group_x = nhwc if group == 1 else nhwc[..., g * c_per_group : (g + 1) * c_per_group]
        if dtype == np.float64:
            sums = _conv_gemms(float_ops.pad_nhwc(group_x, pads, np.float64), prepared, (0, c_per_group), strides,
                               dilations, np.float64)
        else:
            sums = conv_sums_nhwc(group_x, prepared, strides, pads, dilations)
        parts.append(sums.astype(np.int64))
    total = parts[0] if group == 1 else np.concatenate(parts, axis=3)
    return total.transpose(0, 3, 1, 2)


@dataclass(frozen=True)
class Requantization:
    """R13 then R9 (and R8's clamp) of conv/gemm sums, with the per-channel constants of R6
    computed once: clip(rescale(saturate(acc + bias, 32), M, shift, 8), low, high), channels
    along the last axis of `acc`. Built by `requantization`."""

    factor: np.ndarray  # M * 2^-shift (float64, exact)
    constant: np.ndarray  # R6's rounding term, plus bias * factor when the bias is folded in
    bias: np.ndarray | None  # kept apart when the int32 saturation could act
    low: int
    high: int
    _per_channel: dict = field(default_factory=dict, compare=False, repr=False)  # channels -> the loop's arrays

    def __call__(self, acc, out: np.ndarray | None = None) -> np.ndarray:
        """The result of integer-valued sums (any numeric dtype, at most 4 axes, channels
        last), exact by the argument of `rescale_float` term by term
        (fixed_point_loops.requantize), written into the integer array `out` (its dtype must
        hold [low, high]; int8 when not given) and returned."""
        acc = np.asarray(acc)
        channels = acc.shape[-1]
        if out is None:
            out = np.empty(acc.shape, dtype=storage_dtype(DATA_BITS))
        leading = (None,) * (4 - acc.ndim)  # the loop's N x H x W x C, as views
        arrays = self._per_channel.get(channels)
        if arrays is None:
            def per_channel(values) -> np.ndarray:
                return np.ascontiguousarray(np.broadcast_to(values, (channels,)), dtype=np.float64)

            bias = _NO_BIAS if self.bias is None else per_channel(self.bias)
            arrays = self._per_channel[channels] = (per_channel(self.factor), per_channel(self.constant), bias)
        factor, constant, bias = arrays
        _loops().requantize(acc[leading], factor, constant, bias, float(self.low), float(self.high), out[leading])
        return out


_NO_BIAS = np.zeros(0, dtype=np.float64)


def requantization(bias, reduction: int, multiplier, shift, low: int, high: int) -> Requantization:
    """R13/R9: the Requantization of sums over a reduction of length `reduction` of int8
    operands (|acc| <= reduction * 2^14), per-channel (or one) bias, M and shift.

    When |acc| + max|bias| stays within int32 the saturation cannot act and the bias joins
    R6's constant term: (acc + bias) * f + 1/2 = acc * f + (bias * f + 1/2), exact as in
    `rescale_float` because (acc + bias) * M < 2^46.
    """
    factor, rounding = rescale_factors(multiplier, shift, -1, 1)
    if bias is None:
        return Requantization(factor, rounding, None, low, high)
    bias = _ints(bias).reshape(-1)
    largest_bias = int(np.abs(bias).max()) if bias.size else 0
    if reduction * (1 << 14) + largest_bias <= qmax(32):
        return Requantization(factor, bias.astype(np.float64) * factor + rounding, None, low, high)
    return Requantization(factor, rounding, bias.astype(np.float64), low, high)


def conv2d_int(
    x, weight, bias, strides: Sequence[int], pads: Sequence[int], dilations: Sequence[int], group: int,
    out_bits: int = 32,
) -> np.ndarray:
    """R13: int8 x int8 convolution with an int32 bias, accumulated exactly, saturated to out_bits.

    NCHW input, OIHW weight; zero padding (the zero point is 0, R4). The reduction length
    K = C/group * KH * KW must be at most MAX_REDUCTION; then |sum| < 2^31, and the sums
    (`conv2d_accumulate_exact`) are exact.
    """
    x, weight = np.asarray(x), np.asarray(weight)
    reduction = weight.shape[1] * weight.shape[2] * weight.shape[3]
    if reduction > MAX_REDUCTION:
        raise XnpuError(f"conv2d reduction length {reduction} exceeds {MAX_REDUCTION}; the int32 accumulator could overflow")
    acc = conv2d_accumulate_exact(x, weight, strides, pads, dilations, group)
    if bias is not None:
        acc = acc + _ints(bias).reshape(1, -1, 1, 1)
    return saturate(acc, out_bits)


def conv_transpose2d_int(
    x, weight, bias, strides: Sequence[int], pads: Sequence[int], dilations: Sequence[int],
    output_padding: Sequence[int], group: int, out_bits: int = 32,
) -> np.ndarray:
    """R18: int8 transposed convolution with an int32 bias, accumulated exactly.

    The stride-1 convolution (R13) of the zero-inserted input, padded (or cropped) by
    dilation * (k - 1) - pad (+ output_padding at the end), with each group's C x O block
    transposed and its kernel flipped (`float_ops.conv_transpose_as_conv`): every output is
    a sum of at most C/group * KH * KW products (the inserted zeros add exact zeros), so
    R13's bound and its exactness hold as they are. NCHW input, C x O/group x KH x KW weight.
    """
    conv_weight, conv_pads = float_ops.conv_transpose_as_conv(_ints(weight), pads, dilations, output_padding, group)
    padded = float_ops.pad_or_crop_nchw(float_ops.zero_insert(_ints(x), strides), conv_pads)
    return conv2d_int(padded, conv_weight, bias, (1, 1), (0, 0, 0, 0), dilations, group, out_bits)


def gemm_sums(a, weights: ExactWeights) -> np.ndarray:
    """R13: the exact sums of A (M x K integers) @ B, B prepared as N x 1 x 1 x K: M x N float."""
    a = np.asarray(a)
    return conv_sums_nhwc(a.reshape(a.shape[0], 1, 1, a.shape[1]), weights, (1, 1), (0, 0, 0, 0), (1, 1)).reshape(
        a.shape[0], weights.shape[0]
    )


def gemm_int(a, b, bias, trans_b: bool = False, out_bits: int = 32) -> np.ndarray:
    """R13: A (M x K) @ op(B) (K x N) + bias (broadcast to M x N), exact, saturated to out_bits."""
    a, b = np.asarray(a), np.asarray(b)
    if a.shape[1] > MAX_REDUCTION:
        raise XnpuError(f"gemm reduction length {a.shape[1]} exceeds {MAX_REDUCTION}; the int32 accumulator could overflow")
    weights = prepared_weights(b, "NK" if trans_b else "KN")
    acc = gemm_sums(a, weights).astype(np.int64)
    if bias is not None:
        acc = acc + _ints(bias)
    return saturate(acc, out_bits)


def max_pool_int(x, kernel, strides, pads, dilations, out_hw) -> np.ndarray:
    """R14: maximum over each window; padding never wins.

    Computed in the next wider integer type than x's (int64 at most): padding is that type's
    minimum, so a window lying entirely in the padding shows as a value below x's range.
    """
    x = np.asarray(x)
    wider = {1: np.int16, 2: np.int32}.get(x.dtype.itemsize, np.int64) if x.dtype.kind in "iu" else np.int64
    return float_ops.max_pool(x.astype(wider), kernel, strides, pads, dilations, out_hw)


def avg_pool_sum_int(x, kernel, strides, pads, out_hw) -> np.ndarray:
    """R14: the int32 sum of each window (padding contributes 0)."""
    x = _ints(x)
    windows = float_ops.pool_windows(x, kernel, strides, pads, (1, 1), out_hw, 0)
    return windows.sum(axis=(4, 5), dtype=np.int64)


def avg_pool_counts(hw, kernel, strides, pads, out_hw, count_include_pad: bool) -> np.ndarray:
    """R14: the divisor of each output position (OH x OW), as ONNX AveragePool defines it."""
    return float_ops.average_pool_counts(hw, kernel, strides, pads, out_hw, count_include_pad).astype(np.int64)


def avg_pool_multipliers(
    counts: np.ndarray, in_scale: float, out_scale: float
) -> tuple[np.ndarray, np.ndarray]:
    """R14: per-position (M, shift) for s_in / (count * s_out); uniform counts give one pair."""
    counts = np.asarray(counts, dtype=np.int64).reshape(-1)
    if np.all(counts == counts[0]):
        counts = counts[:1]
    return multiplier_from_scale(float(in_scale) / (counts.astype(np.float64) * float(out_scale)))


def avg_pool_int(x, kernel, strides, pads, out_hw, multiplier, shift, out_bits: int = 8) -> np.ndarray:
    """R14: saturate(window_sum * M[p] * 2^-shift[p], out_bits) per output position p.

    `multiplier`/`shift` hold one pair or one per output position (OH * OW, row major).
    """
    sums = avg_pool_sum_int(x, kernel, strides, pads, out_hw)
    m, s = _ints(multiplier).reshape(-1), _ints(shift).reshape(-1)
    # one pair applies everywhere; per-position pairs broadcast over N and C as an OH x OW grid
    grid = () if m.size == 1 else tuple(out_hw)
    return saturate(apply_multiplier(sums, m.reshape(grid), s.reshape(grid)), out_bits)


def global_avg_pool_sum_int(x) -> np.ndarray:
    """R14: the sum over all spatial positions, N x C x 1 x 1 (x 1 ...)."""
    x = _ints(x)
    return x.sum(axis=tuple(range(2, x.ndim)), keepdims=True)


def table_lookup(q, table) -> np.ndarray:
    """R15: table[q + 128] for a 256-entry table."""
    table = _ints(table)
    if table.shape != (TABLE_SIZE,):
        raise XnpuError(f"a lookup table needs {TABLE_SIZE} entries, got {table.size}")
    q = np.asarray(q)
    if q.dtype == np.int8:
        # every int8 is in range, and its byte q mod 256 indexes the table rotated by 128
        rotated = np.roll(table, TABLE_OFFSET)
        low, high = storage_range(DATA_BITS)
        if rotated.min() >= low and rotated.max() <= high:
            rotated = rotated.astype(np.int8)  # int8 in, int8 out: an eighth of the memory traffic
        return np.take(rotated, q.view(np.uint8))
    q = _ints(q)
    if q.size and (q.min() < -TABLE_OFFSET or q.max() >= TABLE_SIZE - TABLE_OFFSET):
        raise XnpuError("table lookup input is outside int8")
    return table[q + TABLE_OFFSET]


def build_table(function, in_scale: float, out_scale: float, bits: int = 8) -> np.ndarray:
    """R15: the table of a float function f: entry i = quantize(f(dequantize(i - 128)))."""
    codes = np.arange(TABLE_SIZE, dtype=np.int64) - TABLE_OFFSET
    values = np.asarray(function(dequantize(codes, in_scale)), dtype=np.float64)
    return quantize(values, out_scale, bits)


# --------------------------------------------------------------------------------------
# Linear resize
# --------------------------------------------------------------------------------------


def linear_resize_taps(in_size: int, out_size: int, coordinate_mode: str) -> tuple[np.ndarray, np.ndarray, int]:
    """R17: the two source positions and integer weights of every output position of one axis.

    ONNX's source coordinate is a rational num / den, computed exactly: half_pixel
    (2o + 1 - k) / 2k for an integer factor k = out / in (x2: (2o - 1) / 4), asymmetric
    o / k, align_corners o (in - 1) / (out - 1). It is clamped into [0, in - 1]; with
    first = floor, rem = num - first * den, the taps are (first, min(first + 1, in - 1)) with
    weights (den - rem, rem). All weights and den are then divided by their gcd, so the
    axis's denominator D is as small as it can be (4 for half_pixel x2, out - 1 or a divisor
    of it for align_corners). Returns sources (out x 2), weights (out x 2) and D.
    """
    o = np.arange(out_size, dtype=np.int64)
    if coordinate_mode == "align_corners":
        num, den = o * (in_size - 1), max(out_size - 1, 1)
    else:
        if out_size % in_size:
            raise XnpuError(f"linear resize {in_size} -> {out_size} is not by an integer factor")
        k = out_size // in_size
        if coordinate_mode == "half_pixel":
            num, den = 2 * o + 1 - k, 2 * k
        elif coordinate_mode == "asymmetric":
            num, den = o, k
        else:
            raise XnpuError(f"unknown coordinate_transformation_mode '{coordinate_mode}'")
    num = np.clip(num, 0, (in_size - 1) * den)
    first = num // den
    rem = num - first * den
    sources = np.stack([first, np.minimum(first + 1, in_size - 1)], axis=1)
    weights = np.stack([den - rem, rem], axis=1)
    common = math.gcd(den, *(int(r) for r in rem))
    return sources, weights // common, den // common


def resize_linear_sum(x, rows, row_weights, cols, col_weights) -> np.ndarray:
    """R17: sum over a, b in {0, 1} of row_weights[y, a] * col_weights[x, b] * x[n, c, rows[y, a], cols[x, b]].

    `rows`/`row_weights` are OH x 2, `cols`/`col_weights` OW x 2 (linear_resize_taps). Exact
    in int64 (rows, then columns: integer sums in any order), at most 128 * Dy * Dx in magnitude.
    """
    x = _ints(x)
    rows, row_weights = _ints(rows).reshape(-1, 2), _ints(row_weights).reshape(-1, 2)
    cols, col_weights = _ints(cols).reshape(-1, 2), _ints(col_weights).reshape(-1, 2)
    by_rows = x[:, :, rows[:, 0], :] * row_weights[:, 0, None] + x[:, :, rows[:, 1], :] * row_weights[:, 1, None]
    return by_rows[:, :, :, cols[:, 0]] * col_weights[:, 0] + by_rows[:, :, :, cols[:, 1]] * col_weights[:, 1]


# --------------------------------------------------------------------------------------
# Seed 000: element-wise add and mul of two int8 tensors
# --------------------------------------------------------------------------------------

BASE_SCALE_BITS = 15
TWO_STAGE_TARGET = -8  # log2 of the smallest factor the int16 stage may carry


@dataclass(frozen=True)
class AddPlan:
    """R11: every integer parameter of seed 000's add, derived from the three scales.

    The lowering emits exactly these steps: fixed.add (per-input multipliers, int24), then
    either fixed.shift by `pre_shift` to int16 followed by fixed.rescale (two_stage), or one
    fixed.rescale (direct).
    """

    base_scale: float
    lhs_multiplier: int
    lhs_shift: int
    rhs_multiplier: int
    rhs_shift: int
    variant: str
    pre_shift: int  # rs1 (0 for direct)
    multiplier: int
    shift: int
    subtract: bool = False


def add_plan(s_lhs: float, s_rhs: float, s_out: float, variant: str = "two_stage", subtract: bool = False) -> AddPlan:
    """R11: s_add = max(s_l, s_r) / 2^15; the larger-scale input is multiplied by exactly 2^15
    (M = 2^14, shift = -1), the other by s_other / s_add; r_res = s_add / s_out.

    two_stage: rs1 = clip(ceil(-8 - log2(r_res)), 0, 8), then (M2, shift2) for r_res * 2^rs1.
    direct: (M3, shift3) for r_res.
    """
    if variant not in ("two_stage", "direct"):
        raise XnpuError(f"unknown add variant '{variant}'; expected 'two_stage' or 'direct'")
    for name, s in (("lhs", s_lhs), ("rhs", s_rhs), ("output", s_out)):
        if not (s > 0 and math.isfinite(s)):
            raise XnpuError(f"add: the {name} scale must be positive and finite, got {s}")
    base = float(max(s_lhs, s_rhs)) / (1 << BASE_SCALE_BITS)
    exact = (MULTIPLIER_MIN, -1)  # 2^14 * 2^1 == 2^15
    lhs = exact if s_lhs >= s_rhs else multiplier_from_scale(s_lhs / base)
    rhs = exact if s_rhs > s_lhs else multiplier_from_scale(s_rhs / base)
    r_res = base / s_out
    if variant == "two_stage":
        pre_shift = int(np.clip(math.ceil(TWO_STAGE_TARGET - math.log2(r_res)), 0, 8))
        multiplier, shift = multiplier_from_scale(r_res * (1 << pre_shift))
    else:
        pre_shift = 0
        multiplier, shift = multiplier_from_scale(r_res)
    return AddPlan(base, *lhs, *rhs, variant, pre_shift, multiplier, shift, subtract)


def add_with_plan(q_lhs, q_rhs, plan: AddPlan, trace: dict | None = None) -> np.ndarray:
    """R11: run an AddPlan with the primitives (the same sequence the lowering emits)."""
    i24 = add_widening(
        q_lhs, q_rhs, plan.lhs_multiplier, plan.lhs_shift, plan.rhs_multiplier, plan.rhs_shift,
        24, plan.subtract,
    )
    if trace is not None:
        trace["i24"] = i24
    if plan.variant == "two_stage":
        i16 = saturate(shift_arithmetic(i24, plan.pre_shift, rounding=False), 16)
        if trace is not None:
            trace["i16"] = i16
        return rescale(i16, plan.multiplier, plan.shift, 8)
    return rescale(i24, plan.multiplier, plan.shift, 8)


def seed000_add(q_l, s_l: float, q_r, s_r: float, s_out: float, variant: str = "two_stage",
                trace: dict | None = None) -> np.ndarray:
    """R11: seed 000's int8 + int8 -> int8 add; `trace` (a dict) receives i24 (and i16)."""
    return add_with_plan(q_l, q_r, add_plan(s_l, s_r, s_out, variant), trace)


@dataclass(frozen=True)
class MulPlan:
    """R12: seed 000's mul: i16 = q_l * q_r, then (M, shift) for s_l * s_r / s_out to int8."""

    multiplier: int
    shift: int


def mul_plan(s_lhs: float, s_rhs: float, s_out: float) -> MulPlan:
    """R12: the (M, shift) of r = s_l * s_r / s_out."""
    return MulPlan(*multiplier_from_scale(s_lhs * s_rhs / s_out))


def seed000_mul(q_l, s_l: float, q_r, s_r: float, s_out: float, trace: dict | None = None) -> np.ndarray:
    """R12: seed 000's int8 * int8 -> int16 -> int8 mul; `trace` receives i16."""
    plan = mul_plan(s_l, s_r, s_out)
    i16 = mul_widening(q_l, q_r, 16)
    if trace is not None:
        trace["i16"] = i16
    return rescale(i16, plan.multiplier, plan.shift, 8)


# --------------------------------------------------------------------------------------
# Data movement
# --------------------------------------------------------------------------------------


def reshape(x, shape: Sequence[int]) -> np.ndarray:
    """R16: same values, new shape."""
    return _ints(x).reshape(tuple(shape))


def transpose(x, perm: Sequence[int]) -> np.ndarray:
    """R16: result dimension i is input dimension perm[i]."""
    return np.ascontiguousarray(np.transpose(_ints(x), tuple(perm)))


def concat(xs: Sequence, axis: int) -> np.ndarray:
    """R16: join along `axis`; the inputs must already share one scale."""
    return np.concatenate([_ints(x) for x in xs], axis=axis)


def resize_nearest(x, rows: Sequence[int], cols: Sequence[int]) -> np.ndarray:
    """R16: a nearest resize moves codes: out[n, c, i, j] = x[n, c, rows[i], cols[j]]."""
    rows, cols = _ints(rows), _ints(cols)
    return np.ascontiguousarray(_ints(x)[:, :, rows[:, None], cols[None, :]])


def pad_edge(x, pads: Sequence[int]) -> np.ndarray:
    """R16: H and W padded by [top, left, bottom, right] copies of the nearest edge value."""
    top, left, bottom, right = pads
    return np.pad(_ints(x), ((0, 0), (0, 0), (top, bottom), (left, right)), mode="edge")


def interleave(phases: Sequence, factors: Sequence[int], offsets: Sequence[int], out_hw: Sequence[int]) -> np.ndarray:
    """R16: phase p = a * fw + b fills output rows a, a + fh, ... and columns b, b + fw, ...
    with its values from row offsets[2p] and column offsets[2p + 1] on (what it has beyond
    the rows and columns it fills is not moved)."""
    fh, fw = factors
    first = _ints(phases[0])
    out = np.empty((*first.shape[:2], *out_hw), dtype=np.int64)
    for index, phase in enumerate(phases):
        a, b = divmod(index, fw)
        top, left = offsets[2 * index], offsets[2 * index + 1]
        rows, cols = len(range(a, out_hw[0], fh)), len(range(b, out_hw[1], fw))
        out[:, :, a::fh, b::fw] = _ints(phase)[:, :, top : top + rows, left : left + cols]
    return out


# --------------------------------------------------------------------------------------
# Accelerator units: what one npu op (and one instruction of its unit) computes, composed
# of the rules above. The npu interpreter and the simulator both call these.
# --------------------------------------------------------------------------------------

DATA_BITS = 8
ACCUMULATOR_BITS = 32


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
        sums = conv_sums_nhwc(x, weights, strides, pads, dilations)
    else:
        sums = depthwise_sums_nhwc(x, weights, strides, pads, dilations)
    return requant(sums, out=out)


def conv_unit(x, weight, bias, strides, pads, dilations, group: int, multiplier, shift,
              relu_flag: bool = False) -> np.ndarray:
    """CONV on an NCHW map with an OIHW weight (R13, then R9 per channel or with one pair, and
    the relu flag, R8): `conv_unit_nhwc` per group (a depthwise convolution is one group of
    KH x KW kernels)."""
    x, weight = np.asarray(x), np.asarray(weight)
    nhwc = x.transpose(0, 2, 3, 1)
    out_channels, c_per_group, kh, kw = weight.shape
    multipliers = np.broadcast_to(_ints(multiplier).reshape(-1), (out_channels,))
    shifts = np.broadcast_to(_ints(shift).reshape(-1), (out_channels,))
    biases = None if bias is None else _ints(bias).reshape(-1)
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
    multipliers = np.broadcast_to(_ints(multiplier).reshape(-1), (outputs,))
    shifts = np.broadcast_to(_ints(shift).reshape(-1), (outputs,))
    requant = requantization(None if bias is None else _ints(bias).reshape(-1), a.shape[1], multipliers, shifts,
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
    low, high = _output_low(relu_flag), qmax(DATA_BITS)
    # one loop: R12, or R6 of each input, R10 into int24 and the optional int16 stage (R7);
    # then R9 and the relu flag
    shape = np.broadcast_shapes(np.shape(a), np.shape(b))
    a, b = (np.ascontiguousarray(np.broadcast_to(x, shape)).reshape(-1) for x in (a, b))
    pre_scale = 0.0 if pre_shift is None else math.ldexp(1.0, -pre_shift)
    out = np.empty(a.shape, dtype=storage_dtype(DATA_BITS))
    _loops().eltwise(a, b, op == "mul", *_scalar_factors(a_multiplier, a_shift), *_scalar_factors(b_multiplier, b_shift),
                     -1.0 if op == "sub" else 1.0, float(qmax(24)), pre_scale, float(qmax(16)),
                     *_scalar_factors(multiplier, shift), float(low), float(high), out)
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
