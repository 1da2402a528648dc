"""The host's side of a hand-off: running a binary's host segments (docs/binary-format.md, section 7).

Where the program posts a segment's token (`SYNC halt=0`), the accelerator stops and the host
reads the segment's input tensors from DDR (in their io layout), runs the segment's function
with xnpu's interpreter functions (`xnpu.interpreters.function.CompiledFunction`) (fixed ops through `xnpu.semantics.fixed_point`, float ops through
`xnpu.semantics.float_ops`, ONNX nodes through onnxruntime with the models of section 8,
`xnpu.semantics.onnx_runtime`: the same functions as every level above), writes the outputs to
DDR, and the accelerator resumes. So a binary with host segments stays bit-identical to the
fixed level. A body that does not parse, or whose function does not match the segment's
tensors, is one `binary: host segment N: ...` error.
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
    """What a hand-off needs of the machine: its DDR tensors (the simulator's Machine)."""

    def read_tensor(self, tensor: IoTensor) -> np.ndarray: ...

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
        args = tuple(machine.read_tensor(tensor) for tensor in segment.inputs)
        try:
            results = self.programs[token](args)
        except XnpuError as error:
            raise _fail(segment, str(error)) from None
        except Exception as error:  # an interpreter failure inside the body
            raise _fail(segment, f"{type(error).__name__}: {error}") from None
        for tensor, value in zip(segment.outputs, results):
            machine.write_tensor(tensor, np.asarray(value))
        return True
