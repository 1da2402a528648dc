"""mse's weighting of a tensor that only depthwise convolutions read (transforms/calibrate.py,
docs/quantization.md): each value counts as the norm of the kernels reading its channel
(`kernel_norms`), and by default a tensor keeps that weighting only where it measures better:
the plain and the weighted threshold are both computed, and the weighted one is kept where its
quantization leaves clearly less squared error at the depthwise convolutions' outputs on the
first calibration samples (`OutputError`, `choose_weighting`)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np
from xdsl.ir import SSAValue

from xnpu.dialects import nn
from xnpu.semantics import float_ops
from xnpu.transforms.calibrate_thresholds import QMAX

# The weighting clips a tensor's large channels for finer steps of its small ones. The error
# at the depthwise convolutions' outputs counts clipping like rounding; later layers average
# rounding noise away but not a clipped peak, so the weighting is taken only where it cuts
# that error by more than a quarter: on layout_cdla it cuts it to 0.2-0.75 on 20 of its 31
# such tensors, on mobilenetv3_like to 0.95 at best (docs/quantization.md).
DEPTHWISE_GAIN = 0.75
DEPTHWISE_ERROR_SAMPLES = 8  # the first calibration samples that error is measured on


def depthwise_readers(value: SSAValue) -> list[nn.Conv2dOp] | None:
    """The depthwise convolutions (constant kernels) reading NCHW `value` as their input, when
    nothing else reads it; None otherwise."""
    readers = []
    for use in value.uses:
        conv = use.operation
        if not isinstance(conv, nn.Conv2dOp) or use.index != 0 or not isinstance(conv.weight.owner, nn.ConstantOp):
            return None
        channels = nn.shape_of(value)[1]
        if conv.group.value.data != channels or channels == 1:
            return None
        readers.append(conv)
    return readers or None


def kernel_norms(value: SSAValue) -> np.ndarray | None:
    """Per channel of an NCHW map that only depthwise convolutions read, the norm of the kernels
    that read it: mse weighs each value's error by it (the error a depthwise kernel passes on
    grows with its norm). None for any other tensor. Batch norm folded into a depthwise conv
    gives large kernels to the channels of small range: unweighted, mse keeps the range of
    the few large channels and rounds those to a few steps (layout_cdla: docs/quantization.md)."""
    readers = depthwise_readers(value)
    if readers is None:
        return None
    channels = nn.shape_of(value)[1]
    squares = sum((conv.weight.owner.to_numpy().astype(np.float64).reshape(channels, -1) ** 2).sum(axis=1)
                  for conv in readers)
    return np.sqrt(squares)


class Alternatives:
    """The plain and the kernel-weighted statistic of one tensor: the weighted one keeps the
    plain counts beside its own (Histogram.unweighted), so one pass over the values fills both.
    With `value` and `scale_of` (a PeakHistogram given every sample in one update), the error
    choose_weighting compares is measured in that same update, on the first
    DEPTHWISE_ERROR_SAMPLES samples, instead of in a run of its own."""

    def __init__(self, weighted, value: SSAValue | None = None, scale_of: Callable[[Any], float] | None = None):
        self.weighted, self.value, self.scale_of = weighted, value, scale_of
        self.errors: np.ndarray | None = None  # OutputError.errors of the plain and the weighted scale

    @property
    def plain(self):
        return self.weighted.unweighted()

    def update(self, x: np.ndarray, clip=None) -> None:
        self.weighted.update(x, clip)
        if self.scale_of is None:
            return
        histograms = unwrap_peak(self)
        scales = [self.scale_of(histogram) for histogram in (histograms.plain, histograms.weighted)]
        if scales[0] != scales[1]:
            error = OutputError(self.value, scales)
            error.update(np.asarray(x)[:DEPTHWISE_ERROR_SAMPLES])
            self.errors = error.errors


class NotMeasured:
    """The statistic of a tensor the error run does not look at."""

    def update(self, x: np.ndarray, clip=None) -> None:
        pass


class OutputError:
    """For each candidate scale of a tensor only depthwise convolutions read, the squared error
    its int8 quantization (round, clip to +-qmax) leaves at their outputs, summed over the
    samples: the convolution is linear, so that error is the convolution of the quantization
    error, without bias."""

    def __init__(self, value: SSAValue, scales: list[float], qmax: int = QMAX):
        self.convs = depthwise_readers(value) or []
        self.sample_shape = tuple(nn.shape_of(value)[1:])
        self.scales, self.qmax = scales, qmax
        self.errors = np.zeros(len(scales))

    def update(self, x: np.ndarray, clip=None) -> None:  # no clip: only depthwise convolutions read x
        x = np.asarray(x, np.float32).reshape(-1, *self.sample_shape)  # [samples, (1,) C, H, W] -> [N, C, H, W]
        for index, scale in enumerate(self.scales):
            error = np.clip(np.round(x / np.float32(scale)), -self.qmax, self.qmax) * np.float32(scale) - x
            for conv in self.convs:
                out = float_ops.conv2d_accumulate(error, conv.weight.owner.to_numpy(), nn.ints(conv.strides),
                                                  nn.ints(conv.pads), nn.ints(conv.dilations), conv.group.value.data)
                self.errors[index] += float(np.square(out, dtype=np.float64).sum())



def unwrap_peak(statistic: Any) -> Any:
    """A PeakHistogram's histogram, of each of Alternatives' two (with the errors measured)."""
    if isinstance(statistic, Alternatives):
        unwrapped = Alternatives(statistic.weighted.histogram)
        unwrapped.errors = statistic.errors
        return unwrapped
    return statistic.histogram


def choose_weighting(statistics: dict[SSAValue, Any], scale_of: Callable[[Any], float],
                     measure: Callable[[Callable[[SSAValue], Any]], dict[SSAValue, Any]]) -> None:
    """Replace each tensor's plain and weighted histograms (Alternatives) by one: the weighted
    where the scale of its threshold (`scale_of`) leaves less than DEPTHWISE_GAIN times the
    plain one's squared error at the outputs of the depthwise convolutions reading the tensor
    (OutputError; `measure` runs the first DEPTHWISE_ERROR_SAMPLES samples with a statistic
    per tensor, only where the two scales differ and the errors were not measured as the
    statistics were filled), else the plain."""
    contested: dict[SSAValue, list[float]] = {}
    for value, statistic in statistics.items():
        if isinstance(statistic, Alternatives):
            plain = statistic.plain
            scales = [scale_of(histogram) for histogram in (plain, statistic.weighted)]
            if scales[0] == scales[1]:
                statistics[value] = plain
            else:
                contested[value] = scales
    unmeasured = {value for value in contested if statistics[value].errors is None}
    errors = measure(lambda value: OutputError(value, contested[value], QMAX) if value in unmeasured else NotMeasured()
                     ) if unmeasured else {}
    for value in contested:
        plain_error, weighted_error = statistics[value].errors if value not in unmeasured else errors[value].errors
        chosen = statistics[value]
        statistics[value] = chosen.weighted if weighted_error < DEPTHWISE_GAIN * plain_error else chosen.plain
