"""The `isa` dialect: one op per instruction of the xnpu accelerator (docs/isa.md).

An `isa` module is a program, not a dataflow graph: instruction ops have no operands or
results, only properties, and mean what running them in the order they appear computes;
the machine overlaps its two queues where their dependency fields allow (isa.md section 3). Every
property is one field of the instruction's format, under the field's name in
`xnpu.target.encoding.FORMATS`, so `instruction_of` / `op_from_instruction` convert an op
to the encoder's `Instruction` and back with no per-op code. The op classes themselves are
generated from the same tables: adding a field to a format adds it here.

    builtin.module attributes {isa.target = "xnpu_default"} {
      isa.constants dense<"0x..."> : tensor<1234xi8>
      isa.io {name = "input", direction = "input", ...}
      isa.load {layout = NCHW, elem_log2 = 0, sram_addr = 0, ddr_addr = 1280, ...} loc("conv1")
      isa.conv {depthwise = 0, relu = 1, ...} loc(fused["conv1", "relu1"])
      isa.sync {halt = 1, token = 0}
    }

Enumerated fields print by name (`layout = NHWC`, `kind = max`) and parse by name or
number. The dependency fields `wait` and `signal` (docs/isa.md section 3) print only where
they are 1 and parse as 0 when absent. The location of an instruction is its provenance: the
ONNX node(s) it came from.

Verifiers check each field against its width and enumeration (the encoder's checks) and,
when the enclosing module names a target (`isa.target`, a shipped name or a TOML path),
the target's own rules (`TargetDescription.check_instruction`) plus the whole SRAM and DDR
extent every operand region covers (`sram_regions`).
"""

from __future__ import annotations

import functools
from typing import ClassVar

import numpy as np
from xdsl.dialects import func
from xdsl.dialects.builtin import (
    I64,
    BytesAttr,
    DenseArrayBase,
    DenseIntOrFPElementsAttr,
    FloatAttr,
    IntAttr,
    IntegerAttr,
    IntegerType,
    ModuleOp,
    StringAttr,
    TensorType,
    f64,
    i64,
)
from xdsl.ir import Block, Dialect, Operation, Region
from xdsl.irdl import (
    BaseAttr,
    EqAttrConstraint,
    IRDLOperation,
    ParamAttrConstraint,
    ParsePropInAttrDict,
    irdl_op_definition,
    prop_def,
    region_def,
    traits_def,
)
from xdsl.parser import Parser
from xdsl.printer import Printer
from xdsl.traits import NoTerminator
from xdsl.utils.exceptions import VerifyException

from xnpu.core.errors import XnpuError
from xnpu.dialects.targeting import enclosing_target
from xnpu.semantics import dtypes
from xnpu.target import footprints
from xnpu.target.encoding import DEPENDENCY_NAMES, ENUMS, FIELD_NAMES, FORMATS, OPCODES, Instruction, make_instruction

TARGET_ATTRIBUTE = "isa.target"
# Fields that print only when set and parse as 0 when left out: the dependency tokens
# (docs/isa.md section 3), so a program reads as its data flow with the tokens where they are,
# a CONV's output pixel stride (dense unless it writes a chunk of a wider map) and a LOAD's
# codebook fields (set only where it decodes compressed weights).
OPTIONAL_FIELDS = (*DEPENDENCY_NAMES, "out_pixel_stride", "codebook_bits", "dictionary_addr")

# --------------------------------------------------------------------------------------
# Regions an instruction touches
# --------------------------------------------------------------------------------------


def sram_regions(i: Instruction, alignment: int) -> list[tuple[str, int, int]]:
    """(field, first byte, size) of every SRAM region the instruction reads or writes."""
    return [(name, start, size) for name, start, size, _ in footprints.sram_regions(i, alignment)]


IN_PLACE = {"ELTWISE": ("a_addr", "b_addr"), "TABLE": ("in_addr",), "CLAMP": ("in_addr",)}


def check_overlaps(i: Instruction, alignment: int) -> None:
    """XnpuError if the output region overlaps an input region, other than the in-place cases isa.md allows."""
    regions = sram_regions(i, alignment)
    outputs = [r for r in regions if r[0] == "out_addr"]
    for out_name, out_start, out_size in outputs:
        for name, start, size in regions:
            if name == out_name or size == 0 or out_size == 0:
                continue
            if name in IN_PLACE.get(i.op, ()) and start == out_start and size == out_size:
                continue  # exactly in place
            if start < out_start + out_size and out_start < start + size:
                raise XnpuError(
                    f"{i.op}: output [{out_start}, {out_start + out_size}) overlaps {name} [{start}, {start + size})"
                )


def check_extents(i: Instruction, target) -> None:
    """XnpuError if a region the instruction touches leaves the target's SRAM or DDR."""
    check_overlaps(i, target.memory.channel_alignment)
    for name, start, size in sram_regions(i, target.memory.channel_alignment):
        if start + size > target.memory.sram_bytes:
            raise XnpuError(
                f"{i.op}.{name}: bytes [{start}, {start + size}) leave the {target.memory.sram_bytes}-byte SRAM of {target.name}"
            )
    if i.op in ("LOAD", "STORE"):
        end = i["ddr_addr"] + footprints.dma_ddr_extent(i)
        if end > target.memory.ddr_bytes:
            raise XnpuError(f"{i.op}: DDR bytes [{i['ddr_addr']}, {end}) leave the {target.memory.ddr_bytes}-byte DDR of {target.name}")


def module_target(op: Operation):
    """The target the enclosing module names in `isa.target`, or None."""
    return enclosing_target(op, TARGET_ATTRIBUTE)


# --------------------------------------------------------------------------------------
# Instruction ops, generated from the field tables
# --------------------------------------------------------------------------------------


class InstructionOp(IRDLOperation):
    """Shared by every instruction op: fields as i64 properties, a compact custom syntax."""

    MNEMONIC: ClassVar[str] = ""

    @classmethod
    def field_names(cls) -> list[str]:
        return list(FIELD_NAMES[cls.MNEMONIC])

    @classmethod
    def enum(cls, field: str) -> dict[int, str] | None:
        return ENUMS.get((OPCODES[cls.MNEMONIC][1], field))

    def field(self, name: str) -> int:
        return self.properties[name].value.data  # type: ignore[attr-defined]

    def fields(self) -> dict[str, int]:
        properties = self.properties
        return {name: properties[name].value.data for name in FIELD_NAMES[self.MNEMONIC]}  # type: ignore[attr-defined]

    def instruction(self) -> Instruction:
        return Instruction(self.MNEMONIC, self.fields())

    def verify_(self) -> None:
        try:
            instruction = make_instruction(self.MNEMONIC, **self.fields())
        except XnpuError as error:
            raise VerifyException(f"{self.name}: {error}") from None
        target = module_target(self)
        if target is None:
            return
        try:
            target.check_instruction(instruction)
            check_extents(instruction, target)
        except XnpuError as error:
            raise VerifyException(f"{self.name}: {error}") from None

    @classmethod
    def parse(cls, parser: Parser) -> InstructionOp:
        names = cls.field_names()
        values: dict[str, int] = {}
        parser.parse_punctuation("{")
        if parser.parse_optional_punctuation("}") is None:
            while True:
                name = parser.parse_identifier()
                if name not in names:
                    parser.raise_error(f"{cls.name} has no field '{name}' (fields: {', '.join(names)})")
                if name in values:
                    parser.raise_error(f"{cls.name}: field '{name}' given twice")
                parser.parse_punctuation("=")
                values[name] = cls._parse_value(parser, name)
                if parser.parse_optional_punctuation("}") is not None:
                    break
                parser.parse_punctuation(",")
        for name in OPTIONAL_FIELDS:
            if name in names:
                values.setdefault(name, 0)
        missing = [n for n in names if n not in values]
        if missing:
            parser.raise_error(f"{cls.name}: missing field '{missing[0]}'")
        op = cls.build(properties={n: field_attr(values[n]) for n in names})
        op.attributes.update(parser.parse_optional_attr_dict())
        return op

    @classmethod
    def _parse_value(cls, parser: Parser, field: str) -> int:
        enum = cls.enum(field)
        if enum is not None:
            word = parser.parse_optional_identifier()
            if word is not None:
                codes = {meaning: code for code, meaning in enum.items()}
                if word not in codes:
                    parser.raise_error(f"{cls.name}.{field}: '{word}' is not one of {', '.join(codes)}")
                return codes[word]
        return parser.parse_integer(allow_boolean=False)

    def print(self, printer: Printer) -> None:
        parts = []
        for name in self.field_names():
            value = self.field(name)
            if name in OPTIONAL_FIELDS and value == 0:
                continue
            enum = self.enum(name)
            text = enum[value] if enum is not None and value in enum and enum[value].isidentifier() else str(value)
            parts.append(f"{name} = {text}")
        printer.print_string(" {" + ", ".join(parts) + "}")
        if self.attributes:
            printer.print_op_attributes(self.attributes)


class _FieldConstraint(ParamAttrConstraint):
    """IntegerAttr[I64], as xDSL checks it, with the field values' own form accepted first: a
    module's every instruction has 10-30 fields, and xDSL's general walk over each one's
    parameters was a third of verifying an isa program."""

    def verify(self, attr, constraint_context) -> None:
        if type(attr) is IntegerAttr and type(attr.value) is IntAttr and (attr.type is i64 or attr.type == i64):
            return
        super().verify(attr, constraint_context)


_FIELD = _FieldConstraint(IntegerAttr, (BaseAttr(IntAttr), EqAttrConstraint(i64)))


def _instruction_op(mnemonic: str, doc: str) -> type[InstructionOp]:
    fields = [f.name for f in FORMATS[OPCODES[mnemonic][1]].fields if f.name != "opcode"]
    body: dict[str, object] = {
        "__doc__": doc,
        "__module__": __name__,
        "name": f"isa.{mnemonic.lower()}",
        "MNEMONIC": mnemonic,
        "__annotations__": {"MNEMONIC": ClassVar[str]},
    }
    body.update({name: prop_def(_FIELD) for name in fields})
    return irdl_op_definition(type(f"{mnemonic.title()}Op", (InstructionOp,), body))


SyncOp = _instruction_op("SYNC", "SYNC: post `token` to the host; `halt` = 1 ends the program.")
LoadOp = _instruction_op("LOAD", "LOAD: DMA from DDR to SRAM in one of the DMA layouts.")
StoreOp = _instruction_op("STORE", "STORE: DMA from SRAM to DDR (pad lanes dropped).")
ConvOp = _instruction_op("CONV", "CONV: dense/depthwise convolution or gemm, bias, rescale (R9, R13), relu.")
EltwiseOp = _instruction_op("ELTWISE", "ELTWISE: add/sub (R10, R11) or mul (R12) with output rescale and relu.")
PoolOp = _instruction_op("POOL", "POOL: max, average or global average pool (R14).")
TableOp = _instruction_op("TABLE", "TABLE: 256-entry lookup (R15).")
ClampOp = _instruction_op("CLAMP", "CLAMP: clamp to [min, max] (R8).")

INSTRUCTION_OPS: dict[str, type[InstructionOp]] = {
    op.MNEMONIC: op for op in (SyncOp, LoadOp, StoreOp, ConvOp, EltwiseOp, PoolOp, TableOp, ClampOp)
}


def instruction_of(op: InstructionOp) -> Instruction:
    """The encoder's view of an instruction op (every field, checked)."""
    return make_instruction(op.MNEMONIC, **op.fields())


@functools.lru_cache(maxsize=1 << 16)
def field_attr(value: int) -> IntegerAttr:
    """The property of one field value (attributes are immutable: one object per value, since
    making one costs far more than an instruction's encoding)."""
    return IntegerAttr(value, i64)


def op_from_instruction(instruction: Instruction) -> InstructionOp:
    return _op_of_checked(make_instruction(instruction.op, **instruction.fields))


def _op_of_checked(checked: Instruction) -> InstructionOp:
    # `create`, not `build`: an instruction op has properties only (no operands, results or
    # regions for build's argument matching to handle), and build's cost was 2.5 times create's
    # for every instruction of a program
    return INSTRUCTION_OPS[checked.op].create(properties={name: field_attr(value) for name, value in checked.fields.items()})


def make_op(mnemonic: str, /, **fields: int) -> InstructionOp:
    """An instruction op; fields left out are zero (as `make_instruction`, which checks them once)."""
    return _op_of_checked(make_instruction(mnemonic, **fields))


# --------------------------------------------------------------------------------------
# Program-level data: the constant image and the io table
# --------------------------------------------------------------------------------------


@irdl_op_definition
class ConstantsOp(IRDLOperation):
    """The DDR constant image (loaded at DDR address 0): `isa.constants dense<"0x..."> : tensor<Nxi8>`."""

    name = "isa.constants"
    value = prop_def(DenseIntOrFPElementsAttr)

    def __init__(self, data: bytes):
        attr = DenseIntOrFPElementsAttr(TensorType(IntegerType(8), [len(data)]), BytesAttr(bytes(data)))
        super().__init__(properties={"value": attr})

    def data(self) -> bytes:
        return bytes(self.value.data.data)

    def verify_(self) -> None:
        element = self.value.get_element_type()
        if not (isinstance(element, IntegerType) and element.width.data == 8) or len(self.value.get_shape()) != 1:
            raise VerifyException(f"isa.constants: the image must be a tensor<Nxi8>, got {self.value.type}")
        size = len(self.value.data.data)
        if size != self.value.get_shape()[0]:
            raise VerifyException(f"isa.constants: {size} bytes of data for {self.value.type}")
        target = module_target(self)
        if target is not None and size > target.memory.ddr_bytes:
            raise VerifyException(f"isa.constants: {size} bytes do not fit the {target.memory.ddr_bytes}-byte DDR of {target.name}")

    @classmethod
    def parse(cls, parser: Parser) -> ConstantsOp:
        attr = parser.parse_attribute()
        if not isinstance(attr, DenseIntOrFPElementsAttr):
            parser.raise_error("isa.constants expects dense<\"0x...\"> : tensor<Nxi8>")
        op = cls.build(properties={"value": attr})
        op.attributes.update(parser.parse_optional_attr_dict())
        return op

    def print(self, printer: Printer) -> None:
        # Always hex: the builtin printer would unpack millions of weights one by one.
        raw = self.data()
        printer.print_string(f' dense<"0x{raw.hex().upper()}"> : ' if raw else " dense<> : ")
        printer.print_attribute(self.value.type)


IO_DIRECTIONS = ("input", "output")
IO_DTYPES = tuple(dtypes.IO_DTYPES)  # int8, int16, int32: codes; the others values (semantics/dtypes.py)
IO_LAYOUTS = ("RAW", "NHWC", "NCHW")


@irdl_op_definition
class IoOp(IRDLOperation):
    """One program input or output as the host sees it in DDR (an entry of the binary's io table)."""

    name = "isa.io"
    tensor_name = prop_def(StringAttr, prop_name="name")
    direction = prop_def(StringAttr)
    dtype = prop_def(StringAttr)
    layout = prop_def(StringAttr)
    shape = prop_def(DenseArrayBase[I64])
    scale = prop_def(FloatAttr)
    zero_point = prop_def(IntegerAttr[I64])
    ddr_addr = prop_def(IntegerAttr[I64])
    irdl_options = (ParsePropInAttrDict(),)
    assembly_format = "attr-dict"

    def __init__(self, name: str, direction: str, shape, dtype: str, scale: float, zero_point: int, ddr_addr: int, layout: str):
        super().__init__(
            properties={
                "name": StringAttr(name),
                "direction": StringAttr(direction),
                "dtype": StringAttr(dtype),
                "layout": StringAttr(layout),
                "shape": DenseArrayBase.from_list(i64, [int(d) for d in shape]),
                "scale": FloatAttr(float(scale), f64),
                "zero_point": IntegerAttr(int(zero_point), i64),
                "ddr_addr": IntegerAttr(int(ddr_addr), i64),
            }
        )

    def shape_tuple(self) -> tuple[int, ...]:
        return tuple(int(d) for d in self.shape.get_values())

    def verify_(self) -> None:
        for prop, allowed in (("direction", IO_DIRECTIONS), ("dtype", IO_DTYPES), ("layout", IO_LAYOUTS)):
            value = self.properties[prop].data  # type: ignore[attr-defined]
            if value not in allowed:
                raise VerifyException(f"isa.io: {prop} '{value}' is not one of {', '.join(allowed)}")
        scale = self.scale.value.data
        if not (np.isfinite(scale) and scale > 0):
            raise VerifyException(f"isa.io: scale {scale} is not positive and finite")
        if any(d < 0 for d in self.shape_tuple()) or len(self.shape_tuple()) > 8:
            raise VerifyException(f"isa.io: shape {list(self.shape_tuple())} must have at most 8 non-negative dimensions")
        address = self.ddr_addr.value.data
        if not 0 <= address < (1 << 32):
            raise VerifyException(f"isa.io: DDR address {address} does not fit 32 bits")
        target = module_target(self)
        if target is not None:
            size = int(np.prod(self.shape_tuple(), dtype=np.int64)) * dtypes.IO_DTYPES[self.dtype.data].itemsize
            if address + size > target.memory.ddr_bytes:
                raise VerifyException(
                    f"isa.io '{self.tensor_name.data}': bytes [{address}, {address + size}) leave the DDR of {target.name}"
                )


@irdl_op_definition
class HostSegmentOp(IRDLOperation):
    """A host segment (binary section kind 7, docs/binary-format.md): where a `SYNC halt=0`
    posts `token`, the accelerator stops, the host reads the segment's `input` tensors from
    DDR, runs the function (fixed and nn ops, xnpu's interpreters), writes its `output`
    tensors to DDR, and the accelerator resumes. Its region holds the `isa.io` entries of the
    tensors (inputs first, in argument order, then outputs in result order) and one `func.func`.
    """

    name = "isa.host_segment"
    token = prop_def(IntegerAttr[I64])
    body = region_def("single_block")
    traits = traits_def(NoTerminator())
    assembly_format = "$token attr-dict-with-keyword $body"

    def __init__(self, token: int, tensors, function: Operation):
        super().__init__(properties={"token": IntegerAttr(token, i64)}, regions=[Region(Block([*tensors, function]))])

    def tensors(self, direction: str) -> list[IoOp]:
        return [op for op in self.body.block.ops if isinstance(op, IoOp) and op.direction.data == direction]

    def function(self) -> func.FuncOp:
        functions = [op for op in self.body.block.ops if isinstance(op, func.FuncOp)]
        if len(functions) != 1:
            raise VerifyException(f"isa.host_segment {self.token.value.data}: needs one func.func, has {len(functions)}")
        return functions[0]

    def verify_(self) -> None:
        token = self.token.value.data
        if not 0 <= token < 1 << 16:
            raise VerifyException(f"isa.host_segment: token {token} does not fit the 16-bit SYNC field")
        where = f"isa.host_segment {token}"
        function = self.function()
        for op in self.body.block.ops:
            if not isinstance(op, IoOp | func.FuncOp):
                raise VerifyException(f"{where}: holds only isa.io and one func.func, not '{op.name}'")
        for direction, types in (("input", function.function_type.inputs.data),
                                 ("output", function.function_type.outputs.data)):
            tensors = self.tensors(direction)
            described = [(t.shape_tuple(), t.dtype.data) for t in tensors]
            wanted = [(tuple(t.get_shape()), dtypes.io_dtype(t.get_element_type())) for t in types]
            if described != wanted:
                raise VerifyException(f"{where}: its {direction} tensors {described} do not match the function's {wanted}")


ISA = Dialect("isa", [ConstantsOp, IoOp, HostSegmentOp, *INSTRUCTION_OPS.values()], [])


def program_ops(module: ModuleOp) -> list[InstructionOp]:
    return [op for op in module.ops if isinstance(op, InstructionOp)]
