"""The `fixed` dialect: the integer graph, every value an integer tensor of explicit width.

Element types are builtin signless integers of the contract's widths (R1 of
docs/fixed-point.md): i8 data, i16 and i24 intermediates, i32 accumulators. Every op's
integer behaviour is the function of `xnpu.semantics.fixed_point` its docstring names; the
verifiers check widths, shapes and parameter ranges (R5/R6 for multipliers and shifts).

Rescale factors are carried as the (multiplier, shift) pairs of R5, never as floats, so what
the interpreter runs is what the accelerator runs. The real-value scale of a result is
optional metadata (`scale`, a float or one per channel) for reports and debugging; only
`fixed.quantize` and `fixed.dequantize` read a scale.

Builders take the result width (`bits`) and, optionally, `scale`; the lowering keeps the
nn op's location by setting `op.location`.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
from xdsl.dialects.builtin import (
    I64,
    BytesAttr,
    DenseArrayBase,
    DenseIntOrFPElementsAttr,
    Float32Type,
    FloatAttr,
    IntegerAttr,
    IntegerType,
    TensorType,
    f32,
    f64,
    i8,
)
from xdsl.ir import Attribute, Dialect, Operation, SSAValue
from xdsl.irdl import (
    AnyOf,
    BaseAttr,
    IRDLOperation,
    ParsePropInAttrDict,
    irdl_op_definition,
    operand_def,
    opt_operand_def,
    opt_prop_def,
    prop_def,
    result_def,
    traits_def,
    var_operand_def,
)
from xdsl.parser import Parser
from xdsl.printer import Printer
from xdsl.traits import Commutative, ConstantLike, Pure
from xdsl.utils.exceptions import VerifyException

from xnpu.dialects.shapes import (
    broadcast_shapes,
    conv_output_shape,
    conv_properties,
    conv_transpose_output_shape,
    expect_at_least,
    expect_len,
    expect_rank,
    expect_shape,
    flatten_output_shape,
    gemm_output_shape,
    i64_array,
    i64_attr,
    ints,
    normalize_axis,
    pool_output_hw,
    pool_properties,
    shape_of,
    verify_conv_geometry,
    verify_conv_transpose_geometry,
    verify_window,
)
from xnpu.dialects.traits import (
    Capability,
    ElementwiseSamples,
    FirstOperandSamples,
    FlattenSamples,
    ReshapeSamples,
    SamplesUnlessAxisZero,
    TransposeSamples,
    UnitForm,
)
from xnpu.semantics import fixed_point
from xnpu.target import legality
from xnpu.target.description import TargetDescription
from xnpu.target.phases import resize_axis, transpose_axis

IntTensor = TensorType[IntegerType]
F32Tensor = TensorType[Float32Type]
ScaleAttr = AnyOf((BaseAttr(FloatAttr), BaseAttr(DenseArrayBase)))

# --------------------------------------------------------------------------------------
# Helpers
# --------------------------------------------------------------------------------------


def int_tensor(bits: int, shape: Sequence[int]) -> TensorType:
    return TensorType(IntegerType(bits), shape)


def width_of(value: SSAValue | Attribute) -> int:
    """The element width of an integer tensor value or type."""
    type_ = value.type if isinstance(value, SSAValue) else value
    assert isinstance(type_, TensorType)
    element = type_.get_element_type()
    assert isinstance(element, IntegerType)
    return element.width.data


def _f64(value: float) -> FloatAttr:
    return FloatAttr(float(value), f64)


def scale_attr(scale: float | Sequence[float] | np.ndarray) -> Attribute:
    """One real scale as an f64 float, several (per channel) as an f64 array."""
    values = np.asarray(scale, dtype=np.float64).reshape(-1)
    if np.ndim(scale) == 0:
        return _f64(float(values[0]))
    return DenseArrayBase.from_list(f64, [float(v) for v in values])


def scale_values(attr: Attribute | None) -> np.ndarray | None:
    if attr is None:
        return None
    if isinstance(attr, FloatAttr):
        return np.asarray([attr.value.data], dtype=np.float64)
    return np.asarray(attr.get_values(), dtype=np.float64)  # type: ignore[union-attr]


def _scale_props(scale) -> dict[str, Attribute]:
    return {} if scale is None else {"scale": scale_attr(scale)}


def _check_width(op: Operation, value: SSAValue, role: str, allowed: Sequence[int] = fixed_point.WIDTHS) -> int:
    bits = width_of(value)
    element = value.type.get_element_type()  # type: ignore[attr-defined]
    if not element.signedness.data.name == "SIGNLESS":
        raise VerifyException(f"{op.name}: {role} must be a signless integer tensor, got {value.type}")
    if bits not in allowed:
        names = ", ".join(f"i{w}" for w in allowed)
        raise VerifyException(f"{op.name}: {role} element type is i{bits}; expected {names}")
    return bits


def _check_multipliers(op: Operation, multipliers: Sequence[int], shifts: Sequence[int], what: str = "") -> None:
    """R5/R6: M is 0 or in [2^14, 2^15); shift in [-16, 62]."""
    prefix = f"{what} " if what else ""
    for m in multipliers:
        if m != 0 and not fixed_point.MULTIPLIER_MIN <= m <= fixed_point.MULTIPLIER_MAX:
            raise VerifyException(
                f"{op.name}: {prefix}multiplier {m} must be 0 or in "
                f"[{fixed_point.MULTIPLIER_MIN}, {fixed_point.MULTIPLIER_MAX}] (R5)"
            )
    for s in shifts:
        if not fixed_point.SHIFT_MIN <= s <= fixed_point.SHIFT_MAX:
            raise VerifyException(
                f"{op.name}: {prefix}shift {s} must be in [{fixed_point.SHIFT_MIN}, {fixed_point.SHIFT_MAX}] (R6)"
            )


def _check_scale(op: Operation) -> None:
    values = scale_values(op.properties.get("scale"))
    if values is not None and (values.size == 0 or not np.all(np.isfinite(values)) or np.any(values <= 0)):
        raise VerifyException(f"{op.name}: scale values must be positive and finite, got {values.tolist()}")


class FixedOp(IRDLOperation):
    """Shared verification: every fixed op may carry an optional real `scale` of its result."""

    def verify_(self) -> None:
        _check_scale(self)
        self.verify_fixed()

    def verify_fixed(self) -> None:
        raise NotImplementedError


# --------------------------------------------------------------------------------------
# Constants
# --------------------------------------------------------------------------------------

ELEMENTWISE = ElementwiseSamples()
FIRST_OPERAND = FirstOperandSamples()
RESCALED = "its wide result must be rescaled to int8 by its only user (the unit writes int8)"


@dataclass(frozen=True)
class BoundaryForm(UnitForm):
    """Constants, and the float conversions at the program's edges (the host quantizes inputs
    and dequantizes outputs); lower-fixed-to-npu checks that they are at the edges."""

    how: str

    def capability(self, op_name: str, target: TargetDescription) -> Capability:
        return Capability(op_name, True, self.how)



def dense_from_ints(array: np.ndarray, bits: int) -> DenseIntOrFPElementsAttr:
    """A dense integer attribute of width `bits` holding `array`, without per-element Python work."""
    array = np.asarray(array)
    low, high = fixed_point.storage_range(bits)
    if array.size and (array.min() < low or array.max() > high):
        raise ValueError(f"values outside i{bits}: [{array.min()}, {array.max()}]")
    data = np.ascontiguousarray(array, dtype=fixed_point.storage_dtype(bits).newbyteorder("<"))
    return DenseIntOrFPElementsAttr(TensorType(IntegerType(bits), data.shape), BytesAttr(data.tobytes()))


def _stored_values(attr: DenseIntOrFPElementsAttr) -> np.ndarray:
    """The values of a dense integer attribute as xDSL stores them (i24 in 4 bytes), flat: a
    read-only view of its bytes, one value for a splat."""
    return np.frombuffer(attr.data.data, dtype=np.dtype(attr.get_element_type().format))  # type: ignore[attr-defined]


def dense_to_ints(attr: DenseIntOrFPElementsAttr) -> np.ndarray:
    """The values of a dense integer attribute, in the numpy storage dtype of its width."""
    shape = tuple(attr.get_shape())
    bits = attr.get_element_type().width.data  # type: ignore[attr-defined]
    values = _stored_values(attr).astype(fixed_point.storage_dtype(bits))  # a copy: the caller's to change
    if values.size == 1 and math.prod(shape) != 1:  # a splat
        return np.full(shape, values[0], dtype=values.dtype)
    return values.reshape(shape)


@irdl_op_definition
class ConstantOp(FixedOp):
    """An integer tensor constant: quantized weights (i8) and biases (i32).

    `%w = fixed.constant dense<...> : tensor<...xi8>`; large values print as a hex blob.
    """

    name = "fixed.constant"
    value = prop_def(DenseIntOrFPElementsAttr)
    result = result_def(IntTensor)
    traits = traits_def(ConstantLike(), Pure(), BoundaryForm("constant image in DDR"))

    def __init__(self, value: DenseIntOrFPElementsAttr | np.ndarray, bits: int | None = None):
        if isinstance(value, np.ndarray):
            if bits is None:
                raise ValueError("fixed.constant from numpy needs the element width `bits`")
            value = dense_from_ints(value, bits)
        super().__init__(properties={"value": value}, result_types=[value.type])

    def verify_fixed(self) -> None:
        if self.value.type != self.result.type:
            raise VerifyException(
                f"fixed.constant: value type {self.value.type} differs from result type {self.result.type}"
            )
        bits = _check_width(self, self.result, "result")
        values = _stored_values(self.value)  # checked where they are stored: weights are not copied to verify
        count = math.prod(self.value.get_shape())
        if values.size not in (1, count):
            raise VerifyException(f"fixed.constant: {values.size} values for a tensor of {count} elements")
        low, high = fixed_point.storage_range(bits)
        if values.size and (values.min() < low or values.max() > high):
            raise VerifyException(f"fixed.constant: values [{values.min()}, {values.max()}] do not fit i{bits}")

    def to_numpy(self) -> np.ndarray:
        return dense_to_ints(self.value)

    @classmethod
    def parse(cls, parser: Parser) -> ConstantOp:
        attr = parser.parse_attribute()
        if not isinstance(attr, DenseIntOrFPElementsAttr) or not isinstance(attr.get_element_type(), IntegerType):
            parser.raise_error("fixed.constant expects a dense<...> : tensor<...xiN> attribute")
        op = cls(attr)
        op.attributes.update(parser.parse_optional_attr_dict())
        return op

    def print(self, printer: Printer) -> None:
        # Printed with numpy rather than by the builtin printer, which unpacks every element
        # into Python ints (slow for a ResNet's weights).
        raw = self.value.data.data
        data = np.frombuffer(raw, dtype=np.dtype(self.value.get_element_type().format))  # type: ignore[attr-defined]
        splat = data.size >= 1 and bool((data == data[0]).all())
        printer.print_string(" dense<")
        if data.size > 100 and not splat:
            printer.print_string('"0x' + raw.hex().upper() + '"')
        elif splat and (data.size > 1 or not self.value.type.get_shape()):
            printer.print_string(str(int(data[0])))
        else:
            nested = data.reshape(shape_of(self.value.type))
            printer.print_string(str(nested.tolist()))
        printer.print_string("> : ")
        printer.print_attribute(self.result.type)
        if self.attributes:
            printer.print_op_attributes(self.attributes)


# --------------------------------------------------------------------------------------
# Conversions between float and integer, and between integer widths
# --------------------------------------------------------------------------------------


@irdl_op_definition
class QuantizeOp(FixedOp):
    """R4: f32 -> iN, q = saturate(round_half_away(x / scale)); `scale` is the result's scale."""

    name = "fixed.quantize"
    input = operand_def(F32Tensor)
    result = result_def(IntTensor)
    scale = prop_def(FloatAttr)
    traits = traits_def(Pure(), ELEMENTWISE, BoundaryForm("program inputs only (the host quantizes)"))
    irdl_options = (ParsePropInAttrDict(),)
    assembly_format = "$input attr-dict `:` type($input) `->` type($result)"

    def __init__(self, input: SSAValue, scale: float, bits: int = 8):
        super().__init__(
            operands=[input], result_types=[int_tensor(bits, shape_of(input))], properties={"scale": _f64(scale)}
        )

    def verify_fixed(self) -> None:
        _check_width(self, self.result, "result")
        expect_shape(self, shape_of(self.input))
        scale = self.scale.value.data
        if not (scale > 0 and math.isfinite(scale)):
            raise VerifyException(f"fixed.quantize: scale must be positive and finite, got {scale}")


@irdl_op_definition
class DequantizeOp(FixedOp):
    """R4: iN -> f32, x = q * scale; `scale` is the input's scale."""

    name = "fixed.dequantize"
    input = operand_def(IntTensor)
    result = result_def(F32Tensor)
    scale = prop_def(ScaleAttr)
    axis = opt_prop_def(IntegerAttr[I64])
    traits = traits_def(Pure(), SamplesUnlessAxisZero("axis"), BoundaryForm("program outputs only (the host dequantizes)"))
    irdl_options = (ParsePropInAttrDict(),)
    assembly_format = "$input attr-dict `:` type($input) `->` type($result)"

    def __init__(self, input: SSAValue, scale: float | Sequence[float], axis: int | None = None):
        props: dict[str, Attribute] = {"scale": scale_attr(scale)}
        if axis is not None:
            props["axis"] = i64_attr(axis)
        super().__init__(operands=[input], result_types=[TensorType(f32, shape_of(input))], properties=props)

    def scales(self) -> np.ndarray:
        return scale_values(self.scale)  # type: ignore[return-value]

    def verify_fixed(self) -> None:
        _check_width(self, self.input, "input")
        shape = shape_of(self.input)
        expect_shape(self, shape)
        _check_per_channel(self, len(self.scales()), self.axis, shape, "scale")


def _check_per_channel(op: Operation, count: int, axis_attr: IntegerAttr | None, shape: Sequence[int], what: str) -> None:
    if count == 1:
        return
    if axis_attr is None:
        raise VerifyException(f"{op.name}: {count} {what} values need an 'axis' naming the channel dimension")
    axis = normalize_axis(op, axis_attr.value.data, len(shape))
    if shape[axis] != count:
        raise VerifyException(
            f"{op.name}: {count} {what} values but dimension {axis} has {shape[axis]} channels"
        )


@dataclass(frozen=True)
class RescaleForm(UnitForm):
    """A rescale to int8 is the output stage of the unit producing its input; an int8 -> int8
    one (a change of scale between layers) runs on its own as an exact TABLE (R9 per code)."""

    needs = "a rescale runs in the output stage of the unit producing its input, or on int8 as a TABLE"
    selected_with_consumer = True

    def capability(self, op_name: str, target: TargetDescription) -> Capability:
        fused = "fused into the CONV / ELTWISE / POOL producing it"
        if target.has_table:
            return Capability(op_name, True, f"{fused}; standalone int8 -> int8 as a TABLE")
        return Capability(op_name, True, f"{fused} only (no table unit)")

    def problem(self, op: Operation, target: TargetDescription) -> str | None:
        assert isinstance(op, RescaleOp)
        if width_of(op.input) != 8 or width_of(op.result) != 8:
            return None  # its producer's unit rescales (that unit's form answers for it)
        if len(ints(op.multiplier)) != 1:
            return "a per-channel int8 rescale has no TABLE form"
        return legality.unit_problem(target, "table")


@irdl_op_definition
class RescaleOp(FixedOp):
    """R9: iN -> iM, saturate(x * M * 2^-shift rounded half up) - TOSA RESCALE (scale32=false,
    single rounding). One (multiplier, shift) pair, or one per channel along `axis`.
    """

    name = "fixed.rescale"
    input = operand_def(IntTensor)
    result = result_def(IntTensor)
    multiplier = prop_def(DenseArrayBase[I64])
    shift = prop_def(DenseArrayBase[I64])
    axis = opt_prop_def(IntegerAttr[I64])
    scale = opt_prop_def(ScaleAttr)
    traits = traits_def(Pure(), SamplesUnlessAxisZero("axis"), RescaleForm())
    irdl_options = (ParsePropInAttrDict(),)
    assembly_format = "$input attr-dict `:` type($input) `->` type($result)"

    def __init__(
        self,
        input: SSAValue,
        multiplier: int | Sequence[int],
        shift: int | Sequence[int],
        bits: int = 8,
        axis: int | None = None,
        scale=None,
    ):
        multipliers = [int(v) for v in np.asarray(multiplier).reshape(-1)]
        shifts = [int(v) for v in np.asarray(shift).reshape(-1)]
        props: dict[str, Attribute] = {"multiplier": i64_array(multipliers), "shift": i64_array(shifts)}
        if axis is not None:
            props["axis"] = i64_attr(axis)
        props.update(_scale_props(scale))
        super().__init__(operands=[input], result_types=[int_tensor(bits, shape_of(input))], properties=props)

    def channel_axis(self) -> int | None:
        if self.axis is None:
            return None
        axis = self.axis.value.data
        return axis + len(shape_of(self.input)) if axis < 0 else axis

    def verify_fixed(self) -> None:
        _check_width(self, self.input, "input")
        _check_width(self, self.result, "result")
        shape = shape_of(self.input)
        expect_shape(self, shape)
        multipliers, shifts = ints(self.multiplier), ints(self.shift)
        if len(multipliers) != len(shifts) or not multipliers:
            raise VerifyException(
                f"fixed.rescale: {len(multipliers)} multipliers but {len(shifts)} shifts; give one pair or one per channel"
            )
        _check_per_channel(self, len(multipliers), self.axis, shape, "multiplier")
        _check_multipliers(self, multipliers, shifts)


@dataclass(frozen=True)
class ShiftForm(UnitForm):
    """seed 000's int16 stage: the ELTWISE unit's pre-shift between an add and its rescale."""

    needs = "only a truncating right shift by 0..15 to int16 between an add and its rescale fits the ELTWISE unit"
    selected_with_consumer = True

    def capability(self, op_name: str, target: TargetDescription) -> Capability:
        return Capability(op_name, True, "fused: the int16 stage of a two-stage ELTWISE add/sub")


@irdl_op_definition
class ShiftOp(FixedOp):
    """R7: arithmetic shift by `shift` (right when > 0, left when < 0), rounding half up when
    `rounding` = 1 (else floor), saturated to the result width.
    """

    name = "fixed.shift"
    input = operand_def(IntTensor)
    result = result_def(IntTensor)
    shift = prop_def(IntegerAttr[I64])
    rounding = prop_def(IntegerAttr[I64])
    scale = opt_prop_def(ScaleAttr)
    traits = traits_def(Pure(), ELEMENTWISE, ShiftForm())
    irdl_options = (ParsePropInAttrDict(),)
    assembly_format = "$input attr-dict `:` type($input) `->` type($result)"

    def __init__(self, input: SSAValue, shift: int, bits: int, rounding: bool = False, scale=None):
        props = {"shift": i64_attr(shift), "rounding": i64_attr(int(rounding)), **_scale_props(scale)}
        super().__init__(operands=[input], result_types=[int_tensor(bits, shape_of(input))], properties=props)

    def verify_fixed(self) -> None:
        _check_width(self, self.input, "input")
        _check_width(self, self.result, "result")
        expect_shape(self, shape_of(self.input))
        shift = self.shift.value.data
        if not -31 <= shift <= 31:
            raise VerifyException(f"fixed.shift: shift {shift} must be in [-31, 31] (R7)")
        if self.rounding.value.data not in (0, 1):
            raise VerifyException(f"fixed.shift: rounding must be 0 or 1, got {self.rounding.value.data}")


# the producers whose rescale is a CONV or ELTWISE output stage, where a relu is the unit's flag
RELU_FLAG_PRODUCERS = ("fixed.conv2d", "fixed.gemm", "fixed.add", "fixed.sub", "fixed.mul", "fixed.shift",
                       "fixed.conv_transpose2d", "fixed.resize_linear")


@dataclass(frozen=True)
class ClampForm(UnitForm):
    """An int8 clamp: the CLAMP unit, the saturation every unit applies anyway (R3), or the
    relu flag of the CONV or ELTWISE producing it; other clamps are legalized (seed 001) or
    run as an exact TABLE."""

    needs = "the target has neither a clamp nor a table unit for it"
    selected_with_consumer = True

    def capability(self, op_name: str, target: TargetDescription) -> Capability:
        if target.has_clamp:
            return Capability(op_name, True, "CLAMP unit, any bounds")
        return Capability(op_name, False, f"no clamp unit; only saturation to {_saturation(target)} and [0, max] "
                                          "as a producer's relu flag")

    def problem(self, op: Operation, target: TargetDescription) -> str | None:
        assert isinstance(op, ClampOp)
        if width_of(op.input) != 8:
            return "only int8 clamps and tables have an instruction"
        low, high = op.bounds()
        if target.has_clamp or legality.clamp_is_saturation(target, low, high):
            return None
        if legality.clamp_is_relu(target, low, high) and relu_flaggable(op):
            return None
        return f"the target has no clamp unit for [{low}, {high}]"


def relu_flaggable(clamp: ClampOp) -> bool:
    """A clamp whose input is the output stage of a CONV or ELTWISE (the rescale after a conv,
    gemm, add, sub, mul or int16 stage, used by nothing else; or after a transposed
    convolution or linear resize, whose phase CONVs each take the flag): its relu flag."""
    producer = clamp.operands[0].owner
    if not isinstance(producer, RescaleOp) or len(list(producer.result.uses)) != 1:
        return False
    return isinstance(producer.input.owner, Operation) and producer.input.owner.name in RELU_FLAG_PRODUCERS


@irdl_op_definition
class ClampOp(FixedOp):
    """R8: clip to [min, max]; same type in and out."""

    name = "fixed.clamp"
    input = operand_def(IntTensor)
    result = result_def(IntTensor)
    min = prop_def(IntegerAttr[I64])
    max = prop_def(IntegerAttr[I64])
    scale = opt_prop_def(ScaleAttr)
    traits = traits_def(Pure(), ELEMENTWISE, ClampForm())
    irdl_options = (ParsePropInAttrDict(),)
    assembly_format = "$input attr-dict `:` type($input) `->` type($result)"

    def __init__(self, input: SSAValue, min: int, max: int, scale=None):
        props = {"min": i64_attr(min), "max": i64_attr(max), **_scale_props(scale)}
        super().__init__(operands=[input], result_types=[input.type], properties=props)

    def bounds(self) -> tuple[int, int]:
        return self.min.value.data, self.max.value.data

    def verify_fixed(self) -> None:
        bits = _check_width(self, self.input, "input")
        if self.result.type != self.input.type:
            raise VerifyException(f"fixed.clamp: result type {self.result.type} differs from input type {self.input.type}")
        low, high = self.bounds()
        if low > high:
            raise VerifyException(f"fixed.clamp: min {low} is greater than max {high}")
        limit = fixed_point.qmax(bits)
        if low < -limit or high > limit:
            raise VerifyException(f"fixed.clamp: bounds [{low}, {high}] exceed the i{bits} range [{-limit}, {limit}] (R2)")


# --------------------------------------------------------------------------------------
# Element-wise arithmetic
# --------------------------------------------------------------------------------------


@dataclass(frozen=True)
class EltwiseForm(UnitForm):
    """add, sub and mul on the ELTWISE unit: the op, and operands it can read (the first of the
    result's shape, after swapping a commutative add or mul; the second broadcast per channel,
    as one value, or not at all)."""

    needs = RESCALED
    selected_with_consumer = True

    def capability(self, op_name: str, target: TargetDescription) -> Capability:
        kind = op_name.split(".")[1]
        if target.supports_eltwise(kind):
            return Capability(op_name, True, f"ELTWISE, channels <= {target.eltwise.max_channels}, "
                                             "same shape, per-channel or scalar broadcast")
        return Capability(op_name, False, f"the ELTWISE unit has no {kind} (it has {', '.join(target.eltwise.ops)})")

    def problem(self, op: Operation, target: TargetDescription) -> str | None:
        kind = op.name.split(".")[1]
        problem = legality.eltwise_problem(target, kind)
        if problem:
            return problem
        lhs, rhs = (shape_of(v) for v in op.operands)
        result = shape_of(op.results[0])
        if lhs != result and (kind == "sub" or rhs != result):
            return f"broadcasting the first operand {list(lhs)} to {list(result)} has no instruction"
        if lhs != result:
            lhs, rhs = rhs, lhs
        if legality.eltwise_broadcast(lhs, rhs) is None:
            return f"broadcasting {list(rhs)} to {list(lhs)} has no instruction (only per-channel or scalar)"
        return None


class WideningAddOp(FixedOp):
    """R10: saturate(apply(lhs, lhs_multiplier, lhs_shift) +- apply(rhs, rhs_multiplier,
    rhs_shift)) with numpy broadcasting: the accelerator's element-wise adder, whose inputs
    each pass their own rescale into a wide (int24) common scale.
    """

    lhs = operand_def(IntTensor)
    rhs = operand_def(IntTensor)
    result = result_def(IntTensor)
    lhs_multiplier = prop_def(IntegerAttr[I64])
    lhs_shift = prop_def(IntegerAttr[I64])
    rhs_multiplier = prop_def(IntegerAttr[I64])
    rhs_shift = prop_def(IntegerAttr[I64])
    scale = opt_prop_def(ScaleAttr)
    traits = traits_def(Pure(), ELEMENTWISE, EltwiseForm())
    irdl_options = (ParsePropInAttrDict(),)
    assembly_format = "$lhs `,` $rhs attr-dict `:` `(` type($lhs) `,` type($rhs) `)` `->` type($result)"

    def __init__(
        self,
        lhs: SSAValue,
        rhs: SSAValue,
        lhs_multiplier: int,
        lhs_shift: int,
        rhs_multiplier: int,
        rhs_shift: int,
        bits: int = 24,
        scale=None,
    ):
        props = {
            "lhs_multiplier": i64_attr(lhs_multiplier),
            "lhs_shift": i64_attr(lhs_shift),
            "rhs_multiplier": i64_attr(rhs_multiplier),
            "rhs_shift": i64_attr(rhs_shift),
            **_scale_props(scale),
        }
        shape = broadcast_shapes(shape_of(lhs), shape_of(rhs))
        super().__init__(operands=[lhs, rhs], result_types=[int_tensor(bits, shape)], properties=props)

    def params(self) -> tuple[int, int, int, int]:
        return (
            self.lhs_multiplier.value.data,
            self.lhs_shift.value.data,
            self.rhs_multiplier.value.data,
            self.rhs_shift.value.data,
        )

    def verify_fixed(self) -> None:
        _check_width(self, self.lhs, "lhs")
        _check_width(self, self.rhs, "rhs")
        _check_width(self, self.result, "result")
        try:
            expected = broadcast_shapes(shape_of(self.lhs), shape_of(self.rhs))
        except ValueError as error:
            raise VerifyException(f"{self.name}: {error}") from None
        expect_shape(self, expected)
        lm, ls, rm, rs = self.params()
        _check_multipliers(self, [lm], [ls], "lhs")
        _check_multipliers(self, [rm], [rs], "rhs")


@irdl_op_definition
class AddOp(WideningAddOp):
    name = "fixed.add"


@irdl_op_definition
class SubOp(WideningAddOp):
    name = "fixed.sub"


@irdl_op_definition
class MulOp(FixedOp):
    """R12: saturate(lhs * rhs) with numpy broadcasting; i8 x i8 -> i16 is exact."""

    name = "fixed.mul"
    lhs = operand_def(IntTensor)
    rhs = operand_def(IntTensor)
    result = result_def(IntTensor)
    scale = opt_prop_def(ScaleAttr)
    traits = traits_def(Pure(), Commutative(), ELEMENTWISE, EltwiseForm())
    irdl_options = (ParsePropInAttrDict(),)
    assembly_format = "$lhs `,` $rhs attr-dict `:` `(` type($lhs) `,` type($rhs) `)` `->` type($result)"

    def __init__(self, lhs: SSAValue, rhs: SSAValue, bits: int = 16, scale=None):
        shape = broadcast_shapes(shape_of(lhs), shape_of(rhs))
        super().__init__(operands=[lhs, rhs], result_types=[int_tensor(bits, shape)], properties=_scale_props(scale))

    def verify_fixed(self) -> None:
        a = _check_width(self, self.lhs, "lhs")
        b = _check_width(self, self.rhs, "rhs")
        out = _check_width(self, self.result, "result")
        if out < min(a + b, 32):
            raise VerifyException(
                f"fixed.mul: an i{a} x i{b} product needs an i{min(a + b, 32)} result, got i{out} (R12)"
            )
        try:
            expected = broadcast_shapes(shape_of(self.lhs), shape_of(self.rhs))
        except ValueError as error:
            raise VerifyException(f"fixed.mul: {error}") from None
        expect_shape(self, expected)


# --------------------------------------------------------------------------------------
# Convolution and dense layers
# --------------------------------------------------------------------------------------


def _check_reduction(op: Operation, length: int) -> None:
    if length > fixed_point.MAX_REDUCTION:
        raise VerifyException(
            f"{op.name}: reduction length {length} exceeds {fixed_point.MAX_REDUCTION}; "
            "the int32 accumulator could overflow (R13)"
        )


def _conv_limits(target: TargetDescription) -> str:
    c = target.conv
    return (f"kernel <= {c.max_kernel}, stride <= {c.max_stride}, dilation <= {c.max_dilation} "
            f"(or a dense kernel <= {c.max_kernel}), pad <= {c.max_pad}, input channels <= {c.max_channels}")


def _saturation(target: TargetDescription) -> str:
    return f"[{target.data.saturation_min}, {target.data.saturation_max}]"


def activation_kernels(value: SSAValue) -> bool:
    """Seed 002: O x 1 x KH x KW kernels that are an activation reshaped (its row-major bytes
    are the DW kernel layout); the reshape may already be the accelerator's."""
    shape = shape_of(value)
    return (isinstance(value.owner, Operation) and value.owner.name in ("fixed.reshape", "npu.reshape")
            and len(shape) == 4 and shape[1] == 1)


@dataclass(frozen=True)
class ConvForm(UnitForm):
    """A convolution on the CONV unit: kernels that are constants or an activation read as DW
    kernels (seed 002), constant biases, the unit's limits. A dilation beyond the unit's limit
    counts as the dense kernel (zeros between the taps) lower-fixed-to-npu makes of it, and a
    1-D kernel beyond it that is a multiple of its stride as the convolution of hops
    (legality.hop_folded_kernel), unless `dense_dilation` is off (the unit's own limits)."""

    needs = RESCALED
    selected_with_consumer = True

    def capability(self, op_name: str, target: TargetDescription) -> Capability:
        depthwise = "depthwise included" if target.conv.depthwise else "no depthwise (group == channels)"
        return Capability(op_name, True, f"CONV: {_conv_limits(target)}; {depthwise}; a 1-D kernel beyond "
                                         "them that is a multiple of its stride as the convolution of hops")

    def problem(self, op: Operation, target: TargetDescription, dense_dilation: bool = True) -> str | None:
        assert isinstance(op, Conv2dOp)
        x, w = shape_of(op.input), shape_of(op.weight)
        group = op.group.value.data
        depthwise = group > 1 and group == x[1] == w[0]
        constant_kernels = isinstance(op.weight.owner, ConstantOp)
        if not constant_kernels and not activation_kernels(op.weight):
            return "convolution weights must be constants or an activation reshaped to kernels"
        if op.bias is not None and not isinstance(op.bias.owner, ConstantOp):
            return "convolution biases must be constants"
        kernel, dilations, strides, in_channels = w[2:], ints(op.dilations), ints(op.strides), w[1]
        if dense_dilation and constant_kernels and max(dilations) > target.conv.max_dilation:
            extent = legality.dense_dilated_kernel(target, kernel, dilations)
            if extent is not None:
                kernel, dilations = extent, (1, 1)
        problem = legality.conv_problem(target, kernel=kernel, strides=strides, dilations=dilations,
                                        pads=ints(op.pads), in_channels=in_channels, depthwise=depthwise)
        hops = legality.hop_folded_kernel(x, kernel, strides, dilations, ints(op.pads), group)
        if problem and dense_dilation and constant_kernels and hops is not None:
            return legality.conv_problem(target, kernel=(1, hops[1]), strides=(1, 1), dilations=(1, 1),
                                         pads=(0, 0, 0, 0), in_channels=hops[0], depthwise=False)
        return problem


@irdl_op_definition
class Conv2dOp(FixedOp):
    """R13: i8 NCHW input * i8 OIHW weight (+ i32 bias of O) -> i32, exact accumulation."""

    name = "fixed.conv2d"
    input = operand_def(IntTensor)
    weight = operand_def(IntTensor)
    bias = opt_operand_def(IntTensor)
    result = result_def(IntTensor)
    strides = prop_def(DenseArrayBase[I64])
    pads = prop_def(DenseArrayBase[I64])
    dilations = prop_def(DenseArrayBase[I64])
    group = prop_def(IntegerAttr[I64])
    scale = opt_prop_def(ScaleAttr)
    traits = traits_def(Pure(), FIRST_OPERAND, ConvForm())
    irdl_options = (ParsePropInAttrDict(),)
    assembly_format = "$input `,` $weight (`,` $bias^)? attr-dict `:` functional-type(operands, results)"

    def __init__(
        self,
        input: SSAValue,
        weight: SSAValue,
        bias: SSAValue | None,
        strides: Sequence[int] = (1, 1),
        pads: Sequence[int] = (0, 0, 0, 0),
        dilations: Sequence[int] = (1, 1),
        group: int = 1,
        scale=None,
    ):
        shape = conv_output_shape(shape_of(input), shape_of(weight), strides, pads, dilations)
        super().__init__(
            operands=[input, weight, bias],
            result_types=[int_tensor(32, shape)],
            properties={**conv_properties(strides, pads, dilations, group), **_scale_props(scale)},
        )

    def verify_fixed(self) -> None:
        _check_width(self, self.input, "input", (8,))
        _check_width(self, self.weight, "weight", (8,))
        _check_width(self, self.result, "result", (32,))
        expected = verify_conv_geometry(
            self, self.input, self.weight, ints(self.strides), ints(self.pads), ints(self.dilations),
            self.group.value.data,
        )
        w = shape_of(self.weight)
        if self.bias is not None:
            _check_width(self, self.bias, "bias", (32,))
            if shape_of(self.bias) != (w[0],):
                raise VerifyException(f"fixed.conv2d: bias shape must be [{w[0]}], got {list(shape_of(self.bias))}")
        _check_reduction(self, w[1] * w[2] * w[3])
        expect_shape(self, expected)


@dataclass(frozen=True)
class ConvTransposeForm(UnitForm):
    """4 convolutions by sub-kernels (one per output phase, R18), interleaved by the DMA: stride
    2, dilation 1, a kernel of at least 2, constant weights and bias, phase convolutions within
    the CONV unit's limits."""

    needs = RESCALED
    selected_with_consumer = True

    def capability(self, op_name: str, target: TargetDescription) -> Capability:
        return Capability(op_name, True, "stride 2, dilation 1, kernel >= 2: 4 CONVs by its phase "
                          f"sub-kernels within the CONV limits ({_conv_limits(target)}), a DMA interleave")

    def problem(self, op: Operation, target: TargetDescription) -> str | None:
        assert isinstance(op, ConvTranspose2dOp)
        strides, dilations = ints(op.strides), ints(op.dilations)
        if tuple(strides) != (2, 2):
            return f"transposed convolution stride {strides[0]}x{strides[1]}: the phase pattern is stride 2x2"
        if any(d != 1 for d in dilations):
            return "a dilated transposed convolution has no phase pattern"
        if not isinstance(op.weight.owner, ConstantOp):
            return "transposed convolution weights must be constants"
        if op.bias is not None and not isinstance(op.bias.owner, ConstantOp):
            return "transposed convolution biases must be constants"
        axes = op.phase_axes()
        if axes[0] is None or axes[1] is None:
            return f"kernel {'x'.join(map(str, shape_of(op.weight)[2:]))} is smaller than the stride: a phase has no tap"
        x, w, y = shape_of(op.input), shape_of(op.weight), shape_of(op.result)
        group = op.group.value.data
        depthwise = group > 1 and group == x[1] == y[1]
        for rows in axes[0]:
            for cols in axes[1]:
                problem = legality.conv_problem(target, kernel=(rows.taps, cols.taps), strides=(1, 1),
                                                dilations=(1, 1), pads=(rows.pads[0], cols.pads[0], rows.pads[1], cols.pads[1]),
                                                in_channels=w[0] // group, depthwise=depthwise)
                if problem:
                    return f"phase convolution: {problem}"
        return legality.interleave_problem(target, y[1], y[2:], strides)


@irdl_op_definition
class ConvTranspose2dOp(FixedOp):
    """R18: i8 NCHW input, i8 C x O/group x KH x KW weight (+ i32 bias of O) -> i32: ONNX's
    transposed convolution, accumulated exactly; a per-channel fixed.rescale follows."""

    name = "fixed.conv_transpose2d"
    input = operand_def(IntTensor)
    weight = operand_def(IntTensor)
    bias = opt_operand_def(IntTensor)
    result = result_def(IntTensor)
    strides = prop_def(DenseArrayBase[I64])
    pads = prop_def(DenseArrayBase[I64])
    dilations = prop_def(DenseArrayBase[I64])
    output_padding = prop_def(DenseArrayBase[I64])
    group = prop_def(IntegerAttr[I64])
    scale = opt_prop_def(ScaleAttr)
    traits = traits_def(Pure(), FIRST_OPERAND, ConvTransposeForm())
    irdl_options = (ParsePropInAttrDict(),)
    assembly_format = "$input `,` $weight (`,` $bias^)? attr-dict `:` functional-type(operands, results)"

    def __init__(
        self,
        input: SSAValue,
        weight: SSAValue,
        bias: SSAValue | None,
        strides: Sequence[int] = (1, 1),
        pads: Sequence[int] = (0, 0, 0, 0),
        dilations: Sequence[int] = (1, 1),
        output_padding: Sequence[int] = (0, 0),
        group: int = 1,
        scale=None,
    ):
        shape = conv_transpose_output_shape(shape_of(input), shape_of(weight), strides, pads, dilations,
                                            output_padding, group)
        super().__init__(
            operands=[input, weight, bias],
            result_types=[int_tensor(32, shape)],
            properties={**conv_properties(strides, pads, dilations, group, output_padding), **_scale_props(scale)},
        )

    def phase_axes(self):
        """The phases (target/phases.py) of the output rows and columns (dilation 1): the
        kernel taps and pads of the convolution computing each one; None where a phase has no tap."""
        x, w, y = shape_of(self.input), shape_of(self.weight), shape_of(self.result)
        strides, pads = ints(self.strides), ints(self.pads)
        return tuple(transpose_axis(x[2 + i], y[2 + i], w[2 + i], strides[i], pads[i]) for i in range(2))

    def verify_fixed(self) -> None:
        _check_width(self, self.input, "input", (8,))
        _check_width(self, self.weight, "weight", (8,))
        _check_width(self, self.result, "result", (32,))
        expected = verify_conv_transpose_geometry(
            self, self.input, self.weight, ints(self.strides), ints(self.pads), ints(self.dilations),
            ints(self.output_padding), self.group.value.data,
        )
        if self.bias is not None:
            _check_width(self, self.bias, "bias", (32,))
            if shape_of(self.bias) != (expected[1],):
                raise VerifyException(
                    f"fixed.conv_transpose2d: bias shape must be [{expected[1]}], got {list(shape_of(self.bias))}"
                )
        w = shape_of(self.weight)
        _check_reduction(self, w[0] // self.group.value.data * w[2] * w[3])
        expect_shape(self, expected)


@dataclass(frozen=True)
class GemmForm(UnitForm):
    """A fully connected layer on the CONV unit (1x1, K input channels): constant weights and a
    constant bias of one value per output column."""

    needs = RESCALED
    selected_with_consumer = True

    def capability(self, op_name: str, target: TargetDescription) -> Capability:
        return Capability(op_name, True, f"CONV 1x1, K <= {target.conv.max_channels}")

    def problem(self, op: Operation, target: TargetDescription) -> str | None:
        assert isinstance(op, GemmOp)
        if not isinstance(op.b.owner, ConstantOp):
            return "gemm B must be a constant (the weights)"
        if op.bias is not None and not isinstance(op.bias.owner, ConstantOp):
            return "gemm bias must be a constant"
        columns = shape_of(op.result)[1]
        bias = () if op.bias is None else shape_of(op.bias)
        if op.bias is not None and bias not in ((columns,), (1, columns)) and math.prod(bias) != 1:
            return f"gemm bias of shape {list(bias)} is not one value per output column"
        return legality.conv_problem(target, kernel=(1, 1), strides=(1, 1), dilations=(1, 1), pads=(0, 0, 0, 0),
                                     in_channels=shape_of(op.a)[1], depthwise=False)


@irdl_op_definition
class GemmOp(FixedOp):
    """R13: i8 A (M x K) @ op(B) + i32 bias (broadcast to M x N) -> i32; op = transpose if trans_b."""

    name = "fixed.gemm"
    a = operand_def(IntTensor)
    b = operand_def(IntTensor)
    bias = opt_operand_def(IntTensor)
    result = result_def(IntTensor)
    trans_b = prop_def(IntegerAttr[I64])
    scale = opt_prop_def(ScaleAttr)
    traits = traits_def(Pure(), FIRST_OPERAND, GemmForm())
    irdl_options = (ParsePropInAttrDict(),)
    assembly_format = "$a `,` $b (`,` $bias^)? attr-dict `:` functional-type(operands, results)"

    def __init__(self, a: SSAValue, b: SSAValue, bias: SSAValue | None, trans_b: bool = False, scale=None):
        shape = gemm_output_shape(shape_of(a), shape_of(b), False, trans_b)
        super().__init__(
            operands=[a, b, bias],
            result_types=[int_tensor(32, shape)],
            properties={"trans_b": i64_attr(int(trans_b)), **_scale_props(scale)},
        )

    def verify_fixed(self) -> None:
        _check_width(self, self.a, "A", (8,))
        _check_width(self, self.b, "B", (8,))
        _check_width(self, self.result, "result", (32,))
        a = expect_rank(self, self.a, 2, "A")
        b = expect_rank(self, self.b, 2, "B")
        try:
            expected = gemm_output_shape(a, b, False, bool(self.trans_b.value.data))
            if self.bias is not None:
                _check_width(self, self.bias, "bias", (32,))
                if broadcast_shapes(shape_of(self.bias), expected) != expected:
                    raise ValueError(f"bias of shape {list(shape_of(self.bias))} does not broadcast to {list(expected)}")
        except ValueError as error:
            raise VerifyException(f"fixed.gemm: {error}") from None
        _check_reduction(self, a[1])
        expect_shape(self, expected)


# --------------------------------------------------------------------------------------
# Pooling and tables
# --------------------------------------------------------------------------------------


@dataclass(frozen=True)
class PoolForm(UnitForm):
    """Max, average and global average pooling on the POOL unit, within its limits."""

    selected_with_consumer = True

    @staticmethod
    def kind(op_name: str) -> str:
        return {"fixed.max_pool": "max", "fixed.avg_pool": "avg", "fixed.global_avg_pool": "global_avg"}[op_name]

    def capability(self, op_name: str, target: TargetDescription) -> Capability:
        kind = self.kind(op_name)
        if not target.supports_pool(kind):
            return Capability(op_name, False, f"the POOL unit has no {kind} pooling")
        p = target.pool
        limits = "" if kind == "global_avg" else f", kernel <= {p.max_kernel}, stride <= {p.max_stride}, pad <= {p.max_pad}"
        return Capability(op_name, True, f"POOL {kind}{limits}")

    def problem(self, op: Operation, target: TargetDescription) -> str | None:
        kind = self.kind(op.name)
        if kind == "global_avg":
            return legality.pool_problem(target, kind)
        assert isinstance(op, WindowPoolOp)
        if isinstance(op, MaxPoolOp) and any(d != 1 for d in op.pool_dilations()):
            return "dilated max pooling has no instruction"
        if width_of(op.result) != 8:
            return "pooling must produce int8"
        return legality.pool_problem(target, kind, ints(op.kernel_shape), ints(op.strides), ints(op.pads))

    @property
    def needs(self) -> str:  # type: ignore[override]
        return "no POOL form (a global average's int32 sum must be rescaled to int8 by its only user)"


class WindowPoolOp(FixedOp):
    input = operand_def(IntTensor)
    result = result_def(IntTensor)
    kernel_shape = prop_def(DenseArrayBase[I64])
    strides = prop_def(DenseArrayBase[I64])
    pads = prop_def(DenseArrayBase[I64])
    ceil_mode = prop_def(IntegerAttr[I64])
    scale = opt_prop_def(ScaleAttr)
    traits = traits_def(Pure(), ELEMENTWISE, PoolForm())
    irdl_options = (ParsePropInAttrDict(),)
    assembly_format = "$input attr-dict `:` type($input) `->` type($result)"

    def pool_dilations(self) -> tuple[int, int]:
        return (1, 1)

    def out_hw(self) -> tuple[int, int]:
        shape = shape_of(self.result)
        return shape[2], shape[3]

    def verify_window(self) -> tuple[int, int]:
        return verify_window(self, self.input, ints(self.kernel_shape), ints(self.strides), ints(self.pads),
                             self.pool_dilations(), bool(self.ceil_mode.value.data))


@irdl_op_definition
class MaxPoolOp(WindowPoolOp):
    """R14: maximum over each window (padding never wins); same type in and out."""

    name = "fixed.max_pool"
    dilations = prop_def(DenseArrayBase[I64])

    def __init__(self, input: SSAValue, kernel, strides, pads, dilations=(1, 1), ceil_mode=False, scale=None):
        props = {**pool_properties(kernel, strides, pads, ceil_mode), **_scale_props(scale)}
        props["dilations"] = i64_array(dilations)
        x = shape_of(input)
        hw = pool_output_hw(x[2:], kernel, strides, pads, dilations, ceil_mode)
        super().__init__(operands=[input], result_types=[TensorType(input.type.get_element_type(), (x[0], x[1], *hw))], properties=props)  # type: ignore[attr-defined]

    def pool_dilations(self) -> tuple[int, int]:
        values = ints(self.dilations)
        return (values[0], values[1]) if len(values) == 2 else (1, 1)

    def verify_fixed(self) -> None:
        _check_width(self, self.input, "input")
        if width_of(self.result) != width_of(self.input):
            raise VerifyException(f"fixed.max_pool: result is i{width_of(self.result)} but the input is i{width_of(self.input)}")
        expect_len(self, "dilations", ints(self.dilations), 2)
        expect_at_least(self, "dilations", ints(self.dilations), 1)
        self.verify_window()


@irdl_op_definition
class AvgPoolOp(WindowPoolOp):
    """R14: average pool as window sum * per-position multiplier, saturated to the result width.

    `multiplier`/`shift` hold one pair (every window has the same count) or one pair per
    output position (OH * OW, row major) carrying s_in / (count[p] * s_out), so padded edges
    with count_include_pad = 0 divide by their own count without a divider.
    """

    name = "fixed.avg_pool"
    multiplier = prop_def(DenseArrayBase[I64])
    shift = prop_def(DenseArrayBase[I64])

    def __init__(self, input: SSAValue, kernel, strides, pads, multiplier, shift, ceil_mode=False, bits: int = 8, scale=None):
        props = {**pool_properties(kernel, strides, pads, ceil_mode), **_scale_props(scale)}
        props["multiplier"] = i64_array(np.asarray(multiplier).reshape(-1))
        props["shift"] = i64_array(np.asarray(shift).reshape(-1))
        x = shape_of(input)
        hw = pool_output_hw(x[2:], kernel, strides, pads, (1, 1), ceil_mode)
        super().__init__(operands=[input], result_types=[int_tensor(bits, (x[0], x[1], *hw))], properties=props)

    def verify_fixed(self) -> None:
        _check_width(self, self.input, "input", (8,))
        _check_width(self, self.result, "result")
        oh, ow = self.verify_window()
        multipliers, shifts = ints(self.multiplier), ints(self.shift)
        if len(multipliers) != len(shifts) or len(multipliers) not in (1, oh * ow):
            raise VerifyException(
                f"fixed.avg_pool: needs one (multiplier, shift) pair or {oh * ow} (one per output position), "
                f"got {len(multipliers)} multipliers and {len(shifts)} shifts"
            )
        _check_multipliers(self, multipliers, shifts)


@irdl_op_definition
class GlobalAvgPoolOp(FixedOp):
    """R14: the int32 sum over H and W: N x C x H x W (i8) -> N x C x 1 x 1 (i32); a
    fixed.rescale by s_in / (H * W * s_out) follows."""

    name = "fixed.global_avg_pool"
    input = operand_def(IntTensor)
    result = result_def(IntTensor)
    scale = opt_prop_def(ScaleAttr)
    traits = traits_def(Pure(), ELEMENTWISE, PoolForm())
    irdl_options = (ParsePropInAttrDict(),)
    assembly_format = "$input attr-dict `:` type($input) `->` type($result)"

    def __init__(self, input: SSAValue, scale=None):
        x = shape_of(input)
        shape = (*x[:2], *([1] * (len(x) - 2)))
        super().__init__(operands=[input], result_types=[int_tensor(32, shape)], properties=_scale_props(scale))

    def verify_fixed(self) -> None:
        _check_width(self, self.input, "input", (8,))
        _check_width(self, self.result, "result", (32,))
        x = shape_of(self.input)
        if len(x) < 3:
            raise VerifyException(f"fixed.global_avg_pool: input must have rank >= 3, got shape {list(x)}")
        expect_shape(self, (*x[:2], *([1] * (len(x) - 2))))


@dataclass(frozen=True)
class TableForm(UnitForm):
    """A 256-entry lookup of int8 codes on the TABLE unit (alone, or as a unit's epilogue)."""

    needs = "the target has neither a clamp nor a table unit for it"
    selected_with_consumer = True

    def capability(self, op_name: str, target: TargetDescription) -> Capability:
        return Capability(op_name, target.has_table, "TABLE unit, 256 entries" if target.has_table else "no table unit")

    def problem(self, op: Operation, target: TargetDescription) -> str | None:
        if width_of(op.operands[0]) != 8:
            return "only int8 clamps and tables have an instruction"
        return legality.unit_problem(target, "table")


@irdl_op_definition
class TableOp(FixedOp):
    """R15: i8 -> i8 lookup, result = table[q + 128]; 256 entries in [-127, 127]."""

    name = "fixed.table"
    input = operand_def(IntTensor)
    result = result_def(IntTensor)
    table = prop_def(DenseArrayBase)
    scale = opt_prop_def(ScaleAttr)
    traits = traits_def(Pure(), ELEMENTWISE, TableForm())
    irdl_options = (ParsePropInAttrDict(),)
    assembly_format = "$input attr-dict `:` type($input) `->` type($result)"

    def __init__(self, input: SSAValue, table: Sequence[int] | np.ndarray, scale=None):
        props = {"table": DenseArrayBase.from_list(i8, [int(v) for v in np.asarray(table).reshape(-1)]), **_scale_props(scale)}
        super().__init__(operands=[input], result_types=[int_tensor(8, shape_of(input))], properties=props)

    def entries(self) -> np.ndarray:
        return np.asarray(self.table.get_values(), dtype=np.int64)

    def verify_fixed(self) -> None:
        _check_width(self, self.input, "input", (8,))
        _check_width(self, self.result, "result", (8,))
        expect_shape(self, shape_of(self.input))
        element = self.table.elt_type
        if not (isinstance(element, IntegerType) and element.width.data == 8):
            raise VerifyException(f"fixed.table: the table must be an array<i8: ...>, got {element}")
        values = self.entries()
        if values.size != fixed_point.TABLE_SIZE:
            raise VerifyException(f"fixed.table: the table needs {fixed_point.TABLE_SIZE} entries, got {values.size}")
        if values.min() < -127:
            raise VerifyException("fixed.table: table entries must be in [-127, 127] (R2)")


# --------------------------------------------------------------------------------------
# Data movement (integer tensors, one scale)
# --------------------------------------------------------------------------------------


def _same_element(op: Operation, a: SSAValue, b: SSAValue, what: str) -> None:
    if width_of(a) != width_of(b):
        raise VerifyException(f"{op.name}: {what} is i{width_of(b)} but the input is i{width_of(a)}")


@dataclass(frozen=True)
class MoveForm(UnitForm):
    """Data movement the DMA does (a view of the row-major bytes, a layout change, a
    concatenation): `how` it is done."""

    how: str

    def capability(self, op_name: str, target: TargetDescription) -> Capability:
        return Capability(op_name, True, self.how)


@dataclass(frozen=True)
class TransposeForm(MoveForm):
    """A transpose the DMA does as a view of its input's NCHW or NHWC bytes (one relayout at most)."""

    def problem(self, op: Operation, target: TargetDescription) -> str | None:
        return legality.transpose_problem(target, shape_of(op.operands[0]), ints(op.perm))  # type: ignore[attr-defined]


@dataclass(frozen=True)
class ConcatForm(MoveForm):
    """A concatenation the DMA copies into place: along the channels of NCHW maps."""

    def problem(self, op: Operation, target: TargetDescription) -> str | None:
        return legality.concat_problem(shape_of(op.results[0]), op.axis.value.data)  # type: ignore[attr-defined]


def memory_problem(op: Operation) -> str | None:
    """Why the accelerator cannot hold a tensor a fixed op reads or writes as a map
    (legality.memory_shape_problem: a map of batch above 1, empty, data-dependent), or None.
    Constants and convolution kernels aside: they have layouts of their own (OHWI, DW), and
    seed 002's activation read as depthwise kernels is one."""

    def kernels_only(value: SSAValue) -> bool:
        uses = list(value.uses)
        return bool(uses) and all(isinstance(u.operation, Conv2dOp) and u.index == 1 for u in uses)

    operands = [v for i, v in enumerate(op.operands) if not (isinstance(op, Conv2dOp) and i == 1)]
    for value in (*operands, *(r for r in op.results if not kernels_only(r))):
        if isinstance(value.type, TensorType) and not isinstance(value.owner, ConstantOp):
            problem = legality.memory_shape_problem(value.type.get_shape())
            if problem:
                return problem
    return None


def unheld(ops) -> set[Operation]:
    """The fixed ops among `ops` with a tensor the accelerator cannot hold (memory_problem): no
    unit takes them (unit selection places them on the host) and legalize leaves them as they are."""
    return {op for op in ops if op.dialect_name() == "fixed" and memory_problem(op)}


@irdl_op_definition
class ReshapeOp(FixedOp):
    """R16: same elements, new static shape (the result type)."""

    name = "fixed.reshape"
    input = operand_def(IntTensor)
    result = result_def(IntTensor)
    scale = opt_prop_def(ScaleAttr)
    traits = traits_def(Pure(), ReshapeSamples(), MoveForm("a view of row-major bytes (a DMA relayout at most)"))
    irdl_options = (ParsePropInAttrDict(),)
    assembly_format = "$input attr-dict `:` type($input) `->` type($result)"

    def __init__(self, input: SSAValue, shape: Sequence[int], scale=None):
        super().__init__(
            operands=[input], result_types=[int_tensor(width_of(input), shape)], properties=_scale_props(scale)
        )

    def verify_fixed(self) -> None:
        _check_width(self, self.input, "input")
        _same_element(self, self.input, self.result, "result")
        before, after = shape_of(self.input), shape_of(self.result)
        if math.prod(before) != math.prod(after):
            raise VerifyException(
                f"fixed.reshape: cannot reshape {list(before)} ({math.prod(before)} elements) "
                f"to {list(after)} ({math.prod(after)} elements)"
            )


@irdl_op_definition
class FlattenOp(FixedOp):
    """R16: collapse dimensions [0, axis) and [axis, rank) into a 2-D tensor."""

    name = "fixed.flatten"
    input = operand_def(IntTensor)
    result = result_def(IntTensor)
    axis = prop_def(IntegerAttr[I64])
    scale = opt_prop_def(ScaleAttr)
    traits = traits_def(Pure(), FlattenSamples(), MoveForm("a view of row-major bytes (a DMA relayout at most)"))
    irdl_options = (ParsePropInAttrDict(),)
    assembly_format = "$input attr-dict `:` type($input) `->` type($result)"

    def __init__(self, input: SSAValue, axis: int = 1, scale=None):
        shape = shape_of(input)
        axis = axis + len(shape) if axis < 0 else axis
        super().__init__(
            operands=[input],
            result_types=[int_tensor(width_of(input), flatten_output_shape(shape, axis))],
            properties={"axis": i64_attr(axis), **_scale_props(scale)},
        )

    def verify_fixed(self) -> None:
        _check_width(self, self.input, "input")
        _same_element(self, self.input, self.result, "result")
        shape = shape_of(self.input)
        axis = normalize_axis(self, self.axis.value.data, len(shape), allow_end=True)
        expect_shape(self, flatten_output_shape(shape, axis))


@irdl_op_definition
class TransposeOp(FixedOp):
    """R16: result dimension i is input dimension perm[i]."""

    name = "fixed.transpose"
    input = operand_def(IntTensor)
    result = result_def(IntTensor)
    perm = prop_def(DenseArrayBase[I64])
    scale = opt_prop_def(ScaleAttr)
    traits = traits_def(Pure(), TransposeSamples(), TransposeForm("NCHW <-> NHWC views, swaps of two blocks of axes (ahead of a kept one) by DMA"))
    irdl_options = (ParsePropInAttrDict(),)
    assembly_format = "$input attr-dict `:` type($input) `->` type($result)"

    def __init__(self, input: SSAValue, perm: Sequence[int], scale=None):
        shape = shape_of(input)
        super().__init__(
            operands=[input],
            result_types=[int_tensor(width_of(input), [shape[p] for p in perm])],
            properties={"perm": i64_array(perm), **_scale_props(scale)},
        )

    def verify_fixed(self) -> None:
        _check_width(self, self.input, "input")
        _same_element(self, self.input, self.result, "result")
        shape, perm = shape_of(self.input), ints(self.perm)
        if sorted(perm) != list(range(len(shape))):
            raise VerifyException(f"fixed.transpose: perm {list(perm)} is not a permutation of 0..{len(shape) - 1}")
        expect_shape(self, [shape[p] for p in perm])


@irdl_op_definition
class ConcatOp(FixedOp):
    """R16: join tensors of one element type (and one scale: the lowering rescales first) along `axis`."""

    name = "fixed.concat"
    inputs = var_operand_def(IntTensor)
    result = result_def(IntTensor)
    axis = prop_def(IntegerAttr[I64])
    scale = opt_prop_def(ScaleAttr)
    traits = traits_def(Pure(), SamplesUnlessAxisZero("axis", every_operand=True), ConcatForm("channel concatenation by DMA"))
    irdl_options = (ParsePropInAttrDict(),)
    assembly_format = "$inputs attr-dict `:` functional-type(operands, results)"

    def __init__(self, inputs: Sequence[SSAValue], axis: int, scale=None):
        shapes = [shape_of(v) for v in inputs]
        axis = axis + len(shapes[0]) if axis < 0 else axis
        out = list(shapes[0])
        out[axis] = sum(s[axis] for s in shapes)
        super().__init__(
            operands=[list(inputs)],
            result_types=[int_tensor(width_of(inputs[0]), out)],
            properties={"axis": i64_attr(axis), **_scale_props(scale)},
        )

    def verify_fixed(self) -> None:
        if not self.inputs:
            raise VerifyException("fixed.concat: needs at least one input")
        for index, value in enumerate(self.inputs):
            _check_width(self, value, f"input {index}")
            _same_element(self, self.inputs[0], value, f"input {index}")
        _same_element(self, self.inputs[0], self.result, "result")
        shapes = [shape_of(v) for v in self.inputs]
        rank = len(shapes[0])
        axis = normalize_axis(self, self.axis.value.data, rank)
        for shape in shapes[1:]:
            if len(shape) != rank or any(a != b for i, (a, b) in enumerate(zip(shape, shapes[0])) if i != axis):
                raise VerifyException(f"fixed.concat: input shapes {[list(s) for s in shapes]} differ outside axis {axis}")
        out = list(shapes[0])
        out[axis] = sum(s[axis] for s in shapes)
        expect_shape(self, out)


def _check_sources(op: Operation, name: str, values: Sequence[int], count: int, size: int) -> None:
    if len(values) != count:
        raise VerifyException(f"{op.name}: '{name}' needs {count} entries, got {len(values)}")
    if any(not 0 <= v < size for v in values):
        raise VerifyException(f"{op.name}: '{name}' holds positions outside [0, {size})")


def _resize_shapes(op: Operation) -> tuple[tuple[int, ...], tuple[int, ...]]:
    x, y = expect_rank(op, op.operands[0], 4, "input"), shape_of(op.results[0])
    if len(y) != 4 or y[:2] != x[:2]:
        raise VerifyException(f"{op.name}: the result must be N x C x OH x OW of the input's N and C, got {list(y)}")
    return x, y


def _not_phased(what: str, axes) -> str | None:
    for name, axis in zip(("rows", "columns"), axes):
        if axis is None:
            return f"{what}: its output {name} read pixels or weights that vary with the position (as align_corners does); no unit computes them"
    return None


@dataclass(frozen=True)
class ResizeForm(UnitForm):
    """A nearest resize as DMA moves: every output phase a (clamped) shifted copy of the input
    (an edge pad and strided stores); align_corners' position-dependent maps are not."""

    needs = "no DMA form"
    selected_with_consumer = True

    def capability(self, op_name: str, target: TargetDescription) -> Capability:
        return Capability(op_name, True, "nearest: the input (or its edge pad) stored once per output phase by strided "
                          "DMA stores; not where the pixel read varies with the position inside a phase (align_corners "
                          "beyond x2)")

    def problem(self, op: Operation, target: TargetDescription) -> str | None:
        assert isinstance(op, ResizeOp)
        if width_of(op.input) != 8:
            return "only int8 maps are moved by the DMA"
        axes = op.phase_axes()
        problem = _not_phased("nearest resize", axes)
        if problem:
            return problem
        n, c, oh, ow = shape_of(op.result)
        return legality.interleave_problem(target, c, (oh, ow), (axes[0].factor, axes[1].factor))


@irdl_op_definition
class ResizeOp(FixedOp):
    """R16: a nearest resize moves codes: result[n, c, i, j] = input[n, c, rows[i], cols[j]]
    (the source row of every output row and the source column of every output column)."""

    name = "fixed.resize"
    input = operand_def(IntTensor)
    result = result_def(IntTensor)
    rows = prop_def(DenseArrayBase[I64])
    cols = prop_def(DenseArrayBase[I64])
    scale = opt_prop_def(ScaleAttr)
    traits = traits_def(Pure(), ELEMENTWISE, ResizeForm())
    irdl_options = (ParsePropInAttrDict(),)
    assembly_format = "$input attr-dict `:` type($input) `->` type($result)"

    def __init__(self, input: SSAValue, rows: Sequence[int], cols: Sequence[int], scale=None):
        n, c = shape_of(input)[:2]
        super().__init__(
            operands=[input],
            result_types=[int_tensor(width_of(input), (n, c, len(rows), len(cols)))],
            properties={"rows": i64_array(rows), "cols": i64_array(cols), **_scale_props(scale)},
        )

    def phase_axes(self):
        """The phases (target/phases.py) of its rows and columns; an axis without phases is None."""
        h, w = shape_of(self.input)[2:]
        return resize_axis(ints(self.rows), None, h), resize_axis(ints(self.cols), None, w)

    def verify_fixed(self) -> None:
        _check_width(self, self.input, "input")
        _same_element(self, self.input, self.result, "result")
        x, y = _resize_shapes(self)
        _check_sources(self, "rows", ints(self.rows), y[2], x[2])
        _check_sources(self, "cols", ints(self.cols), y[3], x[3])


@dataclass(frozen=True)
class ResizeLinearForm(UnitForm):
    """4 depthwise 2x2 convolutions of the edge-padded input, one per output phase, interleaved
    by the DMA: x2 in both axes with the same integer weights in every phase (half_pixel: 1, 3,
    3, 9); align_corners' weights vary with the position."""

    needs = "its int32 result must be rescaled to int8 by its only user (the unit writes int8)"
    selected_with_consumer = True

    def capability(self, op_name: str, target: TargetDescription) -> Capability:
        if not target.conv.depthwise:
            return Capability(op_name, False, "no depthwise convolution for its phases")
        return Capability(op_name, True, "x2 with the same weights in every phase (half_pixel): an edge pad, "
                          "4 depthwise 2x2 CONVs, a DMA interleave; not align_corners (weights vary with the position)")

    def problem(self, op: Operation, target: TargetDescription) -> str | None:
        assert isinstance(op, ResizeLinearOp)
        axes = op.phase_axes()
        problem = _not_phased("linear resize", axes)
        if problem:
            return problem
        factors = (axes[0].factor, axes[1].factor)
        if factors != (2, 2):
            return f"linear resize by {factors[0]}x{factors[1]}: the phase pattern is x2 in both axes"
        largest = max(a * b for p in axes[0].phases for q in axes[1].phases for a in p.weights for b in q.weights)
        if largest > 127:
            return f"linear resize kernel weight {largest} does not fit int8"
        n, c, oh, ow = shape_of(op.result)
        return (legality.conv_problem(target, kernel=(2, 2), strides=(1, 1), dilations=(1, 1), pads=(0, 0, 0, 0),
                                      in_channels=1, depthwise=True)
                or legality.interleave_problem(target, c, (oh, ow), factors))


@irdl_op_definition
class ResizeLinearOp(FixedOp):
    """R17: a linear resize's exact int32 sums: every output row reads two input rows
    (`rows[2y]`, `rows[2y + 1]`) with integer weights (`row_weights`, the same positions),
    every output column two columns likewise; the weights of each axis sum to its
    denominator D. A fixed.rescale by s_in / (Dy * Dx * s_out) follows."""

    name = "fixed.resize_linear"
    input = operand_def(IntTensor)
    result = result_def(IntTensor)
    rows = prop_def(DenseArrayBase[I64])
    row_weights = prop_def(DenseArrayBase[I64])
    cols = prop_def(DenseArrayBase[I64])
    col_weights = prop_def(DenseArrayBase[I64])
    scale = opt_prop_def(ScaleAttr)
    traits = traits_def(Pure(), ELEMENTWISE, ResizeLinearForm())
    irdl_options = (ParsePropInAttrDict(),)
    assembly_format = "$input attr-dict `:` type($input) `->` type($result)"

    def __init__(self, input: SSAValue, rows, row_weights, cols, col_weights, scale=None):
        n, c = shape_of(input)[:2]
        flat = lambda values: i64_array(np.asarray(values).reshape(-1))  # noqa: E731
        super().__init__(
            operands=[input],
            result_types=[int_tensor(32, (n, c, np.size(rows) // 2, np.size(cols) // 2))],
            properties={"rows": flat(rows), "row_weights": flat(row_weights), "cols": flat(cols),
                        "col_weights": flat(col_weights), **_scale_props(scale)},
        )

    def taps(self) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
        """(rows, row_weights, cols, col_weights), each as an OH x 2 or OW x 2 array."""
        return tuple(np.asarray(ints(a), dtype=np.int64).reshape(-1, 2)  # type: ignore[return-value]
                     for a in (self.rows, self.row_weights, self.cols, self.col_weights))

    def phase_axes(self):
        """The phases (target/phases.py) of its rows and columns; an axis without phases is None."""
        h, w = shape_of(self.input)[2:]
        rows, row_weights, cols, col_weights = self.taps()
        return resize_axis(rows, row_weights, h), resize_axis(cols, col_weights, w)

    def denominators(self) -> tuple[int, int]:
        _, row_weights, _, col_weights = self.taps()
        return int(row_weights[0].sum()), int(col_weights[0].sum())

    def verify_fixed(self) -> None:
        _check_width(self, self.input, "input", (8,))
        _check_width(self, self.result, "result", (32,))
        x, y = _resize_shapes(self)
        denominators = []
        for axis, (sources, weights) in enumerate(((self.rows, self.row_weights), (self.cols, self.col_weights))):
            name = ("rows", "cols")[axis]
            _check_sources(self, name, ints(sources), 2 * y[2 + axis], x[2 + axis])
            pairs = np.asarray(ints(weights), dtype=np.int64)
            if pairs.size != 2 * y[2 + axis] or np.any(pairs < 0):
                raise VerifyException(f"{self.name}: '{name[:-1]}_weights' needs {2 * y[2 + axis]} weights >= 0 (R17)")
            sums = pairs.reshape(-1, 2).sum(axis=1)
            if sums.size and (sums[0] < 1 or np.any(sums != sums[0])):
                raise VerifyException(f"{self.name}: every pair of '{name[:-1]}_weights' must sum to one denominator >= 1 (R17)")
            denominators.append(int(sums[0]) if sums.size else 1)
        if denominators[0] * denominators[1] > fixed_point.MAX_RESIZE_DENOMINATOR:
            raise VerifyException(
                f"{self.name}: denominators {denominators[0]} x {denominators[1]} exceed "
                f"{fixed_point.MAX_RESIZE_DENOMINATOR}; the int32 sum could overflow (R17)"
            )


FIXED = Dialect(
    "fixed",
    [
        ConstantOp,
        QuantizeOp,
        DequantizeOp,
        RescaleOp,
        ShiftOp,
        ClampOp,
        AddOp,
        SubOp,
        MulOp,
        Conv2dOp,
        ConvTranspose2dOp,
        GemmOp,
        MaxPoolOp,
        AvgPoolOp,
        GlobalAvgPoolOp,
        TableOp,
        ReshapeOp,
        FlattenOp,
        TransposeOp,
        ConcatOp,
        ResizeOp,
        ResizeLinearOp,
    ],
)


def op_capabilities(target: TargetDescription) -> dict[str, Capability]:
    """Each fixed op's line of the supported-operators report on `target` (its UnitForm)."""
    capabilities = {}
    for op_type in FIXED.operations:
        form = op_type.get_trait(UnitForm)
        if form is not None:
            capabilities[op_type.name] = form.capability(op_type.name, target)
    return capabilities
