"""ONNX -> `nn` dialect: the front end.

The model is shape-inferred first; every value the graph computes must come out with a
static shape, because every level below works on static shapes. Each ONNX node becomes one
`nn` op (a few become a short sequence) located at `loc("<node name>")`; unnamed nodes get
`<OpType>_<index>`. Initializers and `Constant` nodes are held as numpy arrays and become
`nn.constant` ops only where a float operand needs them, so integer shape tensors
(Reshape's `shape`, Clip's bounds) never appear in the IR. `Identity` and inference
`Dropout` are forwarded away.

A node the `nn` dialect cannot express (an op or domain it lacks, an attribute value its
op does not take, a value of another element type than float32) is kept whole for the
host: an `nn.onnx` op carrying the node as a small ONNX model that onnxruntime runs
(frontend/onnx_host_nodes.py), with the converter's words as the reason. A model
onnxruntime cannot run either is an `XnpuError` whose one line names the node, its op type
and the reason.
"""

from __future__ import annotations

import os
from collections.abc import Mapping, Sequence
from pathlib import Path

import numpy as np
import onnx
from onnx import numpy_helper
from xdsl.dialects import func
from xdsl.dialects.builtin import (
    FunctionType,
    ModuleOp,
    NameLoc,
    NoneAttr,
    StringAttr,
)
from xdsl.ir import Block, Operation, OpResult, Region, SSAValue
from xdsl.utils.exceptions import DiagnosticException, VerifyException

from xnpu.core.errors import XnpuError, first_line
from xnpu.core.files import check_input_file
from xnpu.dialects import nn
from xnpu.frontend import onnx_host_nodes
from xnpu.frontend.onnx_converters import (
    CONVERTERS,
    FLOAT,
    SHAPE_FREE_OPS,
    NodeError,
    elem_type_name,
    name_attrs,
    node_attributes,
    ssa_name,
    tensor_array,
)
from xnpu.frontend.onnx_opsets import upgraded
from xnpu.frontend.onnx_shapes import fold_shape_computations, infer_shapes, static_input_shapes
from xnpu.ir.onnx_origin import node_location_name, record_origin


def _load(source: str | os.PathLike[str] | onnx.ModelProto) -> onnx.ModelProto:
    if isinstance(source, onnx.ModelProto):
        return source
    path = Path(source)
    check_input_file(path)
    try:
        model = onnx.load(str(path))
    except Exception as error:  # protobuf raises several unrelated types for garbage input
        raise XnpuError(f"{path}: not an ONNX model ({first_line(error)})") from None
    # protobuf happily decodes many non-ONNX byte strings into an almost empty message
    if model.ir_version <= 0 or not model.HasField("graph"):
        raise XnpuError(f"{path}: not an ONNX model (no graph or IR version)")
    return model


def _infer_shapes(model: onnx.ModelProto) -> onnx.ModelProto:
    """Shape inference, strict where it can be; where strict inference fails (a node of a domain
    onnx has no schema for, one onnxruntime adds; a function body it cannot check), the
    lenient one, and onnxruntime, which loads every node the front end keeps opaque, judges."""
    try:
        return infer_shapes(model, check_type=True, strict_mode=True, data_prop=True)
    except Exception:
        pass
    try:
        return infer_shapes(model, data_prop=True)
    except Exception as error:
        raise XnpuError(f"ONNX shape inference failed: {first_line(error)}") from None


class TensorInfo:
    """Element type and shape of one ONNX value; a dimension is None where it is not static."""

    __slots__ = ("dims_text", "elem_type", "shape")

    def __init__(self, value_info: onnx.ValueInfoProto):
        tensor = value_info.type.tensor_type
        self.elem_type = tensor.elem_type
        if not tensor.HasField("shape"):
            self.shape, self.dims_text = None, "unknown rank"
            return
        dims: list[int | None] = []
        text: list[str] = []
        for dim in tensor.shape.dim:
            if dim.HasField("dim_value"):
                dims.append(dim.dim_value)
                text.append(str(dim.dim_value))
            else:
                dims.append(None)
                text.append(dim.dim_param or "?")
        self.shape = tuple(dims)
        self.dims_text = "[" + ", ".join(text) + "]"

    @property
    def is_static(self) -> bool:
        return self.shape is not None and all(d is not None for d in self.shape)


class GraphImporter:
    def __init__(self, model: onnx.ModelProto, opset: int):
        self.opset = opset
        self.model = model
        graph = model.graph
        self.infos: dict[str, TensorInfo] = {}
        self.types: dict[str, onnx.TypeProto] = {}  # every value's ONNX type, tensors or not
        for value_info in (*graph.input, *graph.value_info, *graph.output):
            self.infos[value_info.name] = TensorInfo(value_info)
            self.types[value_info.name] = value_info.type
        # name -> (array, location name): initializers and Constant nodes, folded
        self.constants: dict[str, tuple[np.ndarray, str]] = {}
        for tensor in graph.initializer:
            self.constants[tensor.name] = (tensor_array(tensor, f"initializer '{tensor.name}'"), tensor.name)
        if len(graph.sparse_initializer):
            raise XnpuError("sparse initializers are not supported")
        self.values: dict[str, SSAValue] = {}
        self.ops: list[Operation] = []
        self.location = NameLoc(StringAttr("?"), NoneAttr())

    # ----------------------------------------------------------------------------------
    # Values

    def operand(self, name: str) -> SSAValue:
        """The SSA value of ONNX tensor `name`, materializing a constant on first use."""
        if name in self.values:
            return self.values[name]
        if name not in self.constants:
            raise NodeError(f"input '{name}' is not produced by any node, input or initializer")
        array, origin = self.constants[name]
        if array.dtype != np.float32:
            raise NodeError(f"constant '{name}' has dtype {array.dtype}; only float32 tensors are supported")
        op = nn.ConstantOp(array)
        op.location = NameLoc(StringAttr(origin), NoneAttr())
        self.ops.append(op)
        self.values[name] = op.result
        return op.result

    def constant(self, name: str, role: str) -> np.ndarray:
        if name not in self.constants:
            raise NodeError(f"{role} '{name}' must be a constant (an initializer or Constant node)")
        return self.constants[name][0]

    def emit(self, op: Operation) -> SSAValue:
        op.location = self.location
        self.ops.append(op)
        return op.results[0]

    # ----------------------------------------------------------------------------------
    # The graph

    def import_graph(self, graph: onnx.GraphProto) -> ModuleOp:
        arg_types, arg_names = [], []
        for value_info in graph.input:
            if value_info.name in self.constants:
                continue  # pre-IR-4 models list initializers as inputs
            info = self.infos[value_info.name]
            opaque = onnx_host_nodes.ir_type(value_info.type)
            if isinstance(opaque, nn.OnnxValueType):  # a string tensor, a sequence: for host ops only
                arg_types.append(opaque)
                arg_names.append(value_info.name)
                continue
            if opaque is None and onnx_host_nodes.element_type(info.elem_type) is None:
                raise XnpuError(f"graph input '{value_info.name}' has no element type "
                                f"({onnx_host_nodes.describe(value_info.type)})")
            if not info.is_static:
                raise XnpuError(
                    f"graph input '{value_info.name}' has a dynamic shape {info.dims_text}; "
                    "xnpu needs static shapes (fix the input shape before importing)"
                )
            arg_types.append(onnx_host_nodes.tensor_type(info.elem_type, info.shape))
            arg_names.append(value_info.name)
        block = Block(arg_types=arg_types)
        for name, arg in zip(arg_names, block.args):
            self.values[name] = arg
            arg.name_hint = ssa_name(name)

        for index, node in enumerate(graph.node):
            self.import_node(node, index)

        results, result_names = [], []
        for value_info in graph.output:
            try:
                if value_info.name in self.constants and self.constants[value_info.name][0].dtype != np.float32:
                    self.constant_output(value_info.name)
                results.append(self.operand(value_info.name))
            except NodeError as error:
                raise XnpuError(f"graph output '{value_info.name}': {error}") from None
            result_names.append(value_info.name)
        block.add_ops(self.ops)
        block.add_op(func.ReturnOp(*results))

        function = func.FuncOp(
            "main",
            FunctionType.from_lists(arg_types, [r.type for r in results]),
            Region(block),
            arg_attrs=name_attrs(arg_names),
            res_attrs=name_attrs(result_names),
        )
        return ModuleOp([function])

    def import_node(self, node: onnx.NodeProto, index: int) -> None:
        name = node_location_name(node, index)
        op_type = node.op_type if node.domain in ("", "ai.onnx") else f"{node.domain}.{node.op_type}"
        self.location = NameLoc(StringAttr(name), NoneAttr())
        converter = CONVERTERS.get(op_type)
        if converter is None:
            self.import_host_node(node, name, op_type, f"ONNX op '{op_type}' has no nn equivalent")
            return
        opaque = next((value.type for value in map(self.values.get, node.input)
                       if value is not None and isinstance(value.type, nn.OnnxValueType)), None)
        if opaque is not None:  # nn ops take tensors numpy holds; a bfloat16 input, a sequence: onnxruntime's
            self.import_host_node(node, name, op_type, f"ONNX {op_type}: an input is {opaque.description.data}")
            return
        first_op = len(self.ops)
        try:
            _check_against_schema(node, self.opset)
            # converted first: a converter says best why an output shape is unknown (a non-constant parameter)
            converter(self, node, node_attributes(node))
            if op_type not in SHAPE_FREE_OPS:
                self.check_outputs(node)
            self.check_results(node, self.ops[first_op:])
        except (NodeError, VerifyException, DiagnosticException, ValueError) as error:
            # ValueError: an nn op's constructor refusing its operands (shapes that do not
            # broadcast); onnxruntime then judges the node as it judges any host node
            self.roll_back(first_op)
            self.import_host_node(node, name, op_type, f"ONNX {op_type}: {first_line(error)}")

    def constant_output(self, name: str) -> None:
        """A program output the graph folded to a constant of another type than float32 (a
        Shape's int64): an ONNX Constant node, for onnxruntime."""
        array, origin = self.constants[name]
        node = onnx.helper.make_node("Constant", [], [name], name=origin, value=numpy_helper.from_array(array, name))
        self.location = NameLoc(StringAttr(origin), NoneAttr())
        self.infos[name] = TensorInfo(onnx.helper.make_tensor_value_info(
            name, onnx.helper.np_dtype_to_tensor_dtype(array.dtype), array.shape))
        self.import_host_node(node, origin, "Constant", f"a constant program output of type {array.dtype}")

    def roll_back(self, first_op: int) -> None:
        """Forget the ops a failed converter made (and the values they defined)."""
        dropped = self.ops[first_op:]
        del self.ops[first_op:]
        if not dropped:
            return
        owners = set(dropped)
        for key in [key for key, value in self.values.items() if isinstance(value, OpResult) and value.op in owners]:
            del self.values[key]
        for op in reversed(dropped):
            op.drop_all_references()

    def import_host_node(self, node: onnx.NodeProto, name: str, op_type: str, reason: str) -> None:
        """`node` as one nn.onnx op, for onnxruntime to run (frontend/onnx_host_nodes.py)."""
        constants = {key: array for key, (array, _) in self.constants.items()}
        op, outputs = onnx_host_nodes.host_op(node, name, op_type, reason, self.values, constants, self.types, self.model)
        op.location = self.location
        self.ops.append(op)
        self.values.update(zip(outputs, op.results))

    def check_outputs(self, node: onnx.NodeProto) -> None:
        for output in node.output[:1]:
            info = self.infos.get(output)
            if info is None or not info.is_static:
                dims = "unknown shape" if info is None else f"dynamic shape {info.dims_text}"
                raise NodeError(f"output '{output}' has {dims}; xnpu needs static shapes")
            if info.elem_type != FLOAT:
                raise NodeError(
                    f"output '{output}' has element type {elem_type_name(info.elem_type)}; "
                    "only float32 tensors are supported"
                )

    def check_results(self, node: onnx.NodeProto, new_ops: Sequence[Operation]) -> None:
        for op in new_ops:
            op.verify()
        if not node.output or node.op_type in SHAPE_FREE_OPS:
            return
        output = node.output[0]
        ours = nn.shape_of(self.values[output])
        inferred = self.infos[output].shape
        if tuple(ours) != tuple(inferred):
            raise NodeError(
                f"nn computes shape {list(ours)} for '{output}' but ONNX shape inference gives {list(inferred)}"
            )

    def define(self, node: onnx.NodeProto, value: SSAValue) -> None:
        self.values[node.output[0]] = value


def _check_against_schema(node: onnx.NodeProto, opset: int) -> None:
    """Each attribute has the type the op's schema declares (shape inference does not check
    it, and a converter would fail on `group=[1, 2]` with a TypeError), and the node has as many
    inputs and outputs as the schema allows (a Gemm of one input raised IndexError)."""
    try:
        schema = onnx.defs.get_schema(node.op_type, opset, node.domain)
    except onnx.defs.SchemaError:
        return
    for what, count, least, most in (("inputs", len(node.input), schema.min_input, schema.max_input),
                                      ("outputs", len(node.output), schema.min_output, schema.max_output)):
        if not least <= count <= most:
            takes = f"{least}" if most == least else f"{least} or more" if most >= 1 << 16 else f"{least} to {most}"
            raise NodeError(f"{count} {what}; the op takes {takes}")
    for attribute in node.attribute:
        declared = schema.attributes.get(attribute.name)
        if declared is not None and attribute.type != declared.type.value:
            names = dict(onnx.AttributeProto.AttributeType.items())
            given = next((name for name, value in names.items() if value == attribute.type), str(attribute.type))
            raise NodeError(f"attribute '{attribute.name}' must be {declared.type.name}, got {given}")


# the ops the nn dialect models (every other node is imported as nn.onnx, for onnxruntime)
SUPPORTED_OPS = frozenset(CONVERTERS)


def import_onnx(
    source: str | os.PathLike[str] | onnx.ModelProto,
    input_shapes: Mapping[str, Sequence[int]] | None = None,
) -> ModuleOp:
    """Import an ONNX model (a file path or a ModelProto) as a module in the `nn` dialect.

    `input_shapes` ({input name: shape}) fixes the shapes of graph inputs; a dynamic batch
    dimension is otherwise 1 (with an XnpuNote warning) and any other dynamic dimension an
    error. Shape computations on the now static shapes are folded away before import. A
    node the nn dialect cannot express becomes an nn.onnx op, run by onnxruntime.
    """
    model, opset = upgraded(_load(source))
    model = fold_shape_computations(static_input_shapes(model, input_shapes))
    inferred = _infer_shapes(model)
    module = GraphImporter(inferred, opset).import_graph(inferred.graph)
    record_origin(module, inferred)  # calibration runs this model on onnxruntime (transforms/calibrate_onnx.py)
    return module
