"""isa-insert-dependencies: the dependency fields that make a program mean what its text says.

Under the queue model (docs/isa.md section 3) the DMA queue (LOAD, STORE) and the EXEC queue
(CONV, ELTWISE, POOL, TABLE, CLAMP) run concurrently; only tokens order an instruction after
one of the other queue. This pass sets `wait` and `signal` so that every instruction starts
after each earlier instruction of the other queue it conflicts with (same SRAM or DDR bytes,
one of them writing: xnpu.target.footprints) has completed, and no later: nothing else is
ordered, so independent work overlaps.

For an instruction Y of queue Q, let d(Y) be the last instruction of the other queue P, in
P's order, that Y conflicts with. Y must wait for d(Y) unless an earlier instruction of Q
already waited for d(Y) or a later one of P (queues run in order, so that one's completion
implies d(Y)'s), or a SYNC between them did. So walking the program in order, Y waits exactly
when d(Y) lies beyond what Q has waited for so far, and d(Y) signals. Both queues' waits then
name strictly increasing positions of the other queue, so the k-th wait of Q takes the token of
the k-th signal of P: the one it needs.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from xdsl.context import Context
from xdsl.dialects.builtin import ModuleOp
from xdsl.passes import ModulePass

from xnpu.backend.emit import module_target_of
from xnpu.dialects import isa
from xnpu.target.encoding import DEPENDENCY_NAMES, Instruction
from xnpu.target.footprints import conflicting_predecessors, footprint
from xnpu.target.queues import QUEUES, other, queue_of


def dependency_flags(instructions: Sequence[Instruction], alignment: int) -> list[tuple[int, int]]:
    """(wait, signal) of every instruction, in program order (SYNC: (0, 0))."""
    queues = [queue_of(i) for i in instructions]
    predecessors = conflicting_predecessors([footprint(i, alignment) for i in instructions], queues)
    position: list[int] = []  # each instruction's position in its own queue
    counts = {q: 0 for q in QUEUES}
    for queue in queues:
        position.append(counts[queue] if queue is not None else -1)
        if queue is not None:
            counts[queue] += 1
    waits = [0] * len(instructions)
    signals = [0] * len(instructions)
    satisfied = {q: -1 for q in QUEUES}  # the last position of the other queue known complete
    last = {q: -1 for q in QUEUES}  # the last instruction of each queue so far (index)
    for index, queue in enumerate(queues):
        if queue is None:  # SYNC: everything before it is complete for both queues
            for q in QUEUES:
                satisfied[q] = position[last[other(q)]] if last[other(q)] >= 0 else -1
            continue
        needed = [p for p in predecessors[index] if queues[p] == other(queue)]
        if needed:
            latest = max(needed, key=lambda p: position[p])
            if position[latest] > satisfied[queue]:
                waits[index] = 1
                signals[latest] = 1
                satisfied[queue] = position[latest]
        last[queue] = index
    return list(zip(waits, signals))


def insert_dependencies(instructions: Sequence[Instruction], alignment: int) -> list[Instruction]:
    """The program with its dependency fields set (any it had are replaced)."""
    result = []
    for instruction, (wait, signal) in zip(instructions, dependency_flags(instructions, alignment)):
        if instruction.op == "SYNC":
            result.append(instruction)
            continue
        result.append(Instruction(instruction.op, dict(instruction.fields, wait=wait, signal=signal)))
    return result


@dataclass(frozen=True)
class IsaInsertDependenciesPass(ModulePass):
    """Set the wait/signal fields of an isa program so that conflicting instructions of the two queues run in program order."""

    name = "isa-insert-dependencies"

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        target = module_target_of(op)
        ops = isa.program_ops(op)
        flags = dependency_flags([o.instruction() for o in ops], target.memory.channel_alignment)
        for instruction_op, (wait, signal) in zip(ops, flags):
            if instruction_op.MNEMONIC == "SYNC":
                continue
            for name, value in zip(DEPENDENCY_NAMES, (wait, signal)):
                instruction_op.properties[name] = isa.field_attr(value)
