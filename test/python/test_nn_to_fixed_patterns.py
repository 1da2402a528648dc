"""The declarative nn -> fixed lowering (lowering/nn_to_fixed/*.mlir and natives.py).

Every shipped pattern fires; one mul pattern serves both operand orders; the pass options
add pattern files and native functions; an op no lowering matches is one error. And the
lowering is the one it replaced, bit for bit: for every bench model and the example, the
fixed-level outputs on calibration data have the digests recorded from the imperative
lowering (commit e2db39b, `lowering/nn_to_fixed.py`) in data/nn_to_fixed_reference.json.

The digests are of values that went through no float sum: calibration (float32 GEMMs whose
summation order a BLAS chooses per machine) is not rerun; the scales it gave where the digests
were recorded are kept beside them and written into the freshly imported graph, so what is
compared is the lowering and the exact integer arithmetic alone.
"""

from __future__ import annotations

import hashlib
import json
from pathlib import Path

import numpy as np
import pytest
from xdsl.dialects.builtin import DenseArrayBase, FloatAttr, f32

import xnpu
from xnpu.ir.context import make_context
from xnpu.dialects import nn
from xnpu.driver.pipeline import float_cleanup
from xnpu.transforms.calibrate import SCALE_ATTR, WEIGHT_SCALES_ATTR, annotate_arguments, entry_function, weight_scales
from xnpu.core.errors import XnpuError
from xnpu.ir.io import parse_ir, print_ir
from xnpu.lowering import nn_to_fixed
from xnpu.lowering.nn_to_fixed import FoldQuantizePairsPass, LowerNNToFixedPass, nn_to_fixed_patterns, refine_scales
from xnpu.pdl.driver import apply_patterns
from xnpu.pdl.patterns import PatternContext

pytestmark = pytest.mark.float_sums  # results went through float sums: `make blas-variance` reruns them

REPO = Path(__file__).resolve().parents[2]
BENCH = REPO.parent / "shared" / "bench"
REFERENCE = Path(__file__).resolve().parent / "data" / "nn_to_fixed_reference.json"
IMAGENET_MEAN = np.array([0.485, 0.456, 0.406], np.float32).reshape(1, 3, 1, 1)
IMAGENET_STD = np.array([0.229, 0.224, 0.225], np.float32).reshape(1, 3, 1, 1)

# model -> (onnx path, calibration samples); the ImageNet-size ones are heavy: two images
MODELS = {
    "tiny_cnn": (REPO / "examples" / "tiny_cnn.onnx", lambda: np.load(REPO / "examples" / "tiny_calib.npy")),
    "digits_plain": (BENCH / "digits" / "digits_plain.onnx", lambda: np.load(BENCH / "digits" / "calib_x.npy")[:50]),
    "digits_resnet": (BENCH / "digits" / "digits_resnet.onnx", lambda: np.load(BENCH / "digits" / "calib_x.npy")[:50]),
    "digits_se": (BENCH / "digits" / "digits_se.onnx", lambda: np.load(BENCH / "digits" / "calib_x.npy")[:50]),
    "resnet18_like": (BENCH / "imagenet_like" / "resnet18_like.onnx", lambda: imagenet_calibration(2)),
    "mobilenetv2_like": (BENCH / "imagenet_like" / "mobilenetv2_like.onnx", lambda: imagenet_calibration(2)),
}
# the variant only changes adds: both for the models that have some
CASES = [("tiny_cnn", "two_stage"), ("digits_plain", "two_stage"), ("digits_se", "two_stage"),
         ("digits_resnet", "two_stage"), ("digits_resnet", "direct"), ("resnet18_like", "two_stage"),
         ("resnet18_like", "direct"), ("mobilenetv2_like", "two_stage"), ("mobilenetv2_like", "direct")]


def imagenet_calibration(count: int) -> np.ndarray:
    raw = np.load(BENCH / "imagenet_like" / "images_u8.npy", mmap_mode="r")[:count]
    return ((raw.astype(np.float32) / 255.0 - IMAGENET_MEAN) / IMAGENET_STD).astype(np.float32)


def scales_of(module) -> dict:
    """The activation scales calibration recorded on a float graph: each input's and, in walk
    order, each nn op's (float32 values, exact in JSON as Python floats)."""
    function = entry_function(module)
    return {"arguments": [attrs.data[SCALE_ATTR].value.data for attrs in function.arg_attrs.data],
            "ops": [op.attributes[SCALE_ATTR].value.data for op in calibrated_ops(function)]}


def calibrated_ops(function) -> list:
    return [op for op in function.walk() if op.dialect_name() == "nn" and not isinstance(op, nn.ConstantOp)]


def with_scales(module, recorded: dict):
    """`module` (after the float cleanup) carrying the recorded activation scales instead of a
    new calibration; weight scales are max|w| per channel, which no summation order changes."""
    function = entry_function(module)
    annotate_arguments(function, recorded["arguments"])
    ops = calibrated_ops(function)
    assert len(ops) == len(recorded["ops"]), "the float graph changed since the scales were recorded"
    for op, scale in zip(ops, recorded["ops"]):
        op.attributes[SCALE_ATTR] = FloatAttr(scale, f32)
        if isinstance(op, (nn.ConvolutionOp, nn.GemmOp)):
            op.attributes[WEIGHT_SCALES_ATTR] = DenseArrayBase.from_list(f32, [float(w) for w in weight_scales(op, True)])
    return module


def fixed_output_digests(name: str, variant: str, recorded: dict) -> dict[str, str]:
    """sha256 of each output of the model lowered with its recorded scales and run on its
    calibration samples: quantize (R4), integer arithmetic and dequantize, no float sum."""
    path, data = MODELS[name]
    calibration = data()
    module = with_scales(float_cleanup(xnpu.import_onnx(path)), recorded)
    LowerNNToFixedPass(variant=variant).apply(make_context(), module)
    FoldQuantizePairsPass().apply(make_context(), module)
    outputs = xnpu.run(module, calibration)
    return {key: hashlib.sha256(np.ascontiguousarray(value, np.float32).tobytes()).hexdigest()
            for key, value in sorted(outputs.items())}


@pytest.mark.parametrize("name,variant", CASES, ids=[f"{n}-{v}" for n, v in CASES])
def test_fixed_outputs_equal_the_imperative_lowering(name, variant):
    if not MODELS[name][0].exists():
        pytest.skip(f"{MODELS[name][0]} not found (expected ../shared/bench)")
    reference = json.loads(REFERENCE.read_text())
    assert fixed_output_digests(name, variant, reference["scales"][name]) == reference["digests"][f"{name}/{variant}"]


# --------------------------------------------------------------------------------------
# The patterns themselves
# --------------------------------------------------------------------------------------

EVERY_PATTERN = """
func.func @main(%x: tensor<1x2x4x4xf32> {nn.name = "x", nn.scale = 0.03 : f32}, %g: tensor<1x2x1x1xf32> {nn.name = "g", nn.scale = 0.01 : f32}) -> (tensor<1x2x2x2xf32> {nn.name = "y"}) {
  %c = nn.constant dense<[[[[0.5]], [[-1.0]]]]> : tensor<1x2x1x1xf32>
  %xc = nn.mul %x, %c {nn.scale = 0.03 : f32} : (tensor<1x2x4x4xf32>, tensor<1x2x1x1xf32>) -> tensor<1x2x4x4xf32>
  %cx = nn.mul %c, %x {nn.scale = 0.03 : f32} : (tensor<1x2x1x1xf32>, tensor<1x2x4x4xf32>) -> tensor<1x2x4x4xf32>
  %xg = nn.mul %x, %g {nn.scale = 0.02 : f32} : (tensor<1x2x4x4xf32>, tensor<1x2x1x1xf32>) -> tensor<1x2x4x4xf32>
  %gx = nn.mul %g, %x {nn.scale = 0.02 : f32} : (tensor<1x2x1x1xf32>, tensor<1x2x4x4xf32>) -> tensor<1x2x4x4xf32>
  %s = nn.add %xc, %cx {nn.scale = 0.05 : f32} : (tensor<1x2x4x4xf32>, tensor<1x2x4x4xf32>) -> tensor<1x2x4x4xf32>
  %d = nn.sub %xg, %gx {nn.scale = 0.01 : f32} : (tensor<1x2x4x4xf32>, tensor<1x2x4x4xf32>) -> tensor<1x2x4x4xf32>
  %e = nn.add %s, %d {nn.scale = 0.05 : f32} : (tensor<1x2x4x4xf32>, tensor<1x2x4x4xf32>) -> tensor<1x2x4x4xf32>
  %r = nn.relu %e {nn.scale = 0.05 : f32} : tensor<1x2x4x4xf32> -> tensor<1x2x4x4xf32>
  %h = nn.hard_swish %r {nn.scale = 0.04 : f32} : tensor<1x2x4x4xf32> -> tensor<1x2x4x4xf32>
  %t = nn.clip %h {min = -1.0 : f32, max = 1.0 : f32, nn.scale = 0.01 : f32} : tensor<1x2x4x4xf32> -> tensor<1x2x4x4xf32>
  %m = nn.max_pool %t {ceil_mode = 0 : i64, dilations = array<i64: 1, 1>, kernel_shape = array<i64: 2, 2>, pads = array<i64: 0, 0, 0, 0>, strides = array<i64: 1, 1>, nn.scale = 0.01 : f32} : tensor<1x2x4x4xf32> -> tensor<1x2x3x3xf32>
  %a = nn.average_pool %m {ceil_mode = 0 : i64, count_include_pad = 0 : i64, kernel_shape = array<i64: 2, 2>, pads = array<i64: 0, 0, 0, 0>, strides = array<i64: 1, 1>, nn.scale = 0.01 : f32} : tensor<1x2x3x3xf32> -> tensor<1x2x2x2xf32>
  %p = nn.transpose %a {perm = array<i64: 0, 1, 3, 2>, nn.scale = 0.01 : f32} : tensor<1x2x2x2xf32> -> tensor<1x2x2x2xf32>
  %f = nn.flatten %p {axis = 1 : i64, nn.scale = 0.01 : f32} : tensor<1x2x2x2xf32> -> tensor<1x8xf32>
  %b = nn.reshape %f {nn.scale = 0.01 : f32} : tensor<1x8xf32> -> tensor<1x2x2x2xf32>
  %u = nn.resize %b {mode = "nearest", coordinate_transformation_mode = "asymmetric", nearest_mode = "floor", nn.scale = 0.01 : f32} : tensor<1x2x2x2xf32> -> tensor<1x2x4x4xf32>
  %l = nn.resize %u {mode = "linear", coordinate_transformation_mode = "half_pixel", nn.scale = 0.01 : f32} : tensor<1x2x4x4xf32> -> tensor<1x2x8x8xf32>
  %q = nn.global_average_pool %l {nn.scale = 0.01 : f32} : tensor<1x2x8x8xf32> -> tensor<1x2x1x1xf32>
  %y = nn.mul %b, %q {nn.scale = 0.01 : f32} : (tensor<1x2x2x2xf32>, tensor<1x2x1x1xf32>) -> tensor<1x2x2x2xf32>
  func.return %y : tensor<1x2x2x2xf32>
}
"""


def lower_declaratively(text: str, variant: str = "two_stage"):
    """The module after the pattern files alone (no Python pattern), and the patterns that fired."""
    module = parse_ir(text)
    refine_scales(module.body.block.first_op)
    fired = apply_patterns(module, nn_to_fixed_patterns(), PatternContext(options={"variant": variant}))
    return module, fired


@pytest.mark.parametrize("variant", ["two_stage", "direct"])
def test_every_shipped_pattern_fires_and_runs_like_the_pass(variant):
    module, fired = lower_declaratively(EVERY_PATTERN, variant)
    shipped = {p.name for p in nn_to_fixed_patterns()}
    assert set(fired) == shipped - ({"two_stage_add"} if variant == "direct" else set())  # the direct variant's adds stay direct
    assert fired.count("mul") == 5 and fired.count("quantize_constant") == 2
    assert not any(op.name.startswith("nn.") and op.name != "nn.constant" for op in module.walk())
    passed = parse_ir(EVERY_PATTERN)
    LowerNNToFixedPass(variant=variant).apply(make_context(), passed)
    data = {"x": np.random.default_rng(0).uniform(-3, 3, (1, 2, 4, 4)).astype(np.float32),
            "g": np.random.default_rng(1).uniform(-1, 1, (1, 2, 1, 1)).astype(np.float32)}
    np.testing.assert_array_equal(xnpu.run(module, data)["y"], xnpu.run(passed, data)["y"])


def test_one_mul_pattern_for_both_operand_orders():
    """x * c, c * x, x * g and g * x: the same pattern, each in the float op's operand order;
    mul commutes, so the swapped pairs give the same integers."""
    module, fired = lower_declaratively(EVERY_PATTERN.replace("%s = nn.add %xc, %cx", "%s = nn.add %xc, %xg"))
    text = print_ir(module)
    assert "fixed.constant dense<[[[[64]], [[-127]]]]> : tensor<1x2x1x1xi8>" in text
    products = [op for op in module.walk() if op.name == "fixed.mul"]
    orders = [tuple(v.owner.name for v in op.operands) for op in products[:4]]
    assert orders == [("fixed.quantize", "fixed.constant"), ("fixed.constant", "fixed.quantize"),
                      ("fixed.quantize", "fixed.quantize"), ("fixed.quantize", "fixed.quantize")]
    assert [tuple(op.operands[0].type.get_shape()) for op in products[2:4]] == [(1, 2, 4, 4), (1, 2, 1, 1)]


EXTRA_NATIVES = '''
from xdsl.dialects.builtin import IntegerAttr, i64

from xnpu.pdl.patterns import native_rewrite



@native_rewrite("test_capped_relu_bounds")
def capped_relu_bounds(ctx, op):
    return IntegerAttr(0, i64), IntegerAttr(100, i64)
'''

# a relu capped at code 100, above the shipped @clamp by its benefit
EXTRA_PATTERN = """
pdl.pattern @capped_relu : benefit(5) {
  %x = pdl.operand
  %t = pdl.type
  %root = pdl.operation "nn.relu"(%x : !pdl.value) -> (%t : !pdl.type)
  pdl.rewrite %root {
    %xs, %xt = pdl.apply_native_rewrite "int8_codes"(%x : !pdl.value) : !pdl.attribute, !pdl.type
    %quantize = pdl.operation "fixed.quantize"(%x : !pdl.value) {"scale" = %xs} -> (%xt : !pdl.type)
    %q = pdl.result 0 of %quantize
    %lo, %hi = pdl.apply_native_rewrite "test_capped_relu_bounds"(%root : !pdl.operation) : !pdl.attribute, !pdl.attribute
    %clamp = pdl.operation "fixed.clamp"(%q : !pdl.value) {"min" = %lo, "max" = %hi} -> (%xt : !pdl.type)
    %y = pdl.result 0 of %clamp
    %result = pdl.operation "fixed.dequantize"(%y : !pdl.value) {"scale" = %xs} -> (%t : !pdl.type)
    pdl.replace %root with %result
  }
}
"""

RELU = """
func.func @main(%x: tensor<4xf32> {nn.name = "x", nn.scale = 0.1 : f32}) -> (tensor<4xf32> {nn.name = "y"}) {
  %0 = nn.relu %x : tensor<4xf32> -> tensor<4xf32> loc("relu")
  func.return %0 : tensor<4xf32>
}
"""


def test_pass_options_add_pattern_files_and_natives(tmp_path):
    (tmp_path / "natives.py").write_text(EXTRA_NATIVES)
    (tmp_path / "patterns").mkdir()
    (tmp_path / "patterns" / "relu.mlir").write_text(EXTRA_PATTERN)
    module = parse_ir(RELU)
    LowerNNToFixedPass(patterns=str(tmp_path / "patterns"), natives=str(tmp_path / "natives.py")).apply(make_context(), module)
    assert "fixed.clamp %0 {min = 0 : i64, max = 100 : i64}" in print_ir(module)
    x = np.array([-1.0, 5.0, 12.0, 9.96], np.float32)
    np.testing.assert_allclose(xnpu.run(module, x)["y"], [0.0, 5.0, 10.0, 10.0], rtol=1e-6)


def test_an_op_no_lowering_matches_is_one_error_without_host_fallback(monkeypatch):
    monkeypatch.setattr(nn_to_fixed, "nn_to_fixed_patterns", lambda extra=(): [])
    with pytest.raises(XnpuError, match=r"'nn.relu' at loc\(\"relu\"\): no nn -> fixed lowering matches this op"):
        LowerNNToFixedPass(host_fallback=False).apply(make_context(), parse_ir(RELU))

