"""R14 and R17: pooling windows and the linear resize's integer taps (docs/fixed-point.md)."""

from __future__ import annotations

import math

import numpy as np

from xnpu.core.errors import XnpuError
from xnpu.semantics import float_ops
from xnpu.semantics.fixed_point import apply_multiplier, int64_array, multiplier_from_scale, saturate


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
    x = int64_array(x)
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
    m, s = int64_array(multiplier).reshape(-1), int64_array(shift).reshape(-1)
    # one pair applies everywhere; per-position pairs broadcast over N and C as an OH x OW grid
    grid = () if m.size == 1 else tuple(out_hw)
    return saturate(apply_multiplier(sums, m.reshape(grid), s.reshape(grid)), out_bits)


# 8-bit codes are summed in int32 over at most this many positions (every partial sum then
# fits): 9 images of mobilenetv3_like's NHWC maps seen as NCHW, 56x56x16 600 -> 410 us,
# 14x14x240 270 -> 75, against widening the map to int64 first
INT32_SUM_POSITIONS = (2**31 - 1) // 255


def global_avg_pool_sum_int(x) -> np.ndarray:
    """R14: the sum over all spatial positions, N x C x 1 x 1 (x 1 ...), int64."""
    x = np.asarray(x)
    axes = tuple(range(2, x.ndim))
    if x.dtype in (np.int8, np.uint8) and math.prod(x.shape[2:]) <= INT32_SUM_POSITIONS:
        return x.sum(axis=axes, dtype=np.int32, keepdims=True).astype(np.int64)
    return int64_array(x).sum(axis=axes, keepdims=True)


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
    x = int64_array(x)
    rows, row_weights = int64_array(rows).reshape(-1, 2), int64_array(row_weights).reshape(-1, 2)
    cols, col_weights = int64_array(cols).reshape(-1, 2), int64_array(col_weights).reshape(-1, 2)
    by_rows = x[:, :, rows[:, 0], :] * row_weights[:, 0, None] + x[:, :, rows[:, 1], :] * row_weights[:, 1, None]
    return by_rows[:, :, :, cols[:, 0]] * col_weights[:, 0] + by_rows[:, :, :, cols[:, 1]] * col_weights[:, 1]
