"""npu-sink-tables: a table lookup after a data movement becomes its producers' epilogue.

A standalone `npu.table` (a rescale before a concat, R16, or any int8 -> int8 function) reads
every byte of its input once and writes each independently, so it commutes with an
interleave or an edge pad, which only copy bytes to other places. When such a movement's
inputs are all results of compute units read by nothing else, the table is applied by those
units instead, as (part of) their epilogue, and the movement then copies the final values:
the TABLE instructions, their LOADs and STOREs disappear, and the result is the same byte for
byte (the composed table is the exact composition of the unit's clamp or table and this one
over all 256 codes). segnet_like's concat rescales after its upsamplings are such tables.

A unit's epilogue is one clamp or one table (after its relu flag): a clamp c followed by the
table T is the table T[c(x)], a table T1 followed by T is T[T1[x]].
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from xdsl.context import Context
from xdsl.dialects.builtin import ModuleOp
from xdsl.ir import Operation
from xdsl.passes import ModulePass

from xnpu.backend.npu_annotations import only_function, resolve_target
from xnpu.dialects import npu
from xnpu.ir.locations import fused_location
from xnpu.semantics import fixed_point
from xnpu.semantics.units import epilogue
from xnpu.target import legality
from xnpu.target.description import TargetDescription

MOVEMENTS = (npu.InterleaveOp, npu.PadOp)
CODES = np.arange(-fixed_point.TABLE_SIZE // 2, fixed_point.TABLE_SIZE // 2)


def _producers(movement: Operation) -> list[npu.UnitOp] | None:
    """The units whose results the movement copies, if it alone reads each of them."""
    units: list[npu.UnitOp] = []
    for value in movement.operands:
        owner = value.owner
        if not isinstance(owner, npu.ConvOp | npu.EltwiseOp | npu.PoolOp):
            return None
        if any(use.operation is not movement for use in value.uses):
            return None
        if owner not in units:
            units.append(owner)
    return units


def sink_tables(function, target: TargetDescription) -> int:
    """Move every table that can into its producers' epilogues; how many."""
    if legality.unit_problem(target, "table") is not None:
        return 0
    moved = 0
    for table in [op for op in function.body.block.ops if isinstance(op, npu.TableOp)]:
        movement = table.input.owner
        if not isinstance(movement, MOVEMENTS) or len(list(movement.results[0].uses)) != 1:
            continue
        units = _producers(movement)
        if not units:
            continue
        entries = table.entries()
        for unit in units:
            before = epilogue(CODES, unit.clamp_bounds(), unit.table_entries())
            composed = fixed_point.table_lookup(before, entries)
            for name in ("clamp", "table"):
                unit.properties.pop(name, None)
            unit.properties["table"] = npu.table_attr(composed)
            unit.location = fused_location(unit, table)
        table.result.replace_all_uses_with(movement.results[0])
        table.detach()
        table.erase()
        moved += 1
    return moved


@dataclass(frozen=True)
class NpuSinkTablesPass(ModulePass):
    """Apply a table that follows an interleave or an edge pad in the units that produce what they copy."""

    name = "npu-sink-tables"
    target: str | None = None  # default: the module's npu.target

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        target = resolve_target(op, self.target, self.name)
        sink_tables(only_function(op, self.name), target)
