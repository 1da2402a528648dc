"""`isa` module <-> Binary: the assembler and the disassembler.

`emit_binary(module)` turns a program of the `isa` dialect (backend/npu_to_isa.py) into a
`Binary` (backend/binary.py): every instruction op becomes its word through the field tables
(`isa.instruction_of`), `isa.constants` becomes the constant image, each `isa.io` an io
table entry, and each instruction's location its provenance (the ONNX node names).

`module_from_binary(binary)` is the inverse, and `disassemble(binary)` prints it with a
comment above every instruction giving its index and origin; assembling the printed text
again gives the same bytes.
"""

from __future__ import annotations

import io
import re

from xdsl.dialects.builtin import IntegerAttr, ModuleOp, StringAttr, i64

from xnpu.backend.binary import Binary, HostSegment, IoTensor
from xnpu.core.errors import XnpuError, printable
from xnpu.dialects import isa, nn
from xnpu.dialects.targeting import module_target
from xnpu.ir.io import print_ir, verify_module
from xnpu.ir.locations import location_names, location_of
from xnpu.target.description import TargetDescription, list_targets, load_target


def module_target_of(module: ModuleOp) -> TargetDescription:
    """The target an isa module names (`isa.target`)."""
    return module_target(module, attribute=isa.TARGET_ATTRIBUTE, who="the isa module")


def emit_binary(module: ModuleOp) -> Binary:
    """The Binary of an isa module (verified first, so every word is valid for its target)."""

    verify_module(module)
    target = module_target_of(module)
    instructions, provenance = [], {}
    constants = b""
    io_table: list[IoTensor] = []
    host: list[HostSegment] = []
    models = OnnxModels()
    for op in module.ops:
        if isinstance(op, isa.InstructionOp):
            names = location_names(op.location)
            if names:
                provenance[len(instructions)] = names
            instructions.append(isa.instruction_of(op))
        elif isinstance(op, isa.ConstantsOp):
            constants += op.data()
        elif isinstance(op, isa.IoOp):
            io_table.append(io_tensor(op))
        elif isinstance(op, isa.HostSegmentOp):
            host.append(host_segment(op, models))
        else:
            raise XnpuError(f"'{op.name}' is not part of an isa program; lower the module to isa first")
    if not instructions:
        raise XnpuError("the isa module has no instructions")
    host.sort(key=lambda segment: segment.token)
    return Binary(target.id, instructions, constants, io_table, provenance, host, models.models)


def io_tensor(op: isa.IoOp) -> IoTensor:
    return IoTensor(
        name=op.tensor_name.data, direction=op.direction.data, shape=op.shape_tuple(), dtype=op.dtype.data,
        scale=op.scale.value.data, zero_point=op.zero_point.value.data, ddr_addr=op.ddr_addr.value.data,
        layout=op.layout.data,
    )


class OnnxModels:
    """The binary's onnx-models section (kind 8) as it is filled: each distinct model once, in
    order of first use."""

    def __init__(self) -> None:
        self.models: list[bytes] = []
        self.index: dict[bytes, int] = {}

    def reference(self, model: bytes) -> int:
        if model not in self.index:
            self.index[model] = len(self.models)
            self.models.append(model)
        return self.index[model]


def host_segment(op: isa.HostSegmentOp, models: OnnxModels) -> HostSegment:
    """The segment as the binary stores it: its nn.onnx ops name their model by its index in
    the onnx-models section instead of holding it."""
    function = op.function().clone()
    for inner in function.walk():
        if isinstance(inner, nn.OnnxOp):
            inner.model = IntegerAttr(models.reference(inner.model_bytes()), i64)
    return HostSegment(op.token.value.data, [io_tensor(t) for t in op.tensors("input")],
                       [io_tensor(t) for t in op.tensors("output")], print_ir(function, generic=True))


def host_segment_op(segment: HostSegment, models: list[bytes]) -> isa.HostSegmentOp:
    """The isa form of a binary's host segment (its body parsed, its ONNX models put back: a
    corrupt one is one error line)."""
    tensors = [isa.IoOp(t.name, t.direction, t.shape, t.dtype, t.scale, t.zero_point, t.ddr_addr, t.layout)
               for t in (*segment.inputs, *segment.outputs)]
    from xnpu.backend.host import segment_function  # the host runner's imports, paid only by a binary with host segments

    function = segment_function(segment, models)
    function.detach()
    return isa.HostSegmentOp(segment.token, tensors, function)


def target_name_for(binary: Binary) -> str:
    for name in list_targets():
        if load_target(name).id == binary.target_id:
            return name
    raise XnpuError(f"binary: built for target id {binary.target_id}, which no shipped target has; pass the target file")


def module_from_binary(binary: Binary, target: str | None = None) -> ModuleOp:
    """An isa module holding exactly the binary's program (the disassembly)."""
    target = target or target_name_for(binary)
    module = ModuleOp([])
    module.attributes[isa.TARGET_ATTRIBUTE] = StringAttr(target)
    body = module.body.block
    if binary.constants:
        body.add_op(isa.ConstantsOp(binary.constants))
    for tensor in binary.io:
        body.add_op(isa.IoOp(tensor.name, tensor.direction, tensor.shape, tensor.dtype, tensor.scale,
                             tensor.zero_point, tensor.ddr_addr, tensor.layout))
    waiting = {segment.token: segment for segment in binary.host_segments}
    for index, instruction in enumerate(binary.instructions):
        op = isa.op_from_instruction(instruction)
        op.location = location_of(binary.provenance.get(index, ()))
        if instruction.op == "SYNC" and not instruction["halt"] and instruction["token"] in waiting:
            body.add_op(host_segment_op(waiting.pop(instruction["token"]), binary.onnx_models))  # before its hand-off
        body.add_op(op)
    for segment in waiting.values():  # no SYNC posts its token
        body.add_op(host_segment_op(segment, binary.onnx_models))
    return module


_HOST_SEGMENT_LINE = re.compile(r"^(\s*)isa\.host_segment (\d+) ")
_INSTRUCTION_LINE = re.compile(r"^(\s*)isa\.(" + "|".join(m.lower() for m in isa.INSTRUCTION_OPS) + r") ")


def disassemble(binary: Binary, target: str | None = None, constants: bool = True) -> str:
    """isa text of the binary, each instruction preceded by `// [index] node names`.

    With `constants=False` the constant image is summarised in a comment instead of printed
    (the text then no longer assembles to the same binary).
    """

    module = module_from_binary(binary, target)
    if not constants:
        for op in list(module.ops):
            if isinstance(op, isa.ConstantsOp):
                op.detach()
                op.erase()
    text = print_ir(module)
    out = io.StringIO()
    if not constants and binary.constants:
        out.write(f"// constants: {len(binary.constants)} bytes (not shown)\n")
    index = 0
    for line in text.splitlines():
        segment = _HOST_SEGMENT_LINE.match(line)
        if segment:
            out.write(f"{segment.group(1)}// host segment (section 7): run by the host where SYNC token {segment.group(2)} hands off\n")
        match = _INSTRUCTION_LINE.match(line)
        if match:
            names = ", ".join(printable(name) for name in binary.provenance.get(index, ())) or "-"
            out.write(f"{match.group(1)}// [{index}] {names}\n")
            index += 1
        out.write(line + "\n")
    return out.getvalue()
