"""npu-plan-sram: the SRAM address of every buffer of every layer, double-buffered.

Each layer's working set (npu_tiling `working_set`: its constants and the tiles of the maps
it streams, with two slots each where it has more than one tile or chunk, so the DMA fills
one slot while the unit works on the other) is one block, placed at the lowest address free
over this layer and the one before (bytes that layer did not use, so nothing orders this
layer's first LOADs after its last reads), or where that is full, at the lowest address free
at this layer: beside the on-chip results alive then (npu-keep-on-chip gave them their homes)
and beside the constants regions of later layers that npu-prefetch-weights chose to load
while this layer runs (such a region is placed over all those layers' time).
Layers of neighbouring times therefore get disjoint buffers wherever SRAM allows, which is
what lets isa-schedule run one layer's DMA during another's compute.

`npu.sram = {name = array<i64: slot 0, slot 1>}` on every layer: the address of each slot of
each buffer (a constants slot as its parts: weights, bias, records, table).
"""

from __future__ import annotations

from dataclasses import dataclass

from xdsl.context import Context
from xdsl.dialects import func
from xdsl.dialects.builtin import IntegerAttr, ModuleOp, i64
from xdsl.ir import Operation
from xdsl.passes import ModulePass

from xnpu.backend.npu_annotations import (
    LAYER_OPS,
    SINGLE_BUFFERED,
    SRAM,
    TILE,
    LoweringError,
    get_ints,
    node_names,
    only_function,
    resolve_target,
    set_slots,
)
from xnpu.backend.npu_residency import Residency, layer_positions, resident_placement
from xnpu.backend.npu_tiling import CONSTANTS, Buffer, block_layout, constant_parts, working_set
from xnpu.dialects import npu
from xnpu.target.description import TargetDescription

PREFETCH = "npu.prefetch"  # on a layer: how many layers before it its constants are loaded
PREFETCH_DEPTH = 4  # the most layers ahead a layer's constants may be loaded


@dataclass(frozen=True)
class Block:
    """A layer's buffers, and its constants as a region of their own."""

    offsets: dict[str, list[int]]  # within the block, constants left out
    size: int
    parts: list[tuple[str, int]]  # what one constants slot holds
    constant_slot: int  # bytes of one constants slot (0: none)
    constant_slots: int

    @property
    def constants(self) -> int:
        return block_layout([Buffer(CONSTANTS, self.constant_slot, self.constant_slots)])[1] if self.constant_slot else 0


def block_of(op: Operation, target: TargetDescription) -> Block:
    tile = get_ints(op, TILE, "npu-tile")
    buffers = working_set(op, tile, target, residency=Residency.of(op, target), double=SINGLE_BUFFERED not in op.attributes)
    parts = constant_parts(op, tile[2], target) if len(tile) == 3 and not isinstance(op, npu.ConcatOp) else []
    constants = next((b for b in buffers if b.name == CONSTANTS), None)
    offsets, size = block_layout(buffers, parts, without_constants=True)
    return Block(offsets, size, parts, constants.size if constants else 0, constants.slots if constants else 0)


def _constant_slots(base: int, block: Block) -> dict[str, list[int]]:
    offsets, _ = block_layout([Buffer(CONSTANTS, block.constant_slot, block.constant_slots)], block.parts)
    return {name: [base + o for o in where] for name, where in offsets.items()}


def plan_sram(function: func.FuncOp, target: TargetDescription, decide_prefetch: bool = False) -> dict[Operation, dict[str, list[int]]]:
    """Every layer's buffer slots, at SRAM addresses. A layer's constants are a region over its
    own time, or, prefetched, over the layers before it too: with `decide_prefetch` the region
    is tried from PREFETCH_DEPTH layers before down to one, beside the blocks of those layers,
    and `npu.prefetch` set to how early it fits (leaving room for the layer's own block); else
    the annotation says how early it is."""
    positions = layer_positions(function)
    placement = resident_placement(function, target)
    ordered = list(positions)
    blocks = {op: block_of(op, target) for op in ordered if isinstance(op, LAYER_OPS)}
    constants: dict[Operation, int] = {}  # layer -> address of its constants region
    plans: dict[Operation, dict[str, list[int]]] = {}
    for index, op in enumerate(ordered):
        if not isinstance(op, LAYER_OPS):
            continue
        layer = positions[op]
        block = blocks[op]
        if block.constant_slot and op not in constants:
            constants[op] = _take(placement, layer, layer, block.constants, op, target)
        # bytes the layer before did not touch, where there are: nothing then orders this
        # layer's first loads and writes after that layer's last reads
        base = placement.take(layer - 1, layer, block.size) if layer > 0 else None
        if base is None:
            base = _take(placement, layer, layer, block.size, op, target)
        slots = {name: [base + o for o in where] for name, where in block.offsets.items()}
        if block.constant_slot:
            slots.update(_constant_slots(constants[op], block))
        plans[op] = slots
        following = ordered[index + 1] if index + 1 < len(ordered) else None
        if not isinstance(following, LAYER_OPS) or not blocks[following].constant_slot:
            continue
        region, rest = blocks[following].constants, blocks[following].size
        nxt = positions[following]
        if decide_prefetch:
            following.attributes.pop(PREFETCH, None)
            for depth in range(min(PREFETCH_DEPTH, nxt), 0, -1):
                address = placement.take(nxt - depth, nxt, region)
                if address is None:
                    continue
                if placement.first_fit(nxt, nxt, rest) is not None:
                    following.attributes[PREFETCH] = IntegerAttr(depth, i64)
                    constants[following] = address
                    break
                placement.regions.pop()
        elif PREFETCH in following.attributes:
            depth = following.attributes[PREFETCH].value.data  # type: ignore[attr-defined]
            address = placement.take(nxt - depth, nxt, region)
            if address is None:
                raise LoweringError(f"{node_names(following)}: no room for its constants {depth} layer(s) before it "
                                    f"(target {target.name}); run npu-prefetch-weights again")
            constants[following] = address
    return plans


def _take(placement, first: int, last: int, size: int, op: Operation, target: TargetDescription) -> int:
    address = placement.take(first, last, size)
    if address is None:
        raise LoweringError(f"{node_names(op)}: its {size}-byte working set does not fit the SRAM left beside "
                            f"the results kept on chip (target {target.name}); run npu-tile after npu-keep-on-chip")
    return address


@dataclass(frozen=True)
class NpuPlanSramPass(ModulePass):
    """SRAM addresses of every layer's buffer slots, beside the results kept on chip (npu.sram)."""

    name = "npu-plan-sram"
    target: str | None = None  # default: the module's npu.target

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        target = resolve_target(op, self.target, self.name)
        for layer, slots in plan_sram(only_function(op, self.name), target).items():
            set_slots(layer, SRAM, slots)
