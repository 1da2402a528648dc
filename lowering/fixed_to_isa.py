"""Lowering `fixed` -> `isa`: the integer graph becomes a program for one target.

The pass replaces the module's function by an `isa` program (dialects/isa.py): the constant
image, the io table and the instruction sequence, in three phases.

1. **Layers.** The function is walked in order and every group of fixed ops one
   instruction can run is fused into a layer: conv2d/gemm + rescale (+ relu) is one CONV,
   add/sub (+ shift) + rescale (+ relu) and mul + rescale are one ELTWISE, global average
   pool + rescale is one POOL; a clamp that is not a relu follows its producer in SRAM as a
   CLAMP (or, on a target without one, an exact TABLE), a clamp to the whole int8 range
   is dropped (every unit saturates, R3). Weights, biases, rescale records and tables are
   packed into the constant image in the layouts the LOADs name (binary-format.md).
2. **DDR.** Every activation lives in DDR between layers, dense NHWC (a gemm operand
   N x K as N x 1 x K), except the program's inputs and outputs, which the host reads and
   writes in NCHW order; a layout change (NCHW input -> NHWC, NHWC -> NCHW for a flatten
   of a C x H x W map or an output) is a DMA copy through SRAM. Addresses above the
   constant image are assigned first-fit over live intervals, so a buffer reuses the bytes
   of buffers that died before it was written.
3. **Tiles.** Each layer is cut into tiles whose working set (input rows with the halo a
   window needs, weights, bias, records, output rows) fits the target's SRAM: output row
   bands, for convolutions and pools also column bands (with halo columns), and
   output-channel chunks where the weights alone are too big. Among the tilings that fit,
   the one moving the fewest DMA bytes (plus a fixed cost per instruction) wins. Every
   tile is LOAD ... compute ... STORE. Input channels are never split: CONV rescales its
   int32 sums at the end of one instruction, so one output channel's whole reduction
   (KH x KW x C weights) must fit beside its input and output tiles.

Anything the target cannot run (a missing unit, a kernel beyond its limit, an op without
an instruction) is one XnpuError line naming the op, its ONNX node and the target.
"""

from __future__ import annotations

import math
import struct
from collections.abc import Callable, Sequence
from dataclasses import dataclass

import numpy as np
from xdsl.context import Context
from xdsl.dialects import func
from xdsl.dialects.builtin import IntegerAttr, ModuleOp, StringAttr, UnknownLoc, i64
from xdsl.ir import Attribute, BlockArgument, Operation, SSAValue
from xdsl.passes import ModulePass

from xnpu.dialects import fixed
from xnpu.dialects import isa
from xnpu.dialects.nn import ints, shape_of
from xnpu.errors import XnpuError
from xnpu.ir_io import describe_op
from xnpu.semantics import fixed_point
from xnpu.target.description import TargetDescription, load_target
from xnpu.target.encoding import DMA_LAYOUTS, ELTWISE_OPS, POOL_KINDS
from xnpu.transforms.constants import fused_location

CONSTANT_ALIGNMENT = 64  # binary-format.md: every constant at a 64-byte aligned offset
DDR_ALIGNMENT = 64
SRAM_ALIGNMENT = 16
RAW_ROW = 32768  # a RAW DMA moves d0 rows of d1 elements, both 16-bit fields
INSTRUCTION_COST = 80  # cycles an extra instruction costs (overhead + DMA latency), for tiling


def _align(value: int, alignment: int) -> int:
    return -(-value // alignment) * alignment


class LoweringError(XnpuError):
    pass


# --------------------------------------------------------------------------------------
# DDR tensors
# --------------------------------------------------------------------------------------


@dataclass(eq=False)
class Storage:
    """A DDR region holding one or more views of the same bytes; live from `first` to `last` layer."""

    size: int
    first: int
    last: int
    address: int = -1
    pinned: bool = False  # program outputs stay live to the end


@dataclass(eq=False)
class Tensor:
    """An int8 map in DDR seen as H x W x C: NHWC (dense) or NCHW (C x H x W row-major)."""

    storage: Storage
    h: int
    w: int
    c: int
    layout: str  # "NHWC" | "NCHW"
    rank: int = 4  # of the logical tensor: 4 (NCHW map) or 1, 2 (N x K, stored N x 1 x K)

    @property
    def address(self) -> int:
        return self.storage.address

    @property
    def nhwc(self) -> bool:
        """Whether the bytes are in NHWC order (NCHW and NHWC coincide for one channel or one pixel)."""
        return self.layout == "NHWC" or self.c == 1 or self.h * self.w == 1

    @property
    def row_major(self) -> bool:
        """Whether the bytes are in the row-major order of the logical tensor (what the host reads)."""
        if self.rank != 4:
            return self.layout == "NHWC"
        return self.layout == "NCHW" or self.c == 1 or self.h * self.w == 1


def canonical_hwc(shape: Sequence[int], what: str) -> tuple[int, int, int]:
    """The H x W x C view of a logical tensor: NCHW maps (batch 1), N x K matrices as N x 1 x K."""
    shape = tuple(shape)
    if len(shape) == 4:
        if shape[0] != 1:
            raise LoweringError(f"{what}: batch {shape[0]} is not supported (the accelerator runs batch 1)")
        return shape[2], shape[3], shape[1]
    if len(shape) == 2:
        return shape[0], 1, shape[1]
    if len(shape) == 1:
        return 1, 1, shape[0]
    raise LoweringError(f"{what}: rank-{len(shape)} tensors are not supported (rank 1, 2 or 4 only)")


# --------------------------------------------------------------------------------------
# Constants and program text
# --------------------------------------------------------------------------------------


class ConstantImage:
    """The DDR constant image; identical blobs are stored once."""

    def __init__(self) -> None:
        self.data = bytearray()
        self.offsets: dict[bytes, int] = {}

    def add(self, blob: bytes) -> int:
        blob = bytes(blob)
        if blob not in self.offsets:
            offset = _align(len(self.data), CONSTANT_ALIGNMENT)
            self.data += bytes(offset - len(self.data)) + blob
            self.offsets[blob] = offset
        return self.offsets[blob]


def records(multipliers: Sequence[int], shifts: Sequence[int]) -> bytes:
    """Rescale records: uint16 M, int8 shift, a zero byte (isa.md section 1)."""
    return b"".join(struct.pack("<Hbx", int(m), int(s)) for m, s in zip(multipliers, shifts))


class Program:
    def __init__(self, target: TargetDescription) -> None:
        self.target = target
        self.ops: list[Operation] = []
        self.location: Attribute = UnknownLoc()

    def emit(self, mnemonic: str, **fields: int) -> None:
        op = isa.make_op(mnemonic, **fields)
        op.location = self.location
        self.ops.append(op)

    # DMA helpers -------------------------------------------------------------------

    def map_dma(
        self, mnemonic: str, tensor: Tensor, sram: int, row0: int, rows: int, c0: int = 0, cn: int | None = None,
        col0: int = 0, cols: int | None = None,
    ) -> None:
        """Rows [row0, +rows), columns [col0, +cols), channels [c0, +cn) of an NHWC map <-> a padded SRAM map."""
        cn = tensor.c if cn is None else cn
        cols = tensor.w if cols is None else cols
        all_channels = c0 == 0 and cn == tensor.c
        all_columns = col0 == 0 and cols == tensor.w
        self.emit(
            mnemonic, layout=DMA_LAYOUTS["NHWC"], sram_addr=sram,
            ddr_addr=tensor.address + ((row0 * tensor.w + col0) * tensor.c + c0), d0=rows, d1=cols, d2=cn,
            ddr_row_stride=0 if all_channels and all_columns else tensor.w * tensor.c,
            ddr_pixel_stride=0 if all_channels else tensor.c,
        )

    def load_raw(self, sram: int, ddr: int, size: int, elem_log2: int = 0) -> None:
        """`size` elements of 2^elem_log2 bytes, contiguous on both sides."""
        done = 0
        while done < size:
            rows = min((size - done) // RAW_ROW, 65535)
            d0, d1 = (rows, RAW_ROW) if rows else (1, size - done)
            step = d0 * d1
            self.emit("LOAD", layout=DMA_LAYOUTS["RAW"], elem_log2=elem_log2, sram_addr=sram + (done << elem_log2),
                      ddr_addr=ddr + (done << elem_log2), d0=d0, d1=d1)
            done += step


class SramArena:
    """Bump allocation of one tile's working set."""

    def __init__(self) -> None:
        self.top = 0

    def take(self, size: int) -> int:
        address = self.top
        self.top = _align(address + max(size, 1), SRAM_ALIGNMENT)
        return address


# --------------------------------------------------------------------------------------
# Tiling
# --------------------------------------------------------------------------------------


def channel_chunks(total: int, chunk: int) -> list[tuple[int, int]]:
    return [(c0, min(chunk, total - c0)) for c0 in range(0, total, chunk)]


def chunk_candidates(total: int, alignment: int, limit: int) -> list[int]:
    """Chunk sizes to try: the whole, then ever smaller multiples of the alignment."""
    sizes = set()
    for parts in range(1, -(-total // alignment) + 1):
        size = min(total, _align(-(-total // parts), alignment))
        if size <= limit:
            sizes.add(size)
    if not sizes:
        sizes.add(min(total, max(alignment, (limit // alignment) * alignment) if limit >= alignment else limit))
    return sorted(sizes, reverse=True)


@dataclass
class Tiling:
    rows: int  # output rows per band
    chunk: int  # output channels per chunk
    cols: int  # output columns per band


def width_candidates(width: int) -> list[int]:
    """Column band widths to try: the whole row, then every distinct ceil(width / k)."""
    return sorted({-(-width // parts) for parts in range(1, width + 1)}, reverse=True)


def choose_tiling(
    out_rows: int, out_cols: int, candidates: Sequence[int], sram_bytes: int,
    need: Callable[[int, int, int], int], cost: Callable[[int, int, int], float], split_columns: bool = False,
) -> Tiling | None:
    """The cheapest (rows, channel chunk, columns) whose working set fits; column bands only for window ops."""
    best: tuple[float, Tiling] | None = None
    for chunk in candidates:
        for cols in width_candidates(out_cols) if split_columns else [out_cols]:
            if need(1, chunk, cols) > sram_bytes:
                continue
            low, high = 1, out_rows
            while low < high:  # the most rows that fit
                middle = (low + high + 1) // 2
                if need(middle, chunk, cols) <= sram_bytes:
                    low = middle
                else:
                    high = middle - 1
            total = cost(low, chunk, cols)
            if best is None or total < best[0]:
                best = (total, Tiling(low, chunk, cols))
            if cols == out_cols and low == out_rows:
                break  # whole rows fit: narrower bands only cost more
    return None if best is None else best[1]


def bands(total: int, size: int) -> list[tuple[int, int]]:
    return [(start, min(size, total - start)) for start in range(0, total, size)]


def dma_cost(size: int) -> float:
    return INSTRUCTION_COST + size / 16


def window_rows(row0: int, rows: int, stride: int, extent: int, pad_top: int, height: int) -> tuple[int, int, int, int]:
    """Input rows [first, first + count) a band of output rows reads, and the tile's top/bottom padding."""
    start = row0 * stride - pad_top
    end = (row0 + rows - 1) * stride - pad_top + extent
    first, last = max(start, 0), min(end, height)
    return first, max(last - first, 0), first - start, end - last


# --------------------------------------------------------------------------------------
# Layers
# --------------------------------------------------------------------------------------


@dataclass(eq=False)
class Layer:
    location: Attribute
    inputs: list[Tensor]
    output: Tensor | None

    def plan(self, target: TargetDescription) -> None:
        """Choose the tiling (layers that copy through SRAM one band at a time need none)."""

    def emit(self, program: Program) -> None:
        raise NotImplementedError


def epilogue_need(epilogue) -> int:
    return 256 if epilogue is not None and epilogue[0] == "table" else 0


def emit_epilogue(program: Program, epilogue, sram: int, rows: int, w: int, c: int, table_sram: int) -> None:
    if epilogue is None:
        return
    if epilogue[0] == "clamp":
        program.emit("CLAMP", in_addr=sram, out_addr=sram, h=rows, w=w, c=c, min=epilogue[1], max=epilogue[2])
    else:
        program.emit("TABLE", in_addr=sram, out_addr=sram, table_addr=table_sram, h=rows, w=w, c=c)


def load_epilogue(program: Program, epilogue, table_sram: int) -> None:
    if epilogue is not None and epilogue[0] == "table":
        program.load_raw(table_sram, epilogue[1], 256)


@dataclass(eq=False)
class ConvLayer(Layer):
    kernel: tuple[int, int]
    strides: tuple[int, int]
    dilations: tuple[int, int]
    pads: tuple[int, int, int, int]  # top, left, bottom, right
    groups: int
    depthwise: bool
    weight_offset: int  # OHWI (or DW) in the constant image
    bias_offset: int | None
    record_offset: int
    per_channel: bool
    relu: bool
    epilogue: tuple | None
    out_hw: tuple[int, int]
    tiling: Tiling | None = None
    weight_tensor: Tensor | None = None  # kernels computed by the program (seed 002), in DDR in DW layout

    def weight_bytes(self, chunk: int, a: int, in_c: int) -> int:
        kh, kw = self.kernel
        return _align(chunk, a) * kh * kw * (1 if self.depthwise else _align(in_c, a))

    def group_in(self) -> int:
        return self.inputs[0].c // self.groups

    def plan(self, target: TargetDescription) -> None:
        x, y = self.inputs[0], self.output
        a = target.memory.channel_alignment
        kh, kw = self.kernel
        extent_h = self.dilations[0] * (kh - 1) + 1
        oh, ow = self.out_hw
        group_out = y.c // self.groups
        unit = group_out if not self.depthwise else y.c
        limit = target.conv.max_channels

        extent_w = self.dilations[1] * (kw - 1) + 1

        def in_c(chunk):
            return chunk if self.depthwise else self.group_in()

        def need(rows, chunk, cols):
            in_rows = min(x.h, (rows - 1) * self.strides[0] + extent_h)
            in_cols = min(x.w, (cols - 1) * self.strides[1] + extent_w)
            return (
                _align(self.weight_bytes(chunk, a, in_c(chunk)), SRAM_ALIGNMENT) + _align(4 * chunk, SRAM_ALIGNMENT) * 2
                + epilogue_need(self.epilogue) + 3 * SRAM_ALIGNMENT
                + in_rows * in_cols * _align(in_c(chunk), a) + rows * cols * _align(chunk, a)
            )

        def cost(rows, chunk, cols):
            chunks = -(-unit // chunk) * (1 if self.depthwise else self.groups)
            tiles = -(-oh // rows) * -(-ow // cols)
            in_rows = min(x.h, (rows - 1) * self.strides[0] + extent_h)
            in_cols = min(x.w, (cols - 1) * self.strides[1] + extent_w)
            per_tile = (dma_cost(in_rows * in_cols * _align(in_c(chunk), a)) + dma_cost(rows * cols * _align(chunk, a))
                        + INSTRUCTION_COST)
            return chunks * (dma_cost(self.weight_bytes(chunk, a, in_c(chunk))) + tiles * per_tile)

        self.tiling = choose_tiling(oh, ow, chunk_candidates(unit, a, limit), target.memory.sram_bytes, need, cost,
                                    split_columns=True)
        if self.tiling is None:
            raise LoweringError(
                f"no tiling of this convolution fits the {target.memory.sram_bytes}-byte SRAM of {target.name} "
                f"(input {x.h}x{x.w}x{x.c}, output {oh}x{ow}x{y.c}, kernel {kh}x{kw})"
            )

    def chunks(self) -> list[tuple[int, int, int, int]]:
        """(in_c0, in_cn, out_c0, out_cn) of every channel chunk."""
        x, y = self.inputs[0], self.output
        chunk = self.tiling.chunk
        if self.depthwise:
            return [(c0, cn, c0, cn) for c0, cn in channel_chunks(y.c, chunk)]
        group_in, group_out = self.group_in(), y.c // self.groups
        result = []
        for g in range(self.groups):
            for o0, on in channel_chunks(group_out, chunk):
                result.append((g * group_in, group_in, g * group_out + o0, on))
        return result

    def emit(self, program: Program) -> None:
        x, y = self.inputs[0], self.output
        target = program.target
        a = target.memory.channel_alignment
        kh, kw = self.kernel
        oh, ow = self.out_hw
        extent_h = self.dilations[0] * (kh - 1) + 1
        extent_w = self.dilations[1] * (kw - 1) + 1
        rows, cols = self.tiling.rows, self.tiling.cols
        for ic0, icn, oc0, ocn in self.chunks():
            arena = SramArena()
            w_sram = arena.take(self.weight_bytes(ocn, a, icn))
            b_sram = arena.take(4 * ocn)
            r_sram = arena.take(4 * ocn)
            t_sram = arena.take(epilogue_need(self.epilogue))
            in_rows_max = min(x.h, (rows - 1) * self.strides[0] + extent_h)
            in_cols_max = min(x.w, (cols - 1) * self.strides[1] + extent_w)
            in_sram = arena.take(in_rows_max * in_cols_max * _align(icn, a))
            out_sram = arena.take(rows * cols * _align(ocn, a))
            kernel_elems = kh * kw * (1 if self.depthwise else icn)
            weight_base = self.weight_offset if self.weight_tensor is None else self.weight_tensor.address
            if self.depthwise:
                program.emit("LOAD", layout=DMA_LAYOUTS["DW"], sram_addr=w_sram,
                             ddr_addr=weight_base + oc0 * kernel_elems, d0=ocn, d1=kh, d2=kw)
            else:
                program.emit("LOAD", layout=DMA_LAYOUTS["OHWI"], sram_addr=w_sram,
                             ddr_addr=weight_base + oc0 * kernel_elems, d0=ocn, d1=kh, d2=kw, d3=icn)
            if self.bias_offset is not None:
                program.load_raw(b_sram, self.bias_offset + 4 * oc0, ocn, elem_log2=2)
            if self.per_channel:
                program.load_raw(r_sram, self.record_offset + 4 * oc0, 4 * ocn)
            else:
                program.load_raw(r_sram, self.record_offset, 4)
            load_epilogue(program, self.epilogue, t_sram)
            for (row0, band), (col0, width) in ((r, c) for r in bands(oh, rows) for c in bands(ow, cols)):
                first, count, pad_top, pad_bottom = window_rows(row0, band, self.strides[0], extent_h, self.pads[0], x.h)
                left, span, pad_left, pad_right = window_rows(col0, width, self.strides[1], extent_w, self.pads[1], x.w)
                program.map_dma("LOAD", x, in_sram, first, count, ic0, icn, left, span)
                program.emit(
                    "CONV", depthwise=int(self.depthwise), relu=int(self.relu), per_channel=int(self.per_channel),
                    bias=int(self.bias_offset is not None), in_addr=in_sram, weight_addr=w_sram,
                    bias_addr=b_sram if self.bias_offset is not None else 0, rescale_addr=r_sram, out_addr=out_sram,
                    in_h=count, in_w=span, in_c=icn, out_c=ocn, kernel_h=kh, kernel_w=kw,
                    stride_h=self.strides[0], stride_w=self.strides[1],
                    dilation_h=self.dilations[0], dilation_w=self.dilations[1],
                    pad_top=pad_top, pad_left=pad_left, pad_bottom=pad_bottom, pad_right=pad_right,
                )
                emit_epilogue(program, self.epilogue, out_sram, band, width, ocn, t_sram)
                program.map_dma("STORE", y, out_sram, row0, band, oc0, ocn, col0, width)


@dataclass(eq=False)
class EltwiseLayer(Layer):
    op: str  # add | sub | mul
    broadcast: str  # none | channel | scalar
    fields: dict
    epilogue: tuple | None
    tiling: Tiling | None = None

    def b_bytes(self, rows: int, chunk: int, a: int) -> int:
        return {"none": rows * self.output.w * _align(chunk, a), "channel": _align(chunk, a), "scalar": 1}[self.broadcast]

    def plan(self, target: TargetDescription) -> None:
        y = self.output
        a = target.memory.channel_alignment

        def need(rows, chunk, cols):
            return 2 * rows * y.w * _align(chunk, a) + self.b_bytes(rows, chunk, a) + epilogue_need(self.epilogue) + 4 * SRAM_ALIGNMENT

        def cost(rows, chunk, cols):
            tiles = -(-y.c // chunk) * -(-y.h // rows)
            return tiles * (3 * dma_cost(rows * y.w * _align(chunk, a)) + INSTRUCTION_COST)

        self.tiling = choose_tiling(y.h, y.w, chunk_candidates(y.c, a, target.eltwise.max_channels),
                                    target.memory.sram_bytes, need, cost)
        if self.tiling is None:
            raise LoweringError(f"no tiling of this element-wise {self.op} fits the SRAM of {target.name}")

    def emit(self, program: Program) -> None:
        (x_a, x_b), y = self.inputs, self.output
        a = program.target.memory.channel_alignment
        rows = self.tiling.rows
        for c0, cn in channel_chunks(y.c, self.tiling.chunk):
            arena = SramArena()
            t_sram = arena.take(epilogue_need(self.epilogue))
            a_sram = arena.take(rows * y.w * _align(cn, a))
            b_sram = arena.take(self.b_bytes(rows, cn, a))
            load_epilogue(program, self.epilogue, t_sram)
            if self.broadcast == "channel":
                program.map_dma("LOAD", x_b, b_sram, 0, 1, c0, cn)
            elif self.broadcast == "scalar":
                program.load_raw(b_sram, x_b.address, 1)
            for row0 in range(0, y.h, rows):
                band = min(rows, y.h - row0)
                program.map_dma("LOAD", x_a, a_sram, row0, band, c0, cn)
                if self.broadcast == "none":
                    program.map_dma("LOAD", x_b, b_sram, row0, band, c0, cn)
                program.emit("ELTWISE", op=ELTWISE_OPS[self.op], a_addr=a_sram, b_addr=b_sram, out_addr=a_sram,
                             h=band, w=y.w, c=cn, **self.fields)
                emit_epilogue(program, self.epilogue, a_sram, band, y.w, cn, t_sram)
                program.map_dma("STORE", y, a_sram, row0, band, c0, cn)


@dataclass(eq=False)
class PoolLayer(Layer):
    kind: str  # max | avg | global_avg
    kernel: tuple[int, int]
    strides: tuple[int, int]
    pads: tuple[int, int, int, int]
    multiplier: int
    shift: int
    record_offset: int | None  # per-position records (avg)
    epilogue: tuple | None
    tiling: Tiling | None = None

    def plan(self, target: TargetDescription) -> None:
        x, y = self.inputs[0], self.output
        a = target.memory.channel_alignment
        glob = self.kind == "global_avg"

        def in_rows(rows):
            return x.h if glob else min(x.h, (rows - 1) * self.strides[0] + self.kernel[0])

        def in_cols(cols):
            return x.w if glob else min(x.w, (cols - 1) * self.strides[1] + self.kernel[1])

        def need(rows, chunk, cols):
            recs = 4 * rows * cols if self.record_offset is not None else 0
            return ((in_rows(rows) * in_cols(cols) + rows * cols) * _align(chunk, a) + recs + epilogue_need(self.epilogue)
                    + 4 * SRAM_ALIGNMENT)

        def cost(rows, chunk, cols):
            tiles = -(-y.c // chunk) * -(-y.h // rows) * -(-y.w // cols)
            return tiles * (dma_cost(in_rows(rows) * in_cols(cols) * _align(chunk, a)) + dma_cost(rows * cols * _align(chunk, a))
                            + INSTRUCTION_COST)

        self.tiling = choose_tiling(y.h, y.w, chunk_candidates(y.c, a, 1 << 16), target.memory.sram_bytes, need, cost,
                                    split_columns=not glob)
        if self.tiling is None:
            raise LoweringError(f"no tiling of this {self.kind} pool fits the SRAM of {target.name}")

    def emit(self, program: Program) -> None:
        x, y = self.inputs[0], self.output
        a = program.target.memory.channel_alignment
        rows, cols = self.tiling.rows, self.tiling.cols
        glob = self.kind == "global_avg"
        for c0, cn in channel_chunks(y.c, self.tiling.chunk):
            arena = SramArena()
            t_sram = arena.take(epilogue_need(self.epilogue))
            r_sram = arena.take(4 * rows * cols if self.record_offset is not None else 0)
            in_rows_max = x.h if glob else min(x.h, (rows - 1) * self.strides[0] + self.kernel[0])
            in_cols_max = x.w if glob else min(x.w, (cols - 1) * self.strides[1] + self.kernel[1])
            in_sram = arena.take(in_rows_max * in_cols_max * _align(cn, a))
            out_sram = arena.take(rows * cols * _align(cn, a))
            load_epilogue(program, self.epilogue, t_sram)
            for (row0, band), (col0, width) in ((r, c) for r in bands(y.h, rows) for c in bands(y.w, cols)):
                if glob:
                    first, count, pad_top, pad_bottom = 0, x.h, 0, 0
                    left, span, pad_left, pad_right = 0, x.w, 0, 0
                else:
                    first, count, pad_top, pad_bottom = window_rows(row0, band, self.strides[0], self.kernel[0], self.pads[0], x.h)
                    left, span, pad_left, pad_right = window_rows(col0, width, self.strides[1], self.kernel[1], self.pads[1], x.w)
                program.map_dma("LOAD", x, in_sram, first, count, c0, cn, left, span)
                if self.record_offset is not None:
                    for r in range(band):  # the records of this tile, row by row of the OH x OW grid
                        program.load_raw(r_sram + 4 * r * width, self.record_offset + 4 * ((row0 + r) * y.w + col0), 4 * width)
                fields = dict(kind=POOL_KINDS[self.kind], in_addr=in_sram, out_addr=out_sram, in_h=count, in_w=span,
                              c=cn, out_h=band, out_w=width)
                if not glob:
                    fields.update(kernel_h=self.kernel[0], kernel_w=self.kernel[1], stride_h=self.strides[0],
                                  stride_w=self.strides[1], pad_top=pad_top, pad_left=pad_left,
                                  pad_bottom=pad_bottom, pad_right=pad_right)
                if self.kind != "max":
                    if self.record_offset is not None:
                        fields.update(per_position=1, rescale_addr=r_sram)
                    else:
                        fields.update(out_multiplier=self.multiplier, out_shift=self.shift)
                program.emit("POOL", **fields)
                emit_epilogue(program, self.epilogue, out_sram, band, width, cn, t_sram)
                program.map_dma("STORE", y, out_sram, row0, band, c0, cn, col0, width)


@dataclass(eq=False)
class ElementLayer(Layer):
    """A TABLE or CLAMP over a whole map, in place in SRAM."""

    epilogue: tuple  # ("table", offset) | ("clamp", lo, hi)
    tiling: Tiling | None = None

    def plan(self, target: TargetDescription) -> None:
        y = self.output
        a = target.memory.channel_alignment

        def need(rows, chunk, cols):
            return rows * y.w * _align(chunk, a) + epilogue_need(self.epilogue) + 2 * SRAM_ALIGNMENT

        def cost(rows, chunk, cols):
            return -(-y.c // chunk) * -(-y.h // rows) * (2 * dma_cost(rows * y.w * _align(chunk, a)) + INSTRUCTION_COST)

        self.tiling = choose_tiling(y.h, y.w, chunk_candidates(y.c, a, 1 << 16), target.memory.sram_bytes, need, cost)
        if self.tiling is None:
            raise LoweringError(f"no tiling of this {self.epilogue[0]} fits the SRAM of {target.name}")

    def emit(self, program: Program) -> None:
        x, y = self.inputs[0], self.output
        a = program.target.memory.channel_alignment
        rows = self.tiling.rows
        for c0, cn in channel_chunks(y.c, self.tiling.chunk):
            arena = SramArena()
            t_sram = arena.take(epilogue_need(self.epilogue))
            sram = arena.take(rows * y.w * _align(cn, a))
            load_epilogue(program, self.epilogue, t_sram)
            for row0 in range(0, y.h, rows):
                band = min(rows, y.h - row0)
                program.map_dma("LOAD", x, sram, row0, band, c0, cn)
                emit_epilogue(program, self.epilogue, sram, band, y.w, cn, t_sram)
                program.map_dma("STORE", y, sram, row0, band, c0, cn)


@dataclass(eq=False)
class RelayoutLayer(Layer):
    """Copy an H x W x C map between NHWC and NCHW order (a flatten, an input or an output).

    When the whole map fits in SRAM it is one LOAD and one STORE (the DMA's NCHW layout does
    the reordering); otherwise each channel plane is moved on its own, a band of rows at a
    time, with the pixel stride picking one channel out of the NHWC side.
    """

    def plan(self, target: TargetDescription) -> None:
        if self.inputs[0].w * target.memory.channel_alignment > target.memory.sram_bytes:
            raise LoweringError(f"one row of {self.inputs[0].w} pixels does not fit the SRAM of {target.name}")

    def emit(self, program: Program) -> None:
        x, y = self.inputs[0], self.output
        target = program.target
        a = target.memory.channel_alignment
        h, w, c = x.h, x.w, x.c
        if h * w * _align(c, a) <= target.memory.sram_bytes:
            for mnemonic, tensor in (("LOAD", x), ("STORE", y)):
                if tensor.layout == "NCHW":
                    program.emit(mnemonic, layout=DMA_LAYOUTS["NCHW"], sram_addr=0, ddr_addr=tensor.address, d0=c, d1=h, d2=w)
                else:
                    program.map_dma(mnemonic, tensor, 0, 0, h)
            return
        rows = max(1, min(h, target.memory.sram_bytes // (w * a)))
        for channel in range(c):
            for row0 in range(0, h, rows):
                band = min(rows, h - row0)
                for mnemonic, tensor in (("LOAD", x), ("STORE", y)):
                    if tensor.layout == "NCHW":
                        program.emit(mnemonic, layout=DMA_LAYOUTS["NHWC"], sram_addr=0,
                                     ddr_addr=tensor.address + (channel * h + row0) * w, d0=band, d1=w, d2=1)
                    else:
                        program.map_dma(mnemonic, tensor, 0, row0, band, channel, 1)


@dataclass(eq=False)
class ConcatLayer(Layer):
    """Channel concat of NHWC maps: each part is stored at its channel offset (pixel stride = all channels)."""

    def plan(self, target: TargetDescription) -> None:
        widest = max(_align(part.c, target.memory.channel_alignment) for part in self.inputs)
        if self.output.w * widest > target.memory.sram_bytes:
            raise LoweringError(f"one row of a concat input does not fit the SRAM of {target.name}")

    def emit(self, program: Program) -> None:
        y = self.output
        a = program.target.memory.channel_alignment
        offset = 0
        for part in self.inputs:
            rows = max(1, min(y.h, program.target.memory.sram_bytes // (y.w * _align(part.c, a))))
            for row0 in range(0, y.h, rows):
                band = min(rows, y.h - row0)
                program.map_dma("LOAD", part, 0, row0, band)
                program.map_dma("STORE", y, 0, row0, band, offset, part.c)
            offset += part.c


# --------------------------------------------------------------------------------------
# From fixed ops to layers
# --------------------------------------------------------------------------------------


def single_user(value: SSAValue) -> Operation | None:
    uses = list(value.uses)
    return uses[0].operation if len(uses) == 1 else None


def rescale_pair(op: fixed.RescaleOp) -> tuple[list[int], list[int]]:
    return ints(op.multiplier), ints(op.shift)


class GraphLowering:
    def __init__(self, function: func.FuncOp, target: TargetDescription):
        self.function = function
        self.target = target
        self.constants = ConstantImage()
        self.layers: list[Layer] = []
        self.tensors: dict[SSAValue, Tensor] = {}
        self.nhwc_views: dict[int, Tensor] = {}
        self.row_major_views: dict[int, Tensor] = {}
        self.storages: list[Storage] = []
        self.io: list[dict] = []
        self.consumed: set[Operation] = set()
        self.compressed: dict[int, tuple[int, int, np.ndarray]] = {}  # image offset -> (bytes, bits, dictionary)
        self.kernel_views: dict[SSAValue, Tensor] = {}  # activations reshaped to conv kernels (seed 002)

    def note_codebook(self, weight_op: Operation, blob: bytes) -> None:
        """Record where a compress-weights layer's int8 weights lie in the image (section kind 6).

        A blob holding a value outside the dictionary (a dilated kernel padded with zeros
        the dictionary lacks) stays uncompressed.
        """
        from xnpu.transforms.compress_weights import codebook_of

        book = codebook_of(weight_op)
        if book is None or not np.isin(np.frombuffer(blob, dtype=np.int8), book[1]).all():
            return
        self.compressed[self.constants.add(blob)] = (len(blob), *book)

    # errors ---------------------------------------------------------------------------

    def fail(self, op: Operation, message: str) -> LoweringError:
        return LoweringError(f"{describe_op(op)}: {message} (target {self.target.name})")

    # tensors --------------------------------------------------------------------------

    def new_tensor(self, h: int, w: int, c: int, layout: str = "NHWC", rank: int = 4) -> Tensor:
        storage = Storage(h * w * c, len(self.layers), len(self.layers))
        self.storages.append(storage)
        return Tensor(storage, h, w, c, layout, rank)

    def use(self, tensor: Tensor) -> Tensor:
        tensor.storage.last = max(tensor.storage.last, len(self.layers))
        return tensor

    def tensor_of(self, value: SSAValue, op: Operation) -> Tensor:
        if value not in self.tensors:
            raise self.fail(op, f"operand {value.name_hint or ''} is not an int8 tensor this target holds in memory")
        return self.tensors[value]

    def nhwc(self, value: SSAValue, op: Operation) -> Tensor:
        tensor = self.tensor_of(value, op)
        if tensor.nhwc:
            return self.use(tensor)
        key = id(tensor)
        if key not in self.nhwc_views:
            view = self.new_tensor(tensor.h, tensor.w, tensor.c, "NHWC")
            self.add_layer(RelayoutLayer(op.location, [self.use(tensor)], view))
            self.nhwc_views[key] = view
        return self.use(self.nhwc_views[key])

    def row_major(self, tensor: Tensor, location: Attribute) -> Tensor:
        """The tensor with its bytes in NCHW order (C x H x W row-major)."""
        if tensor.row_major:
            return self.use(tensor)
        key = id(tensor)
        if key not in self.row_major_views:
            view = self.new_tensor(tensor.h, tensor.w, tensor.c, "NCHW")
            self.add_layer(RelayoutLayer(location, [self.use(tensor)], view))
            self.row_major_views[key] = view
        return self.use(self.row_major_views[key])

    def add_layer(self, layer: Layer) -> None:
        for tensor in layer.inputs:
            self.use(tensor)
        if layer.output is not None:
            layer.output.storage.first = min(layer.output.storage.first, len(self.layers))
        self.layers.append(layer)

    def define(self, value: SSAValue, op: Operation) -> Tensor:
        shape = shape_of(value)
        h, w, c = canonical_hwc(shape, describe_op(op))
        tensor = self.new_tensor(h, w, c, rank=len(shape))
        self.tensors[value] = tensor
        return tensor

    # epilogues: what follows an int8 result in SRAM ------------------------------------

    def clamp_after(self, value: SSAValue) -> tuple[SSAValue, list[Operation], bool, tuple | None]:
        """(final value, fused ops, relu flag, epilogue) for an optional clamp consuming `value`."""
        user = single_user(value)
        if not isinstance(user, fixed.ClampOp):
            return value, [], False, None
        relu, epilogue = self.clamp_plan(user)
        return user.result, [user], relu, epilogue

    def clamp_plan(self, clamp: fixed.ClampOp) -> tuple[bool, tuple | None]:
        low, high = clamp.min.value.data, clamp.max.value.data
        data = self.target.data
        if low <= data.saturation_min and high >= data.saturation_max:
            return False, None  # every unit saturates to this range already (R3)
        if low == 0 and high >= data.saturation_max:
            return True, None
        return False, self.clamp_epilogue(clamp, low, high)

    def clamp_epilogue(self, op: Operation, low: int, high: int) -> tuple:
        if self.target.has_clamp:
            return ("clamp", low, high)
        if self.target.has_table:
            table = np.clip(np.arange(-128, 128), low, high)
            table[0] = max(min(-127, high), low)  # -128 is never produced (R2); keep the entry in range
            return ("table", self.constants.add(table.astype(np.int8).tobytes()))
        raise self.fail(op, "the target has neither a clamp nor a table unit for this clamp")

    def table_epilogue(self, op: Operation, table: np.ndarray) -> tuple:
        if not self.target.has_table:
            raise self.fail(op, "the target has no table unit")
        return ("table", self.constants.add(np.asarray(table, dtype=np.int8).tobytes()))

    # ops ------------------------------------------------------------------------------

    def lower(self) -> None:
        for op in list(self.function.body.block.ops):
            if op in self.consumed:
                continue
            handler = getattr(self, "lower_" + op.name.replace(".", "_"), None)
            if handler is None:
                raise self.fail(op, f"'{op.name}' has no lowering to instructions")
            handler(op)

    def lower_fixed_constant(self, op: fixed.ConstantOp) -> None:
        pass  # read by the ops that use it

    def lower_func_return(self, op: func.ReturnOp) -> None:
        result_attrs = self.function.res_attrs.data if self.function.res_attrs else None
        for index, operand in enumerate(op.operands):
            owner = operand.owner
            if not isinstance(owner, fixed.DequantizeOp):
                raise self.fail(op, f"result {index} is not produced by fixed.dequantize")
            name = f"output_{index}"
            if result_attrs is not None:
                entry = result_attrs[index].data.get("nn.name")
                if isinstance(entry, StringAttr):
                    name = entry.data
            scales = owner.scales()
            if len(scales) != 1:
                raise self.fail(owner, "a per-channel output scale cannot be described in the io table")
            shape = shape_of(owner.input)
            tensor = self.row_major(self.tensor_of(owner.input, owner), owner.location)
            tensor.storage.pinned = True
            self.io.append(dict(name=name, direction="output", shape=shape, dtype="int8", scale=float(scales[0]),
                                zero_point=0, tensor=tensor, layout="NCHW" if len(shape) == 4 else "RAW"))

    def lower_fixed_dequantize(self, op: fixed.DequantizeOp) -> None:
        if not all(isinstance(use.operation, func.ReturnOp) for use in op.result.uses):
            raise self.fail(op, "a dequantize inside the graph has no instruction (only program outputs leave int8)")

    def lower_fixed_quantize(self, op: fixed.QuantizeOp) -> None:
        if not isinstance(op.input, BlockArgument):
            raise self.fail(op, "a quantize inside the graph has no instruction (only program inputs enter as float)")
        if fixed.width_of(op.result) != 8:
            raise self.fail(op, "program inputs must be quantized to int8")
        arg = op.input
        name = f"input_{arg.index}"
        if self.function.arg_attrs is not None:
            entry = self.function.arg_attrs.data[arg.index].data.get("nn.name")
            if isinstance(entry, StringAttr):
                name = entry.data
        if any(entry["name"] == name for entry in self.io):
            raise self.fail(op, f"input '{name}' is quantized twice; the io table holds one scale per input")
        shape = shape_of(op.result)
        h, w, c = canonical_hwc(shape, describe_op(op))
        tensor = self.new_tensor(h, w, c, "NCHW" if len(shape) == 4 else "NHWC", len(shape))
        tensor.storage.first = -1
        tensor.storage.pinned = True  # the host's copy stays intact for the whole run
        self.tensors[op.result] = tensor
        self.io.append(dict(name=name, direction="input", shape=shape, dtype="int8", scale=op.scale.value.data,
                            zero_point=0, tensor=tensor, layout="NCHW" if len(shape) == 4 else "RAW"))

    def conv_rescale(self, op: Operation) -> tuple[fixed.RescaleOp, SSAValue, list[Operation], bool, tuple | None]:
        rescale = single_user(op.results[0])
        if not isinstance(rescale, fixed.RescaleOp) or fixed.width_of(rescale.result) != 8:
            raise self.fail(op, "an int32 accumulator must be rescaled to int8 by its only user (CONV writes int8)")
        value, fused, relu, epilogue = self.clamp_after(rescale.result)
        self.consumed.update([rescale, *fused])
        return rescale, value, [rescale, *fused], relu, epilogue

    def check_limits(self, op: Operation, unit: str, checks) -> None:
        for what, values, low, high in checks:
            if any(not low <= v <= high for v in values):
                raise self.fail(op, f"{what} {'x'.join(map(str, values))} is outside the {unit} unit's range [{low}, {high}]")

    def lower_fixed_conv2d(self, op: fixed.Conv2dOp) -> None:
        weight_op = op.weight.owner
        if op.weight in self.kernel_views:
            return self.activation_kernel_conv(op)
        if not isinstance(weight_op, fixed.ConstantOp):
            raise self.fail(op, "convolution weights must be constants or an activation reshaped to kernels")
        weights = weight_op.to_numpy()  # O x C/g x KH x KW
        bias = op.bias.owner.to_numpy() if op.bias is not None else None
        if op.bias is not None and not isinstance(op.bias.owner, fixed.ConstantOp):
            raise self.fail(op, "convolution biases must be constants")
        x = self.nhwc(op.input, op)
        groups = op.group.value.data
        out_c, _, kh, kw = weights.shape
        depthwise = groups == x.c and groups == out_c and groups > 1
        strides, pads, dilations = ints(op.strides), ints(op.pads), ints(op.dilations)
        pads4 = (pads[0], pads[1], pads[2], pads[3])  # fixed: top, left, bottom, right
        c = self.target.conv
        if depthwise and not c.depthwise:
            raise self.fail(op, "the target has no depthwise convolution")
        extent = [d * (k - 1) + 1 for d, k in zip(dilations, (kh, kw))]
        if max(dilations) > c.max_dilation and max(extent) <= c.max_kernel:
            # A dilated kernel is a larger dense one with zeros between the taps: the zeros
            # add nothing to the exact int32 sum (R13), so the result is the same.
            dense = np.zeros((*weights.shape[:2], *extent), dtype=weights.dtype)
            dense[:, :, :: dilations[0], :: dilations[1]] = weights
            weights, (kh, kw), dilations = dense, extent, [1, 1]
        self.check_limits(op, "CONV", (
            ("kernel", (kh, kw), 1, c.max_kernel),
            ("stride", strides, 1, c.max_stride),
            ("dilation", dilations, 1, c.max_dilation),
            ("pad", pads4, 0, c.max_pad),
            ("input channels", (x.c // groups if not depthwise else 1,), 1, c.max_channels),
        ))
        reduction = (x.c // groups) * kh * kw
        if reduction > fixed_point.MAX_REDUCTION:
            raise self.fail(op, f"reduction length {reduction} exceeds {fixed_point.MAX_REDUCTION} (R13)")
        if depthwise:
            weight_blob = weights.reshape(out_c, kh, kw).astype(np.int8).tobytes()
        else:
            weight_blob = np.ascontiguousarray(weights.transpose(0, 2, 3, 1)).astype(np.int8).tobytes()
        self.note_codebook(weight_op, weight_blob)
        self.conv_layer(op, x, weight_blob, bias, out_c, (kh, kw), strides, dilations, pads4, groups, depthwise)

    def activation_kernel_conv(self, op: fixed.Conv2dOp) -> None:
        """Kernels that are an activation (seed 002's mul as a depthwise conv): one input
        channel per kernel, so the row-major bytes of the activation are the DW (and OHWI)
        kernel layout and the LOAD reads them from the activation's DDR address."""
        if op.bias is not None and not isinstance(op.bias.owner, fixed.ConstantOp):
            raise self.fail(op, "convolution biases must be constants")
        bias = op.bias.owner.to_numpy() if op.bias is not None else None
        x = self.nhwc(op.input, op)
        out_c, _, kh, kw = shape_of(op.weight)
        groups = op.group.value.data
        depthwise = groups == x.c and groups == out_c and groups > 1
        strides, pads, dilations = ints(op.strides), ints(op.pads), ints(op.dilations)
        c = self.target.conv
        if depthwise and not c.depthwise:
            raise self.fail(op, "the target has no depthwise convolution")
        self.check_limits(op, "CONV", (
            ("kernel", (kh, kw), 1, c.max_kernel), ("stride", strides, 1, c.max_stride),
            ("dilation", dilations, 1, c.max_dilation), ("pad", pads, 0, c.max_pad),
        ))
        weights = self.use(self.kernel_views[op.weight])
        self.conv_layer(op, x, b"", bias, out_c, (kh, kw), strides, dilations, tuple(pads), groups, depthwise,
                        weight_tensor=weights)

    def lower_fixed_gemm(self, op: fixed.GemmOp) -> None:
        b_op = op.b.owner
        if not isinstance(b_op, fixed.ConstantOp):
            raise self.fail(op, "gemm B must be a constant (the weights)")
        b = b_op.to_numpy()
        b_t = b if op.trans_b.value.data else b.T  # M x K
        bias = None
        if op.bias is not None:
            if not isinstance(op.bias.owner, fixed.ConstantOp):
                raise self.fail(op, "gemm bias must be a constant")
            bias = op.bias.owner.to_numpy()
            if bias.size != b_t.shape[0] and bias.size != 1:
                raise self.fail(op, f"gemm bias of shape {list(bias.shape)} is not one value per output column")
            bias = np.broadcast_to(bias.reshape(-1), (b_t.shape[0],))
        x = self.nhwc(op.a, op)
        out_c, k = b_t.shape
        if k > fixed_point.MAX_REDUCTION:
            raise self.fail(op, f"reduction length {k} exceeds {fixed_point.MAX_REDUCTION} (R13)")
        self.check_limits(op, "CONV", (("input channels", (k,), 1, self.target.conv.max_channels),))
        blob = np.ascontiguousarray(b_t).astype(np.int8).tobytes()
        self.note_codebook(b_op, blob)
        self.conv_layer(op, x, blob, bias, out_c, (1, 1), (1, 1), (1, 1), (0, 0, 0, 0), 1, False)

    def conv_layer(self, op, x, weight_blob, bias, out_c, kernel, strides, dilations, pads, groups, depthwise,
                   weight_tensor: Tensor | None = None) -> None:
        rescale, value, fused, relu, epilogue = self.conv_rescale(op)
        multipliers, shifts = rescale_pair(rescale)
        per_channel = len(multipliers) > 1
        if per_channel and rescale.channel_axis() != 1:
            raise self.fail(rescale, "a per-channel rescale of a convolution must run along the channel axis")
        y = self.define(value, op)
        out_hw = (y.h, y.w)
        layer = ConvLayer(
            fused_location(op, *fused), [x], y, kernel=tuple(kernel), strides=tuple(strides), dilations=tuple(dilations),
            pads=tuple(pads), groups=groups, depthwise=depthwise,
            weight_offset=self.constants.add(weight_blob) if weight_tensor is None else 0,
            bias_offset=None if bias is None else self.constants.add(np.asarray(bias, dtype="<i4").tobytes()),
            record_offset=self.constants.add(records(multipliers, shifts)), per_channel=per_channel,
            relu=relu, epilogue=epilogue, out_hw=out_hw, weight_tensor=weight_tensor,
        )
        if weight_tensor is not None:
            layer.inputs.append(weight_tensor)  # live until the conv has read it
        self.add_layer(layer)

    def broadcast_of(self, op: Operation, full: Sequence[int], other: Sequence[int]) -> str | None:
        if tuple(other) == tuple(full):
            return "none"
        if math.prod(other) == 1:
            return "scalar"
        if len(full) == 4 and len(other) == 4 and other[0] == 1 and other[1] == full[1] and other[2] == other[3] == 1:
            return "channel"
        if len(full) == 2 and len(other) in (1, 2) and other[-1] == full[-1] and math.prod(other) == full[-1] and full[0] == 1:
            return "none"
        return None

    def eltwise_operands(self, op: Operation, lhs: SSAValue, rhs: SSAValue, commutative: bool):
        ls, rs = shape_of(lhs), shape_of(rhs)
        result = shape_of(op.results[0])
        swapped = False
        if tuple(ls) != tuple(result) and commutative:
            lhs, rhs, ls, rs, swapped = rhs, lhs, rs, ls, True
        if tuple(ls) != tuple(result):
            raise self.fail(op, f"broadcasting the first operand {list(ls)} to {list(result)} has no instruction")
        broadcast = self.broadcast_of(op, ls, rs)
        if broadcast is None:
            raise self.fail(op, f"broadcasting {list(rs)} to {list(ls)} has no instruction (only per-channel or scalar)")
        return lhs, rhs, broadcast, swapped

    def eltwise_layer(self, op, name, lhs, rhs, broadcast, fields, final_rescale, extra_ops) -> None:
        if not self.target.supports_eltwise(name):
            raise self.fail(op, f"element-wise {name} is not supported (supported: {', '.join(self.target.eltwise.ops)})")
        if fixed.width_of(final_rescale.result) != 8 or len(ints(final_rescale.multiplier)) != 1:
            raise self.fail(final_rescale, "the element-wise output rescale must be one pair to int8")
        value, fused, relu, epilogue = self.clamp_after(final_rescale.result)
        self.consumed.update([final_rescale, *extra_ops, *fused])
        m, s = rescale_pair(final_rescale)
        fields = dict(fields, out_multiplier=m[0], out_shift=s[0], relu=int(relu),
                      b_broadcast={"none": 0, "channel": 1, "scalar": 2}[broadcast])
        a = self.nhwc(lhs, op)
        b = self.nhwc(rhs, op)
        y = self.define(value, op)
        self.add_layer(EltwiseLayer(fused_location(op, final_rescale, *extra_ops, *fused), [a, b], y, op=name,
                                    broadcast=broadcast, fields=fields, epilogue=epilogue))

    def lower_add_like(self, op: fixed.WideningAddOp, name: str) -> None:
        user = single_user(op.result)
        shift_op = None
        if isinstance(user, fixed.ShiftOp):
            shift_op, user = user, single_user(user.result)
            amount = shift_op.shift.value.data
            if shift_op.rounding.value.data or not 0 <= amount <= 15 or fixed.width_of(shift_op.result) != 16:
                raise self.fail(shift_op, "only a truncating right shift by 0..15 to int16 fits the ELTWISE pre-shift")
        if not isinstance(user, fixed.RescaleOp):
            raise self.fail(op, "a widening add must end in a rescale to int8 (ELTWISE writes int8)")
        lhs, rhs, broadcast, swapped = self.eltwise_operands(op, op.lhs, op.rhs, commutative=name == "add")
        params = [op.lhs_multiplier, op.lhs_shift, op.rhs_multiplier, op.rhs_shift]
        lm, ls, rm, rs = (p.value.data for p in params)
        if swapped:
            lm, ls, rm, rs = rm, rs, lm, ls
        fields = dict(a_multiplier=lm, a_shift=ls, b_multiplier=rm, b_shift=rs,
                      stage16=int(shift_op is not None),
                      pre_shift=shift_op.shift.value.data if shift_op is not None else 0)
        self.eltwise_layer(op, name, lhs, rhs, broadcast, fields, user, [shift_op] if shift_op else [])

    def lower_fixed_add(self, op: fixed.AddOp) -> None:
        self.lower_add_like(op, "add")

    def lower_fixed_sub(self, op: fixed.SubOp) -> None:
        self.lower_add_like(op, "sub")

    def lower_fixed_mul(self, op: fixed.MulOp) -> None:
        user = single_user(op.result)
        if not isinstance(user, fixed.RescaleOp) or fixed.width_of(op.result) != 16:
            raise self.fail(op, "an int16 product must be rescaled to int8 by its only user (ELTWISE writes int8)")
        lhs, rhs, broadcast, _ = self.eltwise_operands(op, op.lhs, op.rhs, commutative=True)
        self.eltwise_layer(op, "mul", lhs, rhs, broadcast, {}, user, [])

    def pool_check(self, op: Operation, kind: str) -> None:
        if not self.target.supports_pool(kind):
            raise self.fail(op, f"{kind} pooling is not supported (supported: {', '.join(self.target.pool.kinds)})")

    def window_pool(self, op: fixed.WindowPoolOp, kind: str, multiplier=0, shift=0, record_offset=None) -> None:
        self.pool_check(op, kind)
        kernel, strides, pads = ints(op.kernel_shape), ints(op.strides), ints(op.pads)
        p = self.target.pool
        self.check_limits(op, "POOL", (("kernel", kernel, 1, p.max_kernel), ("stride", strides, 1, p.max_stride),
                                       ("pad", pads, 0, p.max_pad)))
        x = self.nhwc(op.input, op)
        value, fused, relu, epilogue = self.clamp_after(op.result)
        if relu:
            epilogue = self.clamp_epilogue(fused[0], 0, self.target.data.saturation_max)
        self.consumed.update(fused)
        y = self.define(value, op)
        # the last window of a ceil-mode pool may hang over the padding; the tile pads cover it
        bottom_needed = (y.h - 1) * strides[0] - pads[0] + kernel[0] - x.h
        right_needed = (y.w - 1) * strides[1] - pads[1] + kernel[1] - x.w
        if max(bottom_needed, right_needed) > 15:
            raise self.fail(op, "the last pooling window hangs more than 15 rows over the input")
        self.add_layer(PoolLayer(fused_location(op, *fused), [x], y, kind=kind, kernel=tuple(kernel), strides=tuple(strides),
                                 pads=tuple(pads), multiplier=multiplier, shift=shift, record_offset=record_offset,
                                 epilogue=epilogue))

    def lower_fixed_max_pool(self, op: fixed.MaxPoolOp) -> None:
        if any(d != 1 for d in ints(op.dilations)):
            raise self.fail(op, "dilated max pooling has no instruction")
        self.window_pool(op, "max")

    def lower_fixed_avg_pool(self, op: fixed.AvgPoolOp) -> None:
        if fixed.width_of(op.result) != 8:
            raise self.fail(op, "average pooling must produce int8")
        m, s = ints(op.multiplier), ints(op.shift)
        if len(m) == 1:
            self.window_pool(op, "avg", m[0], s[0])
        else:
            self.window_pool(op, "avg", record_offset=self.constants.add(records(m, s)))

    def lower_fixed_global_avg_pool(self, op: fixed.GlobalAvgPoolOp) -> None:
        self.pool_check(op, "global_avg")
        rescale = single_user(op.result)
        if not isinstance(rescale, fixed.RescaleOp) or fixed.width_of(rescale.result) != 8 or len(ints(rescale.multiplier)) != 1:
            raise self.fail(op, "a global average pool must be rescaled to int8 by one pair, its only user")
        x = self.nhwc(op.input, op)
        value, fused, relu, epilogue = self.clamp_after(rescale.result)
        if relu:
            epilogue = self.clamp_epilogue(fused[0], 0, self.target.data.saturation_max)
        self.consumed.update([rescale, *fused])
        m, s = rescale_pair(rescale)
        y = self.define(value, op)
        self.add_layer(PoolLayer(fused_location(op, rescale, *fused), [x], y, kind="global_avg", kernel=(0, 0),
                                 strides=(0, 0), pads=(0, 0, 0, 0), multiplier=m[0], shift=s[0], record_offset=None,
                                 epilogue=epilogue))

    def element_layer(self, op: Operation, source: SSAValue, epilogue: tuple) -> None:
        x = self.nhwc(source, op)
        y = self.define(op.results[0], op)
        self.add_layer(ElementLayer(op.location, [x], y, epilogue=epilogue))

    def lower_fixed_table(self, op: fixed.TableOp) -> None:
        table = np.asarray(op.table.get_values(), dtype=np.int64)
        self.element_layer(op, op.input, self.table_epilogue(op, table))

    def lower_fixed_clamp(self, op: fixed.ClampOp) -> None:
        if fixed.width_of(op.input) != 8:
            raise self.fail(op, "only int8 clamps have an instruction")
        relu, epilogue = self.clamp_plan(op)
        if relu:
            epilogue = self.clamp_epilogue(op, 0, self.target.data.saturation_max)
        if epilogue is None:
            self.tensors[op.result] = self.tensor_of(op.input, op)  # the identity on int8 (R3)
            return
        self.element_layer(op, op.input, epilogue)

    def lower_fixed_rescale(self, op: fixed.RescaleOp) -> None:
        m, s = rescale_pair(op)
        if fixed.width_of(op.input) != 8 or fixed.width_of(op.result) != 8 or len(m) != 1:
            raise self.fail(op, "a standalone rescale needs an int8 input, an int8 result and one pair (it becomes a TABLE)")
        codes = np.arange(-128, 128)
        table = fixed_point.rescale(codes, m[0], s[0], 8)  # R9 on every int8 code: exact as a table
        self.element_layer(op, op.input, self.table_epilogue(op, table))

    def reshape_to(self, op: Operation, source: SSAValue) -> None:
        """Reshapes keep the row-major order of the logical tensor: a view of row-major bytes."""
        shape = shape_of(op.results[0])
        h, w, c = canonical_hwc(shape, describe_op(op))
        flat = self.row_major(self.tensor_of(source, op), op.location)
        self.tensors[op.results[0]] = self.use(Tensor(flat.storage, h, w, c, "NCHW" if len(shape) == 4 else "NHWC", len(shape)))

    def lower_fixed_flatten(self, op: fixed.FlattenOp) -> None:
        self.reshape_to(op, op.input)

    def lower_fixed_reshape(self, op: fixed.ReshapeOp) -> None:
        shape = shape_of(op.result)
        uses = list(op.result.uses)
        kernels = uses and all(isinstance(u.operation, fixed.Conv2dOp) and u.index == 1 for u in uses)
        if kernels and len(shape) == 4 and shape[1] == 1:
            # O x 1 x KH x KW kernels: the row-major bytes of the source are their DW / OHWI layout
            self.kernel_views[op.result] = self.row_major(self.tensor_of(op.input, op), op.location)
            return
        self.reshape_to(op, op.input)

    def lower_fixed_concat(self, op: fixed.ConcatOp) -> None:
        shape = shape_of(op.result)
        axis = op.axis.value.data % len(shape)
        if len(shape) != 4 or axis != 1:
            raise self.fail(op, "only channel concatenation of NCHW maps has a DMA pattern")
        parts = [self.nhwc(value, op) for value in op.inputs]
        y = self.define(op.result, op)
        self.add_layer(ConcatLayer(op.location, parts, y))

    def lower_fixed_transpose(self, op: fixed.TransposeOp) -> None:
        """A transpose is free when the bytes already lie in the result's order.

        An NHWC-stored map transposed to N x H x W x C is that map read row-major, and a
        row-major map transposed (0, 3, 1, 2) is NHWC-stored; otherwise the source is first
        copied to its other layout by DMA, and any other permutation is an error.
        """
        perm = ints(op.perm)
        in_shape, out_shape = shape_of(op.input), shape_of(op.result)
        out_h, out_w, out_c = canonical_hwc(out_shape, describe_op(op))

        def storage_order(tensor: Tensor) -> list[int]:
            axes = [0, 2, 3, 1] if len(in_shape) == 4 and tensor.layout == "NHWC" else list(range(len(in_shape)))
            return [a for a in axes if in_shape[a] != 1]

        row_major_order = [perm[i] for i in range(len(out_shape)) if out_shape[i] != 1]
        nhwc_order = [perm[i] for i in (0, 2, 3, 1) if out_shape[i] != 1] if len(out_shape) == 4 else None
        source = self.tensor_of(op.input, op)
        candidates = [lambda: source, lambda: self.row_major(source, op.location), lambda: self.nhwc(op.input, op)]
        for candidate in candidates:
            order = storage_order(candidate_tensor := candidate())
            if order == row_major_order:
                layout = "NCHW" if len(out_shape) == 4 else "NHWC"
            elif order == nhwc_order:
                layout = "NHWC"
            else:
                continue
            self.tensors[op.result] = self.use(Tensor(candidate_tensor.storage, out_h, out_w, out_c, layout, len(out_shape)))
            return
        raise self.fail(op, f"transpose {perm} of {list(in_shape)} is neither the NHWC nor the NCHW order of its input")

    # memory ---------------------------------------------------------------------------

    def allocate(self) -> int:
        """DDR addresses for every storage, first-fit over live intervals; returns the peak activation bytes."""
        end = len(self.layers)
        base = _align(len(self.constants.data), DDR_ALIGNMENT)
        placed: list[Storage] = []
        for storage in self.storages:
            if storage.pinned:
                storage.last = end
        live = [s for s in self.storages if s.size > 0]
        for storage in sorted(live, key=lambda s: (s.first, -s.size)):
            conflicts = sorted(
                (p.address, p.address + p.size) for p in placed if not (p.last < storage.first or storage.last < p.first)
            )
            address = base
            for start, stop in conflicts:
                if address + storage.size <= start:
                    break
                address = max(address, _align(stop, DDR_ALIGNMENT))
            storage.address = address
            placed.append(storage)
        for storage in self.storages:
            if storage.address < 0:
                storage.address = base  # empty
        top = max((s.address + s.size for s in placed), default=base)
        if top > self.target.memory.ddr_bytes:
            raise LoweringError(f"the program needs {top} bytes of DDR; {self.target.name} has {self.target.memory.ddr_bytes}")
        return top - base


def lower_module(module: ModuleOp, target: TargetDescription, target_name: str) -> ModuleOp:
    functions = [op for op in module.ops if isinstance(op, func.FuncOp)]
    if len(functions) != 1:
        raise LoweringError(f"lower-fixed-to-isa expects one function, found {len(functions)}")
    graph = GraphLowering(functions[0], target)
    graph.lower()
    for layer in graph.layers:
        try:
            layer.plan(target)
        except LoweringError as error:
            from xnpu.target.emit import location_names

            names = ", ".join(location_names(layer.location)) or "unnamed layer"
            raise LoweringError(f"{names}: {error}") from None
    peak = graph.allocate()
    program = Program(target)
    for layer in graph.layers:
        program.location = layer.location
        layer.emit(program)
    program.location = UnknownLoc()
    program.emit("SYNC", halt=1)

    for op in list(module.ops):
        op.detach()
        op.erase()
    body = module.body.block
    if graph.constants.data:
        body.add_op(isa.ConstantsOp(bytes(graph.constants.data)))
    for entry in sorted(graph.io, key=lambda e: e["direction"] != "input"):
        tensor = entry["tensor"]
        body.add_op(isa.IoOp(entry["name"], entry["direction"], entry["shape"], entry["dtype"], entry["scale"],
                             entry["zero_point"], tensor.address, entry["layout"]))
    for op in program.ops:
        body.add_op(op)
    module.attributes[isa.TARGET_ATTRIBUTE] = StringAttr(target_name)
    module.attributes["isa.activation_bytes"] = IntegerAttr(peak, i64)
    module.attributes["isa.layers"] = IntegerAttr(len(graph.layers), i64)
    if graph.compressed:
        from xnpu.transforms.compress_weights import COMPRESSED_REGIONS_ATTR, regions_attr

        module.attributes[COMPRESSED_REGIONS_ATTR] = regions_attr(sorted(
            (offset, size, bits, dictionary) for offset, (size, bits, dictionary) in graph.compressed.items()
        ))
    return module


@dataclass(frozen=True)
class LowerFixedToIsaPass(ModulePass):
    """fixed -> isa for one target (a shipped name or a TOML path)."""

    name = "lower-fixed-to-isa"
    target: str = "xnpu_default"

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        lower_module(op, load_target(self.target), self.target)
