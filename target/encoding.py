"""Instruction words of the xnpu accelerator: encode and decode, driven by field tables.

Every instruction is one 256-bit word, stored as 32 little-endian bytes (bit 0 of the word is
bit 0 of byte 0). Bits [0, 8) always hold the opcode; the opcode selects one of the formats
below, and each format is ONE table of (name, bit offset, width, signedness). docs/isa.md
documents exactly these tables; test/python/target/test_isa_doc.py parses the markdown
tables out of the doc and checks they equal `FORMATS`, so the two cannot drift.

Bits not covered by a format's table are reserved: encoding writes them as zero and decoding
rejects a word where any is set, so that `encode(decode(word)) == word` for every word that
decodes at all. Fields whose values are an enumeration (layouts, pool kinds, ...) are
checked against `ENUMS` as well as against their width.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from xnpu.core.errors import XnpuError

WORD_BITS = 256
WORD_BYTES = WORD_BITS // 8


@dataclass(frozen=True)
class Field:
    name: str
    offset: int
    width: int
    signed: bool = False

    @property
    def minimum(self) -> int:
        return -(1 << (self.width - 1)) if self.signed else 0

    @property
    def maximum(self) -> int:
        return (1 << (self.width - 1)) - 1 if self.signed else (1 << self.width) - 1


@dataclass(frozen=True)
class Format:
    name: str
    fields: tuple[Field, ...]

    def field(self, name: str) -> Field:
        for candidate in self.fields:
            if candidate.name == name:
                return candidate
        raise KeyError(name)

    @property
    def used_mask(self) -> int:
        mask = 0
        for f in self.fields:
            mask |= ((1 << f.width) - 1) << f.offset
        return mask


def _format(name: str, *fields: tuple) -> Format:
    table = tuple(Field(*spec) for spec in fields)
    taken = 0
    for f in table:
        bits = ((1 << f.width) - 1) << f.offset
        if f.width <= 0 or f.offset + f.width > WORD_BITS or taken & bits:
            raise AssertionError(f"format {name}: field {f.name} overlaps or leaves the word")
        taken |= bits
    return Format(name, table)


# The dependency fields of docs/isa.md section 3, at the same bits of every format but SYNC:
# `wait` takes one token from the other queue before the instruction starts, `signal` gives
# the other queue one when it completes.
DEPENDENCY_FIELDS = (("wait", 252, 1), ("signal", 253, 1))
DEPENDENCY_NAMES = tuple(name for name, _, _ in DEPENDENCY_FIELDS)

# SRAM addresses are 24-bit byte addresses (targets have at most 16 MiB of SRAM); DDR
# addresses and strides are 32-bit byte values. Multipliers are the 15-bit mantissas M in
# {0} u [2^14, 2^15) of docs/fixed-point.md (R5); shifts are signed 7-bit values covering
# R6's [-16, 62] (positive = right).
FORMATS: dict[str, Format] = {
    "SYNC": _format(
        "SYNC",
        ("opcode", 0, 8),
        ("halt", 8, 1),
        ("token", 16, 16),
    ),
    "DMA": _format(
        "DMA",
        ("opcode", 0, 8),
        ("layout", 8, 4),
        ("elem_log2", 12, 2),
        ("sram_addr", 16, 24),
        ("ddr_addr", 40, 32),
        ("d0", 72, 16),
        ("d1", 88, 16),
        ("d2", 104, 16),
        ("d3", 120, 16),
        ("ddr_row_stride", 136, 32),
        ("ddr_pixel_stride", 168, 24),
        ("sram_row_stride", 192, 24),
        ("codebook_bits", 216, 4),
        ("dictionary_addr", 220, 32),
        *DEPENDENCY_FIELDS,
    ),
    "CONV": _format(
        "CONV",
        ("opcode", 0, 8),
        ("depthwise", 8, 1),
        ("relu", 9, 1),
        ("per_channel", 10, 1),
        ("bias", 11, 1),
        ("in_addr", 16, 24),
        ("weight_addr", 40, 24),
        ("bias_addr", 64, 24),
        ("rescale_addr", 88, 24),
        ("out_addr", 112, 24),
        ("in_h", 136, 16),
        ("in_w", 152, 16),
        ("in_c", 168, 16),
        ("out_c", 184, 16),
        ("kernel_h", 200, 4),
        ("kernel_w", 204, 4),
        ("stride_h", 208, 3),
        ("stride_w", 211, 3),
        ("dilation_h", 214, 3),
        ("dilation_w", 217, 3),
        ("pad_top", 220, 4),
        ("pad_left", 224, 4),
        ("pad_bottom", 228, 4),
        ("pad_right", 232, 4),
        ("out_pixel_stride", 236, 16),
        *DEPENDENCY_FIELDS,
    ),
    "ELTWISE": _format(
        "ELTWISE",
        ("opcode", 0, 8),
        ("op", 8, 2),
        ("b_broadcast", 10, 2),
        ("relu", 12, 1),
        ("stage16", 13, 1),
        ("a_addr", 16, 24),
        ("b_addr", 40, 24),
        ("out_addr", 64, 24),
        ("h", 88, 16),
        ("w", 104, 16),
        ("c", 120, 16),
        ("a_multiplier", 136, 15),
        ("a_shift", 151, 7, True),
        ("b_multiplier", 158, 15),
        ("b_shift", 173, 7, True),
        ("out_multiplier", 180, 15),
        ("out_shift", 195, 7, True),
        ("pre_shift", 202, 4),
        *DEPENDENCY_FIELDS,
    ),
    "POOL": _format(
        "POOL",
        ("opcode", 0, 8),
        ("kind", 8, 2),
        ("per_position", 10, 1),
        ("in_addr", 16, 24),
        ("out_addr", 40, 24),
        ("rescale_addr", 64, 24),
        ("in_h", 88, 16),
        ("in_w", 104, 16),
        ("c", 120, 16),
        ("out_h", 136, 16),
        ("out_w", 152, 16),
        ("kernel_h", 168, 8),
        ("kernel_w", 176, 8),
        ("stride_h", 184, 4),
        ("stride_w", 188, 4),
        ("pad_top", 192, 4),
        ("pad_left", 196, 4),
        ("pad_bottom", 200, 4),
        ("pad_right", 204, 4),
        ("out_multiplier", 208, 15),
        ("out_shift", 223, 7, True),
        *DEPENDENCY_FIELDS,
    ),
    "TABLE": _format(
        "TABLE",
        ("opcode", 0, 8),
        ("in_addr", 16, 24),
        ("out_addr", 40, 24),
        ("table_addr", 64, 24),
        ("h", 88, 16),
        ("w", 104, 16),
        ("c", 120, 16),
        *DEPENDENCY_FIELDS,
    ),
    "CLAMP": _format(
        "CLAMP",
        ("opcode", 0, 8),
        ("in_addr", 16, 24),
        ("out_addr", 40, 24),
        ("h", 64, 16),
        ("w", 80, 16),
        ("c", 96, 16),
        ("min", 112, 16, True),
        ("max", 128, 16, True),
        *DEPENDENCY_FIELDS,
    ),
}

# Mnemonic -> (opcode value, format). Opcode 0 is deliberately unassigned so that a zeroed
# word never decodes as an instruction.
OPCODES: dict[str, tuple[int, str]] = {
    "SYNC": (0x01, "SYNC"),
    "LOAD": (0x02, "DMA"),
    "STORE": (0x03, "DMA"),
    "CONV": (0x10, "CONV"),
    "ELTWISE": (0x11, "ELTWISE"),
    "POOL": (0x12, "POOL"),
    "TABLE": (0x13, "TABLE"),
    "CLAMP": (0x14, "CLAMP"),
}
MNEMONICS: dict[int, str] = {code: name for name, (code, _) in OPCODES.items()}

# (format, field) -> {value: meaning}; any other value is rejected.
ENUMS: dict[tuple[str, str], dict[int, str]] = {
    ("DMA", "layout"): {0: "RAW", 1: "NHWC", 2: "NCHW", 3: "OHWI", 4: "DW"},
    ("DMA", "elem_log2"): {0: "1 byte", 1: "2 bytes", 2: "4 bytes"},
    ("ELTWISE", "op"): {0: "add", 1: "sub", 2: "mul"},
    ("ELTWISE", "b_broadcast"): {0: "none", 1: "channel", 2: "scalar"},
    ("POOL", "kind"): {0: "max", 1: "avg", 2: "global_avg"},
}
DMA_LAYOUTS = {name: value for value, name in ENUMS[("DMA", "layout")].items()}
ELTWISE_OPS = {name: value for value, name in ENUMS[("ELTWISE", "op")].items()}
BROADCASTS = {name: value for value, name in ENUMS[("ELTWISE", "b_broadcast")].items()}
POOL_KINDS = {name: value for value, name in ENUMS[("POOL", "kind")].items()}


@dataclass
class Instruction:
    """One decoded instruction: its mnemonic and every field of its format but the opcode."""

    op: str
    fields: dict[str, int] = field(default_factory=dict)

    @property
    def format(self) -> Format:
        return FORMATS[OPCODES[self.op][1]]

    def __getitem__(self, name: str) -> int:
        return self.fields[name]

    def __str__(self) -> str:
        args = " ".join(f"{name}={value}" for name, value in self.fields.items())
        return f"{self.op} {args}".rstrip()


def make_instruction(op: str, /, **fields: int) -> Instruction:
    """An instruction with every field of its format present; fields left out are zero."""
    if op not in OPCODES:
        raise XnpuError(f"unknown instruction '{op}' (known: {', '.join(OPCODES)})")
    names = FIELD_NAMES[op]
    if not fields.keys() <= _FIELD_SETS[op]:
        unknown = sorted(set(fields) - set(names))
        raise XnpuError(f"{op} has no field '{unknown[0]}' (fields: {', '.join(names)})")
    instruction = Instruction(op, {name: int(fields.get(name, 0)) for name in names})
    _check(instruction)
    return instruction


def _limits(fmt: Format) -> tuple[tuple[str, int, int, dict[int, str] | None], ...]:
    return tuple((f.name, f.minimum, f.maximum, ENUMS.get((fmt.name, f.name))) for f in fmt.fields if f.name != "opcode")


# per mnemonic, its fields but the opcode in format order, and each one's (name, minimum,
# maximum, allowed values): every instruction the compiler makes, prints or encodes is checked,
# so the check reads them from here instead of deriving them per field per call
FIELD_NAMES: dict[str, tuple[str, ...]] = {
    op: tuple(f.name for f in FORMATS[fmt].fields if f.name != "opcode") for op, (_, fmt) in OPCODES.items()}
_FIELD_SETS: dict[str, frozenset[str]] = {op: frozenset(names) for op, names in FIELD_NAMES.items()}
_LIMITS = {op: _limits(FORMATS[fmt]) for op, (_, fmt) in OPCODES.items()}


def _check(instruction: Instruction) -> None:
    """XnpuError naming the first field (in format order) that is missing, not an integer, out of
    its range or not one of its enumeration's values, or a field the format lacks."""
    fields = instruction.fields
    limits = _LIMITS[instruction.op]
    if len(fields) == len(limits):  # the common case: every field present and valid, none extra
        try:
            for name, minimum, maximum, allowed in limits:
                value = fields[name]
                if type(value) is not int or not minimum <= value <= maximum or (allowed is not None and value not in allowed):
                    break
            else:
                return
        except KeyError:
            pass
    _explain(instruction)


def _explain(instruction: Instruction) -> None:
    fmt = instruction.format
    for f in fmt.fields:
        if f.name == "opcode":
            continue
        if f.name not in instruction.fields:
            raise XnpuError(f"{instruction.op}: field '{f.name}' is missing")
        value = instruction.fields[f.name]
        if not isinstance(value, int) or isinstance(value, bool):
            raise XnpuError(f"{instruction.op}.{f.name} = {value!r} is not an integer")
        if not f.minimum <= value <= f.maximum:
            raise XnpuError(
                f"{instruction.op}.{f.name} = {value} does not fit its {f.width}-bit "
                f"{'signed' if f.signed else 'unsigned'} field [{f.minimum}, {f.maximum}]"
            )
        allowed = ENUMS.get((fmt.name, f.name))
        if allowed is not None and value not in allowed:
            choices = ", ".join(f"{v}={meaning}" for v, meaning in allowed.items())
            raise XnpuError(f"{instruction.op}.{f.name} = {value} is not one of {choices}")
    extra = sorted(set(instruction.fields) - {f.name for f in fmt.fields})
    if extra:
        raise XnpuError(f"{instruction.op} has no field '{extra[0]}'")


def encode_word(instruction: Instruction) -> int:
    """The instruction as a 256-bit integer."""
    if instruction.op not in OPCODES:
        raise XnpuError(f"unknown instruction '{instruction.op}' (known: {', '.join(OPCODES)})")
    _check(instruction)
    code, _ = OPCODES[instruction.op]
    word = 0
    for f in instruction.format.fields:
        value = code if f.name == "opcode" else instruction.fields[f.name]
        word |= (value & ((1 << f.width) - 1)) << f.offset
    return word


def decode_word(word: int) -> Instruction:
    """The instruction a 256-bit integer holds; XnpuError for anything that is not one."""
    if not 0 <= word < (1 << WORD_BITS):
        raise XnpuError(f"instruction word {word:#x} is not a {WORD_BITS}-bit value")
    code = word & 0xFF
    if code not in MNEMONICS:
        raise XnpuError(f"unknown opcode {code:#04x}")
    op = MNEMONICS[code]
    fmt = FORMATS[OPCODES[op][1]]
    reserved = word & ~fmt.used_mask & ((1 << WORD_BITS) - 1)
    if reserved:
        raise XnpuError(f"{op}: reserved bits set (mask {reserved:#x})")
    fields: dict[str, int] = {}
    for f in fmt.fields:
        if f.name == "opcode":
            continue
        value = (word >> f.offset) & ((1 << f.width) - 1)
        if f.signed and value >> (f.width - 1):
            value -= 1 << f.width
        fields[f.name] = value
    instruction = Instruction(op, fields)
    _check(instruction)
    return instruction


def encode(instruction: Instruction) -> bytes:
    """The instruction as its 32-byte little-endian word."""
    return encode_word(instruction).to_bytes(WORD_BYTES, "little")


def decode(data: bytes) -> Instruction:
    if len(data) != WORD_BYTES:
        raise XnpuError(f"an instruction word is {WORD_BYTES} bytes, got {len(data)}")
    return decode_word(int.from_bytes(data, "little"))


def encode_program(instructions: list[Instruction]) -> bytes:
    return b"".join(encode(instruction) for instruction in instructions)


def decode_program(data: bytes) -> list[Instruction]:
    if len(data) % WORD_BYTES:
        raise XnpuError(f"instruction stream of {len(data)} bytes is not a whole number of {WORD_BYTES}-byte words")
    instructions = []
    for index in range(len(data) // WORD_BYTES):
        try:
            instructions.append(decode(data[index * WORD_BYTES : (index + 1) * WORD_BYTES]))
        except XnpuError as error:
            raise XnpuError(f"instruction {index}: {error}") from None
    return instructions
