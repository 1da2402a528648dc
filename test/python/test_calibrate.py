"""Calibration: scales per tensor, weight scales per channel, agreement with onnxruntime."""

from __future__ import annotations

import contextlib
import io
import os
import signal
import tracemalloc
from pathlib import Path

import numpy as np
import pytest
from xdsl.dialects import func
from xdsl.dialects.builtin import DenseArrayBase, FloatAttr, FunctionType, ModuleOp, NameLoc, TensorType, f32
from xdsl.ir import Block, Region
from xdsl.utils.arg_spec import parse_pipeline

import xnpu
from xnpu.ir.context import make_context
from xnpu.dialects import nn
from xnpu.core.errors import XnpuError
from xnpu.driver.registry import all_passes
from xnpu.semantics import float_ops
from xnpu.transforms import calibrate as calibrate_module
from xnpu.transforms import calibrate_statistics
from xnpu.transforms.calibrate_depthwise import DEPTHWISE_GAIN
from xnpu.transforms.calibrate import (
    DEFAULT_METHOD,
    ZERO_RANGE_SCALE,
    calibrate,
    entropy_threshold,
    mse_threshold,
    percentile_threshold,
)
from xnpu.transforms.calibrate_statistics import Histogram, channel_counts, uniform_counts

pytestmark = pytest.mark.float_sums  # results went through float sums: `make blas-variance` reruns them

SHARED = Path(__file__).resolve().parents[2] / ".." / "shared" / "bench"
DIGITS = SHARED / "digits"
needs_digits = pytest.mark.skipif(
    not (DIGITS / "digits_plain.onnx").is_file(), reason=f"benchmark models not found at {DIGITS}"
)


def f32_scale(threshold: float) -> float:
    return float(np.float32(threshold / 127))


# --------------------------------------------------------------------------------------
# A small hand-built module whose tensors numpy recomputes independently
# --------------------------------------------------------------------------------------

RNG = np.random.default_rng(7)
CONV_W = RNG.standard_normal((3, 2, 3, 3)).astype(np.float32)
CONV_W[1] *= 0.1  # channels of different magnitude: per-channel scales must differ
CONV_B = RNG.standard_normal(3).astype(np.float32)
GEMM_B = RNG.standard_normal((4, 3)).astype(np.float32)  # N x K, used with trans_b
GEMM_B[2] *= 5.0


def tiny_module() -> ModuleOp:
    """conv -> (relu, sigmoid) -> mul -> global average pool -> flatten -> gemm(trans_b)."""
    block = Block(arg_types=[TensorType(f32, (1, 2, 5, 5))])
    x = block.args[0]
    conv_w, conv_b, gemm_b = nn.ConstantOp(CONV_W), nn.ConstantOp(CONV_B), nn.ConstantOp(GEMM_B)
    conv = nn.Conv2dOp(x, conv_w.result, conv_b.result, pads=(1, 1, 1, 1))
    relu = nn.ReluOp(conv.result)
    sigmoid = nn.SigmoidOp(conv.result)
    mul = nn.MulOp(relu.result, sigmoid.result)
    pool = nn.GlobalAveragePoolOp(mul.result)
    flat = nn.FlattenOp(pool.result, 1)
    gemm = nn.GemmOp(flat.result, gemm_b.result, None, trans_b=True)
    ops = [conv_w, conv_b, gemm_b, conv, relu, sigmoid, mul, pool, flat, gemm, func.ReturnOp(gemm.result)]
    block.add_ops(ops)
    function = func.FuncOp("main", FunctionType.from_lists([x.type], [gemm.result.type]), Region(block))
    module = ModuleOp([function])
    module.verify()
    return module


def tiny_tensors(sample: np.ndarray) -> dict[str, np.ndarray]:
    """Every activation of tiny_module, by op name, from the float semantics directly."""
    conv = float_ops.conv2d(sample, CONV_W, CONV_B, (1, 1), (1, 1, 1, 1), (1, 1), 1)
    relu = float_ops.relu(conv)
    sigmoid = float_ops.sigmoid(conv)
    mul = float_ops.mul(relu, sigmoid)
    pool = float_ops.global_average_pool(mul)
    flat = float_ops.flatten(pool, 1)
    gemm = float_ops.gemm(flat, GEMM_B, None, 1.0, 1.0, False, True)
    return {
        "input": sample, "nn.conv2d": conv, "nn.relu": relu, "nn.sigmoid": sigmoid, "nn.mul": mul,
        "nn.global_average_pool": pool, "nn.flatten": flat, "nn.gemm": gemm,
    }


def recorded_scales(module: ModuleOp) -> dict[str, float]:
    function = next(op for op in module.ops if isinstance(op, func.FuncOp))
    scales = {"input": function.arg_attrs.data[0].data["nn.scale"].value.data}
    for op in function.walk():
        if "nn.scale" in op.attributes:
            scales[op.name] = op.attributes["nn.scale"].value.data
    return scales


TINY_DATA = (RNG.standard_normal((12, 2, 5, 5)) * np.linspace(0.5, 3.0, 12)[:, None, None, None]).astype(np.float32)


def test_minmax_is_max_abs_over_127_of_every_tensor():
    module = calibrate(tiny_module(), TINY_DATA, method="minmax")
    per_sample = [tiny_tensors(TINY_DATA[i : i + 1]) for i in range(len(TINY_DATA))]
    expected = {name: f32_scale(max(np.abs(t[name]).max() for t in per_sample)) for name in per_sample[0]}
    assert recorded_scales(module) == expected
    assert module.attributes["nn.calibration"].data == "minmax"


def test_every_float_activation_gets_a_scale_and_constants_none():
    module = calibrate(tiny_module(), TINY_DATA)
    function = next(iter(module.ops))
    for op in function.walk():
        if isinstance(op, nn.ConstantOp):
            assert "nn.scale" not in op.attributes
        elif op.dialect_name() == "nn":
            scale = op.attributes["nn.scale"]
            assert isinstance(scale, FloatAttr) and scale.type == f32 and scale.value.data > 0


def test_batch_average_averages_per_batch_scales():
    module = calibrate(tiny_module(), TINY_DATA, method="minmax", batch_average=True, batch_size=4)
    batches = [TINY_DATA[i : i + 4] for i in range(0, 12, 4)]
    per_batch = [
        max(np.abs(tiny_tensors(batch[j : j + 1])["nn.relu"]).max() for j in range(len(batch))) for batch in batches
    ]
    input_batches = [np.abs(batch).max() for batch in batches]
    scales = recorded_scales(module)
    assert scales["nn.relu"] == pytest.approx(np.mean(per_batch) / 127, rel=1e-6)
    assert scales["input"] == pytest.approx(np.mean(input_batches) / 127, rel=1e-6)
    # the data's magnitude grows over the samples: the average sits below the overall max
    assert scales["input"] < f32_scale(np.abs(TINY_DATA).max())


def test_weight_scales_per_output_channel_and_per_tensor():
    module = calibrate(tiny_module(), TINY_DATA[:2])
    ops = {op.name: op for op in next(iter(module.ops)).walk()}
    conv_scales = ops["nn.conv2d"].attributes["nn.weight_scales"]
    gemm_scales = ops["nn.gemm"].attributes["nn.weight_scales"]
    assert isinstance(conv_scales, DenseArrayBase)
    expected_conv = (np.abs(CONV_W).reshape(3, -1).max(axis=1) / 127).astype(np.float32)
    expected_gemm = (np.abs(GEMM_B).max(axis=1) / 127).astype(np.float32)  # trans_b: rows are N
    assert np.array_equal(np.array(conv_scales.get_values(), np.float32), expected_conv)
    assert np.array_equal(np.array(gemm_scales.get_values(), np.float32), expected_gemm)

    module = calibrate(tiny_module(), TINY_DATA[:2], per_channel_weights=False)
    ops = {op.name: op for op in next(iter(module.ops)).walk()}
    assert ops["nn.conv2d"].attributes["nn.weight_scales"].get_values() == (f32_scale(np.abs(CONV_W).max()),)
    assert ops["nn.gemm"].attributes["nn.weight_scales"].get_values() == (f32_scale(np.abs(GEMM_B).max()),)


def test_all_zero_tensor_gets_the_documented_default():
    module = calibrate(tiny_module(), np.zeros((2, 2, 5, 5), np.float32))
    assert recorded_scales(module)["input"] == float(np.float32(ZERO_RANGE_SCALE))


def test_scales_survive_print_and_parse_exactly():
    module = calibrate(tiny_module(), TINY_DATA, method="percentile")
    reparsed = xnpu.parse_ir(xnpu.print_ir(module))

    def attributes(m: ModuleOp):
        function = next(iter(m.ops))
        found = [function.arg_attrs, m.attributes["nn.calibration"]]
        for op in function.walk():
            found += [op.attributes.get("nn.scale"), op.attributes.get("nn.weight_scales")]
        return found

    assert attributes(reparsed) == attributes(module)


def test_pass_from_a_pipeline_string_matches_the_api(tmp_path):
    np.save(tmp_path / "calib.npy", TINY_DATA)
    (spec,) = parse_pipeline(f'calibrate{{data="{tmp_path / "calib.npy"}" method=percentile percentile=99.9}}')
    calibrate_pass = all_passes()["calibrate"]().from_spec(spec)
    module = tiny_module()
    calibrate_pass.apply(make_context(), module)
    assert recorded_scales(module) == recorded_scales(
        calibrate(tiny_module(), TINY_DATA, method="percentile", percentile=99.9)
    )
    assert module.attributes["nn.calibration"].data == "percentile"


def test_pass_reads_npz_by_input_name_or_a_single_unnamed_array(tmp_path):
    np.savez(tmp_path / "named.npz", input0=TINY_DATA[:3])
    np.savez(tmp_path / "unnamed.npz", TINY_DATA[:3])
    expected = recorded_scales(calibrate(tiny_module(), TINY_DATA[:3]))
    for name in ("named.npz", "unnamed.npz"):
        module = tiny_module()
        all_passes()["calibrate"]()(data=str(tmp_path / name)).apply(make_context(), module)
        assert recorded_scales(module) == expected


@pytest.mark.parametrize(
    "data, options, message",
    [
        (TINY_DATA, {"method": "kl"}, "unknown calibration method 'kl'"),
        (TINY_DATA, {"method": "entropy", "batch_average": True}, "batch_average applies to method=minmax only"),
        (TINY_DATA, {"method": "entropy", "bins": 64}, "bins must be at least 128"),
        (TINY_DATA, {"percentile": 0.0, "method": "percentile"}, "percentile must be in (0, 100]"),
        (TINY_DATA[:, :1], {}, "input 'input0' has shape [12, 1, 5, 5], the model expects [1, 2, 5, 5]"),
        (TINY_DATA[:0], {}, "the data holds no samples"),
        (TINY_DATA.astype(np.int32), {}, "input 'input0' has dtype int32"),
        ({"image": TINY_DATA}, {}, "unknown input 'image'"),
        (np.full((1, 2, 5, 5), np.nan, np.float32), {}, "non-finite value"),
    ],
)
def test_errors_are_one_line(data, options, message):
    with pytest.raises(XnpuError) as error:
        calibrate(tiny_module(), data, **options)
    assert message in str(error.value)
    assert "\n" not in str(error.value)


def test_pass_errors_for_missing_or_unreadable_data(tmp_path):
    make_pass = all_passes()["calibrate"]()
    with pytest.raises(XnpuError, match="calibration data file not found"):
        make_pass(data=str(tmp_path / "missing.npy")).apply(make_context(), tiny_module())
    (tmp_path / "junk.npy").write_bytes(b"not numpy")
    with pytest.raises(XnpuError, match="not a NumPy .npy or .npz file"):
        make_pass(data=str(tmp_path / "junk.npy")).apply(make_context(), tiny_module())


def test_progress_bar_only_when_asked(capsys):
    calibrate(tiny_module(), TINY_DATA[:3])
    assert capsys.readouterr().err == ""  # stderr is not a terminal under pytest
    calibrate(tiny_module(), TINY_DATA[:3], progress=True)
    assert "calibrate" in capsys.readouterr().err


# --------------------------------------------------------------------------------------
# Histograms and thresholds against onnxruntime's HistogramCollector on the same data
# --------------------------------------------------------------------------------------


def ort_collector(method: str, values: list[np.ndarray], **options):
    from onnxruntime.quantization.calibrate import HistogramCollector

    collector = HistogramCollector(
        method=method, symmetric=options.get("symmetric", False), num_bins=options["num_bins"],
        num_quantized_bins=options.get("num_quantized_bins", 128), percentile=options.get("percentile", 99.99),
        scenario="same",
    )
    with contextlib.redirect_stdout(io.StringIO()):  # it prints progress to stdout
        for chunk in values:
            collector.collect({"t": [chunk]})
        low, high = collector.compute_collection_result()["t"][:2]
    return max(abs(float(low)), abs(float(high)))


SKEWED = [
    np.concatenate([np.random.default_rng(s).laplace(0.3, 0.5, 20000), np.random.default_rng(s).normal(0, 4, 200)])
    .astype(np.float32)
    for s in range(3)
]


def test_growing_histogram_merges_bins_exactly():
    histogram = Histogram(256)
    chunks = [SKEWED[0][:5000] * 0.1, SKEWED[1], SKEWED[2] * 3.0]
    for chunk in chunks:
        histogram.update(chunk)
    everything = np.abs(np.concatenate(chunks))
    reference, _ = np.histogram(everything, bins=256, range=(0.0, histogram.upper))
    assert histogram.counts.sum() == everything.size
    assert np.abs(histogram.counts - reference).sum() <= 2  # an edge value may round to either side
    assert histogram.upper >= everything.max() and histogram.counts.size == 256


@pytest.mark.parametrize("signed", [True, False])
def test_histogram_counts_equal_numpys_at_every_edge(signed):
    """The compiled histogram loop counts what np.histogram counts, also for values on,
    just above and just below each float32 edge and at both ends of the range."""
    rng = np.random.default_rng(5)
    for bins in (7, 256, 2048):
        for upper in (1e-3, 0.37, 6.1, 1234.5):
            lower = -upper if signed else 0.0
            edges = np.linspace(lower, upper, bins + 1).astype(np.float32)
            near = [edges, np.nextafter(edges, np.float32(np.inf)), np.nextafter(edges, np.float32(-np.inf))]
            values = np.concatenate([rng.normal(0, upper / 3, 5000).astype(np.float32), *near,
                                     np.float32([lower, upper, 2 * upper + 1, -2 * upper - 1])])
            expected, _ = np.histogram(np.abs(values) if not signed else values, bins=bins, range=(lower, upper))
            assert np.array_equal(uniform_counts(values, bins, lower, upper, magnitudes=not signed), expected)


@pytest.mark.parametrize("signed", [True, False])
def test_histogram_counts_of_clipped_values_equal_numpys_also_split_over_threads(signed, monkeypatch):
    """The compiled loops clip without branches and skip a nan as np.clip and np.histogram do;
    the counts of parts on several threads sum to the counts of the whole."""
    monkeypatch.setattr(calibrate_statistics, "PARALLEL_HISTOGRAM_MIN", 0)
    rng = np.random.default_rng(7)
    values = rng.normal(0, 2.0, (5, 3, 7, 11)).astype(np.float32)
    values[0, 0, 0, :4] = [np.nan, 0.0, -0.0, 1.5]
    lower, upper = (-1.5, 1.5) if signed else (0.0, 1.5)
    for clip in ((0.0, np.inf), (-1.0, 1.0), (-np.inf, 0.25), None):
        clipped = values if clip is None else np.clip(values, np.float32(clip[0]), np.float32(clip[1]))
        expected, _ = np.histogram(np.abs(clipped) if not signed else clipped, bins=64, range=(lower, upper))
        assert np.array_equal(uniform_counts(values, 64, lower, upper, not signed, clip), expected)
        per_channel = channel_counts(values, 1, 64, lower, upper, not signed, clip)
        assert np.array_equal(per_channel.sum(axis=0), expected)


def test_histograms_split_over_threads_also_count_in_a_forked_child(monkeypatch):
    """A process forked after a histogram was split over threads has none of its parent's
    threads: it counts on a pool of its own instead of waiting on the parent's forever."""
    monkeypatch.setattr(calibrate_statistics, "PARALLEL_HISTOGRAM_MIN", 0)
    values = np.random.default_rng(8).normal(0, 1, 4096).astype(np.float32)
    expected = uniform_counts(values, 64, 0.0, 2.0, magnitudes=True)  # the parent's pool exists now
    pid = os.fork()
    if pid == 0:
        signal.alarm(60)  # a child waiting on threads it does not have ends here
        os._exit(0 if np.array_equal(uniform_counts(values, 64, 0.0, 2.0, magnitudes=True), expected) else 1)
    _, status = os.waitpid(pid, 0)
    assert os.waitstatus_to_exitcode(status) == 0


def test_channel_counts_are_each_channels_histogram():
    """The one-pass per-channel histogram (a depthwise input's weighted histogram) counts each
    channel of an NCHW view of NHWC memory as np.histogram does, edge values included."""
    rng = np.random.default_rng(6)
    edges = np.linspace(-2.0, 2.0, 65).astype(np.float32)
    nhwc = rng.normal(0, 0.7, (3, 4, 5, 6)).astype(np.float32)
    nhwc[0, 0, :3, :] = edges[:18].reshape(3, 6)  # values on the edges
    nchw = nhwc.transpose(0, 3, 1, 2)
    for magnitudes, low in ((False, -2.0), (True, 0.0)):
        counts = channel_counts(nchw, 1, 64, low, 2.0, magnitudes)
        for channel in range(6):
            values = nchw[:, channel]
            expected, _ = np.histogram(np.abs(values) if magnitudes else values, bins=64, range=(low, 2.0))
            assert np.array_equal(counts[channel], expected)


@pytest.mark.parametrize("percentile", [99.0, 99.99])
def test_percentile_threshold_equals_onnxruntime(percentile):
    data = np.concatenate(SKEWED)
    histogram = Histogram(2048, peak=float(np.abs(data).max()))
    histogram.update(data)
    expected = ort_collector("percentile", [data], num_bins=2048, percentile=percentile, symmetric=True)
    assert percentile_threshold(histogram, percentile) == pytest.approx(expected, rel=1e-6)


def test_entropy_threshold_equals_onnxruntime_and_clips_outliers():
    data = np.concatenate(SKEWED)
    histogram = Histogram(2048, signed=True, peak=float(np.abs(data).max()))
    histogram.update(data)
    expected = ort_collector("entropy", [data], num_bins=2048, num_quantized_bins=128)
    threshold = entropy_threshold(histogram)
    assert threshold == pytest.approx(expected, rel=1e-6)
    assert threshold < 0.7 * np.abs(data).max()  # a real search: the outliers are clipped


# --------------------------------------------------------------------------------------
# The digits models against onnxruntime's calibrators
# --------------------------------------------------------------------------------------

ORT_SAMPLES = 64


@pytest.fixture(scope="module")
def digits_plain():
    if not (DIGITS / "digits_plain.onnx").is_file():
        pytest.skip(f"benchmark models not found at {DIGITS}")
    import onnx

    path = DIGITS / "digits_plain.onnx"
    data = np.load(DIGITS / "calib_x.npy").astype(np.float32)[:ORT_SAMPLES]
    outputs = {node.name: node.output[0] for node in onnx.load(path).graph.node}
    return path, data, outputs


def ort_thresholds(path: Path, data: np.ndarray, method_name: str, **extra) -> dict[str, float]:
    from onnxruntime.quantization.calibrate import CalibrationDataReader, CalibrationMethod, create_calibrator

    class Reader(CalibrationDataReader):
        def __init__(self):
            self.samples = iter([{"input": data[i : i + 1]} for i in range(len(data))])

        def get_next(self):
            return next(self.samples, None)

    import tempfile

    with tempfile.TemporaryDirectory() as tmp, contextlib.redirect_stdout(io.StringIO()):
        calibrator = create_calibrator(
            path, augmented_model_path=str(Path(tmp) / "augmented.onnx"),
            calibrate_method=getattr(CalibrationMethod, method_name), extra_options=extra,
        )
        calibrator.collect_data(Reader())
        ranges = calibrator.compute_data()
    return {name: float(np.max(np.abs(np.asarray(r.range_value, np.float64)))) for name, r in ranges.items()}


def xnpu_thresholds(digits_plain, **options) -> dict[str, float]:
    """Our scales * 127 by onnxruntime tensor name (op locations are the ONNX node names)."""
    path, data, outputs = digits_plain
    module = calibrate(xnpu.import_onnx(path), data, **options)
    function = next(iter(module.ops))
    thresholds = {"input": function.arg_attrs.data[0].data["nn.scale"].value.data * 127}
    for op in function.walk():
        if "nn.scale" in op.attributes and isinstance(op.location, NameLoc):
            thresholds[outputs[op.location.desc.data]] = op.attributes["nn.scale"].value.data * 127
    return thresholds


def relative_differences(ours: dict[str, float], theirs: dict[str, float]) -> np.ndarray:
    common = sorted(set(ours) & set(theirs))
    assert len(common) >= 10, f"too few tensors matched: {common}"
    return np.array([abs(ours[name] - theirs[name]) / theirs[name] for name in common])


@needs_digits
def test_minmax_equals_onnxruntime_on_digits(digits_plain):
    path, data, _ = digits_plain
    theirs = ort_thresholds(path, data, "MinMax", symmetric=True)
    assert relative_differences(xnpu_thresholds(digits_plain, method="minmax"), theirs).max() < 1e-5


@needs_digits
def test_percentile_agrees_with_onnxruntime_on_digits(digits_plain):
    path, data, _ = digits_plain
    theirs = ort_thresholds(path, data, "Percentile", num_bins=2048, percentile=99.99, symmetric=True)
    assert relative_differences(xnpu_thresholds(digits_plain, method="percentile"), theirs).max() < 0.005
    exact = xnpu_thresholds(digits_plain, method="percentile", exact_range=True)
    assert relative_differences(exact, theirs).max() < 1e-5


@needs_digits
def test_entropy_agrees_with_onnxruntime_on_digits(digits_plain):
    path, data, _ = digits_plain
    # 1024 bins (448 candidate windows of 128 levels) keeps onnxruntime's pure-Python search
    # quick; bench/calibration.py compares at the default 2048
    theirs = ort_thresholds(path, data, "Entropy", num_bins=1024, num_quantized_bins=128)
    maxima = ort_thresholds(path, data, "MinMax", symmetric=True)
    # the search is real: it clips most tensors well below their maximum
    assert sum(theirs[name] < 0.95 * maxima[name] for name in theirs) >= len(theirs) // 2
    exact = xnpu_thresholds(digits_plain, method="entropy", bins=1024)  # two runs by default
    assert relative_differences(exact, theirs).max() < 1e-5
    # One streaming run: the resampled histogram differs from onnxruntime's one-shot histogram
    # by a fraction of a bin, and the KL minimum is flat enough for that to move a few
    # thresholds (onnxruntime's own sample-by-sample run moves them by up to ~10%).
    streamed = relative_differences(xnpu_thresholds(digits_plain, method="entropy", bins=1024, exact_range=False), theirs)
    assert np.median(streamed) < 0.02 and streamed.max() < 0.2


@needs_digits
def test_memory_does_not_grow_with_the_number_of_samples():
    """Samples run in batches of `calibration_batch`: memory follows the batch, not the data."""
    path = DIGITS / "digits_plain.onnx"
    calib = np.load(DIGITS / "calib_x.npy").astype(np.float32)
    few, many = calib[:25], calib[:100]
    calibrate(xnpu.import_onnx(path), few[:1])  # one-time imports and caches stay out of the peaks
    function = next(iter(xnpu.import_onnx(path).ops))
    activation_bytes = sum(
        4 * int(np.prod(nn.shape_of(op.results[0])))
        for op in function.walk()
        if op.dialect_name() == "nn" and not isinstance(op, nn.ConstantOp)
    )
    peaks = {}
    for method in ("minmax", "percentile"):
        for label, data in (("few", few), ("many", many)):
            module = xnpu.import_onnx(path)
            tracemalloc.start()
            calibrate(module, data, method=method, calibration_batch=10)
            peaks[method, label] = tracemalloc.get_traced_memory()[1]
            tracemalloc.stop()
        # keeping the activations of the 75 extra samples would add 75 * activation_bytes
        # (4.4 MB); what does grow is Python's bounded free lists, tens of kilobytes (both
        # runs hold at most one batch of 10 samples' activations)
        growth = peaks[method, "many"] - peaks[method, "few"]
        assert growth < 0.05 * (len(many) - len(few)) * activation_bytes, (peaks, activation_bytes)
        assert peaks[method, "many"] < 2 * peaks[method, "few"], peaks


# --------------------------------------------------------------------------------------
# mse: the threshold with the least squared error, each tensor as its consumers see it
# --------------------------------------------------------------------------------------


def quantization_mse(values: np.ndarray, threshold: float) -> float:
    """The mean squared error of symmetric int8 at step threshold / 127, saturating."""
    step = threshold / 127
    return float(np.mean((values - np.clip(np.round(values / step), -127, 127) * step) ** 2))


def histogram_of(values: np.ndarray) -> Histogram:
    histogram = Histogram(2048)
    histogram.update(values.reshape(8, -1))
    return histogram


def test_mse_threshold_minimizes_the_quantization_error_of_data_with_outliers():
    rng = np.random.default_rng(11)
    values = rng.standard_normal(80_000).astype(np.float32)
    values[rng.choice(values.size, 40, replace=False)] *= 12.0  # rare large values, as conv outputs have
    threshold = mse_threshold(histogram_of(values))
    peak = float(np.abs(values).max())
    grid = np.linspace(peak / 16, peak, 600)
    best = min(quantization_mse(values, t) for t in grid)
    assert quantization_mse(values, threshold) <= 1.02 * best
    # the rare tail is clipped: a finer step than max|x| / 127, a quarter less error
    assert threshold < 0.8 * peak
    assert quantization_mse(values, threshold) < 0.75 * quantization_mse(values, peak)


def test_mse_threshold_keeps_the_range_of_data_without_outliers():
    values = np.random.default_rng(12).uniform(-2.0, 2.0, size=80_000).astype(np.float32)
    threshold = mse_threshold(histogram_of(values))
    assert 0.97 * 2.0 < threshold <= float(np.abs(values).max())


def saturating_consumers_module(consumers: tuple[type, ...]) -> ModuleOp:
    """x -> each of `consumers` (a hard_sigmoid with alpha 0.2, beta 0.5), results returned."""
    block = Block(arg_types=[TensorType(f32, (1, 4))])
    x = block.args[0]
    ops = []
    for kind in consumers:
        if kind is nn.HardSigmoidOp:
            ops.append(kind(x, alpha=FloatAttr(0.2, f32), beta=FloatAttr(0.5, f32)))
        else:
            ops.append(kind(x))
    results = [op.results[0] for op in ops]
    block.add_ops([*ops, func.ReturnOp(*results)])
    function = func.FuncOp("main", FunctionType.from_lists([x.type], [r.type for r in results]), Region(block))
    return ModuleOp([function])


CONSUMER_DATA = np.array([[-40.0, 2.0, 1.0, -1.0], [-3.5, 0.5, 2.0, 0.0]], np.float32)


@pytest.mark.parametrize(
    "consumers, threshold",
    [
        ((nn.HardSwishOp,), 3.0),  # hard_swish is 0 below -3: -40 looks like -3
        ((nn.HardSwishOp, nn.ReluOp), 3.0),  # the union of the ranges: [-3, inf)
        ((nn.HardSigmoidOp,), 2.5),  # clip(0.2 x + 0.5, 0, 1) is constant outside [-2.5, 2.5]
        ((nn.HardSwishOp, nn.SigmoidOp), 40.0),  # sigmoid tells -40 from -3: the full range
    ],
)
def test_consumer_ranges_clip_what_no_consumer_can_tell_apart(consumers, threshold):
    module = calibrate(saturating_consumers_module(consumers), CONSUMER_DATA, method="minmax", consumer_ranges=True)
    assert recorded_scales(module)["input"] == f32_scale(threshold)
    plain = calibrate(saturating_consumers_module(consumers), CONSUMER_DATA, method="minmax")
    assert recorded_scales(plain)["input"] == f32_scale(40.0)


def sigmoid_module(return_input: bool) -> ModuleOp:
    """x (1 x 256) -> sigmoid, returning the sigmoid (and x itself with `return_input`)."""
    block = Block(arg_types=[TensorType(f32, (1, 256))])
    x = block.args[0]
    sigmoid = nn.SigmoidOp(x)
    results = [sigmoid.result, x] if return_input else [sigmoid.result]
    block.add_ops([sigmoid, func.ReturnOp(*results)])
    function = func.FuncOp("main", FunctionType.from_lists([x.type], [r.type for r in results]), Region(block))
    return ModuleOp([function])


def test_mse_keeps_the_full_range_of_what_the_program_returns():
    """A sparse tail is clipped inside the graph, but an output's largest values are its answer."""
    data = np.random.default_rng(13).standard_normal((64, 256)).astype(np.float32)
    peak = f32_scale(np.abs(data).max())
    assert recorded_scales(calibrate(sigmoid_module(return_input=False), data))["input"] < 0.99 * peak
    assert recorded_scales(calibrate(sigmoid_module(return_input=True), data))["input"] == peak


def depthwise_module(kernels: np.ndarray, also_relu: bool = False) -> ModuleOp:
    """x (1 x C x 8 x 8) -> a depthwise 3x3 convolution (and a relu of x with `also_relu`)."""
    channels = kernels.shape[0]
    block = Block(arg_types=[TensorType(f32, (1, channels, 8, 8))])
    x = block.args[0]
    weight = nn.ConstantOp(kernels)
    conv = nn.Conv2dOp(x, weight.result, None, pads=(1, 1, 1, 1), group=channels)
    ops = [weight, conv] + ([nn.ReluOp(x)] if also_relu else [])
    results = [op.results[0] for op in ops[1:]]
    block.add_ops([*ops, func.ReturnOp(*results)])
    function = func.FuncOp("main", FunctionType.from_lists([x.type], [r.type for r in results]), Region(block))
    return ModuleOp([function])


def test_mse_can_weigh_a_depthwise_input_by_its_kernels_and_so_loses_less_after_them():
    """Batch norm folded into a depthwise conv gives the channels of small range large kernels:
    their rounding costs the conv's output most, so mse weighs each channel by its kernels' norm
    (kernel_norms) and clips the large channels for a finer step of the small ones."""
    rng = np.random.default_rng(21)
    ranges = np.array([40.0, 30.0] + [0.5] * 30, np.float32)  # two large channels of 32
    kernels = (rng.standard_normal((32, 1, 3, 3)) / ranges[:, None, None, None]).astype(np.float32)
    data = (rng.standard_normal((16, 32, 8, 8)) * ranges[None, :, None, None]).astype(np.float32)
    weighted = recorded_scales(calibrate(depthwise_module(kernels), data, depthwise_weights=True))["input"]
    unweighted = recorded_scales(calibrate(depthwise_module(kernels), data, depthwise_weights=False))["input"]
    assert weighted < 0.85 * unweighted
    # a relu reads x too: no weights, the plain mse threshold
    also_relu = calibrate(depthwise_module(kernels, also_relu=True), data, depthwise_weights=True)
    assert recorded_scales(also_relu)["input"] == unweighted

    # the norm, not its square (the conv's own error): later layers need the large channels too
    assert depthwise_error(data, kernels, weighted) < DEPTHWISE_GAIN * depthwise_error(data, kernels, unweighted)
    # by default the tensor gets the weighting where it clearly measures less error at the conv's output
    assert recorded_scales(calibrate(depthwise_module(kernels), data))["input"] == weighted


def test_mse_measures_the_depthwise_weighting_in_its_one_run(monkeypatch):
    """Where every sample runs at once, the error of the plain and the weighted scale at the
    depthwise conv's output is measured on the first samples of that same run; the scale is
    the one the two runs and the error run of a smaller batch choose."""
    rng = np.random.default_rng(21)
    ranges = np.array([40.0, 30.0] + [0.5] * 30, np.float32)
    kernels = (rng.standard_normal((32, 1, 3, 3)) / ranges[:, None, None, None]).astype(np.float32)
    data = (rng.standard_normal((16, 32, 8, 8)) * ranges[None, :, None, None]).astype(np.float32)
    runs = []
    call = calibrate_module.CompiledFunction.__call__
    monkeypatch.setattr(calibrate_module.CompiledFunction, "__call__",
                        lambda self, arguments: runs.append(len(arguments[0])) or call(self, arguments))
    one_run = recorded_scales(calibrate(depthwise_module(kernels), data))["input"]
    assert runs == [16]
    runs.clear()
    batched = recorded_scales(calibrate(depthwise_module(kernels), data, calibration_batch=15))["input"]
    assert runs == [15, 1, 15, 1, 8]  # the ranges, the histograms, the error on the first 8 samples
    weighted = recorded_scales(calibrate(depthwise_module(kernels), data, depthwise_weights=True))["input"]
    assert one_run == batched == weighted


def depthwise_error(data: np.ndarray, kernels: np.ndarray, scale: float) -> float:
    """The squared error int8 quantization of `data` at `scale` leaves after the depthwise conv."""
    error = np.clip(np.round(data / scale), -127, 127) * scale - data
    return float((float_ops.conv2d(error, kernels, None, (1, 1), (1, 1, 1, 1), (1, 1), kernels.shape[0]) ** 2).sum())


def test_mse_keeps_the_plain_threshold_where_the_weighting_measures_worse_after_the_depthwise_conv():
    """Two channels constant over the map read by flat kernels (their clipping passes through
    all nine taps alike), fourteen small ones by alternating kernels of a larger norm: the
    weighting clips the two a little more and loses at the conv's output, so by default the
    plain threshold stays."""
    rng = np.random.default_rng(5)
    ranges = np.array([40.0, 30.0] + [0.5] * 14, np.float32)
    kernels = np.zeros((16, 1, 3, 3), np.float32)
    kernels[:2] = 1.0
    kernels[2:] = 4 * np.array([[1, -1, 1], [-1, 1, -1], [1, -1, 1]], np.float32)
    data = (rng.standard_normal((16, 16, 8, 8)) * ranges[None, :, None, None]).astype(np.float32)
    data[:, :2] = (rng.standard_normal((16, 2, 1, 1)) * ranges[None, :2, None, None]).astype(np.float32)
    scale = {option: recorded_scales(calibrate(depthwise_module(kernels), data, depthwise_weights=option))["input"]
             for option in (None, True, False)}
    assert scale[True] < scale[False]
    assert depthwise_error(data, kernels, scale[False]) < depthwise_error(data, kernels, scale[True])
    assert scale[None] == scale[False]


def test_mse_is_the_default_and_observes_consumer_ranges():
    assert DEFAULT_METHOD == "mse"
    default = calibrate(saturating_consumers_module((nn.HardSwishOp,)), CONSUMER_DATA)
    assert default.attributes["nn.calibration"].data == "mse"
    assert recorded_scales(default)["input"] <= f32_scale(3.0)


@pytest.mark.parametrize("method", ["mse", "entropy"])
def test_exact_range_runs_the_graph_once_when_every_sample_fits_one_batch(method, monkeypatch):
    """The ranges and the histograms over them come from one run where all samples fit one
    batch, with the scales of the two runs a smaller batch needs (the same float values)."""
    runs = []
    call = calibrate_module.CompiledFunction.__call__
    monkeypatch.setattr(calibrate_module.CompiledFunction, "__call__",
                        lambda self, arguments: runs.append(len(arguments[0])) or call(self, arguments))
    options = {"method": method, "bins": 512}
    one_run = recorded_scales(calibrate(tiny_module(), TINY_DATA, **options))
    assert runs == [len(TINY_DATA)]
    runs.clear()
    two_runs = recorded_scales(calibrate(tiny_module(), TINY_DATA, calibration_batch=len(TINY_DATA) - 1, **options))
    assert runs == [len(TINY_DATA) - 1, 1] * 2
    monkeypatch.setattr(calibrate_module, "ONE_RUN_BYTES", 0)  # over the budget: two runs
    runs.clear()
    over_budget = recorded_scales(calibrate(tiny_module(), TINY_DATA, **options))
    assert runs == [len(TINY_DATA)] * 2
    assert one_run.keys() == two_runs.keys() == over_budget.keys()
    for name, scale in one_run.items():
        assert scale == pytest.approx(two_runs[name], rel=1e-5) and scale == over_budget[name], name


IMAGENET = SHARED / "imagenet_like"


def bench_images(first: int, count: int) -> np.ndarray:
    """Bench photos first..first+count-1, normalized as the imagenet_like models expect."""
    raw = np.load(IMAGENET / "images_u8.npy", mmap_mode="r")[first : first + count].astype(np.float32)
    mean = np.array([0.485, 0.456, 0.406], np.float32).reshape(1, 3, 1, 1)
    std = np.array([0.229, 0.224, 0.225], np.float32).reshape(1, 3, 1, 1)
    return ((raw / 255.0 - mean) / std).astype(np.float32)


@pytest.mark.skipif(not (IMAGENET / "mobilenetv3_like.onnx").is_file(), reason=f"bench models not found at {IMAGENET}")
def test_default_calibration_keeps_mobilenetv3_probabilities_closer_to_float_than_minmax():
    """The bench's hard case (docs/quantization.md): calibrated on images 0-31, the softmax output
    on images 32-63 keeps a cosine of 0.90 with the default (0.91-0.92 measured) where minmax gives
    0.88-0.89, and agrees on at least as many top-1 classes (0.69-0.75 against 0.56-0.59). Over
    32 images one class more or less is 0.03, and float sums in another order (another machine's
    BLAS) move the scales by a rounding: a fixed top-1 bar at 0.70 failed on one machine (22 of
    32, 24 on another), so the top-1 check is only against minmax and the cosine carries the
    margin."""
    import warnings

    from xnpu.core.errors import XnpuNote

    model = IMAGENET / "mobilenetv3_like.onnx"
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", XnpuNote)
        evaluation = bench_images(32, 32)
        reference = xnpu.run(xnpu.import_onnx(model), evaluation)["probs"]

        def measured(**options) -> tuple[float, float]:
            quantized = xnpu.run(xnpu.quantize(model, bench_images(0, 32), progress=False, **options),
                                 evaluation)["probs"]
            cosine = np.sum(reference * quantized, axis=1) / np.linalg.norm(reference, axis=1) / np.linalg.norm(
                quantized, axis=1)
            return float(cosine.mean()), float(np.mean(reference.argmax(axis=1) == quantized.argmax(axis=1)))

        (cosine, agreement), (minmax_cosine, minmax_agreement) = measured(), measured(method="minmax")
    print(f"probs cosine {cosine:.4f} (minmax {minmax_cosine:.4f}), top-1 agreement {agreement:.4f} "
          f"(minmax {minmax_agreement:.4f})")
    assert cosine >= 0.90 and cosine >= minmax_cosine + 0.015
    assert agreement >= minmax_agreement
