"""The `fixed` dialect: builders, printed form, verifiers and the interpreter (which must
agree with xnpu.semantics.fixed_point, the contract of docs/fixed-point.md)."""

from __future__ import annotations

from collections.abc import Callable, Sequence

import numpy as np
import pytest
from xdsl.dialects import func
from xdsl.dialects.builtin import ArrayAttr, DictionaryAttr, FunctionType, ModuleOp, StringAttr, TensorType, f32
from xdsl.ir import Block, Region, SSAValue

import xnpu
from xnpu.core.errors import XnpuError
from xnpu.dialects import fixed
from xnpu.semantics import convolution, windows
from xnpu.semantics import fixed_point as fp

SEED_LHS = np.array([0.5348, 0.1911, 0.0784], dtype=np.float32)
SEED_RHS = np.array([0.3846, 0.7731, 0.0100], dtype=np.float32)
S_L = float(np.float64([0.5348, 0.1911, 0.0784]).max() / 127)
S_R = float(np.float64([0.3846, 0.7731, 0.0100]).max() / 127)
S_ADD = float((np.float64([0.5348, 0.1911, 0.0784]) + np.float64([0.3846, 0.7731, 0.0100])).max() / 127)
S_MUL = float((np.float64([0.5348, 0.1911, 0.0784]) * np.float64([0.3846, 0.7731, 0.0100])).max() / 127)


def build_module(
    input_types: Sequence[TensorType], names: Sequence[str], body: Callable[[list[SSAValue]], list[tuple[str, object]]]
) -> ModuleOp:
    """A func.func @main whose body is built by `body` (a list of (name, op) results)."""
    block = Block(arg_types=list(input_types))
    outputs = body(list(block.args))
    ops = []
    seen = set()

    def collect(op):
        if id(op) in seen or op.parent is not None:
            return
        for operand in op.operands:
            owner = operand.owner
            if not isinstance(owner, Block):
                collect(owner)
        seen.add(id(op))
        ops.append(op)

    for _, op in outputs:
        collect(op)
    block.add_ops(ops)
    block.add_op(func.ReturnOp(*[op.results[0] for _, op in outputs]))
    name_attrs = lambda values: ArrayAttr([DictionaryAttr({"nn.name": StringAttr(v)}) for v in values])  # noqa: E731
    function = func.FuncOp(
        "main",
        FunctionType.from_lists(list(input_types), [op.results[0].type for _, op in outputs]),
        Region(block),
        arg_attrs=name_attrs(names),
        res_attrs=name_attrs([n for n, _ in outputs]),
    )
    module = ModuleOp([function])
    module.verify()
    return module


# --------------------------------------------------------------------------------------
# Seed 000 through the IR
# --------------------------------------------------------------------------------------


def seed_module_from_builders(variant: str) -> ModuleOp:
    """R11 and R12 as the lowering will emit them, with the builder API."""
    add = fp.add_plan(S_L, S_R, S_ADD, variant)
    mul = fp.mul_plan(S_L, S_R, S_MUL)

    def body(args):
        lhs = fixed.QuantizeOp(args[0], S_L)
        rhs = fixed.QuantizeOp(args[1], S_R)
        i24 = fixed.AddOp(lhs.result, rhs.result, add.lhs_multiplier, add.lhs_shift, add.rhs_multiplier, add.rhs_shift, bits=24)
        if variant == "two_stage":
            i16 = fixed.ShiftOp(i24.result, add.pre_shift, bits=16)
            q_sum = fixed.RescaleOp(i16.result, add.multiplier, add.shift, bits=8, scale=S_ADD)
        else:
            q_sum = fixed.RescaleOp(i24.result, add.multiplier, add.shift, bits=8, scale=S_ADD)
        product = fixed.MulOp(lhs.result, rhs.result, bits=16)
        q_product = fixed.RescaleOp(product.result, mul.multiplier, mul.shift, bits=8, scale=S_MUL)
        return [
            ("sum", fixed.DequantizeOp(q_sum.result, S_ADD)),
            ("product", fixed.DequantizeOp(q_product.result, S_MUL)),
            ("i24", i24),
            ("q_sum", q_sum),
            ("q_product", q_product),
        ]

    vec = TensorType(f32, [3])
    return build_module([vec, vec], ["lhs", "rhs"], body)


@pytest.mark.parametrize("variant", ["two_stage", "direct"])
def test_r11_r12_seed000_through_builders_and_xnpu_run(variant):
    module = seed_module_from_builders(variant)
    out = xnpu.run(module, {"lhs": SEED_LHS, "rhs": SEED_RHS})
    assert out["i24"].dtype == np.int32 and out["i24"].tolist() == [4943220, 5181596, 496228]
    assert out["q_sum"].dtype == np.int8 and out["q_sum"].tolist() == [121, 127, 12]
    assert out["q_product"].tolist() == [127, 90, 1]
    np.testing.assert_allclose(out["sum"], [0.91864724, 0.96419999, 0.09110551], atol=1e-7)
    np.testing.assert_allclose(out["product"], [0.20568408, 0.14576037, 0.00161956], atol=1e-7)
    # the printed module parses back to the same text and runs the same
    text = xnpu.print_ir(module)
    assert xnpu.print_ir(xnpu.parse_ir(text)) == text
    again = xnpu.run(xnpu.parse_ir(text), {"lhs": SEED_LHS, "rhs": SEED_RHS})
    assert again["q_sum"].tolist() == [121, 127, 12]


SEED_TEXT = """
func.func @main(%lhs: tensor<3xf32> {nn.name = "lhs"}, %rhs: tensor<3xf32> {nn.name = "rhs"})
    -> (tensor<3xf32> {nn.name = "sum"}, tensor<3xi16> {nn.name = "i16"}, tensor<3xf32> {nn.name = "product"}) {
  %l = fixed.quantize %lhs {scale = 0.004211023622047245 : f64} : tensor<3xf32> -> tensor<3xi8>
  %r = fixed.quantize %rhs {scale = 0.00608740157480315 : f64} : tensor<3xf32> -> tensor<3xi8>
  %i24 = fixed.add %l, %r {lhs_multiplier = 22668 : i64, lhs_shift = 0 : i64, rhs_multiplier = 16384 : i64, rhs_shift = -1 : i64} : (tensor<3xi8>, tensor<3xi8>) -> tensor<3xi24>
  %i16 = fixed.shift %i24 {shift = 8 : i64, rounding = 0 : i64} : tensor<3xi24> -> tensor<3xi16>
  %s8 = fixed.rescale %i16 {multiplier = array<i64: 26274>, shift = array<i64: 22>} : tensor<3xi16> -> tensor<3xi8>
  %sum = fixed.dequantize %s8 {scale = 0.007592125984251968 : f64} : tensor<3xi8> -> tensor<3xf32>
  %p16 = fixed.mul %l, %r : (tensor<3xi8>, tensor<3xi8>) -> tensor<3xi16>
  %p8 = fixed.rescale %p16 {multiplier = array<i64: 16597>, shift = array<i64: 20>} : tensor<3xi16> -> tensor<3xi8>
  %product = fixed.dequantize %p8 {scale = 0.0016195596850393703 : f64} : tensor<3xi8> -> tensor<3xf32>
  func.return %sum, %i16, %product : tensor<3xf32>, tensor<3xi16>, tensor<3xf32>
}
"""


def test_r11_r12_seed000_hand_written_module():
    out = xnpu.run(xnpu.parse_ir(SEED_TEXT), {"lhs": SEED_LHS, "rhs": SEED_RHS})
    assert out["i16"].tolist() == [19309, 20240, 1938]
    np.testing.assert_allclose(out["sum"], [0.91864724, 0.96419999, 0.09110551], atol=1e-7)
    np.testing.assert_allclose(out["product"], [0.20568408, 0.14576037, 0.00161956], atol=1e-7)


# --------------------------------------------------------------------------------------
# Every op: printed form round-trips, interpreter equals the semantics
# --------------------------------------------------------------------------------------

ALL_OPS_TEXT = """
func.func @main(%x: tensor<1x4x6x6xi8> {nn.name = "x"}, %f: tensor<1x4x6x6xf32> {nn.name = "f"}) -> (tensor<1x4x3x3xi8>, tensor<1x4x3x3xi8>, tensor<1x4x6x6xi8>, tensor<1x2xi32>, tensor<1x4x1x1xi8>, tensor<1x8x6x6xi8>, tensor<4x1x6x6xi8>, tensor<1x4x6x6xf32>, tensor<1x4x6x6xi16>, tensor<1x4x6x6xi24>, tensor<1x4x12x12xi32>, tensor<1x4x12x12xi8>, tensor<1x4x12x12xi32>) {
  %w = fixed.constant dense<"0xFF0102FE0304FD0506FC0708FB0900F9FF0102FE0304FD0506FC0708FB0900F9FF0102FE0304FD0506FC0708FB0900F9FF0102FE0304FD0506FC0708FB0900F9FF0102FE0304FD0506FC0708FB0900F9FF0102FE0304FD0506FC0708FB0900F9FF0102FE0304FD0506FC0708FB0900F9FF0102FE0304FD0506FC0708FB0900F9FF0102FE0304FD0506FC0708FB0900F9"> : tensor<4x4x3x3xi8>
  %b = fixed.constant dense<[100, -200, 300, -400]> : tensor<4xi32>
  %acc = fixed.conv2d %x, %w, %b {strides = array<i64: 2, 2>, pads = array<i64: 1, 1, 0, 0>, dilations = array<i64: 1, 1>, group = 1 : i64, scale = array<f64: 1.0e-03, 2.0e-03, 3.0e-03, 4.0e-03>} : (tensor<1x4x6x6xi8>, tensor<4x4x3x3xi8>, tensor<4xi32>) -> tensor<1x4x3x3xi32>
  %conv = fixed.rescale %acc {multiplier = array<i64: 16384, 20000, 30000, 0>, shift = array<i64: 20, 21, 22, 0>, axis = 1 : i64} : tensor<1x4x3x3xi32> -> tensor<1x4x3x3xi8>
  %relu = fixed.clamp %conv {min = 0 : i64, max = 127 : i64} : tensor<1x4x3x3xi8> -> tensor<1x4x3x3xi8>
  %pool = fixed.max_pool %x {kernel_shape = array<i64: 2, 2>, strides = array<i64: 2, 2>, pads = array<i64: 0, 0, 0, 0>, dilations = array<i64: 1, 1>, ceil_mode = 0 : i64} : tensor<1x4x6x6xi8> -> tensor<1x4x3x3xi8>
  %avg = fixed.avg_pool %x {kernel_shape = array<i64: 3, 3>, strides = array<i64: 1, 1>, pads = array<i64: 1, 1, 1, 1>, ceil_mode = 0 : i64, multiplier = array<i64: AVG_M>, shift = array<i64: AVG_S>} : tensor<1x4x6x6xi8> -> tensor<1x4x6x6xi8>
  %flat = fixed.flatten %relu {axis = 1 : i64} : tensor<1x4x3x3xi8> -> tensor<1x36xi8>
  %fw = fixed.constant dense<3> : tensor<2x36xi8>
  %fb = fixed.constant dense<[[1, -1]]> : tensor<1x2xi32>
  %fc = fixed.gemm %flat, %fw, %fb {trans_b = 1 : i64} : (tensor<1x36xi8>, tensor<2x36xi8>, tensor<1x2xi32>) -> tensor<1x2xi32>
  %gsum = fixed.global_avg_pool %x : tensor<1x4x6x6xi8> -> tensor<1x4x1x1xi32>
  %gap = fixed.rescale %gsum {multiplier = array<i64: 29127>, shift = array<i64: 20>, scale = 0.5 : f64} : tensor<1x4x1x1xi32> -> tensor<1x4x1x1xi8>
  %cat = fixed.concat %x, %avg {axis = 1 : i64} : (tensor<1x4x6x6xi8>, tensor<1x4x6x6xi8>) -> tensor<1x8x6x6xi8>
  %t = fixed.transpose %x {perm = array<i64: 1, 0, 2, 3>} : tensor<1x4x6x6xi8> -> tensor<4x1x6x6xi8>
  %r = fixed.reshape %t : tensor<4x1x6x6xi8> -> tensor<4x1x6x6xi8>
  %q = fixed.quantize %f {scale = 0.125 : f64} : tensor<1x4x6x6xf32> -> tensor<1x4x6x6xi8>
  %tab = fixed.table %q {table = array<i8: TABLE>} : tensor<1x4x6x6xi8> -> tensor<1x4x6x6xi8>
  %deq = fixed.dequantize %tab {scale = 0.0078125 : f64} : tensor<1x4x6x6xi8> -> tensor<1x4x6x6xf32>
  %prod = fixed.mul %x, %q : (tensor<1x4x6x6xi8>, tensor<1x4x6x6xi8>) -> tensor<1x4x6x6xi16>
  %diff = fixed.sub %x, %q {lhs_multiplier = 16384 : i64, lhs_shift = -1 : i64, rhs_multiplier = 24576 : i64, rhs_shift = 0 : i64} : (tensor<1x4x6x6xi8>, tensor<1x4x6x6xi8>) -> tensor<1x4x6x6xi24>
  %sh = fixed.shift %diff {shift = 3 : i64, rounding = 1 : i64} : tensor<1x4x6x6xi24> -> tensor<1x4x6x6xi16>
  %wide = fixed.add %sh, %prod {lhs_multiplier = 16384 : i64, lhs_shift = 14 : i64, rhs_multiplier = 16384 : i64, rhs_shift = 14 : i64} : (tensor<1x4x6x6xi16>, tensor<1x4x6x6xi16>) -> tensor<1x4x6x6xi24>
  %ctw = fixed.constant dense<"CT_WEIGHT"> : tensor<4x2x3x3xi8>
  %ctb = fixed.constant dense<[7, -7, 70, -70]> : tensor<4xi32>
  %ct = fixed.conv_transpose2d %x, %ctw, %ctb {strides = array<i64: 2, 2>, pads = array<i64: 1, 1, 1, 1>, dilations = array<i64: 1, 1>, output_padding = array<i64: 1, 1>, group = 2 : i64} : (tensor<1x4x6x6xi8>, tensor<4x2x3x3xi8>, tensor<4xi32>) -> tensor<1x4x12x12xi32>
  %up = fixed.resize %x {rows = array<i64: 0, 0, 1, 1, 2, 2, 3, 3, 4, 4, 5, 5>, cols = array<i64: 0, 1, 1, 2, 2, 3, 3, 4, 4, 5, 5, 5>} : tensor<1x4x6x6xi8> -> tensor<1x4x12x12xi8>
  %lin = fixed.resize_linear %x {rows = array<i64: LIN_ROWS>, row_weights = array<i64: LIN_ROW_WEIGHTS>, cols = array<i64: LIN_COLS>, col_weights = array<i64: LIN_COL_WEIGHTS>} : tensor<1x4x6x6xi8> -> tensor<1x4x12x12xi32>
  func.return %relu, %pool, %avg, %fc, %gap, %cat, %r, %deq, %prod, %wide, %ct, %up, %lin : tensor<1x4x3x3xi8>, tensor<1x4x3x3xi8>, tensor<1x4x6x6xi8>, tensor<1x2xi32>, tensor<1x4x1x1xi8>, tensor<1x8x6x6xi8>, tensor<4x1x6x6xi8>, tensor<1x4x6x6xf32>, tensor<1x4x6x6xi16>, tensor<1x4x6x6xi24>, tensor<1x4x12x12xi32>, tensor<1x4x12x12xi8>, tensor<1x4x12x12xi32>
}
"""

TANH_TABLE = fp.build_table(np.tanh, 0.125, 1 / 128)


AVG_COUNTS = windows.avg_pool_counts((6, 6), (3, 3), (1, 1), (1, 1, 1, 1), (6, 6), count_include_pad=False)
AVG_M, AVG_S = windows.avg_pool_multipliers(AVG_COUNTS, 1.0, 2.0)  # s_in / (count * s_out) = 1 / (2 * count)


CT_WEIGHT = (np.arange(4 * 2 * 3 * 3) % 17 - 8).reshape(4, 2, 3, 3)
LIN_ROWS, LIN_ROW_WEIGHTS, _ = windows.linear_resize_taps(6, 12, "half_pixel")
LIN_COLS, LIN_COL_WEIGHTS, _ = windows.linear_resize_taps(6, 12, "align_corners")


def all_ops_module():
    text = ALL_OPS_TEXT.replace("TABLE", ", ".join(map(str, TANH_TABLE.tolist())))
    text = text.replace("CT_WEIGHT", "0x" + CT_WEIGHT.astype(np.int8).tobytes().hex().upper())
    for name, values in (("LIN_ROWS", LIN_ROWS), ("LIN_ROW_WEIGHTS", LIN_ROW_WEIGHTS), ("LIN_COLS", LIN_COLS),
                         ("LIN_COL_WEIGHTS", LIN_COL_WEIGHTS)):
        text = text.replace(name, ", ".join(map(str, values.reshape(-1).tolist())))
    text = text.replace("AVG_M", ", ".join(map(str, AVG_M.tolist()))).replace("AVG_S", ", ".join(map(str, AVG_S.tolist())))
    return xnpu.parse_ir(text)


def test_r16_every_op_prints_parses_and_prints_the_same():
    """R16 and every other op: print -> parse -> print is stable."""
    text = xnpu.print_ir(all_ops_module())
    assert xnpu.print_ir(xnpu.parse_ir(text)) == text
    for op_type in fixed.FIXED.operations:
        assert f"{op_type.name} " in text, f"{op_type.name} missing from the round-trip module"
    assert 'dense<"0x' in text and "dense<3> : tensor<2x36xi8>" in text


def test_r13_r14_r15_interpreter_equals_semantics():
    """R13 (conv, gemm), R14 (pools), R15 (table), R9 per-channel rescale, R10 add/sub through the IR."""
    module = all_ops_module()
    rng = np.random.default_rng(0)
    x = rng.integers(-127, 128, size=(1, 4, 6, 6)).astype(np.int8)
    f = rng.uniform(-20, 20, size=(1, 4, 6, 6)).astype(np.float32)
    out = xnpu.run(module, {"x": x, "f": f})
    const = {op.results[0].name_hint: op.to_numpy() for op in module.walk() if isinstance(op, fixed.ConstantOp)}
    acc = convolution.conv2d_int(x, const["w"], const["b"], (2, 2), (1, 1, 0, 0), (1, 1), 1)
    conv = fp.rescale(acc, [16384, 20000, 30000, 0], [20, 21, 22, 0], 8, axis=1)
    relu = fp.clamp(conv, 0, 127)
    assert out["output0"].dtype == np.int8 and (out["output0"] == relu).all()
    assert (out["output1"] == windows.max_pool_int(x, (2, 2), (2, 2), (0, 0, 0, 0), (1, 1), (3, 3))).all()
    avg = windows.avg_pool_int(x, (3, 3), (1, 1), (1, 1, 1, 1), (6, 6), AVG_M, AVG_S, 8)
    assert (out["output2"] == avg).all()
    sums = windows.avg_pool_sum_int(x, (3, 3), (1, 1), (1, 1, 1, 1), (6, 6))
    assert np.abs(out["output2"] - np.floor(sums / (2 * AVG_COUNTS) + 0.5)).max() <= 1
    fc = convolution.gemm_int(relu.reshape(1, 36), np.full((2, 36), 3), np.array([[1, -1]]), trans_b=True)
    assert out["output3"].dtype == np.int32 and (out["output3"] == fc).all()
    assert (out["output4"] == fp.rescale(windows.global_avg_pool_sum_int(x), 29127, 20, 8)).all()
    assert (out["output5"] == np.concatenate([x, avg], axis=1)).all()
    assert (out["output6"] == np.transpose(x, (1, 0, 2, 3))).all()
    q = fp.quantize(f, 0.125)
    assert (out["output7"] == fp.dequantize(fp.table_lookup(q, TANH_TABLE), 1 / 128)).all()
    prod = fp.mul_widening(x, q, 16)
    assert out["output8"].dtype == np.int16 and (out["output8"] == prod).all()
    diff = fp.add_widening(x, q, 16384, -1, 24576, 0, 24, subtract=True)
    sh = fp.saturate(fp.shift_arithmetic(diff, 3, rounding=True), 16)
    wide = fp.add_widening(sh, prod, 16384, 14, 16384, 14, 24)
    assert out["output9"].dtype == np.int32 and (out["output9"] == wide).all()


def test_r16_r17_r18_upsampling_ops_equal_semantics():
    """R18 (conv_transpose2d), R16 (nearest resize), R17 (linear resize) through the IR."""
    module = all_ops_module()
    x = np.random.default_rng(1).integers(-127, 128, size=(1, 4, 6, 6)).astype(np.int8)
    out = xnpu.run(module, {"x": x, "f": np.zeros((1, 4, 6, 6), np.float32)})
    ct = convolution.conv_transpose2d_int(x, CT_WEIGHT, np.array([7, -7, 70, -70]), (2, 2), (1, 1, 1, 1), (1, 1), (1, 1), 2)
    assert out["output10"].dtype == np.int32 and (out["output10"] == ct).all()
    rows, cols = [0, 0, 1, 1, 2, 2, 3, 3, 4, 4, 5, 5], [0, 1, 1, 2, 2, 3, 3, 4, 4, 5, 5, 5]
    assert out["output11"].dtype == np.int8 and (out["output11"] == x[:, :, rows][:, :, :, cols]).all()
    sums = windows.resize_linear_sum(x, LIN_ROWS, LIN_ROW_WEIGHTS, LIN_COLS, LIN_COL_WEIGHTS)
    assert out["output12"].dtype == np.int32 and (out["output12"] == sums).all()
    linear = next(op for op in module.walk() if isinstance(op, fixed.ResizeLinearOp))
    assert linear.denominators() == (4, 11)


@pytest.mark.parametrize("bits", [8, 16, 24, 32])
def test_r1_constants_round_trip_at_every_width(bits):
    """R1: integer constants of every width, small (listed), splat and large (hex)."""
    low, high = fp.storage_range(bits)
    rng = np.random.default_rng(bits)
    arrays = [
        np.array([[low, 0], [1, high]]),
        np.full((3, 4), -5),
        rng.integers(low, high, size=(7, 30), endpoint=True),
        np.array(7),
    ]

    def body(args):
        return [(f"c{i}", fixed.ConstantOp(a, bits)) for i, a in enumerate(arrays)]

    module = build_module([], [], body)
    text = xnpu.print_ir(module)
    assert xnpu.print_ir(xnpu.parse_ir(text)) == text
    out = xnpu.run(xnpu.parse_ir(text), {})
    for index, array in enumerate(arrays):
        assert out[f"c{index}"].dtype == fp.storage_dtype(bits)
        assert (out[f"c{index}"] == array).all()


def test_r2_constant_values_must_fit_their_width():
    with pytest.raises(ValueError, match="outside i8"):
        fixed.ConstantOp(np.array([200]), 8)
    from xdsl.dialects.builtin import BytesAttr, DenseIntOrFPElementsAttr, IntegerType
    from xdsl.utils.exceptions import VerifyException

    # i24 lives in 4 bytes, so a hand-built attribute can hold a value beyond 24 bits
    raw = DenseIntOrFPElementsAttr(TensorType(IntegerType(24), [1]), BytesAttr(np.array([1 << 24], "<i4").tobytes()))
    with pytest.raises(VerifyException, match="do not fit i24"):
        fixed.ConstantOp(raw).verify()
    # nor does xDSL check that the bytes hold one value per element (or one, a splat)
    short = DenseIntOrFPElementsAttr(TensorType(IntegerType(8), [4]), BytesAttr(b"\x01\x02"))
    with pytest.raises(VerifyException, match="2 values for a tensor of 4 elements"):
        fixed.ConstantOp(short).verify()
    splat = fixed.ConstantOp(DenseIntOrFPElementsAttr(TensorType(IntegerType(8), [4]), BytesAttr(b"\x03")))
    splat.verify()
    assert splat.to_numpy().tolist() == [3, 3, 3, 3]


def test_constant_values_are_a_copy_the_caller_may_change():
    constant = fixed.ConstantOp(np.array([[1, -2], [3, 4]]), 16)
    values = constant.to_numpy()
    values[0, 0] = 9
    assert values.dtype == np.int16 and constant.to_numpy().tolist() == [[1, -2], [3, 4]]


def test_r4_quantize_dequantize_ops_and_locations():
    """R4 through the ops; builders' results keep a location set by the lowering."""
    from xdsl.dialects.builtin import NameLoc, NoneAttr

    def body(args):
        q = fixed.QuantizeOp(args[0], 0.5, bits=16)
        q.location = NameLoc(StringAttr("node_q"), NoneAttr())
        return [("q", q), ("x", fixed.DequantizeOp(q.result, 0.5))]

    module = build_module([TensorType(f32, [4])], ["in"], body)
    out = xnpu.run(module, {"in": np.array([0.25, -0.25, 1e9, 3.0], dtype=np.float32)})
    assert out["q"].dtype == np.int16 and out["q"].tolist() == [1, -1, 32767, 6]
    assert out["x"].tolist() == [0.5, -0.5, 16383.5, 3.0]
    assert 'loc("node_q")' in xnpu.print_ir(module)


def test_r5_r6_builders_take_semantics_multipliers_per_channel():
    """R5/R6: per-channel multipliers from multiplier_from_scale feed fixed.rescale directly."""
    m, s = fp.multiplier_from_scale(np.array([0.5, 0.25, 2.0]))

    def body(args):
        return [("y", fixed.RescaleOp(args[0], m, s, bits=8, axis=-1))]

    from xdsl.dialects.builtin import IntegerType

    module = build_module([TensorType(IntegerType(32), [2, 3])], ["x"], body)
    out = xnpu.run(module, {"x": np.array([[3, 3, 100], [-3, -3, -100]], dtype=np.int32)})
    assert out["y"].tolist() == [[2, 1, 127], [-1, -1, -127]]


def test_r7_r8_shift_and_clamp_ops():
    """R7 floor and rounding shifts, left shifts; R8 clamp."""
    from xdsl.dialects.builtin import IntegerType

    def body(args):
        return [
            ("floor", fixed.ShiftOp(args[0], 1, bits=16)),
            ("round", fixed.ShiftOp(args[0], 1, bits=16, rounding=True)),
            ("left", fixed.ShiftOp(args[0], -14, bits=16)),
            ("clamp", fixed.ClampOp(args[0], -2, 3)),
        ]

    module = build_module([TensorType(IntegerType(24), [4])], ["x"], body)
    out = xnpu.run(module, {"x": np.array([-3, -2, 3, 5], dtype=np.int32)})
    assert out["floor"].tolist() == [-2, -1, 1, 2]
    assert out["round"].tolist() == [-1, -1, 2, 3]
    assert out["left"].tolist() == [-32767, -32767, 32767, 32767]
    assert out["clamp"].tolist() == [-2, -2, 3, 3]


# --------------------------------------------------------------------------------------
# Verifier messages
# --------------------------------------------------------------------------------------

INVALID = [
    ("fixed.rescale %a {multiplier = array<i64: 100>, shift = array<i64: 3>} : tensor<4xi32> -> tensor<4xi8>",
     "multiplier 100 must be 0 or in [16384, 32767] (R5)"),
    ("fixed.rescale %a {multiplier = array<i64: 16384>, shift = array<i64: 63>} : tensor<4xi32> -> tensor<4xi8>",
     "shift 63 must be in [-16, 62] (R6)"),
    ("fixed.rescale %a {multiplier = array<i64: 16384, 16384>, shift = array<i64: 3, 3>} : tensor<4xi32> -> tensor<4xi8>",
     "need an 'axis'"),
    ("fixed.rescale %a {multiplier = array<i64: 16384, 16384>, shift = array<i64: 3, 3>, axis = 0 : i64} : tensor<4xi32> -> tensor<4xi8>",
     "2 multiplier values but dimension 0 has 4 channels"),
    ("fixed.rescale %a {multiplier = array<i64: 16384>, shift = array<i64: 3>} : tensor<4xi32> -> tensor<4xi12>",
     "result element type is i12; expected i8, i16, i24, i32"),
    ("fixed.rescale %a {multiplier = array<i64: 16384>, shift = array<i64: 3>} : tensor<4xi32> -> tensor<5xi8>",
     "result shape is [5] but the operands give [4]"),
    ("fixed.clamp %a {min = 5 : i64, max = 1 : i64} : tensor<4xi32> -> tensor<4xi32>", "min 5 is greater than max 1"),
    ("fixed.mul %b, %b : (tensor<4xi8>, tensor<4xi8>) -> tensor<4xi8>", "needs an i16 result"),
    ("fixed.add %b, %b {lhs_multiplier = 1 : i64, lhs_shift = 0 : i64, rhs_multiplier = 16384 : i64, rhs_shift = 0 : i64} : (tensor<4xi8>, tensor<4xi8>) -> tensor<4xi24>",
     "lhs multiplier 1 must be 0 or in"),
    ("fixed.shift %a {shift = 40 : i64, rounding = 0 : i64} : tensor<4xi32> -> tensor<4xi16>", "shift 40 must be in [-31, 31]"),
    ("fixed.quantize %f {scale = 0.0 : f64} : tensor<4xf32> -> tensor<4xi8>", "scale values must be positive and finite, got [0.0]"),
    ("fixed.table %b {table = array<i8: 1, 2>} : tensor<4xi8> -> tensor<4xi8>", "needs 256 entries"),
    ("fixed.reshape %b : tensor<4xi8> -> tensor<4xi16>", "result is i16 but the input is i8"),
    ("fixed.dequantize %b {scale = -1.0 : f64} : tensor<4xi8> -> tensor<4xf32>", "scale values must be positive"),
]


@pytest.mark.parametrize("snippet, message", INVALID)
def test_r5_r6_r12_verifier_messages(snippet, message):
    """R5/R6 parameter ranges, R12 product width, R1 widths: one clear line per mistake."""
    text = (
        "func.func @f(%a: tensor<4xi32>, %b: tensor<4xi8>, %f: tensor<4xf32>) {\n"
        f"  %r = {snippet}\n  func.return\n}}\n"
    )
    with pytest.raises(XnpuError) as error:
        xnpu.parse_ir(text)
    assert message in str(error.value)
    assert "\n" not in str(error.value)


def test_r13_conv_verifier_checks_widths_and_reduction():
    """R13: conv inputs must be i8 and the reduction length at most 131071."""
    text = (
        "func.func @f(%x: tensor<1x4x4x4xi16>, %w: tensor<2x4x1x1xi8>) {\n"
        "  %r = fixed.conv2d %x, %w {strides = array<i64: 1, 1>, pads = array<i64: 0, 0, 0, 0>, dilations = array<i64: 1, 1>, group = 1 : i64} : (tensor<1x4x4x4xi16>, tensor<2x4x1x1xi8>) -> tensor<1x2x4x4xi32>\n"
        "  func.return\n}\n"
    )
    with pytest.raises(XnpuError, match="input element type is i16; expected i8"):
        xnpu.parse_ir(text)
    text = (
        "func.func @f(%a: tensor<1x140000xi8>, %b: tensor<140000x2xi8>) {\n"
        "  %r = fixed.gemm %a, %b {trans_b = 0 : i64} : (tensor<1x140000xi8>, tensor<140000x2xi8>) -> tensor<1x2xi32>\n"
        "  func.return\n}\n"
    )
    with pytest.raises(XnpuError, match="reduction length 140000 exceeds 131071"):
        xnpu.parse_ir(text)


def test_r14_avg_pool_multiplier_count_must_match_positions():
    """R14: one pair or one per output position."""
    text = (
        "func.func @f(%x: tensor<1x1x4x4xi8>) {\n"
        "  %r = fixed.avg_pool %x {kernel_shape = array<i64: 2, 2>, strides = array<i64: 2, 2>, pads = array<i64: 0, 0, 0, 0>, ceil_mode = 0 : i64, multiplier = array<i64: 16384, 16384>, shift = array<i64: 16, 16>} : tensor<1x1x4x4xi8> -> tensor<1x1x2x2xi8>\n"
        "  func.return\n}\n"
    )
    with pytest.raises(XnpuError, match="one \\(multiplier, shift\\) pair or 4"):
        xnpu.parse_ir(text)
