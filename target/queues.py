"""The queue model of docs/isa.md section 3: when each instruction of a program runs.

Instructions are fetched in program order into two queues: the DMA queue (LOAD, STORE) and
the EXEC queue (CONV, ELTWISE, POOL, TABLE, CLAMP). Each queue runs its instructions in
order, one at a time; the two queues run concurrently. They synchronise only through tokens:
an instruction with `signal` = 1 gives the other queue one token when it completes, one with
`wait` = 1 takes one token from the other queue before it starts (it waits while there is
none). SYNC is a barrier: it starts when every earlier instruction has completed, and no later
instruction starts before it completes.

`schedule(instructions, cycles)` gives every executed instruction its start and end cycle and
the program's cycles (the makespan), or raises XnpuError for a program that deadlocks or
overflows a token counter. `check_hazards(...)` raises XnpuError when two instructions that
touch the same SRAM or DDR bytes (one writing them, target/footprints.py) overlap in time or
run in the order opposite to the program's: the program would then not mean what its text
says. A program without hazards computes exactly what running it one instruction at a time,
in program order, computes; that is how the simulator runs the data.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from xnpu.core.errors import XnpuError
from xnpu.target.encoding import Instruction
from xnpu.target.footprints import Footprint, conflicting_predecessors, footprint

DMA = "DMA"
EXEC = "EXEC"
QUEUES = (DMA, EXEC)
QUEUE_OF = {"LOAD": DMA, "STORE": DMA, "CONV": EXEC, "ELTWISE": EXEC, "POOL": EXEC, "TABLE": EXEC, "CLAMP": EXEC}
TOKEN_CAPACITY = 255  # tokens one counter holds; a signal beyond that is an error


def queue_of(instruction: Instruction) -> str | None:
    """DMA or EXEC; None for SYNC (the barrier of both)."""
    return QUEUE_OF.get(instruction.op)


def other(queue: str) -> str:
    return EXEC if queue == DMA else DMA


def executed_count(instructions: Sequence[Instruction]) -> int:
    """How many instructions run: up to and including the first SYNC halt=1."""
    for index, instruction in enumerate(instructions):
        if instruction.op == "SYNC" and instruction["halt"]:
            return index + 1
    return len(instructions)


@dataclass(frozen=True)
class Timing:
    """Start and end cycle of every executed instruction, and the program's cycles."""

    start: tuple[int, ...]
    end: tuple[int, ...]
    cycles: int

    @property
    def executed(self) -> int:
        return len(self.start)


def _describe(index: int, instruction: Instruction) -> str:
    return f"instruction {index} ({instruction.op})"


def schedule(instructions: Sequence[Instruction], cycles: Sequence[int]) -> Timing:
    """The timing of the executed instructions under the queue model; XnpuError on a deadlock
    (a `wait` no signal will ever satisfy) or a token counter beyond TOKEN_CAPACITY."""
    count = executed_count(instructions)
    start, end = [0] * count, [0] * count
    pushed: dict[str, list[int]] = {DMA: [], EXEC: []}  # end cycle of each signal, per signalling queue
    taken: dict[str, list[int]] = {DMA: [], EXEC: []}  # start cycle of each wait, per waiting queue
    signallers: dict[str, list[int]] = {DMA: [], EXEC: []}
    free = {DMA: 0, EXEC: 0}
    position = 0
    while position < count:
        barrier = position
        while barrier < count and instructions[barrier].op != "SYNC":
            barrier += 1
        lists = {q: [i for i in range(position, barrier) if QUEUE_OF[instructions[i].op] == q] for q in QUEUES}
        heads = {DMA: 0, EXEC: 0}
        while any(heads[q] < len(lists[q]) for q in QUEUES):
            progressed = False
            for queue in QUEUES:
                source = other(queue)
                while heads[queue] < len(lists[queue]):
                    index = lists[queue][heads[queue]]
                    instruction = instructions[index]
                    begin = free[queue]
                    if instruction["wait"]:
                        token = len(taken[queue])
                        if token >= len(pushed[source]):
                            break  # no token yet: the other queue may still give one
                        begin = max(begin, pushed[source][token])
                        taken[queue].append(begin)
                    start[index], end[index] = begin, begin + cycles[index]
                    free[queue] = end[index]
                    if instruction["signal"]:
                        pushed[queue].append(end[index])
                        signallers[queue].append(index)
                    heads[queue] += 1
                    progressed = True
            if not progressed:
                blocked = [lists[q][heads[q]] for q in QUEUES if heads[q] < len(lists[q])]
                first = min(blocked)
                raise XnpuError(f"{_describe(first, instructions[first])}: deadlock: it waits for a token from the "
                                f"{other(QUEUE_OF[instructions[first].op])} queue that no instruction before the next "
                                "SYNC will signal")
        if barrier < count:  # the SYNC: after everything before it, before everything after it
            begin = max(free.values())  # each queue runs in order: its last end is its latest
            start[barrier], end[barrier] = begin, begin + cycles[barrier]
            free = {DMA: end[barrier], EXEC: end[barrier]}
        position = barrier + 1
    for queue in QUEUES:
        _check_capacity(instructions, pushed[queue], taken[other(queue)], signallers[queue])
    return Timing(tuple(start), tuple(end), max(end, default=0))


def _check_capacity(instructions, pushes: list[int], takes: list[int], signallers: list[int]) -> None:
    """At no cycle may a counter hold more than TOKEN_CAPACITY tokens (a take at the cycle of
    a signal may use it)."""
    if len(pushes) <= TOKEN_CAPACITY:
        return
    events = sorted([(t, 0, n) for n, t in enumerate(pushes)] + [(t, -1, -1) for t in takes])
    held = 0
    for _, kind, n in events:
        held += 1 if kind == 0 else -1
        if held > TOKEN_CAPACITY:
            index = signallers[n]
            raise XnpuError(f"{_describe(index, instructions[index])}: its signal would be token "
                            f"{TOKEN_CAPACITY + 1} the other queue has not taken yet (a counter holds {TOKEN_CAPACITY})")


def footprints(instructions: Sequence[Instruction], alignment: int) -> list[Footprint]:
    return [footprint(i, alignment) for i in instructions]


def check_hazards(instructions: Sequence[Instruction], timing: Timing, alignment: int,
                  prints: Sequence[Footprint] | None = None) -> None:
    """XnpuError naming the first instruction (in program order) that starts before an earlier
    instruction it conflicts with has completed (docs/isa.md section 3, "Hazards"). `prints`:
    the executed instructions' footprints, where the caller has them already."""
    count = timing.executed
    program = list(instructions[:count])
    prints = footprints(program, alignment) if prints is None else list(prints)
    queues = [queue_of(i) for i in program]
    for index, predecessors in enumerate(conflicting_predecessors(prints, queues)):
        for earlier in predecessors:
            if timing.end[earlier] > timing.start[index]:
                raise XnpuError(_hazard_message(program, prints, timing, earlier, index))


def _hazard_message(program, prints: list[Footprint], timing: Timing, earlier: int, later: int) -> str:
    def overlap(a: tuple, b: tuple) -> tuple[int, int] | None:
        for s in a:
            for t in b:
                if s[0] < t[1] and t[0] < s[1]:
                    return max(s[0], t[0]), min(s[1], t[1])
        return None

    first, second = prints[earlier], prints[later]
    for memory in ("sram", "ddr"):
        for mine, verb in (("writes", "writes"), ("reads", "reads")):
            for theirs, their_verb in (("writes", "writes"), ("reads", "reads")):
                if mine == "reads" and theirs == "reads":
                    continue
                span = overlap(getattr(second, f"{memory}_{mine}"), getattr(first, f"{memory}_{theirs}"))
                if span is not None:
                    return (f"{_describe(later, program[later])}: hazard: it {verb} {memory.upper()} [{span[0]}, {span[1]}) "
                            f"which {_describe(earlier, program[earlier])}, earlier "
                            f"in the program, {their_verb}; it starts at cycle {timing.start[later]}, before that one "
                            f"completes at cycle {timing.end[earlier]} (no dependency token orders them)")
    return (f"{_describe(later, program[later])}: hazard with {_describe(earlier, program[earlier])}: it starts at cycle "
            f"{timing.start[later]}, before that one completes at cycle {timing.end[earlier]}")
