"""Calibration's float inference on onnxruntime, where the module was imported from ONNX.

Calibration measures every float value of the nn graph after the float clean-up
(fold-batch-norm, remove-noop, fuse-activations, expand-layer-norm). A value holds what one
tensor of the imported ONNX model holds when its op is located at the node that computes
that tensor: an op the front end made from a node alone (loc("conv1")), or one a rewrite made
in place of several (a batch norm folded into its convolution, a spelled-out activation
fused), whose fused location names the replaced op's node last (ir.locations.fused_location
puts the absorbed ops first and the root last; the value replaces the root's, which is that
node's output). Value by value, `onnx_tensors` takes the tensor `output[i]` of the node the
location names last when

- that node was imported as exactly one op besides constants (a node spelled as a sequence
  of ops has intermediate values that no tensor holds),
- no other op's location ends with that node (expand-layer-norm spells one op as several,
  all at the same location), and
- the tensor is float32 of the value's shape in the model's inferred types.

An op that split-channel-groups made holds some channels of the tensor of the op it replaced
(its `xnpu.onnx_channels`, at that op's location): its value is those channels of the tensor.

onnxruntime then runs the model with those tensors as its graph outputs (what its own
calibrator does), one sample at a time, each output written straight into the rows of a
batch of samples that the statistics fold as they fold the float interpreter's batches. Where
any measured value has no such tensor (IR input, a layer norm spelled out), calibration runs
the float interpreter instead. The two agree to float rounding: onnxruntime's kernels sum in
another order than numpy's (and run the batch norm unfolded).
"""

from __future__ import annotations

import math
from collections import Counter
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass

import numpy as np
from xdsl.dialects.builtin import ModuleOp
from xdsl.ir import SSAValue

from xnpu.core.errors import XnpuError, first_line
from xnpu.core.inputs import TensorSpec
from xnpu.dialects import nn
from xnpu.interpreters.function import entry_function
from xnpu.ir.locations import location_names
from xnpu.ir.onnx_origin import OnnxOrigin, node_location_name, origin_of
from xnpu.transforms.split_channel_groups import ONNX_CHANNELS_ATTR


def held_channels(value: SSAValue) -> np.ndarray | None:
    """The channels of its ONNX tensor a value of a split op holds (None: the whole tensor)."""
    owner = value.owner
    channels = owner.attributes.get(ONNX_CHANNELS_ATTR) if hasattr(owner, "attributes") else None
    return None if channels is None else np.asarray(channels.get_values(), dtype=np.int64)


def onnx_tensors(module: ModuleOp, origin: OnnxOrigin) -> dict[SSAValue, str] | None:
    """For every float op result calibration measures, the ONNX tensor holding its values (the
    module doc says which); None when any has none."""
    tensors, complete = named_tensors(module, origin)
    return tensors if complete else None


def named_tensors(module: ModuleOp, origin: OnnxOrigin) -> tuple[dict[SSAValue, str], bool]:
    """The ONNX tensor of each float op result that has one (`onnx_tensors`' rule), and whether
    every op's results have one."""
    import onnx

    graph = origin.model.graph
    names = Counter(node_location_name(node, index) for index, node in enumerate(graph.node))
    nodes = {node_location_name(node, index): node for index, node in enumerate(graph.node)}
    types = {info.name: info.type for info in (*graph.value_info, *graph.output)}
    ops = [op for op in entry_function(module).walk()
           if op.dialect_name() == "nn" and not isinstance(op, nn.ConstantOp)]
    # the ops of a split share the location of the op they replaced, each holding some of its channels
    last_names = Counter(location_names(op.location)[-1:] for op in ops if ONNX_CHANNELS_ATTR not in op.attributes)

    def tensors_of(op) -> list[tuple[SSAValue, str]] | None:
        located = location_names(op.location)[-1:]
        split = ONNX_CHANNELS_ATTR in op.attributes
        if (not located or (last_names[located] != (0 if split else 1)) or names[located[0]] != 1
                or located[0] not in origin.single_op_nodes):
            return None
        outputs = [output for output in nodes[located[0]].output if output]
        if len(outputs) != len(op.results):
            return None
        found = []
        for result, output in zip(op.results, outputs):
            if not nn.is_float(result):
                continue
            tensor_type = types.get(output)
            if tensor_type is None or tensor_type.WhichOneof("value") != "tensor_type":
                return None
            tensor = tensor_type.tensor_type
            if tensor.elem_type != onnx.TensorProto.FLOAT or not tensor.HasField("shape"):
                return None
            shape = tuple(dim.dim_value if dim.HasField("dim_value") else None for dim in tensor.shape.dim)
            channels = held_channels(result)
            if channels is not None:
                if len(shape) < 2 or shape[1] is None or channels.size == 0 or channels.max() >= shape[1]:
                    return None
                shape = (shape[0], channels.size, *shape[2:])
            if shape != tuple(nn.shape_of(result)):
                return None
            found.append((result, output))
        return found

    tensors: dict[SSAValue, str] = {}
    complete = True
    for op in ops:
        if not any(nn.is_float(result) for result in op.results):
            continue
        found = tensors_of(op)
        if found is None:
            complete = False
        else:
            tensors.update(found)
    return tensors, complete


# One run of all the samples holds the outputs of a segment of the graph for every sample: at
# most this much (with the sessions and statistics, the peak RSS of calibrating resnet18_like
# grew by ~1.5x this budget; 512 MB: 1018 MB, 256 MB: 797 MB, for the same CPU time).
SEGMENT_BYTES = 256 << 20


def onnx_float_run(module: ModuleOp, input_specs: Sequence[TensorSpec],
                   observe: Callable[[SSAValue, np.ndarray], None], samples: int | None = None) -> OnnxFloatRun | None:
    """The float graph on onnxruntime, giving `observe` every measured value of each batch of
    samples it runs; for one run of `samples` samples, in segments within SEGMENT_BYTES
    (plan_segments). None where the module has no ONNX model whose tensors hold them all, its
    inputs are not all tensors of a batch of one, or onnxruntime cannot load the model's parts
    (the interpreter may still run what onnxruntime refuses as a whole)."""
    origin = origin_of(module)
    if origin is None or any(spec.opaque or spec.shape[:1] != (1,) for spec in input_specs):
        return None
    tensors = onnx_tensors(module, origin)
    if tensors is None:
        return None
    limit = None if samples is None else SEGMENT_BYTES // samples
    run = OnnxFloatRun(origin, tensors, [spec.name for spec in input_specs], observe, limit)
    try:
        run.sessions()
    except XnpuError:
        return None
    return run


@dataclass(frozen=True)
class Segment:
    """Nodes [first, last] of the graph as a model of their own: it reads `inputs` (graph inputs,
    or tensors an earlier segment wrote) and writes `outputs` (the measured tensors its nodes
    compute, and those a later segment reads)."""

    first: int
    last: int
    inputs: tuple[str, ...]
    outputs: tuple[str, ...]
    bytes: int  # a sample's footprint while it runs: what it writes and every tensor kept across it


def _tensor_layouts(graph) -> dict[str, tuple[tuple[int, ...], np.dtype]]:
    """Static shape and numpy type of every tensor the inferred model types (others are left out)."""
    import onnx

    layouts = {}
    for info in (*graph.input, *graph.value_info, *graph.output):
        tensor = info.type.tensor_type if info.type.WhichOneof("value") == "tensor_type" else None
        if tensor is None or not tensor.HasField("shape") or not all(d.HasField("dim_value") for d in tensor.shape.dim):
            continue
        try:
            dtype = np.dtype(onnx.helper.tensor_dtype_to_np_dtype(tensor.elem_type))
        except (KeyError, ValueError, TypeError):
            continue
        layouts[info.name] = (tuple(d.dim_value for d in tensor.shape.dim), dtype)
    return layouts


def plan_segments(graph, measured: Sequence[str], limit: int | None) -> list[Segment]:
    """Consecutive runs of the graph's (topologically ordered) nodes, each as long as a sample's
    footprint (what it writes, plus what is kept for later segments) stays within `limit`: all
    the samples then run through one segment, its measured tensors are folded and dropped, and
    only the tensors later segments read stay. One segment (the whole graph) without a limit, or
    where a node has a subgraph (it may read any tensor of the graph) or a tensor crossing a cut
    has no static type."""
    import onnx

    nodes = list(graph.node)
    layouts = _tensor_layouts(graph)
    measured_set = set(measured)
    whole = Segment(0, len(nodes) - 1, tuple(i.name for i in graph.input), tuple(dict.fromkeys(measured)), 0)
    graphs = (onnx.AttributeProto.AttributeType.GRAPH, onnx.AttributeProto.AttributeType.GRAPHS)
    if limit is None or any(a.type in graphs for node in nodes for a in node.attribute):
        return [whole]
    size = {name: int(np.prod(shape)) * dtype.itemsize for name, (shape, dtype) in layouts.items()}
    produced_at = {output: index for index, node in enumerate(nodes) for output in node.output if output}
    last_read = {}
    for index, node in enumerate(nodes):
        for name in node.input:
            if name in produced_at:
                last_read[name] = index
    kept_after = lambda name, index: last_read.get(name, -1) > index  # noqa: E731
    graph_inputs = {value.name for value in graph.input}
    segments, first = [], 0
    while first < len(nodes):
        carried = [name for name, index in produced_at.items() if index < first and kept_after(name, first - 1)]
        if any(name not in size for name in carried):
            return [whole]
        base = sum(size[name] for name in carried)
        written: list[str] = []
        last, footprint = first, None
        for index in range(first, len(nodes)):
            outputs = [name for name in nodes[index].output if name]
            candidate = written + outputs
            passing = [name for name in candidate if name not in measured_set and kept_after(name, index)]
            if any(name not in size for name in passing):
                candidate_bytes = math.inf
            else:
                candidate_bytes = base + sum(size[name] for name in set(candidate) & measured_set) + sum(
                    size[name] for name in passing)
            if index > first and candidate_bytes > limit:
                break
            written, last, footprint = candidate, index, candidate_bytes
        reads = dict.fromkeys(name for node in nodes[first : last + 1] for name in node.input
                              if name and (name in carried or name in graph_inputs))
        outputs = dict.fromkeys(name for name in written if name in measured_set or kept_after(name, last))
        segments.append(Segment(first, last, tuple(reads), tuple(outputs), int(min(footprint, 1 << 62))))
        first = last + 1
    return segments


class OnnxFloatRun:
    """The imported model on onnxruntime, in segments (plan_segments) whose graph outputs are the
    tensors of the measured values and those later segments read. A call runs a batch of samples
    (the inputs of a batch-1 model stacked along axis 0, as BoundInputs.take gives them) through
    each segment in turn, one sample at a time, each output written straight into its row of the
    batch, and hands every measured value's batch to `observe` once its segment has run."""

    batched = True  # as CompiledFunction.batched: a call takes several samples

    def __init__(self, origin: OnnxOrigin, tensors: Mapping[SSAValue, str], input_names: Sequence[str],
                 observe: Callable[[SSAValue, np.ndarray], None], limit: int | None = None):
        self.origin, self.tensors, self.observe = origin, dict(tensors), observe
        self.channels = {value: channels for value in self.tensors
                         if (channels := held_channels(value)) is not None}
        self.input_names = list(input_names)
        graph = origin.model.graph
        self.segments = plan_segments(graph, list(self.tensors.values()), limit)
        self.layouts = _tensor_layouts(graph)
        self.last_read = {name: index for index, node in enumerate(graph.node) for name in node.input if name}
        self._sessions: list | None = None

    def sample_bytes(self) -> int:
        """The most memory a sample takes while a segment runs (as CompiledFunction.sample_bytes)."""
        if len(self.segments) == 1:
            return sum(int(np.prod(self.layouts[name][0])) * 4 for name in self.segments[0].outputs)
        return max(segment.bytes for segment in self.segments)

    def sessions(self) -> list:
        """onnxruntime's session of each segment, made on the first call and kept while this run
        is (they hold the weights and onnxruntime's buffers); XnpuError if it cannot load one."""
        if self._sessions is not None:
            return self._sessions
        import onnxruntime

        options = onnxruntime.SessionOptions()
        options.log_severity_level = 4  # its own log lines: a failure is one XnpuError line instead
        # threads that wait sleep: spinning ones took 1.4-1.7x the CPU of the work itself where
        # other processes kept the cores busy, for no gain on whole convolutions
        options.add_session_config_entry("session.intra_op.allow_spinning", "0")
        sessions = []
        for segment in self.segments:
            model = _segment_model(self.origin.model, segment, len(self.segments) == 1)
            try:
                sessions.append(onnxruntime.InferenceSession(model.SerializeToString(), options,
                                                             providers=["CPUExecutionProvider"]))
            except Exception as error:  # onnxruntime's own pybind types; protobuf's over 2 GB
                raise XnpuError(f"onnxruntime cannot load the model ({first_line(error)})") from None
        self._sessions = sessions
        return sessions

    def __call__(self, inputs: Sequence[np.ndarray]) -> None:
        samples = len(inputs[0]) if inputs else 1
        kept: dict[str, np.ndarray] = {}  # every sample's value of a tensor a later segment reads
        graph_inputs = dict(zip(self.input_names, inputs))
        values_of = {}
        for value, name in self.tensors.items():
            values_of.setdefault(name, []).append(value)
        for segment, session in zip(self.segments, self.sessions()):
            outputs = {name: np.empty((samples, *self.layouts[name][0]), dtype=self.layouts[name][1])
                       for name in segment.outputs}
            binding = session.io_binding()
            try:
                for row in range(samples):
                    for name in segment.inputs:
                        if name in graph_inputs:
                            binding.bind_cpu_input(name, np.ascontiguousarray(graph_inputs[name][row : row + 1]))
                        elif name in kept:
                            binding.bind_cpu_input(name, kept[name][row, ...])
                    for name, array in outputs.items():
                        binding.bind_output(name, "cpu", 0, array.dtype, list(array.shape[1:]), array[row, ...].ctypes.data)
                    session.run_with_iobinding(binding)
            except Exception as error:  # a value onnxruntime refuses at run time (its own pybind types)
                raise XnpuError(f"calibration on onnxruntime failed: {first_line(error)}") from None
            for name, array in outputs.items():
                for value in values_of.get(name, ()):
                    channels = self.channels.get(value)
                    # [samples, 1, C, ...]: a split op's value is some of the channels
                    self.observe(value, array if channels is None else np.take(array, channels, axis=2))
            kept.update(outputs)
            kept = {name: array for name, array in kept.items() if self.last_read.get(name, -1) > segment.last}


def _segment_model(model, segment: Segment, whole: bool):
    """The nodes of `segment` as a model of their own (the whole model, where it is one segment)."""
    import onnx

    graph = model.graph
    infos = {info.name: info for info in (*graph.input, *graph.value_info, *graph.output)}
    part = onnx.ModelProto()
    if whole:
        part.CopyFrom(model)
        del part.graph.output[:]
        part.graph.output.extend(infos[name] for name in segment.outputs)
        return part
    # the model's fields but the graph's lists, then the segment's own: copying the whole model
    # first copied every initializer once per segment (~0.1 s of resnet18_like's CPU)
    _copy_fields(model, part, leave_out=("graph",))
    _copy_fields(graph, part.graph, leave_out=("node", "input", "output", "initializer", "value_info"))
    nodes = graph.node[segment.first : segment.last + 1]
    read = {name for node in nodes for name in node.input}
    part.graph.output.extend(infos[name] for name in segment.outputs)
    part.graph.node.extend(nodes)
    part.graph.input.extend(infos[name] for name in segment.inputs)
    part.graph.initializer.extend(tensor for tensor in graph.initializer if tensor.name in read)
    return part


def _copy_fields(source, target, leave_out: tuple[str, ...]) -> None:
    """Copy every set field of protobuf message `source` into `target` but those `leave_out` names."""
    for descriptor, value in source.ListFields():
        if descriptor.name in leave_out:
            continue
        field = getattr(target, descriptor.name)
        if hasattr(field, "extend"):  # a repeated field
            field.extend(value)
        elif hasattr(field, "CopyFrom"):  # a message
            field.CopyFrom(value)
        else:
            setattr(target, descriptor.name, value)
