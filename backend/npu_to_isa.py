"""lower-npu-to-isa: the annotated npu module becomes the `isa` program (dialects/isa.py).

Everything is decided by the passes before it (docs/npu.md, "Below npu"): the byte order of
each tensor (`npu.layout`), the tiling of each layer (`npu.tile`), the SRAM offsets of a
tile's buffers (`npu.sram`), DDR addresses (`npu.ddr`), constant offsets (`npu.constants`)
and the constant image. This pass only reads them and writes instructions: for every
layer, in program order, the LOADs of its constants, then per tile LOAD ... compute
(CONV, ELTWISE, POOL, TABLE or CLAMP, then its epilogue in place) ... STORE; a final
`SYNC halt=1`. Each instruction's location is its layer's (the ONNX nodes it came from).
A host segment (`npu.host`) becomes its description (`isa.host_segment`: token, tensors in
DDR, its region as a function) and the hand-off `SYNC halt=0, token=N` (tokens 1, 2, ... in
program order), located at the ONNX nodes of the ops it runs.

The module keeps `isa.constants` (the image npu-allocate placed) and gets one `isa.io` per program input and output
(name, shape, scale, layout and address, as the host sees them) and the instructions, with
the module attributes `isa.target`, `isa.activation_bytes` and `isa.layers`. The weight
LOADs of a layer stored as codebook ids (`npu.codebook_bits`) decode them on the way into
SRAM: each LOADs its output channels' id rows and names the layer's dictionary.
"""

from __future__ import annotations

from dataclasses import dataclass

from xdsl.context import Context
from xdsl.dialects import func
from xdsl.dialects.builtin import IntegerAttr, ModuleOp, StringAttr, UnknownLoc, i64
from xdsl.ir import Attribute, BlockArgument, Operation, SSAValue
from xdsl.passes import ModulePass

from xnpu.backend.npu_annotations import (
    LoweringError,
    ACTIVATION_BYTES,
    CODEBOOK_BITS,
    CONSTANTS,
    LAYER_OPS,
    SRAM,
    TILE,
    Epilogue,
    LoweringError,
    Stored,
    address_of,
    epilogue_of,
    get_int,
    get_ints,
    get_offsets,
    get_slots,
    only_function,
    resolve_target,
    stored,
    target_name,
    unit_relu,
)
from xnpu.backend.npu_assign_layout import argument_name
from xnpu.backend.npu_residency import concat_in_place, home_of, on_chip, source_of, spilled
from xnpu.backend.npu_tile import MAX_INSTRUCTIONS
from xnpu.backend.npu_tiling import TABLE_BYTES, bands, channel_chunks, per_position, window_of
from xnpu.dialects import fixed, isa, npu
from xnpu.dialects.shapes import ints, shape_of
from xnpu.ir.locations import fused_location, location_names
from xnpu.ir.io import describe_op
from xnpu.semantics.dtypes import CODE_DTYPES, io_dtype
from xnpu.target.codebook import row_bytes
from xnpu.target.description import TargetDescription
from xnpu.target.encoding import DMA_LAYOUTS, ELTWISE_OPS, POOL_KINDS

RAW_ROW = 32768  # a RAW DMA moves d0 rows of d1 elements, both 16-bit fields
BROADCASTS = {"none": 0, "channel": 1, "scalar": 2}




class Program:
    """The instructions emitted so far, each with the location of the layer being emitted."""

    def __init__(self) -> None:
        self.ops: list[Operation] = []
        self.location: Attribute = UnknownLoc()

    def emit(self, mnemonic: str, **fields: int) -> None:
        if len(self.ops) >= MAX_INSTRUCTIONS:
            names = ", ".join(f"'{name}'" for name in location_names(self.location)) or "a layer"
            raise LoweringError(f"the program needs more than {MAX_INSTRUCTIONS} instructions (at {names}): "
                                "a layer this large is too big for one accelerator program")
        op = isa.make_op(mnemonic, **fields)
        op.location = self.location
        self.ops.append(op)

    def map_dma(
        self, mnemonic: str, tensor: Stored, sram: int, row0: int, rows: int, c0: int = 0, cn: int | None = None,
        col0: int = 0, cols: int | None = None, step: tuple[int, int] = (1, 1), sram_row_stride: int = 0,
    ) -> None:
        """Rows row0, row0 + step[0], ... (`rows` of them), columns col0, col0 + step[1], ...
        (`cols`) and channels [c0, +cn) of an NHWC map (or an NCHW one: the DMA's NCHW layout
        transposes) <-> a padded SRAM map whose rows lie `sram_row_stride` bytes apart (0: dense)."""
        cn = tensor.c if cn is None else cn
        cols = tensor.w if cols is None else cols
        if not tensor.nhwc:  # a row-major map (the host's): every channel plane's rows, transposed
            assert step[1] == 1, "strided pixels of an NCHW map"
            row_stride = step[0] * tensor.w
            plane = tensor.h * tensor.w
            self.emit(mnemonic, layout=DMA_LAYOUTS["NCHW"], sram_addr=sram,
                      ddr_addr=tensor.address + (c0 * tensor.h + row0) * tensor.w + col0, d0=cn, d1=rows, d2=cols,
                      ddr_row_stride=0 if row_stride == cols else row_stride,
                      ddr_pixel_stride=0 if plane == rows * row_stride else plane, sram_row_stride=sram_row_stride)
            return
        pixel = tensor.pixel
        dense_pixels = c0 == 0 and cn == pixel and step[1] == 1
        dense_rows = dense_pixels and col0 == 0 and cols == tensor.w and step[0] == 1
        self.emit(
            mnemonic, layout=DMA_LAYOUTS["NHWC"], sram_addr=sram,
            ddr_addr=tensor.address + ((row0 * tensor.w + col0) * pixel + c0), d0=rows, d1=cols, d2=cn,
            ddr_row_stride=0 if dense_rows else step[0] * tensor.w * pixel,
            ddr_pixel_stride=0 if dense_pixels else step[1] * pixel, sram_row_stride=sram_row_stride,
        )

    def load_raw(self, sram: int, ddr: int, size: int, elem_log2: int = 0) -> None:
        """`size` elements of 2^elem_log2 bytes, contiguous on both sides."""
        done = 0
        while done < size:
            rows = min((size - done) // RAW_ROW, 65535)
            d0, d1 = (rows, RAW_ROW) if rows else (1, size - done)
            self.emit("LOAD", layout=DMA_LAYOUTS["RAW"], elem_log2=elem_log2, sram_addr=sram + (done << elem_log2),
                      ddr_addr=ddr + (done << elem_log2), d0=d0, d1=d1)
            done += d0 * d1

    def load_table(self, epilogue: Epilogue | None, sram: dict[str, list[int]], constants: dict[str, int]) -> None:
        """An epilogue's table, into the table part of the first constants slot (kept for the layer)."""
        if epilogue is not None and epilogue.kind == "table":
            self.load_raw(sram["table"][0], constants["table"], TABLE_BYTES)

    def epilogue(self, epilogue: Epilogue | None, at: int, rows: int, w: int, c: int, sram: dict[str, list[int]],
                 source: int | None = None) -> None:
        """The clamp or table after a unit's result, in place at `at` (or from `source` to `at`)."""
        if epilogue is None:
            return
        source = at if source is None else source
        if epilogue.kind == "clamp":
            self.emit("CLAMP", in_addr=source, out_addr=at, h=rows, w=w, c=c, min=epilogue.low, max=epilogue.high)
        else:
            self.emit("TABLE", in_addr=source, out_addr=at, table_addr=sram["table"][0], h=rows, w=w, c=c)


class Map:
    """A tensor a layer reads or writes: where a band of its rows lies in SRAM, whether the
    DMA must move it, and whether its producer also stores it to DDR (`npu.spill`)."""

    def __init__(self, value: SSAValue, target: TargetDescription):
        self.stored = stored(value)
        self.on_chip = on_chip(value)
        self.home = home_of(value) if self.on_chip else 0
        self.pitch = self.stored.w * target.align(self.stored.c)  # bytes of one padded row
        self.spill = self.on_chip and spilled(source_of(value).owner)

    def row(self, row: int) -> int:
        return self.home + row * self.pitch


class Slots:
    """A layer's buffer slots (npu.sram); tile k uses slot k % slots of a streamed buffer."""

    def __init__(self, op: Operation):
        self.op = op
        self.slots = get_slots(op, SRAM, "npu-plan-sram")

    def __getitem__(self, name: str) -> list[int]:
        if name not in self.slots:
            raise LoweringError(f"{describe_op(self.op)}: its npu.sram has no '{name}' buffer; run npu-plan-sram first")
        return self.slots[name]

    def __contains__(self, name: str) -> bool:
        return name in self.slots

    def at(self, name: str, k: int) -> int:
        slots = self[name]
        return slots[k % len(slots)]


class Emitter:
    def __init__(self, target: TargetDescription):
        self.target = target
        self.program = Program()

    def layer(self, op: Operation) -> None:
        self.program.location = op.location
        tile = get_ints(op, TILE, "npu-tile")
        sram = Slots(op)
        constants = get_offsets(op, CONSTANTS, "npu-allocate") if CONSTANTS in op.attributes else {}
        if isinstance(op, npu.ConvOp):
            self.conv(op, tile, sram, constants)
        elif isinstance(op, npu.EltwiseOp):
            self.eltwise(op, tile, sram, constants)
        elif isinstance(op, npu.PoolOp):
            self.pool(op, tile, sram, constants)
        elif isinstance(op, npu.TableOp | npu.ClampOp):
            self.element(op, tile, sram, constants)
        elif isinstance(op, npu.RelayoutOp):
            self.relayout(op, tile, sram)
        elif isinstance(op, npu.InterleaveOp):
            self.interleave(op, tile, sram)
        elif isinstance(op, npu.PadOp):
            self.pad(op, tile, sram)
        else:
            self.concat(op, tile, sram)

    def result(self, y: Map, at: int, row0: int, band: int, c0: int, cn: int, col0: int = 0, width: int | None = None) -> None:
        """A tile of a unit's result: stored from its tile buffer, or, on chip, stored from its
        home only where the producer also spills it."""
        if not y.on_chip:
            self.program.map_dma("STORE", y.stored, at, row0, band, c0, cn, col0, width)
        elif y.spill:
            self.program.map_dma("STORE", y.stored, y.row(row0), row0, band)

    def conv(self, op: npu.ConvOp, tile, sram: Slots, constants: dict[str, int]) -> None:
        p = self.program
        g = window_of(op)
        x, y = Map(op.input, self.target), Map(op.result, self.target)
        rows, cols, chunk = tile
        kh, kw = g.kernel
        epilogue = epilogue_of(op, self.target)
        per_channel = len(ints(op.multiplier)) > 1
        weights = constants["weights"] if "weights" in constants else address_of(op.weight)
        if g.depthwise:
            chunks = [(c0, cn, c0, cn) for c0, cn in channel_chunks(y.stored.c, chunk)]
        else:
            group_in, group_out = x.stored.c // g.groups, y.stored.c // g.groups
            chunks = [(group * group_in, group_in, group * group_out + o0, on)
                      for group in range(g.groups) for o0, on in channel_chunks(group_out, chunk)]
        bits = get_int(op, CODEBOOK_BITS, "npu-allocate") if CODEBOOK_BITS in op.attributes else 0
        decode = {"codebook_bits": bits, "dictionary_addr": constants["dictionary"]} if bits else {}
        p.load_table(epilogue, sram, constants)
        chunked = len(chunks) > 1
        k = 0
        for j, (ic0, icn, oc0, ocn) in enumerate(chunks):
            kernel_elems = kh * kw * (1 if g.depthwise else icn)
            w_ddr = weights + oc0 * (row_bytes(kernel_elems, bits) if bits else kernel_elems)  # a row per output channel
            w_at, r_at = sram.at("weights", j), sram.at("records", j)
            b_at = sram.at("bias", j) if op.bias is not None else 0
            if g.depthwise:
                p.emit("LOAD", layout=DMA_LAYOUTS["DW"], sram_addr=w_at, ddr_addr=w_ddr, d0=ocn, d1=kh, d2=kw, **decode)
            else:
                p.emit("LOAD", layout=DMA_LAYOUTS["OHWI"], sram_addr=w_at, ddr_addr=w_ddr, d0=ocn, d1=kh, d2=kw, d3=icn,
                       **decode)
            if op.bias is not None:
                p.load_raw(b_at, constants["bias"] + 4 * oc0, ocn, elem_log2=2)
            if per_channel:
                p.load_raw(r_at, constants["records"] + 4 * oc0, 4 * ocn)
            else:
                p.load_raw(r_at, constants["records"], 4)
            for (row0, band), (col0, width) in ((r, c) for r in bands(g.y[0], rows) for c in bands(g.y[1], cols)):
                rows_read, cols_read = g.input_tile(row0, band, col0, width)
                first, count, pad_top, pad_bottom = rows_read
                left, span, pad_left, pad_right = cols_read
                if x.on_chip:  # whole rows of the map where it is (columns the windows skip included)
                    in_at, left, span = x.row(first), 0, x.stored.w
                else:
                    in_at = sram.at("input", k)
                    p.map_dma("LOAD", x.stored, in_at, first, count, ic0, icn, left, span)
                # on chip, a chunk of channels goes into its place among the map's (out_pixel_stride)
                out_at = y.row(row0) + oc0 if y.on_chip else sram.at("output", k)
                pixel_stride = self.target.align(y.stored.c) if y.on_chip and chunked else 0
                p.emit(
                    "CONV", depthwise=int(g.depthwise), relu=int(unit_relu(op)), per_channel=int(per_channel),
                    bias=int(op.bias is not None), in_addr=in_at, weight_addr=w_at,
                    bias_addr=b_at if op.bias is not None else 0, rescale_addr=r_at,
                    out_addr=out_at, in_h=count, in_w=span, in_c=icn, out_c=ocn, kernel_h=kh, kernel_w=kw,
                    stride_h=g.strides[0], stride_w=g.strides[1], dilation_h=g.dilations[0], dilation_w=g.dilations[1],
                    pad_top=pad_top, pad_left=pad_left, pad_bottom=pad_bottom, pad_right=pad_right,
                    out_pixel_stride=pixel_stride,
                )
                if not (y.on_chip and chunked):
                    p.epilogue(epilogue, out_at, band, width, ocn, sram)
                    self.result(y, out_at, row0, band, oc0, ocn, col0, width)
                k += 1
        if y.on_chip and chunked:  # the epilogue (dense maps only) and any spill once every chunk is in
            for row0, band in bands(g.y[0], rows):
                p.epilogue(epilogue, y.row(row0), band, y.stored.w, y.stored.c, sram)
                self.result(y, y.row(row0), row0, band, 0, y.stored.c)

    def eltwise(self, op: npu.EltwiseOp, tile, sram: Slots, constants: dict[str, int]) -> None:
        p = self.program
        a, b, y = Map(op.lhs, self.target), Map(op.rhs, self.target), Map(op.result, self.target)
        rows, _, chunk = tile
        broadcast = op.broadcast()
        epilogue = epilogue_of(op, self.target)
        fields = dict(op=ELTWISE_OPS[op.kind], relu=int(unit_relu(op)), b_broadcast=BROADCASTS[broadcast],
                      out_multiplier=op.multiplier.value.data, out_shift=op.shift.value.data)
        if op.kind != "mul":
            lm, ls, rm, rs = op.input_rescales()
            fields.update(a_multiplier=lm, a_shift=ls, b_multiplier=rm, b_shift=rs, stage16=int(op.pre_shift is not None),
                          pre_shift=0 if op.pre_shift is None else op.pre_shift.value.data)
        p.load_table(epilogue, sram, constants)
        k = 0
        for j, (c0, cn) in enumerate(channel_chunks(y.stored.c, chunk)):
            b_at = b.home
            if broadcast != "none" and not b.on_chip:
                b_at = sram.at("b", j)
                if broadcast == "channel":
                    p.map_dma("LOAD", b.stored, b_at, 0, 1, c0, cn)
                else:
                    p.load_raw(b_at, b.stored.address, 1)
            for row0, band in bands(y.stored.h, rows):
                if a.on_chip:
                    a_at = a.row(row0)
                else:
                    a_at = sram.at("a", k)
                    p.map_dma("LOAD", a.stored, a_at, row0, band, c0, cn)
                if broadcast == "none":
                    if b.on_chip:
                        b_at = b.row(row0)
                    else:
                        b_at = sram.at("b", k)
                        p.map_dma("LOAD", b.stored, b_at, row0, band, c0, cn)
                out_at = y.row(row0) if y.on_chip else a_at if not a.on_chip else sram.at("output", k)
                p.emit("ELTWISE", a_addr=a_at, b_addr=b_at, out_addr=out_at, h=band, w=y.stored.w, c=cn, **fields)
                p.epilogue(epilogue, out_at, band, y.stored.w, cn, sram)
                self.result(y, out_at, row0, band, c0, cn)
                k += 1

    def pool(self, op: npu.PoolOp, tile, sram: Slots, constants: dict[str, int]) -> None:
        p = self.program
        g = window_of(op)
        x, y = Map(op.input, self.target), Map(op.result, self.target)
        rows, cols, chunk = tile
        glob = op.pool_kind == "global_avg"
        positions = per_position(op)
        epilogue = epilogue_of(op, self.target)
        p.load_table(epilogue, sram, constants)
        k = 0
        for c0, cn in channel_chunks(y.stored.c, chunk):
            for (row0, band), (col0, width) in ((r, c) for r in bands(y.stored.h, rows) for c in bands(y.stored.w, cols)):
                rows_read, cols_read = g.input_tile(row0, band, col0, width)
                first, count, pad_top, pad_bottom = rows_read
                left, span, pad_left, pad_right = cols_read
                if x.on_chip:  # whole rows of the map where it is
                    in_at, left, span = x.row(first), 0, x.stored.w
                else:
                    in_at = sram.at("input", k)
                    p.map_dma("LOAD", x.stored, in_at, first, count, c0, cn, left, span)
                out_at = y.row(row0) if y.on_chip else sram.at("output", k)
                fields = dict(kind=POOL_KINDS[op.pool_kind], in_addr=in_at, out_addr=out_at, in_h=count,
                              in_w=span, c=cn, out_h=band, out_w=width)
                if positions:
                    records = sram.at("records", k)
                    for r in range(band):  # the records of this tile, row by row of the OH x OW grid
                        p.load_raw(records + 4 * r * width, constants["records"] + 4 * ((row0 + r) * y.stored.w + col0),
                                   4 * width)
                    fields.update(per_position=1, rescale_addr=records)
                elif op.pool_kind != "max":
                    fields.update(out_multiplier=ints(op.multiplier)[0], out_shift=ints(op.shift)[0])
                if not glob:
                    fields.update(kernel_h=g.kernel[0], kernel_w=g.kernel[1], stride_h=g.strides[0], stride_w=g.strides[1],
                                  pad_top=pad_top, pad_left=pad_left, pad_bottom=pad_bottom, pad_right=pad_right)
                p.emit("POOL", **fields)
                p.epilogue(epilogue, out_at, band, width, cn, sram)
                self.result(y, out_at, row0, band, c0, cn, col0, width)
                k += 1

    def element(self, op: npu.TableOp | npu.ClampOp, tile, sram: Slots, constants: dict[str, int]) -> None:
        """A TABLE or CLAMP over a whole map: in place in a streamed tile, else from the map on chip."""
        p = self.program
        x, y = Map(op.input, self.target), Map(op.result, self.target)
        rows, _, chunk = tile
        epilogue = epilogue_of(op, self.target)
        p.load_table(epilogue, sram, constants)
        k = 0
        for c0, cn in channel_chunks(y.stored.c, chunk):
            for row0, band in bands(y.stored.h, rows):
                if x.on_chip:
                    in_at = x.row(row0)
                else:
                    in_at = sram.at("data", k)
                    p.map_dma("LOAD", x.stored, in_at, row0, band, c0, cn)
                out_at = y.row(row0) if y.on_chip else in_at if not x.on_chip else sram.at("output", k)
                p.epilogue(epilogue, out_at, band, y.stored.w, cn, sram, source=in_at)
                self.result(y, out_at, row0, band, c0, cn)
                k += 1

    def relayout(self, op: npu.RelayoutOp, tile, sram: Slots) -> None:
        """Copy a map between NHWC and NCHW order: the whole map at once when it fits (the DMA's
        NCHW layout reorders it), else one channel plane at a time, a band of rows at a time,
        the pixel stride picking one channel out of the NHWC side. A map on chip is stored from
        where it is."""
        p = self.program
        x, y = Map(op.input, self.target), stored(op.result)
        rows, _, chunk = tile
        h, w, c = x.stored.h, x.stored.w, x.stored.c
        if (rows, chunk) == (h, c):
            staging = x.home if x.on_chip else sram["staging"][0]
            for mnemonic, tensor in (("LOAD", x.stored), ("STORE", y)):
                if mnemonic == "LOAD" and x.on_chip:
                    continue
                if tensor.layout == "NCHW":
                    p.emit(mnemonic, layout=DMA_LAYOUTS["NCHW"], sram_addr=staging, ddr_addr=tensor.address,
                           d0=c, d1=h, d2=w)
                else:
                    p.map_dma(mnemonic, tensor, staging, 0, h)
            return
        staging = sram["staging"][0]
        for channel in range(c):
            for row0, band in bands(h, rows):
                for mnemonic, tensor in (("LOAD", x.stored), ("STORE", y)):
                    if tensor.layout == "NCHW":
                        p.emit(mnemonic, layout=DMA_LAYOUTS["NHWC"], sram_addr=staging,
                               ddr_addr=tensor.address + (channel * h + row0) * w, d0=band, d1=w, d2=1)
                    else:
                        p.map_dma(mnemonic, tensor, staging, row0, band, channel, 1)

    def concat(self, op: npu.ConcatOp, tile, sram: Slots) -> None:
        """Each part stored at its channel offset of the NHWC result (pixel stride = all
        channels), from its home when it is on chip, else through the staging buffer. A concat
        stored in place copies nothing: its parts' producers stored them there."""
        y = stored(op.result)
        in_place = concat_in_place(op)
        offset = 0
        for value, rows in zip(op.inputs, tile):
            part = Map(value, self.target)
            if part.on_chip and not (in_place and part.spill):
                self.program.map_dma("STORE", y, part.home, 0, y.h, offset, part.stored.c)
            elif not in_place:
                for row0, band in bands(y.h, rows):
                    self.program.map_dma("LOAD", part.stored, sram["staging"][0], row0, band)
                    self.program.map_dma("STORE", y, sram["staging"][0], row0, band, offset, part.stored.c)
            offset += part.stored.c

    def interleave(self, op: npu.InterleaveOp, tile, sram: Slots) -> None:
        """Each phase's window, a band of its rows at a time, stored every f_h-th row and f_w-th
        pixel of the result from (a, b). Phases reading the same window (a nearest upsampling's
        copies of one map) share its LOAD: one LOAD and f_h * f_w STOREs per band. A phase on
        chip is stored straight from its home (its rows `sram_row_stride` apart)."""
        p = self.program
        y = stored(op.result)
        rows, _, chunk = tile
        step = tuple(ints(op.factors))
        readers: dict[tuple, list] = {}
        for window in op.phase_windows():
            readers.setdefault((window.source, window.top, window.left, window.cols), []).append(window)
        for c0, cn in channel_chunks(y.c, chunk):
            for (source, top, left, cols), windows in readers.items():
                x = Map(source, self.target)
                for row0, band in bands(max(w.rows for w in windows), rows):
                    if x.on_chip:
                        at, pitch = x.row(top + row0) + left * self.target.align(x.stored.c), x.pitch
                    else:
                        at, pitch = sram["staging"][0], 0
                        p.map_dma("LOAD", x.stored, at, top + row0, band, c0, cn, left, cols)
                    for w in windows:
                        count = min(band, w.rows - row0)
                        if count > 0:
                            p.map_dma("STORE", y, at, w.a + step[0] * row0, count, c0, cn, w.b, cols, step,
                                      sram_row_stride=pitch if pitch != cols * self.target.align(cn) else 0)

    def pad(self, op: npu.PadOp, tile, sram: Slots) -> None:
        """A band of rows at a time: the band stored inside the result, its first and last
        columns stored once per edge column, and the first and last rows of the map once per
        edge row (each with its edge columns). Edge copies read the staged band (or the map on
        chip) with its row pitch, one column or one row of it."""
        p = self.program
        x, y = Map(op.input, self.target), stored(op.result)
        top, left, bottom, right = ints(op.pads)
        rows, _, chunk = tile
        for c0, cn in channel_chunks(x.stored.c, chunk):
            pitch = x.stored.w * self.target.align(cn)
            for row0, band in bands(x.stored.h, rows):
                if x.on_chip:
                    staging = x.row(row0)
                else:
                    staging = sram["staging"][0]
                    p.map_dma("LOAD", x.stored, staging, row0, band, c0, cn)
                blocks = [(0, band, top + row0)]  # (first staged row, rows, result row)
                if row0 == 0:
                    blocks += [(0, 1, r) for r in range(top)]
                if row0 + band == x.stored.h:
                    blocks += [(band - 1, 1, top + x.stored.h + r) for r in range(bottom)]
                for first, count, at in blocks:
                    sram_at = staging + first * pitch
                    p.map_dma("STORE", y, sram_at, at, count, c0, cn, left, x.stored.w, sram_row_stride=pitch)
                    for col in range(left):
                        p.map_dma("STORE", y, sram_at, at, count, c0, cn, col, 1, sram_row_stride=pitch)
                    last = sram_at + (x.stored.w - 1) * self.target.align(cn)
                    for col in range(left + x.stored.w, left + x.stored.w + right):
                        p.map_dma("STORE", y, last, at, count, c0, cn, col, 1, sram_row_stride=pitch)


def _io_layout(shape) -> str:
    return "NCHW" if len(shape) == 4 else "RAW"


def _dtype(value: SSAValue) -> str:
    return io_dtype(value.type.get_element_type())  # type: ignore[attr-defined]


def _scale_where_converted(value: SSAValue) -> float:
    """The scale of an int8 value where a host segment converts it (its dequantize, or the
    quantize or rescale that made it); 1 where it stays codes (a fixed op reads them)."""
    candidates = [use.operation for use in value.uses if isinstance(use.operation, fixed.DequantizeOp)]
    if isinstance(value.owner, Operation):
        candidates.append(value.owner)
    for op in candidates:
        scales = fixed.scale_values(op.properties.get("scale"))
        if scales is not None and len(scales) == 1:
            return float(scales[0])
    return 1.0


def host_segment(op: npu.HostOp, token: int) -> isa.HostSegmentOp:
    """The isa description of a host segment: its tensors in DDR and its region as a function."""
    body = op.body.clone()
    yielded = body.block.last_op
    assert isinstance(yielded, npu.HostYieldOp)
    tensors = []
    for index, (value, argument) in enumerate(zip(op.inputs, body.block.args)):
        shape = shape_of(value)
        if isinstance(value, BlockArgument):
            name = argument_name(op.parent_op(), value.index, "input")  # a program input, read as it is
        else:
            name = ", ".join(location_names(value.owner.location)) or f"input{index}"
        dtype = _dtype(value)
        scale = _scale_where_converted(argument) if dtype in CODE_DTYPES else 1.0
        tensors.append(isa.IoOp(name, "input", shape, dtype, scale, 0, address_of(value), _io_layout(shape)))
    for index, (value, inner) in enumerate(zip(op.outputs, yielded.operands)):
        shape = shape_of(value)
        name = ", ".join(location_names(inner.owner.location)) or f"output{index}"
        dtype = _dtype(value)
        scale = _scale_where_converted(inner) if dtype in CODE_DTYPES else 1.0
        tensors.append(isa.IoOp(name, "output", shape, dtype, scale, 0, address_of(value), _io_layout(shape)))
    returned = func.ReturnOp(*yielded.operands)
    returned.location = yielded.location
    body.block.insert_op_before(returned, yielded)
    yielded.detach()
    yielded.erase()
    function = func.FuncOp(f"host_segment_{token}", ([v.type for v in op.inputs], [v.type for v in op.outputs]), body)
    return isa.HostSegmentOp(token, tensors, function)


def io_ops(function: func.FuncOp) -> list[isa.IoOp]:
    """The program's inputs (as quantized) and outputs (as dequantized), as the host sees them."""
    entries = []
    for op in function.body.block.ops:
        if isinstance(op, fixed.QuantizeOp):
            shape = shape_of(op.result)
            name = argument_name(function, op.input.index, "input")  # type: ignore[attr-defined]
            entries.append(isa.IoOp(name, "input", shape, "int8", op.scale.value.data, 0, address_of(op.result),
                                    "NCHW" if len(shape) == 4 else "RAW"))
    for argument in function.body.block.args:  # read as they are by host segments
        if any(isinstance(use.operation, npu.HostOp) for use in argument.uses):
            shape = shape_of(argument)
            entries.append(isa.IoOp(argument_name(function, argument.index, "input"), "input", shape, _dtype(argument),
                                    1.0, 0, address_of(argument), _io_layout(shape)))
    returned = function.body.block.last_op
    assert isinstance(returned, func.ReturnOp)
    for index, value in enumerate(returned.operands):
        name = argument_name(function, index, "output", results=True)
        if isinstance(value.owner, npu.HostOp):  # a host segment's result (a value: float32, int64, ...), as it is
            shape = shape_of(value)
            dtype = _dtype(value)
            scale = _scale_where_converted(value.owner.yielded().operands[value.index]) if dtype in CODE_DTYPES else 1.0
            entries.append(isa.IoOp(name, "output", shape, dtype, scale, 0, address_of(value), _io_layout(shape)))
            continue
        dequantize = value.owner
        assert isinstance(dequantize, fixed.DequantizeOp)
        shape = shape_of(dequantize.input)
        entries.append(isa.IoOp(name, "output", shape, "int8", float(dequantize.scales()[0]), 0,
                                address_of(dequantize.input), _io_layout(shape)))
    return entries


def lower_module(module: ModuleOp, target: TargetDescription) -> None:
    function = only_function(module, LowerNpuToIsaPass.name)
    emitter = Emitter(target)
    count = 0
    tokens = 0
    for op in function.body.block.ops:
        if isinstance(op, LAYER_OPS):
            emitter.layer(op)
            count += 1
        elif isinstance(op, npu.HostOp):  # the hand-off: the segment's description, then its SYNC
            tokens += 1
            emitter.program.ops.append(host_segment(op, tokens))
            emitter.program.location = fused_location(*op.placed_ops())
            emitter.program.emit("SYNC", halt=0, token=tokens)
    emitter.program.location = UnknownLoc()
    emitter.program.emit("SYNC", halt=1)
    io = io_ops(function)
    peak = get_int(module, ACTIVATION_BYTES, "npu-allocate")
    images = [op for op in module.ops if isinstance(op, isa.ConstantsOp)]
    name = target_name(module)

    for op in list(module.ops):
        if op not in images:
            op.detach()
            op.erase()
    for key in [key for key in module.attributes if key.startswith("npu.")]:
        del module.attributes[key]
    body = module.body.block
    body.add_ops([*io, *emitter.program.ops])  # after the constant image npu-allocate placed
    module.attributes[isa.TARGET_ATTRIBUTE] = StringAttr(name)
    module.attributes["isa.activation_bytes"] = IntegerAttr(peak, i64)
    module.attributes["isa.layers"] = IntegerAttr(count, i64)


@dataclass(frozen=True)
class LowerNpuToIsaPass(ModulePass):
    """Emit the isa program (constants, io table, LOAD/compute/STORE per tile, SYNC) of an annotated npu module."""

    name = "lower-npu-to-isa"
    target: str | None = None  # default: the module's npu.target

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        lower_module(op, resolve_target(op, self.target, self.name))
