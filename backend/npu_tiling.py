"""The arithmetic of tiles: window geometry, the working set of one tile, and the search for
the cheapest tiling that fits the target's SRAM.

`working_set(op, tile, target)` is the one definition of what a tile of an op holds in SRAM,
buffer by buffer and slot by slot, in the order they are laid out (`block_layout`). npu-tile
asks whether it fits the room it has; npu-plan-sram places it; emission reads the addresses.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass

from xdsl.ir import Operation

from xnpu.backend.npu_annotations import Epilogue, align, epilogue_of, hwc
from xnpu.backend.npu_residency import Residency
from xnpu.dialects import npu
from xnpu.dialects.shapes import ints, shape_of
from xnpu.target.description import TargetDescription

SRAM_ALIGNMENT = 16  # every buffer of a working set starts at a multiple of 16 bytes
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
    """The cheapest tiling whose working set fits (a cost of infinity rules one out); column
    bands only for window ops. For each chunk and width, the most rows that fit and fewer
    (halving): a smaller first band starts the pipeline of loads and computation sooner."""
    best: tuple[float, Tiling] | None = None
    for chunk in candidates:
        for cols in width_candidates(out_cols) if split_columns else [out_cols]:
            rows = most_rows(out_rows, lambda r: need(Tiling(r, cols, chunk)) <= sram_bytes)
            while rows:
                tiling = Tiling(rows, cols, chunk)
                total = cost(tiling)
                if total < float("inf") and (best is None or total < best[0]):
                    best = (total, tiling)
                rows //= 2
    return None if best is None else best[1]


def pipelined_cycles(chunks: int, tiles: int, weights: float, load: float, compute: float, store: float) -> float:
    """An estimate of a layer's cycles with its DMA overlapping its units (double buffering):
    the first tile's load, then per chunk the longer of its DMA (weights, loads and stores of
    its tiles) and its computation, then the last tile's store."""
    return load + chunks * max(weights + tiles * (load + store), tiles * compute) + store


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

    def reads_input(self, rows: int, cols: int) -> bool:
        """Whether every tile of `rows` x `cols` outputs reads at least one input row and column
        (a unit instruction needs some input; a tile whose windows lie in the padding alone has
        none). Only the first and last bands of each axis can."""
        for axis, size, total in ((0, rows, self.y[0]), (1, cols, self.y[1])):
            for start in {0, ((total - 1) // size) * size}:
                band = min(size, total - start)
                _, count, _, _ = window_rows(start, band, self.strides[axis], self.extent[axis], self.pads[axis],
                                             self.x[axis])
                if count < 1:
                    return False
        return True

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


@dataclass(frozen=True)
class Buffer:
    """One buffer of a layer's working set: `slots` copies of `size` bytes (two where the layer
    loads the next tile or chunk while it computes this one: double buffering)."""

    name: str
    size: int
    slots: int = 1


CONSTANTS = "constants"  # a chunk's weights, biases and records, and the epilogue's table


def constant_parts(op: Operation, chunk: int, target: TargetDescription, window: Window | None = None) -> list[tuple[str, int]]:
    """What one slot of a layer's constants holds, in layout order."""
    a = target.memory.channel_alignment
    parts = []
    if isinstance(op, npu.ConvOp):
        g = window or window_of(op)
        parts = [("weights", g.weight_bytes(chunk, a)), *([("bias", 4 * chunk)] if op.bias is not None else []),
                 ("records", 4 * chunk)]
    table = _table(epilogue_of(op, target))
    if table:
        parts.append(("table", table))
    return parts


def chunk_count(op: Operation, tile: Sequence[int], window: Window | None = None) -> int:
    """How many channel chunks (sets of constants) a layer goes through. (`window`: the op's
    `window_of`, when the caller has it: the tiling searches ask this thousands of times.)"""
    if isinstance(op, npu.ConvOp):
        g = window or window_of(op)
        return ceil_div(g.chunk_unit(), tile[2]) * (1 if g.depthwise else g.groups)
    return ceil_div((window.y if window is not None else hwc(shape_of(op.results[0]), op))[2], tile[2])


def tile_count(op: Operation, tile: Sequence[int], window: Window | None = None) -> int:
    """How many tiles (unit instructions with their LOADs and STOREs) a layer has."""
    if isinstance(op, npu.ConcatOp | npu.RelayoutOp | npu.InterleaveOp | npu.PadOp):
        return 1  # DMA only: nothing computes while the engine copies, one staging buffer
    h, w, _ = window.y if window is not None else hwc(shape_of(op.results[0]), op)
    return chunk_count(op, tile, window) * ceil_div(h, tile[0]) * ceil_div(w, tile[1])


def ceil_div(total: int, size: int) -> int:
    """How many pieces of `size` cover `total`: len(bands(total, size)), len(channel_chunks(total, size))."""
    return -(-total // size)


def working_set(op: Operation, tile: Sequence[int], target: TargetDescription, window: Window | None = None,
                residency: Residency | None = None, double: bool = True) -> list[Buffer]:
    """The buffers of `op` in SRAM for its npu.tile `tile`, in layout order: its constants,
    and the tile buffers of the maps it streams (what is on chip, `residency`, needs none).
    With `double`, streamed buffers and constants have two slots when the layer has more
    than one tile or chunk (else one: the layer's DMA then waits for its unit). (`window`:
    the op's `window_of`, when the caller has it already.)"""
    a = target.memory.channel_alignment
    residency = residency or Residency()
    if isinstance(op, npu.ConcatOp):  # one band of one part at a time, through one buffer
        w = shape_of(op.result)[3]
        return [Buffer("staging", max(rows * w * align(shape_of(part)[1], a) for rows, part in zip(tile, op.inputs)))]
    rows, cols, chunk = tile
    if isinstance(op, npu.RelayoutOp | npu.InterleaveOp | npu.PadOp):
        return [Buffer("staging", rows * cols * align(chunk, a))]
    if isinstance(op, npu.ConvOp | npu.PoolOp):
        window = window or window_of(op)
    streams = 2 if double and tile_count(op, tile, window) > 1 else 1
    constants = sum(align(size, SRAM_ALIGNMENT) for _, size in constant_parts(op, chunk, target, window))
    buffers = [Buffer(CONSTANTS, constants,
                      2 if double and chunk_count(op, tile, window) > 1 and isinstance(op, npu.ConvOp) else 1)]
    map_tile = rows * cols * align(chunk, a)
    if isinstance(op, npu.ConvOp | npu.PoolOp):
        g = window
        if isinstance(op, npu.PoolOp) and per_position(op):
            buffers.append(Buffer("records", 4 * rows * cols, streams))
        if not residency.input(0):
            in_channels = g.in_channels(chunk) if isinstance(op, npu.ConvOp) else chunk
            buffers.append(Buffer("input", g.in_rows(rows) * g.in_cols(cols) * align(in_channels, a), streams))
        if not residency.output:
            buffers.append(Buffer("output", map_tile, streams))
    elif isinstance(op, npu.EltwiseOp):  # a streamed result overwrites a streamed a
        if not residency.input(0):
            buffers.append(Buffer("a", map_tile, streams))
        if not residency.input(1):
            buffers.append(Buffer("b", broadcast_bytes(op, rows, cols, chunk, a), streams))
        if residency.input(0) and not residency.output:
            buffers.append(Buffer("output", map_tile, streams))
    else:  # table, clamp: a streamed result overwrites the streamed input
        if not residency.input(0):
            buffers.append(Buffer("data", map_tile, streams))
        elif not residency.output:
            buffers.append(Buffer("output", map_tile, streams))
    return [b for b in buffers if b.size > 0]


def block_layout(buffers: Sequence[Buffer], parts: Sequence[tuple[str, int]] = (), without_constants: bool = False,
                 ) -> tuple[dict[str, list[int]], int]:
    """Every slot of every buffer at the next 16-byte boundary; a constants slot holds its
    `parts` one after the other. Returns the offsets of each named part or buffer, slot by
    slot, and the block's size. With `without_constants` the constants are left out (they
    live elsewhere: layers before load them, npu-prefetch-weights)."""
    offsets: dict[str, list[int]] = {}
    top = 0
    for buffer in buffers:
        if buffer.name == CONSTANTS and without_constants:
            continue
        for _ in range(buffer.slots):
            if buffer.name == CONSTANTS:
                for name, where in constant_offsets(top, parts).items():
                    offsets.setdefault(name, []).append(where)
            else:
                offsets.setdefault(buffer.name, []).append(top)
            top = align(top + max(buffer.size, 1), SRAM_ALIGNMENT)
    return offsets, top


def constant_offsets(base: int, parts: Sequence[tuple[str, int]]) -> dict[str, int]:
    """Where each part of a constants slot at `base` lies."""
    offsets, top = {}, base
    for name, size in parts:
        offsets[name] = top
        top = align(top + max(size, 1), SRAM_ALIGNMENT)
    return offsets


def block_bytes(buffers: Sequence[Buffer]) -> int:
    return block_layout(buffers)[1]
