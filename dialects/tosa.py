"""TOSA 1.0, the subset the `fixed` level exports to (`convert-fixed-to-tosa`, docs/tosa.md).

xDSL ships part of the TOSA dialect (`xdsl.dialects.tosa`); its ops that match TOSA 1.0 for
integer tensors are reused as they are (const, clamp, rescale, add, sub, mul, max_pool2d,
concat, reduce_sum, reduce_max, reciprocal). The ops it lacks, or types too narrowly for int8 with int32
accumulation (matmul), are defined here with the operand order and property names of
upstream MLIR's TOSA 1.0 ops. None of them has a custom syntax: the export is printed in
MLIR's generic form (`"tosa.conv2d"(...) <{...}> : (...) -> ...`), which upstream parsers
accept whatever their version's custom forms look like. Zero points, shifts, shapes and
table contents are operands (`tosa.const`, `tosa.const_shape`), as TOSA 1.0 has them.

The dialect is loaded into xnpu's context (so exported modules parse back) but not into the
xdsl-opt universe, where xDSL's own `tosa` already has the name.
"""

from __future__ import annotations

from collections.abc import Sequence
from enum import StrEnum

from xdsl.dialects import tosa as xdsl_tosa
from xdsl.dialects.builtin import (
    I32,
    I64,
    BoolAttr,
    DenseArrayBase,
    DenseIntOrFPElementsAttr,
    IndexType,
    IntAttr,
    IntegerAttr,
    TensorType,
)
from xdsl.dialects.utils import EnumAttribute
from xdsl.ir import Dialect, ParametrizedAttribute, TypeAttribute
from xdsl.irdl import (
    IRDLOperation,
    irdl_attr_definition,
    irdl_op_definition,
    operand_def,
    opt_prop_def,
    prop_def,
    result_def,
    traits_def,
)
from xdsl.parser import AttrParser
from xdsl.printer import Printer
from xdsl.traits import ConstantLike, Pure
from xdsl.utils.exceptions import VerifyException

from xnpu.dialects.shapes import shape_of

# Reused from xDSL: their TOSA 1.0 operands and properties are what upstream MLIR expects.
ConstOp = xdsl_tosa.ConstOp
ClampOp = xdsl_tosa.ClampOp
RescaleOp = xdsl_tosa.RescaleOp
AddOp = xdsl_tosa.AddOp
SubOp = xdsl_tosa.SubOp
MulOp = xdsl_tosa.MulOp
MaxPool2DOp = xdsl_tosa.MaxPool2DOp
ConcatOp = xdsl_tosa.ConcatOp
ReduceSumOp = xdsl_tosa.ReduceSumOp
ReduceMaxOp = xdsl_tosa.ReduceMaxOp
ReciprocalOp = xdsl_tosa.ReciprocalOp
NanModeAttr = xdsl_tosa.NanModeAttr
NanMode = xdsl_tosa.NanMode
RoundingModeAttr = xdsl_tosa.RoundingModeAttr
RoundingMode = xdsl_tosa.RoundingMode


@irdl_attr_definition
class ShapeType(ParametrizedAttribute, TypeAttribute):
    """`!tosa.shape<rank>`: the type of a shape operand (reshape's new shape, slice's start)."""

    name = "tosa.shape"
    rank: IntAttr

    def __init__(self, rank: int):
        super().__init__(IntAttr(rank))

    def print_parameters(self, printer: Printer) -> None:
        printer.print_string(f"<{self.rank.data}>")

    @classmethod
    def parse_parameters(cls, parser: AttrParser) -> list:
        with parser.in_angle_brackets():
            return [IntAttr(parser.parse_integer(allow_negative=False))]


@irdl_op_definition
class ConstShapeOp(IRDLOperation):
    """`tosa.const_shape`: a constant shape, `values` a dense tensor of index."""

    name = "tosa.const_shape"
    values = prop_def(DenseIntOrFPElementsAttr)
    output = result_def(ShapeType)
    traits = traits_def(ConstantLike(), Pure())

    def __init__(self, values: Sequence[int]):
        values = [int(v) for v in values]
        attr = DenseIntOrFPElementsAttr.from_list(TensorType(IndexType(), [len(values)]), values)
        super().__init__(properties={"values": attr}, result_types=[ShapeType(len(values))])

    def verify_(self) -> None:
        if not isinstance(self.values.get_element_type(), IndexType):
            raise VerifyException("tosa.const_shape: values must be a tensor of index")
        if len(self.values.get_shape()) != 1 or self.values.get_shape()[0] != self.output.type.rank.data:
            raise VerifyException(f"tosa.const_shape: values do not match {self.output.type}")


class WeightedOp(IRDLOperation):
    """The convolutions' operands: input, weight, bias, input_zp, weight_zp; NHWC."""

    input = operand_def(TensorType)
    weight = operand_def(TensorType)
    bias = operand_def(TensorType)
    input_zp = operand_def(TensorType)
    weight_zp = operand_def(TensorType)
    output = result_def(TensorType)
    stride = prop_def(DenseArrayBase[I64])
    acc_type = prop_def(TypeAttribute)
    local_bound = opt_prop_def(BoolAttr)
    traits = traits_def(Pure())


class ConvolutionOp(WeightedOp):
    """conv2d / depthwise_conv2d: a window per output pixel, with padding and dilation."""

    pad = prop_def(DenseArrayBase[I64])  # top, bottom, left, right
    dilation = prop_def(DenseArrayBase[I64])

    def verify_(self) -> None:
        for operand in (self.input, self.output):
            if len(shape_of(operand)) != 4:
                raise VerifyException(f"{self.name}: input and output must be rank 4 (NHWC)")
        if len(self.pad.get_values()) != 4 or min(self.pad.get_values()) < 0:
            raise VerifyException(f"{self.name}: pad must be four non-negative values")


@irdl_op_definition
class Conv2DOp(ConvolutionOp):
    """`tosa.conv2d`: NHWC input, OHWI weight, bias of O."""

    name = "tosa.conv2d"


@irdl_op_definition
class DepthwiseConv2DOp(ConvolutionOp):
    """`tosa.depthwise_conv2d`: NHWC input, weight KH x KW x C x M, bias of C * M."""

    name = "tosa.depthwise_conv2d"


@irdl_op_definition
class TransposeConv2DOp(WeightedOp):
    """`tosa.transpose_conv2d`: NHWC input, OHWI weight, bias of O; every input pixel (iy, ix)
    adds input * weight[o, ky, kx, i] to output (iy * stride + out_pad_top + ky, ...)."""

    name = "tosa.transpose_conv2d"
    out_pad = prop_def(DenseArrayBase[I64])  # top, bottom, left, right

    def verify_(self) -> None:
        x, w, y = shape_of(self.input), shape_of(self.weight), shape_of(self.output)
        if len(x) != 4 or len(w) != 4 or len(y) != 4:
            raise VerifyException("tosa.transpose_conv2d: input, weight and output must be rank 4 (NHWC, OHWI)")
        pad, stride = self.out_pad.get_values(), self.stride.get_values()
        expected = ((x[1] - 1) * stride[0] + pad[0] + pad[1] + w[1], (x[2] - 1) * stride[1] + pad[2] + pad[3] + w[2])
        if y[1:3] != expected or y[3] != w[0]:
            raise VerifyException(f"tosa.transpose_conv2d: output {list(y)} does not match input {list(x)}, "
                                  f"weight {list(w)}, out_pad {list(pad)}, stride {list(stride)}")


class ResizeMode(StrEnum):
    NEAREST_NEIGHBOR = "NEAREST_NEIGHBOR"
    BILINEAR = "BILINEAR"


@irdl_attr_definition
class ResizeModeAttr(EnumAttribute[ResizeMode]):
    """`#tosa.resize_mode<BILINEAR>` (written like xDSL's `#tosa.nan_mode<...>`)."""

    name = "tosa.resize_mode"

    def print_parameter(self, printer: Printer) -> None:
        with printer.in_angle_brackets():
            printer.print_string(self.data)

    @classmethod
    def parse_parameter(cls, parser: AttrParser) -> ResizeMode:
        with parser.in_angle_brackets():
            return parser.parse_str_enum(ResizeMode)


@irdl_op_definition
class ResizeOp(IRDLOperation):
    """`tosa.resize`, NHWC: output row oy reads y = oy * scale_y_d + offset_y in units of
    1 / scale_y_n (scale = [y_n, y_d, x_n, x_d]); integer BILINEAR sums the two rows and two
    columns with weights (n - r, r) unscaled (int8 -> int32), NEAREST takes the row
    floor(y / n) + (2r >= n)."""

    name = "tosa.resize"
    input = operand_def(TensorType)
    scale = operand_def(ShapeType)
    offset = operand_def(ShapeType)
    border = operand_def(ShapeType)
    output = result_def(TensorType)
    mode = prop_def(ResizeModeAttr)
    traits = traits_def(Pure())


@irdl_op_definition
class MatMulOp(IRDLOperation):
    """`tosa.matmul`: N x H x C times N x C x W; int8 operands accumulate in int32."""

    name = "tosa.matmul"
    a = operand_def(TensorType)
    b = operand_def(TensorType)
    a_zp = operand_def(TensorType)
    b_zp = operand_def(TensorType)
    output = result_def(TensorType)
    traits = traits_def(Pure())

    def verify_(self) -> None:
        a, b, out = shape_of(self.a), shape_of(self.b), shape_of(self.output)
        if len(a) != 3 or len(b) != 3 or a[2] != b[1] or out != (a[0], a[1], b[2]):
            raise VerifyException(f"tosa.matmul: shapes {list(a)} x {list(b)} -> {list(out)} do not match")


@irdl_op_definition
class TransposeOp(IRDLOperation):
    """`tosa.transpose`: result dimension i is input dimension perms[i]."""

    name = "tosa.transpose"
    input1 = operand_def(TensorType)
    output = result_def(TensorType)
    perms = prop_def(DenseArrayBase[I32])
    traits = traits_def(Pure())

    def verify_(self) -> None:
        perms, shape = self.perms.get_values(), shape_of(self.input1)
        if sorted(perms) != list(range(len(shape))) or shape_of(self.output) != tuple(shape[p] for p in perms):
            raise VerifyException(f"tosa.transpose: perms {list(perms)} do not map {list(shape)} to {list(shape_of(self.output))}")


@irdl_op_definition
class ReshapeOp(IRDLOperation):
    """`tosa.reshape`: the new shape is a `!tosa.shape` operand."""

    name = "tosa.reshape"
    input1 = operand_def(TensorType)
    shape = operand_def(ShapeType)
    output = result_def(TensorType)
    traits = traits_def(Pure())


@irdl_op_definition
class SliceOp(IRDLOperation):
    """`tosa.slice`: `size` elements from `start` along every dimension."""

    name = "tosa.slice"
    input1 = operand_def(TensorType)
    start = operand_def(ShapeType)
    size = operand_def(ShapeType)
    output = result_def(TensorType)
    traits = traits_def(Pure())


@irdl_op_definition
class SelectOp(IRDLOperation):
    """`tosa.select`: input2 where the i1 predicate input1 holds, else input3 (broadcasting)."""

    name = "tosa.select"
    input1 = operand_def(TensorType)
    input2 = operand_def(TensorType)
    input3 = operand_def(TensorType)
    output = result_def(TensorType)
    traits = traits_def(Pure())


class UnaryOp(IRDLOperation):
    input1 = operand_def(TensorType)
    output = result_def(TensorType)
    traits = traits_def(Pure())


@irdl_op_definition
class CastOp(UnaryOp):
    """`tosa.cast`: element type conversion (float -> int rounds to nearest even; int -> int
    keeps the value when it fits)."""

    name = "tosa.cast"


@irdl_op_definition
class AbsOp(UnaryOp):
    name = "tosa.abs"


@irdl_op_definition
class FloorOp(UnaryOp):
    name = "tosa.floor"


@irdl_op_definition
class ExpOp(UnaryOp):
    name = "tosa.exp"


@irdl_op_definition
class SigmoidOp(UnaryOp):
    name = "tosa.sigmoid"


@irdl_op_definition
class TanhOp(UnaryOp):
    name = "tosa.tanh"


class BinaryOp(IRDLOperation):
    input1 = operand_def(TensorType)
    input2 = operand_def(TensorType)
    output = result_def(TensorType)
    traits = traits_def(Pure())


@irdl_op_definition
class TableOp(BinaryOp):
    """`tosa.table`: int8 input1, `table[x + 128]` out (input2: a 256-entry int8 table)."""

    name = "tosa.table"


@irdl_op_definition
class GatherOp(BinaryOp):
    """`tosa.gather`: values (input1) N x K x C, int32 indices (input2) N x W -> N x W x C."""

    name = "tosa.gather"


@irdl_op_definition
class GreaterOp(BinaryOp):
    """`tosa.greater`: input1 > input2, an i1 tensor."""

    name = "tosa.greater"


@irdl_op_definition
class GreaterEqualOp(BinaryOp):
    """`tosa.greater_equal`: input1 >= input2, an i1 tensor."""

    name = "tosa.greater_equal"


@irdl_op_definition
class MaximumOp(BinaryOp):
    """`tosa.maximum` (int32 or float; TOSA's clamp takes int8, int16 and float only)."""

    name = "tosa.maximum"
    nan_mode = opt_prop_def(NanModeAttr)


@irdl_op_definition
class MinimumOp(BinaryOp):
    name = "tosa.minimum"
    nan_mode = opt_prop_def(NanModeAttr)


@irdl_op_definition
class ArithmeticRightShiftOp(BinaryOp):
    """`tosa.arithmetic_right_shift`: input1 >> input2; with `round`, adds the last bit shifted out."""

    name = "tosa.arithmetic_right_shift"
    round = prop_def(BoolAttr)


@irdl_op_definition
class LogicalLeftShiftOp(BinaryOp):
    name = "tosa.logical_left_shift"


def bool_attr(value: bool) -> BoolAttr:
    return IntegerAttr.from_bool(value)


TOSA = Dialect(
    "tosa",
    [
        ConstOp,
        ConstShapeOp,
        ClampOp,
        RescaleOp,
        AddOp,
        SubOp,
        MulOp,
        Conv2DOp,
        DepthwiseConv2DOp,
        TransposeConv2DOp,
        ResizeOp,
        MatMulOp,
        MaxPool2DOp,
        ConcatOp,
        ReduceSumOp,
        ReduceMaxOp,
        ReciprocalOp,
        TransposeOp,
        ReshapeOp,
        SliceOp,
        TableOp,
        GatherOp,
        SelectOp,
        CastOp,
        AbsOp,
        FloorOp,
        ExpOp,
        SigmoidOp,
        TanhOp,
        GreaterOp,
        GreaterEqualOp,
        MaximumOp,
        MinimumOp,
        ArithmeticRightShiftOp,
        LogicalLeftShiftOp,
    ],
    [ShapeType, NanModeAttr, RoundingModeAttr, ResizeModeAttr],
)
