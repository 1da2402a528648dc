"""Where a compiled model runs: which ONNX nodes the accelerator runs and which ops the host does.

`placement_of(result)` reads it from what `xnpu.compile` returns at the npu level or below: an
npu module (top-level npu ops on the accelerator, the ops of `npu.host` regions on the host,
each with its `npu.host_reason`), an isa module or a `Binary` (instruction provenance on the
accelerator, the host segments' functions on the host). `xnpu-compile` prints its summary.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from xdsl.dialects.builtin import ModuleOp, StringAttr

from xnpu.backend.binary import Binary
from xnpu.backend.emit import emit_binary, target_name_for
from xnpu.backend.host import segment_function
from xnpu.core.errors import XnpuError, printable
from xnpu.dialects import isa, npu
from xnpu.dialects.npu import HOST_REASON
from xnpu.interpreters.function import entry_function
from xnpu.ir.locations import location_names


@dataclass(frozen=True)
class HostPlacement:
    """One op the host runs: its segment (1, 2, ... in program order), name, ONNX nodes and reason."""

    segment: int
    op: str
    nodes: tuple[str, ...]
    reason: str

    def describe(self) -> str:
        where = f" at {', '.join(repr(n) for n in self.nodes)}" if self.nodes else ""
        # op types and reasons come from the model (a custom domain's op_type, a node name in a
        # reason): escaped, so that each host op stays one line a terminal does not act on
        return printable(f"segment {self.segment}: {self.op}{where}: {self.reason}")


@dataclass
class Placement:
    target: str
    accelerator: list[str] = field(default_factory=list)  # ONNX nodes the accelerator runs, in program order
    host: list[HostPlacement] = field(default_factory=list)
    segments: int = 0

    def runs_on(self, nodes: tuple[str, ...] | list[str]) -> str:
        """`host` when one of `nodes` (an ONNX layer's) runs on the host, else `accelerator`."""
        on_host = {node for op in self.host for node in op.nodes}
        return "host" if any(node in on_host for node in nodes) else "accelerator"

    @property
    def host_nodes(self) -> list[str]:
        """The ONNX nodes only the host runs, in program order (a node the accelerator computes
        counts there, even where the host moves its data: a 1-D convolution's reshapes)."""
        on_accelerator = set(self.accelerator)
        nodes: list[str] = []
        _add_nodes(nodes, (node for op in self.host for node in op.nodes if node not in on_accelerator))
        return nodes

    def summary(self) -> str:
        ops = "op" if len(self.host) == 1 else "ops"
        segments = "segment" if self.segments == 1 else "segments"
        lines = [f"placement on {self.target}: {len(self.accelerator)} ONNX nodes on the accelerator, "
                 f"{len(self.host_nodes)} on the host ({len(self.host)} {ops} in {self.segments} {segments})"]
        lines += [f"  host {op.describe()}" for op in self.host]
        return "\n".join(lines)


def _host_ops(segment: int, ops) -> list[HostPlacement]:
    found = []
    for op in ops:
        reason = op.attributes.get(HOST_REASON)
        if isinstance(reason, StringAttr):
            found.append(HostPlacement(segment, _op_name(op), location_names(op.location), reason.data))
    return found


def _op_name(op) -> str:
    """The op's name; an ONNX node onnxruntime runs is named by its ONNX op type too (`nn.onnx If`)."""
    op_type = op.properties.get("op_type")
    return f"{op.name} {op_type.data}" if op.name == "nn.onnx" and isinstance(op_type, StringAttr) else op.name


def _add_nodes(nodes: list[str], names) -> None:
    nodes.extend(name for name in names if name not in nodes)


def _of_npu(module: ModuleOp, target: str) -> Placement:
    placement = Placement(target)
    for op in entry_function(module).body.block.ops:
        if isinstance(op, npu.HostOp):
            placement.segments += 1
            placement.host += _host_ops(placement.segments, op.body.walk())
        elif isinstance(op, npu.NpuOp):
            _add_nodes(placement.accelerator, location_names(op.location))
    return placement


def _of_binary(binary, target: str) -> Placement:
    placement = Placement(target)
    handoffs = {segment.token for segment in binary.host_segments}
    for index, instruction in enumerate(binary.instructions):
        if instruction.op == "SYNC" and instruction["token"] in handoffs:
            continue
        _add_nodes(placement.accelerator, binary.provenance.get(index, ()))
    for number, segment in enumerate(binary.host_segments, 1):
        placement.host += _host_ops(number, segment_function(segment, binary.onnx_models).walk())
    placement.segments = len(binary.host_segments)
    return placement


def placement_of(result: ModuleOp | object) -> Placement:
    """The placement of a compiled model: an npu or isa module, or a Binary."""

    if isinstance(result, Binary):
        return _of_binary(result, target_name_for(result))
    if isinstance(result, ModuleOp):
        name = result.attributes.get(npu.TARGET_ATTRIBUTE) or result.attributes.get(isa.TARGET_ATTRIBUTE)
        if isinstance(name, StringAttr) and npu.TARGET_ATTRIBUTE in result.attributes:
            return _of_npu(result, name.data)
        if isinstance(name, StringAttr):
            return _of_binary(emit_binary(result), name.data)
    raise XnpuError("placement exists for a model compiled for a target (npu or isa level, or a binary)")
