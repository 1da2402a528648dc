"""The arithmetic of tiles: window geometry, the working set of one tile, and the search for
the cheapest tiling that fits the target's SRAM.

`working_set(op, tile, target)` is the one definition of what a tile of an op holds in SRAM,
buffer by buffer, in the order they are laid out. npu-tile asks whether it fits
(`sram_offsets(...)[1] <= sram_bytes`); npu-allocate lays it out; emission reads the offsets.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass

from xdsl.ir import Operation

from xnpu.backend.npu_annotations import Epilogue, align, epilogue_of, hwc
from xnpu.dialects import npu
from xnpu.dialects.shapes import ints, shape_of
from xnpu.target.description import TargetDescription

SRAM_ALIGNMENT = 16  # every buffer of a working set starts at a multiple of 16 bytes
INSTRUCTION_COST = 80  # cycles an extra instruction costs (overhead + DMA latency), for tiling
TABLE_BYTES = 256


@dataclass(frozen=True)
class Tiling:
    rows: int  # output rows per band
    cols: int  # output columns per band
    chunk: int  # output channels per chunk

    def as_list(self) -> list[int]:
        return [self.rows, self.cols, self.chunk]


def channel_chunks(total: int, chunk: int) -> list[tuple[int, int]]:
    return [(c0, min(chunk, total - c0)) for c0 in range(0, total, chunk)]


def bands(total: int, size: int) -> list[tuple[int, int]]:
    return [(start, min(size, total - start)) for start in range(0, total, size)]


def chunk_candidates(total: int, alignment: int, limit: int) -> list[int]:
    """Chunk sizes to try: the whole, then ever smaller multiples of the alignment."""
    sizes = set()
    for parts in range(1, -(-total // alignment) + 1):
        size = min(total, align(-(-total // parts), alignment))
        if size <= limit:
            sizes.add(size)
    if not sizes:
        sizes.add(min(total, max(alignment, (limit // alignment) * alignment) if limit >= alignment else limit))
    return sorted(sizes, reverse=True)


def width_candidates(width: int) -> list[int]:
    """Column band widths to try: the whole row, then every distinct ceil(width / k)."""
    return sorted({-(-width // parts) for parts in range(1, width + 1)}, reverse=True)


def most_rows(total: int, fits: Callable[[int], bool]) -> int:
    """The most rows in [1, total] that fit (fitting shrinks as rows grow); 0 when one row does not."""
    if not fits(1):
        return 0
    low, high = 1, total
    while low < high:
        middle = (low + high + 1) // 2
        if fits(middle):
            low = middle
        else:
            high = middle - 1
    return low


def choose_tiling(
    out_rows: int, out_cols: int, candidates: Sequence[int], sram_bytes: int,
    need: Callable[[Tiling], int], cost: Callable[[Tiling], float], split_columns: bool = False,
) -> Tiling | None:
    """The cheapest tiling whose working set fits; column bands only for window ops."""
    best: tuple[float, Tiling] | None = None
    for chunk in candidates:
        for cols in width_candidates(out_cols) if split_columns else [out_cols]:
            rows = most_rows(out_rows, lambda r: need(Tiling(r, cols, chunk)) <= sram_bytes)
            if not rows:
                continue
            tiling = Tiling(rows, cols, chunk)
            total = cost(tiling)
            if best is None or total < best[0]:
                best = (total, tiling)
            if cols == out_cols and rows == out_rows:
                break  # whole rows fit: narrower bands only cost more
    return None if best is None else best[1]


def dma_cost(size: int) -> float:
    return INSTRUCTION_COST + size / 16


def window_rows(row0: int, rows: int, stride: int, extent: int, pad_top: int, height: int) -> tuple[int, int, int, int]:
    """Input rows [first, first + count) a band of output rows reads, and the tile's top/bottom padding."""
    start = row0 * stride - pad_top
    end = (row0 + rows - 1) * stride - pad_top + extent
    first, last = max(start, 0), min(end, height)
    return first, max(last - first, 0), first - start, end - last


# --------------------------------------------------------------------------------------
# The geometry of window ops (conv, gemm, pool)
# --------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Window:
    x: tuple[int, int, int]  # input H, W, C as stored
    y: tuple[int, int, int]  # output H, W, C
    kernel: tuple[int, int]
    strides: tuple[int, int]
    dilations: tuple[int, int]
    pads: tuple[int, int, int, int]  # top, left, bottom, right
    groups: int = 1
    depthwise: bool = False

    @property
    def extent(self) -> tuple[int, int]:
        return tuple(d * (k - 1) + 1 for d, k in zip(self.dilations, self.kernel))  # type: ignore[return-value]

    def in_rows(self, rows: int) -> int:
        return min(self.x[0], (rows - 1) * self.strides[0] + self.extent[0])

    def in_cols(self, cols: int) -> int:
        return min(self.x[1], (cols - 1) * self.strides[1] + self.extent[1])

    def input_tile(self, row0: int, rows: int, col0: int, cols: int) -> tuple[tuple[int, int, int, int], ...]:
        """(first, count, pad before, pad after) of the input rows and columns a tile reads."""
        return (window_rows(row0, rows, self.strides[0], self.extent[0], self.pads[0], self.x[0]),
                window_rows(col0, cols, self.strides[1], self.extent[1], self.pads[1], self.x[1]))

    def chunk_unit(self) -> int:
        """The output channels chunks divide: a group's (dense) or all of them (depthwise)."""
        return self.y[2] if self.depthwise else self.y[2] // self.groups

    def in_channels(self, chunk: int) -> int:
        """Input channels one chunk reads: its own (depthwise) or its group's."""
        return chunk if self.depthwise else self.x[2] // self.groups

    def weight_bytes(self, chunk: int, alignment: int) -> int:
        kh, kw = self.kernel
        return align(chunk, alignment) * kh * kw * (1 if self.depthwise else align(self.in_channels(chunk), alignment))


def window_of(op: Operation) -> Window:
    """The window geometry of a conv (a gemm is a 1x1 conv of an N x 1 x K map) or pool."""
    x = hwc(shape_of(op.operands[0]), op)
    y = hwc(shape_of(op.results[0]), op)
    if isinstance(op, npu.ConvOp):
        if op.is_gemm:
            return Window(x, y, (1, 1), (1, 1), (1, 1), (0, 0, 0, 0))
        kernel = shape_of(op.weight)[2:]
        return Window(x, y, tuple(kernel), ints(op.strides), ints(op.dilations), ints(op.pads),  # type: ignore[arg-type]
                      op.group.value.data, op.is_depthwise)
    assert isinstance(op, npu.PoolOp)
    if op.pool_kind == "global_avg":
        return Window(x, y, (x[0], x[1]), (1, 1), (1, 1), (0, 0, 0, 0))
    kernel, strides, pads = op.window()
    return Window(x, y, kernel, strides, (1, 1), pads)  # type: ignore[arg-type]


def per_position(op: npu.PoolOp) -> bool:
    """An average pool with one rescale record per output position (records in DDR)."""
    return op.pool_kind != "max" and len(ints(op.multiplier)) > 1


def broadcast_bytes(op: npu.EltwiseOp, rows: int, width: int, chunk: int, alignment: int) -> int:
    return {"none": rows * width * align(chunk, alignment), "channel": align(chunk, alignment), "scalar": 1}[op.broadcast()]


# --------------------------------------------------------------------------------------
# Working sets
# --------------------------------------------------------------------------------------


def _table(epilogue: Epilogue | None) -> int:
    return TABLE_BYTES if epilogue is not None and epilogue.kind == "table" else 0


def working_set(op: Operation, tile: Sequence[int], target: TargetDescription,
                window: Window | None = None) -> list[tuple[str, int]]:
    """(buffer, bytes) of one tile of `op`, in layout order; `tile` is its npu.tile (`window`:
    the op's `window_of`, when the caller has it already)."""
    a = target.memory.channel_alignment
    if isinstance(op, npu.ConcatOp):  # one band of one part at a time, through one buffer
        w = shape_of(op.result)[3]
        return [("staging", max(rows * w * align(shape_of(part)[1], a) for rows, part in zip(tile, op.inputs)))]
    rows, cols, chunk = tile
    if isinstance(op, npu.RelayoutOp | npu.InterleaveOp | npu.PadOp):
        return [("staging", rows * cols * align(chunk, a))]
    table = _table(epilogue_of(op, target))
    if isinstance(op, npu.ConvOp):
        g = window or window_of(op)
        return [("weights", g.weight_bytes(chunk, a)), ("bias", 4 * chunk), ("records", 4 * chunk), ("table", table),
                ("input", g.in_rows(rows) * g.in_cols(cols) * align(g.in_channels(chunk), a)),
                ("output", rows * cols * align(chunk, a))]
    if isinstance(op, npu.PoolOp):
        g = window or window_of(op)
        return [("table", table), ("records", 4 * rows * cols if per_position(op) else 0),
                ("input", g.in_rows(rows) * g.in_cols(cols) * align(chunk, a)), ("output", rows * cols * align(chunk, a))]
    if isinstance(op, npu.EltwiseOp):  # the result overwrites a
        return [("table", table), ("a", rows * cols * align(chunk, a)), ("b", broadcast_bytes(op, rows, cols, chunk, a))]
    return [("table", table), ("data", rows * cols * align(chunk, a))]  # table, clamp: in place


def sram_offsets(buffers: Sequence[tuple[str, int]]) -> tuple[dict[str, int], int]:
    """Each buffer at the next 16-byte boundary (an empty one still takes 16 bytes); and the end."""
    offsets, top = {}, 0
    for name, size in buffers:
        offsets[name] = top
        top = align(top + max(size, 1), SRAM_ALIGNMENT)
    return offsets, top
