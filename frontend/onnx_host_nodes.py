"""ONNX nodes the front end does not model, kept whole for the host: `nn.onnx` ops.

Vela leaves what the NPU cannot run to the CPU runtime, and onnxruntime's execution
providers partition a graph the same way; xnpu never refuses a valid node either. A node
with no `nn` equivalent (an op or domain the importer does not know, control flow with
its subgraphs, LSTM, TopK, or a known op with an attribute value the `nn` op lacks)
becomes one `nn.onnx` op holding a small ONNX model of that node alone:

- the node itself, subgraphs included;
- every constant it reads (initializers, `Constant` nodes, folded shape computations) as
  an initializer;
- one graph input per other value it reads, in order: its inputs, then the values its
  subgraphs read from the enclosing graphs (ONNX lets a subgraph name any value of an
  outer scope; alone in its model, those become explicit inputs);
- one graph output per output it produces, with the type shape inference gave it.

onnxruntime loads the model at import (one error line when it cannot) and runs it at
every level (semantics/onnx_runtime.py). Values of any element type ONNX has a numpy
counterpart of pass between such ops and the program's edges (int64, bool, int32, ...);
ONNX integers are signed or unsigned types in the IR (`si64`, `ui8`), so they never pass
for the fixed level's signless codes.
"""

from __future__ import annotations

import base64
from collections.abc import Iterable, Mapping, Sequence

import numpy as np
import onnx
from onnx import TensorProto, numpy_helper
from xdsl.dialects.builtin import (
    DYNAMIC_INDEX,
    Float16Type,
    Float32Type,
    Float64Type,
    IntegerType,
    Signedness,
    TensorType,
    f16,
    f32,
    f64,
    i1,
)
from xdsl.ir import Attribute, SSAValue

from xnpu.core.errors import XnpuError, first_line
from xnpu.dialects.nn import OnnxOp, OnnxValueType
from xnpu.semantics import onnx_runtime

# ONNX element types the IR holds, and their IR element types
_ELEMENT_TYPES: dict[int, Attribute] = {
    TensorProto.FLOAT: f32,
    TensorProto.DOUBLE: f64,
    TensorProto.FLOAT16: f16,
    TensorProto.BOOL: i1,
    **{code: IntegerType(bits, Signedness.SIGNED) for code, bits in
       ((TensorProto.INT8, 8), (TensorProto.INT16, 16), (TensorProto.INT32, 32), (TensorProto.INT64, 64))},
    **{code: IntegerType(bits, Signedness.UNSIGNED) for code, bits in
       ((TensorProto.UINT8, 8), (TensorProto.UINT16, 16), (TensorProto.UINT32, 32), (TensorProto.UINT64, 64))},
}


def element_type(elem_type: int) -> Attribute | None:
    """The IR element type of an ONNX element type (None: the IR has none, e.g. STRING)."""
    return _ELEMENT_TYPES.get(elem_type)


def onnx_element_type(attr: Attribute) -> int:
    """The ONNX element type of an IR element type (fixed's signless codes map to signed)."""
    if isinstance(attr, Float32Type):
        return TensorProto.FLOAT
    if isinstance(attr, Float64Type):
        return TensorProto.DOUBLE
    if isinstance(attr, Float16Type):
        return TensorProto.FLOAT16
    if isinstance(attr, IntegerType):
        width = attr.width.data
        if width == 1:
            return TensorProto.BOOL
        unsigned = attr.signedness.data == Signedness.UNSIGNED
        codes = {8: (TensorProto.INT8, TensorProto.UINT8), 16: (TensorProto.INT16, TensorProto.UINT16),
                 32: (TensorProto.INT32, TensorProto.UINT32), 64: (TensorProto.INT64, TensorProto.UINT64)}
        if width in codes:
            return codes[width][unsigned]
    raise ValueError(f"element type {attr} has no ONNX counterpart")


def tensor_type(elem_type: int, dims: Sequence[int | None]) -> TensorType:
    """A tensor type of the IR; an unknown dimension (None) is dynamic."""
    element = element_type(elem_type)
    assert element is not None
    return TensorType(element, [DYNAMIC_INDEX if d is None else int(d) for d in dims])


def describe(type_proto: onnx.TypeProto) -> str:
    """An ONNX type in onnxruntime's words: tensor(float), seq(tensor(string)), optional(...)."""
    kind = type_proto.WhichOneof("value")
    if kind == "tensor_type":
        return f"tensor({TensorProto.DataType.Name(type_proto.tensor_type.elem_type).lower()})"
    if kind == "sequence_type":
        return f"seq({describe(type_proto.sequence_type.elem_type)})"
    if kind == "optional_type":
        return f"optional({describe(type_proto.optional_type.elem_type)})"
    if kind == "map_type":
        key = TensorProto.DataType.Name(type_proto.map_type.key_type).lower()
        return f"map({key},{describe(type_proto.map_type.value_type)})"
    return kind or "undefined"


def ir_type(type_proto: onnx.TypeProto) -> Attribute | None:
    """The IR type of a value of an ONNX type: a tensor type where numpy holds the elements
    (dimensions it does not know dynamic), else an opaque `!nn.onnx_value`; None for a tensor
    whose element type or rank is unknown."""
    if type_proto.WhichOneof("value") == "tensor_type":
        tensor = type_proto.tensor_type
        if not tensor.elem_type:
            return None
        if element_type(tensor.elem_type) is not None:
            if not tensor.HasField("shape"):
                return None
            dims = [d.dim_value if d.HasField("dim_value") else None for d in tensor.shape.dim]
            return tensor_type(tensor.elem_type, dims)
    return OnnxValueType(describe(type_proto), base64.b64encode(type_proto.SerializeToString()).decode("ascii"))


def _value_info(name: str, type_: Attribute) -> onnx.ValueInfoProto:
    if isinstance(type_, OnnxValueType):
        return onnx.helper.make_value_info(name, onnx.TypeProto.FromString(base64.b64decode(type_.type_proto.data)))
    assert isinstance(type_, TensorType)
    dims = [None if d == DYNAMIC_INDEX else d for d in type_.get_shape()]
    return onnx.helper.make_tensor_value_info(name, onnx_element_type(type_.get_element_type()), dims)


def _subgraphs(node: onnx.NodeProto) -> Iterable[onnx.GraphProto]:
    for attribute in node.attribute:
        if attribute.type == onnx.AttributeProto.GRAPH:
            yield attribute.g
        elif attribute.type == onnx.AttributeProto.GRAPHS:
            yield from attribute.graphs


def _graph_reads(graph: onnx.GraphProto) -> list[str]:
    """Names a (sub)graph reads that it does not define: its reads from enclosing scopes."""
    defined = {value.name for value in graph.input} | {tensor.name for tensor in graph.initializer}
    defined |= {tensor.values.name for tensor in graph.sparse_initializer}
    reads: list[str] = []
    for node in graph.node:
        for name in (*node.input, *subgraph_reads(node)):
            if name and name not in defined and name not in reads:
                reads.append(name)
        defined.update(node.output)
    for output in graph.output:
        if output.name not in defined and output.name not in reads:
            reads.append(output.name)
    return reads


def subgraph_reads(node: onnx.NodeProto) -> list[str]:
    """The values of enclosing graphs that `node`'s subgraphs read (outer-scope references)."""
    reads: list[str] = []
    for graph in _subgraphs(node):
        reads.extend(name for name in _graph_reads(graph) if name not in reads)
    return reads


def node_reads(node: onnx.NodeProto) -> list[str]:
    """Every value `node` reads, once each: its inputs, then its subgraphs' outer-scope reads."""
    reads: list[str] = []
    for name in (*node.input, *subgraph_reads(node)):
        if name and name not in reads:
            reads.append(name)
    return reads


def node_model(
    node: onnx.NodeProto,
    inputs: Sequence[tuple[str, TensorType]],
    constants: Sequence[tuple[str, np.ndarray]],
    outputs: Sequence[tuple[str, TensorType | None]],
    source: onnx.ModelProto,
) -> bytes:
    """The serialized model of `node` alone: `inputs` as graph inputs, `constants` as
    initializers, `outputs` as graph outputs (untyped where the type is None); the opsets,
    IR version and local functions of `source`, the model it comes from."""
    graph = onnx.helper.make_graph(
        [node],
        node.name or node.op_type,
        [_value_info(name, type_) for name, type_ in inputs],
        [_value_info(name, type_) if type_ is not None else onnx.helper.make_value_info(name, onnx.TypeProto())
         for name, type_ in outputs],
        [numpy_helper.from_array(np.asarray(array), name) for name, array in constants],
    )
    model = onnx.helper.make_model(graph, opset_imports=list(source.opset_import), ir_version=source.ir_version)
    model.functions.extend(source.functions)
    return model.SerializeToString()


_ORT_ELEMENT_TYPES = {f"tensor({TensorProto.DataType.Name(code).lower()})": code
                      for code in TensorProto.DataType.values() if code}


def _type_from_ort(text: str) -> onnx.TypeProto:
    """onnxruntime's words for a type (`seq(tensor(float))`) as an ONNX TypeProto."""
    type_proto = onnx.TypeProto()
    if text in _ORT_ELEMENT_TYPES:
        type_proto.tensor_type.elem_type = _ORT_ELEMENT_TYPES[text]
        return type_proto
    for kind, field_name in (("seq(", "sequence_type"), ("optional(", "optional_type")):
        if text.startswith(kind) and text.endswith(")"):
            getattr(type_proto, field_name).elem_type.CopyFrom(_type_from_ort(text[len(kind):-1]))
            return type_proto
    if text.startswith("map(") and text.endswith(")"):
        key, _, value = text[4:-1].partition(",")
        type_proto.map_type.key_type = _ORT_ELEMENT_TYPES[f"tensor({key})"]
        type_proto.map_type.value_type.CopyFrom(_type_from_ort(value))
        return type_proto
    raise ValueError(f"onnxruntime type {text} is not known")


def output_types(model: bytes, inputs: Sequence[tuple[str, Attribute]]) -> list[Attribute]:
    """Each output's IR type as onnxruntime infers it for the model of one node whose outputs
    shape inference left without a type or rank; a dimension it cannot tell is dynamic.
    onnxruntime says [] both for a scalar and for a rank it cannot tell: there, one run on
    zeros of the (static) inputs tells the rank. XnpuError when the rank depends on the data
    (an integer vector input may be axes, whose values decide it)."""
    import onnxruntime

    options = onnxruntime.SessionOptions()
    options.log_severity_level = 4  # its own log lines: a failure is one XnpuError line instead
    session = onnxruntime.InferenceSession(model, options, providers=["CPUExecutionProvider"])
    found: list[Attribute] = []
    ran = None
    for index, output in enumerate(session.get_outputs()):
        type_proto = _type_from_ort(output.type)
        shape = output.shape
        if not (type_proto.WhichOneof("value") == "tensor_type" and element_type(type_proto.tensor_type.elem_type)):
            found.append(ir_type(type_proto))
            continue
        if not shape:
            if ran is None:
                # an integer vector may be axes or a shape, which zeros would stand for wrongly (a
                # scalar is a count or a bound: a Loop's trip count, a Range's limit)
                if any(not isinstance(t, TensorType) or DYNAMIC_INDEX in t.get_shape()
                       or (t.get_shape() and not isinstance(t.get_element_type(), Float16Type | Float32Type | Float64Type))
                       for _, t in inputs):
                    raise XnpuError(f"the rank of output '{output.name}' depends on the data (the values or shapes "
                                    "of its inputs); xnpu needs at least its rank")
                ran = session.run(None, {name: np.zeros(t.get_shape(), dtype=onnx.helper.tensor_dtype_to_np_dtype(
                    onnx_element_type(t.get_element_type()))) for name, t in inputs})
            shape = [None] * np.ndim(ran[index])
        found.append(tensor_type(type_proto.tensor_type.elem_type,
                                 [d if isinstance(d, int) and d >= 0 else None for d in shape]))
    return found


def host_op(
    node: onnx.NodeProto,
    name: str,
    op_type: str,
    reason: str,
    values: Mapping[str, SSAValue],
    constants: Mapping[str, np.ndarray],
    types: Mapping[str, onnx.TypeProto],
    source: onnx.ModelProto,
) -> tuple[OnnxOp, list[str]]:
    """The nn.onnx op of `node` (named `name`): its operands are the `values` it reads, the
    `constants` it reads are its model's initializers, its result types are the `types` shape
    inference gave (onnxruntime's where those lack a type or rank); also the ONNX names of its
    results. One XnpuError line naming the node when onnxruntime cannot load it."""
    inputs: list[tuple[str, Attribute]] = []
    operands: list[SSAValue] = []
    initializers: list[tuple[str, np.ndarray]] = []
    for read in node_reads(node):
        if read in values:
            operands.append(values[read])
            inputs.append((read, values[read].type))
        elif read in constants:
            initializers.append((read, constants[read]))
        else:
            raise XnpuError(f"ONNX node '{name}' ({op_type}): input '{read}' is not produced by any node, "
                            "input or initializer")
    outputs = [(output, ir_type(types[output]) if output in types else None) for output in node.output if output]
    try:
        if any(type_ is None for _, type_ in outputs):  # onnxruntime tells what shape inference could not
            draft = node_model(node, inputs, initializers, outputs, source)
            outputs = [(output, type_ or probed) for (output, type_), probed in zip(outputs, output_types(draft, inputs))]
        model = node_model(node, inputs, initializers, outputs, source)
        onnx_runtime.check_model(model)
    except XnpuError as error:
        raise XnpuError(f"ONNX node '{name}' ({op_type}): {error}") from None
    except Exception as error:  # onnxruntime's own error types, from the draft's session
        raise XnpuError(f"ONNX node '{name}' ({op_type}): onnxruntime cannot load it: {first_line(error)}") from None
    op = OnnxOp(op_type, operands, [type_ for _, type_ in outputs], model, reason)
    return op, [output for output, _ in outputs]
