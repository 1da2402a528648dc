"""The percentile and mse thresholds of a histogram (transforms/calibrate.py collects it;
docs/quantization.md compares the methods)."""

from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np

if TYPE_CHECKING:
    from xnpu.transforms.calibrate_statistics import Histogram

QMAX = 127  # the largest int8 code of a symmetric scale: x ~ q * s, q in [-QMAX, QMAX]


def percentile_threshold(histogram: Histogram, percentile: float) -> float:
    """The left edge of the bin where the CDF of |x| reaches `percentile` (onnxruntime's rule,
    symmetric mode), clipped to max|x|; the bin's right edge when that left edge is 0."""
    counts, edges = histogram.used()
    if counts.size == 0:
        return 0.0
    cdf = np.cumsum(counts) / counts.sum()
    index = min(int(np.searchsorted(cdf, percentile / 100.0)), counts.size - 1)
    threshold = edges[index] if edges[index] > 0 else edges[index + 1]
    return min(float(threshold), histogram.max_abs)


def mse_threshold(histogram: Histogram) -> float:
    """The threshold T (a bin edge of the |x| histogram) with the least expected squared error
    of quantizing x at step T / 127, clipped to [-T, T]; values are taken as uniform inside
    their bin. A bin beyond T costs E[(x - T)^2] = (c - T)^2 + w^2/12 per value (c its centre,
    w the bin width); a bin inside costs the rounding error, step^2/12, or E[x^2] = c^2 + w^2/12
    where that is less (values under half a step round to 0). Prefix sums make every candidate
    one vector operation. Ties take the smaller T."""
    counts, edges = histogram.used()
    if counts.size == 0:
        return 0.0
    counts = counts.astype(np.float64)
    width = float(edges[1] - edges[0])
    centres = edges[:-1] + width / 2
    thresholds = edges[1:]  # candidate k clips every bin from index k on
    k = np.arange(1, counts.size + 1)

    def from_index(values: np.ndarray) -> np.ndarray:  # [i] = sum(values[i:])
        return np.concatenate([np.cumsum(values[::-1])[::-1], [0.0]])

    def before_index(values: np.ndarray) -> np.ndarray:  # [i] = sum(values[:i])
        return np.concatenate([[0.0], np.cumsum(values)])

    n, n_c, n_cc = (from_index(counts * centres**p) for p in (0, 1, 2))
    clipped = n_cc[k] - 2 * thresholds * n_c[k] + (thresholds**2 + width**2 / 12) * n[k]
    rounding_cost = (thresholds / QMAX) ** 2 / 12
    own_square = centres**2 + width**2 / 12  # increasing: the bins under half a step are a prefix
    below = np.minimum(np.searchsorted(own_square, rounding_cost), k)
    count_before, square_before = before_index(counts), before_index(counts * own_square)
    rounding = square_before[below] + rounding_cost * (count_before[k] - count_before[below])
    best = int(np.argmin(clipped + rounding))
    return min(float(thresholds[best]), histogram.max_abs)
