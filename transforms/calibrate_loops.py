"""The histogram loop of calibrate.py, compiled by numba (imported when a histogram is first
filled: numba costs ~0.3 s to import).

`uniform_histogram` counts exactly what np.histogram(values, bins, range=(first, last))
counts, in one pass over the data instead of about ten. It follows NumPy's uniform-bin path
in the same float types: an index estimated from (v - first) * bins / (last - first), then
corrected by one against the float edges, so that bin i holds edges[i] <= v < edges[i + 1].
Any estimate within one bin gives the same corrected index, so multiplying by bins / (last -
first) instead of NumPy's division changes nothing; test_calibrate checks the counts against
np.histogram on values at, just above and just below every edge.
"""

from __future__ import annotations

import numpy as np

from xnpu.core.jit import jit


@jit
def uniform_histogram(values, first, last, bins_per_unit, edges, magnitudes, clip_low, clip_high, counts):
    """Add to `counts` (B bins) the samples of the flat float array `values`, each clipped to
    [clip_low, clip_high] (as np.clip; infinite bounds leave it) and taken as |v| with
    `magnitudes`, that lie in [first, last]: bin i holds edges[i] <= v < edges[i + 1], the last
    bin also v == last. `first`, `last`, the clip bounds and `edges` (np.linspace(first, last,
    B + 1)) are in the values' float type; `bins_per_unit` is B / (last - first) in float64."""
    bins = counts.size
    for k in range(values.size):
        v = values[k]
        if v < clip_low:
            v = clip_low
        elif v > clip_high:
            v = clip_high
        if magnitudes:
            v = abs(v)
        if not (v >= first and v <= last):
            continue
        index = min(int(np.float64(v - first) * bins_per_unit), bins - 1)
        if v < edges[index]:
            index -= 1
        elif index != bins - 1 and v >= edges[index + 1]:
            index += 1
        counts[index] += 1
    return counts


@jit
def channel_histograms(values, first, last, bins_per_unit, edges, magnitudes, clip_low, clip_high, counts):
    """uniform_histogram of each column of the 2-D array `values` (positions x C) into its
    row of `counts` (C x B): the same bins and clipping, counted per channel."""
    bins = counts.shape[1]
    for k in range(values.shape[0]):
        for c in range(values.shape[1]):
            v = values[k, c]
            if v < clip_low:
                v = clip_low
            elif v > clip_high:
                v = clip_high
            if magnitudes:
                v = abs(v)
            if not (v >= first and v <= last):
                continue
            index = min(int(np.float64(v - first) * bins_per_unit), bins - 1)
            if v < edges[index]:
                index -= 1
            elif index != bins - 1 and v >= edges[index + 1]:
                index += 1
            counts[c, index] += 1
    return counts
