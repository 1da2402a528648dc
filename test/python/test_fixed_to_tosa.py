"""convert-fixed-to-tosa checked by an independent implementation: IREE compiles the exported
TOSA for this CPU, runs it, and its outputs must equal xnpu's fixed level bit for bit
(docs/tosa.md). Edge values of R4's rounding, rescales at the int32 extremes, every fixed op
(through a small ONNX graph), the example and the three digits benchmark models (bench/iree_cpu.py
checks the ImageNet-size ones, bit for bit on 8 images, with both IREE builds)."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

import numpy as np
import onnx
import pytest
from onnx import TensorProto, helper, numpy_helper
from xdsl.dialects import func
from xdsl.dialects.builtin import FunctionType

import xnpu
from xnpu.dialects import fixed, nn
from xnpu.semantics import fixed_point as fp
from xnpu.semantics import windows

pytest.importorskip("iree.compiler", reason="IREE is in the test extras: pip install -e '.[test]'")
pytest.importorskip("iree.runtime", reason="IREE is in the test extras: pip install -e '.[test]'")

from xnpu.driver.tosa_export import IreeProgram, to_tosa  # noqa: E402

ROOT = Path(__file__).resolve().parents[2]
SHARED_BENCH = ROOT.parent / "shared" / "bench"
BIN = Path(sys.executable).parent


def iree_equals_fixed(module, x: np.ndarray) -> list[np.ndarray]:
    """Run the fixed module with xnpu, export it and run it with IREE; assert equal outputs."""
    expected = list(xnpu.run(module, x).values())
    got = IreeProgram(to_tosa(module))(x)
    assert len(got) == len(expected)
    for want, have in zip(expected, got):
        assert_bit_equal(want, have)
    return got


def assert_bit_equal(want: np.ndarray, have: np.ndarray) -> None:
    assert want.dtype == have.dtype and want.shape == have.shape
    mismatch = np.flatnonzero(want.reshape(-1) != have.reshape(-1))
    first = mismatch[:5]
    assert mismatch.size == 0, (
        f"{mismatch.size} differ, first at {first}: xnpu {want.reshape(-1)[first]} iree {have.reshape(-1)[first]}"
    )


def single_op_module(op_text: str, input_type: str, result_type: str) -> object:
    return xnpu.parse_ir(
        f"builtin.module {{\n  func.func @main(%x: {input_type}) -> {result_type} {{\n"
        f"    %r = {op_text}\n    func.return %r : {result_type}\n  }}\n}}\n"
    )


def in_one_program(cases: dict) -> dict:
    """Each case's single op (`op_text` on %x, its input and result types, its input values) in
    one function with an input and a result per case, run by xnpu and by one IREE build:
    {case: (xnpu's result, IREE's)}, which the test of each case checks equal. One IREE compile
    for a family of cases instead of one per case (~1 s of CPU each); each case's op is there
    as its own test wrote it, so a wrong lowering of any of them still fails its test."""
    args, body, types = [], [], []
    for index, (op_text, input_type, result_type, _) in enumerate(cases.values()):
        args.append(f"%x{index}: {input_type}")
        body.append(f"    %r{index} = " + re.sub(r"%x\b", f"%x{index}", op_text))
        types.append(result_type)
    results = ", ".join(f"%r{index}" for index in range(len(cases)))
    module = xnpu.parse_ir(
        f"builtin.module {{\n  func.func @main({', '.join(args)}) -> ({', '.join(types)}) {{\n" + "\n".join(body)
        + f"\n    func.return {results} : {', '.join(types)}\n  }}\n}}\n")
    inputs = [case[3] for case in cases.values()]
    expected = list(xnpu.run(module, {f"input{index}": x for index, x in enumerate(inputs)}).values())
    got = IreeProgram(to_tosa(module))(*inputs)
    assert len(expected) == len(got) == len(cases)
    return dict(zip(cases, zip(expected, got)))


# --------------------------------------------------------------------------------------
# R4: quantize and dequantize, on the values where rounding decides
# --------------------------------------------------------------------------------------


def quantize_edge_values(scale: float, bits: int) -> np.ndarray:
    """Every threshold and its float32 neighbours, (k + 1/2) * s and its neighbours, the
    specials (+-0, +-inf, NaN, denormals, the largest float32), all with both signs."""
    f32 = np.float32
    thresholds = fp.quantize_thresholds(scale, bits)
    halves = ((np.arange(fp.qmax(bits) + 2) + 0.5) * scale).astype(f32)
    points = np.concatenate([thresholds, halves])
    special = [0.0, np.inf, np.nan, np.finfo(f32).max, np.finfo(f32).tiny, 1e-45, 3e-39, scale, 1e30]
    values = np.concatenate([points, np.nextafter(points, f32(0)), np.nextafter(points, f32(np.inf)), special])
    return np.concatenate([values, -values]).astype(f32)


SCALES = [0.0078740157186985016, 1 / 127, 0.1, 2.0**-7, 1e-3, 3.3, 12345.678, 1e-20, 0.5348 / 127]


def quantize_case(scale: float) -> tuple:
    x = quantize_edge_values(scale, 8)
    n = x.size
    return (f"fixed.quantize %x {{scale = {scale:.17e} : f64}} : tensor<{n}xf32> -> tensor<{n}xi8>",
            f"tensor<{n}xf32>", f"tensor<{n}xi8>", x)


@pytest.fixture(scope="module")
def quantized():
    return in_one_program({scale: quantize_case(scale) for scale in SCALES})


@pytest.mark.parametrize("scale", SCALES)
def test_r4_quantize_in_tosa_rounds_exactly_as_the_contract(scale, quantized):
    want, q = quantized[scale]
    assert_bit_equal(want, q)
    assert np.array_equal(q, fp.quantize(quantize_case(scale)[3], scale, 8))  # the reference itself, not only xnpu.run
    assert q.min() >= -127 and {0, 127, -127} <= set(q.tolist())


def test_r4_quantize_to_int16_and_random_values():
    rng = np.random.default_rng(4)
    scale = 0.000123
    x = np.concatenate([quantize_edge_values(scale, 16), rng.normal(0, 3, 20000).astype(np.float32)])
    n = x.size
    module = single_op_module(
        f"fixed.quantize %x {{scale = {scale:.17e} : f64}} : tensor<1x{n}xf32> -> tensor<1x{n}xi16>",
        f"tensor<1x{n}xf32>", f"tensor<1x{n}xi16>",
    )
    iree_equals_fixed(module, x.reshape(1, n))


DEQUANTIZE_SCALES = {"per_tensor": [0.0123], "per_channel": [0.5, 1e-3, 7.77e-5]}


def dequantize_case(axis_scales: list[float]) -> tuple:
    channels = len(axis_scales)
    codes = np.tile(np.arange(-128, 128, dtype=np.int8), (1, 3, 1)).reshape(1, 3, 256)[:, :channels]
    if channels == 1:
        attrs = f"scale = {axis_scales[0]:.17e} : f64"
        codes = codes[:, :1]
    else:
        attrs = f"scale = array<f64: {', '.join(f'{s:.17e}' for s in axis_scales)}>, axis = 1 : i64"
    t = f"1x{channels}x256"
    return (f"fixed.dequantize %x {{{attrs}}} : tensor<{t}xi8> -> tensor<{t}xf32>", f"tensor<{t}xi8>", f"tensor<{t}xf32>",
            np.ascontiguousarray(codes))


@pytest.fixture(scope="module")
def dequantized():
    return in_one_program({name: dequantize_case(scales) for name, scales in DEQUANTIZE_SCALES.items()})


@pytest.mark.parametrize("kind", list(DEQUANTIZE_SCALES))
def test_r4_dequantize_every_code(kind, dequantized):
    assert_bit_equal(*dequantized[kind])


# --------------------------------------------------------------------------------------
# R6-R9: rescale and shift at the extremes
# --------------------------------------------------------------------------------------

INT32_EXTREMES = np.array([-(2**31), -(2**31) + 1, 2**31 - 1, -1, 0, 1, 2**30, -(2**30), 12345, -12345], dtype=np.int64)


def rescale_case(out_bits: int) -> tuple:
    rng = np.random.default_rng(out_bits)
    channels = 6
    multipliers = [16384, 32767, 0, 20000, 26274, 16385]
    shifts = [31, 62, 0, 40, 22, 33] if out_bits < 32 else [32, 62, 0, 40, 33, 31]
    x = np.concatenate([np.tile(INT32_EXTREMES, (channels, 1)).T, rng.integers(-(2**31), 2**31, (200, channels))])
    x = x.astype(np.int32).reshape(1, -1, channels)
    result = f"tensor<1x{x.shape[1]}x{channels}xi{out_bits}>"
    return (f"fixed.rescale %x {{multiplier = array<i64: {', '.join(map(str, multipliers))}>, "
            f"shift = array<i64: {', '.join(map(str, shifts))}>, axis = 2 : i64}} : tensor<1x{x.shape[1]}x{channels}xi32> -> {result}",
            f"tensor<1x{x.shape[1]}x{channels}xi32>", result, x)


RESCALE_BITS = [8, 16, 24, 32]


@pytest.fixture(scope="module")
def rescaled():
    return in_one_program({bits: rescale_case(bits) for bits in RESCALE_BITS})


@pytest.mark.parametrize("out_bits", RESCALE_BITS)
def test_r9_rescale_from_int32_matches_at_the_extremes(out_bits, rescaled):
    assert_bit_equal(*rescaled[out_bits])


SMALL_SHIFTS = [(16384, -1), (22668, 0), (31999, 1), (16384, -8), (0, 0), (16385, 2)]
INT8_CODES = np.arange(-128, 128, dtype=np.int8).reshape(1, 256)


@pytest.fixture(scope="module")
def small_shifts():
    return in_one_program({(multiplier, shift): (
        f"fixed.rescale %x {{multiplier = array<i64: {multiplier}>, shift = array<i64: {shift}>}} : tensor<1x256xi8> -> tensor<1x256xi32>",
        "tensor<1x256xi8>", "tensor<1x256xi32>", INT8_CODES) for multiplier, shift in SMALL_SHIFTS})


@pytest.mark.parametrize("multiplier,shift", SMALL_SHIFTS)
def test_r6_small_shifts_of_int8_become_exact_32_bit_rescales(multiplier, shift, small_shifts):
    """R11's exact 2^15 (shift -1) and other shifts below TOSA's 16-bit minimum of 2."""
    want, y = small_shifts[multiplier, shift]
    assert_bit_equal(want, y)
    assert np.array_equal(y, fp.rescale(INT8_CODES, multiplier, shift, 32))


SHIFTS = [(8, 0, ("i24", "i16")), (3, 1, ("i24", "i16")), (5, 1, ("i16", "i8")), (-4, 0, ("i8", "i16")),
          (-9, 0, ("i16", "i24")), (0, 0, ("i24", "i8"))]


def shift_case(amount: int, rounding: int, types: tuple[str, str]) -> tuple:
    source, result = types
    bits = int(source[1:])
    low, high = fp.storage_range(bits)
    rng = np.random.default_rng(abs(amount))
    x = np.concatenate([[low, low + 1, high, -1, 0, 1, -5, 5, -12, 12], rng.integers(low, high + 1, 500)])
    x = x.astype(fp.storage_dtype(bits)).reshape(1, -1)
    t_in, t_out = f"tensor<1x{x.shape[1]}x{source}>", f"tensor<1x{x.shape[1]}x{result}>"
    return f"fixed.shift %x {{shift = {amount} : i64, rounding = {rounding} : i64}} : {t_in} -> {t_out}", t_in, t_out, x


@pytest.fixture(scope="module")
def shifted():
    return in_one_program({case: shift_case(*case) for case in SHIFTS})


@pytest.mark.parametrize("amount,rounding,types", SHIFTS)
def test_r7_shift_floor_rounding_and_left(amount, rounding, types, shifted):
    assert_bit_equal(*shifted[amount, rounding, types])


# --------------------------------------------------------------------------------------
# R16-R18: resize (tosa.resize or gathers) and transposed convolution
# --------------------------------------------------------------------------------------


def int_array(values) -> str:
    return f"array<i64: {', '.join(str(int(v)) for v in np.asarray(values).reshape(-1))}>"


def linear_taps_attrs(rows, cols) -> str:
    """fixed.resize_linear's properties for (sources, weights) of each axis."""
    return (f"rows = {int_array(rows[0])}, row_weights = {int_array(rows[1])}, "
            f"cols = {int_array(cols[0])}, col_weights = {int_array(cols[1])}")


def edge_codes(shape, bits: int, seed: int) -> np.ndarray:
    """Random codes of `bits` with the extremes of the symmetric range in the first places."""
    low, high = -fp.qmax(bits), fp.qmax(bits)
    x = np.random.default_rng(seed).integers(low, high + 1, shape)
    x.reshape(-1)[:4] = [low, high, low, high]
    return x.astype(fp.storage_dtype(bits))


NEAREST = {  # (ONNX coordinate mode, nearest mode, in -> out) per axis: tosa.resize picks them exactly
    "half_pixel_x3_and_asymmetric_3_to_5": (("half_pixel", "round_prefer_floor", 3, 9),
                                            ("asymmetric", "floor", 3, 5)),
    "align_corners_ceil_and_downscale": (("align_corners", "ceil", 4, 7), ("half_pixel", "round_prefer_ceil", 5, 3)),
}


def nearest_case(case: str, bits: int) -> tuple:
    from xnpu.semantics.float_ops import nearest_source_indices

    (ym, yn, h, oh), (xm, xn, w, ow) = NEAREST[case]
    rows, cols = nearest_source_indices(h, oh, ym, yn), nearest_source_indices(w, ow, xm, xn)
    t_in, t_out = f"tensor<1x3x{h}x{w}xi{bits}>", f"tensor<1x3x{oh}x{ow}xi{bits}>"
    return (f"fixed.resize %x {{rows = {int_array(rows)}, cols = {int_array(cols)}}} : {t_in} -> {t_out}", t_in, t_out,
            edge_codes((1, 3, h, w), bits, oh))


@pytest.fixture(scope="module")
def nearest_resized():
    return in_one_program({(case, bits): nearest_case(case, bits) for case in NEAREST for bits in (8, 16)})


@pytest.mark.parametrize("bits", [8, 16])
@pytest.mark.parametrize("case", list(NEAREST))
def test_r16_nearest_resize_as_tosa_resize(case, bits, nearest_resized):
    op_text, t_in, t_out, _ = nearest_case(case, bits)
    assert '"tosa.resize"' in to_tosa(single_op_module(op_text, t_in, t_out))
    assert_bit_equal(*nearest_resized[case, bits])


def test_r16_resize_by_any_source_rows_as_gathers():
    t_in, t_out = "tensor<1x2x4x5xi8>", "tensor<1x2x3x6xi8>"
    module = single_op_module(
        f"fixed.resize %x {{rows = {int_array([3, 0, 3])}, cols = {int_array([4, 0, 1, 1, 2, 0])}}} : {t_in} -> {t_out}",
        t_in, t_out)
    text = to_tosa(module.clone())
    assert '"tosa.gather"' in text and '"tosa.resize"' not in text
    iree_equals_fixed(module, edge_codes((1, 2, 4, 5), 8, 1))


@pytest.mark.parametrize("modes,sizes,via", [
    (("half_pixel", "half_pixel"), (7, 14, 5, 10), "tosa.resize"),
    (("align_corners", "half_pixel"), (3, 7, 4, 12), "tosa.resize"),
    (("asymmetric", "align_corners"), (4, 8, 5, 9), "tosa.resize"),
    (None, (3, 4, 4, 3), "tosa.gather"),
], ids=["half_pixel_x2", "align_corners_and_x3", "asymmetric_and_align_corners", "any_taps"])
def test_r17_linear_resize_sums_exactly_in_iree(modes, sizes, via):
    """The int32 sums of R17 (then rescaled to int8 as the lowering does), with inputs at +-127."""
    h, oh, w, ow = sizes
    if modes is None:  # weights no TOSA scale gives: gathers, products and sums
        rng = np.random.default_rng(17)
        rows = (rng.integers(0, h, (oh, 2)), np.array([[5, 2], [0, 7], [3, 4], [7, 0]]))
        cols = (rng.integers(0, w, (ow, 2)), np.array([[1, 2], [3, 0], [2, 1]]))
    else:
        rows = windows.linear_resize_taps(h, oh, modes[0])[:2]
        cols = windows.linear_resize_taps(w, ow, modes[1])[:2]
    t_in, t_sum, t_out = f"tensor<1x2x{h}x{w}xi8>", f"tensor<1x2x{oh}x{ow}xi32>", f"tensor<1x2x{oh}x{ow}xi8>"
    module = xnpu.parse_ir(
        f"builtin.module {{\n  func.func @main(%x: {t_in}) -> ({t_sum}, {t_out}) {{\n"
        f"    %s = fixed.resize_linear %x {{{linear_taps_attrs(rows, cols)}}} : {t_in} -> {t_sum}\n"
        f"    %r = fixed.rescale %s {{multiplier = array<i64: 21846>, shift = array<i64: 19>}} : {t_sum} -> {t_out}\n"
        f"    func.return %s, %r : {t_sum}, {t_out}\n  }}\n}}\n")
    text = to_tosa(module.clone())
    assert f'"{via}"' in text
    x = edge_codes((1, 2, h, w), 8, oh)
    x[0, 0] = 127  # every sum at its largest
    iree_equals_fixed(module, x)


@pytest.mark.parametrize("attrs,shapes", [
    ("strides = array<i64: 2, 2>, pads = array<i64: 0, 0, 0, 0>, dilations = array<i64: 1, 1>, "
     "output_padding = array<i64: 0, 0>, group = 1 : i64", ("1x6x5x4", "6x3x2x2", "1x3x10x8")),
    ("strides = array<i64: 2, 3>, pads = array<i64: 1, 0, 2, 1>, dilations = array<i64: 1, 2>, "
     "output_padding = array<i64: 1, 2>, group = 2 : i64", ("1x6x5x4", "6x2x3x3", "1x4x9x15")),
], ids=["stride2_kernel2", "grouped_dilated_padded"])
def test_r18_transposed_convolution_in_iree(attrs, shapes):
    t_in, t_w, t_out = (f"tensor<{s}xi{b}>" for s, b in zip(shapes, (8, 8, 32)))
    c, per_group, kh, kw = map(int, shapes[1].split("x"))
    group = int(attrs.split("group = ")[1].split(" ")[0])
    rng = np.random.default_rng(kh)
    weight = rng.integers(-127, 128, (c, per_group, kh, kw))
    weight.reshape(-1)[:2] = [127, -127]
    bias = rng.integers(-5000, 5000, per_group * group)
    module = xnpu.parse_ir(
        f"builtin.module {{\n  func.func @main(%x: {t_in}) -> {t_out} {{\n"
        f"    %w = fixed.constant dense<{weight.tolist()}> : {t_w}\n"
        f"    %b = fixed.constant dense<{bias.tolist()}> : tensor<{bias.size}xi32>\n"
        f"    %r = fixed.conv_transpose2d %x, %w, %b {{{attrs}}} : ({t_in}, {t_w}, tensor<{bias.size}xi32>) -> {t_out}\n"
        f"    func.return %r : {t_out}\n  }}\n}}\n")
    x = edge_codes(tuple(map(int, shapes[0].split("x"))), 8, 3)
    x[0, :, 0, 0] = 127  # a pixel whose sums reach the extremes of the weights
    iree_equals_fixed(module, x)


# --------------------------------------------------------------------------------------
# Every fixed op, through one small ONNX graph quantized by xnpu
# --------------------------------------------------------------------------------------


def zoo_model() -> onnx.ModelProto:
    """Grouped and depthwise (multiplier 2) convs, avg pool (count_include_pad = 0, ceil mode:
    per-position multipliers), max pool (ceil mode, padding), concat, sigmoid (table), sub,
    add of a rank-3 constant, transpose, reshape, matmul, a rank-1 mul, clip, hard-swish."""
    rng = np.random.default_rng(13)

    def weight(name, *shape):
        return numpy_helper.from_array(rng.normal(0, 0.4, shape).astype(np.float32), name)

    nodes = [
        helper.make_node("Conv", ["x", "w1", "b1"], ["c1"], group=2, pads=[1, 1, 1, 1], strides=[2, 2], name="grouped"),
        helper.make_node("Relu", ["c1"], ["r1"], name="relu"),
        helper.make_node("AveragePool", ["r1"], ["ap"], kernel_shape=[3, 3], strides=[2, 2], pads=[1, 1, 1, 1],
                         count_include_pad=0, ceil_mode=1, name="avg"),
        helper.make_node("MaxPool", ["r1"], ["mp"], kernel_shape=[2, 2], strides=[2, 2], pads=[0, 0, 1, 1], ceil_mode=1, name="max"),
        helper.make_node("Concat", ["ap", "mp"], ["cat"], axis=1, name="concat"),
        helper.make_node("Conv", ["cat", "wd"], ["dw"], group=16, pads=[1, 1, 1, 1], name="depthwise"),
        helper.make_node("Sigmoid", ["dw"], ["sg"], name="sigmoid"),
        helper.make_node("Sub", ["dw", "sg"], ["sub"], name="sub"),
        helper.make_node("Add", ["sub", "bias3"], ["added"], name="add_rank3"),
        helper.make_node("Transpose", ["added"], ["tr"], perm=[0, 2, 3, 1], name="transpose"),
        helper.make_node("Reshape", ["tr", "shape"], ["flat"], name="reshape"),
        helper.make_node("MatMul", ["flat", "m"], ["mm"], name="matmul"),
        helper.make_node("Mul", ["mm", "gain"], ["scaled"], name="mul_rank1"),
        helper.make_node("Clip", ["scaled", "lo", "hi"], ["clipped"], name="clip"),
        helper.make_node("HardSwish", ["clipped"], ["y"], name="hardswish"),
    ]
    initializers = [
        weight("w1", 8, 2, 3, 3), weight("b1", 8), weight("wd", 32, 1, 3, 3), weight("bias3", 32, 1, 1),
        numpy_helper.from_array(np.array([1, 288], np.int64), "shape"), weight("m", 288, 10), weight("gain", 10),
        numpy_helper.from_array(np.array(-2.0, np.float32), "lo"), numpy_helper.from_array(np.array(3.0, np.float32), "hi"),
    ]
    graph = helper.make_graph(
        nodes, "zoo", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 4, 9, 9])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, 10])], initializers,
    )
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])


@pytest.mark.parametrize("variant", ["two_stage", "direct"])
def test_every_fixed_op_runs_bit_exact_in_iree(variant):
    rng = np.random.default_rng(7)
    module = xnpu.import_onnx(zoo_model())
    xnpu.quantize(module, rng.normal(0, 1, (8, 4, 9, 9)).astype(np.float32), variant=variant, progress=False)
    names = {op.name for op in module.walk()}
    for op in ("conv2d", "avg_pool", "max_pool", "concat", "table", "sub", "add", "transpose", "reshape", "gemm", "mul", "clamp"):
        assert f"fixed.{op}" in names, op
    program = IreeProgram(to_tosa(module.clone()))
    for sample in rng.normal(0, 1.5, (4, 1, 4, 9, 9)).astype(np.float32):
        (expected,) = xnpu.run(module, sample).values()
        (got,) = program(sample)
        assert np.array_equal(expected, got)


# --------------------------------------------------------------------------------------
# The example and the benchmark models
# --------------------------------------------------------------------------------------

BENCH = {
    "digits_plain": "digits/digits_plain.onnx",
    "digits_resnet": "digits/digits_resnet.onnx",
    "digits_se": "digits/digits_se.onnx",
}  # the ImageNet-size models take minutes of IREE compiles each: bench/iree_cpu.py runs them
PROBS_TOLERANCE = 1e-6  # float32 exp and reciprocal in IREE against the float64 reference, absolute


def bench_data(name: str) -> tuple[np.ndarray, np.ndarray]:
    """(calibration, evaluation samples): few, the test is about exactness, not accuracy."""
    return (np.load(SHARED_BENCH / "digits" / "calib_x.npy")[:16].astype(np.float32),
            np.load(SHARED_BENCH / "digits" / "test_x.npy")[:3].astype(np.float32))


@pytest.mark.parametrize("name", list(BENCH))
def test_bench_model_in_iree_equals_the_fixed_level(name):
    path = SHARED_BENCH / BENCH[name]
    if not path.exists():
        pytest.skip(f"benchmark model not found at {path} (expected ../shared/bench)")
    calibration, samples = bench_data(name)
    module = xnpu.import_onnx(path)
    xnpu.quantize(module, calibration, progress=False)
    program = IreeProgram(to_tosa(module.clone()))
    for sample in samples:
        (expected,) = xnpu.run(module, sample[None]).values()
        (got,) = program(sample[None])
        assert np.array_equal(expected, got), f"{name}: max |difference| {np.abs(expected - got).max()}"


def also_return(module, value) -> None:
    """Make @main return `value` before its own results (names dropped: output0, output1, ...)."""
    (function,) = [op for op in module.ops if isinstance(op, func.FuncOp)]
    old = function.body.block.last_op
    new = func.ReturnOp(value, *old.arguments)
    function.body.block.insert_op_before(new, old)
    old.detach()
    old.erase()
    function.function_type = FunctionType.from_lists(function.function_type.inputs.data,
                                                     [v.type for v in new.arguments])
    function.res_attrs = None


def softmax_head_model() -> onnx.ModelProto:
    """conv -> hard-swish -> global pool -> gemm -> softmax: mobilenetv3_like's head in small."""
    rng = np.random.default_rng(3)

    def weight(name, *shape):
        return numpy_helper.from_array((rng.standard_normal(shape) * 0.4).astype(np.float32), name)

    nodes = [
        helper.make_node("Conv", ["x", "w", "b"], ["c"], pads=[1, 1, 1, 1], name="conv"),
        helper.make_node("HardSwish", ["c"], ["h"], name="hardswish"),
        helper.make_node("GlobalAveragePool", ["h"], ["p"], name="pool"),
        helper.make_node("Flatten", ["p"], ["f"], name="flatten"),
        helper.make_node("Gemm", ["f", "wf", "bf"], ["logits"], transB=1, name="fc"),
        helper.make_node("Softmax", ["logits"], ["probs"], axis=1, name="softmax"),
    ]
    graph = helper.make_graph(nodes, "head", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 3, 10, 10])],
                              [helper.make_tensor_value_info("probs", TensorProto.FLOAT, [1, 7])],
                              [weight("w", 6, 3, 3, 3), weight("b", 6), weight("wf", 7, 6), weight("bf", 7)])
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 14)])


def test_int8_part_exact_and_host_softmax_within_tolerance():
    """A softmax that stays float for the host (as mobilenetv3_like's) is exported as TOSA float
    ops: the int8 part (its input, the dequantized logits) is bit-exact, the probabilities agree
    to 1e-6. One IREE build returns both."""
    rng = np.random.default_rng(8)
    calibration = rng.normal(0, 1, (8, 3, 10, 10)).astype(np.float32)
    samples = rng.normal(0, 1, (3, 1, 3, 10, 10)).astype(np.float32)
    module = xnpu.import_onnx(softmax_head_model())
    xnpu.quantize(module, calibration, progress=False)
    (softmax,) = [op for op in module.walk() if isinstance(op, nn.SoftmaxOp)]
    assert isinstance(softmax.input.owner, fixed.DequantizeOp)
    also_return(module, softmax.input)
    program = IreeProgram(to_tosa(module.clone()))
    for sample in samples:
        logits, probs = xnpu.run(module, sample).values()
        got_logits, got_probs = program(sample)
        assert np.array_equal(logits, got_logits)
        assert np.abs(probs - got_probs).max() <= PROBS_TOLERANCE
        assert got_probs.argmax() == probs.argmax() and abs(got_probs.sum() - 1) < 1e-5


def test_every_host_float_op_in_iree_within_tolerance():
    """Each float nn op the export writes as TOSA float32 ops (relu, sigmoid, tanh, hard-sigmoid,
    hard-swish, add, sub, mul, div, clip with a run-time bound, softmax) against the float
    interpreter, on dequantized codes that cover the whole int8 range."""
    t = "tensor<1x8x32xf32>"
    ops = [
        f"%relu = nn.relu %a : {t} -> {t}",
        f"%sig = nn.sigmoid %a : {t} -> {t}",
        f"%tanh = nn.tanh %a : {t} -> {t}",
        f"%hsig = nn.hard_sigmoid %a {{alpha = 0.2 : f32, beta = 0.5 : f32}} : {t} -> {t}",
        f"%hswish = nn.hard_swish %a : {t} -> {t}",
        f"%sum = nn.add %a, %b : ({t}, {t}) -> {t}",
        f"%diff = nn.sub %sum, %relu : ({t}, {t}) -> {t}",
        f"%prod = nn.mul %diff, %sig : ({t}, {t}) -> {t}",
        f"%ratio = nn.div %prod, %b : ({t}, {t}) -> {t}",
        f"%clipped = nn.clip %ratio min(%lo : tensor<f32>) {{max = 3.0 : f32}} : {t} -> {t}",
        f"%probs = nn.softmax %clipped {{axis = 1 : i64}} : {t} -> {t}",
    ]
    results = ["%tanh", "%hsig", "%hswish", "%clipped", "%probs"]
    body = "\n    ".join(ops)
    module = xnpu.parse_ir(
        f"builtin.module {{\n  func.func @main(%x: tensor<1x8x32xi8>, %y: tensor<1x8x32xi8>) -> ({', '.join([t] * 5)}) {{\n"
        f"    %a = fixed.dequantize %x {{scale = 0.05 : f64}} : tensor<1x8x32xi8> -> {t}\n"
        f"    %b = fixed.dequantize %y {{scale = 0.02 : f64}} : tensor<1x8x32xi8> -> {t}\n"
        f"    %lo = nn.constant dense<-2.5> : tensor<f32>\n    {body}\n"
        f"    func.return {', '.join(results)} : {', '.join([t] * 5)}\n  }}\n}}\n")
    x = np.arange(-128, 128, dtype=np.int8).reshape(1, 8, 32)
    y = np.roll(x, 37).copy()
    y[y == 0] = 1  # no division by zero
    expected = list(xnpu.run(module, {"input0": x, "input1": y}).values())
    got = IreeProgram(to_tosa(module))(x, y)
    for name, want, have in zip(results, expected, got):
        assert np.abs(want - have).max() <= 1e-5 * max(1.0, np.abs(want).max()), name


def test_example_through_the_command_line_tools(tmp_path):
    """The recipe of docs/tosa.md: xnpu-compile --emit=tosa, iree-compile, iree-run-module with .npy files."""
    example = ROOT / "examples"
    batch = np.load(example / "tiny_calib.npy")[:3]
    np.save(tmp_path / "x.npy", batch[:1])
    np.save(tmp_path / "batch.npy", batch)

    def run(*command):
        done = subprocess.run([str(c) for c in command], capture_output=True, text=True)
        assert done.returncode == 0, done.stderr
        return done

    run(BIN / "xnpu-compile", example / "tiny_cnn.onnx", "--calibration", example / "tiny_calib.npy",
        "--emit=tosa", "-o", tmp_path / "m.tosa.mlir")
    run(BIN / "iree-compile", "--iree-input-type=tosa", "--iree-hal-target-device=local",
        "--iree-hal-local-target-device-backends=llvm-cpu", "--iree-llvmcpu-target-cpu=host",
        tmp_path / "m.tosa.mlir", "-o", tmp_path / "m.vmfb")
    run(BIN / "iree-run-module", f"--module={tmp_path / 'm.vmfb'}", "--function=main",
        f"--input=@{tmp_path / 'x.npy'}", f"--output=@{tmp_path / 'y.npy'}")
    # the reference, the fixed level the recipe's compile exported, computed here (a compile and
    # a run fewer; test_tools.py runs xnpu-run on IR files)
    fixed_level = xnpu.compile(example / "tiny_cnn.onnx", np.load(example / "tiny_calib.npy"), stop_at="fixed",
                               progress=False)
    (fixed_batch,) = xnpu.run(fixed_level, batch).values()
    assert np.array_equal(np.load(tmp_path / "y.npy"), fixed_batch[:1])
    # xnpu-run runs the TOSA file too (through IREE), on every sample of a batch
    run(BIN / "xnpu-run", tmp_path / "m.tosa.mlir", "--input", tmp_path / "batch.npy", "-o", tmp_path / "tosa.npz")
    (tosa_batch,) = np.load(tmp_path / "tosa.npz").values()
    assert tosa_batch.shape == (3, 10) and np.array_equal(tosa_batch, fixed_batch)
