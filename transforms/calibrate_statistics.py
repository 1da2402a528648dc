"""The streaming statistics calibration folds each tensor into (transforms/calibrate.py says
how they are used): a running max, a histogram whose range grows by merging bins, and one
filled at once over the exact range of all the samples; the histogram counting they share,
np.histogram's counts in one compiled pass (calibrate_loops), split over the cores; and the
running mean a weighted op's input keeps for bias correction."""

from __future__ import annotations

import copy
import math
import os
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor

import numpy as np

from xnpu.core.errors import XnpuError
from xnpu.transforms.calibrate_loops import channel_histograms, uniform_histogram


class RunningMax:
    """max|x| over everything seen, or (batch_average) the mean over batches of the batch max."""

    def __init__(self, batch_average: bool = False):
        self.batch_average = batch_average
        self.max_abs = 0.0
        self.batch_max = 0.0
        self.batch_sum = 0.0
        self.batches = 0

    def update(self, x: np.ndarray, clip: Bounds = None) -> None:
        value = max(clipped(float(x.max()), clip), -clipped(float(x.min()), clip)) if x.size else 0.0
        if not math.isfinite(value):
            raise XnpuError("calibration produced a non-finite value (inf or nan) in the float graph")
        self.max_abs = max(self.max_abs, value)
        self.batch_max = max(self.batch_max, value)

    def end_batch(self) -> None:
        self.batch_sum += self.batch_max
        self.batches += 1
        self.batch_max = 0.0

    def threshold(self) -> float:
        if self.batch_average:
            return self.batch_sum / self.batches if self.batches else 0.0
        return self.max_abs


class RunningMean:
    """The mean over samples (and every leading axis) of a tensor's last `trailing` axes:
    what each weight of a convolution or gemm multiplies on average (input_mean)."""

    def __init__(self, trailing: int):
        self.trailing = trailing
        self.sum: np.ndarray | None = None
        self.count = 0

    def update(self, x: np.ndarray) -> None:
        x = np.asarray(x)
        leading = tuple(range(x.ndim - self.trailing))
        # summed where it lies: a batch is often a transposed view, whose reshape would copy it
        total = x.sum(axis=leading, dtype=np.float64)
        self.sum = total if self.sum is None else self.sum + total
        self.count += int(np.prod([x.shape[axis] for axis in leading]))

    def mean(self) -> np.ndarray | None:
        return None if self.sum is None or not self.count else self.sum / self.count


def _merge_bins(counts: np.ndarray, factor: int) -> np.ndarray:
    """Sum runs of `factor` adjacent bins, counting from index 0; the count stays the same."""
    padded = np.zeros(counts.size * factor, dtype=np.int64)
    padded[: counts.size] = counts
    return padded.reshape(counts.size, factor).sum(axis=1)


Bounds = tuple[float, float] | None  # a consumer_range the values are observed clipped to


def clipped(value: float, clip: Bounds) -> float:  # np.clip of a scalar (float32 bounds: StatisticsListener.observe)
    return value if clip is None else min(max(value, clip[0]), clip[1])


def _loop_bins(values: np.ndarray, bins: int, low: float, high: float, magnitudes: bool, clip: Bounds) -> tuple:
    """The compiled loops' arguments between the values and the counts: the range, NumPy's
    edges in the values' float type, `magnitudes` and the clip bounds (infinite without)."""
    edges = np.linspace(low, high, bins + 1, dtype=values.dtype)
    bins_per_unit = bins / float(np.subtract(high, low, dtype=np.float64))
    as_values = values.dtype.type
    clip_low, clip_high = (-np.inf, np.inf) if clip is None else clip
    return as_values(low), as_values(high), bins_per_unit, edges, magnitudes, as_values(clip_low), as_values(clip_high)


def uniform_counts(values: np.ndarray, bins: int, low: float, high: float, magnitudes: bool = False,
                   clip: Bounds = None) -> np.ndarray:
    """np.histogram(values, bins, range=(low, high))'s counts (of |values| with `magnitudes`,
    of the values clipped to `clip` first) in one compiled pass (calibrate_loops.uniform_histogram:
    NumPy's rule step for step, equal counts), which clips each value as it reads it instead
    of a clipped copy of the array, split over the cores (_on_all_cores)."""
    values = values.ravel(order="K")  # memory order: a view, also of a transposed array
    if values.dtype.kind != "f":
        values = values.astype(np.float64)
    arguments = _loop_bins(values, bins, low, high, magnitudes, clip)
    return _on_all_cores(lambda part: uniform_histogram(part, *arguments, np.zeros(bins, dtype=np.int64)), values)


def channel_counts(values: np.ndarray, axis: int, bins: int, low: float, high: float,
                   magnitudes: bool = False, clip: Bounds = None) -> np.ndarray:
    """uniform_counts of each channel (index along `axis`), C x bins, in one compiled pass
    (calibrate_loops.channel_histograms) instead of one pass per channel, split over the cores."""
    if values.dtype.kind != "f":
        values = values.astype(np.float64)
    channels = values.shape[axis]
    # N x C x positions: a view of contiguous NCHW (onnxruntime's) and of an NCHW view of NHWC memory
    by_channel = values.reshape(int(np.prod(values.shape[:axis])), channels, -1)
    arguments = _loop_bins(values, bins, low, high, magnitudes, clip)
    return _on_all_cores(lambda part: channel_histograms(part, *arguments, np.zeros((channels, bins), dtype=np.int64)),
                         by_channel)


# A histogram of at least this many values is split over the cores: each part is counted on
# its own (the compiled loops release the GIL) and the integer counts summed, which is exactly
# the histogram of the whole.
PARALLEL_HISTOGRAM_MIN = 1 << 20
_HISTOGRAM_THREADS: dict[int, ThreadPoolExecutor] = {}  # the pool by process id: a forked child has no threads


def _on_all_cores(count: Callable[[np.ndarray], np.ndarray], values: np.ndarray) -> np.ndarray:
    """count(values), as the sum of count() of parts of `values` (split along its first axis)
    run on one thread per core where there are several and the values are many."""
    cores = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else (os.cpu_count() or 1)
    parts = min(cores, len(values))
    if parts < 2 or values.size < PARALLEL_HISTOGRAM_MIN:
        return count(values)
    pool = _HISTOGRAM_THREADS.get(os.getpid())
    if pool is None:
        pool = _HISTOGRAM_THREADS[os.getpid()] = ThreadPoolExecutor(max_workers=cores, thread_name_prefix="histogram")
    bounds = np.linspace(0, len(values), parts + 1).astype(int)
    pieces = [values[start:stop] for start, stop in zip(bounds[:-1], bounds[1:])]
    return sum(pool.map(count, pieces))


class Histogram:
    """Histogram with a fixed number of uniform bins whose range grows by merging bins.

    `signed=False`: |x| over [0, bins * width] (for percentile). `signed=True`: x over
    [-bins/2 * width, bins/2 * width], zero on the middle edge (for entropy, whose search
    works on the two-sided histogram as onnxruntime's does). When a sample exceeds the range,
    runs of k bins (counted outward from 0) merge into one, k the smallest integer that makes
    the range cover it; memory stays `bins * oversample` counts whatever the number of samples.
    `oversample` collects finer than `bins` for `resampled()`; a known `peak` fixes the range
    [-peak, peak] (or [0, peak]) from the start, so it never grows. With `channel_weights`
    (one per channel of an NCHW map) a value counts as its channel's weight (kernel_norms), and
    the plain counts are kept beside the weighted ones (`unweighted()`): the same pass over the
    values gives both.
    """

    def __init__(self, bins: int, signed: bool = False, oversample: int = 1, peak: float | None = None,
                 channel_weights: np.ndarray | None = None):
        self.result_bins = bins
        self.signed = signed
        self.side_bins = (bins // 2 if signed else bins) * oversample
        self.channel_weights = channel_weights
        self.counts = np.zeros(2 * self.side_bins if signed else self.side_bins,
                               dtype=np.int64 if channel_weights is None else np.float64)
        # a known peak (exact_range) fixes the range up front; else the first non-zero sample sets it
        self.fixed_range = peak is not None and peak > 0 and oversample == 1
        self.width = peak / self.side_bins if peak else 0.0
        if self.width and self.width * self.side_bins < peak:
            self.width = float(np.nextafter(self.width, math.inf))
        self.min = math.inf
        self.max = -math.inf
        self.pending_zeros = 0  # zeros seen before the range was known
        # with channel_weights: each bin's count of values, as a Histogram without weights keeps it
        self.unweighted_counts = None if channel_weights is None else np.zeros(self.counts.size, dtype=np.int64)
        self.unweighted_zeros = 0

    @property
    def max_abs(self) -> float:
        return max(abs(self.min), abs(self.max)) if self.max >= self.min else 0.0

    @property
    def upper(self) -> float:
        return self.width * self.side_bins

    @property
    def zero_bin(self) -> int:
        return self.side_bins if self.signed else 0

    def update(self, x: np.ndarray, clip: Bounds = None) -> None:
        """Fold the samples x[0], x[1], ... (clipped to `clip`) in order, as if each came in its
        own call: a run of samples inside the current range is one np.histogram (the counts of
        each value do not depend on its neighbours), a sample that sets or grows the range is
        folded alone."""
        values = np.asarray(x, dtype=np.float32)
        if values.size == 0:
            return
        # per sample, without a copy: activations are NCHW views of NHWC memory
        samples = values if values.ndim > 1 else values[:, None]
        sample_axes = tuple(range(1, samples.ndim))
        highs, lows = samples.max(axis=sample_axes), samples.min(axis=sample_axes)
        if clip is not None:
            highs, lows = np.clip(highs, *clip), np.clip(lows, *clip)
        if not (np.isfinite(highs).all() and np.isfinite(lows).all()):
            raise XnpuError("calibration produced a non-finite value (inf or nan) in the float graph")
        peaks = np.maximum(np.abs(highs), np.abs(lows))
        start = 0
        while start < len(samples):
            if self.width == 0.0 or peaks[start] > self.upper:
                self._fold(samples[start : start + 1], float(lows[start]), float(highs[start]), clip)
                start += 1
                continue
            beyond = np.flatnonzero(peaks[start:] > self.upper)
            stop = start + int(beyond[0]) if beyond.size else len(samples)
            self._fold(samples[start:stop], float(lows[start:stop].min()), float(highs[start:stop].max()), clip)
            start = stop

    def _fold(self, values: np.ndarray, low: float, high: float, clip: Bounds = None) -> None:
        self.min, self.max = min(self.min, low), max(self.max, high)
        peak = max(abs(low), abs(high))
        if peak == 0.0 and self.width == 0.0:
            weights = self.channel_weights
            self.pending_zeros += values.size if weights is None else values.size / weights.size * weights.sum()
            self.unweighted_zeros += values.size
            return
        if self.width == 0.0:
            self.width = peak / self.side_bins
            self.counts[self.zero_bin] += self.pending_zeros
            self.pending_zeros = 0
            if self.unweighted_counts is not None:
                self.unweighted_counts[self.zero_bin] += self.unweighted_zeros
                self.unweighted_zeros = 0
        elif peak > self.upper:
            self._merge_to_cover(peak)
        low, magnitudes = (-self.upper, False) if self.signed else (0.0, True)
        if self.channel_weights is None:
            self.counts += uniform_counts(values, self.counts.size, low, self.upper, magnitudes, clip)
            return
        axis = values.ndim - 3  # the channel of [samples, (1,) C, H, W]
        counts = channel_counts(values, axis, self.counts.size, low, self.upper, magnitudes, clip)
        for weight, channel in zip(self.channel_weights, counts):
            self.counts += weight * channel
        self.unweighted_counts += counts.sum(axis=0)

    def _merge_to_cover(self, peak: float) -> None:
        factor = math.ceil(peak / self.upper)
        while self.upper * factor < peak:  # guard against rounding in the division
            factor += 1
        self.counts = self._merged(self.counts, factor)
        if self.unweighted_counts is not None:
            self.unweighted_counts = self._merged(self.unweighted_counts, factor)
        self.width *= factor

    def _merged(self, counts: np.ndarray, factor: int) -> np.ndarray:
        if not self.signed:
            return _merge_bins(counts, factor)
        half = self.side_bins
        return np.concatenate([_merge_bins(counts[:half][::-1], factor)[::-1], _merge_bins(counts[half:], factor)])

    def unweighted(self) -> Histogram:
        """The histogram of the same values without channel weights (the one Histogram(...)
        without channel_weights would hold): the plain counts kept beside the weighted ones."""
        if self.unweighted_counts is None:
            return self
        plain = copy.copy(self)
        plain.channel_weights, plain.unweighted_counts, plain.unweighted_zeros = None, None, 0
        plain.counts, plain.pending_zeros = self.unweighted_counts.copy(), self.unweighted_zeros
        return plain

    def used(self) -> tuple[np.ndarray, np.ndarray]:
        """Counts and edges over the data's range only, as onnxruntime's one-shot histogram:
        up to the last non-empty bin (|x|), or symmetric about zero to the outermost one."""
        nonzero = np.flatnonzero(self.counts)
        if nonzero.size == 0:
            return self.counts[:0], np.zeros(1)
        if not self.signed:
            used_bins = int(nonzero[-1]) + 1
            return self.counts[:used_bins], np.arange(used_bins + 1) * self.width
        half = self.side_bins
        extent = max(half - int(nonzero[0]), int(nonzero[-1]) + 1 - half)
        return self.counts[half - extent : half + extent], np.arange(-extent, extent + 1) * self.width

    def resampled(self) -> tuple[np.ndarray, np.ndarray]:
        """`result_bins` counts over exactly [-max|x|, max|x|] (signed) or [0, max|x|]:
        onnxruntime's one-shot layout.

        Mass is taken as uniform inside each collected bin; with the collected histogram
        OVERSAMPLE times finer than the result, that assumption moves at most a small part of
        one result bin. A histogram collected over the exact range is returned as it is.
        """
        peak = self.max_abs
        total = float(self.counts.sum())
        bins = self.result_bins if not self.signed else 2 * (self.result_bins // 2)
        if peak == 0.0 or total == 0.0:
            return np.zeros(0), np.zeros(1)
        edges = np.linspace(-peak, peak, bins + 1) if self.signed else np.linspace(0.0, peak, bins + 1)
        if self.fixed_range:
            return self.counts.astype(np.float64), edges
        fine_edges = (np.arange(self.counts.size + 1) - self.zero_bin) * self.width
        cumulative = np.concatenate([[0.0], np.cumsum(self.counts, dtype=np.float64)])
        at_edges = np.interp(edges, fine_edges, cumulative)
        counts = np.diff(at_edges)
        # data lies within [min, max]; what the uniform assumption put outside belongs inside
        counts[0] += at_edges[0]
        counts[-1] += total - at_edges[-1]
        return counts, edges


class PeakHistogram:
    """A Histogram over exactly the range of everything it is given, when that comes in one
    call (all the samples in one batch): the range is taken from the data, as the first of
    exact_range's two runs would record it (RunningMax), and the histogram filled at once."""

    def __init__(self, bins: int, signed: bool, channel_weights: np.ndarray | None = None):
        self.bins, self.signed, self.channel_weights = bins, signed, channel_weights
        self.histogram: Histogram | None = None

    def update(self, x: np.ndarray, clip: Bounds = None) -> None:
        if self.histogram is not None:
            raise AssertionError("PeakHistogram takes all the samples in one call")
        values = np.asarray(x, dtype=np.float32)
        low, high = (clipped(float(values.min()), clip), clipped(float(values.max()), clip)) if values.size else (0, 0)
        if not (math.isfinite(low) and math.isfinite(high)):
            raise XnpuError("calibration produced a non-finite value (inf or nan) in the float graph")
        self.histogram = Histogram(self.bins, signed=self.signed, peak=max(high, -low),
                                   channel_weights=self.channel_weights)
        if values.size:  # every sample is inside the range: Histogram.update's per-sample scan would find no other
            self.histogram._fold(values if values.ndim > 1 else values[:, None], low, high, clip)

    def unweighted(self) -> PeakHistogram:
        """The PeakHistogram of the same values without channel weights (Histogram.unweighted)."""
        plain = PeakHistogram(self.bins, self.signed)
        plain.histogram = None if self.histogram is None else self.histogram.unweighted()
        return plain
