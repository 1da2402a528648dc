"""GELU spelled with Erf and SiLU (x * sigmoid(x)) become one table each, LayerNorm spelled with
ReduceMean, Pow, Sqrt and Div one op (fuse-activations), which expand-layer-norm spells in ops
the accelerator runs: each against onnxruntime at the float level, the binary against the fixed
level on both targets, and where each runs."""

from __future__ import annotations

import math

import numpy as np
import onnx
import onnxruntime as ort
import pytest
from onnx import TensorProto, helper, numpy_helper

import xnpu
from xnpu.dialects import npu
from xnpu.driver.pipeline import float_cleanup
from xnpu.ir.context import make_context
from xnpu.semantics import float_ops
from xnpu.transforms.fuse_activations import FuseActivationsPass

C = 8


def _constant(name: str, value) -> onnx.TensorProto:
    return numpy_helper.from_array(np.asarray(value, np.float32), name)


def _conv_gelu_silu() -> onnx.ModelProto:
    """conv -> GELU (PyTorch's Erf spelling) -> conv -> SiLU."""
    rng = np.random.default_rng(11)
    initializers = [_constant("w1", rng.normal(0, 0.4, (C, 3, 3, 3))), _constant("w2", rng.normal(0, 0.3, (4, C, 1, 1))),
                    _constant("root2", [math.sqrt(2.0)]), _constant("one", [1.0]), _constant("half", [0.5])]
    nodes = [
        helper.make_node("Conv", ["x", "w1"], ["c1"], pads=[1, 1, 1, 1], name="conv1"),
        helper.make_node("Div", ["c1", "root2"], ["scaled"], name="gelu_div"),
        helper.make_node("Erf", ["scaled"], ["erf"], name="gelu_erf"),
        helper.make_node("Add", ["erf", "one"], ["gate"], name="gelu_add"),
        helper.make_node("Mul", ["c1", "gate"], ["product"], name="gelu_mul"),
        helper.make_node("Mul", ["product", "half"], ["g"], name="gelu_half"),
        helper.make_node("Conv", ["g", "w2"], ["c2"], name="conv2"),
        helper.make_node("Sigmoid", ["c2"], ["s"], name="silu_sigmoid"),
        helper.make_node("Mul", ["c2", "s"], ["y"], name="silu_mul"),
    ]
    graph = helper.make_graph(nodes, "gelu_silu", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 3, 8, 8])],
                              [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, 4, 8, 8])], initializers)
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])


def _layer_norm() -> onnx.ModelProto:
    """A LayerNorm over the channels of [N, L, C] as exporters before opset 17 write it."""
    rng = np.random.default_rng(5)
    initializers = [_constant("two", [2.0]), _constant("eps", [1e-5]), _constant("gamma", rng.normal(1, 0.3, C)),
                    _constant("beta", rng.normal(0, 0.3, C))]
    nodes = [
        helper.make_node("ReduceMean", ["x"], ["mean"], axes=[-1], name="mean"),
        helper.make_node("Sub", ["x", "mean"], ["centred"], name="sub"),
        helper.make_node("Pow", ["centred", "two"], ["squared"], name="pow"),
        helper.make_node("ReduceMean", ["squared"], ["variance"], axes=[-1], name="variance"),
        helper.make_node("Add", ["variance", "eps"], ["shifted"], name="add_eps"),
        helper.make_node("Sqrt", ["shifted"], ["deviation"], name="sqrt"),
        helper.make_node("Div", ["centred", "deviation"], ["normalized"], name="div"),
        helper.make_node("Mul", ["normalized", "gamma"], ["scaled"], name="mul_gamma"),
        helper.make_node("Add", ["scaled", "beta"], ["y"], name="add_beta"),
    ]
    graph = helper.make_graph(nodes, "layer_norm", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 5, C])],
                              [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, 5, C])], initializers)
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)])


def _reference(model: onnx.ModelProto, samples: np.ndarray) -> np.ndarray:
    session = ort.InferenceSession(model.SerializeToString(), providers=["CPUExecutionProvider"])
    return np.concatenate([session.run(None, {"x": s[None]})[0] for s in samples])


def test_gelu_and_silu_functions():
    x = np.linspace(-6, 6, 101, dtype=np.float32)
    expected_gelu = [v / 2 * (1 + math.erf(v / math.sqrt(2))) for v in x.astype(np.float64)]
    np.testing.assert_allclose(float_ops.gelu(x), expected_gelu, rtol=1e-6, atol=1e-7)
    np.testing.assert_allclose(float_ops.silu(x), x / (1 + np.exp(-x.astype(np.float64))), rtol=1e-6, atol=1e-7)


@pytest.mark.parametrize("target", ["xnpu_default", "xnpu_lite"])
def test_gelu_and_silu_are_tables_on_the_accelerator(target):
    model = _conv_gelu_silu()
    data = np.random.default_rng(3).normal(0, 1, (16, 3, 8, 8)).astype(np.float32)
    calibration, samples = data[:12], data[12:]
    reference = _reference(model, samples)

    float_module = xnpu.import_onnx(model)
    np.testing.assert_allclose(xnpu.run(float_module, samples)["y"], reference, rtol=1e-5, atol=1e-5)

    fixed_module = xnpu.quantize(model, calibration)
    assert sum(op.name == "fixed.table" for op in fixed_module.walk()) == 2  # one table each, nothing else
    assert not any(op.name in ("fixed.mul", "fixed.add") for op in fixed_module.walk())
    fixed_outputs = xnpu.run(fixed_module, samples)["y"]
    binary = xnpu.compile(model, calibration, target=target)
    np.testing.assert_array_equal(xnpu.run(binary, samples)["y"], fixed_outputs)
    placement = xnpu.placement_of(binary)
    assert placement.host == [] and {"gelu_half", "silu_mul"} <= set(placement.accelerator)
    npu_module = xnpu.compile(model, calibration, target=target, stop_at="npu")
    convs = [op for op in npu_module.walk() if isinstance(op, npu.ConvOp)]
    assert len(convs) == 2 and all(op.table is not None for op in convs)  # each table in its conv's output stage
    cosine = float(np.dot(fixed_outputs.ravel(), reference.ravel())
                   / (np.linalg.norm(fixed_outputs) * np.linalg.norm(reference)))
    assert cosine > 0.99, cosine


def test_layer_norm_spelled_out_is_one_op():
    module = xnpu.import_onnx(_layer_norm())
    FuseActivationsPass().apply(make_context(), module)
    assert [op.name for op in module.walk() if op.dialect_name() == "nn" and op.name != "nn.constant"] == ["nn.layer_norm"]


@pytest.mark.parametrize("target", ["xnpu_default", "xnpu_lite"])
def test_layer_norm_runs_on_the_accelerator(target):
    """expand-layer-norm: matmuls by constants, a subtraction, an exact mean of squares (R19), a
    reciprocal square root table, a multiplication and an addition; the fixed level within 5% of
    the output's range of onnxruntime's float LayerNorm (int8 outputs: 1/127 of the range is one
    code), the binary bit for bit the fixed level. xnpu_lite has no element-wise mul: the
    normalizing multiplication is seed 002's depthwise convolution of the flattened tokens."""
    model = _layer_norm()
    data = np.random.default_rng(4).normal(1, 3, (16, 5, C)).astype(np.float32)
    calibration, samples = data[:12], data[12:]
    reference = _reference(model, samples)

    float_module = xnpu.import_onnx(model)
    float_cleanup(float_module)
    assert "nn.layer_norm" not in [op.name for op in float_module.walk()]
    np.testing.assert_allclose(xnpu.run(float_module, samples)["y"], reference, rtol=1e-4, atol=1e-4)
    fixed_outputs = xnpu.run(xnpu.quantize(model, calibration), samples)["y"]
    assert np.abs(fixed_outputs - reference).max() <= 0.05 * np.abs(reference).max()
    binary = xnpu.compile(model, calibration, target=target)
    np.testing.assert_array_equal(xnpu.run(binary, samples)["y"], fixed_outputs)
    placement = xnpu.placement_of(binary)
    nodes = {"mean", "sub", "pow", "variance", "add_eps", "sqrt", "div", "mul_gamma", "add_beta"}
    assert set(placement.accelerator) == nodes
    assert placement.host == [], placement.summary()


def test_a_mean_over_another_axis_is_no_layer_norm():
    model = _layer_norm()
    for node in model.graph.node:
        if node.op_type == "ReduceMean":
            del node.attribute[:]
            node.attribute.append(helper.make_attribute("axes", [1]))
    model.graph.output[0].type.tensor_type.shape.dim[1].dim_value = 5
    module = xnpu.import_onnx(model)
    float_cleanup(module)
    names = [op.name for op in module.walk()]
    assert "nn.layer_norm" not in names and names.count("nn.onnx") == 4  # the two means, pow and sqrt stay
