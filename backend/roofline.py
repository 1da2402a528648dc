"""The roofline of a program: how far its cycles are from what its two queues must do, and how
far the DDR bytes it moves are from the bytes it cannot avoid moving.

A program takes at least `max(EXEC busy, DMA busy)` cycles (docs/isa.md section 5), so
`cycles / max(compute, DMA)` is 1 for a perfect overlap of data movement and computation and
up to 2 when nothing overlaps. Its **compulsory** DDR bytes are those no schedule avoids: every
constant it loads, once (the weights, biases, records and tables, compressed weights as
stored), its inputs, once, and its outputs, once; everything else the DMA moves (activations
spilled and loaded again, the same constants loaded twice) is traffic a schedule chose.

`ddr_traffic` counts both per layer (the provenance's layer names): the DDR bytes each DMA
instruction moves (`xnpu.target.cost.dma_ddr_bytes`) and the compulsory bytes it moves for
the first time, given the DDR ranges that are compulsory (the constant image and the io
tensors, `compulsory_ranges`). A transfer's span covers a strided tile's gaps, so a layer
may be credited with compulsory bytes a later one reads; the program's total is exact.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from xnpu.target.cost import dma_ddr_bytes
from xnpu.target.encoding import Instruction
from xnpu.target.footprints import footprint

READ, WRITTEN = "read", "written"


def compulsory_ranges(constants: int, inputs: Sequence[tuple[int, int]], outputs: Sequence[tuple[int, int]]
                      ) -> list[tuple[str, int, int]]:
    """(how, start, end) of the DDR bytes a run must move: the constant image and the inputs
    read, the outputs written. `inputs`/`outputs` are (address, bytes)."""
    ranges = [(READ, 0, constants)] if constants else []
    ranges += [(READ, address, address + size) for address, size in inputs if size]
    ranges += [(WRITTEN, address, address + size) for address, size in outputs if size]
    return ranges


def ddr_traffic(program: Sequence[Instruction], layers: Sequence[str], alignment: int,
                compulsory: Sequence[tuple[str, int, int]] = ()) -> tuple[dict[str, int], dict[str, int]]:
    """({layer: DDR bytes its DMA moves}, {layer: compulsory bytes it moves first})."""
    moved: dict[str, int] = {}
    first: dict[str, int] = {}
    seen = [(how, start, end, np.zeros(end - start, dtype=bool)) for how, start, end in compulsory]
    for index, instruction in enumerate(program):
        if instruction.op not in ("LOAD", "STORE"):
            continue
        layer = layers[index]
        moved[layer] = moved.get(layer, 0) + dma_ddr_bytes(instruction)
        spans = footprint(instruction, alignment)
        how, touched = (READ, spans.ddr_reads) if instruction.op == "LOAD" else (WRITTEN, spans.ddr_writes)
        new = 0
        for kind, start, end, marks in seen:
            if kind != how:
                continue
            for low, high in touched:
                low, high = max(low, start), min(high, end)
                if low < high:
                    part = marks[low - start : high - start]
                    new += int(part.size - np.count_nonzero(part))
                    part[:] = True
        if new:
            first[layer] = first.get(layer, 0) + new
    return moved, first


def ratio(cycles: int, compute: int, dma: int) -> float:
    """cycles / max(compute, DMA): 1 when the busier queue never waits (0 for an empty run)."""
    bound = max(compute, dma)
    return cycles / bound if bound else 0.0
