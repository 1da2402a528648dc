"""ONNX nodes -> `nn` ops: one converter per ONNX op type the nn dialect models.

frontend/onnx_import.py walks the graph and calls the converter registered for a node's op
type (`converts`); a converter emits the node's nn ops through the importer or raises
`NodeError`, and the importer keeps the node for the host (nn.onnx) with those words as the
reason. Adding an op the nn dialect models is one converter here (docs/extending.md).
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING

import numpy as np
import onnx
from onnx import numpy_helper
from xdsl.dialects.builtin import (
    ArrayAttr,
    DictionaryAttr,
    StringAttr,
    TensorType,
    f32,
)
from xdsl.ir import SSAValue

from xnpu.core.errors import XnpuError, first_line
from xnpu.dialects import nn
from xnpu.interpreters.function import NAME_ATTR
from xnpu.ir.io import vanishing_name_hint

if TYPE_CHECKING:
    from xnpu.frontend.onnx_import import GraphImporter


FLOAT = onnx.TensorProto.FLOAT


class NodeError(Exception):
    """Raised by a converter; the importer adds which node it was."""


def elem_type_name(elem_type: int) -> str:
    return onnx.TensorProto.DataType.Name(elem_type) if elem_type else "UNDEFINED"


def tensor_array(tensor: onnx.TensorProto, what: str) -> np.ndarray:
    """The value of an ONNX tensor (initializer or Constant), refused with one line when its
    stored data does not match its dims (numpy_helper would fail on the reshape)."""
    dims = [int(d) for d in tensor.dims]
    if any(d < 0 for d in dims):
        raise XnpuError(f"{what} has negative dims {dims}")
    try:
        return numpy_helper.to_array(tensor)
    except Exception as error:  # onnx raises ValueError, TypeError or KeyError for damaged tensors
        reason = first_line(error)
        raise XnpuError(f"{what}: its data does not match its dims {dims} ({reason})") from None


def ssa_name(onnx_name: str) -> str | None:
    """An SSA name hint from an ONNX tensor name, when it makes a valid, readable one (ASCII:
    the IR lexer reads no other letter in `%name`, though xDSL accepts any as a hint)."""
    cleaned = "".join(c if (c.isascii() and c.isalnum()) or c in "_." else "_" for c in onnx_name)
    # `-1+2` cleans to `_1_2`, which xDSL would empty when the module is cloned
    if cleaned[:1].isdigit() or len(cleaned) > 40 or vanishing_name_hint(cleaned):
        return None
    return cleaned


def name_attrs(names: Sequence[str]) -> ArrayAttr[DictionaryAttr]:
    return ArrayAttr([DictionaryAttr({NAME_ATTR: StringAttr(n)}) for n in names])


def node_attributes(node: onnx.NodeProto) -> dict[str, object]:
    return {a.name: onnx.helper.get_attribute_value(a) for a in node.attribute}


def _present(node: onnx.NodeProto, index: int) -> str | None:
    return node.input[index] if len(node.input) > index and node.input[index] else None


def _reject_unknown(attrs: dict[str, object], known: set[str]) -> None:
    unknown = sorted(set(attrs) - known)
    if unknown:
        raise NodeError(f"unsupported attribute '{unknown[0]}'")


def _reject_extra_outputs(node: onnx.NodeProto, what: str) -> None:
    if any(node.output[1:]):
        raise NodeError(f"the {what} output is not supported")


def _decode(value: object) -> object:
    return value.decode() if isinstance(value, bytes) else value


# --------------------------------------------------------------------------------------
# Padding and windows
# --------------------------------------------------------------------------------------


def _window_pads(
    attrs: dict[str, object],
    hw: Sequence[int],
    kernel: Sequence[int],
    strides: Sequence[int],
    dilations: Sequence[int],
) -> tuple[list[int], bool]:
    """Explicit [top, left, bottom, right] pads for any auto_pad; also whether auto_pad was set."""
    auto_pad = _decode(attrs.get("auto_pad", "NOTSET"))
    if auto_pad == "NOTSET":
        pads = [int(p) for p in attrs.get("pads", [0, 0, 0, 0])]
        if len(pads) != 4:
            raise NodeError(f"pads {pads} must have 4 values for a 2-D window")
        if any(p < 0 for p in pads):
            raise NodeError(f"negative pads {pads} are not supported")
        return pads, False
    if "pads" in attrs and any(attrs["pads"]):
        raise NodeError(f"auto_pad={auto_pad} cannot be combined with explicit pads")
    if auto_pad == "VALID":
        return [0, 0, 0, 0], True
    if auto_pad not in ("SAME_UPPER", "SAME_LOWER"):
        raise NodeError(f"unsupported attribute value auto_pad={auto_pad}")
    begin, end = [], []
    for axis in range(2):
        out = -(-hw[axis] // strides[axis])
        span = dilations[axis] * (kernel[axis] - 1) + 1
        total = max((out - 1) * strides[axis] + span - hw[axis], 0)
        small, large = total // 2, total - total // 2
        # SAME_UPPER puts the odd extra pixel at the end, SAME_LOWER at the beginning
        begin.append(small if auto_pad == "SAME_UPPER" else large)
        end.append(large if auto_pad == "SAME_UPPER" else small)
    return [begin[0], begin[1], end[0], end[1]], True


def _pair(attrs: dict[str, object], name: str, default: int = 1) -> list[int]:
    values = [int(v) for v in attrs.get(name, [default, default])]
    if len(values) != 2:
        raise NodeError(f"{name} {values} must have 2 values: only 2-D windows are supported")
    return values


def _expect_rank4(importer: GraphImporter, name: str, role: str = "input") -> tuple[int, ...]:
    shape = nn.shape_of(importer.operand(name))
    if len(shape) != 4:
        raise NodeError(f"{role} '{name}' has shape {list(shape)}; only 2-D (NCHW) data is supported")
    return shape


# --------------------------------------------------------------------------------------
# Converters: one per ONNX op type
# --------------------------------------------------------------------------------------

Converter = Callable[["GraphImporter", onnx.NodeProto, dict], None]
CONVERTERS: dict[str, Converter] = {}
# ops whose output is not a new tensor (folded or forwarded): no shape to check
SHAPE_FREE_OPS = {"Constant", "Identity", "Dropout", "Cast"}


def converts(*op_types: str) -> Callable[[Converter], Converter]:
    def register(converter: Converter) -> Converter:
        for op_type in op_types:
            CONVERTERS[op_type] = converter
        return converter

    return register


@converts("Constant")
def _constant(importer: GraphImporter, node: onnx.NodeProto, attrs: dict) -> None:
    if len(attrs) != 1:
        raise NodeError(f"expects exactly one value attribute, got {sorted(attrs)}")
    (kind, value), = attrs.items()
    if kind == "value":
        array = tensor_array(value, "its value")
    elif kind == "value_float" or kind == "value_floats":
        array = np.array(value, dtype=np.float32)
    elif kind == "value_int" or kind == "value_ints":
        array = np.array(value, dtype=np.int64)
    else:
        raise NodeError(f"unsupported attribute '{kind}'")
    importer.constants[node.output[0]] = (array, importer.location.desc.data)


@converts("Identity")
def _identity(importer: GraphImporter, node: onnx.NodeProto, attrs: dict) -> None:
    _forward(importer, node.input[0], node.output[0])


@converts("Dropout")
def _dropout(importer: GraphImporter, node: onnx.NodeProto, attrs: dict) -> None:
    _reject_unknown(attrs, {"seed", "ratio", "is_test"})
    _reject_extra_outputs(node, "mask")
    training = _present(node, 2)
    if training is not None and bool(np.asarray(importer.constant(training, "training_mode")).item()):
        raise NodeError("training_mode=1 is not supported (inference only)")
    _forward(importer, node.input[0], node.output[0])


def _forward(importer: GraphImporter, source: str, target: str) -> None:
    if source in importer.values:
        importer.values[target] = importer.values[source]
    elif source in importer.constants:
        importer.constants[target] = importer.constants[source]
    else:
        importer.operand(source)  # raises the "not produced" error


def _conv_weight(importer: GraphImporter, node: onnx.NodeProto, attrs: dict) -> tuple[SSAValue, tuple[int, ...]]:
    """A (transposed) convolution's 4-D weight, checked against kernel_shape."""
    weight = importer.operand(node.input[1])
    w_shape = nn.shape_of(weight)
    if len(w_shape) != 4:
        raise NodeError(f"weight has shape {list(w_shape)}; only 2-D convolution is supported")
    if "kernel_shape" in attrs and [int(k) for k in attrs["kernel_shape"]] != list(w_shape[2:]):
        raise NodeError(f"kernel_shape {list(attrs['kernel_shape'])} differs from the weight's {list(w_shape[2:])}")
    return weight, w_shape


@converts("Conv")
def _conv(importer: GraphImporter, node: onnx.NodeProto, attrs: dict) -> None:
    _reject_unknown(attrs, {"auto_pad", "dilations", "group", "kernel_shape", "pads", "strides"})
    if len(nn.shape_of(importer.operand(node.input[0]))) == 3:
        _conv1d(importer, node, attrs)
        return
    x_shape = _expect_rank4(importer, node.input[0])
    weight, w_shape = _conv_weight(importer, node, attrs)
    strides, dilations = _pair(attrs, "strides"), _pair(attrs, "dilations")
    pads, _ = _window_pads(attrs, x_shape[2:], w_shape[2:], strides, dilations)
    bias = _present(node, 2)
    op = nn.Conv2dOp(
        importer.operand(node.input[0]),
        weight,
        importer.operand(bias) if bias else None,
        strides=strides,
        pads=pads,
        dilations=dilations,
        group=int(attrs.get("group", 1)),
    )
    importer.define(node, importer.emit(op))


def _conv1d(importer: GraphImporter, node: onnx.NodeProto, attrs: dict) -> None:
    """A 1-D convolution of N x C x L is the 2-D one of N x C x 1 x L with 1 x K kernels."""
    x = importer.operand(node.input[0])
    n, c, length = nn.shape_of(x)
    weights = np.asarray(importer.constant(node.input[1], "weight"))
    if weights.ndim != 3:
        raise NodeError(f"weight has shape {list(weights.shape)}; a 1-D convolution needs rank 3")
    if "kernel_shape" in attrs and [int(k) for k in attrs["kernel_shape"]] != [weights.shape[2]]:
        raise NodeError(f"kernel_shape {list(attrs['kernel_shape'])} differs from the weight's {[weights.shape[2]]}")
    as_2d = {"strides": [1, *attrs.get("strides", [1])], "dilations": [1, *attrs.get("dilations", [1])]}
    if "pads" in attrs:
        begin, end = [int(p) for p in attrs["pads"]]
        as_2d["pads"] = [0, begin, 0, end]
    if "auto_pad" in attrs:
        as_2d["auto_pad"] = attrs["auto_pad"]
    strides, dilations = _pair(as_2d, "strides"), _pair(as_2d, "dilations")
    pads, _ = _window_pads(as_2d, (1, length), (1, weights.shape[2]), strides, dilations)
    kernel = importer.emit(nn.ConstantOp(weights.reshape(weights.shape[0], weights.shape[1], 1, weights.shape[2])))
    bias = _present(node, 2)
    conv = nn.Conv2dOp(
        importer.emit(nn.ReshapeOp(x, [n, c, 1, length])),
        kernel,
        importer.operand(bias) if bias else None,
        strides=strides,
        pads=pads,
        dilations=dilations,
        group=int(attrs.get("group", 1)),
    )
    y = importer.emit(conv)
    out = nn.shape_of(y)
    importer.define(node, importer.emit(nn.ReshapeOp(y, [out[0], out[1], out[3]])))


@converts("Cast")
def _cast(importer: GraphImporter, node: onnx.NodeProto, attrs: dict) -> None:
    """A cast of a float32 tensor to float32 changes nothing (exporters write them); any other is not modeled."""
    _reject_unknown(attrs, {"to", "saturate", "round_mode"})
    source = importer.operand(node.input[0])
    if int(attrs.get("to", 0)) != FLOAT or not isinstance(source.type, TensorType) or source.type.get_element_type() != f32:
        raise NodeError(f"only a cast of float32 to float32 has an nn equivalent (to = {elem_type_name(int(attrs.get('to', 0)))})")
    _forward(importer, node.input[0], node.output[0])


def _conv_transpose_pads(
    attrs: dict[str, object],
    hw: Sequence[int],
    kernel: Sequence[int],
    strides: Sequence[int],
    dilations: Sequence[int],
    output_padding: Sequence[int],
) -> list[int]:
    """Explicit [top, left, bottom, right] pads of a ConvTranspose, from pads, auto_pad or output_shape."""
    auto_pad = _decode(attrs.get("auto_pad", "NOTSET"))
    if auto_pad not in ("NOTSET", "VALID", "SAME_UPPER", "SAME_LOWER"):
        raise NodeError(f"unsupported attribute value auto_pad={auto_pad}")
    if "output_shape" in attrs:
        target = [int(d) for d in attrs["output_shape"]][-2:]
    elif auto_pad in ("SAME_UPPER", "SAME_LOWER"):
        target = [hw[axis] * strides[axis] for axis in range(2)]
    elif auto_pad == "VALID":
        return [0, 0, 0, 0]
    else:
        pads = [int(p) for p in attrs.get("pads", [0, 0, 0, 0])]
        if len(pads) != 4:
            raise NodeError(f"pads {pads} must have 4 values for a 2-D window")
        return pads
    begin, end = [], []
    for axis in range(2):
        span = dilations[axis] * (kernel[axis] - 1) + 1
        total = strides[axis] * (hw[axis] - 1) + output_padding[axis] + span - target[axis]
        if total < 0:
            raise NodeError(f"output_shape {target} is larger than the transposed convolution gives without padding")
        # the odd pixel of padding goes to the end for SAME_UPPER, to the beginning otherwise
        small, large = total // 2, total - total // 2
        begin.append(small if auto_pad == "SAME_UPPER" else large)
        end.append(large if auto_pad == "SAME_UPPER" else small)
    return [begin[0], begin[1], end[0], end[1]]


@converts("ConvTranspose")
def _conv_transpose(importer: GraphImporter, node: onnx.NodeProto, attrs: dict) -> None:
    _reject_unknown(attrs, {"auto_pad", "dilations", "group", "kernel_shape", "output_padding", "output_shape",
                            "pads", "strides"})
    x_shape = _expect_rank4(importer, node.input[0])
    weight, w_shape = _conv_weight(importer, node, attrs)
    strides, dilations = _pair(attrs, "strides"), _pair(attrs, "dilations")
    output_padding = _pair(attrs, "output_padding", 0)
    pads = _conv_transpose_pads(attrs, x_shape[2:], w_shape[2:], strides, dilations, output_padding)
    if any(p < 0 for p in pads):
        raise NodeError(f"negative pads {pads} are not supported")
    bias = _present(node, 2)
    op = nn.ConvTranspose2dOp(
        importer.operand(node.input[0]),
        weight,
        importer.operand(bias) if bias else None,
        strides=strides,
        pads=pads,
        dilations=dilations,
        output_padding=output_padding,
        group=int(attrs.get("group", 1)),
    )
    importer.define(node, importer.emit(op))


@converts("Gemm")
def _gemm(importer: GraphImporter, node: onnx.NodeProto, attrs: dict) -> None:
    _reject_unknown(attrs, {"alpha", "beta", "transA", "transB", "broadcast"})
    a, b = importer.operand(node.input[0]), importer.operand(node.input[1])
    for role, value in (("A", a), ("B", b)):
        if len(nn.shape_of(value)) != 2:
            raise NodeError(f"{role} has shape {list(nn.shape_of(value))}; Gemm needs rank 2")
    c = _present(node, 2)
    op = nn.GemmOp(
        a,
        b,
        importer.operand(c) if c else None,
        alpha=float(attrs.get("alpha", 1.0)),
        beta=float(attrs.get("beta", 1.0)),
        trans_a=bool(attrs.get("transA", 0)),
        trans_b=bool(attrs.get("transB", 0)),
    )
    importer.define(node, importer.emit(op))


@converts("MatMul")
def _matmul(importer: GraphImporter, node: onnx.NodeProto, attrs: dict) -> None:
    _reject_unknown(attrs, set())
    lhs, rhs = importer.operand(node.input[0]), importer.operand(node.input[1])
    importer.define(node, importer.emit(nn.MatMulOp(lhs, rhs)))


_BINARY = {"Add": nn.AddOp, "Sub": nn.SubOp, "Mul": nn.MulOp, "Div": nn.DivOp}


@converts(*_BINARY)
def _binary(importer: GraphImporter, node: onnx.NodeProto, attrs: dict) -> None:
    _reject_unknown(attrs, set())
    lhs, rhs = importer.operand(node.input[0]), importer.operand(node.input[1])
    importer.define(node, importer.emit(_BINARY[node.op_type](lhs, rhs)))


# ONNX op -> (nn op, its float attributes with their ONNX defaults)
_POINTWISE = {
    "Relu": (nn.ReluOp, {}),
    "Sigmoid": (nn.SigmoidOp, {}),
    "Tanh": (nn.TanhOp, {}),
    "HardSwish": (nn.HardSwishOp, {}),
    "HardSigmoid": (nn.HardSigmoidOp, {"alpha": 0.2, "beta": 0.5}),
    "LeakyRelu": (nn.LeakyReluOp, {"alpha": 0.01}),
}


@converts(*_POINTWISE)
def _pointwise(importer: GraphImporter, node: onnx.NodeProto, attrs: dict) -> None:
    op_type, defaults = _POINTWISE[node.op_type]
    _reject_unknown(attrs, set(defaults))
    properties = {name: nn.f32_attr(attrs.get(name, default)) for name, default in defaults.items()}
    importer.define(node, importer.emit(op_type(importer.operand(node.input[0]), **properties)))


@converts("Clip")
def _clip(importer: GraphImporter, node: onnx.NodeProto, attrs: dict) -> None:
    _reject_unknown(attrs, set())  # opset >= 11: the bounds are inputs
    bounds: dict[str, object] = {}
    for index, role in ((1, "min"), (2, "max")):
        name = _present(node, index)
        if name is None:
            continue  # an omitted bound is open
        if name not in importer.constants:
            bounds[f"{role}_value"] = importer.operand(name)  # computed or a graph input: known at run time
            continue
        value = np.asarray(importer.constant(name, role))
        if value.size != 1:
            raise NodeError(f"{role} must be a scalar, got shape {list(value.shape)}")
        bounds[role] = nn.f32_attr(float(value.reshape(()).item()))
    if "min" in bounds and "max" in bounds and bounds["min"].value.data > bounds["max"].value.data:
        bounds["min"] = bounds["max"]  # ONNX: min > max sets every value to max
    importer.define(node, importer.emit(nn.ClipOp(importer.operand(node.input[0]), **bounds)))


@converts("Softmax")
def _softmax(importer: GraphImporter, node: onnx.NodeProto, attrs: dict) -> None:
    _reject_unknown(attrs, {"axis"})
    x = importer.operand(node.input[0])
    shape = nn.shape_of(x)
    rank = len(shape)
    axis = int(attrs.get("axis", -1 if importer.opset >= 13 else 1))
    if not -rank <= axis < rank:
        raise NodeError(f"axis {axis} is out of range for rank {rank}")
    axis = axis + rank if axis < 0 else axis
    if importer.opset >= 13 or axis == rank - 1:
        importer.define(node, importer.emit(nn.SoftmaxOp(x, axis=nn.i64_attr(axis))))
        return
    # before opset 13 Softmax normalizes over all dimensions from `axis` on, as a 2-D matrix
    flat = importer.emit(nn.FlattenOp(x, axis))
    normalized = importer.emit(nn.SoftmaxOp(flat, axis=nn.i64_attr(1)))
    importer.define(node, importer.emit(nn.ReshapeOp(normalized, shape)))


@converts("MaxPool")
def _max_pool(importer: GraphImporter, node: onnx.NodeProto, attrs: dict) -> None:
    _reject_unknown(attrs, {"auto_pad", "ceil_mode", "dilations", "kernel_shape", "pads", "storage_order", "strides"})
    _reject_extra_outputs(node, "Indices")
    if int(attrs.get("storage_order", 0)) != 0:
        raise NodeError("unsupported attribute value storage_order=1 (column-major indices)")
    x_shape = _expect_rank4(importer, node.input[0])
    kernel, strides, dilations = _pair(attrs, "kernel_shape"), _pair(attrs, "strides"), _pair(attrs, "dilations")
    pads, auto = _window_pads(attrs, x_shape[2:], kernel, strides, dilations)
    ceil_mode = bool(attrs.get("ceil_mode", 0)) and not auto
    op = nn.MaxPoolOp(importer.operand(node.input[0]), kernel, strides, pads, dilations, ceil_mode)
    importer.define(node, importer.emit(op))


@converts("AveragePool")
def _average_pool(importer: GraphImporter, node: onnx.NodeProto, attrs: dict) -> None:
    _reject_unknown(attrs, {"auto_pad", "ceil_mode", "count_include_pad", "dilations", "kernel_shape", "pads", "strides"})
    if any(int(d) != 1 for d in attrs.get("dilations", [])):
        raise NodeError(f"unsupported attribute value dilations={list(attrs['dilations'])}")
    x_shape = _expect_rank4(importer, node.input[0])
    kernel, strides = _pair(attrs, "kernel_shape"), _pair(attrs, "strides")
    pads, auto = _window_pads(attrs, x_shape[2:], kernel, strides, (1, 1))
    ceil_mode = bool(attrs.get("ceil_mode", 0)) and not auto
    op = nn.AveragePoolOp(
        importer.operand(node.input[0]), kernel, strides, pads,
        count_include_pad=bool(attrs.get("count_include_pad", 0)), ceil_mode=ceil_mode,
    )
    importer.define(node, importer.emit(op))


@converts("GlobalAveragePool")
def _global_average_pool(importer: GraphImporter, node: onnx.NodeProto, attrs: dict) -> None:
    _reject_unknown(attrs, set())
    importer.define(node, importer.emit(nn.GlobalAveragePoolOp(importer.operand(node.input[0]))))


@converts("ReduceMean")
def _reduce_mean(importer: GraphImporter, node: onnx.NodeProto, attrs: dict) -> None:
    """The mean over both spatial axes of an NCHW map, kept as 1 x 1 (a squeeze-excitation's
    pooling): a global average pool."""
    _reject_unknown(attrs, {"axes", "keepdims", "noop_with_empty_axes"})
    shape = nn.shape_of(importer.operand(node.input[0]))
    axes_input = _present(node, 1)  # opset 18: the axes are an input
    axes = importer.constant(axes_input, "axes").tolist() if axes_input else attrs.get("axes")
    spatial = sorted(int(a) % len(shape) for a in axes) if axes and len(shape) == 4 else None
    if spatial != [2, 3] or not int(attrs.get("keepdims", 1)):
        raise NodeError(f"only the mean over axes [2, 3] of an NCHW map, keeping them, is a global average pool "
                         f"(axes {list(axes) if axes else 'all'} of rank {len(shape)})")
    importer.define(node, importer.emit(nn.GlobalAveragePoolOp(importer.operand(node.input[0]))))


@converts("BatchNormalization")
def _batch_norm(importer: GraphImporter, node: onnx.NodeProto, attrs: dict) -> None:
    _reject_unknown(attrs, {"epsilon", "momentum", "training_mode"})
    if int(attrs.get("training_mode", 0)) != 0:
        raise NodeError("unsupported attribute value training_mode=1 (inference only)")
    _reject_extra_outputs(node, "running mean/variance")
    operands = [importer.operand(name) for name in node.input[:5]]
    op = nn.BatchNormOp(*operands, epsilon=float(attrs.get("epsilon", 1e-5)))
    importer.define(node, importer.emit(op))


@converts("Reshape")
def _reshape(importer: GraphImporter, node: onnx.NodeProto, attrs: dict) -> None:
    _reject_unknown(attrs, {"allowzero"})
    x = importer.operand(node.input[0])
    before = nn.shape_of(x)
    requested = [int(d) for d in np.asarray(importer.constant(node.input[1], "shape")).reshape(-1)]
    allow_zero = bool(attrs.get("allowzero", 0))
    after = [before[i] if d == 0 and not allow_zero else d for i, d in enumerate(requested)]
    if after.count(-1) > 1:
        raise NodeError(f"shape {requested} has more than one -1")
    if -1 in after:
        known = math.prod(d for d in after if d != -1)
        after[after.index(-1)] = math.prod(before) // known if known else 0
    importer.define(node, importer.emit(nn.ReshapeOp(x, after)))


@converts("Flatten")
def _flatten(importer: GraphImporter, node: onnx.NodeProto, attrs: dict) -> None:
    _reject_unknown(attrs, {"axis"})
    op = nn.FlattenOp(importer.operand(node.input[0]), int(attrs.get("axis", 1)))
    importer.define(node, importer.emit(op))


@converts("Transpose")
def _transpose(importer: GraphImporter, node: onnx.NodeProto, attrs: dict) -> None:
    _reject_unknown(attrs, {"perm"})
    x = importer.operand(node.input[0])
    rank = len(nn.shape_of(x))
    perm = [int(p) for p in attrs.get("perm", range(rank - 1, -1, -1))]
    if sorted(perm) != list(range(rank)):
        raise NodeError(f"perm {perm} is not a permutation of 0..{rank - 1}")
    importer.define(node, importer.emit(nn.TransposeOp(x, perm)))


# ONNX Resize attributes that change nothing for an integer upsampling in the supported modes, at these values
_RESIZE_NEUTRAL = {"exclude_outside": 0, "antialias": 0, "keep_aspect_ratio_policy": "stretch"}
# identical to half_pixel whenever the output is longer than one pixel, so always for an upsampling
_RESIZE_ALIASES = {"pytorch_half_pixel": "half_pixel"}


@converts("Resize")
def _resize(importer: GraphImporter, node: onnx.NodeProto, attrs: dict) -> None:
    _reject_unknown(attrs, {"mode", "coordinate_transformation_mode", "nearest_mode", "cubic_coeff_a",
                            "extrapolation_value", "axes", *_RESIZE_NEUTRAL})
    for name, neutral in _RESIZE_NEUTRAL.items():
        if name in attrs and _decode(attrs[name]) != neutral:
            raise NodeError(f"unsupported attribute value {name}={_decode(attrs[name])}")
    mode = _decode(attrs.get("mode", "nearest"))
    if mode not in nn.RESIZE_COORDINATE_MODES:
        raise NodeError(f"unsupported attribute value mode={mode} (supported: {', '.join(nn.RESIZE_COORDINATE_MODES)})")
    coordinates = _decode(attrs.get("coordinate_transformation_mode", "half_pixel"))
    coordinates = _RESIZE_ALIASES.get(coordinates, coordinates)
    if coordinates not in nn.RESIZE_COORDINATE_MODES[mode]:
        raise NodeError(
            f"unsupported attribute value coordinate_transformation_mode={coordinates} for mode {mode} "
            f"(supported: {', '.join(nn.RESIZE_COORDINATE_MODES[mode])})"
        )
    nearest_mode = None
    if mode == "nearest":
        nearest_mode = _decode(attrs.get("nearest_mode", "round_prefer_floor"))
        if nearest_mode not in nn.NEAREST_MODES:
            raise NodeError(f"unsupported attribute value nearest_mode={nearest_mode}")
    x = importer.operand(node.input[0])
    shape = nn.shape_of(x)
    axes = [int(a) + len(shape) if int(a) < 0 else int(a) for a in attrs.get("axes", range(len(shape)))]
    out = list(shape)
    sizes, scales = _present(node, 3), _present(node, 2)
    sizes = np.asarray(importer.constant(sizes, "sizes")).reshape(-1) if sizes else np.zeros(0)
    scales = np.asarray(importer.constant(scales, "scales")).reshape(-1) if scales else np.zeros(0)
    for role, values in (("sizes", sizes), ("scales", scales)):
        if values.size and values.size != len(axes):
            raise NodeError(f"{role} {values.tolist()} must have {len(axes)} values")
    if sizes.size:
        for axis, size in zip(axes, sizes):
            out[axis] = int(size)
    elif scales.size:
        for axis, scale in zip(axes, scales):
            if scale != round(scale) or scale < 1:
                raise NodeError(f"scales {scales.tolist()}: only upsampling by integer factors is supported")
            out[axis] = shape[axis] * int(scale)
    else:
        raise NodeError("needs scales or sizes")
    try:
        factors = nn.resize_factors(shape, out)
    except ValueError as error:
        raise NodeError(f"{error}: only upsampling H and W by integer factors is supported") from None
    if mode == "linear" and max(factors) > nn.LINEAR_MAX_FACTOR:
        raise NodeError(f"linear resizing by {list(factors)}: only factors 1 and 2 are supported")
    importer.define(node, importer.emit(nn.ResizeOp(x, factors, mode, coordinates, nearest_mode)))


@converts("Concat")
def _concat(importer: GraphImporter, node: onnx.NodeProto, attrs: dict) -> None:
    _reject_unknown(attrs, {"axis"})
    inputs = [importer.operand(name) for name in node.input if name]
    importer.define(node, importer.emit(nn.ConcatOp(inputs, int(attrs["axis"]))))


def _axes(importer: GraphImporter, node: onnx.NodeProto, attrs: dict) -> list[int] | None:
    if "axes" in attrs:  # before opset 13
        return [int(a) for a in attrs["axes"]]
    name = _present(node, 1)
    if name is None:
        return None
    return [int(a) for a in np.asarray(importer.constant(name, "axes")).reshape(-1)]


@converts("Squeeze")
def _squeeze(importer: GraphImporter, node: onnx.NodeProto, attrs: dict) -> None:
    _reject_unknown(attrs, {"axes"})
    x = importer.operand(node.input[0])
    shape = nn.shape_of(x)
    axes = _axes(importer, node, attrs)
    if axes is None:
        axes = [i for i, d in enumerate(shape) if d == 1]
    axes = sorted({a + len(shape) if a < 0 else a for a in axes})
    if any(not 0 <= a < len(shape) or shape[a] != 1 for a in axes):
        raise NodeError(f"cannot squeeze axes {axes} of shape {list(shape)}")
    importer.define(node, importer.emit(nn.ReshapeOp(x, [d for i, d in enumerate(shape) if i not in axes])))


@converts("Unsqueeze")
def _unsqueeze(importer: GraphImporter, node: onnx.NodeProto, attrs: dict) -> None:
    _reject_unknown(attrs, {"axes"})
    x = importer.operand(node.input[0])
    shape = list(nn.shape_of(x))
    axes = _axes(importer, node, attrs)
    if axes is None:
        raise NodeError("axes are required")
    rank = len(shape) + len(axes)
    axes = sorted(a + rank if a < 0 else a for a in axes)
    if len(set(axes)) != len(axes) or any(not 0 <= a < rank for a in axes):
        raise NodeError(f"invalid axes {axes} for output rank {rank}")
    for a in axes:
        shape.insert(a, 1)
    importer.define(node, importer.emit(nn.ReshapeOp(x, shape)))
