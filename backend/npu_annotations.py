"""What the passes below the npu level share: their annotations, the stored view of a tensor,
the epilogue a unit's result goes through, and the errors they raise.

The passes (docs/npu.md, "Below npu") never leave the npu level: each adds discardable
attributes that do not change what an op computes, and the next one reads them.

| attribute | on | written by | meaning |
|---|---|---|---|
| `npu.layout = "NHWC"` / `"NCHW"` | every op whose result lies in DDR (`fixed.quantize`, `fixed.constant` read as data, units, data movement; an `npu.host`: one per result, row-major) | npu-assign-layout | byte order of the result in DDR |
| `npu.tile = array<i64: rows, cols, chunk>` | every layer (an op that runs instructions) | npu-tile | output rows, columns and channels per tile; a concat: rows per band of each input; an interleave or pad: source rows, columns and channels per band |
| `npu.on_chip`, `npu.sram_home = address`, `npu.spill` | a layer whose result stays in SRAM for its readers | npu-keep-on-chip | the result's SRAM home from its producer to its last reader; `npu.spill`: also stored to DDR for a reader that needs it there |
| `npu.single_buffered` | a layer whose double-buffered working set does not fit | npu-tile | one slot per buffer: its DMA and compute take turns |
| `npu.prefetch = depth` | a layer whose constants are loaded early | npu-prefetch-weights | its constants region is free `depth` (1 to 4) layers before it, so their LOADs run during those layers |
| `npu.sram = {name = array<i64: slot, ...>}` | every layer | npu-plan-sram | SRAM address of each slot of each buffer of the working set (a constants slot as its parts: weights, bias, records, table) |
| `npu.ddr = address` | every op whose result lies in DDR (an `npu.host`: `array<i64: ...>`, one per result) | npu-allocate | DDR address of the result (a view: its source's) |
| `npu.ddr_pitch = channels` | a concat's part stored in place | npu-allocate | channels from one pixel to the next: the part is a channel slice of the concat's map |
| `npu.constants = {name = offset}` | layers reading constants | npu-allocate | offsets of weights, bias, rescale records, table (and a compressed layer's dictionary) in the constant image |
| `npu.codebook_bits = b` | a conv whose weights the image holds as b-bit codebook ids | npu-allocate | its weight LOADs decode (docs/isa.md, "Decoding LOADs") |
| `npu.activation_bytes` | the module | npu-allocate | the activation peak (the image is an `isa.constants` op beside the function) |
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import math

import numpy as np
from xdsl.dialects import func
from xdsl.dialects.builtin import ArrayAttr, DictionaryAttr, IntegerAttr, ModuleOp, i64
from xdsl.ir import Attribute, BlockArgument, Operation, SSAValue

from xnpu.core.errors import XnpuError
from xnpu.dialects import fixed, npu
from xnpu.dialects.shapes import i64_array, ints, shape_of
from xnpu.dialects.targeting import module_target
from xnpu.ir.io import describe_op
from xnpu.ir.locations import location_names
from xnpu.semantics import fixed_point, units
from xnpu.semantics.dtypes import numpy_dtype
from xnpu.target import legality
from xnpu.target.description import TargetDescription

LAYOUT = "npu.layout"
TILE = "npu.tile"
SRAM = "npu.sram"
DDR = "npu.ddr"
DDR_PITCH = "npu.ddr_pitch"  # on a result stored as the channel slice of a wider map (a concat's part)
CONSTANTS = "npu.constants"
ACTIVATION_BYTES = "npu.activation_bytes"
CODEBOOK_BITS = "npu.codebook_bits"  # on a conv whose weights are stored as codebook ids
SINGLE_BUFFERED = "npu.single_buffered"  # on a layer whose double-buffered working set does not fit

LAYER_OPS = (npu.ConvOp, npu.EltwiseOp, npu.PoolOp, npu.TableOp, npu.ClampOp, npu.RelayoutOp, npu.ConcatOp,
             npu.InterleaveOp, npu.PadOp)
VIEW_OPS = (npu.ReshapeOp, npu.TransposeOp)


class LoweringError(XnpuError):
    pass


def align(value: int, alignment: int) -> int:
    return -(-value // alignment) * alignment


def fail(op: Operation, message: str, target: TargetDescription) -> LoweringError:
    """`'npu.conv' at loc("node"): message (target name)`: one line naming the ONNX node."""
    return LoweringError(f"{describe_op(op)}: {message} (target {target.name})")


def node_names(op: Operation) -> str:
    """The ONNX nodes an op came from (`/l2/c2/Conv, /l2/Relu`), or the op itself when unknown."""

    return ", ".join(location_names(op.location)) or describe_op(op)


def resolve_target(module: ModuleOp, option: str | None, pass_name: str) -> TargetDescription:
    """The pass's `target` option (recorded in the module), else the module's `npu.target`."""
    try:
        return module_target(module, option, who=pass_name)
    except XnpuError as error:
        raise LoweringError(str(error)) from None


def target_name(module: ModuleOp) -> str:
    return module.attributes[npu.TARGET_ATTRIBUTE].data  # type: ignore[attr-defined]


def only_function(module: ModuleOp, pass_name: str) -> func.FuncOp:
    functions = [op for op in module.ops if isinstance(op, func.FuncOp)]
    if len(functions) != 1:
        raise LoweringError(f"{pass_name} expects one function, found {len(functions)}")
    return functions[0]


def layers(function: func.FuncOp) -> list[Operation]:
    """The ops that run instructions, in program order."""
    return [op for op in function.body.block.ops if isinstance(op, LAYER_OPS)]


# --------------------------------------------------------------------------------------
# Reading and writing annotations
# --------------------------------------------------------------------------------------


def required(op: Operation, name: str, writer: str) -> Attribute:
    attr = op.attributes.get(name)
    if attr is None:
        raise LoweringError(f"{describe_op(op)}: has no {name} annotation; run {writer} first")
    return attr


def set_int(op: Operation, name: str, value: int) -> None:
    op.attributes[name] = IntegerAttr(int(value), i64)


def get_int(op: Operation, name: str, writer: str) -> int:
    return required(op, name, writer).value.data  # type: ignore[attr-defined]


def set_ints(op: Operation, name: str, values: Sequence[int]) -> None:
    op.attributes[name] = i64_array(values)


def get_ints(op: Operation, name: str, writer: str) -> tuple[int, ...]:
    return ints(required(op, name, writer))  # type: ignore[arg-type]


def set_offsets(op: Operation, name: str, offsets: dict[str, int]) -> None:
    op.attributes[name] = DictionaryAttr({key: IntegerAttr(int(value), i64) for key, value in offsets.items()})


def get_offsets(op: Operation, name: str, writer: str) -> dict[str, int]:
    return {key: value.value.data for key, value in required(op, name, writer).data.items()}  # type: ignore[attr-defined]


def set_slots(op: Operation, name: str, slots: dict[str, list[int]]) -> None:
    op.attributes[name] = DictionaryAttr({key: i64_array(value) for key, value in slots.items()})


def get_slots(op: Operation, name: str, writer: str) -> dict[str, list[int]]:
    """{buffer: [address of slot 0, slot 1, ...]}."""
    return {key: list(ints(value)) for key, value in required(op, name, writer).data.items()}  # type: ignore[attr-defined]


def producer(value: SSAValue) -> Operation:
    owner = value.owner
    if not isinstance(owner, Operation):
        raise LoweringError(f"a block argument ({value.type}) is read where an int8 tensor in memory is needed")
    return owner


def argument_address(argument: BlockArgument) -> int:
    """The DDR address of a program input the host writes as it is (one a host segment reads)."""
    function = argument.block.parent_op()
    attrs = function.arg_attrs.data[argument.index].data if function.arg_attrs is not None else {}
    attr = attrs.get(DDR)
    if not isinstance(attr, IntegerAttr):
        raise LoweringError(f"program input {argument.index} has no {DDR} annotation; run npu-allocate first")
    return attr.value.data


def set_argument_address(argument: BlockArgument, address: int) -> None:
    function = argument.block.parent_op()
    count = len(argument.block.args)
    existing = function.arg_attrs.data if function.arg_attrs is not None else ()
    entries = [dict(existing[i].data) if i < len(existing) else {} for i in range(count)]
    entries[argument.index][DDR] = IntegerAttr(int(address), i64)
    function.arg_attrs = ArrayAttr([DictionaryAttr(entry) for entry in entries])


def layout_of(value: SSAValue) -> str:
    if isinstance(value, BlockArgument):  # a program input the host writes: row-major
        return row_major_layout(len(shape_of(value)))
    attr = required(producer(value), LAYOUT, "npu-assign-layout")
    if isinstance(attr, ArrayAttr):  # a host segment: one per result
        attr = attr.data[value.index]  # type: ignore[attr-defined]
    return attr.data  # type: ignore[attr-defined]


def address_of(value: SSAValue) -> int:
    if isinstance(value, BlockArgument):
        return argument_address(value)
    owner = producer(value)
    if isinstance(owner, npu.HostOp):  # one address per result
        return get_ints(owner, DDR, "npu-allocate")[value.index]  # type: ignore[attr-defined]
    return get_int(owner, DDR, "npu-allocate")


def element_bytes(value: SSAValue) -> int:
    """Bytes per element in DDR: int8 tensors 1, a host segment's values their own (float32 4, int64 8, ...)."""
    return numpy_dtype(value.type.get_element_type()).itemsize  # type: ignore[attr-defined]


# --------------------------------------------------------------------------------------
# Tensors as stored: H x W x C in one of two byte orders
# --------------------------------------------------------------------------------------


def hwc(shape: Sequence[int], op: Operation) -> tuple[int, int, int]:
    """The H x W x C view of a logical tensor `op` reads or writes: NCHW maps (batch 1), any
    other rank as the matrix of its last axis (N x K as N x 1 x K, [1, L, C] as L x 1 x C,
    vectors as 1 x 1 x K)."""
    shape = tuple(shape)
    problem = legality.memory_shape_problem(shape)  # lower-fixed-to-npu placed such tensors on the host
    if problem:
        raise LoweringError(f"{describe_op(op)}: {problem}")
    if len(shape) == 4:
        return shape[2], shape[3], shape[1]
    return math.prod(shape[:-1]), 1, shape[-1]


@dataclass(frozen=True)
class Stored:
    """A tensor in DDR seen as H x W x C: NHWC (its pixels `pitch` channels apart: C when
    dense, more when it is the channel slice of a wider map) or NCHW (C x H x W row-major)."""

    h: int
    w: int
    c: int
    layout: str
    rank: int
    address: int = 0
    pitch: int = 0  # channels from one pixel to the next in DDR; 0: c (dense)

    @property
    def pixel(self) -> int:
        return self.pitch or self.c

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

    @property
    def size(self) -> int:
        return self.h * self.w * self.c


def stored(value: SSAValue, layout: str | None = None, address: int | None = None) -> Stored:
    """`value` as stored: its producer's layout (or `layout`) and DDR address (when allocated)."""
    shape = shape_of(value)
    h, w, c = hwc(shape, producer(value))
    layout = layout_of(value) if layout is None else layout
    owner = producer(value)
    if address is None:
        address = address_of(value) if DDR in owner.attributes else 0
    pitch = owner.attributes[DDR_PITCH].value.data if DDR_PITCH in owner.attributes else 0  # type: ignore[attr-defined]
    return Stored(h, w, c, layout, len(shape), address, pitch)


def row_major_layout(rank: int) -> str:
    """The layout name of a tensor's row-major order: NCHW for maps, NHWC (N x 1 x K) otherwise."""
    return "NCHW" if rank == 4 else "NHWC"


def is_kernel_view(op: Operation) -> bool:
    """A reshape to O x 1 x KH x KW read only as convolution kernels (seed 002's activation
    kernels): its row-major bytes are the DW and OHWI layouts, not a map."""
    if not isinstance(op, npu.ReshapeOp):
        return False
    shape = shape_of(op.result)
    uses = list(op.result.uses)
    return (bool(uses) and len(shape) == 4 and shape[1] == 1
            and all(isinstance(u.operation, npu.ConvOp) and u.index == 1 for u in uses))


def is_data_constant(value: SSAValue) -> bool:
    """An int8 `fixed.constant` read as a tensor (an element-wise operand), not as weights."""
    return isinstance(value.owner, fixed.ConstantOp) and npu.width_of(value) == 8


# --------------------------------------------------------------------------------------
# Epilogues: what follows a unit's int8 result in SRAM
# --------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Epilogue:
    """A CLAMP to [low, high] or a TABLE of 256 entries, in place on a tile's result."""

    kind: str  # clamp | table
    low: int = 0
    high: int = 0
    entries: tuple[int, ...] = ()

    def table_bytes(self) -> bytes:
        return np.asarray(self.entries, dtype=np.int8).tobytes()


def unit_relu(op: Operation) -> bool:
    """The relu flag of a CONV or ELTWISE (a POOL has none: its relu is part of the epilogue)."""
    return isinstance(op, npu.ConvOp | npu.EltwiseOp) and op.relu is not None


def epilogue_of(op: Operation, target: TargetDescription) -> Epilogue | None:
    if isinstance(op, npu.TableOp):
        return Epilogue("table", entries=tuple(int(v) for v in op.entries()))
    if isinstance(op, npu.ClampOp):
        return Epilogue("clamp", *op.bounds())
    if not isinstance(op, npu.UnitOp):
        return None
    if isinstance(op, npu.PoolOp) and op.relu is not None:
        # POOL has no relu flag: relu (then any clamp or table) is one CLAMP or one exact TABLE
        if op.clamp is None and op.table is None and target.has_clamp:
            return Epilogue("clamp", 0, target.data.saturation_max)
        if not target.has_table:
            raise fail(op, "a relu after pooling needs a clamp or a table unit", target)
        codes = np.arange(-fixed_point.TABLE_SIZE // 2, fixed_point.TABLE_SIZE // 2)
        return Epilogue("table", entries=tuple(int(v) for v in op.finish(units.relu(codes))))
    bounds = op.clamp_bounds()
    if bounds is not None:
        return Epilogue("clamp", *bounds)
    if op.table is not None:
        return Epilogue("table", entries=tuple(int(v) for v in op.table_entries()))
    return None
