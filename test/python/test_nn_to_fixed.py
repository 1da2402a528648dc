"""nn -> fixed lowering: each lowering is checked by running the module before and after it.

Tolerance stated here: a lowered layer's output is within a few output scale units of the
float result (one unit for add/mul, as docs/fixed-point.md R11/R12 promise), and whole bench
networks keep top-1 and a logits cosine >= 0.995 against float.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import xnpu
from xnpu.core.errors import XnpuError
from xnpu.dialects import fixed
from xnpu.ir.context import make_context
from xnpu.lowering.nn_to_fixed import FoldQuantizePairsPass, LowerNNToFixedPass
from xnpu.transforms.calibrate import calibrate

pytestmark = pytest.mark.float_sums  # results went through float sums: `make blas-variance` reruns them

REPO = Path(__file__).resolve().parents[2]
DIGITS = REPO.parent / "shared" / "bench" / "digits"


def lower(module, variant="two_stage", host_fallback=True):
    LowerNNToFixedPass(variant=variant, host_fallback=host_fallback).apply(make_context(), module)
    FoldQuantizePairsPass().apply(make_context(), module)
    module.verify()
    return module


def binary_module(op: str, shape_l, shape_r, s_l: float, s_r: float, s_out: float):
    def t(shape):
        return f"tensor<{'x'.join(map(str, shape))}xf32>"

    out_shape = np.broadcast_shapes(shape_l, shape_r)
    return xnpu.parse_ir(
        f"""func.func @main(%a: {t(shape_l)} {{nn.name = "lhs", nn.scale = {s_l!r} : f32}},
                          %b: {t(shape_r)} {{nn.name = "rhs", nn.scale = {s_r!r} : f32}}) -> ({t(out_shape)} {{nn.name = "out"}}) {{
          %0 = nn.{op} %a, %b {{nn.scale = {s_out!r} : f32}} : ({t(shape_l)}, {t(shape_r)}) -> {t(out_shape)} loc("{op}")
          func.return %0 : {t(out_shape)}
        }}"""
    )


SEED_LHS = np.array([0.5348, 0.1911, 0.0784], np.float32)
SEED_RHS = np.array([0.3846, 0.7731, 0.0100], np.float32)


def seed_scale(values) -> float:
    return float(np.float32(np.abs(values).max() / 127))


@pytest.mark.parametrize("variant", ["two_stage", "direct"])
def test_seed000_add_through_the_lowering_is_exact(variant):
    """R11: the worked example of SEEDS.md 000, via nn.add -> fixed (both requantizations)."""
    s_out = seed_scale(SEED_LHS + SEED_RHS)
    module = lower(binary_module("add", (3,), (3,), seed_scale(SEED_LHS), seed_scale(SEED_RHS), s_out), variant)
    out = xnpu.run(module, {"lhs": SEED_LHS, "rhs": SEED_RHS})["out"]
    np.testing.assert_array_equal(np.round(out / s_out).astype(int), [121, 127, 12])
    np.testing.assert_allclose(out, [0.91864724, 0.96419999, 0.09110551], rtol=1e-6)


def test_seed000_mul_through_the_lowering_is_exact():
    """R12: the worked example of SEEDS.md 000 for mul."""
    s_out = seed_scale(SEED_LHS * SEED_RHS)
    module = lower(binary_module("mul", (3,), (3,), seed_scale(SEED_LHS), seed_scale(SEED_RHS), s_out))
    out = xnpu.run(module, {"lhs": SEED_LHS, "rhs": SEED_RHS})["out"]
    np.testing.assert_array_equal(np.round(out / s_out).astype(int), [127, 90, 1])
    np.testing.assert_allclose(out, [0.20568408, 0.14576037, 0.00161956], rtol=1e-6)


shapes = st.sampled_from([((4,), (4,)), ((2, 3), (2, 3)), ((1, 4, 3, 3), (1, 4, 1, 1)), ((2, 5), (5,))])
scales = st.floats(min_value=1e-3, max_value=4.0)


@settings(max_examples=60, deadline=None)
@given(shapes, scales, scales, scales, st.sampled_from(["add", "sub", "mul"]), st.sampled_from(["two_stage", "direct"]),
       st.integers(0, 2**31 - 1))
def test_add_sub_mul_lowering_within_one_unit(shape_pair, s_l, s_r, s_out, op, variant, seed):
    """R11/R12: the integer result is within 1 unit of the correctly rounded float result."""
    rng = np.random.default_rng(seed)
    shape_l, shape_r = shape_pair
    q_l = rng.integers(-127, 128, shape_l)
    q_r = rng.integers(-127, 128, shape_r)
    x_l, x_r = (q_l * np.float32(s_l)).astype(np.float32), (q_r * np.float32(s_r)).astype(np.float32)
    s_l, s_r, s_out = (float(np.float32(s)) for s in (s_l, s_r, s_out))
    exact = {"add": q_l * s_l + q_r * s_r, "sub": q_l * s_l - q_r * s_r, "mul": (q_l * s_l) * (q_r * s_r)}[op]
    if op == "mul":
        s_out = max(s_out, s_l * s_r / 2**16)  # keep the rescale factor inside the contract (R6)
    module = lower(binary_module(op, shape_l, shape_r, s_l, s_r, s_out), variant)
    codes = np.round(xnpu.run(module, {"lhs": x_l, "rhs": x_r})["out"].astype(np.float64) / s_out)
    expected = np.clip(np.round(exact / s_out), -127, 127)
    assert np.abs(codes - expected).max() <= 1


def conv_module(group: int, pads, strides, with_relu: bool):
    rng = np.random.default_rng(group * 7 + strides[0])
    cin, cout = 4, 4 if group > 1 else 6
    x = "tensor<1x4x7x7xf32>"
    w_shape = (cout, cin // group, 3, 3)
    weights = rng.normal(size=w_shape).astype(np.float32)
    bias = rng.normal(size=cout).astype(np.float32)

    module = xnpu.parse_ir(f"func.func @main(%x: {x} {{nn.name = \"x\"}}) -> {x} {{\n  func.return %x : {x}\n}}")
    from xdsl.dialects import func

    from xnpu.dialects import nn

    function = next(op for op in module.ops if isinstance(op, func.FuncOp))
    block = function.body.block
    ret = block.last_op
    w = nn.ConstantOp(weights)
    b = nn.ConstantOp(bias)
    conv = nn.Conv2dOp(block.args[0], w.result, b.result, strides, pads, (1, 1), group)
    ops = [w, b, conv]
    if with_relu:
        ops.append(nn.ReluOp(conv.result))
    for op in ops:
        block.insert_op_before(op, ret)
    ret.operands = [ops[-1].results[0]]
    function.function_type = type(function.function_type).from_lists(
        [block.args[0].type], [ops[-1].results[0].type]
    )
    function.res_attrs = None
    module.verify()
    return module


@pytest.mark.parametrize(
    "group,pads,strides,with_relu",
    [(1, (1, 1, 1, 1), (1, 1), True), (1, (0, 0, 0, 0), (2, 2), False), (4, (1, 1, 1, 1), (1, 1), True),
     (2, (1, 0, 1, 0), (2, 1), False)],
)
def test_conv_lowering_matches_float_within_two_units(group, pads, strides, with_relu):
    module = conv_module(group, pads, strides, with_relu)
    rng = np.random.default_rng(1)
    data = rng.normal(size=(16, 4, 7, 7)).astype(np.float32)
    reference = xnpu.run(module, data[:4])["output0"]
    calibrate(module, data)
    lower(module)
    scale = float(module.body.block.first_op.body.block.last_op.operands[0].owner.scales()[0])
    out = xnpu.run(module, data[:4])["output0"]
    assert np.abs(out - reference).max() <= 2.5 * scale
    kinds = {op.name for op in module.walk()}
    assert "fixed.conv2d" in kinds and not any(k.startswith("nn.") for k in kinds)


def test_missing_scale_is_one_clear_error():
    module = binary_module("add", (3,), (3,), 0.1, 0.1, 0.1)
    del module.body.block.first_op.body.block.first_op.attributes["nn.scale"]
    with pytest.raises(XnpuError, match=r"'nn.add' at loc\(\"add\"\) has no calibrated scale.*calibrate"):
        lower(module)


SOFTMAX_HEAD = """func.func @main(%x: tensor<1x4xf32> {nn.name = "x", nn.scale = 0.1 : f32}) -> tensor<1x4xf32> {
  %0 = nn.relu %x {nn.scale = 0.1 : f32} : tensor<1x4xf32> -> tensor<1x4xf32> loc("relu")
  %1 = nn.softmax %0 {axis = 1 : i64, nn.scale = 0.01 : f32} : tensor<1x4xf32> -> tensor<1x4xf32> loc("prob")
  func.return %1 : tensor<1x4xf32>
}"""


def test_softmax_without_host_fallback_is_rejected_with_the_reason():
    with pytest.raises(XnpuError, match=r"loc\(\"prob\"\): softmax has no fixed-point lowering"):
        lower(xnpu.parse_ir(SOFTMAX_HEAD), host_fallback=False)


def test_softmax_stays_float_between_a_dequantize_and_the_return():
    module = lower(xnpu.parse_ir(SOFTMAX_HEAD))
    ops = [op.name for op in module.walk()][2:]  # after the module and the function
    assert ops == ["fixed.quantize", "fixed.clamp", "fixed.dequantize", "nn.softmax", "func.return"]
    x = np.array([[1.0, -1.2, 0.6, 0.9]], np.float32)
    codes = np.clip(np.round(x / np.float32(0.1)), 0, 127) * np.float32(0.1)
    expected = np.exp(codes - codes.max()) / np.exp(codes - codes.max()).sum()
    np.testing.assert_allclose(xnpu.run(module, x)["output0"], expected, rtol=1e-6)  # no int8 output step


def test_quantized_example_is_integer_between_its_boundaries():
    module = xnpu.import_onnx(REPO / "examples" / "tiny_cnn.onnx")
    xnpu.quantize(module, np.load(REPO / "examples" / "tiny_calib.npy"))
    names = [op.name for op in module.walk() if op.name.startswith(("fixed.", "nn."))]
    assert names.count("fixed.quantize") == 1 and names.count("fixed.dequantize") == 1
    assert not any(name.startswith("nn.") for name in names)


@pytest.mark.skipif(not DIGITS.is_dir(), reason="../shared/bench/digits not found")
@pytest.mark.parametrize("name", ["digits_plain", "digits_resnet", "digits_se"])
@pytest.mark.parametrize("variant", ["two_stage", "direct"])
def test_digits_models_keep_their_answers_at_the_fixed_level(name, variant):
    module = xnpu.import_onnx(DIGITS / f"{name}.onnx")
    test_x = np.load(DIGITS / "test_x.npy")[:60]
    reference = xnpu.run(module, test_x)["logits"]
    xnpu.quantize(module, np.load(DIGITS / "calib_x.npy")[:100], variant=variant)
    out = xnpu.run(module, test_x)["logits"]
    cosine = (out * reference).sum(1) / np.linalg.norm(out, axis=1) / np.linalg.norm(reference, axis=1)
    assert (out.argmax(1) == reference.argmax(1)).mean() >= 0.98
    assert cosine.mean() >= 0.995
    assert any(isinstance(op, fixed.AddOp) for op in module.walk()) == (name == "digits_resnet")


def test_division_by_a_constant_lowers_and_by_a_tensor_stays_float_or_is_rejected():
    def module(divisor: str):
        return xnpu.parse_ir(
            f"""func.func @main(%x: tensor<1x4xf32> {{nn.name = "x", nn.scale = 0.01 : f32}},
                              %y: tensor<1x4xf32> {{nn.name = "y", nn.scale = 0.01 : f32}}) -> (tensor<1x4xf32> {{nn.name = "out"}}) {{
              %c = nn.constant dense<[[2.0, 4.0, -2.0, 0.5]]> : tensor<1x4xf32>
              %0 = nn.div %x, {divisor} {{nn.scale = 0.02 : f32}} : (tensor<1x4xf32>, tensor<1x4xf32>) -> tensor<1x4xf32> loc("div")
              func.return %0 : tensor<1x4xf32>
            }}"""
        )

    x = np.array([[1.0, -1.2, 0.6, 0.9]], np.float32)
    lowered = lower(module("%c"))
    out = xnpu.run(lowered, {"x": x, "y": x})["out"]
    assert np.abs(out - x / np.array([2.0, 4.0, -2.0, 0.5], np.float32)).max() <= 1.5 * 0.02
    with pytest.raises(XnpuError, match=r"loc\(\"div\"\): division by a tensor has no fixed-point lowering"):
        lower(module("%y"), host_fallback=False)
    on_host = lower(module("%y"))
    # float inputs only the host reads stay float: nothing is rounded to int8 that no unit reads
    assert [op.name for op in on_host.walk()][2:] == ["nn.div", "func.return"]
    y = np.array([[0.5, 0.25, -1.0, 1.0]], np.float32)
    np.testing.assert_array_equal(xnpu.run(on_host, {"x": x, "y": y})["out"], x / y)


# --------------------------------------------------------------------------------------
# Upsampling: fixed level against the float level, within the stated tolerance
# --------------------------------------------------------------------------------------


def single_node_model(node, input_shape, output_shape, initializers=()):
    from onnx import TensorProto, helper

    graph = helper.make_graph(
        [node], "one", [helper.make_tensor_value_info("x", TensorProto.FLOAT, input_shape)],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, output_shape)], list(initializers),
    )
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])


def fixed_and_float(model, shape, samples=12, seed=0):
    """(float outputs, fixed outputs, output scale, input scale) on random data, calibrated on it."""
    data = np.random.default_rng(seed).normal(size=(samples, *shape[1:])).astype(np.float32)
    module = xnpu.import_onnx(model)
    reference = xnpu.run(module, data)["y"]
    # minmax: the bounds of the rules hold for values in range, and max|x| saturates none
    xnpu.quantize(module, data, method="minmax", progress=False)
    out = xnpu.run(module, data)["y"]
    quantize = next(op for op in module.walk() if isinstance(op, fixed.QuantizeOp))
    dequantize = next(op for op in module.walk() if isinstance(op, fixed.DequantizeOp))
    return reference, out, float(dequantize.scales()[0]), quantize.scale.value.data


def resize_node(mode, coordinates, nearest=None, scales=(1, 1, 2, 2)):
    from onnx import helper, numpy_helper

    attrs = {"mode": mode, "coordinate_transformation_mode": coordinates}
    if nearest:
        attrs["nearest_mode"] = nearest
    scales_init = numpy_helper.from_array(np.array(scales, np.float32), "scales")
    return helper.make_node("Resize", ["x", "", "scales"], ["y"], name="resize", **attrs), scales_init


@pytest.mark.parametrize("coordinates,nearest,factor", [
    ("asymmetric", "floor", 2), ("asymmetric", "ceil", 4), ("half_pixel", "round_prefer_floor", 2),
    ("half_pixel", "floor", 3), ("align_corners", "round_prefer_ceil", 2),
])
def test_nearest_resize_is_the_float_result_quantized(coordinates, nearest, factor):
    """R16: nearest moves the input's codes at the input's scale, so fixed = float within s / 2."""
    node, scales = resize_node("nearest", coordinates, nearest, (1, 1, factor, factor))
    reference, out, s_out, s_in = fixed_and_float(
        single_node_model(node, [1, 3, 5, 4], [1, 3, 5 * factor, 4 * factor], [scales]), (1, 3, 5, 4))
    assert s_out == s_in
    assert np.abs(out - reference).max() <= s_out / 2 * (1 + 1e-6)


@pytest.mark.parametrize("coordinates", ["half_pixel", "align_corners"])
def test_linear_resize_within_the_r17_bound(coordinates):
    """R17: |fixed - float| <= s_in / 2 + s_out * (1/2 + 2^-8)."""
    node, scales = resize_node("linear", coordinates)
    reference, out, s_out, s_in = fixed_and_float(single_node_model(node, [1, 3, 6, 5], [1, 3, 12, 10], [scales]),
                                                  (1, 3, 6, 5))
    assert np.abs(out - reference).max() <= s_in / 2 + s_out * (0.5 + 2**-8) + 1e-6


@pytest.mark.parametrize("kernel,stride,pads,output_padding,group,channels", [
    (2, 2, 0, 0, 1, 6), (3, 2, 1, 1, 1, 5), (4, 2, 1, 0, 1, 4), (4, 2, 1, 0, 4, 4), (3, 2, 1, 1, 2, 6),
])
def test_conv_transpose_lowering_matches_float_within_two_units(kernel, stride, pads, output_padding, group, channels):
    """R18: like a convolution, within 2.5 output scale units of float (weights per output channel)."""
    from onnx import helper, numpy_helper

    rng = np.random.default_rng(kernel + group)
    weight = numpy_helper.from_array((rng.normal(size=(4, channels // group, kernel, kernel)) * 0.3).astype(np.float32), "w")
    bias = numpy_helper.from_array(rng.normal(size=channels).astype(np.float32), "b")
    node = helper.make_node("ConvTranspose", ["x", "w", "b"], ["y"], name="deconv", kernel_shape=[kernel, kernel],
                            strides=[stride, stride], pads=[pads] * 4, output_padding=[output_padding] * 2, group=group)
    out_hw = [(5 - 1) * stride + kernel - 2 * pads + output_padding, (6 - 1) * stride + kernel - 2 * pads + output_padding]
    reference, out, s_out, _ = fixed_and_float(single_node_model(node, [1, 4, 5, 6], [1, channels, *out_hw], [weight, bias]),
                                               (1, 4, 5, 6))
    assert np.abs(out - reference).max() <= 2.5 * s_out


def test_tanh_is_a_table_within_half_a_unit_each_side():
    """R15: tanh of every int8 code; tanh' <= 1, so the error is at most (s_in + s_out) / 2."""
    from onnx import helper

    reference, out, s_out, s_in = fixed_and_float(
        single_node_model(helper.make_node("Tanh", ["x"], ["y"], name="tanh"), [1, 2, 4, 4], [1, 2, 4, 4]), (1, 2, 4, 4))
    assert np.abs(out - reference).max() <= (s_in + s_out) / 2 * (1 + 1e-6)
