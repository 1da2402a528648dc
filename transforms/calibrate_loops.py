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

from xnpu.core.jit import inline_jit, jit


@inline_jit
def bin_of(v, first, last, bins_per_unit, edges, magnitudes, clip_low, clip_high, bins):
    """The bin of one value (module doc), clipped to [clip_low, clip_high] (as np.clip of a
    finite value; infinite bounds leave it) and taken as |v| with `magnitudes`, and whether it
    lies in [first, last] (an index in [0, bins) either way, so that a count can add the
    flag). Without branches on the data: calibration's values fall on both sides of a
    clip bound or an edge at random, and a mispredicted branch cost more than the arithmetic."""
    v = clip_low if v < clip_low else v  # comparisons, as np.clip: a nan stays nan (not inside)
    v = clip_high if v > clip_high else v
    if magnitudes:  # the same for every value: predicted
        v = abs(v)
    inside = (v >= first) & (v <= last)
    estimate = np.float64(v - first) * bins_per_unit
    estimate = estimate if estimate > 0.0 else 0.0  # comparisons also take a nan to a bound
    estimate = estimate if estimate < bins - 1 else np.float64(bins - 1)
    index = int(estimate)
    down = v < edges[index]
    up = (not down) & (index != bins - 1) & (v >= edges[index + 1])
    return min(max(index - down + up, 0), bins - 1), inside


@jit
def uniform_histogram(values, first, last, bins_per_unit, edges, magnitudes, clip_low, clip_high, counts):
    """Add to `counts` (B bins) the bins (bin_of) of the samples of the flat float array
    `values` that lie in [first, last]: bin i holds edges[i] <= v < edges[i + 1], the last bin
    also v == last. `first`, `last`, the clip bounds and `edges` (np.linspace(first, last,
    B + 1)) are in the values' float type; `bins_per_unit` is B / (last - first) in float64."""
    bins = counts.size
    for k in range(values.size):
        index, inside = bin_of(values[k], first, last, bins_per_unit, edges, magnitudes, clip_low, clip_high, bins)
        counts[index] += inside
    return counts


@jit
def channel_histograms(values, first, last, bins_per_unit, edges, magnitudes, clip_low, clip_high, counts):
    """uniform_histogram of each channel of the 3-D array `values` (N x C x positions, any
    strides) into its row of `counts` (C x B): the same bins and clipping, counted per channel."""
    bins = counts.shape[1]
    for n in range(values.shape[0]):
        for c in range(values.shape[1]):
            for p in range(values.shape[2]):
                index, inside = bin_of(values[n, c, p], first, last, bins_per_unit, edges, magnitudes, clip_low,
                                       clip_high, bins)
                counts[c, index] += inside
    return counts
