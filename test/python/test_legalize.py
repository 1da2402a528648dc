"""legalize{target}: seeds 001 and 002 as PDL patterns, chosen from the target's parameters.

The properties: method 2 (three saturating bias-adds) is clip(q, lo, hi) for every int8 q;
method 1 (power-of-two saturation) is within 1/128 of hard_tanh; seed 002's mul as a
depthwise conv is bit-identical to fixed.mul, also compiled for xnpu_lite and run on the
simulator; nothing fires on a target that runs the op natively; the supported-operators
document is what driver/capabilities.py generates today.
"""

from __future__ import annotations

import math
from pathlib import Path

import numpy as np
import pytest

import xnpu
from xnpu.ir.context import make_context
from xnpu.ir.io import parse_ir, print_ir
from xnpu.lowering.legalize import LegalizePass, legalize_patterns
from xnpu.pdl.driver import apply_patterns
from xnpu.pdl.patterns import PatternContext
from xnpu.driver.pipeline import lower_to_isa
from xnpu.dialects.traits import is_native
from xnpu.driver.capabilities import op_capabilities, supported_ops_document
from xnpu.target.description import load_target, parse_target
from xnpu.backend.emit import emit_binary
from xnpu.backend.simulator import run_binary

ROOT = Path(__file__).resolve().parents[2]


def legalize(module, target="xnpu_lite", **options):
    context = PatternContext(load_target(target), {"clamp_method": options.get("clamp_method", "auto")})
    return apply_patterns(module, legalize_patterns(), context)


def clamp_module(lo: int, hi: int, shape=(1, 1, 1, 255), scale=1.0, user="") -> str:
    t = "x".join(map(str, shape))
    return f"""
builtin.module {{
  func.func @main(%a: tensor<{t}xf32> {{nn.name = "a"}}) -> (tensor<{t}xf32> {{nn.name = "y"}}) {{
    %0 = fixed.quantize %a {{scale = {scale!r} : f64}} : tensor<{t}xf32> -> tensor<{t}xi8>
    %1 = fixed.clamp %0 {{min = {lo} : i64, max = {hi} : i64}} : tensor<{t}xi8> -> tensor<{t}xi8> loc("clip")
    %2 = fixed.dequantize %1 {{scale = {scale!r} : f64}} : tensor<{t}xi8> -> tensor<{t}xf32>
    func.return %2 : tensor<{t}xf32>
  }}
}}
"""


ALL_CODES = np.arange(-127, 128, dtype=np.float32).reshape(1, 1, 1, 255)


# --------------------------------------------------------------------------------------
# Seed 001, method 2
# --------------------------------------------------------------------------------------


@pytest.mark.parametrize("smin, smax", [(-127, 127), (-128, 127)])
def test_bias_formula_is_exact_clip_for_every_bound_pair(smin, smax):
    """The general biases, on a unit saturating to [smin, smax], give clip(q, lo, hi) for
    every q in [smin, smax] and every smin <= lo <= hi <= smax (the seed's [-128, 127] too)."""
    q = np.arange(smin, smax + 1)[:, None, None]
    lo = np.arange(smin, smax + 1)[None, :, None]
    hi = np.arange(smin, smax + 1)[None, None, :]
    valid = lo <= hi
    sat = lambda v: np.clip(v, smin, smax)
    y = sat(sat(sat(q + (smax - hi)) + (-(smax - hi) - (lo - smin))) + (lo - smin))
    expected = np.clip(q, lo, np.maximum(lo, hi))
    assert np.array_equal(np.where(valid, y, 0), np.where(valid, expected, 0))


def test_three_bias_adds_are_bit_identical_to_clamp_for_all_codes():
    rng = np.random.default_rng(1)
    pairs = [(-127, 126), (-126, 127), (0, 6), (-1, 1), (5, 5), (-127, -127), (127, 127), (-64, 100)]
    pairs += [tuple(sorted(rng.integers(-127, 128, size=2))) for _ in range(24)]
    for lo, hi in pairs:
        module = parse_ir(clamp_module(lo, hi))
        fired = legalize(module)
        assert fired == ["clamp_as_bias_adds"], (lo, hi, fired)
        assert "fixed.clamp" not in print_ir(module)
        out = xnpu.run(module, ALL_CODES)["y"]
        assert np.array_equal(out, np.clip(ALL_CODES, lo, hi)), (lo, hi)


def test_three_bias_adds_compile_for_lite_bit_exact():
    for lo, hi in [(-64, 100), (0, 6), (-30, -2)]:
        module = parse_ir(clamp_module(lo, hi, shape=(1, 11, 3, 5), scale=0.05))
        legalize(module)
        data = np.random.default_rng(lo + 200).uniform(-7, 7, size=(3, 11, 3, 5)).astype(np.float32)
        expected = xnpu.run(module, data)["y"]
        lower_to_isa(module, "xnpu_lite")
        text = print_ir(module)
        assert text.count("isa.conv") == 3 and "isa.table" not in text and "isa.clamp" not in text
        assert np.array_equal(run_binary(emit_binary(module), data)["y"], expected)


def test_relu_six_hard_tanh_and_clip_from_onnx_fire_only_on_lite():
    onnx = pytest.importorskip("onnx")
    from onnx import TensorProto, helper

    nodes = [
        helper.make_node("Clip", ["x", "lo6", "hi6"], ["r6"], name="relu6"),
        helper.make_node("Clip", ["r6", "m1", "p1"], ["ht"], name="hard_tanh"),
        helper.make_node("Clip", ["ht", "lo", "hi"], ["y"], name="clip"),
    ]
    inits = [helper.make_tensor(n, TensorProto.FLOAT, [], [v]) for n, v in
             [("lo6", 0.0), ("hi6", 6.0), ("m1", -1.0), ("p1", 1.0), ("lo", -0.5), ("hi", 0.75)]]
    graph = helper.make_graph(nodes, "g", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 4, 3, 3])],
                              [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, 4, 3, 3])], inits)
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)])
    data = np.random.default_rng(3).uniform(-8, 8, size=(16, 4, 3, 3)).astype(np.float32)
    outputs = {}
    for target in ("xnpu_default", "xnpu_lite"):
        fixed_module = xnpu.compile(model, data, target=target, stop_at="fixed", progress=False)
        fired = legalize(fixed_module, target)
        assert (fired == []) == (target == "xnpu_default"), fired
        outputs[target] = run_binary(emit_binary(lower_to_isa(fixed_module, target)), data)["y"]
    assert np.array_equal(outputs["xnpu_default"], outputs["xnpu_lite"])


# --------------------------------------------------------------------------------------
# Seed 001, method 1 and the power-of-two calibration
# --------------------------------------------------------------------------------------


@pytest.mark.parametrize("s", [3, 5, 6])
def test_pow2_saturation_is_within_one_128th_of_hard_tanh(s):
    module = parse_ir(clamp_module(-(1 << s), 1 << s, scale=2.0 ** -s))
    fired = legalize(module, clamp_method="saturate")
    assert fired == ["clamp_by_pow2_saturation"]
    text = print_ir(module)
    assert text.count("fixed.conv2d") == 1 and f"[[[{1 << (7 - s)}]]]" in text
    x = np.linspace(-3, 3, 255, dtype=np.float32).reshape(ALL_CODES.shape)
    got = xnpu.run(module, x)["y"]
    quantized = np.clip(np.round(x * 2 ** s), -127, 127) / 2 ** s
    error = np.abs(got - np.clip(quantized, -1, 1))
    assert error.max() <= 1 / 128 + 1e-7
    assert error.max() > 0  # the top is 127/128, not 1: the bound is reached, not vacuous
    assert got.max() == 127 / 128 and got.min() == -127 / 128  # symmetric saturation (R3): both ends


def test_pow2_saturation_users_absorb_the_shift_exactly():
    """A conv user's rescale shifts k more and a dequantize user's scale shrinks by 2^k: below
    saturation the outputs are exactly those of the clamp; a max pool user cannot absorb."""
    text = """
builtin.module {
  func.func @main(%a: tensor<1x2x3x3xf32> {nn.name = "a"}) -> (tensor<1x2x3x3xf32> {nn.name = "y"}, tensor<1x2x3x3xf32> {nn.name = "z"}) {
    %0 = fixed.quantize %a {scale = 0.03125 : f64} : tensor<1x2x3x3xf32> -> tensor<1x2x3x3xi8>
    %1 = fixed.clamp %0 {min = -32 : i64, max = 32 : i64, scale = 0.03125 : f64} : tensor<1x2x3x3xi8> -> tensor<1x2x3x3xi8> loc("hard_tanh")
    %w = fixed.constant dense<3> : tensor<2x2x1x1xi8>
    %2 = fixed.conv2d %1, %w {strides = array<i64: 1, 1>, pads = array<i64: 0, 0, 0, 0>, dilations = array<i64: 1, 1>, group = 1 : i64} : (tensor<1x2x3x3xi8>, tensor<2x2x1x1xi8>) -> tensor<1x2x3x3xi32> loc("conv")
    %3 = fixed.rescale %2 {multiplier = array<i64: 16384>, shift = array<i64: 16>} : tensor<1x2x3x3xi32> -> tensor<1x2x3x3xi8> loc("conv")
    %4 = fixed.dequantize %3 {scale = 0.03125 : f64} : tensor<1x2x3x3xi8> -> tensor<1x2x3x3xf32>
    %5 = fixed.dequantize %1 {scale = 0.03125 : f64} : tensor<1x2x3x3xi8> -> tensor<1x2x3x3xf32>
    func.return %4, %5 : tensor<1x2x3x3xf32>, tensor<1x2x3x3xf32>
  }
}
"""
    inside = np.random.default_rng(5).uniform(-0.95, 0.95, size=(4, 2, 3, 3)).astype(np.float32)
    module = parse_ir(text)
    expected = xnpu.run(module, inside)
    assert legalize(module, clamp_method="saturate") == ["clamp_by_pow2_saturation"]
    printed = print_ir(module)
    assert "shift = array<i64: 18>" in printed  # 16 + k, k = 7 - 5
    got = xnpu.run(module, inside)
    assert all(np.array_equal(got[name], expected[name]) for name in expected)
    lower_to_isa(module, "xnpu_lite")
    assert all(np.array_equal(run_binary(emit_binary(module), inside)[name], expected[name]) for name in expected)
    pooled = text.replace("fixed.conv2d %1, %w", "fixed.conv2d %p, %w").replace(
        "    %w = fixed.constant",
        '    %p = fixed.max_pool %1 {kernel_shape = array<i64: 1, 1>, strides = array<i64: 1, 1>, pads = array<i64: 0, 0, 0, 0>, '
        'dilations = array<i64: 1, 1>, ceil_mode = 0 : i64} : tensor<1x2x3x3xi8> -> tensor<1x2x3x3xi8>\n    %w = fixed.constant')
    assert legalize(parse_ir(pooled), clamp_method="saturate") == ["clamp_as_bias_adds"]


def test_pow2_saturation_falls_back_to_bias_adds_where_it_does_not_apply():
    module = parse_ir(clamp_module(-20, 20, scale=2.0 ** -5))  # not [-2^s, 2^s]
    assert legalize(module, clamp_method="saturate") == ["clamp_as_bias_adds"]
    module = parse_ir(clamp_module(-32, 32, scale=2.0 ** -5))
    assert legalize(module, clamp_method="auto") == ["clamp_as_bias_adds"]  # auto is exact


def test_hard_tanh_on_shift_7_data_needs_nothing():
    module = parse_ir(clamp_module(-127, 127, scale=2.0 ** -7))  # clip(x, -1, 1) at s = 7
    assert legalize(module, clamp_method="saturate") == []


def test_pow2_calibration_rounds_scales_up_to_powers_of_two():
    from xnpu.transforms.calibrate import CalibratePass, calibrate

    onnx = pytest.importorskip("onnx")
    from onnx import TensorProto, helper

    node = helper.make_node("Relu", ["x"], ["y"], name="relu")
    graph = helper.make_graph([node], "g", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 2, 2, 2])],
                              [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, 2, 2, 2])])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)])
    data = np.random.default_rng(0).uniform(-3, 2.5, size=(8, 2, 2, 2)).astype(np.float32)
    module = calibrate(xnpu.import_onnx(model), data, pow2=True)
    scales = [float(v) for v in __import__("re").findall(r"nn.scale = ([0-9.e+-]+)", print_ir(module))]
    assert scales and all(math.frexp(s)[0] == 0.5 for s in scales)
    assert max(scales) * 127 >= np.abs(data).max()  # rounded up: the range still fits
    assert "pow2" in {f.name for f in __import__("dataclasses").fields(CalibratePass)}


# --------------------------------------------------------------------------------------
# Seed 002
# --------------------------------------------------------------------------------------


def mul_module(shape, rhs_shape, m=20972, s=21, swap=False) -> str:
    t, r = ("x".join(map(str, v)) for v in (shape, rhs_shape))
    lhs, rhs = ("%1", "%0") if swap else ("%0", "%1")
    lt, rt = (r, t) if swap else (t, r)
    return f"""
builtin.module {{
  func.func @main(%a: tensor<{t}xf32> {{nn.name = "a"}}, %b: tensor<{r}xf32> {{nn.name = "b"}}) -> (tensor<{t}xf32> {{nn.name = "y"}}) {{
    %0 = fixed.quantize %a {{scale = 0.01 : f64}} : tensor<{t}xf32> -> tensor<{t}xi8>
    %1 = fixed.quantize %b {{scale = 0.02 : f64}} : tensor<{r}xf32> -> tensor<{r}xi8>
    %2 = fixed.mul {lhs}, {rhs} : (tensor<{lt}xi8>, tensor<{rt}xi8>) -> tensor<{t}xi16> loc("mul")
    %3 = fixed.rescale %2 {{multiplier = array<i64: {m}>, shift = array<i64: {s}>}} : tensor<{t}xi16> -> tensor<{t}xi8> loc("mul")
    %4 = fixed.dequantize %3 {{scale = 0.03 : f64}} : tensor<{t}xi8> -> tensor<{t}xf32>
    func.return %4 : tensor<{t}xf32>
  }}
}}
"""


def check_mul(text, shapes, expected_pattern, samples=2, seed=0):
    rng = np.random.default_rng(seed)
    data = {"a": rng.uniform(-1.3, 1.3, size=(samples, *shapes[0][1:])).astype(np.float32),
            "b": rng.uniform(-2.6, 2.6, size=(samples, *shapes[1][1:])).astype(np.float32)}
    module = parse_ir(text)
    expected = xnpu.run(module, data)["y"]
    assert legalize(module) == [expected_pattern]
    assert "fixed.mul" not in print_ir(module)
    assert np.array_equal(xnpu.run(module, data)["y"], expected)
    lower_to_isa(module, "xnpu_lite")
    assert np.array_equal(run_binary(emit_binary(module), data)["y"], expected)
    return module


def test_mul_as_depthwise_conv_random_shapes_and_scales_bit_exact():
    rng = np.random.default_rng(7)
    for trial in range(6):
        shape = (1, int(rng.integers(1, 6)), int(rng.integers(1, 9)), int(rng.integers(1, 9)))
        if math.prod(shape) == 1:
            continue
        m, s = int(rng.integers(16384, 32768)), int(rng.integers(12, 24))
        check_mul(mul_module(shape, shape, m, s), (shape, shape), "mul_as_depthwise_conv", seed=trial)


def test_mul_channels_not_aligned_and_beyond_one_sram_tile():
    lite = load_target("xnpu_lite")
    shape = (1, 3, 5, 7)  # C1 = 105, not a multiple of the channel alignment
    assert math.prod(shape) % lite.memory.channel_alignment
    check_mul(mul_module(shape, shape), (shape, shape), "mul_as_depthwise_conv")
    big = (1, 17, 12, 11)  # C1 = 2244 > the 2048 channels of one CONV: several channel chunks
    assert math.prod(big) > lite.conv.max_channels
    module = check_mul(mul_module(big, big), (big, big), "mul_as_depthwise_conv", samples=1)
    assert print_ir(module).count("isa.conv") > 1


@pytest.mark.parametrize("swap", [False, True])
def test_squeeze_excitation_mul_is_a_depthwise_conv_of_the_map(swap):
    shape, gate = (1, 12, 5, 6), (1, 12, 1, 1)
    pattern = "channel_mul_as_depthwise_conv"  # one pattern for both operand orders: fixed.mul commutes
    module = check_mul(mul_module(shape, gate, swap=swap), (shape, gate), pattern)
    assert "isa.eltwise" not in print_ir(module)


def test_mul_left_alone_on_default_and_when_not_legalizable():
    shape = (1, 3, 4, 4)
    module = parse_ir(mul_module(shape, shape))
    assert legalize(module, "xnpu_default") == []
    scalar = parse_ir(mul_module(shape, (1, 1, 1, 1)))  # a scalar broadcast matches no pattern
    assert legalize(scalar) == []


# --------------------------------------------------------------------------------------
# Capabilities from hardware parameters, the report, the pass
# --------------------------------------------------------------------------------------


def test_capabilities_follow_the_target_description():
    default, lite = op_capabilities("xnpu_default"), op_capabilities("xnpu_lite")
    assert default["fixed.clamp"].native and not lite["fixed.clamp"].native
    assert default["fixed.mul"].native and not lite["fixed.mul"].native
    text = (Path(load_target("xnpu_lite").__class__.__module__ and ROOT / "target" / "xnpu_lite.toml")).read_text()
    import tomllib

    document = tomllib.loads(text)
    document["units"]["clamp"]["present"] = True
    document["units"]["eltwise"]["ops"] = ["add", "sub", "mul"]
    document["units"]["table"]["present"] = False
    changed = op_capabilities(parse_target(document))
    assert changed["fixed.clamp"].native and changed["fixed.mul"].native and not changed["fixed.table"].native


def test_conv_native_within_limits():
    lite = load_target("xnpu_lite")
    text = """
builtin.module {
  func.func @main(%a: tensor<1x2x20x20xf32>) -> tensor<1x2x%Hx%Hxf32> {
    %0 = fixed.quantize %a {scale = 0.01 : f64} : tensor<1x2x20x20xf32> -> tensor<1x2x20x20xi8>
    %w = fixed.constant dense<1> : tensor<2x2x%Kx%Kxi8>
    %1 = fixed.conv2d %0, %w {strides = array<i64: 1, 1>, pads = array<i64: 0, 0, 0, 0>, dilations = array<i64: 1, 1>, group = 1 : i64} : (tensor<1x2x20x20xi8>, tensor<2x2x%Kx%Kxi8>) -> tensor<1x2x%Hx%Hxi32>
    %2 = fixed.rescale %1 {multiplier = array<i64: 16384>, shift = array<i64: 20>} : tensor<1x2x%Hx%Hxi32> -> tensor<1x2x%Hx%Hxi8>
    %3 = fixed.dequantize %2 {scale = 0.01 : f64} : tensor<1x2x%Hx%Hxi8> -> tensor<1x2x%Hx%Hxf32>
    func.return %3 : tensor<1x2x%Hx%Hxf32>
  }
}
"""
    for k, native in ((7, True), (9, False)):
        module = parse_ir(text.replace("%K", str(k)).replace("%H", str(20 - k + 1)))
        conv = next(op for op in module.walk() if op.name == "fixed.conv2d")
        assert is_native(conv, lite) == native


def test_supported_ops_document_is_current():
    doc = ROOT / "docs" / "supported-ops.md"
    assert doc.read_text() == supported_ops_document(), (
        "docs/supported-ops.md is stale: run `python -m xnpu.driver.capabilities`"
    )


def test_xnpu_opt_supported_ops_and_target(tmp_path):
    from test_tools import forked_tool  # a process of its own without an interpreter's start

    result = forked_tool("xnpu-opt", "--supported-ops", "--target", "xnpu_lite")
    assert result.returncode == 0
    assert "| `fixed.mul` | no |" in result.stdout and "mul_as_depthwise_conv" in result.stdout
    source = tmp_path / "c.mlir"
    source.write_text(clamp_module(-5, 9))
    lite = forked_tool("xnpu-opt", source, "--target=xnpu_lite", "-p", "legalize")
    assert lite.returncode == 0 and lite.stdout.count("fixed.conv2d") == 3
    explicit = forked_tool("xnpu-opt", source, "--target=xnpu_lite", "-p", 'legalize{target="xnpu_default"}')
    assert explicit.returncode == 0 and "fixed.conv2d" not in explicit.stdout  # the pipeline's own option wins
    bad = forked_tool("xnpu-opt", source, "-p", "legalize{clamp-method=fast}")
    assert bad.returncode == 1 and "clamp-method" in bad.stderr and "Traceback" not in bad.stderr


def test_pass_option_clamp_method_and_registry():
    from xnpu.driver.registry import all_passes

    assert all_passes()["legalize"]() is LegalizePass
    module = parse_ir(clamp_module(-16, 16, scale=2.0 ** -4))
    LegalizePass(target="xnpu_lite", clamp_method="saturate").apply(make_context(), module)
    assert print_ir(module).count("fixed.conv2d") == 1


# --------------------------------------------------------------------------------------
# The bench models on both targets
# --------------------------------------------------------------------------------------

DIGITS = ROOT / ".." / "shared" / "bench" / "digits"


@pytest.mark.parametrize("name", ["digits_plain", "digits_resnet", "digits_se"])
def test_digits_models_bit_identical_on_default_and_lite(name):
    if not DIGITS.is_dir():
        pytest.skip(f"bench data not found at {DIGITS} (../shared/bench/digits)")
    calibration = np.load(DIGITS / "calib_x.npy")[:40]
    data = np.load(DIGITS / "test_x.npy")[:4]
    fixed_module = xnpu.compile(str(DIGITS / f"{name}.onnx"), calibration, stop_at="fixed", progress=False)
    expected = xnpu.run(fixed_module, data)["logits"]
    for target in ("xnpu_default", "xnpu_lite"):
        module = fixed_module.clone()
        fired = legalize(module, target)
        if target == "xnpu_default":
            assert fired == []
        elif name == "digits_se":
            assert fired.count("channel_mul_as_depthwise_conv") == 2  # both squeeze-excitation muls
        binary = emit_binary(lower_to_isa(module, target))
        assert np.array_equal(run_binary(binary, data)["logits"], expected), target


def test_compile_runs_legalize_for_the_target():
    if not DIGITS.is_dir():
        pytest.skip(f"bench data not found at {DIGITS} (../shared/bench/digits)")
    calibration = np.load(DIGITS / "calib_x.npy")[:20]
    steps = []
    binary = xnpu.compile(str(DIGITS / "digits_se.onnx"), calibration, target="xnpu_lite", progress=False,
                          after_pass=lambda name, module: steps.append(name))
    assert steps.index("legalize") == steps.index("lower-fixed-to-npu") - 1
    data = np.load(DIGITS / "test_x.npy")[:2]
    fixed_module = xnpu.compile(str(DIGITS / "digits_se.onnx"), calibration, stop_at="fixed", progress=False)
    assert np.array_equal(run_binary(binary, data)["logits"], xnpu.run(fixed_module, data)["logits"])
