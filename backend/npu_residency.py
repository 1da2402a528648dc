"""Tensors kept in SRAM between the layers that write and read them, and where they live.

A layer's result is *on chip* (`npu.on_chip`, written by npu-keep-on-chip) when it stays in
SRAM, as a padded NHWC map at `npu.sram_home`, from the layer that writes it to the last layer
that reads it: the producer's unit writes it there and the readers' units read it there, with
no STORE and no LOAD in between (Vela's cascading). A reader that needs the tensor in DDR (the
host, the program's outputs, a view that reorders its bytes, a kernel read as weights) reads
a copy the producer also stores (`npu.spill`).

This module says which ops can write and read a tensor on chip, follows views that keep the
bytes as they are, numbers the layers, and places on-chip tensors in SRAM over their lives
(`Placement`: first fit over live intervals, addresses aligned like every SRAM buffer).
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field

from xdsl.dialects import func
from xdsl.dialects.builtin import IntegerAttr, UnitAttr, i64
from xdsl.ir import Operation, SSAValue

from xnpu.backend.npu_annotations import LAYER_OPS, VIEW_OPS, align, hwc, is_kernel_view
from xnpu.dialects import fixed, npu
from xnpu.dialects.shapes import shape_of
from xnpu.target.description import TargetDescription

ON_CHIP = "npu.on_chip"
SPILL = "npu.spill"
HOME = "npu.sram_home"
SRAM_ALIGNMENT = 16  # as every buffer of a working set (npu_tiling)


def layer_positions(function: func.FuncOp) -> dict[Operation, int]:
    """Layers (ops that run instructions) and host segments, numbered in program order."""
    positions: dict[Operation, int] = {}
    for op in function.body.block.ops:
        if isinstance(op, LAYER_OPS) or isinstance(op, npu.HostOp):
            positions[op] = len(positions)
    return positions


def keeps_bytes(view: Operation) -> bool:
    """A view whose result has the H x W x C of its source: the padded SRAM map is the same."""
    if not isinstance(view, VIEW_OPS) or is_kernel_view(view):
        return False
    return hwc(shape_of(view.input), view) == hwc(shape_of(view.result), view)


def source_of(value: SSAValue) -> SSAValue:
    """The result a value is (through views that keep the bytes)."""
    while isinstance(value.owner, VIEW_OPS) and keeps_bytes(value.owner):
        value = value.owner.input
    return value


def on_chip(value: SSAValue) -> bool:
    owner = source_of(value).owner
    return isinstance(owner, Operation) and ON_CHIP in owner.attributes


def home_of(value: SSAValue) -> int:
    return source_of(value).owner.attributes[HOME].value.data  # type: ignore[union-attr]


def spilled(op: Operation) -> bool:
    return SPILL in op.attributes


def mark(op: Operation, home: int, spill: bool) -> None:
    op.attributes[ON_CHIP] = UnitAttr()
    op.attributes[HOME] = IntegerAttr(home, i64)
    if spill:
        op.attributes[SPILL] = UnitAttr()


def map_bytes(value: SSAValue, target: TargetDescription) -> int:
    """The padded NHWC map of a tensor in SRAM."""
    h, w, c = hwc(shape_of(value), value.owner)
    return h * w * target.align(c)


# --------------------------------------------------------------------------------------
# Who can write and read a tensor on chip
# --------------------------------------------------------------------------------------


def _dense_groups(op: npu.ConvOp) -> bool:
    """Whether every CONV of the op writes (and reads) all channels of its maps: no group
    of a grouped dense convolution writes a channel range of a wider map."""
    return op.is_depthwise or op.group.value.data == 1


def writes_on_chip(op: Operation, target: TargetDescription) -> bool:
    """Whether the op's unit can write its whole result into one padded SRAM map."""
    if isinstance(op, npu.ConvOp):
        return _dense_groups(op)
    if isinstance(op, npu.EltwiseOp):
        return op.channels() <= target.eltwise.max_channels
    return isinstance(op, npu.PoolOp | npu.TableOp | npu.ClampOp)


def reads_on_chip(op: Operation, operand: int, target: TargetDescription) -> bool:
    """Whether the op can read its operand `operand` out of a padded SRAM map."""
    if isinstance(op, npu.ConvOp):
        return operand == 0 and _dense_groups(op)
    if isinstance(op, npu.EltwiseOp):
        return op.channels() <= target.eltwise.max_channels
    return isinstance(op, npu.PoolOp | npu.TableOp | npu.ClampOp | npu.ConcatOp | npu.InterleaveOp | npu.PadOp
                      | npu.RelayoutOp)


@dataclass
class Readers:
    """Where a result is read: the layers that read it on chip, and whether DDR is needed."""

    on_chip: list[int] = field(default_factory=list)
    needs_ddr: bool = False


def readers_of(value: SSAValue, positions: dict[Operation, int], target: TargetDescription) -> Readers:
    """Every use of the value and of the byte-keeping views of it."""
    found = Readers()
    pending = [value]
    while pending:
        current = pending.pop()
        for use in current.uses:
            reader = use.operation
            if isinstance(reader, VIEW_OPS):
                if keeps_bytes(reader):
                    pending.append(reader.result)
                else:
                    found.needs_ddr = True
            elif isinstance(reader, npu.ConcatOp) and concat_in_place(reader):
                found.needs_ddr = True  # its producer stores it into the concat's map
            elif reader in positions and not isinstance(reader, npu.HostOp) and reads_on_chip(reader, use.index, target):
                found.on_chip.append(positions[reader])
            elif isinstance(reader, fixed.DequantizeOp | func.ReturnOp) or reader in positions:
                found.needs_ddr = True
    return found


# --------------------------------------------------------------------------------------
# Placement over live intervals
# --------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Interval:
    first: int  # layer positions, inclusive
    last: int
    address: int
    size: int

    def overlaps(self, first: int, last: int) -> bool:
        return not (self.last < first or last < self.first)


class Placement:
    """SRAM regions, each live over an interval of layers; first fit, aligned."""

    def __init__(self, sram_bytes: int):
        self.sram_bytes = sram_bytes
        self.regions: list[Interval] = []

    def busy(self, first: int, last: int) -> list[tuple[int, int]]:
        return sorted((r.address, r.address + r.size) for r in self.regions if r.overlaps(first, last))

    def first_fit(self, first: int, last: int, size: int) -> int | None:
        """The lowest aligned address where `size` bytes are free from layer `first` to `last`."""
        address = 0
        for start, stop in self.busy(first, last):
            if address + size <= start:
                break
            address = max(address, align(stop, SRAM_ALIGNMENT))
        return address if address + size <= self.sram_bytes else None

    def take(self, first: int, last: int, size: int) -> int | None:
        address = self.first_fit(first, last, size)
        if address is not None:
            self.regions.append(Interval(first, last, address, max(size, 1)))
        return address

    def add(self, first: int, last: int, address: int, size: int) -> None:
        self.regions.append(Interval(first, last, address, max(size, 1)))

    def largest_gap(self, layer: int) -> int:
        """The largest free run of bytes at one layer."""
        best, address = 0, 0
        for start, stop in self.busy(layer, layer):
            best = max(best, start - address)
            address = max(address, align(stop, SRAM_ALIGNMENT))
        return max(best, self.sram_bytes - address)


def resident_intervals(function: func.FuncOp, target: TargetDescription) -> Iterable[tuple[Operation, int, int, int]]:
    """(producer, first layer, last layer, bytes) of every on-chip result, in program order."""
    positions = layer_positions(function)
    for op, position in positions.items():
        if ON_CHIP in op.attributes:
            readers = readers_of(op.results[0], positions, target)
            yield op, position, max([position, *readers.on_chip]), map_bytes(op.results[0], target)


def resident_placement(function: func.FuncOp, target: TargetDescription) -> Placement:
    """The SRAM the on-chip results take, at their homes, over their lives."""
    placement = Placement(target.memory.sram_bytes)
    for op, first, last, size in resident_intervals(function, target):
        placement.add(first, last, op.attributes[HOME].value.data, size)  # type: ignore[attr-defined]
    return placement


@dataclass(frozen=True)
class Residency:
    """Which operands a layer reads on chip, and whether it writes its result on chip."""

    inputs: tuple[bool, ...] = ()
    output: bool = False

    def input(self, index: int) -> bool:
        return index < len(self.inputs) and self.inputs[index]

    @staticmethod
    def of(op: Operation, target: TargetDescription) -> Residency:
        return Residency(tuple(on_chip(v) and reads_on_chip(op, i, target) for i, v in enumerate(op.operands)),
                         ON_CHIP in op.attributes)


def concat_in_place(op: Operation) -> bool:
    """Whether a concat's parts are stored straight into its map (each a channel slice, pixels
    the concat's channel count apart), so the concat copies nothing: every part is the result
    of a layer (whose STOREs take any pixel stride), distinct, and read otherwise only by
    layers (which read a strided map as well), not by the host or as a program output."""
    if not isinstance(op, npu.ConcatOp) or len(set(op.inputs)) != len(op.inputs):
        return False
    for part in op.inputs:
        if not isinstance(part.owner, LAYER_OPS) or isinstance(part.owner, npu.ConcatOp):
            return False
        if any(not isinstance(use.operation, LAYER_OPS) or (isinstance(use.operation, npu.ConcatOp) and use.operation is not op)
               for use in part.uses):
            return False
    return True
