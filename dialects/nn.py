"""The `nn` dialect: the float graph, in ONNX layout (NCHW), with static shapes.

One op per ONNX operator family. Attributes mirror ONNX's (pads are
`[top, left, bottom, right]`, as ONNX's `[x1_begin, x2_begin, x1_end, x2_end]`), so an
imported model reads like its ONNX graph. Every op checks its shapes in `verify_` by
computing the expected result shape with the same shape functions the importer and the
interpreter rely on; an op whose result type disagrees is rejected with a message that
names both shapes.

Weights are `nn.constant` ops holding a builtin dense elements attribute; large ones are
printed as a hex blob (`dense<"0x...">`), which scales to ResNet-sized models and, unlike
`dense_resource`, keeps the data inside the op, not in a process-wide blob store.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

from xdsl.dialects.builtin import (
    I64,
    BytesAttr,
    DenseArrayBase,
    DenseIntOrFPElementsAttr,
    Float32Type,
    FloatAttr,
    IntegerAttr,
    StringAttr,
    TensorType,
    f32,
)
from xdsl.ir import Attribute, Data, Dialect, ParametrizedAttribute, SSAValue, TypeAttribute
from xdsl.irdl import (
    AttrSizedOperandSegments,
    IRDLOperation,
    ParsePropInAttrDict,
    irdl_attr_definition,
    irdl_op_definition,
    operand_def,
    opt_operand_def,
    opt_prop_def,
    prop_def,
    result_def,
    traits_def,
    var_operand_def,
    var_result_def,
)
from xdsl.parser import AttrParser, Parser
from xdsl.printer import Printer
from xdsl.traits import Commutative, ConstantLike, Pure
from xdsl.utils.exceptions import VerifyException

from xnpu.core.lazy import LazyModule
from xnpu.core.lazy import numpy as np
from xnpu.dialects.shapes import (  # noqa: F401  (re-exported: nn.shape_of, nn.ints, ... are public)
    broadcast_shapes,
    broadcasts_to,
    conv_output_shape,
    conv_properties,
    conv_transpose_output_shape,
    expect_at_least,
    expect_len,
    expect_rank,
    expect_shape,
    f32_attr,
    flatten_output_shape,
    gemm_output_shape,
    i64_array,
    i64_attr,
    ints,
    matmul_output_shape,
    normalize_axis,
    pool_output_hw,
    pool_properties,
    resize_factors,
    shape_of,
    verify_conv_geometry,
    verify_conv_transpose_geometry,
    verify_window,
)
from xnpu.dialects.traits import (
    ClampsCodes,
    ElementwiseSamples,
    FirstOperandSamples,
    FlattenSamples,
    KeepsRange,
    Rescales,
    ReshapeSamples,
    SampleBySample,
    SamplesUnlessAxisZero,
    TransposeSamples,
)

F32Tensor = TensorType[Float32Type]

# the float semantics; imported at first use, so that parsing and printing IR needs no numpy
float_ops = LazyModule("xnpu.semantics.float_ops")

ELEMENTWISE = ElementwiseSamples()
FIRST_OPERAND = FirstOperandSamples()

# ONNX Resize: the coordinate transformations each mode supports, and nearest's rounding
RESIZE_COORDINATE_MODES = {
    "nearest": ("asymmetric", "half_pixel", "align_corners"),
    "linear": ("half_pixel", "align_corners"),
}
NEAREST_MODES = ("round_prefer_floor", "round_prefer_ceil", "floor", "ceil")
LINEAR_MAX_FACTOR = 2

# --------------------------------------------------------------------------------------
# Constants
# --------------------------------------------------------------------------------------


def is_float(value: SSAValue) -> bool:
    """A float32 tensor: an activation calibration measures and quantization converts (a host
    op's int64, bool or string values are not)."""
    return isinstance(value.type, TensorType) and isinstance(value.type.get_element_type(), Float32Type)


def dense_from_numpy(array: np.ndarray) -> DenseIntOrFPElementsAttr:
    """A dense attribute holding `array` as float32, built without per-element Python work."""
    data = np.ascontiguousarray(array, dtype=np.float32)
    return DenseIntOrFPElementsAttr(TensorType(f32, data.shape), BytesAttr(data.tobytes()))


def dense_to_numpy(attr: DenseIntOrFPElementsAttr) -> np.ndarray:
    shape = tuple(attr.get_shape())
    raw = attr.data.data
    count = math.prod(shape)
    values = np.frombuffer(raw, dtype=np.float32)
    if values.size == 1 and count != 1:  # a splat
        return np.full(shape, values[0], dtype=np.float32)
    return values.reshape(shape).copy()


@irdl_op_definition
class ConstantOp(IRDLOperation):
    """A float tensor constant: weights, biases and folded values.

    `%w = nn.constant dense<...> : tensor<...xf32>`
    """

    name = "nn.constant"
    value = prop_def(DenseIntOrFPElementsAttr)
    result = result_def(F32Tensor)
    traits = traits_def(ConstantLike(), Pure())

    def __init__(self, value: DenseIntOrFPElementsAttr | np.ndarray):
        if isinstance(value, np.ndarray):
            value = dense_from_numpy(value)
        super().__init__(properties={"value": value}, result_types=[value.type])

    def verify_(self) -> None:
        if self.value.type != self.result.type:
            raise VerifyException(
                f"nn.constant: value type {self.value.type} differs from result type {self.result.type}"
            )
        if not isinstance(self.value.get_element_type(), Float32Type):
            raise VerifyException("nn.constant: only f32 constants are supported")

    def to_numpy(self) -> np.ndarray:
        return dense_to_numpy(self.value)

    @classmethod
    def parse(cls, parser: Parser) -> ConstantOp:
        attr = parser.parse_attribute()
        if not isinstance(attr, DenseIntOrFPElementsAttr):
            parser.raise_error("nn.constant expects a dense<...> : tensor<...> attribute")
        op = cls(attr)
        extra = parser.parse_optional_attr_dict()
        op.attributes.update(extra)
        return op

    def print(self, printer: Printer) -> None:
        # Printed here rather than by the builtin printer, whose splat test unpacks every
        # element into Python floats (seconds for a ResNet's weights).
        data = np.frombuffer(self.value.data.data, dtype=np.float32)
        printer.print_string(" dense<")
        if data.size > 100 and not (data == data[0]).all():
            printer.print_string('"0x' + data.tobytes().hex().upper() + '"')
        elif data.size > 100 or (data.size > 1 and (data == data[0]).all()):
            printer.print_float(float(data[0]), f32)
        elif data.size == 1:
            printer.print_float(float(data[0]), f32)
        else:
            nested = data.reshape(shape_of(self.value.type)) if self.value.type.get_shape() else data
            _print_nested(printer, nested)
        printer.print_string("> : ")
        printer.print_attribute(self.result.type)
        if self.attributes:
            printer.print_op_attributes(self.attributes)


def _print_nested(printer: Printer, array: np.ndarray) -> None:
    if array.ndim == 0:
        printer.print_float(float(array), f32)
        return
    printer.print_string("[")
    for index, item in enumerate(array):
        if index:
            printer.print_string(", ")
        if array.ndim == 1:
            printer.print_float(float(item), f32)
        else:
            _print_nested(printer, item)
    printer.print_string("]")


# --------------------------------------------------------------------------------------
# Element-wise
# --------------------------------------------------------------------------------------


class UnaryOp(IRDLOperation):
    input = operand_def(F32Tensor)
    result = result_def(F32Tensor)
    traits = traits_def(Pure())
    irdl_options = (ParsePropInAttrDict(),)
    assembly_format = "$input attr-dict `:` type($input) `->` type($result)"

    def __init__(self, input: SSAValue, result_type: Attribute | None = None, **props: Attribute):
        super().__init__(
            operands=[input], result_types=[result_type or input.type], properties=props
        )

    def verify_(self) -> None:
        expect_shape(self, shape_of(self.input))


class HasFlatRange:
    """An op whose output no longer changes outside an interval of its input: calibration
    measures the input over that interval only (transforms/calibrate.py, consumer_range)."""

    def flat_range(self) -> tuple[float, float] | None:
        """(low, high) outside which the op's output is constant; None: nowhere."""
        return None


class PointwiseOp(UnaryOp, HasFlatRange):
    """An element-wise function of one tensor, defined by `function` (its float semantics):
    the nn interpreter runs it, lower-nn-to-fixed makes it a 256-entry TABLE of it (R15:
    int8 inputs have 256 values), and batching sees it as element-wise. A new activation is
    a subclass with its name, its attributes and `function` (docs/extending.md)."""

    traits = traits_def(Pure(), ELEMENTWISE)

    def function(self, x: np.ndarray) -> np.ndarray:
        raise NotImplementedError


@irdl_op_definition
class ReluOp(PointwiseOp):
    """max(x, 0); lowered as a clamp of the codes rather than a table (R8)."""

    name = "nn.relu"
    traits = traits_def(Pure(), ELEMENTWISE, ClampsCodes())

    def function(self, x: np.ndarray) -> np.ndarray:
        return float_ops.relu(x)

    def flat_range(self) -> tuple[float, float]:
        return (0.0, math.inf)


@irdl_op_definition
class SigmoidOp(PointwiseOp):
    """1 / (1 + exp(-x))."""

    name = "nn.sigmoid"

    def function(self, x: np.ndarray) -> np.ndarray:
        return float_ops.sigmoid(x)


@irdl_op_definition
class HardSwishOp(PointwiseOp):
    """x * clip(x / 6 + 1/2, 0, 1), as ONNX HardSwish."""

    name = "nn.hard_swish"

    def function(self, x: np.ndarray) -> np.ndarray:
        return float_ops.hard_swish(x)

    def flat_range(self) -> tuple[float, float]:
        return (-3.0, math.inf)  # x * relu6(x + 3) / 6 is 0 for x <= -3


@irdl_op_definition
class HardSigmoidOp(PointwiseOp):
    """clip(alpha * x + beta, 0, 1)."""

    name = "nn.hard_sigmoid"
    alpha = prop_def(FloatAttr)
    beta = prop_def(FloatAttr)

    def function(self, x: np.ndarray) -> np.ndarray:
        return float_ops.hard_sigmoid(x, self.alpha.value.data, self.beta.value.data)

    def flat_range(self) -> tuple[float, float] | None:
        alpha, beta = self.alpha.value.data, self.beta.value.data
        if alpha == 0:
            return None
        low, high = sorted((-beta / alpha, (1.0 - beta) / alpha))
        return (low, high)


@irdl_op_definition
class LeakyReluOp(PointwiseOp):
    """x where x >= 0, alpha * x below, as ONNX LeakyRelu."""

    name = "nn.leaky_relu"
    alpha = prop_def(FloatAttr)

    def function(self, x: np.ndarray) -> np.ndarray:
        return float_ops.leaky_relu(x, self.alpha.value.data)


@irdl_op_definition
class GeluOp(PointwiseOp):
    """x * Phi(x) = x / 2 * (1 + erf(x / sqrt(2))): GELU as exporters spell it with Erf
    (fuse-activations) and as ONNX Gelu with approximate = "none"."""

    name = "nn.gelu"

    def function(self, x: np.ndarray) -> np.ndarray:
        return float_ops.gelu(x)


@irdl_op_definition
class SiluOp(PointwiseOp):
    """x * sigmoid(x) (SiLU, swish), as exporters spell it (fuse-activations)."""

    name = "nn.silu"

    def function(self, x: np.ndarray) -> np.ndarray:
        return float_ops.silu(x)


@irdl_op_definition
class TanhOp(PointwiseOp):
    """tanh(x)."""

    name = "nn.tanh"

    def function(self, x: np.ndarray) -> np.ndarray:
        return float_ops.tanh(x)


@irdl_op_definition
class ReciprocalSqrtOp(PointwiseOp):
    """1 / sqrt(max(x, 0) + epsilon), epsilon > 0: a LayerNorm's reciprocal deviation from its
    variance (expand-layer-norm), a table below the float level."""

    name = "nn.reciprocal_sqrt"
    epsilon = prop_def(FloatAttr)

    def function(self, x: np.ndarray) -> np.ndarray:
        return float_ops.reciprocal_sqrt(x, self.epsilon.value.data)

    def verify_(self) -> None:
        super().verify_()
        if not self.epsilon.value.data > 0:
            raise VerifyException(f"nn.reciprocal_sqrt: epsilon must be positive, got {self.epsilon.value.data}")


@irdl_op_definition
class ClipOp(IRDLOperation, HasFlatRange):
    """clip(x, min, max); covers hard_tanh (-1, 1) and relu6 (0, 6). A missing bound is open.

    A bound is a constant attribute (`{min = 0.0 : f32}`) or, where the model computes it or
    takes it as an input, a scalar operand (`min(%lo : tensor<f32>)`); an operand bound below
    the other bound makes every value the max, as in ONNX.
    """

    name = "nn.clip"
    input = operand_def(F32Tensor)
    min_value = opt_operand_def(F32Tensor)
    max_value = opt_operand_def(F32Tensor)
    result = result_def(F32Tensor)
    min = opt_prop_def(FloatAttr)
    max = opt_prop_def(FloatAttr)
    traits = traits_def(Pure(), ELEMENTWISE, ClampsCodes())
    irdl_options = (AttrSizedOperandSegments(as_property=True), ParsePropInAttrDict())
    assembly_format = (
        "$input (`min` `(` $min_value^ `:` type($min_value) `)`)? (`max` `(` $max_value^ `:` type($max_value) `)`)?"
        " attr-dict `:` type($input) `->` type($result)"
    )

    def __init__(
        self,
        input: SSAValue,
        result_type: Attribute | None = None,
        min: FloatAttr | None = None,
        max: FloatAttr | None = None,
        min_value: SSAValue | None = None,
        max_value: SSAValue | None = None,
    ):
        properties = {key: value for key, value in (("min", min), ("max", max)) if value is not None}
        super().__init__(
            operands=[input, min_value, max_value], result_types=[result_type or input.type], properties=properties
        )

    @property
    def has_operand_bounds(self) -> bool:
        return self.min_value is not None or self.max_value is not None

    def bounds(self) -> tuple[float, float]:
        """The attribute bounds (an absent one is infinite); operand bounds are only known at run time."""
        low = -math.inf if self.min is None else self.min.value.data
        high = math.inf if self.max is None else self.max.value.data
        return low, high

    def flat_range(self) -> tuple[float, float] | None:
        return None if self.has_operand_bounds else self.bounds()

    def verify_(self) -> None:
        expect_shape(self, shape_of(self.input))
        for role, attribute, operand in (("min", self.min, self.min_value), ("max", self.max, self.max_value)):
            if attribute is not None and operand is not None:
                raise VerifyException(f"nn.clip: {role} is given both as an attribute and as an operand")
            if operand is not None and math.prod(shape_of(operand)) != 1:
                raise VerifyException(f"nn.clip: {role} must be a scalar, got shape {list(shape_of(operand))}")
        low, high = self.bounds()
        if low > high:
            raise VerifyException(f"nn.clip: min {low} is greater than max {high}")


@irdl_op_definition
class SoftmaxOp(UnaryOp):
    """exp(x) / sum(exp(x)) along `axis` (ONNX opset >= 13 semantics)."""

    name = "nn.softmax"
    axis = prop_def(IntegerAttr[I64])
    traits = traits_def(Pure(), SamplesUnlessAxisZero("axis"))

    def verify_(self) -> None:
        super().verify_()
        normalize_axis(self, self.axis.value.data, len(shape_of(self.input)))


@irdl_op_definition
class MeanSquareOp(IRDLOperation):
    """mean(x * x) over the last axis, kept ([.., C] -> [.., 1]): a LayerNorm's variance of its
    deviations (expand-layer-norm). Below the float level its sum of squared codes is exact
    (lower-nn-to-fixed: two tables split each square into base-127 digits, two CONV sums)."""

    name = "nn.mean_square"
    input = operand_def(F32Tensor)
    result = result_def(F32Tensor)
    traits = traits_def(Pure(), FirstOperandSamples(unless=lambda op: len(shape_of(op.operands[0])) < 2))
    irdl_options = (ParsePropInAttrDict(),)
    assembly_format = "$input attr-dict `:` type($input) `->` type($result)"

    def __init__(self, input: SSAValue):
        super().__init__(operands=[input], result_types=[TensorType(f32, [*shape_of(input)[:-1], 1])])

    def verify_(self) -> None:
        shape = shape_of(self.input)
        if len(shape) < 1:
            raise VerifyException("nn.mean_square: the input must have at least one axis")
        expect_shape(self, [*shape[:-1], 1])


@irdl_op_definition
class LayerNormOp(IRDLOperation):
    """(x - mean) / sqrt(var + epsilon) * scale + bias, mean and (biased) variance over the axes
    from `axis` to the last, as ONNX LayerNormalization; `scale` and `bias` broadcast against
    x. Exporters before opset 17 spell it with ReduceMean, Sub, Pow, Sqrt and Div
    (fuse-activations makes that one op). It has no integer form: it runs in float on the
    host, one op instead of seven with an int8 rounding between every two."""

    name = "nn.layer_norm"
    input = operand_def(F32Tensor)
    scale = operand_def(F32Tensor)
    bias = operand_def(F32Tensor)
    result = result_def(F32Tensor)
    axis = prop_def(IntegerAttr[I64])
    epsilon = prop_def(FloatAttr)
    traits = traits_def(Pure(), SamplesUnlessAxisZero("axis"))
    irdl_options = (ParsePropInAttrDict(),)
    assembly_format = (
        "$input `,` $scale `,` $bias attr-dict `:` `(` type($input) `,` type($scale) `,` type($bias) `)` "
        "`->` type($result)"
    )

    def verify_(self) -> None:
        normalize_axis(self, self.axis.value.data, len(shape_of(self.input)))
        expect_shape(self, shape_of(self.input))
        for name, value in (("scale", self.scale), ("bias", self.bias)):
            try:
                shape = broadcast_shapes(shape_of(self.input), shape_of(value))
            except ValueError as error:
                raise VerifyException(f"{self.name}: {name}: {error}") from None
            if shape != shape_of(self.input):
                raise VerifyException(f"{self.name}: {name} {shape_of(value)} must broadcast to the input "
                                      f"{shape_of(self.input)}")


class BinaryOp(IRDLOperation):
    lhs = operand_def(F32Tensor)
    rhs = operand_def(F32Tensor)
    result = result_def(F32Tensor)
    traits = traits_def(Pure(), ELEMENTWISE, Rescales())
    irdl_options = (ParsePropInAttrDict(),)
    assembly_format = "$lhs `,` $rhs attr-dict `:` `(` type($lhs) `,` type($rhs) `)` `->` type($result)"

    def __init__(self, lhs: SSAValue, rhs: SSAValue, result_type: Attribute | None = None):
        if result_type is None:
            result_type = TensorType(f32, broadcast_shapes(shape_of(lhs), shape_of(rhs)))
        super().__init__(operands=[lhs, rhs], result_types=[result_type])

    def verify_(self) -> None:
        try:
            expected = broadcast_shapes(shape_of(self.lhs), shape_of(self.rhs))
        except ValueError as error:
            raise VerifyException(f"{self.name}: {error}") from None
        expect_shape(self, expected)


@irdl_op_definition
class AddOp(BinaryOp):
    """lhs + rhs with ONNX broadcasting."""

    name = "nn.add"
    traits = traits_def(Pure(), Commutative(), ELEMENTWISE, Rescales())


@irdl_op_definition
class SubOp(BinaryOp):
    """lhs - rhs with ONNX broadcasting."""

    name = "nn.sub"


@irdl_op_definition
class MulOp(BinaryOp):
    """lhs * rhs with ONNX broadcasting (squeeze-excitation scales are a broadcast mul)."""

    name = "nn.mul"
    traits = traits_def(Pure(), Commutative(), ELEMENTWISE, Rescales())


@irdl_op_definition
class DivOp(BinaryOp):
    """lhs / rhs with ONNX broadcasting."""

    name = "nn.div"


# --------------------------------------------------------------------------------------
# Convolution and dense layers
# --------------------------------------------------------------------------------------


class ConvolutionOp(IRDLOperation):
    """What convolution and transposed convolution share: operands, window attributes, bias check."""

    input = operand_def(F32Tensor)
    weight = operand_def(F32Tensor)
    bias = opt_operand_def(F32Tensor)
    result = result_def(F32Tensor)
    strides = prop_def(DenseArrayBase[I64])
    pads = prop_def(DenseArrayBase[I64])
    dilations = prop_def(DenseArrayBase[I64])
    group = prop_def(IntegerAttr[I64])
    traits = traits_def(Pure(), FIRST_OPERAND, Rescales())
    irdl_options = (ParsePropInAttrDict(),)
    assembly_format = "$input `,` $weight (`,` $bias^)? attr-dict `:` functional-type(operands, results)"

    def verify_bias(self, out_channels: int) -> None:
        if self.bias is not None and shape_of(self.bias) != (out_channels,):
            raise VerifyException(
                f"{self.name}: bias shape must be [{out_channels}], got {list(shape_of(self.bias))}"
            )


@irdl_op_definition
class Conv2dOp(ConvolutionOp):
    """2-D convolution, NCHW input, OIHW weight (I = C / group), optional bias of O.

    group == C == O is a depthwise convolution.
    """

    name = "nn.conv2d"

    def __init__(
        self,
        input: SSAValue,
        weight: SSAValue,
        bias: SSAValue | None,
        strides: Sequence[int] = (1, 1),
        pads: Sequence[int] = (0, 0, 0, 0),
        dilations: Sequence[int] = (1, 1),
        group: int = 1,
        result_type: Attribute | None = None,
    ):
        if result_type is None:
            result_type = TensorType(
                f32, conv_output_shape(shape_of(input), shape_of(weight), strides, pads, dilations)
            )
        super().__init__(
            operands=[input, weight, bias],
            result_types=[result_type],
            properties=conv_properties(strides, pads, dilations, group),
        )

    def verify_(self) -> None:
        expected = verify_conv_geometry(
            self, self.input, self.weight, ints(self.strides), ints(self.pads), ints(self.dilations),
            self.group.value.data,
        )
        self.verify_bias(expected[1])
        expect_shape(self, expected)

    @property
    def is_depthwise(self) -> bool:
        x, w = shape_of(self.input), shape_of(self.weight)
        group = self.group.value.data
        return group > 1 and group == x[1] and w[1] == 1


@irdl_op_definition
class ConvTranspose2dOp(ConvolutionOp):
    """2-D transposed convolution (ONNX ConvTranspose): NCHW input, C x O/group x KH x KW weight.

    Output size per axis: (in - 1) * stride + dilation * (k - 1) + 1 - pad_begin - pad_end
    + output_padding. The importer resolves ONNX's auto_pad and output_shape into these pads.
    """

    name = "nn.conv_transpose2d"
    output_padding = prop_def(DenseArrayBase[I64])

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
    ):
        shape = conv_transpose_output_shape(
            shape_of(input), shape_of(weight), strides, pads, dilations, output_padding, group
        )
        super().__init__(
            operands=[input, weight, bias],
            result_types=[TensorType(f32, shape)],
            properties=conv_properties(strides, pads, dilations, group, output_padding),
        )

    def verify_(self) -> None:
        expected = verify_conv_transpose_geometry(
            self, self.input, self.weight, ints(self.strides), ints(self.pads), ints(self.dilations),
            ints(self.output_padding), self.group.value.data,
        )
        self.verify_bias(expected[1])
        expect_shape(self, expected)


@irdl_op_definition
class GemmOp(IRDLOperation):
    """alpha * op(A) @ op(B) + beta * C, with op = transpose when trans_a / trans_b."""

    name = "nn.gemm"
    a = operand_def(F32Tensor)
    b = operand_def(F32Tensor)
    c = opt_operand_def(F32Tensor)
    result = result_def(F32Tensor)
    alpha = prop_def(FloatAttr)
    beta = prop_def(FloatAttr)
    trans_a = prop_def(IntegerAttr[I64])
    trans_b = prop_def(IntegerAttr[I64])
    traits = traits_def(Pure(), FirstOperandSamples(unless=lambda op: bool(op.trans_a.value.data)), Rescales())
    irdl_options = (ParsePropInAttrDict(),)
    assembly_format = "$a `,` $b (`,` $c^)? attr-dict `:` functional-type(operands, results)"

    def __init__(
        self,
        a: SSAValue,
        b: SSAValue,
        c: SSAValue | None,
        alpha: float = 1.0,
        beta: float = 1.0,
        trans_a: bool = False,
        trans_b: bool = False,
        result_type: Attribute | None = None,
    ):
        if result_type is None:
            result_type = TensorType(f32, gemm_output_shape(shape_of(a), shape_of(b), trans_a, trans_b))
        super().__init__(
            operands=[a, b, c],
            result_types=[result_type],
            properties={
                "alpha": f32_attr(alpha),
                "beta": f32_attr(beta),
                "trans_a": i64_attr(int(trans_a)),
                "trans_b": i64_attr(int(trans_b)),
            },
        )

    def verify_(self) -> None:
        a = expect_rank(self, self.a, 2, "A")
        b = expect_rank(self, self.b, 2, "B")
        try:
            expected = gemm_output_shape(a, b, bool(self.trans_a.value.data), bool(self.trans_b.value.data))
        except ValueError as error:
            raise VerifyException(f"nn.gemm: {error}") from None
        if self.c is not None and not broadcasts_to(shape_of(self.c), expected):
            raise VerifyException(
                f"nn.gemm: C of shape {list(shape_of(self.c))} does not broadcast to {list(expected)}"
            )
        expect_shape(self, expected)


@irdl_op_definition
class MatMulOp(IRDLOperation):
    """numpy.matmul semantics, as ONNX MatMul."""

    name = "nn.matmul"
    lhs = operand_def(F32Tensor)
    rhs = operand_def(F32Tensor)
    result = result_def(F32Tensor)
    traits = traits_def(Pure(), FirstOperandSamples(unless=lambda op: len(shape_of(op.operands[0])) < 2), Rescales())
    assembly_format = "$lhs `,` $rhs attr-dict `:` `(` type($lhs) `,` type($rhs) `)` `->` type($result)"

    def __init__(self, lhs: SSAValue, rhs: SSAValue, result_type: Attribute | None = None):
        if result_type is None:
            result_type = TensorType(f32, matmul_output_shape(shape_of(lhs), shape_of(rhs)))
        super().__init__(operands=[lhs, rhs], result_types=[result_type])

    def verify_(self) -> None:
        try:
            expected = matmul_output_shape(shape_of(self.lhs), shape_of(self.rhs))
        except ValueError as error:
            raise VerifyException(f"nn.matmul: {error}") from None
        expect_shape(self, expected)


@irdl_op_definition
class BatchNormOp(IRDLOperation):
    """Inference batch normalization: (x - mean) / sqrt(var + epsilon) * scale + bias, per channel."""

    name = "nn.batch_norm"
    input = operand_def(F32Tensor)
    scale = operand_def(F32Tensor)
    bias = operand_def(F32Tensor)
    mean = operand_def(F32Tensor)
    var = operand_def(F32Tensor)
    result = result_def(F32Tensor)
    epsilon = prop_def(FloatAttr)
    traits = traits_def(Pure(), FIRST_OPERAND, Rescales())
    irdl_options = (ParsePropInAttrDict(),)
    assembly_format = "$input `,` $scale `,` $bias `,` $mean `,` $var attr-dict `:` functional-type(operands, results)"

    def __init__(self, input: SSAValue, scale: SSAValue, bias: SSAValue, mean: SSAValue, var: SSAValue, epsilon: float):
        super().__init__(
            operands=[input, scale, bias, mean, var],
            result_types=[input.type],
            properties={"epsilon": f32_attr(epsilon)},
        )

    def verify_(self) -> None:
        x = shape_of(self.input)
        if len(x) < 2:
            raise VerifyException(f"nn.batch_norm: input must have rank >= 2, got shape {list(x)}")
        for role in ("scale", "bias", "mean", "var"):
            if shape_of(getattr(self, role)) != (x[1],):
                raise VerifyException(
                    f"nn.batch_norm: {role} shape must be [{x[1]}], got {list(shape_of(getattr(self, role)))}"
                )
        expect_shape(self, x)


# --------------------------------------------------------------------------------------
# Pooling
# --------------------------------------------------------------------------------------


class WindowPoolOp(IRDLOperation):
    input = operand_def(F32Tensor)
    result = result_def(F32Tensor)
    kernel_shape = prop_def(DenseArrayBase[I64])
    strides = prop_def(DenseArrayBase[I64])
    pads = prop_def(DenseArrayBase[I64])
    ceil_mode = prop_def(IntegerAttr[I64])
    irdl_options = (ParsePropInAttrDict(),)
    assembly_format = "$input attr-dict `:` type($input) `->` type($result)"

    def pool_dilations(self) -> tuple[int, int]:
        return (1, 1)

    def verify_(self) -> None:
        verify_window(self, self.input, ints(self.kernel_shape), ints(self.strides), ints(self.pads),
                      self.pool_dilations(), bool(self.ceil_mode.value.data))


@irdl_op_definition
class MaxPoolOp(WindowPoolOp):
    """Max over each window; padding never wins."""

    name = "nn.max_pool"
    dilations = prop_def(DenseArrayBase[I64])
    traits = traits_def(Pure(), ELEMENTWISE, KeepsRange())

    def __init__(self, input: SSAValue, kernel, strides, pads, dilations=(1, 1), ceil_mode=False, result_type=None):
        props = pool_properties(kernel, strides, pads, ceil_mode)
        props["dilations"] = i64_array(dilations)
        if result_type is None:
            x = shape_of(input)
            hw = pool_output_hw(x[2:], kernel, strides, pads, dilations, ceil_mode)
            result_type = TensorType(f32, (x[0], x[1], *hw))
        super().__init__(operands=[input], result_types=[result_type], properties=props)

    def pool_dilations(self) -> tuple[int, int]:
        values = ints(self.dilations)
        return (values[0], values[1]) if len(values) == 2 else (1, 1)

    def verify_(self) -> None:
        expect_len(self, "dilations", ints(self.dilations), 2)
        expect_at_least(self, "dilations", ints(self.dilations), 1)
        super().verify_()


@irdl_op_definition
class AveragePoolOp(WindowPoolOp):
    """Mean over each window; `count_include_pad` says whether padding counts in the divisor."""

    name = "nn.average_pool"
    count_include_pad = prop_def(IntegerAttr[I64])
    traits = traits_def(Pure(), ELEMENTWISE, Rescales())

    def __init__(self, input: SSAValue, kernel, strides, pads, count_include_pad=False, ceil_mode=False, result_type=None):
        props = pool_properties(kernel, strides, pads, ceil_mode)
        props["count_include_pad"] = i64_attr(int(count_include_pad))
        if result_type is None:
            x = shape_of(input)
            hw = pool_output_hw(x[2:], kernel, strides, pads, (1, 1), ceil_mode)
            result_type = TensorType(f32, (x[0], x[1], *hw))
        super().__init__(operands=[input], result_types=[result_type], properties=props)


@irdl_op_definition
class GlobalAveragePoolOp(IRDLOperation):
    """Mean over H and W: N x C x H x W -> N x C x 1 x 1."""

    name = "nn.global_average_pool"
    input = operand_def(F32Tensor)
    result = result_def(F32Tensor)
    traits = traits_def(Pure(), ELEMENTWISE, Rescales())
    assembly_format = "$input attr-dict `:` type($input) `->` type($result)"

    def __init__(self, input: SSAValue):
        x = shape_of(input)
        super().__init__(operands=[input], result_types=[TensorType(f32, (*x[:2], *([1] * (len(x) - 2))))])

    def verify_(self) -> None:
        x = shape_of(self.input)
        if len(x) < 3:
            raise VerifyException(f"nn.global_average_pool: input must have rank >= 3, got shape {list(x)}")
        expect_shape(self, (*x[:2], *([1] * (len(x) - 2))))


# --------------------------------------------------------------------------------------
# Data movement
# --------------------------------------------------------------------------------------


@irdl_op_definition
class ReshapeOp(IRDLOperation):
    """Same elements, new static shape (the result type)."""

    name = "nn.reshape"
    input = operand_def(F32Tensor)
    result = result_def(F32Tensor)
    traits = traits_def(Pure(), ReshapeSamples(), KeepsRange())
    assembly_format = "$input attr-dict `:` type($input) `->` type($result)"

    def __init__(self, input: SSAValue, shape: Sequence[int]):
        super().__init__(operands=[input], result_types=[TensorType(f32, shape)])

    def verify_(self) -> None:
        before, after = shape_of(self.input), shape_of(self.result)
        if math.prod(before) != math.prod(after):
            raise VerifyException(
                f"nn.reshape: cannot reshape {list(before)} ({math.prod(before)} elements) "
                f"to {list(after)} ({math.prod(after)} elements)"
            )


@irdl_op_definition
class FlattenOp(IRDLOperation):
    """Collapse dimensions [0, axis) and [axis, rank) into a 2-D tensor."""

    name = "nn.flatten"
    input = operand_def(F32Tensor)
    result = result_def(F32Tensor)
    axis = prop_def(IntegerAttr[I64])
    traits = traits_def(Pure(), FlattenSamples(), KeepsRange())
    irdl_options = (ParsePropInAttrDict(),)
    assembly_format = "$input attr-dict `:` type($input) `->` type($result)"

    def __init__(self, input: SSAValue, axis: int = 1):
        shape = shape_of(input)
        axis = axis + len(shape) if axis < 0 else axis
        super().__init__(
            operands=[input],
            result_types=[TensorType(f32, flatten_output_shape(shape, axis))],
            properties={"axis": i64_attr(axis)},
        )

    def verify_(self) -> None:
        shape = shape_of(self.input)
        axis = normalize_axis(self, self.axis.value.data, len(shape), allow_end=True)
        expect_shape(self, flatten_output_shape(shape, axis))


@irdl_op_definition
class TransposeOp(IRDLOperation):
    """Permute dimensions: result dimension i is input dimension perm[i]."""

    name = "nn.transpose"
    input = operand_def(F32Tensor)
    result = result_def(F32Tensor)
    perm = prop_def(DenseArrayBase[I64])
    traits = traits_def(Pure(), TransposeSamples(), KeepsRange())
    irdl_options = (ParsePropInAttrDict(),)
    assembly_format = "$input attr-dict `:` type($input) `->` type($result)"

    def __init__(self, input: SSAValue, perm: Sequence[int]):
        shape = shape_of(input)
        super().__init__(
            operands=[input],
            result_types=[TensorType(f32, [shape[p] for p in perm])],
            properties={"perm": i64_array(perm)},
        )

    def verify_(self) -> None:
        shape, perm = shape_of(self.input), ints(self.perm)
        if sorted(perm) != list(range(len(shape))):
            raise VerifyException(f"nn.transpose: perm {list(perm)} is not a permutation of 0..{len(shape) - 1}")
        expect_shape(self, [shape[p] for p in perm])


@irdl_op_definition
class ResizeOp(IRDLOperation):
    """Upsample H and W by integer factors (the result type gives them), as ONNX Resize.

    `mode` is "nearest" (any integer factor) or "linear" (factors 1 and 2);
    `coordinate_transformation_mode` and, for nearest, `nearest_mode` mean what they mean in
    ONNX (docs/onnx-import.md): together they say which input pixel(s) each output pixel reads.
    """

    name = "nn.resize"
    input = operand_def(F32Tensor)
    result = result_def(F32Tensor)
    mode = prop_def(StringAttr)
    coordinate_transformation_mode = prop_def(StringAttr)
    nearest_mode = opt_prop_def(StringAttr)
    traits = traits_def(Pure(), ELEMENTWISE, KeepsRange(when=lambda op: op.mode.data == "nearest"))
    irdl_options = (ParsePropInAttrDict(),)
    assembly_format = "$input attr-dict `:` type($input) `->` type($result)"

    def __init__(
        self,
        input: SSAValue,
        factors: Sequence[int],
        mode: str,
        coordinate_transformation_mode: str,
        nearest_mode: str | None = None,
    ):
        n, c, h, w = shape_of(input)
        properties = {
            "mode": StringAttr(mode),
            "coordinate_transformation_mode": StringAttr(coordinate_transformation_mode),
        }
        if nearest_mode is not None:
            properties["nearest_mode"] = StringAttr(nearest_mode)
        super().__init__(
            operands=[input],
            result_types=[TensorType(f32, (n, c, h * factors[0], w * factors[1]))],
            properties=properties,
        )

    @property
    def factors(self) -> tuple[int, int]:
        return resize_factors(shape_of(self.input), shape_of(self.result))

    def verify_(self) -> None:
        try:
            factors = self.factors
        except ValueError as error:
            raise VerifyException(f"nn.resize: {error}") from None
        mode = self.mode.data
        coordinates = self.coordinate_transformation_mode.data
        if mode not in RESIZE_COORDINATE_MODES:
            raise VerifyException(f"nn.resize: mode must be one of {', '.join(RESIZE_COORDINATE_MODES)}, got '{mode}'")
        if coordinates not in RESIZE_COORDINATE_MODES[mode]:
            raise VerifyException(
                f"nn.resize: {mode} coordinate_transformation_mode must be one of "
                f"{', '.join(RESIZE_COORDINATE_MODES[mode])}, got '{coordinates}'"
            )
        if mode == "nearest":
            if self.nearest_mode is None or self.nearest_mode.data not in NEAREST_MODES:
                got = "none" if self.nearest_mode is None else f"'{self.nearest_mode.data}'"
                raise VerifyException(f"nn.resize: nearest_mode must be one of {', '.join(NEAREST_MODES)}, got {got}")
        else:
            if self.nearest_mode is not None:
                raise VerifyException("nn.resize: nearest_mode belongs to mode nearest only")
            if max(factors) > LINEAR_MAX_FACTOR:
                raise VerifyException(f"nn.resize: linear resizing supports factors 1 and 2, got {list(factors)}")


@irdl_op_definition
class ConcatOp(IRDLOperation):
    """Join tensors along `axis`; all other dimensions must agree."""

    name = "nn.concat"
    inputs = var_operand_def(F32Tensor)
    result = result_def(F32Tensor)
    axis = prop_def(IntegerAttr[I64])
    traits = traits_def(Pure(), SamplesUnlessAxisZero("axis", every_operand=True))
    irdl_options = (ParsePropInAttrDict(),)
    assembly_format = "$inputs attr-dict `:` functional-type(operands, results)"

    def __init__(self, inputs: Sequence[SSAValue], axis: int):
        shapes = [shape_of(v) for v in inputs]
        axis = axis + len(shapes[0]) if axis < 0 else axis
        out = list(shapes[0])
        out[axis] = sum(s[axis] for s in shapes)
        super().__init__(
            operands=[list(inputs)],
            result_types=[TensorType(f32, out)],
            properties={"axis": i64_attr(axis)},
        )

    def verify_(self) -> None:
        if not self.inputs:
            raise VerifyException("nn.concat: needs at least one input")
        shapes = [shape_of(v) for v in self.inputs]
        rank = len(shapes[0])
        axis = normalize_axis(self, self.axis.value.data, rank)
        for shape in shapes[1:]:
            if len(shape) != rank or any(a != b for i, (a, b) in enumerate(zip(shape, shapes[0])) if i != axis):
                raise VerifyException(
                    f"nn.concat: input shapes {[list(s) for s in shapes]} differ outside axis {axis}"
                )
        out = list(shapes[0])
        out[axis] = sum(s[axis] for s in shapes)
        expect_shape(self, out)


# --------------------------------------------------------------------------------------
# Opaque host ops: ONNX nodes the front end does not model, run by onnxruntime
# --------------------------------------------------------------------------------------


@irdl_attr_definition
class OnnxModelAttr(Data[bytes]):
    """A serialized ONNX model (ModelProto bytes), printed as base64: `#nn.onnx_model<"CAg...">`."""

    name = "nn.onnx_model"

    @classmethod
    def parse_parameter(cls, parser: AttrParser) -> bytes:
        import base64
        import binascii

        with parser.in_angle_brackets():
            text = parser.parse_str_literal()
        try:
            return base64.b64decode(text, validate=True)
        except binascii.Error:
            parser.raise_error("nn.onnx_model: the model must be base64 text")

    def print_parameter(self, printer: Printer) -> None:
        import base64

        # base64 needs no escaping: printed as it is (the string printer escapes char by char,
        # seconds for a model of a megabyte)
        printer.print_string('<"' + base64.b64encode(self.data).decode("ascii") + '">')


@irdl_attr_definition
class OnnxValueType(ParametrizedAttribute, TypeAttribute):
    """A value of an ONNX type the IR has no tensor type for (a string tensor, a sequence, an
    optional, a map, float8): it passes between nn.onnx ops and the program's edges as
    onnxruntime gives it. `!nn.onnx_value<"seq(tensor(float))", "<base64 TypeProto>">`: the
    type in words, and the ONNX TypeProto itself."""

    name = "nn.onnx_value"
    description: StringAttr
    type_proto: StringAttr

    def __init__(self, description: str, type_proto: str):
        super().__init__(StringAttr(description), StringAttr(type_proto))

    def print_parameters(self, printer: Printer) -> None:
        printer.print_string(f'<"{self.description.data}", "{self.type_proto.data}">')

    @classmethod
    def parse_parameters(cls, parser: AttrParser) -> list:
        with parser.in_angle_brackets():
            description = parser.parse_str_literal()
            parser.parse_punctuation(",")
            type_proto = parser.parse_str_literal()
        return [StringAttr(description), StringAttr(type_proto)]


@irdl_op_definition
class OnnxOp(IRDLOperation):
    """An ONNX node the front end does not model, run by onnxruntime (semantics/onnx_runtime.py).

    `model` is a small ONNX model holding the node `op_type` (with its subgraphs), the
    constants it reads as initializers, one graph input per operand (a value of the graph
    it reads, a subgraph's outer-scope reads included) and one graph output per result.
    Operands and results are tensors of any element type numpy has a counterpart of (f32,
    si64, i1, ...), or values of other ONNX types (`!nn.onnx_value`: strings, sequences);
    result dimensions may be dynamic (`?`) where the node's output shape depends on the data. `reason` says why the front end left it opaque. Inside a binary's
    host segment, `model` is the index of the model in the binary's onnx-models section
    (docs/binary-format.md, section 8), and the reader puts the model back.

    `%y, %h = nn.onnx "LSTM" (%x) {model = #nn.onnx_model<"...">, reason = "..."} : (...) -> (...)`
    """

    name = "nn.onnx"
    inputs = var_operand_def(TensorType | OnnxValueType)
    outputs = var_result_def(TensorType | OnnxValueType)
    op_type = prop_def(StringAttr)
    model = prop_def(OnnxModelAttr | IntegerAttr[I64])
    reason = prop_def(StringAttr)
    traits = traits_def(SampleBySample())
    irdl_options = (ParsePropInAttrDict(),)
    assembly_format = "$op_type `(` $inputs `)` attr-dict `:` functional-type($inputs, $outputs)"

    def __init__(self, op_type: str, inputs: Sequence[SSAValue], result_types: Sequence[Attribute], model: bytes,
                 reason: str):
        super().__init__(
            operands=[list(inputs)],
            result_types=[list(result_types)],
            properties={"op_type": StringAttr(op_type), "model": OnnxModelAttr(model), "reason": StringAttr(reason)},
        )

    def model_bytes(self) -> bytes:
        if not isinstance(self.model, OnnxModelAttr):
            raise VerifyException(f"nn.onnx: the model is a reference ({self.model.value.data}) into a binary's "
                                  "onnx-models section, not the model")
        return self.model.data

    def verify_(self) -> None:
        if not self.op_type.data:
            raise VerifyException("nn.onnx: op_type must name the ONNX op")
        if not self.outputs:
            raise VerifyException("nn.onnx: needs at least one result")
        if isinstance(self.model, OnnxModelAttr) and not self.model.data:
            raise VerifyException("nn.onnx: the model is empty")


NN = Dialect(
    "nn",
    [
        ConstantOp,
        ReluOp,
        SigmoidOp,
        TanhOp,
        ReciprocalSqrtOp,
        HardSigmoidOp,
        LeakyReluOp,
        HardSwishOp,
        GeluOp,
        SiluOp,
        ClipOp,
        SoftmaxOp,
        LayerNormOp,
        MeanSquareOp,
        AddOp,
        SubOp,
        MulOp,
        DivOp,
        Conv2dOp,
        ConvTranspose2dOp,
        GemmOp,
        MatMulOp,
        BatchNormOp,
        MaxPoolOp,
        AveragePoolOp,
        GlobalAveragePoolOp,
        ReshapeOp,
        FlattenOp,
        TransposeOp,
        ResizeOp,
        ConcatOp,
        OnnxOp,
    ],
    [OnnxModelAttr, OnnxValueType],
)
