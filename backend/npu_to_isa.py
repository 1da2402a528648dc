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
the module attributes `isa.target`, `isa.activation_bytes`, `isa.layers` and, for
compressed weights, `isa.compressed_weights`.
"""

from __future__ import annotations

from dataclasses import dataclass

from xdsl.context import Context
from xdsl.dialects import func
from xdsl.dialects.builtin import IntegerAttr, ModuleOp, StringAttr, UnknownLoc, i64
from xdsl.ir import Attribute, Operation, SSAValue
from xdsl.passes import ModulePass

from xnpu.backend.npu_annotations import (
    ACTIVATION_BYTES,
    COMPRESSED,
    CONSTANTS,
    LAYER_OPS,
    SRAM,
    TILE,
    Epilogue,
    Stored,
    address_of,
    epilogue_of,
    get_int,
    get_ints,
    get_offsets,
    only_function,
    resolve_target,
    stored,
    target_name,
    unit_relu,
)
from xnpu.backend.npu_assign_layout import argument_name
from xnpu.backend.npu_tiling import TABLE_BYTES, bands, channel_chunks, per_position, window_of
from xnpu.dialects import fixed, isa, npu
from xnpu.dialects.shapes import ints, shape_of
from xnpu.ir.locations import fused_location, location_names
from xnpu.semantics.dtypes import numpy_dtype
from xnpu.target.description import TargetDescription
from xnpu.target.encoding import DMA_LAYOUTS, ELTWISE_OPS, POOL_KINDS
from xnpu.transforms.compress_weights import COMPRESSED_REGIONS_ATTR

RAW_ROW = 32768  # a RAW DMA moves d0 rows of d1 elements, both 16-bit fields
BROADCASTS = {"none": 0, "channel": 1, "scalar": 2}


class Program:
    """The instructions emitted so far, each with the location of the layer being emitted."""

    def __init__(self) -> None:
        self.ops: list[Operation] = []
        self.location: Attribute = UnknownLoc()

    def emit(self, mnemonic: str, **fields: int) -> None:
        op = isa.make_op(mnemonic, **fields)
        op.location = self.location
        self.ops.append(op)

    def map_dma(
        self, mnemonic: str, tensor: Stored, sram: int, row0: int, rows: int, c0: int = 0, cn: int | None = None,
        col0: int = 0, cols: int | None = None, step: tuple[int, int] = (1, 1), sram_row_stride: int = 0,
    ) -> None:
        """Rows row0, row0 + step[0], ... (`rows` of them), columns col0, col0 + step[1], ...
        (`cols`) and channels [c0, +cn) of an NHWC map <-> a padded SRAM map whose rows lie
        `sram_row_stride` bytes apart (0: dense)."""
        cn = tensor.c if cn is None else cn
        cols = tensor.w if cols is None else cols
        dense_pixels = c0 == 0 and cn == tensor.c and step[1] == 1
        dense_rows = dense_pixels and col0 == 0 and cols == tensor.w and step[0] == 1
        self.emit(
            mnemonic, layout=DMA_LAYOUTS["NHWC"], sram_addr=sram,
            ddr_addr=tensor.address + ((row0 * tensor.w + col0) * tensor.c + c0), d0=rows, d1=cols, d2=cn,
            ddr_row_stride=0 if dense_rows else step[0] * tensor.w * tensor.c,
            ddr_pixel_stride=0 if dense_pixels else step[1] * tensor.c, sram_row_stride=sram_row_stride,
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

    def load_epilogue(self, epilogue: Epilogue | None, sram: dict[str, int], constants: dict[str, int]) -> None:
        if epilogue is not None and epilogue.kind == "table":
            self.load_raw(sram["table"], constants["table"], TABLE_BYTES)

    def epilogue(self, epilogue: Epilogue | None, at: int, rows: int, w: int, c: int, sram: dict[str, int]) -> None:
        """The clamp or table after a unit's result, in place."""
        if epilogue is None:
            return
        if epilogue.kind == "clamp":
            self.emit("CLAMP", in_addr=at, out_addr=at, h=rows, w=w, c=c, min=epilogue.low, max=epilogue.high)
        else:
            self.emit("TABLE", in_addr=at, out_addr=at, table_addr=sram["table"], h=rows, w=w, c=c)


class Emitter:
    def __init__(self, target: TargetDescription):
        self.target = target
        self.program = Program()

    def layer(self, op: Operation) -> None:
        self.program.location = op.location
        tile = get_ints(op, TILE, "npu-tile")
        sram = get_offsets(op, SRAM, "npu-allocate")
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
            self.relayout(op, tile, sram["staging"])
        elif isinstance(op, npu.InterleaveOp):
            self.interleave(op, tile, sram["staging"])
        elif isinstance(op, npu.PadOp):
            self.pad(op, tile, sram["staging"])
        else:
            self.concat(op, tile, sram["staging"])

    def conv(self, op: npu.ConvOp, tile, sram: dict[str, int], constants: dict[str, int]) -> None:
        p = self.program
        g = window_of(op)
        x, y = stored(op.input), stored(op.result)
        rows, cols, chunk = tile
        kh, kw = g.kernel
        epilogue = epilogue_of(op, self.target)
        per_channel = len(ints(op.multiplier)) > 1
        weights = constants["weights"] if "weights" in constants else address_of(op.weight)
        if g.depthwise:
            chunks = [(c0, cn, c0, cn) for c0, cn in channel_chunks(y.c, chunk)]
        else:
            group_in, group_out = x.c // g.groups, y.c // g.groups
            chunks = [(group * group_in, group_in, group * group_out + o0, on)
                      for group in range(g.groups) for o0, on in channel_chunks(group_out, chunk)]
        for ic0, icn, oc0, ocn in chunks:
            kernel_elems = kh * kw * (1 if g.depthwise else icn)
            if g.depthwise:
                p.emit("LOAD", layout=DMA_LAYOUTS["DW"], sram_addr=sram["weights"],
                       ddr_addr=weights + oc0 * kernel_elems, d0=ocn, d1=kh, d2=kw)
            else:
                p.emit("LOAD", layout=DMA_LAYOUTS["OHWI"], sram_addr=sram["weights"],
                       ddr_addr=weights + oc0 * kernel_elems, d0=ocn, d1=kh, d2=kw, d3=icn)
            if op.bias is not None:
                p.load_raw(sram["bias"], constants["bias"] + 4 * oc0, ocn, elem_log2=2)
            if per_channel:
                p.load_raw(sram["records"], constants["records"] + 4 * oc0, 4 * ocn)
            else:
                p.load_raw(sram["records"], constants["records"], 4)
            p.load_epilogue(epilogue, sram, constants)
            for (row0, band), (col0, width) in ((r, c) for r in bands(g.y[0], rows) for c in bands(g.y[1], cols)):
                rows_read, cols_read = g.input_tile(row0, band, col0, width)
                first, count, pad_top, pad_bottom = rows_read
                left, span, pad_left, pad_right = cols_read
                p.map_dma("LOAD", x, sram["input"], first, count, ic0, icn, left, span)
                p.emit(
                    "CONV", depthwise=int(g.depthwise), relu=int(unit_relu(op)), per_channel=int(per_channel),
                    bias=int(op.bias is not None), in_addr=sram["input"], weight_addr=sram["weights"],
                    bias_addr=sram["bias"] if op.bias is not None else 0, rescale_addr=sram["records"],
                    out_addr=sram["output"], in_h=count, in_w=span, in_c=icn, out_c=ocn, kernel_h=kh, kernel_w=kw,
                    stride_h=g.strides[0], stride_w=g.strides[1], dilation_h=g.dilations[0], dilation_w=g.dilations[1],
                    pad_top=pad_top, pad_left=pad_left, pad_bottom=pad_bottom, pad_right=pad_right,
                )
                p.epilogue(epilogue, sram["output"], band, width, ocn, sram)
                p.map_dma("STORE", y, sram["output"], row0, band, oc0, ocn, col0, width)

    def eltwise(self, op: npu.EltwiseOp, tile, sram: dict[str, int], constants: dict[str, int]) -> None:
        p = self.program
        a, b, y = stored(op.lhs), stored(op.rhs), stored(op.result)
        rows, _, chunk = tile
        broadcast = op.broadcast()
        epilogue = epilogue_of(op, self.target)
        fields = dict(op=ELTWISE_OPS[op.kind], relu=int(unit_relu(op)), b_broadcast=BROADCASTS[broadcast],
                      out_multiplier=op.multiplier.value.data, out_shift=op.shift.value.data)
        if op.kind != "mul":
            lm, ls, rm, rs = op.input_rescales()
            fields.update(a_multiplier=lm, a_shift=ls, b_multiplier=rm, b_shift=rs, stage16=int(op.pre_shift is not None),
                          pre_shift=0 if op.pre_shift is None else op.pre_shift.value.data)
        for c0, cn in channel_chunks(y.c, chunk):
            p.load_epilogue(epilogue, sram, constants)
            if broadcast == "channel":
                p.map_dma("LOAD", b, sram["b"], 0, 1, c0, cn)
            elif broadcast == "scalar":
                p.load_raw(sram["b"], b.address, 1)
            for row0, band in bands(y.h, rows):
                p.map_dma("LOAD", a, sram["a"], row0, band, c0, cn)
                if broadcast == "none":
                    p.map_dma("LOAD", b, sram["b"], row0, band, c0, cn)
                p.emit("ELTWISE", a_addr=sram["a"], b_addr=sram["b"], out_addr=sram["a"], h=band, w=y.w, c=cn, **fields)
                p.epilogue(epilogue, sram["a"], band, y.w, cn, sram)
                p.map_dma("STORE", y, sram["a"], row0, band, c0, cn)

    def pool(self, op: npu.PoolOp, tile, sram: dict[str, int], constants: dict[str, int]) -> None:
        p = self.program
        g = window_of(op)
        x, y = stored(op.input), stored(op.result)
        rows, cols, chunk = tile
        glob = op.pool_kind == "global_avg"
        positions = per_position(op)
        epilogue = epilogue_of(op, self.target)
        for c0, cn in channel_chunks(y.c, chunk):
            p.load_epilogue(epilogue, sram, constants)
            for (row0, band), (col0, width) in ((r, c) for r in bands(y.h, rows) for c in bands(y.w, cols)):
                rows_read, cols_read = g.input_tile(row0, band, col0, width)
                first, count, pad_top, pad_bottom = rows_read
                left, span, pad_left, pad_right = cols_read
                p.map_dma("LOAD", x, sram["input"], first, count, c0, cn, left, span)
                if positions:
                    for r in range(band):  # the records of this tile, row by row of the OH x OW grid
                        p.load_raw(sram["records"] + 4 * r * width, constants["records"] + 4 * ((row0 + r) * y.w + col0),
                                   4 * width)
                fields = dict(kind=POOL_KINDS[op.pool_kind], in_addr=sram["input"], out_addr=sram["output"], in_h=count,
                              in_w=span, c=cn, out_h=band, out_w=width)
                if not glob:
                    fields.update(kernel_h=g.kernel[0], kernel_w=g.kernel[1], stride_h=g.strides[0], stride_w=g.strides[1],
                                  pad_top=pad_top, pad_left=pad_left, pad_bottom=pad_bottom, pad_right=pad_right)
                if positions:
                    fields.update(per_position=1, rescale_addr=sram["records"])
                elif op.pool_kind != "max":
                    fields.update(out_multiplier=ints(op.multiplier)[0], out_shift=ints(op.shift)[0])
                p.emit("POOL", **fields)
                p.epilogue(epilogue, sram["output"], band, width, cn, sram)
                p.map_dma("STORE", y, sram["output"], row0, band, c0, cn, col0, width)

    def element(self, op: npu.TableOp | npu.ClampOp, tile, sram: dict[str, int], constants: dict[str, int]) -> None:
        """A TABLE or CLAMP over a whole map, in place in SRAM."""
        p = self.program
        x, y = stored(op.input), stored(op.result)
        rows, _, chunk = tile
        epilogue = epilogue_of(op, self.target)
        for c0, cn in channel_chunks(y.c, chunk):
            p.load_epilogue(epilogue, sram, constants)
            for row0, band in bands(y.h, rows):
                p.map_dma("LOAD", x, sram["data"], row0, band, c0, cn)
                p.epilogue(epilogue, sram["data"], band, y.w, cn, sram)
                p.map_dma("STORE", y, sram["data"], row0, band, c0, cn)

    def relayout(self, op: npu.RelayoutOp, tile, staging: int) -> None:
        """Copy a map between NHWC and NCHW order: the whole map at once when it fits (the DMA's
        NCHW layout reorders it), else one channel plane at a time, a band of rows at a time,
        the pixel stride picking one channel out of the NHWC side."""
        p = self.program
        x, y = stored(op.input), stored(op.result)
        rows, _, chunk = tile
        h, w, c = x.h, x.w, x.c
        if (rows, chunk) == (h, c):
            for mnemonic, tensor in (("LOAD", x), ("STORE", y)):
                if tensor.layout == "NCHW":
                    p.emit(mnemonic, layout=DMA_LAYOUTS["NCHW"], sram_addr=staging, ddr_addr=tensor.address,
                           d0=c, d1=h, d2=w)
                else:
                    p.map_dma(mnemonic, tensor, staging, 0, h)
            return
        for channel in range(c):
            for row0, band in bands(h, rows):
                for mnemonic, tensor in (("LOAD", x), ("STORE", y)):
                    if tensor.layout == "NCHW":
                        p.emit(mnemonic, layout=DMA_LAYOUTS["NHWC"], sram_addr=staging,
                               ddr_addr=tensor.address + (channel * h + row0) * w, d0=band, d1=w, d2=1)
                    else:
                        p.map_dma(mnemonic, tensor, staging, row0, band, channel, 1)

    def concat(self, op: npu.ConcatOp, tile, staging: int) -> None:
        """Each part stored at its channel offset of the NHWC result (pixel stride = all channels)."""
        y = stored(op.result)
        offset = 0
        for value, rows in zip(op.inputs, tile):
            part = stored(value)
            for row0, band in bands(y.h, rows):
                self.program.map_dma("LOAD", part, staging, row0, band)
                self.program.map_dma("STORE", y, staging, row0, band, offset, part.c)
            offset += part.c


    def interleave(self, op: npu.InterleaveOp, tile, staging: int) -> None:
        """Each phase's window, a band of its rows at a time, stored every f_h-th row and f_w-th
        pixel of the result from (a, b). Phases reading the same window (a nearest upsampling's
        copies of one map) share its LOAD: one LOAD and f_h * f_w STOREs per band."""
        p = self.program
        y = stored(op.result)
        rows, _, chunk = tile
        step = tuple(ints(op.factors))
        readers: dict[tuple, list] = {}
        for window in op.phase_windows():
            readers.setdefault((window.source, window.top, window.left, window.cols), []).append(window)
        for c0, cn in channel_chunks(y.c, chunk):
            for (source, top, left, cols), windows in readers.items():
                x = stored(source)
                for row0, band in bands(max(w.rows for w in windows), rows):
                    p.map_dma("LOAD", x, staging, top + row0, band, c0, cn, left, cols)
                    for w in windows:
                        count = min(band, w.rows - row0)
                        if count > 0:
                            p.map_dma("STORE", y, staging, w.a + step[0] * row0, count, c0, cn, w.b, cols, step)

    def pad(self, op: npu.PadOp, tile, staging: int) -> None:
        """A band of rows at a time: the band stored inside the result, its first and last
        columns stored once per edge column, and the first and last rows of the map once per
        edge row (each with its edge columns). Edge copies read the staged band with its row
        pitch, one column or one row of it."""
        p = self.program
        x, y = stored(op.input), stored(op.result)
        top, left, bottom, right = ints(op.pads)
        rows, _, chunk = tile
        for c0, cn in channel_chunks(x.c, chunk):
            pitch = x.w * self.target.align(cn)
            for row0, band in bands(x.h, rows):
                p.map_dma("LOAD", x, staging, row0, band, c0, cn)
                blocks = [(0, band, top + row0)]  # (first staged row, rows, result row)
                if row0 == 0:
                    blocks += [(0, 1, r) for r in range(top)]
                if row0 + band == x.h:
                    blocks += [(band - 1, 1, top + x.h + r) for r in range(bottom)]
                for first, count, at in blocks:
                    sram = staging + first * pitch
                    p.map_dma("STORE", y, sram, at, count, c0, cn, left, x.w, sram_row_stride=pitch)
                    for col in range(left):
                        p.map_dma("STORE", y, sram, at, count, c0, cn, col, 1, sram_row_stride=pitch)
                    last = sram + (x.w - 1) * self.target.align(cn)
                    for col in range(left + x.w, left + x.w + right):
                        p.map_dma("STORE", y, last, at, count, c0, cn, col, 1, sram_row_stride=pitch)


def _io_layout(shape) -> str:
    return "NCHW" if len(shape) == 4 else "RAW"


def _dtype(value: SSAValue) -> str:
    return numpy_dtype(value.type.get_element_type()).name  # type: ignore[attr-defined]


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
        name = ", ".join(location_names(value.owner.location)) or f"input{index}"
        tensors.append(isa.IoOp(name, "input", shape, _dtype(value), _scale_where_converted(argument), 0,
                                address_of(value), _io_layout(shape)))
    for index, (value, inner) in enumerate(zip(op.outputs, yielded.operands)):
        shape = shape_of(value)
        name = ", ".join(location_names(inner.owner.location)) or f"output{index}"
        dtype = _dtype(value)
        scale = 1.0 if dtype == "float32" else _scale_where_converted(inner)
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
    returned = function.body.block.last_op
    assert isinstance(returned, func.ReturnOp)
    for index, value in enumerate(returned.operands):
        name = argument_name(function, index, "output", results=True)
        if isinstance(value.owner, npu.HostOp):  # a host segment's float32 result, returned as it is
            shape = shape_of(value)
            entries.append(isa.IoOp(name, "output", shape, "float32", 1.0, 0, address_of(value), _io_layout(shape)))
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
    compressed = module.attributes.get(COMPRESSED)
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
    if compressed is not None:

        module.attributes[COMPRESSED_REGIONS_ATTR] = compressed


@dataclass(frozen=True)
class LowerNpuToIsaPass(ModulePass):
    """Emit the isa program (constants, io table, LOAD/compute/STORE per tile, SYNC) of an annotated npu module."""

    name = "lower-npu-to-isa"
    target: str | None = None  # default: the module's npu.target

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        lower_module(op, resolve_target(op, self.target, self.name))
