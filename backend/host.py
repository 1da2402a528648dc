"""The host's side of a hand-off: running a binary's host segments (docs/binary-format.md, section 7).

Where the program posts a segment's token (`SYNC halt=0`), the accelerator stops and the host
reads the segment's input tensors from DDR (in their io layout), runs the segment's function
with xnpu's interpreter functions (`xnpu.interpreters.function.CompiledFunction`) (fixed ops through `xnpu.semantics.fixed_point`, float ops through
`xnpu.semantics.float_ops`, ONNX nodes through onnxruntime with the models of section 8,
`xnpu.semantics.onnx_runtime`: the same functions as every level above), writes the outputs to
DDR, and the accelerator resumes. So a binary with host segments stays bit-identical to the
fixed level. A body that does not parse, or whose function does not match the segment's
tensors, is one `binary: host segment N: ...` error. Where the machine runs several samples at
once, a segment runs them in one call where its function keeps samples apart along axis 0
(xnpu.interpreters.batching, as the interpreters batch them), else one sample at a time.
"""

from __future__ import annotations

from typing import Protocol

import numpy as np
from xdsl.dialects import func
from xdsl.dialects.builtin import IntegerAttr

from xnpu.backend.binary import Binary, HostSegment, IoTensor
from xnpu.core.errors import XnpuError
from xnpu.dialects import nn
from xnpu.interpreters.function import CompiledFunction
from xnpu.ir.io import parse_ir
from xnpu.semantics.dtypes import io_dtype


class TensorMemory(Protocol):
    """What a hand-off needs of the machine: its DDR tensors, samples x the tensor's shape
    (the simulator's Machine)."""

    def read_samples(self, tensor: IoTensor) -> np.ndarray: ...

    def write_tensor(self, tensor: IoTensor, value: np.ndarray) -> None: ...


def _fail(segment: HostSegment, message: str) -> XnpuError:
    return XnpuError(f"binary: host segment {segment.token}: {message}")


def segment_function(segment: HostSegment, models: list[bytes]) -> func.FuncOp:
    """The segment's body parsed and verified: one func.func taking its inputs, returning its
    outputs, each nn.onnx op holding the model of `models` (the onnx-models section) it names."""
    try:
        module = parse_ir(segment.body, "body")
    except XnpuError as error:
        raise _fail(segment, str(error)) from None
    ops = list(module.ops)
    if len(ops) != 1 or not isinstance(ops[0], func.FuncOp):
        raise _fail(segment, "the body must be one func.func")
    function = ops[0]
    for op in function.walk():
        if isinstance(op, nn.OnnxOp):
            if not isinstance(op.model, IntegerAttr) or not 0 <= op.model.value.data < len(models):
                raise _fail(segment, f"its nn.onnx op must name one of the {len(models)} models of the onnx-models "
                                     "section by index")
            op.model = nn.OnnxModelAttr(models[op.model.value.data])
    for direction, tensors, types in (("input", segment.inputs, function.function_type.inputs.data),
                                      ("output", segment.outputs, function.function_type.outputs.data)):
        try:
            found = [(tuple(t.get_shape()), io_dtype(t.get_element_type())) for t in types]
        except (AttributeError, XnpuError):
            found = None
        described = [(tuple(t.shape), t.dtype) for t in tensors]
        if found != described:
            raise _fail(segment, f"the function's {direction}s {found} are not its {direction} tensors {described}")
    return function


class HostSegments:
    """A binary's host segments by token, parsed once before the program runs, run against a Machine's DDR."""

    def __init__(self, binary: Binary):
        self.binary = binary
        self.segments = {segment.token: segment for segment in binary.host_segments}
        self.programs: dict[int, CompiledFunction] = {}
        for segment in binary.host_segments:
            try:
                self.programs[segment.token] = CompiledFunction(segment_function(segment, binary.onnx_models).parent_op())
            except CompiledFunction.CannotCompile as error:
                raise _fail(segment, f"the host cannot run it: {error}") from None
            try:
                self.programs[segment.token].check_budget(1)  # before the program starts, not at its SYNC
            except XnpuError as error:
                raise _fail(segment, str(error)) from None

    def run(self, token: int, machine: TensorMemory) -> bool:
        """Run the segment `token` names on the machine's DDR; False when no segment has that token."""
        segment = self.segments.get(token)
        if segment is None:
            return False
        args = [machine.read_samples(tensor) for tensor in segment.inputs]
        samples = args[0].shape[0] if args else 1
        program = self.programs[token]
        try:
            if samples > 1 and self._runs_together(segment, program, samples):
                joined = program(tuple(a.reshape(-1, *a.shape[2:]) for a in args))
                results = [np.asarray(v).reshape(samples, *t.shape) for v, t in zip(joined, segment.outputs)]
            else:
                each = [program(tuple(a[k] for a in args)) for k in range(samples)]
                results = [np.stack([np.asarray(one[n]) for one in each]) for n in range(len(segment.outputs))]
        except XnpuError as error:
            raise _fail(segment, str(error)) from None
        except Exception as error:  # an interpreter failure inside the body
            raise _fail(segment, f"{type(error).__name__}: {error}") from None
        for tensor, value in zip(segment.outputs, results):
            machine.write_tensor(tensor, value)
        return True

    @staticmethod
    def _runs_together(segment: HostSegment, program: CompiledFunction, samples: int) -> bool:
        """Whether one call of `program` takes `samples` samples along axis 0 (its tensors
        batch-1 shaped, its values for them within the budget)."""
        tensors = [*segment.inputs, *segment.outputs]
        if not program.batched or any(not t.shape or t.shape[0] != program.argument_leading for t in tensors):
            return False
        try:
            program.check_budget(samples)
        except XnpuError:
            return False
        return True
