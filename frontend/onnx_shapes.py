"""Static shapes for the ONNX front end: input shapes, then shape computations folded away.

Exporters write models for any batch size and often for any image size: graph inputs have
symbolic dimensions (`N x 3 x H x W`), and the graph computes what it needs from them at
run time (`Shape -> Gather -> Unsqueeze -> Concat -> Reshape` for a flatten). Every level
below the importer works on static shapes, so before import

1. `static_input_shapes` fixes every graph input's shape: from the user's `input_shapes`
   (`--input-shape NAME=d0,d1,...`, like onnxsim's `--overwrite-input-shape`), a dynamic
   batch dimension to 1 (with a note), anything else dynamic is an error naming the flag;
2. `fold_shape_computations` evaluates the nodes that only compute on constants and on
   static shapes (Shape, Size, Gather, Concat, Cast, Slice, int64 arithmetic, ...) with
   onnx's own `ReferenceEvaluator` and replaces them by initializers, so a Reshape's target
   or a Resize's sizes are constants the importer can read. It repeats until nothing more
   folds (a Pad's folded pads give its output a static shape, whose Shape folds next), and
   an `If` whose condition folded (silero's batch-size checks) becomes the branch it takes.
   Each node's result is checked against the memory budget (xnpu.core.budget) from its
   inputs before it is computed: a 172-byte model's ConstantOfShape of 1x1x16000x16000 took
   4 GB, an Expand to 30000x30000 7 GB and then a SIGSEGV.
"""

from __future__ import annotations

import inspect
import math
import warnings
from collections.abc import Mapping, Sequence

import numpy as np
import onnx
from onnx import numpy_helper

from xnpu.core.budget import check_tensor, check_total, over_total_budget, shape_text, size_text
from xnpu.core.errors import XnpuError, XnpuNote
from xnpu.frontend.input_shapes import INPUT_SHAPE_FLAG
from xnpu.frontend.onnx_host_nodes import node_reads

# Evaluated when every input is known: the ops that build shapes, indices and parameters.
STRUCTURAL_OPS = frozenset({
    "Shape", "Size", "Gather", "Unsqueeze", "Squeeze", "Concat", "Cast", "Slice", "ConstantOfShape",
    "Range", "Expand", "Identity", "Reshape", "Flatten", "Transpose",
})
# Evaluated when every input is known and one of them is shape data (not a float weight):
# on float weights alone they are float ops the importer keeps.
ARITHMETIC_OPS = frozenset({
    "Add", "Sub", "Mul", "Div", "Neg", "Abs", "Floor", "Ceil", "Min", "Max", "Mod",
    "Equal", "Less", "Greater", "Not", "Where", "ReduceProd",
})
FOLDABLE_OPS = STRUCTURAL_OPS | ARITHMETIC_OPS
# need only their input's (static) shape, not its value
SHAPE_READERS = frozenset({"Shape", "Size"})


def _dims(value_info: onnx.ValueInfoProto) -> list[int | str | None] | None:
    """Each dimension's size, or its symbolic name, or None when unnamed; None for an unknown rank."""
    tensor = value_info.type.tensor_type
    if not tensor.HasField("shape"):
        return None
    return [d.dim_value if d.HasField("dim_value") else (d.dim_param or None) for d in tensor.shape.dim]


def _dims_text(dims: Sequence[int | str | None]) -> str:
    return "[" + ", ".join("?" if d is None else str(d) for d in dims) + "]"


def _flag_example(name: str, dims: Sequence[int | str | None]) -> str:
    return f"{INPUT_SHAPE_FLAG} {name}=" + ",".join(str(d) if isinstance(d, int) else "<" + (d or "?") + ">" for d in dims)


def static_input_shapes(model: onnx.ModelProto, input_shapes: Mapping[str, Sequence[int]] | None) -> onnx.ModelProto:
    """`model` with every graph input's shape static (a copy when anything changes)."""
    input_shapes = dict(input_shapes or {})
    initializers = {t.name for t in model.graph.initializer}
    inputs = [i for i in model.graph.input if i.name not in initializers]
    names = [i.name for i in inputs]
    for name in input_shapes:
        if name not in names:
            raise XnpuError(
                f"{INPUT_SHAPE_FLAG} names '{name}', which is not a graph input (inputs: {', '.join(names) or 'none'})"
            )
    fixed: dict[str, list[int]] = {}
    for value_info in inputs:
        if value_info.type.WhichOneof("value") != "tensor_type":
            continue  # a sequence, map or optional: the importer says it holds tensors only
        name, dims = value_info.name, _dims(value_info)
        if name in input_shapes:
            shape = [int(d) for d in input_shapes[name]]
            if any(d < 1 for d in shape):
                raise XnpuError(f"{INPUT_SHAPE_FLAG} {name}: dimensions must be positive, got {shape}")
            if dims is not None and len(shape) != len(dims):
                raise XnpuError(
                    f"{INPUT_SHAPE_FLAG} {name}={','.join(map(str, shape))} has rank {len(shape)}, "
                    f"but graph input '{name}' has rank {len(dims)} {_dims_text(dims)}"
                )
            if dims is not None and all(isinstance(d, int) for d in dims):
                said = "repeats" if shape == dims else "overrides"
                warnings.warn(f"{INPUT_SHAPE_FLAG} {name}={','.join(map(str, shape))} {said} the static shape "
                              f"{_dims_text(dims)} of graph input '{name}'", XnpuNote, stacklevel=3)
            if dims is None or shape != dims:
                fixed[name] = shape
            continue
        if dims is None:
            raise XnpuError(
                f"graph input '{name}' has an unknown rank; give its shape with {INPUT_SHAPE_FLAG} {name}=d0,d1,..."
            )
        dynamic = [axis for axis, d in enumerate(dims) if not isinstance(d, int)]
        if not dynamic:
            continue
        if dynamic == [0] and len(dims) >= 2:
            warnings.warn(
                f"graph input '{name}' has a dynamic batch dimension {_dims_text(dims)}: importing it with batch 1 "
                f"({INPUT_SHAPE_FLAG} {name}=... chooses another shape)",
                XnpuNote,
                stacklevel=3,
            )
            fixed[name] = [1, *dims[1:]]  # type: ignore[list-item]
            continue
        suggestion = [1 if axis == 0 and len(dims) >= 2 and axis in dynamic else d for axis, d in enumerate(dims)]
        raise XnpuError(
            f"graph input '{name}' has a dynamic shape {_dims_text(dims)}; give it with {_flag_example(name, suggestion)}"
        )
    if not fixed:
        return model
    copy = onnx.ModelProto()
    copy.CopyFrom(model)
    graph = copy.graph
    for value_info in graph.input:
        if value_info.name in fixed:
            shape = value_info.type.tensor_type.shape
            shape.ClearField("dim")
            for size in fixed[value_info.name]:
                shape.dim.add().dim_value = size
    # shapes recorded for the old input shapes would contradict the new ones: inference redoes them
    del graph.value_info[:]
    for value_info in graph.output:
        value_info.type.tensor_type.ClearField("shape")
    return copy


# Float initializers above this many bytes are weights: shape inference reads only their type
# and dims, and copying their data into it (it serializes the model) cost more than inferring.
_WEIGHT_BYTES = 4096


def infer_shapes(model: onnx.ModelProto, **options) -> onnx.ModelProto:
    """onnx.shape_inference.infer_shapes(model, **options), run on a copy of the model whose
    float weights carry no data (resnet18_like: 0.28 s -> 0.04 s); its value_info and output
    types are put on a copy of `model` with every weight (the model itself is not changed)."""
    skeleton = onnx.ModelProto()
    skeleton.CopyFrom(model)
    for tensor in skeleton.graph.initializer:
        if _is_float(tensor) and tensor.ByteSize() > _WEIGHT_BYTES:
            for field in ("raw_data", "float_data", "double_data", "int32_data"):
                tensor.ClearField(field)
    inferred = onnx.shape_inference.infer_shapes(skeleton, **options)
    result = onnx.ModelProto()
    result.CopyFrom(model)
    del result.graph.value_info[:]
    result.graph.value_info.extend(inferred.graph.value_info)
    del result.graph.output[:]
    result.graph.output.extend(inferred.graph.output)
    return result


def _static_shapes(model: onnx.ModelProto) -> dict[str, onnx.ValueInfoProto]:
    """Every value whose inferred shape is static, by name (empty when inference fails)."""
    try:
        inferred = infer_shapes(model, data_prop=True)
    except Exception:  # the importer's own strict inference reports the reason later
        return {}
    infos = {}
    for value_info in (*inferred.graph.input, *inferred.graph.value_info, *inferred.graph.output):
        dims = _dims(value_info)
        if dims is not None and all(isinstance(d, int) and d >= 0 for d in dims) and value_info.type.tensor_type.elem_type:
            infos[value_info.name] = value_info
    return infos


def _is_float(tensor: onnx.TensorProto) -> bool:
    return tensor.data_type in (onnx.TensorProto.FLOAT, onnx.TensorProto.DOUBLE, onnx.TensorProto.FLOAT16)


def _constant_is_float(node: onnx.NodeProto) -> bool:
    return any(a.name in ("value_float", "value_floats") or (a.name == "value" and _is_float(a.t)) for a in node.attribute)


def fold_shape_computations(model: onnx.ModelProto) -> onnx.ModelProto:
    """`model` with its constant shape computations evaluated into initializers and its
    decided Ifs replaced by their branch, until nothing more folds (a new model when any fold)."""
    while True:
        folded = _inline_decided_ifs(_fold_once(model))
        if folded is model:
            return model
        model = folded


def _inline_decided_ifs(model: onnx.ModelProto) -> onnx.ModelProto:
    """`model` with every top-level If whose condition is a constant replaced by the nodes of
    the branch it takes (and an Identity per output); an If whose branch defines a name the
    graph already has stays."""
    graph = model.graph
    initializers = {t.name: t for t in graph.initializer}
    defined = {value.name for value in graph.input} | set(initializers)
    defined.update(output for node in graph.node for output in node.output)
    replaced: dict[int, list[onnx.NodeProto]] = {}
    moved: list[onnx.TensorProto] = []
    for index, node in enumerate(graph.node):
        condition = initializers.get(node.input[0]) if node.op_type == "If" and node.domain in ("", "ai.onnx") else None
        if condition is None or math.prod(condition.dims) != 1:
            continue
        branch_name = "then_branch" if numpy_helper.to_array(condition).reshape(-1)[0] else "else_branch"
        branch = next(a.g for a in node.attribute if a.name == branch_name)
        names = {output for inner in branch.node for output in inner.output} | {t.name for t in branch.initializer}
        if names & defined or len(branch.output) != len(node.output):
            continue
        nodes = list(branch.node) + [
            onnx.helper.make_node("Identity", [inner.name], [outer], name=f"{node.name or 'If'}/{outer}")
            for inner, outer in zip(branch.output, node.output) if outer
        ]
        replaced[index] = nodes
        moved.extend(branch.initializer)
        defined |= names
    if not replaced:
        return model
    copy = onnx.ModelProto()
    copy.CopyFrom(model)
    del copy.graph.node[:]
    for index, node in enumerate(graph.node):
        copy.graph.node.extend(replaced.get(index, [node]))
    copy.graph.initializer.extend(moved)
    return copy


def _fold_once(model: onnx.ModelProto) -> onnx.ModelProto:
    """`model` with the shape computations it can evaluate now replaced by initializers."""
    graph = model.graph
    initializers = {t.name: t for t in graph.initializer}
    # known tensor -> whether it is shape data (an integer constant or computed); float weights are not
    known: dict[str, bool] = {name: not _is_float(t) for name, t in initializers.items()}
    constant_nodes: dict[str, onnx.NodeProto] = {}
    static: dict[str, onnx.ValueInfoProto] | None = None
    folded: list[onnx.NodeProto] = []
    shape_sources: dict[str, onnx.ValueInfoProto] = {}
    for node in graph.node:
        if node.domain not in ("", "ai.onnx") or any(a.type in (onnx.AttributeProto.GRAPH, onnx.AttributeProto.GRAPHS) for a in node.attribute):
            continue
        if node.op_type == "Constant":
            for output in node.output:
                known[output] = not _constant_is_float(node)
                constant_nodes[output] = node
            continue
        if node.op_type not in FOLDABLE_OPS:
            continue
        inputs = [name for name in node.input if name]
        if node.op_type in SHAPE_READERS and inputs and inputs[0] not in known:
            if static is None:
                static = _static_shapes(model)
            if inputs[0] not in static:
                continue
            shape_sources[inputs[0]] = static[inputs[0]]
        elif not all(name in known for name in inputs):
            continue
        elif node.op_type in ARITHMETIC_OPS and not any(known[name] for name in inputs):
            continue
        folded.append(node)
        for output in node.output:
            known[output] = True
    if not folded:
        return model
    return _replace_by_initializers(model, folded, constant_nodes, initializers, shape_sources)


def _replace_by_initializers(
    model: onnx.ModelProto,
    folded: list[onnx.NodeProto],
    constant_nodes: dict[str, onnx.NodeProto],
    initializers: dict[str, onnx.TensorProto],
    shape_sources: dict[str, onnx.ValueInfoProto],
) -> onnx.ModelProto:
    graph = model.graph
    folded_ids = {id(node) for node in folded}
    produced = {output for node in folded for output in node.output}
    consumed = {name for node in folded for name in node.input if name}
    # what the rest of the graph still reads from the folded nodes
    kept_reads = {name for node in graph.node if id(node) not in folded_ids for name in node_reads(node)}
    kept_reads.update(output.name for output in graph.output)
    wanted = [name for name in dict.fromkeys(o for node in folded for o in node.output) if name in kept_reads]
    used_constants = []
    for name in consumed:
        node = constant_nodes.get(name)
        if node is not None and name not in produced and node not in used_constants:
            used_constants.append(node)
    evaluation = onnx.helper.make_graph(
        [*used_constants, *folded],
        "shape_computations",
        list(shape_sources.values()),
        [onnx.helper.make_value_info(name, onnx.TypeProto()) for name in wanted],
        [initializers[name] for name in consumed if name in initializers and name not in shape_sources],
    )
    evaluation_model = onnx.helper.make_model(evaluation, opset_imports=model.opset_import, ir_version=model.ir_version)
    feeds = {
        name: np.broadcast_to(np.zeros((), onnx.helper.tensor_dtype_to_np_dtype(info.type.tensor_type.elem_type)),
                              [d.dim_value for d in info.type.tensor_type.shape.dim])
        for name, info in shape_sources.items()
    }
    try:
        from onnx.reference import ReferenceEvaluator

        checked = _budgeted_ops(evaluation_model, set(wanted))
        values = ReferenceEvaluator(evaluation_model, new_ops=checked).run(None, feeds) if wanted else []
    except XnpuError:
        raise
    except Exception as error:
        lines = [line.strip() for line in str(error).splitlines() if line.strip()]
        nodes = ", ".join(f"'{node.name or node.op_type}'" for node in folded[:3]) + (", ..." if len(folded) > 3 else "")
        raise XnpuError(
            f"cannot evaluate the shape computation of nodes {nodes}: {lines[0] if lines else type(error).__name__}"
        ) from None
    copy = onnx.ModelProto()
    copy.CopyFrom(model)
    del copy.graph.node[:]
    copy.graph.node.extend(node for node in graph.node if id(node) not in folded_ids)
    for name, value in zip(wanted, values):
        copy.graph.initializer.append(numpy_helper.from_array(np.asarray(value), name))
    return copy


# --------------------------------------------------------------------------------------
# The budget of a shape computation
# --------------------------------------------------------------------------------------


def _broadcast(*shapes: Sequence[int]) -> tuple[int, ...]:
    """numpy's broadcast shape, as Python integers (no array is made); an incompatible pair
    gives the larger size, and the op itself then fails."""
    rank = max((len(shape) for shape in shapes), default=0)
    padded = [(1,) * (rank - len(shape)) + tuple(int(d) for d in shape) for shape in shapes]
    return tuple(max(dims) if 0 not in dims else 0 for dims in zip(*padded))


def _ints(value) -> tuple[int, ...]:
    return tuple(int(v) for v in np.asarray(value).reshape(-1))


def _result_shape(op_type: str, inputs: Sequence, attributes: Mapping) -> tuple[tuple[int, ...], int]:
    """(shape, bytes per element) of what `op_type` computes from `inputs`, before it does:
    exact for the ops whose result can outgrow their inputs, an upper bound for the others."""
    arrays = [np.asarray(value) for value in inputs if value is not None]
    first = arrays[0] if arrays else np.zeros(())
    if op_type == "ConstantOfShape":
        value = attributes.get("value")
        return _ints(first), (np.asarray(value).itemsize if value is not None else 4)
    if op_type == "Expand":
        return _broadcast(first.shape, _ints(arrays[1])), first.itemsize
    if op_type == "Tile":
        return tuple(d * r for d, r in zip(first.shape, _ints(arrays[1]))), first.itemsize
    if op_type == "Range":
        # Range takes scalars; some exporters give one-element tensors, which numpy 2 does not convert with float()
        start, limit, delta = (float(a.reshape(-1)[0]) for a in arrays[:3])
        count = int(np.ceil((limit - start) / delta)) if delta and np.isfinite((limit - start) / delta) else 0
        return (max(count, 0),), first.itemsize
    if op_type == "Gather":
        axis = int(attributes.get("axis") or 0) % max(first.ndim, 1)
        return (*first.shape[:axis], *arrays[1].shape, *first.shape[axis + 1:]), first.itemsize
    if op_type == "Concat":
        return (sum(a.size for a in arrays),), first.itemsize
    if op_type == "Cast":
        return first.shape, onnx.helper.tensor_dtype_to_np_dtype(int(attributes["to"])).itemsize
    if op_type in ARITHMETIC_OPS and op_type != "ReduceProd":
        return _broadcast(*(a.shape for a in arrays)), max(a.itemsize for a in arrays)
    return first.shape, first.itemsize  # no bigger than its first input


# A folded result the graph still reads becomes a constant of the model, and the tools then hold it
# this many times over at once: the evaluator's array, the initializer's bytes, the model shape
# inference returns beside the one it read, the IR literal, and when its consumer goes to the host
# (it cannot be imported), that node's own model and onnxruntime's copies of it. A ConstantOfShape
# or Expand of 250 MiB, inside the budget for one tensor, cost xnpu-translate and xnpu-compile
# 2.0 GB (the fuzz campaign's over-memory cases, docs/reliability.md): it counts as many times.
KEPT_FOLD_COPIES = 8


def _budgeted_ops(model: onnx.ModelProto, kept: set[str]) -> list[type]:
    """onnx's reference implementation of every op of `model`, each checking the result it is
    about to compute against the budget (one tensor, and every result of the evaluation together:
    the evaluator keeps them all); a result in `kept` (read by the graph after the fold) counts
    KEPT_FOLD_COPIES times among those held at once."""
    from onnx.reference.ops import load_op  # with ReferenceEvaluator: onnx.reference costs its import only here

    opset = next((o.version for o in model.opset_import if o.domain in ("", "ai.onnx")), None)
    held = [0]
    classes = []
    for op_type in sorted({node.op_type for node in model.graph.node if node.domain in ("", "ai.onnx")}):
        base = load_op("", op_type, opset)
        parameters = inspect.signature(base._run).parameters
        # named `op_type`, the class is given the attributes of the op's newest version: an
        # older version's implementation takes only its own
        takes = None if any(p.kind is p.VAR_KEYWORD for p in parameters.values()) else set(parameters)

        def _run(self, *inputs, _base=base, _op_type=op_type, _takes=takes, **attributes):
            what = f"ONNX node '{self.onnx_node.name or _op_type}' ({_op_type}), folded as a shape computation"
            shape, itemsize = _result_shape(_op_type, inputs, attributes)
            size = check_tensor(shape, itemsize, what)
            copies = KEPT_FOLD_COPIES if any(name in kept for name in self.onnx_node.output) else 1
            held[0] += copies * size
            if copies > 1 and over_total_budget(held[0]):
                raise XnpuError(f"{what}: its {shape_text(shape)} result ({size_text(size)}) stays a constant of the "
                                f"model, which the tools hold {copies} times over at once: "
                                f"{over_total_budget(held[0])}")
            check_total(held[0], what)
            if _takes is not None:
                attributes = {name: value for name, value in attributes.items() if name in _takes}
            return _base._run(self, *inputs, **attributes)

        classes.append(type(op_type, (base,), {"_run": _run, "op_domain": ""}))
    return classes
