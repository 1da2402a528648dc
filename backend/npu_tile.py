"""npu-tile: cut every layer into tiles whose working set fits the target's SRAM.

Each op that runs instructions gets `npu.tile = array<i64: rows, cols, chunk>`: output rows
per band, output columns per band and output channels per chunk. Convolutions and pools may
be cut in all three (a band reads the input rows and columns its windows cover: the halo),
element-wise ops, tables and clamps in rows and channels, interleaves and edge pads in bands
of source rows and channels. Input channels are never split:
CONV rescales its int32 sums at the end of one instruction, so one output channel's whole
reduction (KH x KW x C weights) must fit beside its input and output tiles.

Among the tilings whose working set (backend/npu_tiling.py `working_set`, the same
function npu-allocate lays out) fits, the one moving the fewest DMA bytes plus a fixed cost
per instruction wins. A copy through SRAM (npu.relayout, npu.concat) moves whole rows: a
relayout is one LOAD and one STORE when the map fits (tile = the whole map), else one
channel plane at a time in bands of rows (chunk 1); a concat gets the rows per band of each
input. When nothing fits, one error names the ONNX node and the target.
"""

from __future__ import annotations

from dataclasses import dataclass

from xdsl.context import Context
from xdsl.dialects.builtin import ModuleOp
from xdsl.ir import Operation
from xdsl.passes import ModulePass

from xnpu.backend.npu_annotations import (
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
    INSTRUCTION_COST,
    Tiling,
    Window,
    choose_tiling,
    chunk_candidates,
    dma_cost,
    most_rows,
    sram_offsets,
    window_of,
    working_set,
)
from xnpu.dialects import npu
from xnpu.dialects.shapes import ints, shape_of
from xnpu.target.description import TargetDescription

ANY_CHUNK = 1 << 16  # units without a channel limit of their own


def _ceil(a: int, b: int) -> int:
    return -(-a // b)


class TilePlanner:
    def __init__(self, target: TargetDescription):
        self.target = target
        self.sram = target.memory.sram_bytes
        self.a = target.memory.channel_alignment

    def need(self, op: Operation, tile: list[int], window: Window | None = None) -> int:
        """SRAM bytes of one tile's working set, laid out as npu-allocate will."""
        return sram_offsets(working_set(op, tile, self.target, window))[1]

    def fits(self, op: Operation, tile: list[int]) -> bool:
        return self.need(op, tile) <= self.sram

    def no_fit(self, op: Operation, what: str, detail: str = "") -> LoweringError:
        return LoweringError(f"{node_names(op)}: no tiling of this {what} fits the {self.sram}-byte SRAM "
                             f"of {self.target.name}{detail}")

    def tile(self, op: Operation) -> list[int]:
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

    def conv(self, op: npu.ConvOp) -> Tiling:
        g = window_of(op)
        a = self.a
        oh, ow, oc = g.y

        def cost(t: Tiling) -> float:
            chunks = _ceil(g.chunk_unit(), t.chunk) * (1 if g.depthwise else g.groups)
            tiles = _ceil(oh, t.rows) * _ceil(ow, t.cols)
            per_tile = (dma_cost(g.in_rows(t.rows) * g.in_cols(t.cols) * align(g.in_channels(t.chunk), a))
                        + dma_cost(t.rows * t.cols * align(t.chunk, a)) + INSTRUCTION_COST)
            return chunks * (dma_cost(g.weight_bytes(t.chunk, a)) + tiles * per_tile)

        candidates = chunk_candidates(g.chunk_unit(), a, self.target.conv.max_channels)
        tiling = choose_tiling(oh, ow, candidates, self.sram, lambda t: self.need(op, t.as_list(), g), cost,
                               split_columns=True)
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

        def cost(t: Tiling) -> float:
            tiles = _ceil(oc, t.chunk) * _ceil(oh, t.rows) * _ceil(ow, t.cols)
            return tiles * (dma_cost(g.in_rows(t.rows) * g.in_cols(t.cols) * align(t.chunk, a))
                            + dma_cost(t.rows * t.cols * align(t.chunk, a)) + INSTRUCTION_COST)

        tiling = choose_tiling(oh, ow, chunk_candidates(oc, a, ANY_CHUNK), self.sram,
                               lambda t: self.need(op, t.as_list(), g), cost, split_columns=op.pool_kind != "global_avg")
        if tiling is None:
            raise self.no_fit(op, f"{op.pool_kind} pool")
        return tiling

    def elementwise(self, op: npu.EltwiseOp | npu.TableOp | npu.ClampOp) -> Tiling:
        h, w, c = hwc(shape_of(op.results[0]), op)
        a = self.a
        loads = 3 if isinstance(op, npu.EltwiseOp) else 2  # a, b and the result; or in and out

        def cost(t: Tiling) -> float:
            tiles = _ceil(c, t.chunk) * _ceil(h, t.rows)
            return tiles * (loads * dma_cost(t.rows * w * align(t.chunk, a)) + INSTRUCTION_COST)

        limit = self.target.eltwise.max_channels if isinstance(op, npu.EltwiseOp) else ANY_CHUNK
        tiling = choose_tiling(h, w, chunk_candidates(c, a, limit), self.sram, lambda t: self.need(op, t.as_list()), cost)
        if tiling is None:
            what = f"element-wise {op.kind}" if isinstance(op, npu.EltwiseOp) else op.name.removeprefix("npu.")
            raise self.no_fit(op, what)
        return tiling

    def strided_copy(self, op: npu.InterleaveOp | npu.PadOp) -> Tiling:
        """Bands of source rows (and channel chunks) through one staging buffer: each band is one
        LOAD and its STOREs (an interleave: one per phase reading the band; a pad: the band,
        its edge columns, and at the first and last band the edge rows)."""
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

        def cost(t: Tiling) -> float:
            tiles = _ceil(channels, t.chunk) * _ceil(rows, t.rows)
            return tiles * (loads + stores) * dma_cost(t.rows * cols * align(t.chunk, a))

        tiling = choose_tiling(rows, cols, chunk_candidates(channels, a, ANY_CHUNK), self.sram,
                               lambda t: self.need(op, t.as_list()), cost)
        if tiling is None:
            raise self.no_fit(op, op.name.removeprefix("npu."), f" (one row of {cols} pixels does not)")
        return tiling

    def relayout(self, op: npu.RelayoutOp) -> list[int]:
        h, w, c = hwc(shape_of(op.input), op)
        if self.fits(op, [h, w, c]):
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


@dataclass(frozen=True)
class NpuTilePass(ModulePass):
    """Annotate every layer with the cheapest tiling that fits the target's SRAM (npu.tile)."""

    name = "npu-tile"
    target: str | None = None  # default: the module's npu.target

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        target = resolve_target(op, self.target, self.name)
        planner = TilePlanner(target)
        for layer in layers(only_function(op, self.name)):
            set_ints(layer, TILE, planner.tile(layer))
