"""npu-order-layers: a layer that only finishes a map early in the program runs early.

Program order decides how long each map lives: a map read by its next layer and once more at
the end of the network (a skip connection to a concat) stays alive, in SRAM or in DDR, in
between. A layer whose result goes to DDR anyway (it is a part of a concat stored in place,
npu_residency.concat_in_place) and that is the last reader of its input can run right after
that input's other readers instead: the input then dies there, and what the layer writes
waits in DDR for the concat's reader. segnet_like's rescale of its first map for the last
concat is such a layer: moved up, it reads that map while it is still on chip, which frees
400 KB of SRAM for the rest of the network.

Only layers with one map operand move (their other operands are constants, which move with
them when they are defined after the new place); data flow is kept: a layer never moves
before what its operands need.
"""

from __future__ import annotations

from dataclasses import dataclass

from xdsl.context import Context
from xdsl.dialects.builtin import ModuleOp
from xdsl.ir import Operation, SSAValue
from xdsl.passes import ModulePass

from xnpu.backend.npu_annotations import only_function
from xnpu.backend.npu_residency import concat_in_place
from xnpu.dialects import fixed, npu


def _only_into_concats(op: Operation) -> bool:
    uses = list(op.results[0].uses)
    return bool(uses) and all(concat_in_place(use.operation) for use in uses)


def _map_operand(op: Operation) -> SSAValue | None:
    maps = [v for v in op.operands if not isinstance(v.owner, fixed.ConstantOp)]
    return maps[0] if len(maps) == 1 else None


def order_layers(function) -> int:
    """Move the layers that can; how many moved."""
    block = function.body.block
    moved = 0
    for op in [o for o in block.ops if isinstance(o, npu.TableOp | npu.ClampOp | npu.PoolOp | npu.EltwiseOp | npu.ConvOp)]:
        value = _map_operand(op)
        if value is None or not _only_into_concats(op) or not isinstance(value.owner, Operation):
            continue
        order = {o: n for n, o in enumerate(block.ops)}
        others = [use.operation for use in value.uses if use.operation is not op]
        if any(order[other] > order[op] for other in others):
            continue  # not the last reader: moving it frees nothing
        anchor = max([value.owner, *others], key=lambda o: order[o])
        while isinstance(anchor.next_op, fixed.ConstantOp):  # the constants defined right after it stay there
            anchor = anchor.next_op
        if order[anchor] + 1 >= order[op]:
            continue
        constants = [v.owner for v in op.operands if isinstance(v.owner, fixed.ConstantOp) and order[v.owner] > order[anchor]]
        for definition in (*constants, op):
            definition.detach()
            block.insert_op_after(definition, anchor)
            anchor = definition
        moved += 1
    return moved


@dataclass(frozen=True)
class NpuOrderLayersPass(ModulePass):
    """Run a layer that writes a concat's part right after its input's other readers, when it is that input's last reader."""

    name = "npu-order-layers"

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        order_layers(only_function(op, self.name))
