"""npu-keep-on-chip: layer outputs that stay in SRAM for the layers that read them.

Vela's cascading: when a layer's result fits in SRAM beside everything else there while it is
alive, the producing unit writes it straight into its SRAM home and the reading units read it
there, so the STORE of every tile and the LOAD of every tile that reads it disappear, and a
reader can start as soon as the producer's last instruction is done.

In program order, each result a unit can write on chip (backend/npu_residency.py
`writes_on_chip`) and some layer can read on chip is given the lowest SRAM home that is free
from its producer to its last on-chip reader (first fit over the homes given so far). It is
kept there only if every layer of that interval still has a free run of SRAM for its smallest
working set (npu-tile's `smallest_working_set`, counting what is on chip already); else it
is spilled as before. A result that is also read from DDR (by the host, as a program output,
through a view that reorders its bytes) is kept and also stored (`npu.spill`).

Annotations on the producer: `npu.on_chip`, `npu.sram_home = address`, `npu.spill`.
"""

from __future__ import annotations

from dataclasses import dataclass

from xdsl.context import Context
from xdsl.dialects.builtin import ModuleOp
from xdsl.ir import Operation
from xdsl.passes import ModulePass

from xnpu.backend.npu_annotations import only_function, resolve_target
from xnpu.backend.npu_residency import (
    HOME,
    ON_CHIP,
    SPILL,
    Placement,
    layer_positions,
    map_bytes,
    mark,
    readers_of,
    writes_on_chip,
)
from xnpu.backend.npu_tile import smallest_working_set
from xnpu.dialects import npu
from xnpu.target.description import TargetDescription


def keep_on_chip(function, target: TargetDescription) -> int:
    """Mark the results kept on chip; how many."""
    positions = layer_positions(function)
    by_position = {position: op for op, position in positions.items()}
    placement = Placement(target.memory.sram_bytes)
    kept = 0
    for op, position in positions.items():
        for name in (ON_CHIP, HOME, SPILL):
            op.attributes.pop(name, None)
        if not writes_on_chip(op, target):
            continue
        readers = readers_of(op.results[0], positions, target)
        if not readers.on_chip:
            continue
        last = max(readers.on_chip)
        size = map_bytes(op.results[0], target)
        home = placement.take(position, last, size)
        if home is None:
            continue
        mark(op, home, readers.needs_ddr)
        if all(_room_for(by_position[layer], layer, placement, target) for layer in range(position, last + 1)):
            kept += 1
            continue
        placement.regions.pop()
        for name in (ON_CHIP, HOME, SPILL):
            op.attributes.pop(name, None)
    return kept


def _room_for(op: Operation, layer: int, placement: Placement, target: TargetDescription) -> bool:
    """Whether the layer's smallest working set fits beside what is on chip at its time."""
    if isinstance(op, npu.HostOp):
        return True
    return smallest_working_set(op, target) <= placement.largest_gap(layer)


@dataclass(frozen=True)
class NpuKeepOnChipPass(ModulePass):
    """Keep layer outputs in SRAM for the layers that read them, where they fit (npu.on_chip, npu.sram_home, npu.spill)."""

    name = "npu-keep-on-chip"
    target: str | None = None  # default: the module's npu.target

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        target = resolve_target(op, self.target, self.name)
        keep_on_chip(only_function(op, self.name), target)
