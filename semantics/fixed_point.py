"""Integer semantics of the fixed-point level: the one implementation of xnpu's integer contract.

Every rule here is written once, in docs/fixed-point.md (R1, R2, ...); each function cites the
rule it implements. The `fixed` interpreter, the ISA interpreter and the binary executor all
call these functions, so the three levels agree bit for bit by construction. This module has
the contract's widths, saturation, quantization, multipliers and rescales, element-wise
arithmetic, tables and data movement (R1-R12, R15, R16); the exact sums of convolutions and
gemms (R13) are semantics/convolution.py, pools and the linear resize (R14, R17)
semantics/windows.py, and what one accelerator unit computes, composed of these,
semantics/units.py.

Integer tensors are numpy int64 arrays in and out (callers cast to their storage dtype); the
float-facing functions (`quantize`, `dequantize`) take and give float arrays. Everything is
vectorized; per-channel parameters broadcast along an `axis`.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from xnpu.core.errors import XnpuError
from xnpu.semantics import fixed_point_loops

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
# the data width of activations, and of the accumulators of convolutions (R1, R13)
DATA_BITS = 8
ACCUMULATOR_BITS = 32


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


def int64_array(x) -> np.ndarray:
    """`x` as an int64 array: codes and parameters of any width of R1, whatever their storage type."""
    return np.asarray(x, dtype=np.int64)


# --------------------------------------------------------------------------------------
# Saturation and shifts
# --------------------------------------------------------------------------------------


def clamp(x, low: int, high: int) -> np.ndarray:
    """R8: clip to [low, high] (inclusive integer bounds)."""
    if low > high:
        raise XnpuError(f"clamp bounds are reversed: min {low} > max {high}")
    return np.clip(int64_array(x), low, high)


def saturate(x, bits: int) -> np.ndarray:
    """R3: symmetric saturation to [-(2^(bits-1) - 1), 2^(bits-1) - 1]."""
    limit = qmax(bits)
    return np.clip(int64_array(x), -limit, limit)


def shift_right_rounding(x, n) -> np.ndarray:
    """R7: x * 2^-n rounded half up: (x + 2^(n-1)) >> n for n > 0; x << -n for n <= 0."""
    return shift_arithmetic(x, n, rounding=True)


def shift_arithmetic(x, n, rounding: bool = False) -> np.ndarray:
    """R7: arithmetic shift by n (right when n > 0, left when n < 0).

    Without rounding a right shift is floor(x / 2^n); with rounding it adds 2^(n-1) first
    (round half up). Left shifts are exact. `n` broadcasts against `x`.
    """
    x, n = int64_array(x), int64_array(n)
    right = np.maximum(n, 0)
    left = np.maximum(-n, 0)
    if rounding:
        bias = np.where(right > 0, np.left_shift(1, np.maximum(right - 1, 0)), 0)
        x = x + bias
    return np.left_shift(np.right_shift(x, right), left)


# --------------------------------------------------------------------------------------
# Quantize / dequantize
# --------------------------------------------------------------------------------------


def quantize(x, scale: float, bits: int = 8, dtype=np.int64) -> np.ndarray:
    """R4: q = saturate(round_half_away(x / scale), bits), computed in float64, as `dtype` (an
    integer type that holds +-qmax(bits)).

    NaN maps to 0; +-inf saturate. `scale` must be positive and finite.
    """
    scale = float(scale)
    if not (scale > 0 and math.isfinite(scale)):
        raise XnpuError(f"quantize scale must be positive and finite, got {scale}")
    x = np.asarray(x)
    if x.size <= QUANTIZE_BLOCK or x.dtype not in _LOOP_TYPES or bits > 32:
        return _quantize_whole(x, scale, qmax(bits), dtype)
    # element by element in one compiled loop (fixed_point_loops.quantize, the steps of
    # _quantize_block): numpy's float64 temporaries of a few images' inputs (~11 MB each) cost
    # more in page faults and cache misses than the arithmetic
    codes = np.empty(x.shape, dtype)
    fixed_point_loops.quantize(x.reshape(-1), scale, float(qmax(bits)), codes.reshape(-1))
    return codes


QUANTIZE_BLOCK = 1 << 14  # elements: below this, numpy's steps on the whole array
_LOOP_TYPES = frozenset(np.dtype(t) for t in ("int8", "uint8", "int16", "uint16", "int32", "uint32", "int64", "uint64",
                                              "float32", "float64"))


def _quantize_whole(x: np.ndarray, scale: float, limit: int, dtype) -> np.ndarray:
    """`quantize` by numpy's steps, block by block (a block's float64 temporaries stay in the cache)."""
    if x.size <= QUANTIZE_BLOCK:
        return _quantize_block(x, scale, limit).astype(dtype)[()]  # a scalar in, a scalar out
    flat = x.reshape(-1)
    codes = np.empty(flat.shape, dtype)
    for start in range(0, flat.size, QUANTIZE_BLOCK):
        codes[start : start + QUANTIZE_BLOCK] = _quantize_block(flat[start : start + QUANTIZE_BLOCK], scale, limit)
    return codes.reshape(x.shape)


def _quantize_block(x: np.ndarray, scale: float, limit: int) -> np.ndarray:
    """R4's float64 steps on an array: the rounded, saturated values (NaN -> 0), as float64."""
    v = np.divide(x, scale, out=np.empty(x.shape, np.float64), dtype=np.float64)  # the loop in float64, not x's
    np.clip(v, -limit, limit, out=v)  # +-inf saturate; NaN stays NaN here
    magnitude = np.asarray(np.abs(v))
    magnitude += 0.5
    np.floor(magnitude, out=magnitude)
    np.copysign(magnitude, v, out=magnitude)
    magnitude[np.isnan(v)] = 0.0
    return magnitude


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
    q = int64_array(q)
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
    m, s = int64_array(multiplier), int64_array(shift)
    bad_m = (m != 0) & ((m < MULTIPLIER_MIN) | (m > MULTIPLIER_MAX))
    if np.any(bad_m):
        raise XnpuError(f"multiplier {int(m[bad_m].reshape(-1)[0])} is not 0 or in [{MULTIPLIER_MIN}, {MULTIPLIER_MAX}]")
    bad_s = (s < SHIFT_MIN) | (s > SHIFT_MAX)
    if np.any(bad_s):
        raise XnpuError(f"shift {int(s[bad_s].reshape(-1)[0])} is not in [{SHIFT_MIN}, {SHIFT_MAX}]")


def multiplier_value(multiplier, shift):
    """The exact real factor M * 2^-shift a pair represents (float64)."""
    return np.ldexp(np.asarray(multiplier, dtype=np.float64), -int64_array(shift))


def _along(values, axis: int | None, ndim: int) -> np.ndarray:
    values = int64_array(values)
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
    values = int64_array(values)
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
    return saturate(int64_array(lhs) * int64_array(rhs), out_bits)


# --------------------------------------------------------------------------------------
# Tables
# --------------------------------------------------------------------------------------


def table_lookup(q, table) -> np.ndarray:
    """R15: table[q + 128] for a 256-entry table."""
    q = np.asarray(q)
    if q.dtype == np.int8:
        return int8_table_lookup(q, int8_lookup_table(table))
    table = _checked_table(table)
    q = int64_array(q)
    if q.size and (q.min() < -TABLE_OFFSET or q.max() >= TABLE_SIZE - TABLE_OFFSET):
        raise XnpuError("table lookup input is outside int8")
    return table[q + TABLE_OFFSET]


def _checked_table(table) -> np.ndarray:
    table = int64_array(table)
    if table.shape != (TABLE_SIZE,):
        raise XnpuError(f"a lookup table needs {TABLE_SIZE} entries, got {table.size}")
    return table


def int8_lookup_table(table) -> np.ndarray:
    """R15's table prepared for int8 inputs (`int8_table_lookup`): rotated by 128, so that the
    byte of q (q mod 256) indexes it, and int8 when every entry fits (an eighth of the memory
    traffic). A caller that looks the same table up many times prepares it once."""
    rotated = np.roll(_checked_table(table), TABLE_OFFSET)
    low, high = storage_range(DATA_BITS)
    if rotated.min() >= low and rotated.max() <= high:
        rotated = rotated.astype(np.int8)
    return rotated


def int8_table_lookup(q: np.ndarray, prepared: np.ndarray, out: np.ndarray | None = None) -> np.ndarray:
    """R15 for int8 `q` (every int8 is in range) through an `int8_lookup_table`; written into the
    int8 N x H x W x C array `out` (which may be `q`) when given: one compiled loop
    (fixed_point_loops.table_lookup) where the table is int8, numpy's take else."""
    if out is None:
        return np.take(prepared, q.view(np.uint8))
    if prepared.dtype == np.int8 and q.ndim == 4:
        return fixed_point_loops.table_lookup(q, prepared, out)
    out[...] = np.take(prepared, q.view(np.uint8))
    return out


def build_table(function, in_scale: float, out_scale: float, bits: int = 8) -> np.ndarray:
    """R15: the table of a float function f: entry i = quantize(f(dequantize(i - 128)))."""
    codes = np.arange(TABLE_SIZE, dtype=np.int64) - TABLE_OFFSET
    values = np.asarray(function(dequantize(codes, in_scale)), dtype=np.float64)
    return quantize(values, out_scale, bits)


SQUARE_BASE = 127  # R19: the base of a square's two int8 digits (the largest int8 weight)


def square_digit_tables() -> tuple[np.ndarray, np.ndarray]:
    """R19: the tables (R15 layout, entry i for code i - 128) of the base-127 digits of q * q:
    high = q^2 // 127 in [0, 127], low = q^2 mod 127 in [0, 126], so q^2 = 127 * high + low
    exactly for every code of the symmetric range (the unused code -128 maps to 0)."""
    codes = np.arange(TABLE_SIZE, dtype=np.int64) - TABLE_OFFSET
    squares = np.where(codes >= -qmax(DATA_BITS), codes * codes, 0)
    return squares // SQUARE_BASE, squares % SQUARE_BASE


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
    if variant == "two_stage":
        pre_shift, multiplier, shift = two_stage_requantization(base, s_out)
    else:
        pre_shift = 0
        multiplier, shift = multiplier_from_scale(base / s_out)
    return AddPlan(base, *lhs, *rhs, variant, pre_shift, multiplier, shift, subtract)


def two_stage_requantization(base_scale: float, s_out: float) -> tuple[int, int, int]:
    """R11 two_stage: the int24 sum at `base_scale` goes to int16 by a truncating right shift
    rs1 = clip(ceil(-8 - log2(r_res)), 0, 8) (r_res = base_scale / s_out), then to int8 by
    (M2, shift2) for r_res * 2^rs1. Returns (rs1, M2, shift2)."""
    r_res = base_scale / s_out
    pre_shift = int(np.clip(math.ceil(TWO_STAGE_TARGET - math.log2(r_res)), 0, 8))
    multiplier, shift = multiplier_from_scale(r_res * (1 << pre_shift))
    return pre_shift, int(multiplier), int(shift)


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
    return int64_array(x).reshape(tuple(shape))


def transpose(x, perm: Sequence[int]) -> np.ndarray:
    """R16: result dimension i is input dimension perm[i]."""
    return np.ascontiguousarray(np.transpose(int64_array(x), tuple(perm)))


def concat(xs: Sequence, axis: int) -> np.ndarray:
    """R16: join along `axis`; the inputs must already share one scale."""
    return np.concatenate([int64_array(x) for x in xs], axis=axis)


def resize_nearest(x, rows: Sequence[int], cols: Sequence[int]) -> np.ndarray:
    """R16: a nearest resize moves codes: out[n, c, i, j] = x[n, c, rows[i], cols[j]]."""
    rows, cols = int64_array(rows), int64_array(cols)
    return np.ascontiguousarray(int64_array(x)[:, :, rows[:, None], cols[None, :]])


def pad_edge(x, pads: Sequence[int]) -> np.ndarray:
    """R16: H and W padded by [top, left, bottom, right] copies of the nearest edge value."""
    top, left, bottom, right = pads
    return np.pad(int64_array(x), ((0, 0), (0, 0), (top, bottom), (left, right)), mode="edge")


def interleave(phases: Sequence, factors: Sequence[int], offsets: Sequence[int], out_hw: Sequence[int]) -> np.ndarray:
    """R16: phase p = a * fw + b fills output rows a, a + fh, ... and columns b, b + fw, ...
    with its values from row offsets[2p] and column offsets[2p + 1] on (what it has beyond
    the rows and columns it fills is not moved)."""
    fh, fw = factors
    first = int64_array(phases[0])
    out = np.empty((*first.shape[:2], *out_hw), dtype=np.int64)
    for index, phase in enumerate(phases):
        a, b = divmod(index, fw)
        top, left = offsets[2 * index], offsets[2 * index + 1]
        rows, cols = len(range(a, out_hw[0], fh)), len(range(b, out_hw[1], fw))
        out[:, :, a::fh, b::fw] = int64_array(phase)[:, :, top : top + rows, left : left + cols]
    return out
