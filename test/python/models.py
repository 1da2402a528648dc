"""Small ONNX models the lowering tests share, built with onnx.helper, and the bundled and
bench models with their calibration and test data."""

from __future__ import annotations

import functools
from pathlib import Path

import numpy as np
import onnx
import pytest
from onnx import TensorProto, helper, numpy_helper

import xnpu
from xnpu.ir.io import print_ir

ROOT = Path(__file__).resolve().parents[2]
EXAMPLES = ROOT / "examples"
DIGITS = ROOT / ".." / "shared" / "bench" / "digits"


def model_and_data(name: str):
    """(model, calibration data, test inputs) of tiny_cnn, the zoo model or a digits model."""
    if name == "tiny_cnn":
        data = np.load(EXAMPLES / "tiny_calib.npy")
        return EXAMPLES / "tiny_cnn.onnx", data, data[:6]
    if name == "zoo":
        data = np.random.default_rng(3).standard_normal((8, 3, 40, 40)).astype(np.float32)
        return zoo_model(), data, data[:3]
    if not DIGITS.is_dir():
        pytest.skip(f"bench data not found at {DIGITS} (../shared/bench/digits)")
    return DIGITS / f"{name}.onnx", np.load(DIGITS / "calib_x.npy")[:40], np.load(DIGITS / "test_x.npy")[:6]


@functools.lru_cache(maxsize=None)
def fixed_text(name: str) -> str:
    """The model quantized to the fixed level, as text (parse it afresh for each use)."""
    model, calibration, _ = model_and_data(name)
    return print_ir(xnpu.quantize(xnpu.import_onnx(model), calibration, progress=False))


def zoo_model() -> onnx.ModelProto:
    """One of each unit's harder cases: depthwise and grouped convs, average pooling per output
    position (count_include_pad=0), ceil-mode max pooling, a table, a concat, a clip, a gemm."""
    rng = np.random.default_rng(7)

    def weight(name, *shape):
        return numpy_helper.from_array((rng.standard_normal(shape) * 0.3).astype(np.float32), name)

    init = [
        weight("wa", 8, 3, 3, 3), weight("ba", 8), weight("wd", 8, 1, 3, 3), weight("wg", 16, 4, 1, 1),
        weight("wf", 5, 16), weight("bf", 5),
        numpy_helper.from_array(np.array(0.0, np.float32), "lo"), numpy_helper.from_array(np.array(0.4, np.float32), "hi"),
    ]
    nodes = [
        helper.make_node("Conv", ["x", "wa", "ba"], ["a"], name="conv_a", kernel_shape=[3, 3], pads=[1, 1, 1, 1]),
        helper.make_node("Relu", ["a"], ["ar"], name="relu_a"),
        helper.make_node("Conv", ["ar", "wd"], ["d"], name="dw", kernel_shape=[3, 3], pads=[1, 1, 1, 1], group=8),
        helper.make_node("AveragePool", ["d"], ["ap"], name="avg", kernel_shape=[3, 3], strides=[2, 2],
                         pads=[1, 1, 1, 1], count_include_pad=0),
        helper.make_node("MaxPool", ["ar"], ["mp"], name="max", kernel_shape=[3, 3], strides=[2, 2], ceil_mode=1),
        helper.make_node("Sigmoid", ["mp"], ["sg"], name="sigmoid"),
        helper.make_node("Concat", ["ap", "sg"], ["cat"], name="concat", axis=1),
        helper.make_node("Clip", ["cat", "lo", "hi"], ["cl"], name="clip"),
        helper.make_node("Conv", ["cl", "wg"], ["y"], name="grouped", kernel_shape=[1, 1], group=4),
        helper.make_node("GlobalAveragePool", ["y"], ["gp"], name="gap"),
        helper.make_node("Flatten", ["gp"], ["fl"], name="flatten"),
        helper.make_node("Gemm", ["fl", "wf", "bf"], ["z"], name="fc", transB=1),
    ]
    graph = helper.make_graph(
        nodes, "zoo", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 3, 40, 40])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, 16, 20, 20]),
         helper.make_tensor_value_info("z", TensorProto.FLOAT, [1, 5])], init,
    )
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])


def random_conv_parameters(rng: np.random.Generator) -> tuple:
    """(channels, height, width, kernel, stride, dilation, pads, group, output channels) of a
    random convolution: 1, 3, 8 or 20 channels, 5..39 pixels a side, kernel 1..5, stride 1..3,
    dilation 1..2, pads 0..2, dense or depthwise (a kernel that does not fit becomes 1x1)."""
    c = int(rng.choice([1, 3, 8, 20]))
    h, w = (int(v) for v in rng.integers(5, 40, 2))
    k, s, d = int(rng.integers(1, 6)), int(rng.integers(1, 4)), int(rng.integers(1, 3))
    pads = [int(v) for v in rng.integers(0, 3, 4)]
    group = int(rng.choice([1, c])) if c > 1 else 1
    out_c = c if group == c > 1 else int(rng.choice([4, 16, 24]))
    extent = d * (k - 1) + 1
    if h + pads[0] + pads[2] < extent or w + pads[1] + pads[3] < extent:
        k = 1
    return c, h, w, k, s, d, pads, group, out_c
