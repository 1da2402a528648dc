"""npu-tile: cut every layer into tiles whose working set fits the target's SRAM.

Each op that runs instructions gets `npu.tile = array<i64: rows, cols, chunk>`: output rows
per band, output columns per band and output channels per chunk. Convolutions and pools may
be cut in all three (a band reads the input rows and columns its windows cover: the halo),
element-wise ops, tables and clamps in rows and channels, interleaves and edge pads in bands
of source rows and channels. Input channels are never split:
CONV rescales its int32 sums at the end of one instruction, so one output channel's whole
reduction (KH x KW x C weights) must fit beside its input and output tiles.

A layer tiles within the SRAM left beside the results kept on chip over its time
(npu-keep-on-chip's homes) and, where the layer still fits without it, beside room for the
next layer's constants (loaded while this layer runs). Its working set (backend/npu_tiling.py
`working_set`, the same function npu-plan-sram lays out) has two slots for every buffer it
streams, so the DMA fills one while the unit works on the other; where no such tiling fits,
one slot each (`npu.single_buffered`). Among the tilings that fit, the one with the fewest
estimated cycles wins (`pipelined_cycles`: the first tile's load, then per chunk the longer
of its DMA, constants and tiles' loads and stores, and its computation, then the last store).
A chunk's constants take at most a quarter of SRAM where some chunk size allows it. A layer
that reads or writes a map on chip runs whole rows of it. A copy through SRAM
(npu.relayout, npu.concat) moves whole rows: a relayout is one LOAD and one STORE when the
map fits (tile = the whole map), else one channel plane at a time in bands of rows (chunk
1); a concat gets the rows per band of each input. When nothing fits, one error names the
ONNX node and the target.
"""

from __future__ import annotations

from dataclasses import dataclass

from xdsl.context import Context
from xdsl.dialects.builtin import ModuleOp, UnitAttr
from xdsl.ir import Operation
from xdsl.passes import ModulePass

from xnpu.dialects import npu
from xnpu.dialects.shapes import ints, shape_of
from xnpu.target.cost import conv_cycles
from xnpu.target.description import TargetDescription
from xnpu.backend.npu_annotations import (
    SINGLE_BUFFERED,
    TILE,
    LoweringError,
    align,
    fail,
    hwc,
    layers,
    node_names,
    only_function,
    resolve_target,
    set_ints,
)
from xnpu.backend.npu_tiling import (
    Tiling,
    Window,
    choose_tiling,
    ceil_div,
    chunk_candidates,
    most_rows,
    SRAM_ALIGNMENT,
    block_bytes,
    constant_parts,
    pipelined_cycles,
    window_of,
    working_set,
)
from xnpu.backend.npu_residency import Residency, layer_positions, resident_placement

ANY_CHUNK = 1 << 16  # units without a channel limit of their own
NO_LIMIT = 1 << 62
# The most instructions a program may have. Each costs the compiler ~0.4 ms and ~5 KB to emit,
# check and encode, so a layer that would need millions (a Conv of 10^6 output channels: a LOAD
# and a STORE per channel plane of its relayout) is one error here instead of minutes of
# compiling. The bench models need at most a few thousand, a real layout detector (layout_cdla)
# more than 32,768: the bound leaves room for such programs (at most ~100 s to emit).
MAX_INSTRUCTIONS = 1 << 18


class TilePlanner:
    """Tilings of one layer within `budget` bytes of SRAM, given what of it is on chip."""

    def __init__(self, target: TargetDescription, op: Operation, budget: int | None = None):
        self.target = target
        self.sram_total = target.memory.sram_bytes
        self.sram = self.sram_total if budget is None else budget
        self.a = target.memory.channel_alignment
        self.residency = Residency.of(op, target)
        self.double = True  # two slots per streamed buffer; one where that is all that fits
        # a result kept on chip that a copy stores band by band from there (an interleave, a pad:
        # its last band waits for the last tile); a relayout or concat stores it whole, after all tiles
        self.copied = self.residency.output and any(
            isinstance(use.operation, npu.InterleaveOp | npu.PadOp) for use in op.results[0].uses)
        # a layer that reads or writes a map on chip runs whole rows of it (units read and
        # write dense rows); all its channels at once too, but a CONV writing a chunk of
        # channels (out_pixel_stride) while it reads its input from DDR or whole
        self.whole_rows = self.residency.output or any(self.residency.inputs)

    def need(self, op: Operation, tile: list[int], window: Window | None = None) -> int:
        """SRAM bytes of the layer's working set (every slot), laid out as npu-plan-sram will."""
        return block_bytes(working_set(op, tile, self.target, window, self.residency, self.double))

    def fits(self, op: Operation, tile: list[int]) -> bool:
        return self.need(op, tile) <= self.sram

    def no_fit(self, op: Operation, what: str, detail: str = "") -> LoweringError:
        return LoweringError(f"{node_names(op)}: no tiling of this {what} fits the {self.sram}-byte SRAM "
                             f"of {self.target.name}{detail}")

    def chunks(self, total: int, limit: int, whole: bool) -> list[int]:
        if whole:
            return [total] if total <= limit else []
        return chunk_candidates(total, self.a, limit)

    def tile(self, op: Operation) -> list[int]:
        """The tiling with double buffering, or, where none fits, with one slot per buffer
        (`self.double` says which)."""
        try:
            return self._tile(op)
        except LoweringError:
            self.double = False
            return self._tile(op)

    def _tile(self, op: Operation) -> list[int]:
        if isinstance(op, npu.ConvOp):
            return self.conv(op).as_list()
        if isinstance(op, npu.PoolOp):
            return self.pool(op).as_list()
        if isinstance(op, npu.EltwiseOp | npu.TableOp | npu.ClampOp):
            return self.elementwise(op).as_list()
        if isinstance(op, npu.RelayoutOp):
            return self.relayout(op)
        if isinstance(op, npu.InterleaveOp | npu.PadOp):
            return self.strided_copy(op).as_list()
        assert isinstance(op, npu.ConcatOp)
        return self.concat(op)

    def dma(self, size: int) -> float:
        """Cycles of one DMA of `size` SRAM bytes (target/cost.py); 0 for nothing."""
        cost = self.target.cost
        if size <= 0:
            return 0.0
        return cost.instruction_overhead_cycles + cost.dma_latency_cycles + -(-size // cost.dma_bytes_per_cycle)

    def conv(self, op: npu.ConvOp) -> Tiling:
        g = window_of(op)
        a = self.a
        oh, ow, oc = g.y
        input_streamed = not self.residency.input(0)
        output_streamed = not self.residency.output

        def cost(t: Tiling) -> float:
            if not g.reads_input(t.rows, t.cols):
                return float("inf")
            chunks = ceil_div(g.chunk_unit(), t.chunk) * (1 if g.depthwise else g.groups)
            tiles = ceil_div(oh, t.rows) * ceil_div(ow, t.cols)
            load = self.dma(g.in_rows(t.rows) * g.in_cols(t.cols) * align(g.in_channels(t.chunk), a)) if input_streamed else 0
            store = self.dma(t.rows * t.cols * align(t.chunk, a)) if output_streamed else 0
            compute = conv_cycles(self.target, (t.rows, t.cols), g.kernel, g.in_channels(t.chunk), t.chunk, g.depthwise)
            weights = self.dma(g.weight_bytes(t.chunk, a)) + 2 * self.dma(4 * t.chunk)
            # a result on chip that a copy stores (an interleave, a pad): its last band's store waits for the last CONV
            tail = self.dma(t.rows * ow * align(oc, a)) if self.copied else 0
            return pipelined_cycles(chunks, tiles, weights, load, compute, store) + tail

        # a depthwise chunk reads its own channels: all of them where the input is on chip
        candidates = self.chunks(g.chunk_unit(), self.target.conv.max_channels, g.depthwise and self.residency.input(0))
        # chunks whose constants take at most a quarter of SRAM, so the next chunk's load (and
        # the next layer's) has room beside them
        small = [c for c in candidates if constants_bytes(op, c, self.target, g) <= self.sram_total // 4]
        candidates = small or candidates[-1:]
        tiling = choose_tiling(oh, ow, candidates, self.sram, lambda t: self.need(op, t.as_list(), g), cost,
                               split_columns=not self.whole_rows)
        if tiling is None:
            x = g.x
            raise self.no_fit(op, "convolution", f" (input {x[0]}x{x[1]}x{x[2]}, output {oh}x{ow}x{oc}, "
                                             f"kernel {g.kernel[0]}x{g.kernel[1]})")
        return tiling

    def pool(self, op: npu.PoolOp) -> Tiling:
        g = window_of(op)
        a = self.a
        oh, ow, oc = g.y
        if op.pool_kind != "global_avg":
            # the last window of a ceil-mode pool may hang over the padding; the tile pads cover it
            hang = max((oh - 1) * g.strides[0] - g.pads[0] + g.kernel[0] - g.x[0],
                       (ow - 1) * g.strides[1] - g.pads[1] + g.kernel[1] - g.x[1])
            if hang > 15:
                raise fail(op, "the last pooling window hangs more than 15 rows over the input", self.target)
        lanes = self.target.cost.vector_lanes

        def cost(t: Tiling) -> float:
            if not g.reads_input(t.rows, t.cols):
                return float("inf")
            tiles = ceil_div(oc, t.chunk) * ceil_div(oh, t.rows) * ceil_div(ow, t.cols)
            load = self.dma(g.in_rows(t.rows) * g.in_cols(t.cols) * align(t.chunk, a)) if not self.residency.input(0) else 0
            store = self.dma(t.rows * t.cols * align(t.chunk, a)) if not self.residency.output else 0
            window = g.x[0] * g.x[1] if op.pool_kind == "global_avg" else t.rows * t.cols * g.kernel[0] * g.kernel[1]
            compute = self.target.cost.instruction_overhead_cycles + window * ceil_div(align(t.chunk, a), lanes)
            return pipelined_cycles(1, tiles, 0, load, compute, store)

        tiling = choose_tiling(oh, ow, self.chunks(oc, ANY_CHUNK, self.whole_rows), self.sram,
                               lambda t: self.need(op, t.as_list(), g), cost,
                               split_columns=op.pool_kind != "global_avg" and not self.whole_rows)
        if tiling is None:
            raise self.no_fit(op, f"{op.pool_kind} pool")
        return tiling

    def elementwise(self, op: npu.EltwiseOp | npu.TableOp | npu.ClampOp) -> Tiling:
        h, w, c = hwc(shape_of(op.results[0]), op)
        a = self.a
        streamed_inputs = sum(not self.residency.input(i) for i in range(len(op.operands)))
        lanes = self.target.cost.vector_lanes

        def cost(t: Tiling) -> float:
            tiles = ceil_div(c, t.chunk) * ceil_div(h, t.rows)
            band = t.rows * w * align(t.chunk, a)
            load = streamed_inputs * self.dma(band)
            store = self.dma(band) if not self.residency.output else 0
            compute = self.target.cost.instruction_overhead_cycles + ceil_div(band, lanes)
            return pipelined_cycles(1, tiles, 0, load, compute, store)

        limit = self.target.eltwise.max_channels if isinstance(op, npu.EltwiseOp) else ANY_CHUNK
        tiling = choose_tiling(h, w, self.chunks(c, limit, self.whole_rows), self.sram, lambda t: self.need(op, t.as_list()),
                               cost)
        if tiling is None:
            what = f"element-wise {op.kind}" if isinstance(op, npu.EltwiseOp) else op.name.removeprefix("npu.")
            raise self.no_fit(op, what)
        return tiling

    def strided_copy(self, op: npu.InterleaveOp | npu.PadOp) -> Tiling:
        """Bands of source rows (and channel chunks) through one staging buffer: each band is one
        LOAD and its STOREs (an interleave: one per phase reading the band; a pad: the band,
        its edge columns, and at the first and last band the edge rows). Sources on chip are
        stored from where they are, all channels at once."""
        a = self.a
        if isinstance(op, npu.InterleaveOp):
            windows = op.phase_windows()
            rows, cols = max(w.rows for w in windows), max(w.cols for w in windows)
            loads = len({(w.source, w.top, w.left, w.cols) for w in windows})
            stores = len(windows)
        else:
            rows, cols, _ = hwc(shape_of(op.input), op)
            top, left, bottom, right = ints(op.pads)
            loads, stores = 1, 1 + left + right
        channels = shape_of(op.results[0])[1]
        if any(self.residency.inputs):
            loads = 0

        def cost(t: Tiling) -> float:
            tiles = ceil_div(channels, t.chunk) * ceil_div(rows, t.rows)
            band = (loads + stores) * self.dma(t.rows * cols * align(t.chunk, a))
            return tiles * band + band  # all of it, and the first band the next layer waits for

        tiling = choose_tiling(rows, cols, self.chunks(channels, ANY_CHUNK, self.whole_rows), self.sram,
                               lambda t: self.need(op, t.as_list()), cost)
        if tiling is None:
            raise self.no_fit(op, op.name.removeprefix("npu."), f" (one row of {cols} pixels does not)")
        return tiling

    def relayout(self, op: npu.RelayoutOp) -> list[int]:
        h, w, c = hwc(shape_of(op.input), op)
        if self.residency.input(0) or self.fits(op, [h, w, c]):
            return [h, w, c]  # the whole map: the DMA reorders it in one LOAD and one STORE
        rows = most_rows(h, lambda r: self.fits(op, [r, w, 1]))
        if not rows:
            raise self.no_fit(op, "copy", f" (one row of {w} pixels does not)")
        return [rows, w, 1]

    def concat(self, op: npu.ConcatOp) -> list[int]:
        tile = []
        for index, part in enumerate(op.inputs):
            h = shape_of(part)[2]
            rows = most_rows(h, lambda r: self.fits(op, [r if i == index else 1 for i in range(len(op.inputs))]))
            if not rows:
                raise self.no_fit(op, "concat", f" (one row of input {index} does not)")
            tile.append(rows)
        return tile


def constants_bytes(op: Operation, chunk: int | None, target: TargetDescription, window: Window | None = None) -> int:
    """One constants slot of the layer (its weights, biases and records for `chunk` output
    channels, None: all of them, and its table)."""
    if isinstance(op, npu.ConcatOp | npu.RelayoutOp | npu.InterleaveOp | npu.PadOp):
        return 0
    if chunk is None:
        chunk = window_of(op).chunk_unit() if isinstance(op, npu.ConvOp) else 0
    return sum(align(size, SRAM_ALIGNMENT) for _, size in constant_parts(op, chunk, target, window))


def smallest_working_set(op: Operation, target: TargetDescription) -> int:
    """The SRAM the layer needs at the least (one row, the smallest chunk, one slot per
    buffer), with what of it is on chip; a very large number when no tiling exists."""
    planner = TilePlanner(target, op, budget=NO_LIMIT)
    planner.double = False
    if isinstance(op, npu.ConcatOp):
        return planner.need(op, [1] * len(op.inputs))
    if isinstance(op, npu.RelayoutOp):
        h, w, c = hwc(shape_of(op.input), op)
        return planner.need(op, [h, w, c] if planner.residency.input(0) else [1, w, 1])
    if isinstance(op, npu.InterleaveOp | npu.PadOp):
        width = max(x.cols for x in op.phase_windows()) if isinstance(op, npu.InterleaveOp) else hwc(shape_of(op.input), op)[1]
        return planner.need(op, [1, width, planner.chunks(shape_of(op.results[0])[1], ANY_CHUNK, planner.whole_rows)[-1]])
    h, w, c = hwc(shape_of(op.results[0]), op)
    if isinstance(op, npu.ConvOp):
        g = window_of(op)
        chunks = planner.chunks(g.chunk_unit(), target.conv.max_channels, g.depthwise and planner.residency.input(0))
    else:
        chunks = planner.chunks(c, target.eltwise.max_channels if isinstance(op, npu.EltwiseOp) else ANY_CHUNK,
                                planner.whole_rows)
    if not chunks:
        return NO_LIMIT
    cols = 1 if isinstance(op, npu.ConvOp | npu.PoolOp) and not planner.whole_rows else w
    return planner.need(op, [1, cols, chunks[-1]])


@dataclass(frozen=True)
class NpuTilePass(ModulePass):
    """Annotate every layer with the cheapest tiling that fits the target's SRAM (npu.tile)."""

    name = "npu-tile"
    target: str | None = None  # default: the module's npu.target

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        target = resolve_target(op, self.target, self.name)
        function = only_function(op, self.name)
        residents = resident_placement(function, target)
        positions = layer_positions(function)
        ordered = layers(function)
        at_least = 0
        for index, layer in enumerate(ordered):
            budget = residents.largest_gap(positions[layer])
            # room for the next layer's constants, to be loaded while this layer runs
            following = ordered[index + 1] if index + 1 < len(ordered) else None
            reserve = 0 if following is None else min(constants_bytes(following, None, target), target.memory.sram_bytes // 2)
            if reserve and smallest_working_set(layer, target) <= budget - reserve:
                budget -= reserve
            planner = TilePlanner(target, layer, budget)
            tile = planner.tile(layer)
            set_ints(layer, TILE, tile)
            at_least += fewest_instructions(layer, tile)
            if at_least > MAX_INSTRUCTIONS:  # before minutes of emitting them (lower-npu-to-isa counts exactly)
                raise fail(layer, f"the program needs more than {MAX_INSTRUCTIONS} instructions: a layer this "
                                  "large is too big for one accelerator program", target)
            if planner.double:
                layer.attributes.pop(SINGLE_BUFFERED, None)
            else:
                layer.attributes[SINGLE_BUFFERED] = UnitAttr()


def fewest_instructions(op: Operation, tile: list[int]) -> int:
    """A lower bound of the instructions the layer's tiles take: one per output tile of a
    convolution, pool or element-wise op, a LOAD and a STORE per band (and channel plane) of a copy."""
    if isinstance(op, npu.ConvOp | npu.PoolOp | npu.EltwiseOp | npu.TableOp | npu.ClampOp):
        h, w, _ = hwc(shape_of(op.results[0]), op)
        return ceil_div(h, tile[0]) * ceil_div(w, max(tile[1], 1))
    if isinstance(op, npu.RelayoutOp):
        h, w, c = hwc(shape_of(op.input), op)
        return 2 * ceil_div(h, tile[0]) * (c if tile[2] == 1 and c > 1 else 1)
    return 0
