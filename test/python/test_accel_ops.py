"""The detector and transformer op set on the accelerator: each small model runs at every level
(its float level against onnxruntime, each target's binary bit for bit against the fixed level)
and the ops it is about are placed on the accelerator."""

from __future__ import annotations

import numpy as np
import onnx
import onnxruntime as ort
import pytest
from onnx import TensorProto, helper, numpy_helper

import xnpu

TARGETS = ("xnpu_default", "xnpu_lite")


def _model(nodes, inputs: dict, outputs: dict, initializers: dict, opset: int = 17) -> onnx.ModelProto:
    graph = helper.make_graph(
        nodes, "accel",
        [helper.make_tensor_value_info(n, TensorProto.FLOAT, s) for n, s in inputs.items()],
        [helper.make_tensor_value_info(n, TensorProto.FLOAT, s) for n, s in outputs.items()],
        [numpy_helper.from_array(np.asarray(v, dtype=np.float32), n) for n, v in initializers.items()])
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", opset)])


def _weights(seed: int, *shape: int) -> np.ndarray:
    return np.random.default_rng(seed).normal(0, 0.4, shape).astype(np.float32)


def _check(model: onnx.ModelProto, shape: tuple[int, ...], on_accelerator: set[str], samples: int = 3,
           lite_host: set[str] = frozenset()) -> dict:
    """Float level == onnxruntime (float32 tolerance), binary == fixed level on both targets, and
    the named nodes on the accelerator, nothing else on the host (on xnpu_lite, which has no
    element-wise mul, `lite_host`); the binaries by target."""
    data = np.random.default_rng(11).normal(0, 1, (12 + samples, *shape[1:])).astype(np.float32)  # stacked on the batch axis
    calibration, inputs = data[:12], data[12:]
    session = ort.InferenceSession(model.SerializeToString(), providers=["CPUExecutionProvider"])
    name = model.graph.input[0].name
    output = model.graph.output[0].name
    reference = np.concatenate([session.run(None, {name: x[None]})[0] for x in inputs])
    float_level = xnpu.run(xnpu.import_onnx(model), inputs)[output]
    np.testing.assert_allclose(float_level, reference, rtol=1e-4, atol=1e-4)  # float32 sums in another order
    fixed_outputs = xnpu.run(xnpu.quantize(model, calibration), inputs)[output]
    binaries = {}
    for target in TARGETS:
        binary = xnpu.compile(model, calibration, target=target, progress=False)
        np.testing.assert_array_equal(xnpu.run(binary, inputs)[output], fixed_outputs)
        placement = xnpu.placement_of(binary)
        on_host = set() if target == "xnpu_default" else set(lite_host)
        assert {node for h in placement.host for node in h.nodes} == on_host, placement.summary()
        assert on_accelerator - on_host <= set(placement.accelerator), placement.summary()
        binaries[target] = binary
    return binaries


def test_tokens_of_rank_3_are_matrices_of_their_last_axis():
    """[1, L, C] tokens: a per-channel bias, a relu, a residual add and a per-channel scale, as a
    transformer block's element-wise ops."""
    nodes = [
        helper.make_node("Add", ["x", "bias"], ["b"], name="bias_add"),
        helper.make_node("Relu", ["b"], ["r"], name="relu"),
        helper.make_node("Add", ["r", "x"], ["s"], name="residual"),
        helper.make_node("Mul", ["s", "gamma"], ["y"], name="scale"),
    ]
    model = _model(nodes, {"x": [1, 6, 8]}, {"y": [1, 6, 8]},
                   {"bias": _weights(1, 8), "gamma": np.abs(_weights(2, 1, 1, 8)) + 0.5})
    _check(model, (1, 6, 8), {"bias_add", "relu", "residual", "scale"}, lite_host={"scale"})


def test_a_matmul_of_tokens_by_a_constant_is_a_fully_connected_conv():
    """[1, L, K] x [K, M] + bias and a swish: one CONV on the L x K matrix (its rows)."""
    nodes = [
        helper.make_node("MatMul", ["x", "w"], ["m"], name="linear"),
        helper.make_node("Add", ["m", "b"], ["a"], name="linear_bias"),
        helper.make_node("Sigmoid", ["a"], ["s"], name="sigmoid"),
        helper.make_node("Mul", ["a", "s"], ["y"], name="swish"),
    ]
    model = _model(nodes, {"x": [1, 5, 12]}, {"y": [1, 5, 16]}, {"w": _weights(3, 12, 16), "b": _weights(4, 16)})
    _check(model, (1, 5, 12), {"linear", "linear_bias", "swish"})  # x * sigmoid(x) is one SiLU table
    npu_module = xnpu.compile(model, np.zeros((2, 5, 12), np.float32) + 0.5, target="xnpu_default", stop_at="npu")
    assert [op.name for op in npu_module.walk() if op.name == "npu.conv"] == ["npu.conv"]


@pytest.mark.parametrize("perm, shape", [((0, 2, 1), (1, 6, 10)), ((0, 2, 1), (1, 10, 6)), ((0, 2, 3, 1), (1, 3, 4, 5))])
def test_a_transpose_swapping_two_blocks_of_axes_is_one_relayout(perm, shape):
    """[1, C, L] -> [1, L, C] (a convolution's map flattened into tokens), [1, C, H, W] -> [1, H, W, C]:
    the map [1, A, 1, B] in NHWC order, by the DMA."""
    out_shape = [shape[p] for p in perm]
    nodes = [
        helper.make_node("Relu", ["x"], ["r"], name="relu"),
        helper.make_node("Transpose", ["r"], ["t"], perm=list(perm), name="swap"),
        helper.make_node("Sigmoid", ["t"], ["y"], name="sigmoid"),
    ]
    model = _model(nodes, {"x": list(shape)}, {"y": out_shape}, {})
    _check(model, shape, {"relu", "sigmoid"})  # the swap: DMA copies (or none) named after their readers
    npu_module = xnpu.compile(model, np.ones((1, *shape[1:]), np.float32), target="xnpu_default", stop_at="npu")
    assert "npu.host" not in str(npu_module) and [op.name for op in npu_module.walk() if op.name == "npu.transpose"]


def test_a_1d_kernel_beyond_the_unit_that_is_a_multiple_of_its_stride_runs_as_hops():
    """An STFT's frames (kernel 32, stride 8 on one channel): the signal read as 8 channels of hops,
    convolved by 1 x 4 folded kernels on the CONV unit, bit for bit the fixed level's sums."""
    nodes = [
        helper.make_node("Conv", ["x", "w"], ["c"], kernel_shape=[32], strides=[8], name="frames"),
        helper.make_node("Relu", ["c"], ["y"], name="relu"),
    ]
    model = _model(nodes, {"x": [1, 1, 64]}, {"y": [1, 6, 5]}, {"w": _weights(6, 6, 1, 32)})
    _check(model, (1, 1, 64), {"frames", "relu"})
    npu_module = xnpu.compile(model, np.ones((1, 1, 64), np.float32), target="xnpu_lite", stop_at="npu")
    (conv,) = [op for op in npu_module.walk() if op.name == "npu.conv"]
    assert list(conv.weight.type.get_shape()) == [6, 8, 1, 4]


@pytest.mark.parametrize("perm, shape", [((0, 2, 1, 3), (1, 4, 6, 3)), ((2, 0, 3, 1, 4), (1, 5, 3, 2, 4))])
def test_a_transpose_swapping_two_blocks_ahead_of_a_kept_one_is_an_interleave(perm, shape):
    """Attention heads [1, H, T, D] -> [1, T, H, D], and a fused qkv [1, T, 3, H, D] -> [3, 1, H, T, D]:
    the A rows of the NHWC map A x B x C stored as interleaved phases by the DMA."""
    out_shape = [shape[p] for p in perm]
    nodes = [
        helper.make_node("Relu", ["x"], ["r"], name="relu"),
        helper.make_node("Transpose", ["r"], ["t"], perm=list(perm), name="heads"),
        helper.make_node("Sigmoid", ["t"], ["y"], name="sigmoid"),
    ]
    model = _model(nodes, {"x": list(shape)}, {"y": out_shape}, {})
    _check(model, shape, {"relu", "sigmoid"})
    npu_module = xnpu.compile(model, np.ones((1, *shape[1:]), np.float32), target="xnpu_default", stop_at="npu")
    assert "npu.host" not in str(npu_module) and [op for op in npu_module.walk() if op.name == "npu.interleave"]


def test_a_mul_of_two_token_tensors_is_a_depthwise_conv_without_an_elementwise_mul():
    """[1, L, C] * [1, L, C] (a LayerNorm's deviations times their reciprocal deviations): on
    xnpu_lite, which has no element-wise mul, seed 002's depthwise 1x1 conv of the L * C
    flattened values by the other operand's as kernels; on xnpu_default the ELTWISE mul."""
    nodes = [
        helper.make_node("Relu", ["x"], ["r"], name="relu"),
        helper.make_node("Sigmoid", ["x"], ["s"], name="gate"),
        helper.make_node("Mul", ["r", "s"], ["y"], name="product"),
    ]
    model = _model(nodes, {"x": [1, 6, 8]}, {"y": [1, 6, 8]}, {})
    binaries = _check(model, (1, 6, 8), {"relu", "gate", "product"})
    assert xnpu.placement_of(binaries["xnpu_lite"]).host == []
