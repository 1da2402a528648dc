"""isa-schedule: the program order in which the DMA queue runs ahead of the EXEC queue.

The two queues of docs/isa.md section 3 each run in program order, so the order of the
instructions decides how much DMA work overlaps computation: a STORE written before the next
tile's LOAD keeps that LOAD waiting until the STORE's data is computed. This pass reorders the
program by list scheduling under the queue model, without changing what it computes: two
instructions that touch the same bytes (one writing them, target/footprints.py) keep their
order, so only independent instructions move past each other; SYNCs stay where they are and
nothing crosses them.

The EXEC queue keeps its order: it is the machine's bottleneck on every bench model. The DMA
queue gets its order from a simulation of both queues: whenever the DMA engine is free, it
takes, among the DMA instructions whose predecessors are all placed, the one the earliest EXEC
instruction depends on (directly or through other DMA instructions); when that one still has to
wait for its inputs, a less urgent one that is ready and done before it can start fills the
gap. The new program order is the simulated start order, so `isa-insert-dependencies` on it
gives exactly the simulated timing.
"""

from __future__ import annotations

import bisect
from collections.abc import Sequence
from dataclasses import dataclass

from xdsl.context import Context
from xdsl.dialects.builtin import ModuleOp
from xdsl.passes import ModulePass

from xnpu.backend.emit import module_target_of
from xnpu.dialects import isa
from xnpu.target.cost import instruction_cycles
from xnpu.target.description import TargetDescription
from xnpu.target.encoding import Instruction
from xnpu.target.footprints import conflicting_predecessors, footprint
from xnpu.target.queues import DMA, EXEC, queue_of

NEVER = float("inf")


def schedule_order(instructions: Sequence[Instruction], target: TargetDescription) -> list[int]:
    """A new program order (indices into `instructions`) that keeps every conflicting pair."""
    order: list[int] = []
    start = 0
    for index, instruction in enumerate(instructions):
        if instruction.op == "SYNC":
            order += _segment(instructions, range(start, index), target)
            order.append(index)
            start = index + 1
    order += _segment(instructions, range(start, len(instructions)), target)
    return order


def _segment(instructions: Sequence[Instruction], indices: range, target: TargetDescription) -> list[int]:
    """List scheduling of the instructions between two SYNCs (indices local to the segment)."""
    program = [instructions[i] for i in indices]
    if not program:
        return []
    queues = [queue_of(i) for i in program]
    cycles = [instruction_cycles(i, target) for i in program]
    predecessors = conflicting_predecessors([footprint(i, target.memory.channel_alignment) for i in program], queues)
    successors: list[list[int]] = [[] for _ in program]
    for index, before in enumerate(predecessors):
        for p in before:
            successors[p].append(index)
    execs = [i for i, q in enumerate(queues) if q == EXEC]
    rank = {i: n for n, i in enumerate(execs)}
    urgency = [NEVER] * len(program)  # the EXEC rank that needs the instruction first
    for index in range(len(program) - 1, -1, -1):
        if queues[index] == EXEC:
            urgency[index] = rank[index]
        else:
            urgency[index] = min((urgency[s] for s in successors[index]), default=NEVER)
    successors = [sorted(set(s)) for s in successors]
    # A DMA instruction is a candidate once its DMA predecessors are placed; it is ready
    # once its EXEC predecessors are too. A candidate still waiting for EXEC work gets a lower
    # bound on its start: that work done back to back from the EXEC queue's current time.
    dma_waiting = [sum(1 for p in predecessors[i] if queues[p] == DMA) for i in range(len(program))]
    exec_last = [max((rank[p] for p in predecessors[i] if queues[p] == EXEC), default=-1) for i in range(len(program))]
    exec_prefix = [0]
    for i in execs:
        exec_prefix.append(exec_prefix[-1] + cycles[i])
    end: list[float] = [0.0] * len(program)
    start: list[float] = [0.0] * len(program)
    placed = [False] * len(program)
    latest = [0.0] * len(program)  # the latest end among an instruction's placed predecessors
    # the candidates as (urgency, index), most urgent first: the choices below take the first
    # that qualifies instead of the minimum over every candidate per step
    candidates = sorted((urgency[i], i) for i in range(len(program)) if queues[i] == DMA and dma_waiting[i] == 0)
    free = {DMA: 0.0, EXEC: 0.0}
    next_exec = 0

    def place(index: int, begin: float) -> None:
        placed[index] = True
        start[index], end[index] = begin, begin + cycles[index]
        free[queues[index]] = end[index]
        for s in successors[index]:
            latest[s] = max(latest[s], end[index])
            if queues[index] == DMA and queues[s] == DMA:
                dma_waiting[s] -= 1
                if dma_waiting[s] == 0:
                    bisect.insort(candidates, (urgency[s], s))

    def ready(index: int) -> bool:
        return exec_last[index] < next_exec

    def earliest(index: int) -> float:
        """The candidate's start if the DMA took it next (a lower bound while EXEC work is due)."""
        begin = max(free[DMA], latest[index])
        if not ready(index):
            begin = max(begin, free[EXEC] + exec_prefix[exec_last[index] + 1] - exec_prefix[next_exec])
        return begin

    while next_exec < len(execs) or candidates:
        exec_index = execs[next_exec] if next_exec < len(execs) else None
        exec_ready = exec_index is not None and all(placed[p] for p in predecessors[exec_index])
        exec_start = max(free[EXEC], latest[exec_index]) if exec_ready else None
        if exec_ready and (not candidates or exec_start <= free[DMA]):
            place(exec_index, exec_start)
            next_exec += 1
            continue
        if not candidates:
            raise AssertionError("isa-schedule: the EXEC queue waits for DMA work that cannot be placed")
        now = free[DMA]
        best = candidates[0][1]
        best_start = earliest(best)
        choice = best if ready(best) else None
        if best_start > now:  # fill the gap with ready work that is done before the urgent one can start
            filler = next((i for _, i in candidates
                           if ready(i) and earliest(i) <= now and now + cycles[i] <= best_start), None)
            if filler is not None:
                choice = filler
        if choice is None:  # the most urgent work waits for EXEC: let EXEC go on first
            if exec_ready:
                place(exec_index, exec_start)
                next_exec += 1
                continue
            choice = next((i for _, i in candidates if ready(i)), None)
            if choice is None:
                raise AssertionError("isa-schedule: no DMA candidate is ready and the EXEC queue cannot go on")
        del candidates[bisect.bisect_left(candidates, (urgency[choice], choice))]
        place(choice, earliest(choice))
    unplaced = [i for i in range(len(program)) if not placed[i]]
    if unplaced:
        raise AssertionError(f"isa-schedule: {len(unplaced)} instructions were never ready")
    local = sorted(range(len(program)), key=lambda i: (start[i], i))
    return [indices[i] for i in local]


def schedule_program(instructions: Sequence[Instruction], target: TargetDescription) -> list[Instruction]:
    return [instructions[i] for i in schedule_order(instructions, target)]


@dataclass(frozen=True)
class IsaSchedulePass(ModulePass):
    """Reorder an isa program so the DMA queue runs ahead of the EXEC queue (conflicting instructions keep their order)."""

    name = "isa-schedule"

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        target = module_target_of(op)
        ops = isa.program_ops(op)
        if not ops:
            return
        order = schedule_order([o.instruction() for o in ops], target)
        block = op.body.block
        position = 0
        while position < len(ops):  # one segment at a time: its instructions move among themselves
            end = position
            while end < len(ops) and ops[end].MNEMONIC != "SYNC":
                end += 1
            if end > position:
                anchor = ops[end - 1].next_op  # a host segment's description or the SYNC stays after them
                moved = [ops[i] for i in order[position:end]]
                for o in moved:
                    o.detach()
                for o in moved:
                    if anchor is None:
                        block.add_op(o)
                    else:
                        block.insert_op_before(o, anchor)
            position = end + 1
