"""TOSA 1.0 formulations of the fixed-point contract's arithmetic (docs/tosa.md).

`TosaBuilder` appends TOSA ops to a block; the functions below it write one rule of
docs/fixed-point.md each as TOSA ops that compute exactly what `xnpu.semantics.fixed_point`
computes:

- R4 quantize divides in float64, a type TOSA lacks: the
  float32 estimate |x| * (1 / s) is off by far less than one step, so its floor `m` is the
  result or one below it, and one comparison of |x| with the exact threshold of level m + 1
  (`fixed_point.quantize_thresholds`, gathered by m) decides.
- R4 dequantize is float32(float64(q) * s), rounded once: a gather from the table of every
  code's value (float32 arithmetic would round twice).
- R6/R9 rescale is `tosa.rescale` (single rounding, half up, as R6) followed by a clamp to
  the symmetric range (R2/R3: TOSA saturates to [-128, 127], the contract to [-127, 127]).

Every integer intermediate is proven to fit int32 from the operands' bounds (the largest
magnitude a value can take), as TOSA requires; a case that does not fit is an error, never a
silent wrap.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

import numpy as np
from xdsl.dialects.builtin import (
    BytesAttr,
    DenseArrayBase,
    DenseIntOrFPElementsAttr,
    FloatAttr,
    IntegerAttr,
    IntegerType,
    TensorType,
    UnknownLoc,
    f32,
    i1,
    i32,
)
from xdsl.ir import Attribute, Block, Operation, SSAValue

from xnpu.core.errors import XnpuError
from xnpu.dialects import tosa
from xnpu.dialects.fixed import dense_from_ints
from xnpu.dialects.shapes import broadcast_shapes, shape_of
from xnpu.semantics import fixed_point as fp

INT32_MAX = (1 << 31) - 1
SMALL_CONSTANT = 16  # constants up to this many elements are emitted once and shared
# scale32 = false: a 16-bit multiplier, and TOSA requires 2 <= shift <= 62
SHIFT16_MIN, SHIFT16_MAX = 2, 62


def storage_type(bits: int) -> IntegerType:
    """TOSA's integer types are i8, i16 and i32: the contract's i24 is carried in i32 (R1)."""
    return IntegerType(8 if bits <= 8 else 16 if bits <= 16 else 32)


def element_of(value: SSAValue) -> Attribute:
    return value.type.get_element_type()  # type: ignore[attr-defined]


def _dense(array: np.ndarray, element: Attribute) -> DenseIntOrFPElementsAttr:
    if element != f32:
        return dense_from_ints(array, element.width.data)  # type: ignore[attr-defined]
    data = np.ascontiguousarray(array, dtype="<f4")
    return DenseIntOrFPElementsAttr(TensorType(element, data.shape), BytesAttr(data.tobytes()))


class TosaBuilder:
    """Appends TOSA ops to `block`, each at `location` (the fixed op's ONNX node)."""

    def __init__(self, block: Block):
        self.block = block
        self.location: Attribute = UnknownLoc()
        self._small_constants: dict[tuple, SSAValue] = {}  # zero points, shifts, shapes: one op each

    def emit(self, op: Operation) -> SSAValue:
        self.append(op)
        return op.results[0]

    def append(self, op: Operation) -> None:
        op.location = self.location
        self.block.add_op(op)

    def op(self, cls: type[Operation], operands: Sequence[SSAValue], shape: Sequence[int], element: Attribute,
           **properties: Attribute) -> SSAValue:
        return self.emit(cls.create(operands=list(operands), result_types=[TensorType(element, list(shape))],
                                    properties=properties))

    # constants -------------------------------------------------------------------------

    def const(self, array, element: Attribute) -> SSAValue:
        attr = _dense(np.asarray(array), element)
        if attr.get_shape() and np.prod(attr.get_shape()) > SMALL_CONSTANT:
            return self.emit(tosa.ConstOp(attr))
        key = (attr.type, attr.data.data)
        if key not in self._small_constants:
            self._small_constants[key] = self.emit(tosa.ConstOp(attr))
        return self._small_constants[key]

    def scalar(self, value, element: Attribute, rank: int) -> SSAValue:
        """A constant of shape 1 x ... x 1 that broadcasts against rank-`rank` tensors."""
        return self.const(np.full([1] * rank, value), element)

    def zero_point(self, element: Attribute) -> SSAValue:
        return self.const(np.zeros([1]), element)

    def shape(self, dims: Sequence[int]) -> SSAValue:
        key = ("shape", tuple(int(d) for d in dims))
        if key not in self._small_constants:
            self._small_constants[key] = self.emit(tosa.ConstShapeOp(dims))
        return self._small_constants[key]

    # data movement and element types ---------------------------------------------------

    def cast(self, value: SSAValue, element: Attribute) -> SSAValue:
        if element_of(value) == element:
            return value
        return self.op(tosa.CastOp, [value], shape_of(value), element)

    def transpose(self, value: SSAValue, perm: Sequence[int]) -> SSAValue:
        if list(perm) == list(range(len(perm))):
            return value
        shape = shape_of(value)
        return self.op(tosa.TransposeOp, [value], [shape[p] for p in perm], element_of(value),
                       perms=DenseArrayBase.from_list(i32, list(perm)))

    def reshape(self, value: SSAValue, shape: Sequence[int]) -> SSAValue:
        if tuple(shape) == shape_of(value):
            return value
        return self.op(tosa.ReshapeOp, [value, self.shape(shape)], shape, element_of(value))

    def slice(self, value: SSAValue, start: Sequence[int], size: Sequence[int]) -> SSAValue:
        if tuple(size) == shape_of(value):
            return value
        return self.op(tosa.SliceOp, [value, self.shape(start), self.shape(size)], size, element_of(value))

    def gather(self, table: np.ndarray, element: Attribute, index: SSAValue) -> SSAValue:
        """table[index] elementwise, for an int32 index tensor of any shape."""
        shape = shape_of(index)
        flat = self.reshape(index, [1, int(np.prod(shape))])
        values = self.const(table.reshape(1, -1, 1), element)
        picked = self.op(tosa.GatherOp, [values, flat], [1, int(np.prod(shape)), 1], element)
        return self.reshape(picked, shape)

    # arithmetic ------------------------------------------------------------------------

    def binary(self, cls: type[Operation], a: SSAValue, b: SSAValue, element: Attribute | None = None,
               **properties: Attribute) -> SSAValue:
        shape = broadcast_shapes(shape_of(a), shape_of(b))
        return self.op(cls, [a, b], shape, element or element_of(a), **properties)

    def mul(self, a: SSAValue, b: SSAValue, shift: int = 0) -> SSAValue:
        shape = broadcast_shapes(shape_of(a), shape_of(b))
        return self.op(tosa.MulOp, [a, b, self.const([shift], IntegerType(8))], shape, element_of(a))

    def clamp(self, value: SSAValue, low, high, ignore_nan: bool = False) -> SSAValue:
        element = element_of(value)
        if element == i32:  # TOSA's clamp takes int8, int16 and float, so int32 goes by minimum/maximum
            rank = len(shape_of(value))
            value = self.binary(tosa.MinimumOp, value, self.scalar(high, i32, rank))
            return self.binary(tosa.MaximumOp, value, self.scalar(low, i32, rank))
        make = (lambda v: FloatAttr(float(v), f32)) if element == f32 else (lambda v: IntegerAttr(int(v), element))
        properties: dict[str, Attribute] = {"min_val": make(low), "max_val": make(high)}
        if ignore_nan:
            properties["nan_mode"] = tosa.NanModeAttr(tosa.NanMode.IGNORE)
        return self.op(tosa.ClampOp, [value], shape_of(value), element, **properties)

    def select(self, predicate: SSAValue, a: SSAValue, b: SSAValue) -> SSAValue:
        return self.op(tosa.SelectOp, [predicate, a, b], shape_of(a), element_of(a))


# --------------------------------------------------------------------------------------
# The contract's rules as TOSA ops. `bound` is the largest |value| an operand can hold.
# --------------------------------------------------------------------------------------


def require_int32(bound: int, what: str, quantity: str) -> None:
    if bound > INT32_MAX:
        raise XnpuError(f"{what}: {quantity} can reach {bound}, beyond TOSA's int32; no exact TOSA form")


def saturate(b: TosaBuilder, value: SSAValue, bound: int, bits: int) -> tuple[SSAValue, int]:
    """R3: clip to [-qmax(bits), qmax(bits)] (skipped where `bound` shows it cannot bite) and
    store in the storage type of `bits`."""
    limit = fp.qmax(bits)
    target = storage_type(bits)
    if bound > limit:
        if element_of(value).width.data < target.width.data:  # type: ignore[attr-defined]
            value = b.cast(value, target)
        value = b.clamp(value, -limit, limit)
    return b.cast(value, target), min(bound, limit)


def apply_multipliers(b: TosaBuilder, value: SSAValue, bound: int, multipliers, shifts, element: IntegerType,
                      what: str) -> tuple[SSAValue, int]:
    """R6 as one `tosa.rescale` into `element` (TOSA's saturation to its full range included).

    One (M, shift) pair, or one per channel of the last dimension. Pairs with 2 <= shift <= 62
    are TOSA's scale32 = false (16-bit multiplier); M = 0 is written with shift 2. Shifts below
    2 (seed 000's exact 2^15, R11) use scale32 = true with M * 2^(2 - shift) at shift 2, the
    same product and the same rounding.
    """
    multipliers = np.asarray(multipliers, dtype=np.int64).reshape(-1)
    shifts = np.asarray(shifts, dtype=np.int64).reshape(-1)
    extremes = np.abs(fp.apply_multiplier(np.array([[-bound], [bound]]), multipliers, shifts))
    reach = int(extremes.max())
    require_int32(reach, what, "the rescaled value")
    shifts = np.where(multipliers == 0, SHIFT16_MIN, shifts)
    scale32 = bool(np.any(shifts < SHIFT16_MIN))
    if scale32:
        multipliers = multipliers << np.maximum(SHIFT16_MIN - shifts, 0)
        shifts = np.maximum(shifts, SHIFT16_MIN)
        require_int32(int(multipliers.max()), what, "the 32-bit multiplier")
    per_channel = multipliers.size > 1
    operands = [
        value,
        b.const(multipliers, IntegerType(32 if scale32 else 16)),
        b.const(shifts, IntegerType(8)),
        b.zero_point(element_of(value)),
        b.zero_point(element),
    ]
    result = b.op(
        tosa.RescaleOp, operands, shape_of(value), element,
        scale32=tosa.bool_attr(scale32),
        rounding_mode=tosa.RoundingModeAttr(tosa.RoundingMode.SINGLE_ROUND),
        per_channel=tosa.bool_attr(per_channel),
        input_unsigned=tosa.bool_attr(False),
        output_unsigned=tosa.bool_attr(False),
    )
    return result, min(reach, -fp.storage_range(element.width.data)[0])


def rescale(b: TosaBuilder, value: SSAValue, bound: int, multipliers, shifts, bits: int,
            what: str) -> tuple[SSAValue, int]:
    """R9: R6 then R3, as tosa.rescale + tosa.clamp to the symmetric range."""
    result, reach = apply_multipliers(b, value, bound, multipliers, shifts, storage_type(bits), what)
    return saturate(b, result, reach, bits)


def shift(b: TosaBuilder, value: SSAValue, bound: int, amount: int, rounding: bool, bits: int,
          what: str) -> tuple[SSAValue, int]:
    """R7: arithmetic shift right (floor, or half up: TOSA's `round` adds the last bit shifted
    out, which is the same) or exact left shift, then R3."""
    rank = len(shape_of(value))
    bound = int(np.abs(fp.shift_arithmetic(np.array([-bound, bound]), amount, rounding)).max())
    if amount > 0:
        element = element_of(value)
        value = b.binary(tosa.ArithmeticRightShiftOp, value, b.scalar(amount, element, rank),
                         round=tosa.bool_attr(rounding))
    elif amount < 0:
        require_int32(bound, what, "the shifted value")
        value = b.cast(value, i32)
        value = b.binary(tosa.LogicalLeftShiftOp, value, b.scalar(-amount, i32, rank))
    return saturate(b, value, bound, bits)


def quantize(b: TosaBuilder, x: SSAValue, scale: float, bits: int, what: str) -> tuple[SSAValue, int]:
    """R4, q = saturate(round_half_away(x / s)), bit for bit with float32 ops (module docstring)."""
    if bits > 16:
        raise XnpuError(f"{what}: quantize to i{bits} has no exact TOSA form (a threshold table of 2^{bits - 1})")
    limit = fp.qmax(bits)
    inverse = np.float32(1.0 / scale)
    if not (np.isfinite(inverse) and inverse >= np.finfo(np.float32).tiny and scale < 2.0 ** 100):
        raise XnpuError(f"{what}: scale {scale} is outside what float32 TOSA ops can divide by exactly")
    rank = len(shape_of(x))
    thresholds = fp.quantize_thresholds(scale, bits)  # level k is reached at thresholds[k - 1]
    next_threshold = np.append(thresholds, np.float32(np.inf))  # by current level m: thresholds[m]
    magnitude = b.op(tosa.AbsOp, [x], shape_of(x), f32)
    estimate = b.op(tosa.FloorOp, [b.mul(magnitude, b.scalar(inverse, f32, rank))], shape_of(x), f32)
    level = b.cast(b.clamp(estimate, 0.0, float(limit), ignore_nan=True), i32)
    reached = b.binary(tosa.GreaterEqualOp, magnitude, b.gather(next_threshold, f32, level), i1)
    q = b.binary(tosa.AddOp, level, b.cast(reached, i32))
    q = b.clamp(q, 0, limit)  # +inf reaches the last entry
    negative = b.binary(tosa.GreaterOp, b.scalar(0.0, f32, rank), x, i1)
    q = b.select(negative, b.binary(tosa.SubOp, b.scalar(0, i32, rank), q), q)
    return b.cast(q, storage_type(bits)), limit


def dequantize(b: TosaBuilder, q: SSAValue, bits: int, scales, channel_axis: int | None,
               what: str) -> SSAValue:
    """R4, float32(float64(q) * s[c]): a gather from the table of every code's value."""
    scales = np.asarray(scales, dtype=np.float64).reshape(-1)
    low, high = fp.storage_range(bits)
    if bits > 16 or scales.size * (high - low + 1) > 1 << 22:
        raise XnpuError(f"{what}: dequantize of i{bits} has no exact TOSA form (its table would be too large)")
    codes = np.arange(low, high + 1)
    table = fp.dequantize(codes[None, :], scales, axis=0)  # one row per channel
    index = b.cast(q, i32)
    rank = len(shape_of(q))
    offsets = np.full([1] * rank, -low)
    if scales.size > 1:
        shape = [1] * rank
        shape[channel_axis] = scales.size  # type: ignore[index]
        offsets = (np.arange(scales.size) * codes.size - low).reshape(shape)
    index = b.binary(tosa.AddOp, index, b.const(offsets, i32))
    return b.gather(table.reshape(-1), f32, index)


# --------------------------------------------------------------------------------------
# tosa.resize along one axis
# --------------------------------------------------------------------------------------

RESIZE_SCALE_MAX = 1 << 11  # TOSA: scale_n <= 2048; offset in [-n, 16n), border in [-16n, n)


def resize_matrix(in_size: int, out_size: int, n: int, d: int, offset: int, bilinear: bool) -> np.ndarray | None:
    """What tosa.resize reads along one axis with scale n / d and `offset`: an out x in matrix
    of integer weights (BILINEAR: n - r and r on rows floor(y / n) and the next, both clamped
    to the input; NEAREST: one 1, on the next row when 2r >= n), for y = o * d + offset. None
    where a row index would leave [-1, in), which TOSA forbids."""
    o = np.arange(out_size, dtype=np.int64)
    y = o * d + offset
    first = y // n
    if first.min() < -1 or first.max() >= in_size:
        return None
    rest = y - first * n
    lower, upper = np.maximum(first, 0), np.minimum(first + 1, in_size - 1)
    matrix = np.zeros((out_size, in_size), np.int64)
    if bilinear:
        np.add.at(matrix, (o, lower), n - rest)
        np.add.at(matrix, (o, upper), rest)
    else:
        matrix[o, np.where(2 * rest >= n, upper, lower)] = 1
    return matrix


def resize_parameters(matrix: np.ndarray, bilinear: bool, denominator: int = 1) -> tuple[int, int, int, int] | None:
    """(scale_n, scale_d, offset, border) with which tosa.resize reads exactly `matrix` (out x in)
    along one axis, or None. BILINEAR sums are unnormalised, so scale_n must be the axis's
    denominator (R17's D) for the int32 sums to be the contract's; NEAREST tries n / d = out / in
    and (out - 1) / (in - 1) (doubled, so a half step is an integer). Every offset TOSA allows
    is tried: the first that reproduces `matrix` is taken."""
    out_size, in_size = matrix.shape
    if bilinear:
        candidates = [(denominator, denominator * a // b) for a, b in ((in_size, out_size), (in_size - 1, out_size - 1))
                      if b > 0 and (denominator * a) % b == 0]
    else:
        candidates = []
        for a, b in ((in_size, out_size), (in_size - 1, out_size - 1)):
            if a > 0 and b > 0:
                g = math.gcd(a, b)
                candidates.append((2 * b // g, 2 * a // g))
    for n, d in dict.fromkeys(candidates):
        if not (0 < n <= RESIZE_SCALE_MAX and d > 0):
            continue
        for offset in range(-n, 16 * n):
            border = (out_size - 1) * d + offset - (in_size - 1) * n
            if not -16 * n <= border < n:
                continue
            if all(_reads(matrix[:rows], in_size, n, d, offset, bilinear) for rows in (RESIZE_FIRST_ROWS, out_size)):
                return n, d, offset, border  # (the first rows alone reject most offsets cheaply)
    return None


RESIZE_FIRST_ROWS = 4


def _reads(matrix: np.ndarray, in_size: int, n: int, d: int, offset: int, bilinear: bool) -> bool:
    tried = resize_matrix(in_size, matrix.shape[0], n, d, offset, bilinear)
    return tried is not None and np.array_equal(tried, matrix)
