"""The bytes an instruction reads and writes (docs/isa.md section 3, "Footprints").

Two instructions conflict when they touch a common byte of the same memory and at least one of
them writes it; the queue model orders conflicting instructions of different queues only
through their dependency fields, so the footprints below are what the hazard check of the
simulator, the dependency insertion and the scheduler of the compiler all compare. They are
computed from the fields alone, as the doc defines them:

* a unit's operand region is the whole padded map (`H x W x Cp` bytes from its address, with
  pixels `out_pixel_stride` apart where a CONV sets it), its weights, biases, records, table;
* a DMA's SRAM side is its padded map, one span per row when rows lie `sram_row_stride` apart
  with gaps between them; its DDR side is one span per row from the row's first byte to its
  last (the bytes between the pixels of a strided row count as touched: a row is the
  granularity), or the whole dense extent.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from xnpu.target.encoding import DMA_LAYOUTS, Instruction
from xnpu.target.codebook import ids_bytes

Span = tuple[int, int]  # [start, end) in bytes

_LAYOUT_NAMES = {code: name for name, code in DMA_LAYOUTS.items()}


def padded(channels: int, alignment: int) -> int:
    return -(-channels // alignment) * alignment


def conv_output_hw(i: Instruction) -> tuple[int, int]:
    """OH, OW of a CONV instruction (docs/isa.md, CONV semantics; 0 where no output is left)."""
    oh = (i["in_h"] + i["pad_top"] + i["pad_bottom"] - (i["dilation_h"] * (i["kernel_h"] - 1) + 1)) // max(i["stride_h"], 1) + 1
    ow = (i["in_w"] + i["pad_left"] + i["pad_right"] - (i["dilation_w"] * (i["kernel_w"] - 1) + 1)) // max(i["stride_w"], 1) + 1
    return max(oh, 0), max(ow, 0)


def conv_output_bytes(i: Instruction, alignment: int) -> int:
    """The extent of a CONV's output map: OH x OW pixels of align(out_c) bytes, `out_pixel_stride` apart."""
    oh, ow = conv_output_hw(i)
    pixels = oh * ow
    op = padded(i["out_c"], alignment)
    stride = i.fields.get("out_pixel_stride", 0) or op
    return 0 if pixels == 0 else (pixels - 1) * stride + op


def sram_regions(i: Instruction, alignment: int) -> list[tuple[str, int, int, bool]]:
    """(field, first byte, extent, written) of every SRAM region the instruction touches."""
    a = alignment
    if i.op in ("LOAD", "STORE"):
        return [("sram_addr", i["sram_addr"], dma_sram_extent(i, a), i.op == "LOAD")]
    if i.op == "CONV":
        ip, op_ = padded(i["in_c"], a), padded(i["out_c"], a)
        kernel = i["kernel_h"] * i["kernel_w"]
        weights = op_ * kernel if i["depthwise"] else op_ * kernel * ip
        regions = [
            ("in_addr", i["in_addr"], i["in_h"] * i["in_w"] * ip, False),
            ("weight_addr", i["weight_addr"], weights, False),
            ("rescale_addr", i["rescale_addr"], 4 * (i["out_c"] if i["per_channel"] else 1), False),
            ("out_addr", i["out_addr"], conv_output_bytes(i, a), True),
        ]
        if i["bias"]:
            regions.append(("bias_addr", i["bias_addr"], 4 * i["out_c"], False))
        return regions
    if i.op == "ELTWISE":
        size = i["h"] * i["w"] * padded(i["c"], a)
        b_size = (size, padded(i["c"], a), 1)[i["b_broadcast"]]
        return [("a_addr", i["a_addr"], size, False), ("b_addr", i["b_addr"], b_size, False),
                ("out_addr", i["out_addr"], size, True)]
    if i.op == "POOL":
        cp = padded(i["c"], a)
        regions = [("in_addr", i["in_addr"], i["in_h"] * i["in_w"] * cp, False),
                   ("out_addr", i["out_addr"], i["out_h"] * i["out_w"] * cp, True)]
        if i["per_position"]:
            regions.append(("rescale_addr", i["rescale_addr"], 4 * i["out_h"] * i["out_w"], False))
        return regions
    if i.op in ("TABLE", "CLAMP"):
        size = i["h"] * i["w"] * padded(i["c"], a)
        regions = [("in_addr", i["in_addr"], size, False), ("out_addr", i["out_addr"], size, True)]
        if i.op == "TABLE":
            regions.append(("table_addr", i["table_addr"], 256, False))
        return regions
    return []


def _map_hwc(i: Instruction) -> tuple[int, int, int]:
    """H, W, C of a DMA in layout NHWC or NCHW."""
    if _LAYOUT_NAMES.get(i["layout"]) == "NCHW":
        return i["d1"], i["d2"], i["d0"]
    return i["d0"], i["d1"], i["d2"]


def dma_sram_extent(i: Instruction, alignment: int) -> int:
    """The extent of a DMA's SRAM side: from `sram_addr` to one past its last byte."""
    element = 1 << i["elem_log2"]
    layout = _LAYOUT_NAMES.get(i["layout"])
    if layout == "RAW":
        return i["d0"] * i["d1"] * element
    if layout in ("NHWC", "NCHW"):
        h, w, c = _map_hwc(i)
        if h == 0 or w == 0 or c == 0:
            return 0
        row = w * padded(c, alignment) * element
        return (h - 1) * (i["sram_row_stride"] or row) + row
    if layout == "OHWI":
        return padded(i["d0"], alignment) * i["d1"] * i["d2"] * padded(i["d3"], alignment) * element
    if layout == "DW":
        return padded(i["d0"], alignment) * i["d1"] * i["d2"] * element
    return 0


def dma_ddr_extent(i: Instruction) -> int:
    """The extent of a DMA's DDR side: from `ddr_addr` to one past its last byte (a decoding
    LOAD: its id rows; its dictionary is a span of its own, `_dma_ddr_spans`)."""
    if i.fields.get("codebook_bits", 0):
        return ids_bytes(i)
    element = 1 << i["elem_log2"]
    layout = _LAYOUT_NAMES.get(i["layout"])
    d0, d1, d2, d3 = i["d0"], i["d1"], i["d2"], i["d3"]
    if layout == "NHWC":
        if d0 == 0 or d1 == 0 or d2 == 0:
            return 0
        row_stride = i["ddr_row_stride"] or d1 * d2 * element
        pixel_stride = i["ddr_pixel_stride"] or d2 * element
        return (d0 - 1) * row_stride + (d1 - 1) * pixel_stride + d2 * element
    if layout == "NCHW":
        if d0 == 0 or d1 == 0 or d2 == 0:
            return 0
        row_stride = i["ddr_row_stride"] or d2 * element
        plane_stride = i["ddr_pixel_stride"] or d1 * row_stride
        return (d0 - 1) * plane_stride + (d1 - 1) * row_stride + d2 * element
    if layout == "OHWI":
        return d0 * d1 * d2 * d3 * element
    if layout == "RAW":
        return d0 * d1 * element
    return d0 * d1 * d2 * element  # DW: three dense dimensions


def _dma_sram_spans(i: Instruction, alignment: int) -> list[Span]:
    start = i["sram_addr"]
    layout = _LAYOUT_NAMES.get(i["layout"])
    if layout in ("NHWC", "NCHW") and i["sram_row_stride"]:
        h, w, c = _map_hwc(i)
        row = w * padded(c, alignment) * (1 << i["elem_log2"])
        if h and row and i["sram_row_stride"] > row:
            return [(start + r * i["sram_row_stride"], start + r * i["sram_row_stride"] + row) for r in range(h)]
    size = dma_sram_extent(i, alignment)
    return [(start, start + size)] if size else []


def _dma_ddr_spans(i: Instruction) -> list[Span]:
    start = i["ddr_addr"]
    if _LAYOUT_NAMES.get(i["layout"]) == "NHWC" and i["d0"] > 1:
        element = 1 << i["elem_log2"]
        dense_row = i["d1"] * i["d2"] * element
        row_stride = i["ddr_row_stride"] or dense_row
        row = (i["d1"] - 1) * (i["ddr_pixel_stride"] or i["d2"] * element) + i["d2"] * element
        if i["d1"] and i["d2"] and row_stride > row:
            return [(start + r * row_stride, start + r * row_stride + row) for r in range(i["d0"])]
    size = dma_ddr_extent(i)
    spans = [(start, start + size)] if size else []
    bits = i.fields.get("codebook_bits", 0)
    if bits:
        spans.append((i["dictionary_addr"], i["dictionary_addr"] + (1 << bits)))
    return spans


@dataclass(frozen=True)
class Footprint:
    """What one instruction reads and writes, per memory, as byte spans."""

    sram_reads: tuple[Span, ...] = ()
    sram_writes: tuple[Span, ...] = ()
    ddr_reads: tuple[Span, ...] = ()
    ddr_writes: tuple[Span, ...] = ()


def footprint(i: Instruction, alignment: int) -> Footprint:
    if i.op == "LOAD":
        return Footprint(sram_writes=tuple(_dma_sram_spans(i, alignment)), ddr_reads=tuple(_dma_ddr_spans(i)))
    if i.op == "STORE":
        return Footprint(sram_reads=tuple(_dma_sram_spans(i, alignment)), ddr_writes=tuple(_dma_ddr_spans(i)))
    reads, writes = [], []
    for _, start, size, written in sram_regions(i, alignment):
        if size > 0:
            (writes if written else reads).append((start, start + size))
    return Footprint(sram_reads=tuple(reads), sram_writes=tuple(writes))


def _segment_indices(first: np.ndarray, stop: np.ndarray) -> np.ndarray:
    """Every index in the ranges [first[k], stop[k]), concatenated."""
    lengths = stop - first
    total = int(lengths.sum())
    if total == 0:
        return np.zeros(0, dtype=np.int64)
    offsets = np.repeat(first - np.concatenate(([0], np.cumsum(lengths)[:-1])), lengths)
    return np.arange(total, dtype=np.int64) + offsets


# a gathered set of earlier instructions longer than this loses its runs of one value before a
# Python set takes it
_SMALL_GATHER = 256
# an instruction with up to this many spans in one memory has its segments gathered and set
# span by span (slices), one with more (a DMA's rows) through one index array
_FEW_SPANS = 8


def conflicting_predecessors(footprints: list[Footprint], queues: list[str | None]) -> list[list[int]]:
    """For each instruction, in program order, the earlier instructions it must follow: the last
    writer of every byte it reads or writes, the last reader (of each queue) of every byte it
    writes, and the last reader of its own queue of every byte it reads (readers of one queue
    stay in order). Every earlier conflicting instruction is one of these or is ordered before
    one of them, so ordering an instruction after these orders it after all of them.

    Bytes are tracked as the segments between the footprints' span ends (the fewest pieces
    in which no span starts or ends inside one); each span's segments are found for all
    instructions at once."""
    kinds = sorted({q for q in queues if q is not None})
    row_of = {q: 1 + n for n, q in enumerate(kinds)}  # row 0: the last writer; row 1 + k: the last reader of queue k
    result: list[set[int]] = [set() for _ in footprints]
    for reads_of, writes_of in (("sram_reads", "sram_writes"), ("ddr_reads", "ddr_writes")):
        owners: list[int] = []
        edges: list[int] = []  # start, end of each span, reads of an instruction before its writes
        counts: list[tuple[int, int]] = []  # per owner: its reads and writes
        for index, f in enumerate(footprints):
            reads, writes = getattr(f, reads_of), getattr(f, writes_of)
            if reads or writes:
                owners.append(index)
                counts.append((len(reads), len(writes)))
                for span in (*reads, *writes):
                    edges += span
        if not edges:
            continue
        ends = np.asarray(edges, dtype=np.int64)
        bounds = np.unique(ends)
        if len(bounds) < 2:
            continue
        positions = np.searchsorted(bounds, ends).tolist()
        state = np.full((1 + len(kinds), len(bounds) - 1), -1, dtype=np.int64)
        cursor = 0

        def segments(count: int) -> list:
            """The segments of the next `count` spans: a slice per span, or one index array for many."""
            nonlocal cursor
            taken = positions[cursor:cursor + 2 * count]
            cursor += 2 * count
            if count <= _FEW_SPANS:
                return [slice(taken[k], taken[k + 1]) for k in range(0, 2 * count, 2)]
            pairs = np.asarray(taken, dtype=np.int64).reshape(-1, 2)
            return [_segment_indices(pairs[:, 0], pairs[:, 1])]

        for index, (read_count, write_count) in zip(owners, counts):
            queue = queues[index]
            read, written = segments(read_count), segments(write_count)
            # the last writer's row and the own queue's readers' row, as a strided slice: a view, not a fancy-index copy
            rows = slice(0, row_of[queue] + 1, row_of[queue]) if queue is not None else slice(0, 1)
            gathered = [state[rows, part].ravel() for part in read]
            gathered += [state[:, part].ravel() for part in written]
            touched = gathered[0] if len(gathered) == 1 else np.concatenate(gathered)
            if touched.size > _SMALL_GATHER:  # neighbouring segments mostly share their last reader or writer
                changes = np.empty(touched.size, dtype=bool)
                changes[0] = True
                np.not_equal(touched[1:], touched[:-1], out=changes[1:])
                touched = touched[changes]
            found = set(touched.tolist())
            found.discard(-1)
            result[index].update(found)
            if queue is not None:
                for part in read:
                    state[row_of[queue], part] = index
            for part in written:
                state[0, part] = index
                state[1:, part] = -1
    return [sorted(found) for found in result]
