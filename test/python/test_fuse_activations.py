"""fuse-activations: every hard-swish spelling exporters write, in every operand order, becomes
one nn.hard_swish; near misses stay as they are; the float result matches onnxruntime."""

from __future__ import annotations

import itertools
from pathlib import Path

import numpy as np
import pytest
from onnx import TensorProto, helper, numpy_helper

import xnpu
from xnpu.ir.context import make_context
from xnpu.driver.pipeline import float_cleanup
import xnpu.transforms.fuse_activations
from xnpu.transforms.fuse_activations import FuseActivationsPass, activation_patterns

ort = pytest.importorskip("onnxruntime")

RNG = np.random.default_rng(5)
SIXTH = np.float32(1 / 6)


def model_of(nodes, constants, extra_outputs=()):
    """x [1, 4, 5, 5] -> nodes -> y, with float constants as initializers."""
    graph = helper.make_graph(
        nodes,
        "activation",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 4, 5, 5])],
        [helper.make_tensor_value_info(name, TensorProto.FLOAT, None) for name in ("y", *extra_outputs)],
        [numpy_helper.from_array(np.asarray(v, np.float32), k) for k, v in constants.items()],
    )
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 14)])  # HardSwish is opset 14
    model.ir_version = 8
    return model


def fused(model):
    """The nn ops after float_cleanup, and the largest difference from onnxruntime relative to the output."""
    module = xnpu.import_onnx(model)
    float_cleanup(module)
    ops = [op.name for op in module.walk() if op.name.startswith("nn.") and op.name != "nn.constant"]
    x = (RNG.standard_normal((1, 4, 5, 5)) * 4).astype(np.float32)  # across the -3..3 knees
    session = ort.InferenceSession(model.SerializeToString(), providers=["CPUExecutionProvider"])
    reference = session.run(["y"], {"x": x})[0]
    error = np.abs(xnpu.run(module, x)["y"] - reference).max() / np.abs(reference).max()
    return ops, error


def binary(op, lhs, rhs, out, lhs_first):
    return helper.make_node(op, [lhs, rhs] if lhs_first else [rhs, lhs], [out])


def relu6_spelling(add_x_first, mul_x_first, scale, grouping):
    """x * Clip(x + 3, 0, 6) / 6 in one operand order; `scale` is div, mul or mul_first (1/6 * ...)."""
    nodes = [binary("Add", "x", "three", "shifted", add_x_first),
             helper.make_node("Clip", ["shifted", "zero", "six"], ["relu6"])]

    def scaled(source, out):
        if scale == "div":
            return helper.make_node("Div", [source, "six"], [out])
        return binary("Mul", source, "sixth", out, scale == "mul")

    if grouping == "product_first":  # (x * relu6) / 6
        nodes += [binary("Mul", "x", "relu6", "product", mul_x_first), scaled("product", "y")]
    else:  # x * (relu6 / 6)
        nodes += [scaled("relu6", "gate"), binary("Mul", "x", "gate", "y", mul_x_first)]
    return model_of(nodes, {"three": 3.0, "zero": 0.0, "six": 6.0, "sixth": SIXTH})


RELU6_VARIANTS = list(itertools.product([True, False], [True, False], ["div", "mul", "mul_first"],
                                        ["product_first", "gate_first"]))


@pytest.mark.parametrize(
    "add_x_first, mul_x_first, scale, grouping", RELU6_VARIANTS,
    ids=["-".join(["x+3" if a else "3+x", "x*r" if m else "r*x", s, g]) for a, m, s, g in RELU6_VARIANTS],
)
def test_relu6_spellings_become_one_hard_swish(add_x_first, mul_x_first, scale, grouping):
    ops, error = fused(relu6_spelling(add_x_first, mul_x_first, scale, grouping))
    assert ops == ["nn.hard_swish"]
    assert error < 1e-4


@pytest.mark.parametrize("x_first", [True, False], ids=["x*hsig", "hsig*x"])
def test_hard_sigmoid_spelling_becomes_one_hard_swish(x_first):
    nodes = [helper.make_node("HardSigmoid", ["x"], ["gate"], alpha=float(SIXTH), beta=0.5),
             binary("Mul", "x", "gate", "y", x_first)]
    ops, error = fused(model_of(nodes, {}))
    assert ops == ["nn.hard_swish"] and error < 1e-4


def test_hard_swish_op_and_constant_node_bounds():
    op = model_of([helper.make_node("HardSwish", ["x"], ["y"])], {})
    assert fused(op)[0] == ["nn.hard_swish"]
    # bounds and constants as Constant nodes, 1/6 written with 7 digits
    constants = [helper.make_node("Constant", [], [name], value=numpy_helper.from_array(np.float32(v)))
                 for name, v in (("three", 3), ("zero", 0), ("six", 6), ("sixth", 0.1666667))]
    nodes = [*constants, helper.make_node("Add", ["x", "three"], ["shifted"]),
             helper.make_node("Clip", ["shifted", "zero", "six"], ["relu6"]),
             helper.make_node("Mul", ["x", "relu6"], ["product"]), helper.make_node("Mul", ["product", "sixth"], ["y"])]
    ops, error = fused(model_of(nodes, {}))
    assert ops == ["nn.hard_swish"] and error < 1e-4


def test_relu6_over_six_alone_becomes_hard_sigmoid():
    nodes = [helper.make_node("Add", ["x", "three"], ["shifted"]),
             helper.make_node("Clip", ["shifted", "zero", "six"], ["relu6"]),
             helper.make_node("Div", ["relu6", "six"], ["y"])]
    ops, error = fused(model_of(nodes, {"three": 3.0, "zero": 0.0, "six": 6.0}))
    assert ops == ["nn.hard_sigmoid"] and error < 1e-4


NEAR_MISSES = {
    "clip_max_5": ({"three": 3.0, "zero": 0.0, "top": 5.0, "div": 6.0}, "x"),
    "divide_by_5": ({"three": 3.0, "zero": 0.0, "top": 6.0, "div": 5.0}, "x"),
    "shift_by_2": ({"three": 2.0, "zero": 0.0, "top": 6.0, "div": 6.0}, "x"),
    "clip_min_1": ({"three": 3.0, "zero": 1.0, "top": 6.0, "div": 6.0}, "x"),
    "other_tensor": ({"three": 3.0, "zero": 0.0, "top": 6.0, "div": 6.0}, "other"),
}


@pytest.mark.parametrize("case", NEAR_MISSES)
def test_near_misses_are_not_hard_swish(case):
    constants, multiplicand = NEAR_MISSES[case]
    nodes = [helper.make_node("Relu", ["x"], ["other"]),
             helper.make_node("Add", ["x", "three"], ["shifted"]),
             helper.make_node("Clip", ["shifted", "zero", "top"], ["relu6"]),
             helper.make_node("Mul", [multiplicand, "relu6"], ["product"]),
             helper.make_node("Div", ["product", "div"], ["y"])]
    ops, error = fused(model_of(nodes, constants))
    assert "nn.hard_swish" not in ops and "nn.hard_sigmoid" not in ops
    assert ops[-3:] == ["nn.clip", "nn.mul", "nn.div"]
    assert error < 1e-5


def test_hard_sigmoid_with_other_alpha_is_not_hard_swish():
    nodes = [helper.make_node("HardSigmoid", ["x"], ["gate"], alpha=0.2, beta=0.5),
             helper.make_node("Mul", ["x", "gate"], ["y"])]
    ops, _ = fused(model_of(nodes, {}))
    assert ops == ["nn.hard_sigmoid", "nn.mul"]


def test_an_intermediate_with_other_users_stays_for_them():
    nodes = [helper.make_node("Add", ["x", "three"], ["shifted"]),
             helper.make_node("Clip", ["shifted", "zero", "six"], ["relu6"]),
             helper.make_node("Mul", ["x", "relu6"], ["product"]),
             helper.make_node("Div", ["product", "six"], ["y"]),
             helper.make_node("Relu", ["relu6"], ["z"])]
    model = model_of(nodes, {"three": 3.0, "zero": 0.0, "six": 6.0}, extra_outputs=["z"])
    ops, error = fused(model)
    assert ops == ["nn.add", "nn.clip", "nn.hard_swish", "nn.relu"] and error < 1e-4


def test_patterns_are_plain_pdl_files_next_to_the_pass():
    patterns = activation_patterns()
    assert sorted(p.name for p in patterns) == [
        "gelu_from_erf_div", "gelu_from_erf_mul", "gelu_from_half_erf_div",
        "hard_sigmoid_from_relu6_div", "hard_sigmoid_from_relu6_mul", "hard_swish_from_hard_sigmoid",
        "hard_swish_from_relu6_div", "hard_swish_from_relu6_mul", "layer_norm_from_reduce_mean", "silu_from_sigmoid"]
    here = Path(xnpu.transforms.fuse_activations.__file__).parent
    assert {p.source for p in patterns} == {here / "hard_swish.mlir", here / "gelu_silu.mlir", here / "layer_norm.mlir"}
    assert all(p.summary for p in patterns)


def test_pass_is_registered_and_leaves_other_graphs_alone():
    from xnpu.driver.registry import all_passes

    assert all_passes()["fuse-activations"]() is FuseActivationsPass
    model = model_of([helper.make_node("Relu", ["x"], ["r"]), helper.make_node("Add", ["r", "x"], ["y"])], {})
    module = xnpu.import_onnx(model)
    before = xnpu.print_ir(module)
    FuseActivationsPass().apply(make_context(), module)
    assert xnpu.print_ir(module) == before
