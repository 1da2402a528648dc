"""Lowering `fixed` -> TOSA 1.0 (`convert-fixed-to-tosa`, docs/tosa.md).

The function becomes the same computation in TOSA ops, bit for bit: `@main` keeps its float
inputs and outputs, quantize/dequantize/rescale follow lowering/tosa_build.py, conv and gemm
are TOSA's int8 ops with int32 accumulation, and every other fixed op has its TOSA op.
Float nn ops kept for the host (keep_on_host) become TOSA float32 ops, the one part that is not
bit for bit (docs/tosa.md).

**Layout.** TOSA's convolutions and pools are NHWC with OHWI weights; the fixed level is
NCHW. Every converted value carries its layout (TOSA dimension i holds fixed dimension
layout[i]); an op that needs another layout gets the value transposed once (cached), so a
network's input is transposed to NHWC at the first convolution, stays NHWC through
element-wise ops, and goes back to NCHW only where a flatten, a reshape or an output needs
the fixed order. Constants are laid out with numpy instead (weights become OHWI tensors).

**Converters** are looked up by op class in `CONVERTERS` (the `@converts` decorator): a new
fixed op needs one function. An op without one is an error naming the op and its ONNX node.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass

import numpy as np
from xdsl.context import Context
from xdsl.dialects import func
from xdsl.dialects.builtin import DenseArrayBase, FunctionType, IntegerAttr, ModuleOp, TensorType, f32, i8, i32, i64
from xdsl.ir import Operation, SSAValue
from xdsl.passes import ModulePass

from xnpu.core.errors import XnpuError
from xnpu.dialects import fixed, nn, tosa
from xnpu.dialects.shapes import ints, shape_of
from xnpu.ir.io import describe_op
from xnpu.lowering import tosa_build as tb
from xnpu.semantics import fixed_point as fp

NHWC = (0, 2, 3, 1)


@dataclass
class Converted:
    """A fixed value as the export holds it."""

    value: SSAValue | None  # the TOSA value; None for a constant not needed as a tensor yet
    layout: tuple[int, ...]  # TOSA dimension i holds fixed dimension layout[i]
    bits: int  # the contract width (R1); 0 for float
    bound: int  # the largest |value| it can hold, for TOSA's int32 limits
    array: np.ndarray | None = None  # a fixed.constant's data, in fixed (identity) layout


def identity(rank: int) -> tuple[int, ...]:
    return tuple(range(rank))


def _element(bits: int):
    """The TOSA element type of a value of `bits` contract bits (0: float, kept for the host)."""
    return f32 if bits == 0 else tb.storage_type(bits)


class Converter:
    def __init__(self, builder: tb.TosaBuilder):
        self.b = builder
        self.converted: dict[SSAValue, Converted] = {}
        self._laid_out: dict[tuple[SSAValue, tuple[int, ...]], SSAValue] = {}

    def define(self, result: SSAValue, value: SSAValue, layout: Sequence[int], bits: int, bound: int) -> None:
        self.converted[result] = Converted(value, tuple(layout), bits, int(bound))

    def __getitem__(self, value: SSAValue) -> Converted:
        return self.converted[value]

    def tosa(self, value: SSAValue, layout: Sequence[int] | None = None) -> SSAValue:
        """The TOSA value of `value` in `layout` (default: the one it has), transposed once."""
        entry = self.converted[value]
        layout = entry.layout if layout is None else tuple(layout)
        key = (value, layout)
        if key not in self._laid_out:
            if entry.array is not None:
                self._laid_out[key] = self.b.const(np.transpose(entry.array, layout), _element(entry.bits))
            else:
                assert entry.value is not None
                self._laid_out[key] = self.b.transpose(entry.value, [entry.layout.index(d) for d in layout])
        return self._laid_out[key]

    def tosa_ranked(self, value: SSAValue, rank: int, layout: Sequence[int]) -> SSAValue:
        """`value` broadcast to `rank` dimensions as numpy does (leading ones), in `layout`."""
        own = shape_of(value)
        if len(own) == rank:
            return self.tosa(value, layout)
        shape = (1,) * (rank - len(own)) + tuple(own)
        entry = self.converted[value]
        if entry.array is not None:
            return self.b.const(np.transpose(entry.array.reshape(shape), layout), _element(entry.bits))
        return self.b.transpose(self.b.reshape(self.tosa(value, identity(len(own))), shape), layout)

    def pair(self, lhs: SSAValue, rhs: SSAValue) -> tuple[SSAValue, SSAValue, tuple[int, ...]]:
        """Both operands of a broadcasting op at one rank and in one layout (the wider one's)."""
        rank = max(len(shape_of(lhs)), len(shape_of(rhs)))
        wider = lhs if len(shape_of(lhs)) == rank else rhs
        layout = self.converted[wider].layout
        return self.tosa_ranked(lhs, rank, layout), self.tosa_ranked(rhs, rank, layout), layout

    def constant(self, value: SSAValue, what: str) -> np.ndarray:
        entry = self.converted[value]
        if entry.array is None:
            raise XnpuError(f"{what}: weights computed at run time have no TOSA form here (export needs constants)")
        return entry.array


Convert = Callable[[Converter, Operation, str], None]
CONVERTERS: dict[type[Operation], Convert] = {}


def converts(*classes: type[Operation]) -> Callable[[Convert], Convert]:
    def register(function: Convert) -> Convert:
        for cls in classes:
            CONVERTERS[cls] = function
        return function

    return register


def _bits(value: SSAValue) -> int:
    return fixed.width_of(value)


# --------------------------------------------------------------------------------------
# Values, conversions and element-wise ops
# --------------------------------------------------------------------------------------


@converts(fixed.ConstantOp)
def _constant(cv: Converter, op: fixed.ConstantOp, what: str) -> None:
    array = op.to_numpy()
    bound = int(np.abs(array.astype(np.int64)).max()) if array.size else 0
    cv.converted[op.result] = Converted(None, identity(array.ndim), _bits(op.result), bound, array)


@converts(fixed.QuantizeOp)
def _quantize(cv: Converter, op: fixed.QuantizeOp, what: str) -> None:
    bits = _bits(op.result)
    value, bound = tb.quantize(cv.b, cv.tosa(op.input), op.scale.value.data, bits, what)
    cv.define(op.result, value, cv[op.input].layout, bits, bound)


@converts(fixed.DequantizeOp)
def _dequantize(cv: Converter, op: fixed.DequantizeOp, what: str) -> None:
    layout = cv[op.input].layout
    axis = None if op.axis is None else layout.index(op.axis.value.data % len(layout))
    value = tb.dequantize(cv.b, cv.tosa(op.input), _bits(op.input), op.scales(), axis, what)
    cv.define(op.result, value, layout, 0, 0)


@converts(fixed.RescaleOp)
def _rescale(cv: Converter, op: fixed.RescaleOp, what: str) -> None:
    entry, multipliers = cv[op.input], ints(op.multiplier)
    layout = entry.layout
    axis = op.channel_axis()
    if len(multipliers) > 1 and layout[-1] != axis:  # TOSA rescales per channel of the last dimension
        layout = tuple(d for d in layout if d != axis) + (axis,)
    value, bound = tb.rescale(cv.b, cv.tosa(op.input, layout), entry.bound, multipliers, ints(op.shift),
                              _bits(op.result), what)
    cv.define(op.result, value, layout, _bits(op.result), bound)


@converts(fixed.ShiftOp)
def _shift(cv: Converter, op: fixed.ShiftOp, what: str) -> None:
    entry = cv[op.input]
    value, bound = tb.shift(cv.b, cv.tosa(op.input), entry.bound, op.shift.value.data,
                            bool(op.rounding.value.data), _bits(op.result), what)
    cv.define(op.result, value, entry.layout, _bits(op.result), bound)


@converts(fixed.ClampOp)
def _clamp(cv: Converter, op: fixed.ClampOp, what: str) -> None:
    entry = cv[op.input]
    low, high = op.bounds()
    value = cv.b.clamp(cv.tosa(op.input), low, high)
    cv.define(op.result, value, entry.layout, entry.bits, min(entry.bound, max(abs(low), abs(high))))


@converts(fixed.AddOp, fixed.SubOp)
def _add(cv: Converter, op: fixed.WideningAddOp, what: str) -> None:
    lhs, rhs, layout = cv.pair(op.lhs, op.rhs)
    lm, ls, rm, rs = op.params()
    left, left_bound = tb.apply_multipliers(cv.b, lhs, cv[op.lhs].bound, [lm], [ls], i32, what)
    right, right_bound = tb.apply_multipliers(cv.b, rhs, cv[op.rhs].bound, [rm], [rs], i32, what)
    bound = left_bound + right_bound
    tb.require_int32(bound, what, "the sum")
    total = cv.b.binary(tosa.SubOp if isinstance(op, fixed.SubOp) else tosa.AddOp, left, right)
    value, bound = tb.saturate(cv.b, total, bound, _bits(op.result))
    cv.define(op.result, value, layout, _bits(op.result), bound)


@converts(fixed.MulOp)
def _mul(cv: Converter, op: fixed.MulOp, what: str) -> None:
    lhs, rhs, layout = cv.pair(op.lhs, op.rhs)
    bound = cv[op.lhs].bound * cv[op.rhs].bound
    tb.require_int32(bound, what, "the product")
    product = cv.b.mul(cv.b.cast(lhs, i32), cv.b.cast(rhs, i32))
    value, bound = tb.saturate(cv.b, product, bound, _bits(op.result))
    cv.define(op.result, value, layout, _bits(op.result), bound)


@converts(fixed.TableOp)
def _table(cv: Converter, op: fixed.TableOp, what: str) -> None:
    entry, table = cv[op.input], op.entries()
    x = cv.tosa(op.input)
    value = cv.b.op(tosa.TableOp, [x, cv.b.const(table, i8)], shape_of(x), i8)
    cv.define(op.result, value, entry.layout, 8, int(np.abs(table).max()))


# --------------------------------------------------------------------------------------
# Convolution, gemm, pools
# --------------------------------------------------------------------------------------


def window_padding(size: int, kernel: int, stride: int, dilation: int, begin: int, out: int) -> tuple[int, int]:
    """TOSA wants (size - 1 + pads - (kernel - 1) * dilation) to be exactly (out - 1) * stride:
    the end padding that gives `out` windows, and how many input rows those windows read
    (rows past the last window, which ONNX's floor drops, are sliced off)."""
    end = (out - 1) * stride + (kernel - 1) * dilation + 1 - size - begin
    return (end, size) if end >= 0 else (0, size + end)


def _windowed_input(cv: Converter, x: SSAValue, kernel, strides, dilations, pads, out_hw):
    """The NHWC input sliced to the rows the windows read, and TOSA's pad (top, bottom, left, right)."""
    n, c, h, w = shape_of(x)
    bottom, rows = window_padding(h, kernel[0], strides[0], dilations[0], pads[0], out_hw[0])
    right, cols = window_padding(w, kernel[1], strides[1], dilations[1], pads[1], out_hw[1])
    value = cv.b.slice(cv.tosa(x, NHWC), [0, 0, 0, 0], [n, rows, cols, c])
    return value, [pads[0], bottom, pads[1], right]


def _window_props(kernel, strides, pads, dilations=None) -> dict:
    props = {"stride": DenseArrayBase.from_list(i64, list(strides)), "pad": DenseArrayBase.from_list(i64, list(pads))}
    if dilations is None:
        props["kernel"] = DenseArrayBase.from_list(i64, list(kernel))
    else:
        props["dilation"] = DenseArrayBase.from_list(i64, list(dilations))
        props["acc_type"] = i32
    return props


def _convolve(cv: Converter, x: SSAValue, weight: np.ndarray, bias: np.ndarray, depthwise: bool, out_shape, props) -> SSAValue:
    """One tosa.conv2d (OIHW -> OHWI) or tosa.depthwise_conv2d (C*M x 1 x KH x KW -> KH x KW x C x M)."""
    channels = shape_of(x)[3]
    if depthwise:
        o, _, kh, kw = weight.shape
        laid_out = weight.reshape(channels, o // channels, kh, kw).transpose(2, 3, 0, 1)
    else:
        laid_out = weight.transpose(0, 2, 3, 1)
    operands = [x, cv.b.const(laid_out, i8), cv.b.const(bias, i32), cv.b.zero_point(i8), cv.b.zero_point(i8)]
    return cv.b.op(tosa.DepthwiseConv2DOp if depthwise else tosa.Conv2DOp, operands, out_shape, i32, **props)


@converts(fixed.Conv2dOp)
def _conv2d(cv: Converter, op: fixed.Conv2dOp, what: str) -> None:
    weight = cv.constant(op.weight, what)
    o, group_channels, kh, kw = weight.shape
    bias = np.zeros(o, np.int64) if op.bias is None else cv.constant(op.bias, what).astype(np.int64)
    bound = group_channels * kh * kw * cv[op.input].bound * cv[op.weight].bound + int(np.abs(bias).max(initial=0))
    tb.require_int32(bound, what, "the accumulator")
    n, _, oh, ow = shape_of(op.result)
    strides, dilations = ints(op.strides), ints(op.dilations)
    x, pad = _windowed_input(cv, op.input, (kh, kw), strides, dilations, ints(op.pads), (oh, ow))
    props = _window_props(None, strides, pad, dilations)
    group = op.group.value.data
    if group == 1 or group_channels == 1:
        value = _convolve(cv, x, weight, bias, group > 1, [n, oh, ow, o], props)
    else:  # TOSA has no grouped convolution: one per group, joined along channels
        per_group = o // group
        parts = []
        for g in range(group):
            rows = slice(g * per_group, (g + 1) * per_group)
            part = cv.b.slice(x, [0, 0, 0, g * group_channels], [*shape_of(x)[:3], group_channels])
            parts.append(_convolve(cv, part, weight[rows], bias[rows], False, [n, oh, ow, per_group], props))
        value = cv.b.op(tosa.ConcatOp, parts, [n, oh, ow, o], i32, axis=IntegerAttr(3, i32))
    cv.define(op.result, value, NHWC, 32, bound)


@converts(fixed.GemmOp)
def _gemm(cv: Converter, op: fixed.GemmOp, what: str) -> None:
    rows, depth = shape_of(op.a)
    trans_b = bool(op.trans_b.value.data)
    columns = shape_of(op.result)[1]
    bias_bound = 0 if op.bias is None else cv[op.bias].bound
    bound = depth * cv[op.a].bound * cv[op.b].bound + bias_bound
    tb.require_int32(bound, what, "the accumulator")
    a = cv.b.reshape(cv.tosa(op.a, (0, 1)), [1, rows, depth])
    b = cv.b.reshape(cv.tosa(op.b, (1, 0) if trans_b else (0, 1)), [1, depth, columns])
    product = cv.b.op(tosa.MatMulOp, [a, b, cv.b.zero_point(i8), cv.b.zero_point(i8)], [1, rows, columns], i32)
    value = cv.b.reshape(product, [rows, columns])
    if op.bias is not None:
        value = cv.b.binary(tosa.AddOp, value, cv.tosa_ranked(op.bias, 2, (0, 1)))
    cv.define(op.result, value, (0, 1), 32, bound)


def _pooled_input(cv: Converter, op: fixed.WindowPoolOp, what: str):
    """The NHWC input, TOSA's pad, kernel, strides and output size of a pool."""
    kernel, strides, out_hw = ints(op.kernel_shape), ints(op.strides), op.out_hw()
    x, pad = _windowed_input(cv, op.input, kernel, strides, (1, 1), ints(op.pads), out_hw)
    if max(pad[:2]) >= kernel[0] or max(pad[2:]) >= kernel[1]:
        raise XnpuError(f"{what}: padding {pad} reaches past the kernel {list(kernel)}; TOSA pools forbid it")
    return x, pad, kernel, strides, out_hw


@converts(fixed.MaxPoolOp)
def _max_pool(cv: Converter, op: fixed.MaxPoolOp, what: str) -> None:
    if op.pool_dilations() != (1, 1):
        raise XnpuError(f"{what}: a dilated max pool has no TOSA form")
    x, pad, kernel, strides, out_hw = _pooled_input(cv, op, what)
    n, c = shape_of(op.input)[:2]
    value = cv.b.op(tosa.MaxPool2DOp, [x], [n, *out_hw, c], tb.element_of(x), **_window_props(kernel, strides, pad))
    cv.define(op.result, value, NHWC, cv[op.input].bits, cv[op.input].bound)


@converts(fixed.AvgPoolOp)
def _avg_pool(cv: Converter, op: fixed.AvgPoolOp, what: str) -> None:
    """R14: window sums by a depthwise convolution with ones (padding adds 0), then the
    per-position rescale, done per channel after moving the positions to the last dimension."""
    x, pad, kernel, strides, out_hw = _pooled_input(cv, op, what)
    n, c = shape_of(op.input)[:2]
    ones = np.ones((c, 1, *kernel), np.int64)
    sums = _convolve(cv, x, ones, np.zeros(c, np.int64), True, [n, *out_hw, c], _window_props(None, strides, pad, (1, 1)))
    bound = kernel[0] * kernel[1] * cv[op.input].bound
    multipliers, shifts = ints(op.multiplier), ints(op.shift)
    bits = _bits(op.result)
    if len(multipliers) == 1:
        value, bound = tb.rescale(cv.b, sums, bound, multipliers, shifts, bits, what)
        cv.define(op.result, value, NHWC, bits, bound)
        return
    positions = cv.b.reshape(cv.b.transpose(sums, (0, 3, 1, 2)), [n, c, out_hw[0] * out_hw[1]])
    value, bound = tb.rescale(cv.b, positions, bound, multipliers, shifts, bits, what)
    cv.define(op.result, cv.b.reshape(value, [n, c, *out_hw]), identity(4), bits, bound)


@converts(fixed.GlobalAvgPoolOp)
def _global_avg_pool(cv: Converter, op: fixed.GlobalAvgPoolOp, what: str) -> None:
    entry = cv[op.input]
    value = cv.b.cast(cv.tosa(op.input), i32)
    spatial = shape_of(op.input)[2:]
    for dimension in range(2, len(entry.layout)):
        axis = entry.layout.index(dimension)
        shape = list(shape_of(value))
        shape[axis] = 1
        value = cv.b.op(tosa.ReduceSumOp, [value], shape, i32, axis=IntegerAttr(axis, i32))
    cv.define(op.result, value, entry.layout, 32, entry.bound * int(np.prod(spatial)))


# --------------------------------------------------------------------------------------
# Resize and transposed convolution (R16-R18)
# --------------------------------------------------------------------------------------


def _one_hot(sources: Sequence[int], size: int) -> np.ndarray:
    return np.eye(size, dtype=np.int64)[list(sources)]


def _tap_matrix(sources: np.ndarray, weights: np.ndarray, size: int) -> np.ndarray:
    """R17's taps of one axis (out x 2 sources and weights) as an out x in weight matrix."""
    matrix = np.zeros((sources.shape[0], size), np.int64)
    np.add.at(matrix, (np.repeat(np.arange(sources.shape[0]), 2), sources.reshape(-1)), weights.reshape(-1))
    return matrix


def _tosa_resize(cv: Converter, x: SSAValue, matrices, denominators, bilinear: bool, out_shape, element):
    """One tosa.resize reading exactly the two axes' weight matrices, or None where no scale,
    offset and border of TOSA's do (tb.resize_parameters)."""
    if _bits(x) > (8 if bilinear else 16):  # TOSA resizes int8 (BILINEAR to int32) and int16
        return None
    axes = [tb.resize_parameters(m, bilinear, d) for m, d in zip(matrices, denominators)]
    if None in axes:
        return None
    (yn, yd, yo, yb), (xn, xd, xo, xb) = axes
    operands = [cv.tosa(x, NHWC), cv.b.shape([yn, yd, xn, xd]), cv.b.shape([yo, xo]), cv.b.shape([yb, xb])]
    mode = tosa.ResizeMode.BILINEAR if bilinear else tosa.ResizeMode.NEAREST_NEIGHBOR
    n, c, oh, ow = out_shape
    return cv.b.op(tosa.ResizeOp, operands, [n, oh, ow, c], element, mode=tosa.ResizeModeAttr(mode))


def _gather_axis(cv: Converter, value: SSAValue, layout: tuple[int, ...], axis: int, sources: np.ndarray,
                 weights: np.ndarray | None) -> tuple[SSAValue, tuple[int, ...]]:
    """Resize along fixed dimension `axis` by tosa.gather: the value with `axis` second
    (N x size x rest), the source rows gathered (flattened `sources`), and with `weights`
    (out x 2) every pair multiplied in int32 and summed (R17's exact sum for one axis)."""
    order = (0, axis, *[d for d in layout if d not in (0, axis)])
    moved = cv.b.transpose(value, [layout.index(d) for d in order])
    n, size, *rest = shape_of(moved)
    width = int(np.prod(rest))
    flat = cv.b.reshape(moved, [n, size, width])
    index = cv.b.const(np.tile(sources.reshape(1, -1), (n, 1)), i32)
    picked = cv.b.op(tosa.GatherOp, [flat, index], [n, sources.size, width], tb.element_of(flat))
    if weights is None:
        return cv.b.reshape(picked, [n, sources.size, *rest]), order
    out = weights.shape[0]
    pairs = cv.b.reshape(cv.b.cast(picked, i32), [n, out, 2, width])
    products = cv.b.mul(pairs, cv.b.const(weights.reshape(1, out, 2, 1), i32))
    sums = cv.b.op(tosa.ReduceSumOp, [products], [n, out, 1, width], i32, axis=IntegerAttr(2, i32))
    return cv.b.reshape(sums, [n, out, *rest]), order


@converts(fixed.ResizeOp)
def _resize(cv: Converter, op: fixed.ResizeOp, what: str) -> None:
    """R16: tosa.resize NEAREST_NEIGHBOR where a TOSA scale and offset pick exactly the op's
    source rows and columns (any ONNX coordinate and nearest mode by integer factors), else
    one tosa.gather per axis."""
    entry = cv[op.input]
    h, w = shape_of(op.input)[2:]
    rows, cols = ints(op.rows), ints(op.cols)
    matrices = (_one_hot(rows, h), _one_hot(cols, w))
    value = _tosa_resize(cv, op.input, matrices, (1, 1), False, shape_of(op.result), tb.storage_type(entry.bits))
    layout = NHWC
    if value is None:
        value, layout = _gather_axis(cv, cv.tosa(op.input), entry.layout, 2, np.asarray(rows), None)
        value, layout = _gather_axis(cv, value, layout, 3, np.asarray(cols), None)
    cv.define(op.result, value, layout, entry.bits, entry.bound)


@converts(fixed.ResizeLinearOp)
def _resize_linear(cv: Converter, op: fixed.ResizeLinearOp, what: str) -> None:
    """R17: tosa.resize BILINEAR (int8 -> int32), whose integer weights (n - r, r) are not
    normalised: with scale_n = the axis's denominator D they are the op's weights and the sum is
    the op's exact int32 sum. Taps no TOSA scale and offset reproduce: gathers, int32 products
    and sums per axis (the same sum)."""
    entry = cv[op.input]
    h, w = shape_of(op.input)[2:]
    rows, row_weights, cols, col_weights = op.taps()
    denominators = op.denominators()
    bound = entry.bound * denominators[0] * denominators[1]
    tb.require_int32(bound, what, "the weighted sum")
    matrices = (_tap_matrix(rows, row_weights, h), _tap_matrix(cols, col_weights, w))
    value = _tosa_resize(cv, op.input, matrices, denominators, True, shape_of(op.result), i32)
    layout = NHWC
    if value is None:
        value, layout = _gather_axis(cv, cv.tosa(op.input), entry.layout, 2, rows, row_weights)
        value, layout = _gather_axis(cv, value, layout, 3, cols, col_weights)
    cv.define(op.result, value, layout, 32, bound)


@converts(fixed.ConvTranspose2dOp)
def _conv_transpose2d(cv: Converter, op: fixed.ConvTranspose2dOp, what: str) -> None:
    """R18 as one tosa.transpose_conv2d (scatter form: input pixel (iy, ix) feeds output
    (iy * stride + out_pad_top + ky, ...), ONNX's own definition with out_pad_top = -pad_top).
    TOSA has neither dilation nor groups: the kernel is dilated with zeros and the groups
    become one block-diagonal OHWI weight; both add exact zero products, so the sums are R18's.
    ONNX's pads crop, done as a slice after a non-negative out_pad."""
    weight = cv.constant(op.weight, what)  # C x O/group x KH x KW
    channels, per_group, kh, kw = weight.shape
    group = op.group.value.data
    outputs, group_channels = per_group * group, channels // group
    bias = np.zeros(outputs, np.int64) if op.bias is None else cv.constant(op.bias, what).astype(np.int64)
    bound = group_channels * kh * kw * cv[op.input].bound * cv[op.weight].bound + int(np.abs(bias).max(initial=0))
    tb.require_int32(bound, what, "the accumulator")
    (dy, dx), (sy, sx) = ints(op.dilations), ints(op.strides)
    top, left, bottom, right = ints(op.pads)
    extra_h, extra_w = ints(op.output_padding)
    dilated = np.zeros((channels, per_group, dy * (kh - 1) + 1, dx * (kw - 1) + 1), np.int64)
    dilated[:, :, ::dy, ::dx] = weight
    laid_out = np.zeros((outputs, *dilated.shape[2:], channels), np.int64)
    for g in range(group):
        block = dilated[g * group_channels:(g + 1) * group_channels]  # C/group x O/group x KH x KW
        laid_out[g * per_group:(g + 1) * per_group, :, :, g * group_channels:(g + 1) * group_channels] = \
            block.transpose(1, 2, 3, 0)
    begin, end = (-top, -left), (extra_h - bottom, extra_w - right)
    out_pad = [max(begin[0], 0), max(end[0], 0), max(begin[1], 0), max(end[1], 0)]
    n, _, h, w = shape_of(op.input)
    full = [n, (h - 1) * sy + out_pad[0] + out_pad[1] + dilated.shape[2],
            (w - 1) * sx + out_pad[2] + out_pad[3] + dilated.shape[3], outputs]
    operands = [cv.tosa(op.input, NHWC), cv.b.const(laid_out, i8), cv.b.const(bias, i32), cv.b.zero_point(i8),
                cv.b.zero_point(i8)]
    value = cv.b.op(tosa.TransposeConv2DOp, operands, full, i32, out_pad=DenseArrayBase.from_list(i64, out_pad),
                    stride=DenseArrayBase.from_list(i64, [sy, sx]), acc_type=i32)
    oh, ow = shape_of(op.result)[2:]
    value = cv.b.slice(value, [0, max(-begin[0], 0), max(-begin[1], 0), 0], [n, oh, ow, outputs])
    cv.define(op.result, value, NHWC, 32, bound)


# --------------------------------------------------------------------------------------
# Data movement (R16)
# --------------------------------------------------------------------------------------


@converts(fixed.ReshapeOp, fixed.FlattenOp)
def _reshape(cv: Converter, op: Operation, what: str) -> None:
    entry = cv[op.operands[0]]
    shape = shape_of(op.results[0])
    value = cv.b.reshape(cv.tosa(op.operands[0], identity(len(entry.layout))), shape)
    cv.define(op.results[0], value, identity(len(shape)), entry.bits, entry.bound)


@converts(fixed.TransposeOp)
def _transpose(cv: Converter, op: fixed.TransposeOp, what: str) -> None:
    entry = cv[op.input]
    value = cv.tosa(op.input, ints(op.perm))  # fixed dimension perm[i] at position i: the result in order
    cv.define(op.result, value, identity(len(entry.layout)), entry.bits, entry.bound)


@converts(fixed.ConcatOp)
def _concat(cv: Converter, op: fixed.ConcatOp, what: str) -> None:
    layout = cv[op.inputs[0]].layout
    parts = [cv.tosa(value, layout) for value in op.inputs]
    axis = layout.index(op.axis.value.data)
    shape = [shape_of(op.result)[d] for d in layout]
    value = cv.b.op(tosa.ConcatOp, parts, shape, tb.storage_type(_bits(op.result)), axis=IntegerAttr(axis, i32))
    cv.define(op.result, value, layout, _bits(op.result), max(cv[v].bound for v in op.inputs))


# --------------------------------------------------------------------------------------
# Float ops kept for the host (keep_on_host): TOSA float32 ops, not bit-exact (docs/tosa.md)
# --------------------------------------------------------------------------------------


def _define_float(cv: Converter, result: SSAValue, value: SSAValue, layout: Sequence[int]) -> None:
    cv.define(result, value, layout, 0, 0)


@converts(nn.ConstantOp)
def _float_constant(cv: Converter, op: nn.ConstantOp, what: str) -> None:
    array = op.to_numpy().astype(np.float32)
    cv.converted[op.result] = Converted(None, identity(array.ndim), 0, 0, array)


def _float_bounds(cv: Converter, x: SSAValue, low, high) -> SSAValue:
    """min(max(x, low), high), each side skipped where it is None or infinite (a high below
    low gives high, as ONNX's Clip); scalars or operands broadcast to x."""
    rank = len(shape_of(x))
    for cls, bound in ((tosa.MaximumOp, low), (tosa.MinimumOp, high)):
        if bound is None or (isinstance(bound, float) and math.isinf(bound)):
            continue
        operand = bound if isinstance(bound, SSAValue) else cv.b.scalar(bound, f32, rank)
        x = cv.b.binary(cls, x, operand)
    return x


def _unary(cv: Converter, cls: type[Operation], x: SSAValue) -> SSAValue:
    return cv.b.op(cls, [x], shape_of(x), f32)


def _hard_sigmoid(cv: Converter, x: SSAValue, alpha: float, beta: float) -> SSAValue:
    rank = len(shape_of(x))
    scaled = cv.b.mul(x, cv.b.scalar(np.float32(alpha), f32, rank))
    return _float_bounds(cv, cv.b.binary(tosa.AddOp, scaled, cv.b.scalar(np.float32(beta), f32, rank)), 0.0, 1.0)


@converts(nn.ReluOp, nn.SigmoidOp, nn.TanhOp, nn.HardSigmoidOp, nn.HardSwishOp, nn.ClipOp)
def _float_unary(cv: Converter, op: Operation, what: str) -> None:
    entry = cv[op.operands[0]]
    x = cv.tosa(op.operands[0])
    if isinstance(op, nn.ReluOp):
        value = _float_bounds(cv, x, 0.0, None)
    elif isinstance(op, nn.SigmoidOp | nn.TanhOp):
        value = _unary(cv, tosa.SigmoidOp if isinstance(op, nn.SigmoidOp) else tosa.TanhOp, x)
    elif isinstance(op, nn.HardSigmoidOp):
        value = _hard_sigmoid(cv, x, op.alpha.value.data, op.beta.value.data)
    elif isinstance(op, nn.HardSwishOp):
        value = cv.b.mul(x, _hard_sigmoid(cv, x, 1.0 / 6.0, 0.5))
    else:
        rank = len(shape_of(x))
        low, high = op.bounds()
        if op.min_value is not None:
            low = cv.tosa_ranked(op.min_value, rank, entry.layout)
        if op.max_value is not None:
            high = cv.tosa_ranked(op.max_value, rank, entry.layout)
        value = _float_bounds(cv, x, low, high)
    _define_float(cv, op.results[0], value, entry.layout)


@converts(nn.AddOp, nn.SubOp, nn.MulOp, nn.DivOp)
def _float_binary(cv: Converter, op: nn.BinaryOp, what: str) -> None:
    """Float add, sub, mul; a division is a multiplication by tosa.reciprocal (TOSA 1.0 has no
    float division), within an ulp or two of x / y."""
    lhs, rhs, layout = cv.pair(op.lhs, op.rhs)
    if isinstance(op, nn.MulOp | nn.DivOp):
        value = cv.b.mul(lhs, _unary(cv, tosa.ReciprocalOp, rhs) if isinstance(op, nn.DivOp) else rhs)
    else:
        value = cv.b.binary(tosa.AddOp if isinstance(op, nn.AddOp) else tosa.SubOp, lhs, rhs)
    _define_float(cv, op.result, value, layout)


@converts(nn.SoftmaxOp)
def _softmax(cv: Converter, op: nn.SoftmaxOp, what: str) -> None:
    """exp(x - max) / sum, as MLIR's TOSA legalizations write it: reduce_max, sub, exp,
    reduce_sum, reciprocal, mul (float32; the contract's reference sums in float64)."""
    entry = cv[op.input]
    x = cv.tosa(op.input)
    shape = list(shape_of(x))
    axis = entry.layout.index(op.axis.value.data % len(shape))
    shape[axis] = 1
    largest = cv.b.op(tosa.ReduceMaxOp, [x], shape, f32, axis=IntegerAttr(axis, i32))
    exponentials = _unary(cv, tosa.ExpOp, cv.b.binary(tosa.SubOp, x, largest))
    total = cv.b.op(tosa.ReduceSumOp, [exponentials], shape, f32, axis=IntegerAttr(axis, i32))
    _define_float(cv, op.result, cv.b.mul(exponentials, _unary(cv, tosa.ReciprocalOp, total)), entry.layout)


# --------------------------------------------------------------------------------------
# The pass
# --------------------------------------------------------------------------------------


def _tosa_type(type_) -> TensorType:
    element = type_.get_element_type()
    return type_ if element == f32 else TensorType(tb.storage_type(element.width.data), type_.get_shape())


def convert_function(function: func.FuncOp) -> func.FuncOp:
    """The TOSA function computing what `function` (fixed ops) computes."""
    inputs = [_tosa_type(arg.type) for arg in function.args]
    converted = func.FuncOp(function.sym_name.data, (inputs, []))
    converted.location = function.location
    cv = Converter(tb.TosaBuilder(converted.body.block))
    for arg, new in zip(function.args, converted.args):
        bits = 0 if arg.type.get_element_type() == f32 else _bits(arg)
        cv.define(arg, new, identity(len(shape_of(arg))), bits, fp.storage_range(bits)[1] + 1 if bits else 0)
    for op in function.body.block.ops:
        what = describe_op(op)
        if isinstance(op, func.ReturnOp):
            cv.b.location = op.location
            results = [cv.tosa(v, identity(len(shape_of(v)))) for v in op.arguments]
            cv.b.append(func.ReturnOp(*results))
            converted.function_type = FunctionType.from_lists(inputs, [r.type for r in results])
            continue
        convert = CONVERTERS.get(type(op))
        if convert is None:
            raise XnpuError(f"{what}: no TOSA form for this op")
        cv.b.location = op.location
        convert(cv, op, what)
    return converted


@dataclass(frozen=True)
class ConvertFixedToTosaPass(ModulePass):
    """fixed -> TOSA 1.0 (printed in generic form, it is what iree-compile --iree-input-type=tosa reads)."""

    name = "convert-fixed-to-tosa"

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        for function in [f for f in op.body.block.ops if isinstance(f, func.FuncOp)]:
            op.body.block.insert_op_before(convert_function(function), function)
            function.detach()
            function.erase(safe_erase=False)
        for name in [n for n in op.attributes if n.split(".")[0] in ("nn", "fixed")]:
            del op.attributes[name]  # xnpu's own metadata means nothing to TOSA consumers
