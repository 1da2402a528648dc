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

onnxruntime then runs the model with those tensors as its graph outputs (what its own
calibrator does), one sample at a time, each output written straight into the rows of a
batch of samples that the statistics fold as they fold the float interpreter's batches. Where
any measured value has no such tensor (IR input, a layer norm spelled out), calibration runs
the float interpreter instead. The two agree to float rounding: onnxruntime's kernels sum in
another order than numpy's (and run the batch norm unfolded).
"""

from __future__ import annotations

import weakref
from collections import Counter
from collections.abc import Callable, Mapping, Sequence

import numpy as np
from xdsl.dialects.builtin import ModuleOp
from xdsl.ir import SSAValue

from xnpu.core.errors import XnpuError, first_line
from xnpu.core.inputs import TensorSpec
from xnpu.dialects import nn
from xnpu.interpreters.function import entry_function
from xnpu.ir.locations import location_names
from xnpu.ir.onnx_origin import OnnxOrigin, node_location_name, origin_of


def onnx_tensors(module: ModuleOp, origin: OnnxOrigin) -> dict[SSAValue, str] | None:
    """For every float op result calibration measures, the ONNX tensor holding its values (the
    module doc says which); None when any has none."""
    import onnx

    graph = origin.model.graph
    names = Counter(node_location_name(node, index) for index, node in enumerate(graph.node))
    nodes = {node_location_name(node, index): node for index, node in enumerate(graph.node)}
    types = {info.name: info.type for info in (*graph.value_info, *graph.output)}
    ops = [op for op in entry_function(module).walk()
           if op.dialect_name() == "nn" and not isinstance(op, nn.ConstantOp)]
    last_names = Counter(location_names(op.location)[-1:] for op in ops)
    tensors: dict[SSAValue, str] = {}
    for op in ops:
        located = location_names(op.location)[-1:]
        if not any(nn.is_float(result) for result in op.results):
            continue
        if (not located or last_names[located] != 1 or names[located[0]] != 1
                or located[0] not in origin.single_op_nodes):
            return None
        outputs = [output for output in nodes[located[0]].output if output]
        if len(outputs) != len(op.results):
            return None
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
            if shape != tuple(nn.shape_of(result)):
                return None
            tensors[result] = output
    return tensors


def onnx_float_run(module: ModuleOp, input_specs: Sequence[TensorSpec],
                   observe: Callable[[SSAValue, np.ndarray], None]) -> OnnxFloatRun | None:
    """The float graph on onnxruntime, giving `observe` every measured value of each batch of
    samples it runs; None where the module has no ONNX model whose tensors hold them all or its
    inputs are not all tensors of a batch of one."""
    origin = origin_of(module)
    if origin is None or any(spec.opaque or spec.shape[:1] != (1,) for spec in input_specs):
        return None
    tensors = onnx_tensors(module, origin)
    if tensors is None:
        return None
    return OnnxFloatRun(origin, tensors, [spec.name for spec in input_specs], observe)


class OnnxFloatRun:
    """The imported model on onnxruntime, its graph outputs the tensors of the measured values.
    A call runs a batch of samples (the inputs of a batch-1 model stacked along axis 0, as
    BoundInputs.take gives them) one at a time, each tensor's values written straight into its
    row of the batch, and hands every value's batch to `observe`. The session is made on the
    first call and kept with the origin for the next run over the same tensors."""

    batched = True  # as CompiledFunction.batched: a call takes several samples

    def __init__(self, origin: OnnxOrigin, tensors: Mapping[SSAValue, str], input_names: Sequence[str],
                 observe: Callable[[SSAValue, np.ndarray], None]):
        self.origin, self.tensors, self.observe = origin, dict(tensors), observe
        self.input_names = list(input_names)
        self.names = tuple(dict.fromkeys(self.tensors.values()))
        infos = {info.name: info for info in (*origin.model.graph.value_info, *origin.model.graph.output)}
        self.infos = [infos[name] for name in self.names]
        self.shapes = [tuple(dim.dim_value for dim in info.type.tensor_type.shape.dim) for info in self.infos]

    def sample_bytes(self) -> int:
        """The memory one sample's outputs take (as CompiledFunction.sample_bytes estimates it)."""
        return sum(4 * int(np.prod(shape)) for shape in self.shapes)

    def session(self):
        """onnxruntime's session of the model with these tensors as its outputs; XnpuError if it
        cannot load it."""
        kept = _SESSIONS.get(self.origin)
        if kept is not None and kept[0] == self.names:
            return kept[1]
        import onnx
        import onnxruntime

        model = onnx.ModelProto()
        model.CopyFrom(self.origin.model)
        del model.graph.output[:]
        model.graph.output.extend(self.infos)
        options = onnxruntime.SessionOptions()
        options.log_severity_level = 4  # its own log lines: a failure is one XnpuError line instead
        try:
            session = onnxruntime.InferenceSession(model.SerializeToString(), options,
                                                   providers=["CPUExecutionProvider"])
        except Exception as error:  # onnxruntime's own pybind types; protobuf's over 2 GB
            raise XnpuError(f"calibration on onnxruntime: cannot load the model ({first_line(error)}); "
                            "--calibration-runtime=interpreter runs the float graph without it") from None
        _SESSIONS[self.origin] = (self.names, session)
        return session

    def __call__(self, inputs: Sequence[np.ndarray]) -> None:
        samples = len(inputs[0]) if inputs else 1
        outputs = {name: np.empty((samples, *shape), dtype=np.float32) for name, shape in zip(self.names, self.shapes)}
        session = self.session()
        binding = session.io_binding()
        try:
            for row in range(samples):
                for name, array in zip(self.input_names, inputs):
                    binding.bind_cpu_input(name, np.ascontiguousarray(array[row : row + 1]))
                for name, shape in zip(self.names, self.shapes):
                    binding.bind_output(name, "cpu", 0, np.float32, list(shape), outputs[name][row].ctypes.data)
                session.run_with_iobinding(binding)
        except Exception as error:  # a value onnxruntime refuses at run time (its own pybind types)
            raise XnpuError(f"calibration on onnxruntime failed: {first_line(error)}") from None
        for value, name in self.tensors.items():
            self.observe(value, outputs[name])


_SESSIONS: weakref.WeakKeyDictionary[OnnxOrigin, tuple[tuple[str, ...], object]] = weakref.WeakKeyDictionary()
