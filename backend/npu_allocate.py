"""npu-allocate: where everything lives in DDR: the constant image and the activations.

- **The constant image** (DDR from address 0, binary-format.md section 2): every layer's
  constants in the layouts its LOADs name: convolution weights OHWI (a gemm's M x K is OHWI
  with a 1x1 kernel), depthwise weights DW, int32 biases, 4-byte rescale records (one per
  output channel, or one), 256-byte tables, an average pool's per-position records, and int8
  constants read as tensors in their `npu.layout`. Each blob starts at a 64-byte boundary
  and identical blobs are stored once. The weights of a layer compress-weights marked
  (seed 003's codebook, `fixed.codebook`) stay compressed: the image holds their b-bit ids,
  one byte-aligned row per output channel (target/codebook.py), and their int8 dictionary,
  which the layer's decoding LOADs read (`npu.codebook_bits`); unless a weight lies outside
  the dictionary (a dilated kernel's added zeros), when they are stored plain.
  Layers get `npu.constants = {table, weights, dictionary, bias, records}` (image offsets);
  the image itself is the program's `isa.constants` op, placed at module level before the
  function (its hex form prints and parses fast, and emission keeps it as it is).
- **Activations** live above the image, each tensor from the layer that writes it to the
  last layer that reads it; addresses are assigned first-fit over these live intervals, so a
  tensor reuses the bytes of tensors dead before it is written. Views (reshapes, transposes,
  kernel views) share their source's bytes; program inputs and outputs are pinned for the
  whole run (the host writes and reads them). A host segment (`npu.host`) reads its operands
  and writes its results in DDR between two layers (values take their own size: float32 4
  bytes an element, int64 8). Every op whose result is in DDR gets `npu.ddr = address`, a
  program input a host segment reads as it is gets it in its argument attributes; the
  module gets `npu.activation_bytes` (the peak).

SRAM addresses are npu-plan-sram's.
"""

from __future__ import annotations

import struct
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
from xdsl.context import Context
from xdsl.dialects import func
from xdsl.dialects.builtin import ModuleOp
from xdsl.ir import BlockArgument, Operation, SSAValue
from xdsl.passes import ModulePass

from xnpu.backend.npu_annotations import (
    ACTIVATION_BYTES,
    CODEBOOK_BITS,
    CONSTANTS,
    DDR,
    DDR_PITCH,
    LAYER_OPS,
    LAYOUT,
    VIEW_OPS,
    LoweringError,
    align,
    element_bytes,
    epilogue_of,
    layout_of,
    node_names,
    only_function,
    set_argument_address,
    resolve_target,
    set_int,
    set_ints,
    set_offsets,
)
from xnpu.backend.npu_residency import concat_in_place
from xnpu.backend.npu_tiling import per_position
from xnpu.dialects import fixed, isa, npu
from xnpu.dialects.shapes import ints, shape_of
from xnpu.target.description import TargetDescription
from xnpu.target.codebook import pack_rows
from xnpu.transforms.compress_weights import codebook_of

CONSTANT_ALIGNMENT = 64  # binary-format.md: every constant at a 64-byte aligned offset
DDR_ALIGNMENT = 64


class ConstantImage:
    """The DDR constant image; identical blobs are stored once."""

    def __init__(self) -> None:
        self.data = bytearray()
        self.offsets: dict[bytes, int] = {}

    def add(self, blob: bytes) -> int:
        blob = bytes(blob)
        if blob not in self.offsets:
            offset = align(len(self.data), CONSTANT_ALIGNMENT)
            self.data += bytes(offset - len(self.data)) + blob
            self.offsets[blob] = offset
        return self.offsets[blob]


def records(multipliers: Sequence[int], shifts: Sequence[int]) -> bytes:
    """Rescale records: uint16 M, int8 shift, a zero byte (isa.md section 1)."""
    return b"".join(struct.pack("<Hbx", int(m), int(s)) for m, s in zip(multipliers, shifts))


def kernel_bytes(op: npu.ConvOp, weights: np.ndarray) -> bytes:
    """Weights in the layout the LOAD names: OHWI (a gemm's M x K as is), or DW (O x KH x KW)."""
    if op.is_gemm or op.is_depthwise:
        return np.ascontiguousarray(weights).astype(np.int8).tobytes()
    return np.ascontiguousarray(weights.transpose(0, 2, 3, 1)).astype(np.int8).tobytes()


def data_bytes(constant: fixed.ConstantOp) -> bytes:
    """An int8 constant read as a tensor, in its npu.layout (NHWC: channels innermost)."""
    values = constant.to_numpy().astype(np.int8)
    if values.ndim == 4 and layout_of(constant.result) == "NHWC":
        values = values.transpose(0, 2, 3, 1)
    return np.ascontiguousarray(values).tobytes()


def codebook_ids(weights: np.ndarray, dictionary: np.ndarray) -> np.ndarray | None:
    """Each int8 weight's id: the first dictionary entry equal to it (int8 rounding can make
    entries equal); None when a weight is in no entry (a dilated kernel's added zeros)."""
    first_id = np.full(256, -1, dtype=np.int64)
    for index in range(dictionary.size - 1, -1, -1):
        first_id[dictionary.view(np.uint8)[index]] = index
    ids = first_id[weights.view(np.uint8)]
    return None if (ids < 0).any() else ids


@dataclass(eq=False)
class Storage:
    """DDR bytes holding one tensor and its views; live from layer `first` to layer `last`."""

    size: int
    first: int
    last: int
    address: int = -1
    pinned: bool = False  # program inputs and outputs: live for the whole run
    in_image: bool = False  # a constant: placed in the image, not among activations


class Allocator:
    def __init__(self, module: ModuleOp, function: func.FuncOp, target: TargetDescription):
        self.module = module
        self.function = function
        self.target = target
        self.image = ConstantImage()
        self.homes: dict[SSAValue, Storage] = {}
        self.slices: dict[SSAValue, tuple[int, int]] = {}  # a concat's part -> (first channel, channels per pixel)
        self.storages: list[Storage] = []

    # constants -----------------------------------------------------------------------------

    def weights(self, op: npu.ConvOp, offsets: dict[str, int]) -> None:
        """The weights' offset (and a compressed layer's dictionary's) into `offsets`."""
        constant = op.weight.owner
        assert isinstance(constant, fixed.ConstantOp)
        blob = kernel_bytes(op, constant.to_numpy())
        book = codebook_of(constant)
        ids = None if book is None else codebook_ids(np.frombuffer(blob, dtype=np.int8), book[1])
        if ids is None:
            offsets["weights"] = self.image.add(blob)
            return
        bits, dictionary = book
        rows = shape_of(op.weight)[0]  # output channels: a row of ids each
        offsets["weights"] = self.image.add(pack_rows(ids.reshape(rows, -1), bits))
        offsets["dictionary"] = self.image.add(dictionary.tobytes())
        set_int(op, CODEBOOK_BITS, bits)

    def constants(self, op: Operation) -> dict[str, int]:
        """Pack the constants `op` reads; their image offsets by name (the epilogue table first)."""
        offsets: dict[str, int] = {}
        epilogue = epilogue_of(op, self.target)
        if epilogue is not None and epilogue.kind == "table":
            offsets["table"] = self.image.add(epilogue.table_bytes())
        if isinstance(op, npu.ConvOp):
            if isinstance(op.weight.owner, fixed.ConstantOp):
                self.weights(op, offsets)
            if op.bias is not None:
                bias = op.bias.owner.to_numpy()  # type: ignore[attr-defined]
                offsets["bias"] = self.image.add(np.asarray(bias, dtype="<i4").tobytes())
            offsets["records"] = self.image.add(records(ints(op.multiplier), ints(op.shift)))
        elif isinstance(op, npu.PoolOp) and per_position(op):
            offsets["records"] = self.image.add(records(ints(op.multiplier), ints(op.shift)))
        return offsets

    # DDR -----------------------------------------------------------------------------------

    def new_storage(self, value: SSAValue, first: int, **flags) -> Storage:
        storage = Storage(int(np.prod(shape_of(value))) * element_bytes(value), first, first, **flags)
        self.storages.append(storage)
        self.homes[value] = storage
        return storage

    def read(self, value: SSAValue, layer: int) -> None:
        if value not in self.homes and isinstance(value.owner, fixed.ConstantOp) and LAYOUT in value.owner.attributes:
            offset = self.image.add(data_bytes(value.owner))
            self.new_storage(value, -1, address=offset, in_image=True)
        if value in self.homes:
            storage = self.homes[value]
            storage.last = max(storage.last, layer)

    def result_storage(self, value: SSAValue, layer: int) -> None:
        """A layer's result gets its own storage, or, as the part of a concat stored in place
        (npu_residency.concat_in_place), a channel slice of the concat's: one storage alive
        from the first part's layer on."""
        if value in self.homes:  # the concat's map, which its first part created
            self.homes[value].last = max(self.homes[value].last, layer)
            return
        for use in value.uses:
            if concat_in_place(use.operation):
                concat = use.operation
                storage = self.homes.get(concat.result) or self.new_storage(concat.result, layer)
                storage.last = max(storage.last, layer)
                self.homes[value] = storage
                channels = [shape_of(part)[1] for part in concat.inputs]
                self.slices[value] = (sum(channels[: concat.inputs.index(value)]), sum(channels))
                return
        self.new_storage(value, layer)

    def walk(self) -> int:
        """Pack constants, give every tensor its storage and live interval; the layer count."""
        layer = -1
        for argument in self.function.body.block.args:  # a program input a host segment reads as it is
            if any(isinstance(use.operation, npu.HostOp) for use in argument.uses):
                self.new_storage(argument, -1, pinned=True)
        for op in self.function.body.block.ops:
            if isinstance(op, fixed.QuantizeOp):
                self.new_storage(op.result, -1, pinned=True)  # the host's copy stays intact for the whole run
            elif isinstance(op, LAYER_OPS):
                layer += 1
                for operand in op.operands:
                    self.read(operand, layer)
                offsets = self.constants(op)
                if offsets:
                    set_offsets(op, CONSTANTS, offsets)
                self.result_storage(op.results[0], layer)
            elif isinstance(op, npu.HostOp):  # the host reads and writes DDR between two layers
                layer += 1
                for operand in op.operands:
                    self.read(operand, layer)
                for result in op.results:
                    self.new_storage(result, layer)
            elif isinstance(op, VIEW_OPS):
                self.read(op.input, layer)
                if op.input not in self.homes:
                    raise LoweringError(f"{node_names(op)}: '{op.name}' of a tensor that is not in memory")
                self.homes[op.result] = self.homes[op.input]
            elif isinstance(op, fixed.DequantizeOp):
                self.homes[op.input].pinned = True
            elif isinstance(op, func.ReturnOp):  # a host segment's float32 outputs
                for value in op.operands:
                    if value in self.homes:
                        self.homes[value].pinned = True
        return layer + 1

    def place(self, end: int) -> int:
        """DDR addresses for every storage, first-fit over live intervals; the peak activation bytes."""
        base = align(len(self.image.data), DDR_ALIGNMENT)
        placed: list[Storage] = []
        activations = [s for s in self.storages if not s.in_image]
        for storage in activations:
            if storage.pinned:
                storage.last = end
        for storage in sorted((s for s in activations if s.size > 0), key=lambda s: (s.first, -s.size)):
            conflicts = sorted(
                (p.address, p.address + p.size) for p in placed if not (p.last < storage.first or storage.last < p.first)
            )
            address = base
            for start, stop in conflicts:
                if address + storage.size <= start:
                    break
                address = max(address, align(stop, DDR_ALIGNMENT))
            storage.address = address
            placed.append(storage)
        for storage in activations:
            if storage.address < 0:
                storage.address = base  # empty
        top = max((s.address + s.size for s in placed), default=base)
        if top > self.target.memory.ddr_bytes:
            raise LoweringError(f"the program needs {top} bytes of DDR; "
                                f"{self.target.name} has {self.target.memory.ddr_bytes}")
        return top - base

    def run(self) -> None:
        end = self.walk()
        peak = self.place(end)
        for value, storage in self.homes.items():
            if isinstance(value, BlockArgument):
                set_argument_address(value, storage.address)
            elif not isinstance(value.owner, npu.HostOp):
                first, pitch = self.slices.get(value, (0, 0))
                set_int(value.owner, DDR, storage.address + first)
                if pitch:
                    set_int(value.owner, DDR_PITCH, pitch)
        for host in {value.owner for value in self.homes if isinstance(value.owner, npu.HostOp)}:
            set_ints(host, DDR, [self.homes[result].address for result in host.results])
        set_int(self.module, ACTIVATION_BYTES, peak)
        for old in [op for op in self.module.ops if isinstance(op, isa.ConstantsOp)]:
            old.detach()
            old.erase()
        if self.image.data:
            self.module.body.block.insert_op_before(isa.ConstantsOp(bytes(self.image.data)), self.function)


@dataclass(frozen=True)
class NpuAllocatePass(ModulePass):
    """Pack the constant image and assign DDR addresses (first-fit over live intervals)."""

    name = "npu-allocate"
    target: str | None = None  # default: the module's npu.target

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        target = resolve_target(op, self.target, self.name)
        Allocator(op, only_function(op, self.name), target).run()
