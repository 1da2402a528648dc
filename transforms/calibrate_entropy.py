"""onnxruntime's entropy calibration (TensorRT's KL-divergence search) on a two-sided histogram
(transforms/calibrate.py collects it; docs/quantization.md compares the methods)."""

from __future__ import annotations

import math
from typing import TYPE_CHECKING

import numpy as np

if TYPE_CHECKING:
    from xnpu.transforms.calibrate_statistics import Histogram

ENTROPY_LEVELS = 128  # quantized bins over the search window: onnxruntime's num_quantized_bins


def _smooth(p: np.ndarray, eps: float = 0.0001) -> np.ndarray | None:
    """onnxruntime's smooth_distribution: zeros become eps, taken off the non-zero bins."""
    zeros = p == 0
    n_zeros = int(zeros.sum())
    n_nonzeros = p.size - n_zeros
    if n_nonzeros == 0:
        return None
    eps1 = eps * n_zeros / n_nonzeros
    smoothed = p + np.where(zeros, eps, -eps1)
    if (smoothed <= 0).any():  # a count below eps1: onnxruntime asserts here
        return None
    return smoothed


def _kl_divergence(p: np.ndarray, q: np.ndarray) -> float:
    p = p / p.sum()
    q = q / q.sum()
    return float(np.sum(p * np.log(p / q)))


def entropy_threshold(histogram: Histogram, levels: int = ENTROPY_LEVELS) -> float:
    """The symmetric threshold whose `levels`-level quantization loses the least information.

    onnxruntime's get_entropy_threshold (TensorRT's KL search) on the two-sided histogram:
    for every window of 2i + 1 bins around zero (i >= levels / 2), P is the window with the
    mass outside added to its end bins and Q merges the window into `levels` runs of
    size // levels bins (the remainder counted into the last run but not spread back), each
    run's count spread evenly, truncated to an integer, over its non-empty bins; both are
    smoothed with eps = 1e-4. The window with the least KL(P || Q) gives the thresholds
    (its edges clipped to the data's min and max); the scale uses the larger magnitude.
    """
    counts, edges = histogram.resampled()
    total_bins = counts.size
    zero_bin = total_bins // 2
    half_levels = levels // 2
    if zero_bin < half_levels:
        return histogram.max_abs
    counts = counts.astype(np.float64)
    before = np.concatenate([[0.0], np.cumsum(counts)])  # before[k] = sum(counts[:k])
    best_divergence, best_window = math.inf, (0, total_bins)
    for i in range(half_levels, zero_bin + 1):
        start, end = zero_bin - i, min(zero_bin + i + 1, total_bins)
        window = counts[start:end]
        reference = window.copy()
        reference[0] += before[start]
        reference[-1] += before[-1] - before[end]
        per_level = window.size // levels
        covered = levels * per_level
        level_counts = window[:covered].reshape(levels, per_level).sum(axis=1)
        level_counts[-1] += window[covered:].sum()
        occupied = (reference[:covered] != 0).reshape(levels, per_level).sum(axis=1)
        spread = np.zeros(levels)
        np.floor_divide(level_counts, occupied, out=spread, where=occupied > 0)
        candidate = np.zeros(window.size)
        candidate[:covered] = np.repeat(spread, per_level)
        p, q = _smooth(reference), _smooth(candidate)
        divergence = math.inf if p is None or q is None else _kl_divergence(p, q)
        if divergence < best_divergence:
            best_divergence, best_window = divergence, (start, end)
    low = max(float(edges[best_window[0]]), histogram.min)
    high = min(float(edges[best_window[1]]), histogram.max)
    return max(abs(low), abs(high))
