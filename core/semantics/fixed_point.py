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
from dataclasses import dataclass

import numpy as np

from xnpu.errors import XnpuError
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
    v = np.asarray(x, dtype=np.float64) / scale
    limit = qmax(bits)
    v = np.nan_to_num(v, nan=0.0, posinf=limit, neginf=-limit)
    v = np.clip(v, -limit, limit)
    return (np.sign(v) * np.floor(np.abs(v) + 0.5)).astype(np.int64)


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
    in int64 for |x| <= 2^31 and the (M, shift) ranges of R5/R6.
    """
    x = _ints(x)
    m = _along(multiplier, axis, x.ndim)
    s = _along(shift, axis, x.ndim)
    return shift_arithmetic(x * m, s, rounding=True)


def rescale(x, multiplier, shift, out_bits: int, axis: int | None = None) -> np.ndarray:
    """R9: saturate(apply_multiplier(x, M, shift), out_bits) - TOSA RESCALE, scale32=false, single rounding."""
    return saturate(apply_multiplier(x, multiplier, shift, axis), out_bits)


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


def _exact_int(values: np.ndarray) -> np.ndarray:
    # R13: every partial sum is below K * 2^14 + |bias| < 2^53, so float64 sums are exact.
    return np.rint(values).astype(np.int64)


# R13: a float32 sum of int8 x int8 products is exact while it stays below 2^24: with
# |x|, |w| <= 128 that is any 1024 terms. BLAS float32 GEMMs are about twice as fast as float64.
FLOAT32_EXACT_TERMS = (1 << 24) // (128 * 128)


def conv2d_accumulate_exact(x, weight, strides, pads, dilations, group: int, dtype=np.float32) -> np.ndarray:
    """R13: the exact int64 sums of a convolution (no bias), by float GEMMs that cannot round.

    float64 is exact for any contract-sized reduction; float32 is exact per chunk of at most
    FLOAT32_EXACT_TERMS products, so longer reductions are split along input channels and the
    chunk sums added as integers. Grouped (non-depthwise) convolutions with longer
    reductions use float64.
    """
    x, weight = _ints(x), _ints(weight)
    kernel = weight.shape[2] * weight.shape[3]
    reduction = weight.shape[1] * kernel
    if dtype == np.float64 or reduction <= FLOAT32_EXACT_TERMS or (group > 1 and weight.shape[1] > 1):
        if reduction > FLOAT32_EXACT_TERMS:
            dtype = np.float64
        return _exact_int(float_ops.conv2d_accumulate(x, weight, strides, pads, dilations, group, dtype))
    chunk = max(1, FLOAT32_EXACT_TERMS // kernel)
    total = None
    for start in range(0, weight.shape[1], chunk):
        part = _exact_int(float_ops.conv2d_accumulate(
            x[:, start : start + chunk], weight[:, start : start + chunk], strides, pads, dilations, 1, np.float32
        ))
        total = part if total is None else total + part
    return total


def conv2d_int(
    x, weight, bias, strides: Sequence[int], pads: Sequence[int], dilations: Sequence[int], group: int,
    out_bits: int = 32,
) -> np.ndarray:
    """R13: int8 x int8 convolution with an int32 bias, accumulated exactly, saturated to out_bits.

    NCHW input, OIHW weight; zero padding (the zero point is 0, R4). The reduction length
    K = C/group * KH * KW must be at most MAX_REDUCTION; then |sum| < 2^31 and the float64
    accumulation in float_ops.conv2d_accumulate is exact.
    """
    x, weight = _ints(x), _ints(weight)
    reduction = weight.shape[1] * weight.shape[2] * weight.shape[3]
    if reduction > MAX_REDUCTION:
        raise XnpuError(f"conv2d reduction length {reduction} exceeds {MAX_REDUCTION}; the int32 accumulator could overflow")
    acc = conv2d_accumulate_exact(x, weight, strides, pads, dilations, group)
    if bias is not None:
        acc = acc + _ints(bias).reshape(1, -1, 1, 1)
    return saturate(acc, out_bits)


def gemm_int(a, b, bias, trans_b: bool = False, out_bits: int = 32) -> np.ndarray:
    """R13: A (M x K) @ op(B) (K x N) + bias (broadcast to M x N), exact, saturated to out_bits."""
    a, b = _ints(a), _ints(b)
    b = b.T if trans_b else b
    if a.shape[1] > MAX_REDUCTION:
        raise XnpuError(f"gemm reduction length {a.shape[1]} exceeds {MAX_REDUCTION}; the int32 accumulator could overflow")
    acc = _exact_int(a.astype(np.float64) @ b.astype(np.float64))
    if bias is not None:
        acc = acc + _ints(bias)
    return saturate(acc, out_bits)


def max_pool_int(x, kernel, strides, pads, dilations, out_hw) -> np.ndarray:
    """R14: maximum over each window; padding never wins."""
    return float_ops.max_pool(_ints(x), kernel, strides, pads, dilations, out_hw)


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


# --------------------------------------------------------------------------------------
# Accelerator units: what one npu op (and one instruction of its unit) computes, composed
# of the rules above. The npu interpreter and the simulator both call these.
# --------------------------------------------------------------------------------------

DATA_BITS = 8
ACCUMULATOR_BITS = 32


def relu(y) -> np.ndarray:
    """A unit's relu flag: max(y, 0) of a saturated int8 result is R8's clamp to [0, 127]."""
    return clamp(y, 0, qmax(DATA_BITS))


def conv_unit(x, weight, bias, strides, pads, dilations, group: int, multiplier, shift) -> np.ndarray:
    """CONV: R13's exact int32 convolution, then R9's per-channel (or single) rescale to int8."""
    acc = conv2d_int(x, weight, bias, strides, pads, dilations, group, ACCUMULATOR_BITS)
    return rescale(acc, multiplier, shift, DATA_BITS, axis=1)


def gemm_unit(a, weight, bias, multiplier, shift) -> np.ndarray:
    """CONV as a fully connected layer: A (N x K) times weight (M x K) transposed, then R9."""
    acc = gemm_int(a, weight, bias, trans_b=True, out_bits=ACCUMULATOR_BITS)
    return rescale(acc, multiplier, shift, DATA_BITS, axis=1)


def eltwise_unit(
    op: str, a, b, multiplier: int, shift: int, a_multiplier: int = 0, a_shift: int = 0,
    b_multiplier: int = 0, b_shift: int = 0, pre_shift: int | None = None,
) -> np.ndarray:
    """ELTWISE: mul is R12 then R9; add/sub is R10 into int24, the optional int16 stage
    (a truncating R7 shift by `pre_shift`, seed 000's two-stage variant), then R9 to int8."""
    if op == "mul":
        return rescale(mul_widening(a, b, 16), multiplier, shift, DATA_BITS)
    wide = add_widening(a, b, a_multiplier, a_shift, b_multiplier, b_shift, 24, subtract=op == "sub")
    if pre_shift is not None:
        wide = saturate(shift_arithmetic(wide, pre_shift, rounding=False), 16)
    return rescale(wide, multiplier, shift, DATA_BITS)


def pool_unit(kind: str, x, kernel, strides, pads, out_hw, multiplier, shift) -> np.ndarray:
    """POOL: max over windows (R14, no rescale), average by per-position or single R14
    multipliers, or the global sum rescaled by one pair."""
    if kind == "max":
        return max_pool_int(x, kernel, strides, pads, (1, 1), out_hw)
    if kind == "global_avg":
        return rescale(global_avg_pool_sum_int(x), multiplier, shift, DATA_BITS)
    return avg_pool_int(x, kernel, strides, pads, out_hw, multiplier, shift, DATA_BITS)


def epilogue(y, relu_flag: bool = False, bounds: Sequence[int] | None = None, table=None) -> np.ndarray:
    """What follows a unit's int8 result in SRAM: its relu flag and a CLAMP (R8), or a TABLE (R15)."""
    if relu_flag:
        y = relu(y)
    if bounds is not None:
        y = clamp(y, bounds[0], bounds[1])
    if table is not None:
        y = table_lookup(y, table)
    return y
