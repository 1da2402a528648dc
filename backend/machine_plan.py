"""What a program's run does that does not depend on its data, worked out once per program.

`Plan.of(instructions, ...)` checks every instruction against the target, gives each its cycles
(xnpu.target.cost), schedules them on the two queues (xnpu.target.queues: start and end cycle of
each, the makespan), refuses a program with a hazard, and prepares the run's statistics. The
machine then only executes the data effects of the planned steps, in program order: a program
without hazards computes exactly that (docs/isa.md section 3).

Statistics (`RunStats`): `cycles` is the makespan; `by_class` the cycles each mnemonic keeps
its queue busy; `by_layer` the makespan split over layers (ONNX node names, the provenance):
a cycle belongs to the instruction the EXEC queue runs then, or, while EXEC waits, to the DMA
instruction running, or to the SYNC, so the layers' cycles add up to the program's; and per
layer the EXEC and DMA busy cycles beside them (`compute`, `dma`), the DDR bytes its DMA
moves and the compulsory ones among them (`ddr_bytes`, `compulsory_bytes`: the roofline,
backend/roofline.py).
"""

from __future__ import annotations

import bisect
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field

from xnpu.backend.machine_conv_tiles import ChannelTile, Tile, TileEpilogue, channel_groups, instruction_scratch_bytes, tile_groups
from xnpu.backend.roofline import ddr_traffic, ratio
from xnpu.core.errors import XnpuError, printable
from xnpu.target.cost import instruction_cycles
from xnpu.target.description import TargetDescription
from xnpu.target.encoding import Instruction
from xnpu.target.queues import DMA, EXEC, Timing, check_hazards, executed_count, footprints, queue_of, schedule

UNATTRIBUTED = "(no provenance)"
IDLE = "(idle)"


@dataclass(frozen=True)
class TraceRecord:
    """What the `trace` callback receives after each executed instruction (in program order)."""

    index: int
    mnemonic: str
    provenance: tuple[str, ...]
    cycles: int
    instruction: Instruction
    start: int = 0  # cycle the instruction starts (queue model)
    end: int = 0

    def __str__(self) -> str:
        origin = ", ".join(printable(name) for name in self.provenance) or "-"
        return f"{self.index:6d}  {self.mnemonic:<8s} {self.cycles:10d} cycles  {self.start:>10d}..{self.end:<10d}  {origin}"


@dataclass
class RunStats:
    """Cycles of a run under the queue model (docs/isa.md section 5)."""

    clock_mhz: float
    cycles: int = 0  # the makespan
    instructions: int = 0
    by_class: dict[str, int] = field(default_factory=dict)  # mnemonic -> busy cycles of its queue
    by_layer: dict[str, int] = field(default_factory=dict)  # ONNX node name(s) -> share of the makespan
    compute: dict[str, int] = field(default_factory=dict)  # layer -> EXEC busy cycles
    dma: dict[str, int] = field(default_factory=dict)  # layer -> DMA busy cycles
    ddr_bytes: dict[str, int] = field(default_factory=dict)  # layer -> DDR bytes its DMA moves
    compulsory_bytes: dict[str, int] = field(default_factory=dict)  # layer -> compulsory bytes it moves first
    tokens: list[int] = field(default_factory=list)  # SYNC tokens posted to the host, in order

    @property
    def time_us(self) -> float:
        return self.cycles / self.clock_mhz

    @property
    def compute_cycles(self) -> int:
        return sum(self.compute.values())

    @property
    def dma_cycles(self) -> int:
        return sum(self.dma.values())

    @property
    def roofline_ratio(self) -> float:
        """The makespan over the busier queue's cycles (1: perfect overlap)."""
        return ratio(self.cycles, self.compute_cycles, self.dma_cycles)

    def layer_ratio(self, layer: str) -> float:
        """A layer's share of the makespan over its busier queue's cycles; below 1 where other
        layers' computation hid its DMA (a prefetch)."""
        return ratio(self.by_layer.get(layer, 0), self.compute.get(layer, 0), self.dma.get(layer, 0))

    @property
    def total_ddr_bytes(self) -> int:
        return sum(self.ddr_bytes.values())

    @property
    def total_compulsory_bytes(self) -> int:
        return sum(self.compulsory_bytes.values())

    def merge(self, other: RunStats) -> None:
        """Accumulate another run (one more sample of a batch)."""
        self.cycles += other.cycles
        self.instructions += other.instructions
        for mine, theirs in ((self.by_class, other.by_class), (self.by_layer, other.by_layer),
                             (self.compute, other.compute), (self.dma, other.dma), (self.ddr_bytes, other.ddr_bytes),
                             (self.compulsory_bytes, other.compulsory_bytes)):
            for key, cycles in theirs.items():
                mine[key] = mine.get(key, 0) + cycles
        self.tokens.extend(other.tokens)

    def copy(self) -> RunStats:
        return RunStats(self.clock_mhz, self.cycles, self.instructions, dict(self.by_class), dict(self.by_layer),
                        dict(self.compute), dict(self.dma), dict(self.ddr_bytes), dict(self.compulsory_bytes))


def layer_name(provenance: Sequence[str]) -> str:
    return " + ".join(printable(name) for name in provenance) if provenance else UNATTRIBUTED


def _covered(intervals: list[tuple[int, int]], starts: list[int], begin: int, end: int) -> int:
    """Cycles of [begin, end) that the sorted, disjoint `intervals` cover."""
    total = 0
    k = max(bisect.bisect_right(starts, begin) - 1, 0)
    while k < len(intervals) and intervals[k][0] < end:
        total += max(0, min(end, intervals[k][1]) - max(begin, intervals[k][0]))
        k += 1
    return total


def attribute(instructions: Sequence[Instruction], timing: Timing, layers: Sequence[str]) -> dict[str, int]:
    """The makespan split over layers: EXEC's instruction where EXEC runs, else DMA's, else the SYNC's."""
    shares: dict[str, int] = {}

    def give(layer: str, cycles: int) -> None:
        if cycles:
            shares[layer] = shares.get(layer, 0) + cycles

    count = timing.executed
    runs = {DMA: [], EXEC: []}
    for index in range(count):
        queue = queue_of(instructions[index])
        if queue is None:
            give(layers[index], timing.end[index] - timing.start[index])  # a barrier: nothing else runs
        else:
            runs[queue].append(index)
    exec_spans = [(timing.start[i], timing.end[i]) for i in runs[EXEC]]
    exec_starts = [s for s, _ in exec_spans]
    for index in runs[EXEC]:
        give(layers[index], timing.end[index] - timing.start[index])
    for index in runs[DMA]:
        begin, end = timing.start[index], timing.end[index]
        give(layers[index], end - begin - _covered(exec_spans, exec_starts, begin, end))
    give(IDLE, timing.cycles - sum(shares.values()))
    return shares


@dataclass
class Plan:
    """A program's checked steps, their schedule and the statistics of one run."""

    instructions: Sequence[Instruction]
    # a CONV of a tile group has its tile, an in-place TABLE on a row tile's output its TileEpilogue
    steps: list[tuple[int, str, Instruction, Tile | ChannelTile | TileEpilogue | None]]
    timing: Timing
    cycles: list[int]
    stats: RunStats
    # id(instruction) -> what its fields alone give (its checks, its maps' or DMA's views, a
    # CONV's shapes, ELTWISE's loop constants), built on its first run (MachineMemory._decode)
    decoded: dict = field(default_factory=dict)

    @staticmethod
    def of(instructions: Sequence[Instruction], provenance: Mapping[int, tuple[str, ...]], target: TargetDescription,
           units: Mapping[str, Callable], compulsory: Sequence[tuple[str, int, int]] = ()) -> Plan | None:
        """None when an instruction fails a check: the run then reports it at its turn. A
        program that deadlocks or has a hazard is refused here, before anything runs.
        `compulsory`: the DDR ranges whose bytes a run must move (backend/roofline.py)."""
        program = list(instructions[: executed_count(instructions)])
        cycles = []
        for instruction in program:
            mnemonic = getattr(instruction, "op", None)
            if not isinstance(instruction, Instruction) or mnemonic not in units:
                return None
            try:
                target.check_instruction(instruction)
                cycles.append(instruction_cycles(instruction, target))
            except XnpuError:
                return None
        timing = schedule(program, cycles)
        prints = footprints(program, target.memory.channel_alignment)
        check_hazards(program, timing, target.memory.channel_alignment, prints)
        layers = [layer_name(provenance.get(index, ())) for index in range(len(program))]
        stats = RunStats(target.cost.clock_mhz, timing.cycles, len(program))
        stats.by_layer = attribute(program, timing, layers)
        for index, instruction in enumerate(program):
            stats.by_class[instruction.op] = stats.by_class.get(instruction.op, 0) + cycles[index]
            queue = queue_of(instruction)
            if queue is not None:
                busy = stats.compute if queue == EXEC else stats.dma
                busy[layers[index]] = busy.get(layers[index], 0) + cycles[index]
        stats.ddr_bytes, stats.compulsory_bytes = ddr_traffic(program, layers, target.memory.channel_alignment, compulsory)
        # tile groups (rows, output channels) no larger than the program's largest convolution
        # (the memory the simulator's chunks of samples are sized for)
        scratch = max((instruction_scratch_bytes(i) for i in program if i.op == "CONV"), default=0)
        tiles: dict[int, Tile | ChannelTile | TileEpilogue] = dict(tile_groups(program, prints, scratch))
        tiles.update(channel_groups(program, prints, scratch, target.memory.channel_alignment, tiles.keys()))
        steps = [(index, instruction.op, instruction, tiles.get(index)) for index, instruction in enumerate(program)]
        return Plan(instructions, steps, timing, cycles, stats)

    def fresh_stats(self) -> RunStats:
        return self.stats.copy()

    def record(self, index: int, provenance: Mapping[int, tuple[str, ...]]) -> TraceRecord:
        instruction = self.steps[index][2]
        return TraceRecord(index, instruction.op, tuple(provenance.get(index, ())), self.cycles[index], instruction,
                           self.timing.start[index], self.timing.end[index])
