"""Calibration: run the float graph on sample inputs and record a symmetric scale per tensor.

Every float activation -- each `nn` op result except `nn.constant`, and every argument of the
entry function -- gets a scale `s > 0` with `x ~ q * s`, `q` in [-127, 127] (SEEDS.md, 000):

    minmax      s = max|x| / 127 over all samples (or, with batch_average, the mean of the
                per-batch max|x| / 127, as the original of 000 averages per-batch scales)
    percentile  s = T / 127, T the `percentile`-th percentile of |x| (onnxruntime's
                symmetric PercentileCalibrater rule on a histogram of |x|)
    entropy     s = max(|T_lo|, |T_hi|) / 127 from onnxruntime's EntropyCalibrater search
                (TensorRT's KL-divergence threshold search, 128 quantized levels over the
                window) on a two-sided histogram of x
    mse         s = T / 127, T the threshold with the least expected squared error of
                quantizing x at T / 127, clipping included, on a histogram of |x| (the
                default: it trades a few clipped outliers for a finer step everywhere);
                max|x| for a value the program returns or a softmax reads (is_answer)

A tensor that only depthwise convolutions read gets, under mse, the threshold of a histogram
weighing each channel by the norm of the kernels reading it where that clearly measures better
(calibrate_depthwise; docs/quantization.md). Where every sample runs in one batch, the
error deciding that is measured in the same run.

mse also measures each tensor as its consumers see it: a tensor read only by functions that
are constant beyond some bound (relu below 0, hard_swish below -3, hard_sigmoid outside
[-beta/alpha, (1-beta)/alpha], a clip outside its bounds) is observed clipped to the range
where they are not (`consumer_range`), since no value beyond it changes any consumer's
output. minmax, percentile and entropy observe the raw tensor, as onnxruntime does.

The scales live in the IR, so a calibrated model can be printed and compiled later:
`nn.scale = <f32>` on the op producing the tensor (on an `nn.onnx` host op, which may have
several results, `nn.result_scales = array<f32: ...>`, 0 for a result that is not float),
`nn.scale` in the argument's attribute dictionary (next to `nn.name`) for float function
inputs, `nn.weight_scales = array<f32: ...>` (one
per output channel, or one for the whole tensor) on `nn.conv2d` / `nn.conv_transpose2d` / `nn.gemm` with a constant
weight, and `nn.calibration = "<method>"` on the module. Values that are not float (a host
op's int64 or bool tensors) are not measured and get no scale.

With `bias_correction` (off by default) the same run also keeps the mean of each constant-weight
conv2d's, gemm's and matmul's input, recorded as `nn.input_mean` (input_mean_attr: per input
channel and kernel tap, or per column): lower-nn-to-fixed takes the int8 weights' mean error,
(rounded - float weights) times it, out of the int32 bias (bias correction, Nagel et al. 2019,
"Data-Free Quantization", from measured means instead of batch-norm statistics). With
per-channel weights it moves accuracy by little, and not always up (docs/quantization.md, "Bias
correction"), so it is a choice, not the default.

Statistics are streamed: samples run through the float graph in batches (N samples in one
pass where the graph keeps samples apart, xnpu.interpreters.batching; `calibration_batch`, by default as
many as fit a memory budget) and a listener folds each op result into a running max or a
histogram, in sample order, so memory does not grow with the number of samples (up to the
one run of exact_range below). A histogram starts with a fixed number of bins over the range of the first
sample that is not all zero; when a later sample exceeds the range, runs of k adjacent bins
(counted outward from zero) merge into one, k the smallest integer for which the range covers
the new value. Merging is exact -- the new edges are a subset of the old -- and keeps the bin
count fixed. onnxruntime instead builds one histogram over all the data's exact range; the
entropy histogram is therefore collected OVERSAMPLE times finer and resampled to `bins` bins over
the final range [-max|x|, max|x|] before the search. The KL search is sensitive to small
changes of the histogram (onnxruntime's own thresholds move by up to ~10% between feeding data
at once and sample by sample), so entropy by default takes two runs (`exact_range`): the first
finds each tensor's max|x|, the second fills histograms over exactly that range, which gives
onnxruntime's thresholds to float rounding. `exact_range=False` makes it a single run. Where
every sample fits one batch of the float graph (ONE_RUN_BYTES) the two runs are one: each
tensor's histogram is filled over exactly the range of the whole batch as soon as it is
computed (PeakHistogram), which is what the second run would have done.

A tensor that is zero on every sample gets the scale ZERO_RANGE_SCALE = 1/127 (as if its range
were [-1, 1]): any positive scale represents zero exactly, and a moderate one keeps the rescale
factors of its consumers in a normal range.
"""

from __future__ import annotations

import math
import sys
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
from tqdm import tqdm
from xdsl.context import Context
from xdsl.dialects import func
from xdsl.dialects.builtin import (
    ArrayAttr,
    DenseArrayBase,
    DictionaryAttr,
    FloatAttr,
    ModuleOp,
    StringAttr,
    f32,
)
from xdsl.ir import Operation, SSAValue
from xdsl.passes import ModulePass

from xnpu.core.array_io import load_arrays
from xnpu.core.errors import XnpuError
from xnpu.dialects import nn
from xnpu.interpreters.function import CompiledFunction, bind_inputs, default_batch, entry_function, signature
from xnpu.semantics import float_ops
from xnpu.transforms.calibrate_depthwise import (
    DEPTHWISE_ERROR_SAMPLES,
    Alternatives,
    choose_weighting,
    kernel_norms,
    unwrap_peak,
)
from xnpu.transforms.calibrate_entropy import ENTROPY_LEVELS, entropy_threshold
from xnpu.transforms.calibrate_onnx import onnx_float_run
from xnpu.transforms.calibrate_statistics import Histogram, PeakHistogram, RunningMax, RunningMean
from xnpu.transforms.calibrate_thresholds import QMAX, mse_threshold, percentile_threshold

SCALE_ATTR = "nn.scale"
RESULT_SCALES_ATTR = "nn.result_scales"  # on an nn.onnx op: one scale per result, 0 where it is not float
WEIGHT_SCALES_ATTR = "nn.weight_scales"
INPUT_MEAN_ATTR = "nn.input_mean"  # what each weight multiplies on average: lower-nn-to-fixed's bias correction
CALIBRATION_ATTR = "nn.calibration"

METHODS = ("minmax", "percentile", "entropy", "mse")
DEFAULT_METHOD = "mse"
RUNTIMES = ("onnxruntime", "interpreter")  # what runs the float graph (collect_statistics)
DEFAULT_RUNTIME = "onnxruntime"
ZERO_RANGE_SCALE = 1.0 / QMAX
MIN_HISTOGRAM_BINS = ENTROPY_LEVELS
OVERSAMPLE = 16  # the entropy histogram is collected this much finer than it is searched
# exact_range's two runs of the float graph become one where every sample fits one batch of at
# most this much memory (CompiledFunction.sample_bytes): resnet18_like's 32 calibration images
# are ~340 MB
ONE_RUN_BYTES = 512 << 20


def scale_from_threshold(threshold: float, pow2: bool = False) -> float:
    """The symmetric int8 scale for |x| <= threshold, rounded to f32 as the IR stores it.

    `pow2` rounds it up to a power of two (x = q / 2^s, seed 001's data format): the
    range still fits, at up to half the resolution.
    """
    threshold = float(threshold)
    if not threshold > 0 or not math.isfinite(threshold):
        scale = ZERO_RANGE_SCALE
    else:
        scale = threshold / QMAX
    if pow2:
        return float(2.0 ** math.ceil(math.log2(scale)))
    return float(np.float32(scale))


def consumer_range(value: SSAValue) -> tuple[float, float] | None:
    """The interval outside which no consumer of `value` can tell two values apart: every use
    is a function constant below (and above) some bound. None when a use is anything else."""
    low, high = math.inf, -math.inf
    if not value.uses:
        return None
    for use in value.uses:
        op = use.operation
        bounds = op.flat_range() if isinstance(op, nn.HasFlatRange) else None
        if bounds is None:
            return None
        low, high = min(low, bounds[0]), max(high, bounds[1])
    return low, high


def is_answer(value: SSAValue) -> bool:
    """A value the program returns or a softmax reads: there the largest values are the answer
    (the top class), so mse keeps its full range rather than trade them for the many small ones."""
    return any(isinstance(use.operation, (func.ReturnOp, nn.SoftmaxOp)) for use in value.uses)


# --------------------------------------------------------------------------------------
# Running the float graph and observing every result
# --------------------------------------------------------------------------------------


class StatisticsListener:
    """Folds every float op result into the statistic of the value it defines.

    With `batched`, arrays hold samples along axis 0 (xnpu.interpreters.batching); otherwise each array
    is one sample.
    """

    def __init__(self, make_statistic: Callable[[SSAValue], RunningMax | Histogram], batched: bool = False,
                 consumer_ranges: bool = False, means: Mapping[SSAValue, RunningMean] | None = None):
        self.make_statistic = make_statistic
        self.batched = batched
        self.consumer_ranges = consumer_ranges
        self.means = means or {}
        self.ranges: dict[SSAValue, tuple[float, float] | None] = {}
        self.statistics: dict[SSAValue, RunningMax | Histogram] = {}

    def observe(self, value: SSAValue, array: np.ndarray) -> None:
        if not nn.is_float(value):
            return  # a host op's integer or bool values are not quantized
        statistic = self.statistics.get(value)
        if statistic is None:
            statistic = self.statistics[value] = self.make_statistic(value)
            bounds = consumer_range(value) if self.consumer_ranges else None
            # in float32, as np.clip of a float32 array takes them (NEP 50)
            self.ranges[value] = None if bounds is None else tuple(float(np.float32(b)) for b in bounds)
        array = np.asarray(array)
        statistic.update(array if self.batched and array.ndim else array[None], self.ranges[value])
        mean = self.means.get(value)
        if mean is not None:
            mean.update(array)

    def did_interpret_op(self, op: Operation, results: tuple[Any, ...]) -> None:
        if op.dialect_name() != "nn" or isinstance(op, nn.ConstantOp):
            return
        for value, array in zip(op.results, results):
            self.observe(value, array)


def _show_progress(progress: bool | None) -> bool:
    if progress is not None:
        return progress
    return sys.stderr.isatty()


def _progress_bar(total: int, enabled: bool, description: str):
    return tqdm(total=total, desc=description, unit="sample", file=sys.stderr, disable=not enabled, leave=False)


def _check_options(method: str, percentile: float, bins: int, batch_average: bool, batch_size: int,
                   calibration_batch: int | None = None) -> None:
    if method not in METHODS:
        raise XnpuError(f"unknown calibration method '{method}'; use one of: {', '.join(METHODS)}")
    if not 0.0 < percentile <= 100.0:
        raise XnpuError(f"percentile must be in (0, 100], got {percentile}")
    if method != "minmax" and bins < MIN_HISTOGRAM_BINS:
        raise XnpuError(f"bins must be at least {MIN_HISTOGRAM_BINS} for method={method}, got {bins}")
    if batch_average and method != "minmax":
        raise XnpuError("batch_average applies to method=minmax only")
    if batch_size < 1:
        raise XnpuError(f"batch_size must be >= 1, got {batch_size}")
    if calibration_batch is not None and calibration_batch < 1:
        raise XnpuError(f"calibration_batch must be >= 1, got {calibration_batch}")


def collect_statistics(
    module: ModuleOp,
    data: np.ndarray | Mapping[str, np.ndarray],
    make_statistic: Callable[[SSAValue], RunningMax | Histogram],
    batch_size: int = 1,
    progress: bool | None = None,
    description: str = "calibrate",
    calibration_batch: int | None = None,
    average_batches: bool = False,
    consumer_ranges: bool = False,
    one_run: bool = False,
    runtime: str = DEFAULT_RUNTIME,
    first_samples: int | None = None,
    means: Mapping[SSAValue, RunningMean] | None = None,
) -> dict[SSAValue, RunningMax | Histogram] | None:
    """Run the entry function on the samples; returns a statistic per argument and op result.

    With `runtime` "onnxruntime" the module's ONNX model runs on onnxruntime where every value
    measured is one of its tensors (calibrate_onnx), unless only the interpreter fits `one_run`;
    otherwise, and with "interpreter", the float interpreter runs the module.
    Samples run `calibration_batch` at a time (default: xnpu.interpreters.function.default_batch, as many as
    fit its memory budget) where the function keeps samples apart (xnpu.interpreters.batching), else one
    at a time; every statistic folds them in sample order. With `average_batches` a run
    never spans two of batch_average's groups of `batch_size` samples. With `consumer_ranges`
    a value is observed clipped to its consumer_range. With `one_run` every sample runs in one
    batch, each statistic updated once; None (nothing run) where they do not fit ONE_RUN_BYTES
    or the function cannot run samples together. `means` (input_means) are updated with the
    values they are kept for.
    """
    input_specs, _ = signature(module)
    bound = bind_inputs(input_specs, data)
    samples = bound.samples if first_samples is None else min(bound.samples, first_samples)
    listener = StatisticsListener(make_statistic, consumer_ranges=consumer_ranges, means=means)
    # one run holds all the samples, in segments of the graph that fit
    run = onnx_float_run(module, input_specs, listener.observe, samples if one_run else None
                         ) if runtime == "onnxruntime" else None
    fits_one_run = lambda run: run.batched and samples * run.sample_bytes() <= ONE_RUN_BYTES and (  # noqa: E731
        calibration_batch is None or calibration_batch >= samples)
    if run is None or (one_run and not fits_one_run(run)):
        try:
            run = CompiledFunction(module, listeners=(listener,))
        except CompiledFunction.CannotCompile as error:
            raise XnpuError(f"cannot calibrate: {error}") from None
    size = 1
    if one_run:
        if not fits_one_run(run):
            return None
        size = samples
        listener.batched = True
    elif run.batched:
        size = calibration_batch or default_batch(run)
        listener.batched = True
    arguments = entry_function(module).body.blocks.first.args
    with _progress_bar(samples, _show_progress(progress), description) as bar:
        start = 0
        while start < samples:
            stop = min(samples, start + size)
            if average_batches:
                stop = min(stop, (start // batch_size + 1) * batch_size)
            chunk = tuple(np.ascontiguousarray(array) for array in bound.take(start, stop))
            for argument, array in zip(arguments, chunk):
                listener.observe(argument, array)
            run(chunk)
            if stop % batch_size == 0 or stop == samples:
                for statistic in listener.statistics.values():
                    if isinstance(statistic, RunningMax):
                        statistic.end_batch()
            bar.update(stop - start)
            start = stop
    return listener.statistics


# --------------------------------------------------------------------------------------
# Weights
# --------------------------------------------------------------------------------------


def weight_scales(op: nn.ConvolutionOp | nn.GemmOp, per_channel: bool) -> np.ndarray | None:
    """Symmetric scales of a constant weight: one per output channel, or one per tensor."""
    weight_value = op.b if isinstance(op, nn.GemmOp) else op.weight
    owner = weight_value.owner
    if not isinstance(owner, nn.ConstantOp):
        return None
    weight = np.abs(owner.to_numpy())
    if isinstance(op, nn.ConvTranspose2dOp):
        # C x O/group x KH x KW: its convolution form has the output channels as rows
        weight, _ = float_ops.conv_transpose_as_conv(weight, (0, 0, 0, 0), (1, 1), (0, 0), op.group.value.data)
    if not per_channel:
        peaks = np.array([weight.max() if weight.size else 0.0])
    elif isinstance(op, nn.ConvolutionOp):
        peaks = weight.reshape(weight.shape[0], -1).max(axis=1)  # OIHW: O is the output channel
    else:
        # B is K x N, or N x K with trans_b; N is the output channel
        peaks = weight.max(axis=1 if op.trans_b.value.data else 0)
    return np.array([scale_from_threshold(p) for p in peaks], dtype=np.float32)


def weighted_input(op: Operation) -> SSAValue | None:
    """The activation a constant weight multiplies: of a conv2d, a gemm (A not transposed) or a
    matmul by a 2-D constant; None for any other op."""
    if isinstance(op, nn.Conv2dOp) and isinstance(op.weight.owner, nn.ConstantOp):
        return op.input
    if isinstance(op, nn.GemmOp) and not op.trans_a.value.data and isinstance(op.b.owner, nn.ConstantOp):
        return op.a
    if (isinstance(op, nn.MatMulOp) and isinstance(op.rhs.owner, nn.ConstantOp) and len(nn.shape_of(op.rhs)) == 2
            and len(nn.shape_of(op.lhs)) >= 2):
        return op.lhs
    return None


def input_means(module: ModuleOp) -> dict[SSAValue, RunningMean]:
    """A running mean of each weighted op's input: per channel and position of a conv's map
    (its window geometry is applied afterwards), per column of a gemm's or matmul's rows."""
    trailing: dict[SSAValue, int] = {}
    for op in entry_function(module).walk():
        value = weighted_input(op)
        if value is not None:  # a map a conv and a matmul both read keeps the conv's detail
            trailing[value] = max(trailing.get(value, 1), 3 if isinstance(op, nn.Conv2dOp) else 1)
    return {value: RunningMean(axes) for value, axes in trailing.items()}


def input_mean_attr(op: Operation, mean: np.ndarray | None) -> DenseArrayBase | None:
    """`nn.input_mean`: the calibration samples' mean of what each weight multiplies. Of a
    conv2d, per input channel and kernel tap ([C, KH, KW], row-major), the map's mean over the
    output positions that tap reads, zero padding included; of a gemm or matmul, per column of
    its input rows ([K]). lower-nn-to-fixed subtracts (int8 weights - float weights) times it
    from the bias, so the rounding of the weights adds no error on average (bias correction,
    Nagel et al. 2019, from the measured input means)."""
    if mean is None:
        return None
    if isinstance(op, nn.Conv2dOp):
        kh, kw = nn.shape_of(op.weight)[2:]
        (sh, sw), (dh, dw) = nn.ints(op.strides), nn.ints(op.dilations)
        oh, ow = nn.shape_of(op.result)[2:]
        padded = float_ops.pad_nchw(mean[None], nn.ints(op.pads))[0]
        taps = np.empty((mean.shape[0], kh, kw))
        for i in range(kh):
            for j in range(kw):
                window = padded[:, i * dh : i * dh + (oh - 1) * sh + 1 : sh, j * dw : j * dw + (ow - 1) * sw + 1 : sw]
                taps[:, i, j] = window.mean(axis=(1, 2))
        mean = taps
    else:  # per column: the mean of equal-sized rows' means, where a conv kept more detail
        mean = mean.reshape(-1, mean.shape[-1]).mean(axis=0)
    return DenseArrayBase.from_list(f32, [float(v) for v in mean.reshape(-1)])


# --------------------------------------------------------------------------------------
# The API and the pass
# --------------------------------------------------------------------------------------


def _scale_attr(scale: float) -> FloatAttr:
    return FloatAttr(scale, f32)


def annotate_arguments(function: func.FuncOp, scales: list[float | None]) -> None:
    """`nn.scale` on each argument with a scale (None: a value that is not float keeps none)."""
    existing = function.arg_attrs.data if function.arg_attrs is not None else ()
    dictionaries = []
    for index, scale in enumerate(scales):
        entries = dict(existing[index].data) if index < len(existing) else {}
        if scale is None:
            entries.pop(SCALE_ATTR, None)
            dictionaries.append(DictionaryAttr(entries))
            continue
        entries[SCALE_ATTR] = _scale_attr(scale)
        dictionaries.append(DictionaryAttr(entries))
    function.arg_attrs = ArrayAttr(dictionaries)


def calibrate(
    module: ModuleOp,
    data: np.ndarray | Mapping[str, np.ndarray],
    method: str = DEFAULT_METHOD,
    percentile: float = 99.99,
    bins: int = 2048,
    per_channel_weights: bool = True,
    batch_average: bool = False,
    progress: bool | None = None,
    batch_size: int = 1,
    exact_range: bool | None = None,
    pow2: bool = False,
    calibration_batch: int | None = None,
    consumer_ranges: bool | None = None,
    depthwise_weights: bool | None = None,
    runtime: str = DEFAULT_RUNTIME,
    bias_correction: bool = False,
) -> ModuleOp:
    """Record `nn.scale` on every float activation and `nn.weight_scales` on conv/gemm.

    `data` holds N samples along the batch axis (an array for a single-input model, or a
    mapping input name -> array, as `xnpu.run`). `batch_average` (minmax only) averages the
    per-batch max|x| / 127 over batches of `batch_size` samples instead of taking the max
    over all. `exact_range` (percentile, entropy) runs the data twice: first for each
    tensor's max|x|, then into histograms over exactly that range, which is onnxruntime's
    one-shot histogram and reproduces its thresholds; without it one run grows the
    histograms as data arrives. By default it is on for entropy, whose KL search reacts to
    small changes of the histogram, and mse, and off for percentile. `consumer_ranges`
    observes each tensor clipped to the range its consumers can tell apart (consumer_range;
    default: on for mse only). `depthwise_weights` (mse, with exact_range) weighs a tensor only
    depthwise convolutions read by their kernels (kernel_norms): True always, False never,
    None (the default) where that cuts the error measured at the convolutions' outputs by
    more than a quarter (_choose_depthwise_weighting). `pow2` rounds every activation
    scale up to a power of two (weights keep their scales). `progress` shows a bar on stderr (default: when stderr is a
    terminal). `runtime` runs the float graph: "onnxruntime" (the model a module imported from ONNX
    came from, where its tensors hold every value measured, else the interpreter) or
    "interpreter"; the scales agree to float rounding. `calibration_batch` samples run through the float graph at once (default: as
    many as fit xnpu.interpreters.function.BATCH_MEMORY_BYTES, at most MAX_BATCH); the scales do not depend
    on it beyond float rounding. `bias_correction` records each constant-weight conv's, gemm's and
    matmul's `nn.input_mean` (input_mean_attr), from which lower-nn-to-fixed takes the mean error
    of its int8 weights out of its bias. Modifies `module` in place and returns it.
    """
    _check_options(method, percentile, bins, batch_average, batch_size, calibration_batch)
    if runtime not in RUNTIMES:
        raise XnpuError(f"unknown calibration runtime '{runtime}'; use one of: {', '.join(RUNTIMES)}")
    if consumer_ranges is None:
        consumer_ranges = method == "mse"
    means = input_means(module) if bias_correction else {}
    make_statistic: Callable[[SSAValue], RunningMax | Histogram]
    if method == "minmax":
        make_statistic = lambda value: RunningMax(batch_average)
    elif exact_range or (exact_range is None and method in ("entropy", "mse")):
        weigh = method == "mse" and depthwise_weights is not False

        def either(value: SSAValue, make: Callable[[np.ndarray | None], Any], one_run: bool = False):
            """The plain statistic; the weighted one (depthwise_weights), or both (None: measured,
            in the same update where it takes every sample at once)."""
            norms = kernel_norms(value) if weigh else None
            if norms is None:
                return make(None)
            if depthwise_weights:
                return make(norms)
            return Alternatives(make(norms), value, _mse_scale) if one_run else Alternatives(make(norms))

        one_run = collect_statistics(module, data,
                                     lambda value: either(value, lambda w: PeakHistogram(bins, method == "entropy", w),
                                                          one_run=True),
                                     batch_size, progress, "calibrate", calibration_batch,
                                     consumer_ranges=consumer_ranges, one_run=True, runtime=runtime, means=means)
        if one_run is not None:
            histograms = {value: unwrap_peak(statistic) for value, statistic in one_run.items()}
            _choose_depthwise_weighting(module, data, histograms, progress, calibration_batch, runtime)
            return _annotate(module, histograms, method, percentile, per_channel_weights, pow2, means)
        ranges = collect_statistics(module, data, lambda value: RunningMax(), 1, progress, "calibrate (ranges)",
                                    calibration_batch, consumer_ranges=consumer_ranges, runtime=runtime)
        histograms = collect_statistics(
            module, data, lambda value: either(value, lambda w: Histogram(bins, signed=method == "entropy",
                                                                          peak=ranges[value].max_abs, channel_weights=w)),
            batch_size, progress, "calibrate", calibration_batch, consumer_ranges=consumer_ranges, runtime=runtime,
            means=means)
        _choose_depthwise_weighting(module, data, histograms, progress, calibration_batch, runtime)
        return _annotate(module, histograms, method, percentile, per_channel_weights, pow2, means)
    elif method == "entropy":
        make_statistic = lambda value: Histogram(bins, signed=True, oversample=OVERSAMPLE)
    else:
        make_statistic = lambda value: Histogram(bins)
    statistics = collect_statistics(module, data, make_statistic, batch_size, progress, "calibrate",
                                    calibration_batch, average_batches=batch_average, consumer_ranges=consumer_ranges,
                                    runtime=runtime, means=means)
    return _annotate(module, statistics, method, percentile, per_channel_weights, pow2, means)


def _mse_scale(histogram: Histogram) -> float:
    return scale_from_threshold(mse_threshold(histogram))


def _choose_depthwise_weighting(module: ModuleOp, data: np.ndarray | Mapping[str, np.ndarray],
                                statistics: dict[SSAValue, Any], progress: bool | None,
                                calibration_batch: int | None, runtime: str) -> None:
    choose_weighting(statistics, _mse_scale,
                     lambda make_statistic: collect_statistics(
                         module, data, make_statistic, 1, progress, "calibrate (depthwise error)", calibration_batch,
                         first_samples=DEPTHWISE_ERROR_SAMPLES, runtime=runtime))


def _annotate(module: ModuleOp, statistics: Mapping[SSAValue, RunningMax | Histogram], method: str,
              percentile: float, per_channel_weights: bool, pow2: bool,
              means: Mapping[SSAValue, RunningMean]) -> ModuleOp:
    """The scales from the statistics, recorded in the IR (the module docstring says where)."""

    def threshold_of(value: SSAValue) -> float:
        statistic = statistics.get(value)
        if statistic is None:
            return 0.0
        if isinstance(statistic, RunningMax):
            return statistic.threshold()
        if method == "percentile":
            return percentile_threshold(statistic, percentile)
        if method == "mse":
            return statistic.max_abs if is_answer(value) else mse_threshold(statistic)
        return entropy_threshold(statistic)

    function = entry_function(module)
    annotate_arguments(function, [scale_from_threshold(threshold_of(a), pow2) if nn.is_float(a) else None
                                  for a in function.body.blocks.first.args])
    for op in function.walk():
        if op.dialect_name() != "nn" or isinstance(op, nn.ConstantOp):
            continue
        if isinstance(op, nn.OnnxOp):  # one scale per result (0 where it is not float)
            op.attributes[RESULT_SCALES_ATTR] = DenseArrayBase.from_list(
                f32, [scale_from_threshold(threshold_of(r), pow2) if nn.is_float(r) else 0.0 for r in op.results])
            continue
        # every other nn op has exactly one result
        op.attributes[SCALE_ATTR] = _scale_attr(scale_from_threshold(threshold_of(op.results[0]), pow2))
        if isinstance(op, (nn.ConvolutionOp, nn.GemmOp)):
            scales = weight_scales(op, per_channel_weights)
            if scales is not None:
                op.attributes[WEIGHT_SCALES_ATTR] = DenseArrayBase.from_list(f32, [float(s) for s in scales])
            else:
                op.attributes.pop(WEIGHT_SCALES_ATTR, None)
        mean = means.get(weighted_input(op))
        attribute = None if mean is None else input_mean_attr(op, mean.mean())
        if attribute is None:
            op.attributes.pop(INPUT_MEAN_ATTR, None)
        else:
            op.attributes[INPUT_MEAN_ATTR] = attribute
    module.attributes[CALIBRATION_ATTR] = StringAttr(method)
    return module


def load_calibration_data(path: str | Path) -> np.ndarray | dict[str, np.ndarray]:
    """An .npy array (memory-mapped, so samples are read as they run) or an .npz of named
    arrays, read by the loader every tool shares (xnpu.core.array_io)."""

    if not Path(path).exists():
        raise XnpuError(f"{path}: calibration data file not found")
    return load_arrays(path, mmap=True)


def bind_archive(module: ModuleOp, data: dict[str, np.ndarray]) -> np.ndarray | dict[str, np.ndarray]:
    """An .npz with one array feeds a single-input model whatever its key (np.savez names it arr_0)."""
    input_specs, _ = signature(module)
    if len(data) == 1 and len(input_specs) == 1 and input_specs[0].name not in data:
        return next(iter(data.values()))
    return data


@dataclass(frozen=True)
class CalibratePass(ModulePass):
    """Calibrate the float graph on the samples in `data` (.npy, or .npz of named inputs)."""

    name = "calibrate"

    data: str
    method: str = DEFAULT_METHOD
    percentile: float = 99.99
    bins: int = 2048
    per_channel: bool = True
    batch_average: bool = False
    batch_size: int = 1
    exact_range: bool | None = None
    pow2: bool = False
    calibration_batch: int | None = None
    consumer_ranges: bool | None = None
    depthwise_weights: bool | None = None
    bias_correction: bool = False

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        _check_options(self.method, self.percentile, self.bins, self.batch_average, self.batch_size,
                       self.calibration_batch)
        data = load_calibration_data(self.data)
        if isinstance(data, dict):
            data = bind_archive(op, data)
        calibrate(
            op,
            data,
            method=self.method,
            percentile=self.percentile,
            bins=self.bins,
            per_channel_weights=self.per_channel,
            batch_average=self.batch_average,
            batch_size=self.batch_size,
            exact_range=self.exact_range,
            pow2=self.pow2,
            calibration_batch=self.calibration_batch,
            consumer_ranges=self.consumer_ranges,
            depthwise_weights=self.depthwise_weights,
            bias_correction=self.bias_correction,
        )
