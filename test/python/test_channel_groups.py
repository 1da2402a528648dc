"""Depthwise blocks split into channel groups (transforms/split_channel_groups.py), chosen on the
calibration samples (transforms/calibrate_channel_groups.py): the float result stays, each
group's tensors get their own scale, calibration on onnxruntime reads them from the model's
tensors, and the split model lowers bit-exactly."""

from __future__ import annotations

import numpy as np
import onnx
import pytest
from onnx import TensorProto, helper, numpy_helper

import xnpu
from xnpu.dialects import nn
from xnpu.driver.pipeline import float_cleanup
from xnpu.interpreters.function import entry_function
from xnpu.transforms.calibrate import calibrate
from xnpu.transforms.calibrate_channel_groups import choose_channel_groups, two_groups
from xnpu.transforms.split_channel_groups import CHANNEL_GROUPS_ATTR, split_marked_blocks

from test_calibrate_onnx import counting_runs, scales_by_location

DATA = np.random.default_rng(3).standard_normal((16, 1, 3, 12, 12)).astype(np.float32)
SMALL = [0, 2, 4, 6]  # channels whose range is ~100x below the others'


def block_model() -> onnx.ModelProto:
    """conv -> hard-swish -> depthwise conv -> relu -> conv, as batch norm leaves a mobile
    network: half the depthwise input's channels ~100x smaller, their kernels ~100x larger."""
    rng = np.random.default_rng(4)
    channels = 8
    w1 = rng.standard_normal((channels, 3, 1, 1)).astype(np.float32)
    w1[SMALL] *= 0.01
    w2 = rng.standard_normal((channels, 1, 3, 3)).astype(np.float32) * 0.3
    w2[SMALL] *= 100
    nodes = [
        helper.make_node("Conv", ["input", "w1", "b1"], ["c1"], name="pw"),
        helper.make_node("HardSwish", ["c1"], ["h1"], name="hs"),
        helper.make_node("Conv", ["h1", "w2"], ["c2"], name="dw", pads=[1, 1, 1, 1], group=channels),
        helper.make_node("Relu", ["c2"], ["r2"], name="relu"),
        helper.make_node("Conv", ["r2", "w3"], ["output"], name="project"),
    ]
    b1 = (rng.standard_normal(channels) * 0.1).astype(np.float32)
    b1[SMALL] *= 0.01
    initializers = [numpy_helper.from_array(w1, "w1"), numpy_helper.from_array(b1, "b1"),
                    numpy_helper.from_array(w2, "w2"),
                    numpy_helper.from_array((rng.standard_normal((4, channels, 1, 1)) * 0.3).astype(np.float32), "w3")]
    graph = helper.make_graph(nodes, "block", [helper.make_tensor_value_info("input", TensorProto.FLOAT, [1, 3, 12, 12])],
                              [helper.make_tensor_value_info("output", TensorProto.FLOAT, [1, 4, 12, 12])], initializers)
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])


def test_two_groups_where_one_scale_rounds_the_channels_of_large_kernels_coarsely():
    large_small_kernels = np.array([10.0, 1.0, 10.0, 1.0])  # batch norm's: large for the channels of small range
    assert two_groups(np.array([1.0, 100.0, 1.2, 90.0]), large_small_kernels).tolist() == [0, 1, 0, 1]
    assert two_groups(np.array([1.0, 1.5, 2.0, 1.2]), large_small_kernels) is None
    # with equal kernels the large channels' own rounding dominates: two groups only halve it
    assert two_groups(np.array([1.0, 100.0, 1.2, 90.0]), np.ones(4)) is None
    # small channels whose kernels are small too pass little error on: no reason to split
    assert two_groups(np.array([1.0, 100.0, 1.2, 90.0]), np.array([0.01, 1.0, 0.01, 1.0])) is None
    # the best split is between the ranges, not around the one largest channel
    assert two_groups(np.array([0.03, 5.0, 0.02, 10.0, 2.5]), np.array([100, 1, 100, 1, 1])).tolist() == [0, 1, 0, 1, 1]
    assert two_groups(np.array([3.0]), np.ones(1)) is None


def test_the_split_block_computes_the_float_result_of_the_block():
    module = float_cleanup(xnpu.import_onnx(block_model()))
    before = xnpu.run(module, DATA[:4].reshape(4, 3, 12, 12))["output"]
    assert choose_channel_groups(module, DATA, "onnxruntime") == 1
    groups = next(op for op in entry_function(module).walk() if CHANNEL_GROUPS_ATTR in op.attributes)
    assert sorted(np.flatnonzero(np.asarray(groups.attributes[CHANNEL_GROUPS_ATTR].get_values()) == 0)) == SMALL
    split_marked_blocks(module)
    ops = list(entry_function(module).walk())
    depthwise = [op for op in ops if isinstance(op, nn.Conv2dOp) and op.is_depthwise]
    assert sorted(op.group.value.data for op in depthwise) == [4, 4]
    assert sum(isinstance(op, nn.ConcatOp) for op in ops) == 1
    after = xnpu.run(module, DATA[:4].reshape(4, 3, 12, 12))["output"]
    # the same products, summed per output channel in the same order up to the permuted 1x1 conv
    np.testing.assert_allclose(after, before, rtol=1e-5, atol=1e-5 * np.abs(before).max())


def test_calibration_reads_each_groups_channels_from_the_models_tensors(monkeypatch):
    def split_module():
        module = float_cleanup(xnpu.import_onnx(block_model()))
        choose_channel_groups(module, DATA, "interpreter")
        split_marked_blocks(module)
        return module

    module = split_module()
    runs = counting_runs(monkeypatch)
    ours = scales_by_location(calibrate(module, DATA, bins=512))
    assert runs["onnxruntime"] >= 1 and runs["interpreter"] == 0
    reference = scales_by_location(calibrate(split_module(), DATA, bins=512, runtime="interpreter"))
    assert ours.keys() == reference.keys()
    for name, scale in reference.items():  # tolerance: test_calibrate_onnx's
        assert ours[name] == pytest.approx(scale, rel=2 / 512), name


def test_each_group_keeps_its_scale_down_to_the_binary_and_the_error_drops():
    x = DATA[8:].reshape(8, 3, 12, 12)
    reference = xnpu.run(xnpu.compile(block_model(), None, stop_at="nn"), x)["output"]
    errors = {}
    for split in (False, True):
        fixed = xnpu.compile(block_model(), DATA[:8], stop_at="fixed", channel_groups=split)
        got = xnpu.run(fixed, x)["output"]
        errors[split] = float(np.square(got - reference).mean())
        binary = xnpu.compile(block_model(), DATA[:8], channel_groups=split)
        assert np.array_equal(xnpu.run(binary, x)["output"], got)  # binary == fixed, bit for bit
    # the small channels' steps shrink ~100-fold: their error, which the large kernels pass on, vanishes
    assert errors[True] < 0.2 * errors[False], errors


@pytest.mark.parametrize("mark, message", [
    ("array<i64: 0>", "needs one group index >= 0 per channel \\(3\\), got 1"),
    ("array<i64: 0, -1, 1>", "needs one group index >= 0 per channel"),
    ('"two"', "must be an array<i64: ...> of group indices"),
])
def test_a_malformed_mark_is_one_error_naming_the_op(mark, message):
    from pathlib import Path

    from xnpu.ir.io import parse_ir

    text = (Path(__file__).parents[1] / "filecheck" / "transforms" / "split_channel_groups.mlir").read_text()
    module = parse_ir(text.replace("xnpu.channel_groups = array<i64: 1, 0, 1>", f"xnpu.channel_groups = {mark}"))
    with pytest.raises(xnpu.XnpuError, match=f"'nn.conv2d' at loc\\(\"dw\"\\): xnpu.channel_groups {message}"):
        split_marked_blocks(module)
