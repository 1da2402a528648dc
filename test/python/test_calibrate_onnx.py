"""Calibration's float inference on onnxruntime (transforms/calibrate_onnx.py): which values are
the ONNX model's tensors after the float clean-up, and the scales equal the float interpreter's
to float rounding."""

from __future__ import annotations

import numpy as np
import onnx
import pytest
from onnx import TensorProto, helper, numpy_helper

import xnpu
from xnpu.driver.pipeline import float_cleanup
from xnpu.interpreters.function import CompiledFunction, entry_function
from xnpu.ir.io import parse_ir, print_ir
from xnpu.ir.locations import location_names
from xnpu.ir.onnx_origin import origin_of
from xnpu.transforms import calibrate as calibrate_module
from xnpu.transforms import calibrate_onnx
from xnpu.transforms.calibrate import INPUT_MEAN_ATTR, SCALE_ATTR, calibrate
from xnpu.transforms.calibrate_onnx import OnnxFloatRun, onnx_tensors

DATA = np.random.default_rng(7).standard_normal((12, 1, 3, 12, 12)).astype(np.float32)


def cnn_model() -> onnx.ModelProto:
    """conv -> batch norm -> relu, a depthwise conv, a residual add, a hard-swish spelled as
    add-clip-mul-div, pooling and a gemm to a softmax: the rewrites of the float clean-up."""
    rng = np.random.default_rng(8)
    channels = 8

    def _initializer(name: str, *shape: int, scale: float = 0.3) -> onnx.TensorProto:
        return numpy_helper.from_array((rng.standard_normal(shape) * scale).astype(np.float32), name)

    nodes = [
        helper.make_node("Conv", ["input", "w1", "b1"], ["c1"], name="conv1", pads=[1, 1, 1, 1]),
        helper.make_node("BatchNormalization", ["c1", "gamma", "beta", "mean", "var"], ["n1"], name="bn1"),
        helper.make_node("Relu", ["n1"], ["r1"], name="relu1"),
        helper.make_node("Conv", ["r1", "w2"], ["c2"], name="dw2", pads=[1, 1, 1, 1], group=channels),
        helper.make_node("Add", ["c2", "r1"], ["a2"], name="add2"),
        helper.make_node("Add", ["a2", "three"], ["h1"], name="hs_add"),
        helper.make_node("Clip", ["h1", "zero", "six"], ["h2"], name="hs_clip"),
        helper.make_node("Mul", ["a2", "h2"], ["h3"], name="hs_mul"),
        helper.make_node("Div", ["h3", "six"], ["h4"], name="hs_div"),
        helper.make_node("GlobalAveragePool", ["h4"], ["p"], name="pool"),
        helper.make_node("Flatten", ["p"], ["f"], name="flatten"),
        helper.make_node("Gemm", ["f", "wg", "bg"], ["logits"], name="fc", transB=1),
        helper.make_node("Softmax", ["logits"], ["probs"], name="softmax"),
    ]
    initializers = [
        _initializer("w1", channels, 3, 3, 3), _initializer("b1", channels),
        numpy_helper.from_array((1 + 0.2 * rng.random(channels)).astype(np.float32), "gamma"),
        _initializer("beta", channels), _initializer("mean", channels),
        numpy_helper.from_array((0.5 + rng.random(channels)).astype(np.float32), "var"),
        _initializer("w2", channels, 1, 3, 3), _initializer("wg", 5, channels), _initializer("bg", 5),
        numpy_helper.from_array(np.array(3.0, np.float32), "three"),
        numpy_helper.from_array(np.array(0.0, np.float32), "zero"),
        numpy_helper.from_array(np.array(6.0, np.float32), "six"),
    ]
    graph = helper.make_graph(nodes, "cnn", [helper.make_tensor_value_info("input", TensorProto.FLOAT, [1, 3, 12, 12])],
                              [helper.make_tensor_value_info("probs", TensorProto.FLOAT, [1, 5])], initializers)
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])


def cleaned(model: onnx.ModelProto):
    return float_cleanup(xnpu.import_onnx(model))


def scales_by_location(module) -> dict[str, float]:
    function = entry_function(module)
    scales = {"input": function.arg_attrs.data[0].data[SCALE_ATTR].value.data}
    for op in function.walk():
        if SCALE_ATTR in op.attributes:
            scales["+".join(location_names(op.location))] = op.attributes[SCALE_ATTR].value.data
    return scales


def counting_runs(monkeypatch) -> dict[str, int]:
    runs = {"onnxruntime": 0, "interpreter": 0}
    onnx_call, interpreter_call = OnnxFloatRun.__call__, CompiledFunction.__call__

    def on_onnxruntime(self, inputs):
        runs["onnxruntime"] += 1
        return onnx_call(self, inputs)

    def on_interpreter(self, arguments):
        runs["interpreter"] += 1
        return interpreter_call(self, arguments)

    monkeypatch.setattr(OnnxFloatRun, "__call__", on_onnxruntime)
    monkeypatch.setattr(CompiledFunction, "__call__", on_interpreter)
    return runs


def test_each_value_after_the_clean_up_is_the_tensor_of_the_node_its_location_names_last():
    module = cleaned(cnn_model())
    tensors = onnx_tensors(module, origin_of(module))
    assert tensors is not None
    by_location = {"+".join(location_names(value.owner.location)): name for value, name in tensors.items()}
    # batch norm folded into its conv (the relu stays an op of its own at nn), the spelled-out
    # hard-swish one op: each is the output of the node named last
    assert by_location == {"conv1+bn1": "n1", "relu1": "r1", "dw2": "c2", "add2": "a2",
                           "hs_add+hs_clip+hs_mul+hs_div": "h4", "pool": "p", "flatten": "f", "fc": "logits",
                           "softmax": "probs"}


@pytest.mark.parametrize("method", ["minmax", "mse", "entropy", "percentile"])
def test_scales_on_onnxruntime_equal_the_interpreters_to_float_rounding(method, monkeypatch):
    runs = counting_runs(monkeypatch)
    ours = scales_by_location(calibrate(cleaned(cnn_model()), DATA, method=method, bins=512))
    assert runs == {"onnxruntime": 1, "interpreter": 0}  # the 12 samples in one batch
    runs.update(onnxruntime=0, interpreter=0)
    reference = scales_by_location(calibrate(cleaned(cnn_model()), DATA, method=method, bins=512,
                                             runtime="interpreter"))
    assert runs["onnxruntime"] == 0 and runs["interpreter"] > 0
    assert ours.keys() == reference.keys()
    # the two sum each conv's 72 products (and the gemm's 8) in another order, and onnxruntime
    # runs the batch norm unfolded: each value moves by a few float32 roundings of the largest
    # terms, relative ~1e-6. A max moves by as much; a histogram threshold is a bin edge, and a
    # value on an edge may change bins, which moves a flat minimum by a bin at most (1/512).
    tolerance = 1e-5 if method == "minmax" else 2 / 512
    for name, scale in reference.items():
        assert ours[name] == pytest.approx(scale, rel=tolerance), name


def test_input_means_on_onnxruntime_equal_the_interpreters_to_float_rounding(monkeypatch):
    """Bias correction's nn.input_mean, kept in the same run as the scales: the conv's (its batch
    norm folded), the depthwise conv's (a channel per kernel) and the gemm's (per column)."""
    def means(runtime: str) -> dict[str, np.ndarray]:
        module = calibrate(cleaned(cnn_model()), DATA, method="minmax", bias_correction=True, runtime=runtime)
        return {"+".join(location_names(op.location)): np.asarray(op.attributes[INPUT_MEAN_ATTR].get_values())
                for op in entry_function(module).walk() if INPUT_MEAN_ATTR in op.attributes}

    runs = counting_runs(monkeypatch)
    ours = means("onnxruntime")
    assert runs == {"onnxruntime": 1, "interpreter": 0}
    reference = means("interpreter")
    assert sorted(ours) == sorted(reference) == ["conv1+bn1", "dw2", "fc"]
    assert [len(reference[name]) for name in ("conv1+bn1", "dw2", "fc")] == [3 * 9, 8 * 9, 8]
    for name, mean in reference.items():
        np.testing.assert_allclose(ours[name], mean, rtol=1e-4, atol=1e-6, err_msg=name)


def test_the_interpreter_runs_what_has_no_onnx_model_or_where_asked(monkeypatch):
    runs = counting_runs(monkeypatch)
    calibrate(parse_ir(print_ir(cleaned(cnn_model()))), DATA, method="minmax")  # IR text: no ONNX model
    assert runs["onnxruntime"] == 0 and runs["interpreter"] > 0
    runs.update(onnxruntime=0, interpreter=0)
    calibrate(cleaned(cnn_model()), DATA, method="minmax", runtime="interpreter")
    assert runs["onnxruntime"] == 0 and runs["interpreter"] > 0
    with pytest.raises(xnpu.XnpuError, match="unknown calibration runtime 'tvm'"):
        calibrate(cleaned(cnn_model()), DATA, runtime="tvm")


def test_a_node_imported_as_several_ops_has_no_tensor_for_its_intermediate_values():
    module = cleaned(cnn_model())
    origin = origin_of(module)
    # as if the front end had spelled `dw2` as two ops: the first one's value is no tensor of the model
    dw2 = next(op for op in entry_function(module).walk() if location_names(op.location) == ("dw2",))
    add2 = next(op for op in entry_function(module).walk() if location_names(op.location) == ("add2",))
    add2.location = dw2.location
    assert onnx_tensors(module, origin) is None


def test_over_the_one_run_budget_onnxruntime_runs_twice_and_the_scales_stay(monkeypatch):
    one_run = scales_by_location(calibrate(cleaned(cnn_model()), DATA, bins=512))
    runs = counting_runs(monkeypatch)
    monkeypatch.setattr(calibrate_module, "ONE_RUN_BYTES", 0)  # neither side fits one run: ranges, then histograms
    two_runs = scales_by_location(calibrate(cleaned(cnn_model()), DATA, bins=512))
    assert runs == {"onnxruntime": 2, "interpreter": 0}
    for name, scale in one_run.items():
        assert two_runs[name] == pytest.approx(scale, rel=1e-6), name


def test_where_the_outputs_of_every_sample_exceed_one_run_the_graph_runs_in_segments_that_fit(monkeypatch):
    """One run still, segment by segment: all the samples through the first nodes, their
    measured tensors folded and dropped, only what later nodes read kept."""
    whole = scales_by_location(calibrate(cleaned(cnn_model()), DATA, bins=512))
    module = cleaned(cnn_model())
    tensors = onnx_tensors(module, origin_of(module))
    one_sample = OnnxFloatRun(origin_of(module), tensors, ["input"], None).sample_bytes()
    limit = 2 * one_sample // 3  # above what the add needs alone: both its inputs and its output
    segments = OnnxFloatRun(origin_of(module), tensors, ["input"], None, limit).segments
    assert len(segments) >= 2 and all(segment.bytes <= limit for segment in segments)
    assert [s.first for s in segments[1:]] == [s.last + 1 for s in segments[:-1]] and segments[-1].last == 12
    # what a later segment reads is an output of an earlier one (or the graph's input)
    written = {"input"}
    for segment in segments:
        assert set(segment.inputs) <= written
        written |= set(segment.outputs)
    runs = counting_runs(monkeypatch)
    monkeypatch.setattr(calibrate_onnx, "SEGMENT_BYTES", limit * len(DATA))
    segmented = scales_by_location(calibrate(module, DATA, bins=512))
    assert runs == {"onnxruntime": 1, "interpreter": 0}
    for name, scale in whole.items():
        assert segmented[name] == pytest.approx(scale, rel=1e-6), name


def test_a_model_onnxruntime_cannot_load_whole_is_calibrated_by_the_interpreter(monkeypatch):
    import onnxruntime

    def refuse(*args, **kwargs):
        raise RuntimeError("[ONNXRuntimeError] : 10 : INVALID_GRAPH : a node it cannot run")

    runs = counting_runs(monkeypatch)
    reference = scales_by_location(calibrate(cleaned(cnn_model()), DATA, method="minmax", runtime="interpreter"))
    runs.update(onnxruntime=0, interpreter=0)
    monkeypatch.setattr(onnxruntime, "InferenceSession", refuse)
    assert scales_by_location(calibrate(cleaned(cnn_model()), DATA, method="minmax")) == reference
    assert runs["onnxruntime"] == 0 and runs["interpreter"] > 0
