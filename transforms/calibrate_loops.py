"""The histogram loops of calibrate.py, compiled by numba (imported when a histogram is first
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
def bin_of(v, first, last, bins_per_unit, edges, magnitudes, clip_low, clip_high, bins):
    """The bin of one value (module doc), clipped to [clip_low, clip_high] (as np.clip;
    infinite bounds leave it) and taken as |v| with `magnitudes`; -1 outside [first, last]."""
    if v < clip_low:
        v = clip_low
    elif v > clip_high:
        v = clip_high
    if magnitudes:
        v = abs(v)
    if not (v >= first and v <= last):
        return -1
    index = min(int(np.float64(v - first) * bins_per_unit), bins - 1)
    if v < edges[index]:
        index -= 1
    elif index != bins - 1 and v >= edges[index + 1]:
        index += 1
    return index


@jit
def uniform_histogram(values, first, last, bins_per_unit, edges, magnitudes, clip_low, clip_high, counts):
    """Add to `counts` (B bins) the bins (bin_of) of the samples of the flat float array
    `values` that lie in [first, last]: bin i holds edges[i] <= v < edges[i + 1], the last bin
    also v == last. `first`, `last`, the clip bounds and `edges` (np.linspace(first, last,
    B + 1)) are in the values' float type; `bins_per_unit` is B / (last - first) in float64."""
    bins = counts.size
    for k in range(values.size):
        index = bin_of(values[k], first, last, bins_per_unit, edges, magnitudes, clip_low, clip_high, bins)
        if index >= 0:
            counts[index] += 1
    return counts


@jit
def channel_histograms(values, first, last, bins_per_unit, edges, magnitudes, clip_low, clip_high, counts):
    """uniform_histogram of each channel of the 3-D array `values` (N x C x positions, any
    strides) into its row of `counts` (C x B): the same bins and clipping, counted per channel."""
    bins = counts.shape[1]
    for n in range(values.shape[0]):
        for c in range(values.shape[1]):
            for p in range(values.shape[2]):
                index = bin_of(values[n, c, p], first, last, bins_per_unit, edges, magnitudes, clip_low, clip_high,
                               bins)
                if index >= 0:
                    counts[c, index] += 1
    return counts
