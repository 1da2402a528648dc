"""The xnpu binary container: header, section table, sections (docs/binary-format.md).

`Binary` holds a compiled program: decoded instructions, the constant image that is loaded at
DDR address 0 (codebook-compressed weights in it as the decoding LOADs read them), the
input/output table, the provenance (instruction -> ONNX node names) and
the host segments (section kind 7: ops the target cannot run, run by the
host where a SYNC posts their token) and the ONNX models those segments run through
onnxruntime (section kind 8, format version 5, with the io dtypes of values that are not
float32: int64, bool, ...).
`to_bytes()` writes the container deterministically and `from_bytes()` reads it back, so
encode -> decode -> encode is byte-identical. Reading checks everything it reads; a damaged
or foreign file is one XnpuError line ("binary: ..."), never another exception.
"""

from __future__ import annotations

import math
import struct
import zlib
from dataclasses import dataclass, field

from xnpu.core.errors import XnpuError
from xnpu.core.files import read_input_file
from xnpu.target.encoding import WORD_BYTES, Instruction, decode_program, encode_program

MAGIC = b"XNPU"
# Version 4: instructions carry dependency fields and run on two queues (docs/isa.md section 3);
# section 7 is optional. Versions 1-3 ran strictly in order: their programs have no tokens, so
# under the queue model they would race; a reader refuses them (recompile). Section kind 6
# (weights decoded into DDR before the run) is gone: LOADs decode compressed weights.
FORMAT_VERSION = 4
# Version 5 adds section kind 8 (ONNX models) and io dtypes 5-14; a program without them is
# still written as version 4, so version-4 readers read every program that does not need them.
ONNX_FORMAT_VERSION = 5
SUPPORTED_VERSIONS = (FORMAT_VERSION, ONNX_FORMAT_VERSION)
IN_ORDER_VERSIONS = (1, 2, 3)
HEADER = struct.Struct("<4sHHIIIIII")  # magic, version, header size, checksum, target id,
HEADER_SIZE = HEADER.size  # flags, section count, total size, reserved
CHECKSUM_OFFSET = 8
CHECKSUMMED_FROM = 12  # the checksum covers every byte after its own field
SECTION_ENTRY = struct.Struct("<IIII")  # kind, offset, size, alignment
MAX_ALIGNMENT = 4096

# Section kinds, in the order the writer emits them, with the alignment it uses.
SECTION_INSTRUCTIONS = 1
SECTION_CONSTANTS = 2
SECTION_STRINGS = 3
SECTION_IO = 4
SECTION_PROVENANCE = 5
RETIRED_SECTIONS = {6: "compressed-weights"}  # versions 2-3: weights decoded into DDR before the run
SECTION_HOST_SEGMENTS = 7  # ops run by the host between accelerator segments
SECTION_ONNX_MODELS = 8  # the ONNX models host segments run through onnxruntime; valid from version 5
SECTION_NAMES = {
    SECTION_INSTRUCTIONS: "instructions",
    SECTION_CONSTANTS: "constants",
    SECTION_STRINGS: "strings",
    SECTION_IO: "io",
    SECTION_PROVENANCE: "provenance",
    SECTION_HOST_SEGMENTS: "host-segments",
    SECTION_ONNX_MODELS: "onnx-models",
}
WRITE_ALIGNMENT = {
    SECTION_INSTRUCTIONS: WORD_BYTES,
    SECTION_CONSTANTS: 64,
    SECTION_STRINGS: 4,
    SECTION_IO: 8,
    SECTION_PROVENANCE: 4,
    SECTION_HOST_SEGMENTS: 4,
    SECTION_ONNX_MODELS: 4,
}
REQUIRED_SECTIONS = (SECTION_INSTRUCTIONS, SECTION_STRINGS, SECTION_IO)

# int8, int16, int32 are codes (real value = code * scale), the others values (semantics/dtypes.py)
DTYPES = {0: "int8", 1: "int16", 2: "int32", 3: "float32", 4: "uint8", 5: "int64", 6: "bool", 7: "float64",
          8: "float16", 9: "sint8", 10: "sint16", 11: "sint32", 12: "uint16", 13: "uint32", 14: "uint64"}
FIRST_VALUE_DTYPE_CODE = 5  # codes 5.. are valid from version 5
DTYPE_CODES = {name: code for code, name in DTYPES.items()}
LAYOUTS = {0: "RAW", 1: "NHWC", 2: "NCHW"}
LAYOUT_CODES = {name: code for code, name in LAYOUTS.items()}
DIRECTIONS = {0: "input", 1: "output"}
DIRECTION_CODES = {name: code for code, name in DIRECTIONS.items()}
MAX_RANK = 8
IO_ENTRY = struct.Struct("<BBBBIdiI")  # direction, dtype, layout, rank, name, scale, zero point, DDR address
PROVENANCE_ENTRY = struct.Struct("<II")  # instruction index, name
HOST_ENTRY = struct.Struct("<IIII")  # token, input count, output count, body (string offset)
MAX_TOKEN = 0xFFFF  # the SYNC token field is 16 bits
U32 = struct.Struct("<I")


@dataclass
class IoTensor:
    """One program input or output as the host sees it in DDR."""

    name: str
    direction: str  # "input" | "output"
    shape: tuple[int, ...]
    dtype: str  # "int8" | "int16" | "int32" | "float32" | "uint8"
    scale: float  # real value = (q - zero_point) * scale
    zero_point: int
    ddr_addr: int
    layout: str  # "RAW" (row-major in `shape` order) | "NHWC" | "NCHW"


@dataclass
class HostSegment:
    """Ops the target cannot run, run by the host where a `SYNC halt=0` posts `token`: it reads
    `inputs` from DDR, runs `body` (generic MLIR of one func.func) and writes `outputs`."""

    token: int
    inputs: list[IoTensor]
    outputs: list[IoTensor]
    body: str


@dataclass
class Binary:
    target_id: int
    instructions: list[Instruction]
    constants: bytes = b""  # the image DDR holds from address 0
    io: list[IoTensor] = field(default_factory=list)
    provenance: dict[int, tuple[str, ...]] = field(default_factory=dict)
    host_segments: list[HostSegment] = field(default_factory=list)  # sorted by token
    onnx_models: list[bytes] = field(default_factory=list)  # serialized ONNX models the segments run (kind 8)

    def to_bytes(self) -> bytes:
        return _write(self)

    @staticmethod
    def from_bytes(data: bytes) -> Binary:
        return _read(bytes(data))

    @staticmethod
    def from_file(path) -> Binary:
        """The binary in file `path` (a regular file of bounded size); errors name the file."""

        data = read_input_file(path)
        try:
            return Binary.from_bytes(data)
        except XnpuError as error:
            raise XnpuError(f"{path}: {error}") from None

    def check_target(self, target) -> None:
        """XnpuError unless this program was built for `target` and every instruction is valid on it."""
        if self.target_id != target.id:
            raise XnpuError(f"binary: built for target id {self.target_id}, but {target.name} has id {target.id}")
        for index, instruction in enumerate(self.instructions):
            try:
                target.check_instruction(instruction)
            except XnpuError as error:
                raise XnpuError(f"binary: instruction {index}: {error}") from None

    def inputs(self) -> list[IoTensor]:
        return [t for t in self.io if t.direction == "input"]

    def outputs(self) -> list[IoTensor]:
        return [t for t in self.io if t.direction == "output"]

    def all_io(self) -> list[IoTensor]:
        """Every tensor the host exchanges with DDR: the program's and its host segments'."""
        return [*self.io, *(t for segment in self.host_segments for t in (*segment.inputs, *segment.outputs))]


# --------------------------------------------------------------------------------------
# Writing
# --------------------------------------------------------------------------------------


class _Strings:
    def __init__(self) -> None:
        self.data = bytearray()
        self.offsets: dict[str, int] = {}

    def add(self, text: str) -> int:
        if not isinstance(text, str):
            raise XnpuError(f"binary: string {text!r} is not text")
        if "\0" in text:
            raise XnpuError(f"binary: string {text!r} contains a NUL character")
        if text not in self.offsets:
            self.offsets[text] = len(self.data)
            self.data += text.encode("utf-8") + b"\0"
        return self.offsets[text]


def _u32(value: int, what: str) -> int:
    if not isinstance(value, int) or not 0 <= value <= 0xFFFF_FFFF:
        raise XnpuError(f"binary: {what} = {value!r} does not fit 32 unsigned bits")
    return value


def _io_bytes(io: list[IoTensor], strings: _Strings) -> bytes:
    out = bytearray(U32.pack(len(io)))
    for tensor in io:
        out += _io_entry(tensor, strings, f"io tensor '{tensor.name}'")
    return bytes(out)


def _io_entry(tensor: IoTensor, strings: _Strings, where: str) -> bytes:
    """One entry of the io table (section 4), as also in a host segment (section 7)."""
    out = bytearray()
    if tensor.direction not in DIRECTION_CODES:
        raise XnpuError(f"binary: {where}: direction '{tensor.direction}' is not input or output")
    if tensor.dtype not in DTYPE_CODES:
        raise XnpuError(f"binary: {where}: dtype '{tensor.dtype}' is not one of {', '.join(DTYPE_CODES)}")
    if tensor.layout not in LAYOUT_CODES:
        raise XnpuError(f"binary: {where}: layout '{tensor.layout}' is not one of {', '.join(LAYOUT_CODES)}")
    if len(tensor.shape) > MAX_RANK:
        raise XnpuError(f"binary: {where}: rank {len(tensor.shape)} exceeds {MAX_RANK}")
    if not (isinstance(tensor.scale, (int, float)) and math.isfinite(tensor.scale) and tensor.scale > 0):
        raise XnpuError(f"binary: {where}: scale {tensor.scale!r} is not positive and finite")
    if not isinstance(tensor.zero_point, int) or not -(1 << 31) <= tensor.zero_point < (1 << 31):
        raise XnpuError(f"binary: {where}: zero point {tensor.zero_point!r} does not fit int32")
    out += IO_ENTRY.pack(
        DIRECTION_CODES[tensor.direction],
        DTYPE_CODES[tensor.dtype],
        LAYOUT_CODES[tensor.layout],
        len(tensor.shape),
        strings.add(tensor.name),
        float(tensor.scale),
        tensor.zero_point,
        _u32(tensor.ddr_addr, f"{where} DDR address"),
    )
    for dim in tensor.shape:
        out += U32.pack(_u32(dim, f"{where} dimension"))
    return bytes(out)


def _host_bytes(binary: Binary, strings: _Strings) -> bytes:
    out = bytearray(U32.pack(len(binary.host_segments)))
    previous = -1
    for segment in binary.host_segments:
        where = f"host segment {segment.token}"
        if not isinstance(segment.token, int) or not previous < segment.token <= MAX_TOKEN:
            raise _fail(f"{where}: tokens must increase and fit 16 bits (previous {previous})")
        previous = segment.token
        out += HOST_ENTRY.pack(segment.token, len(segment.inputs), len(segment.outputs), strings.add(segment.body))
        for direction, tensors in (("input", segment.inputs), ("output", segment.outputs)):
            for tensor in tensors:
                if tensor.direction != direction:
                    raise _fail(f"{where}: tensor '{tensor.name}' among its {direction}s has direction {tensor.direction}")
                out += _io_entry(tensor, strings, f"{where} tensor '{tensor.name}'")
    return bytes(out)


def _provenance_bytes(binary: Binary, strings: _Strings) -> bytes:
    entries = bytearray()
    count = 0
    for index in sorted(binary.provenance):
        if not isinstance(index, int) or not 0 <= index < len(binary.instructions):
            raise XnpuError(f"binary: provenance names instruction {index!r}, but there are {len(binary.instructions)}")
        names = binary.provenance[index]
        if isinstance(names, str):
            raise XnpuError(f"binary: provenance of instruction {index} must be a tuple of names, not a string")
        for name in names:
            entries += PROVENANCE_ENTRY.pack(index, strings.add(name))
            count += 1
    return U32.pack(count) + bytes(entries)


def _onnx_models_bytes(models: list[bytes]) -> bytes:
    out = bytearray(U32.pack(len(models)))
    for index, model in enumerate(models):
        if not isinstance(model, bytes | bytearray) or not model:
            raise XnpuError(f"binary: ONNX model {index} is not a non-empty byte string")
        out += U32.pack(_u32(len(model), f"ONNX model {index} size")) + bytes(model)
        out += bytes(-len(out) % 4)
    return bytes(out)


def _has_value_dtypes(binary: Binary) -> bool:
    """Whether an io entry needs a dtype code of version 5."""
    return any(DTYPE_CODES.get(tensor.dtype, 0) >= FIRST_VALUE_DTYPE_CODE for tensor in binary.all_io())


def _align(value: int, alignment: int) -> int:
    return -(-value // alignment) * alignment


def _write(binary: Binary) -> bytes:
    _u32(binary.target_id, "target id")
    strings = _Strings()
    # Strings are added in a fixed order (io names, then provenance by instruction), so the
    # same Binary always gives the same bytes.
    io = _io_bytes(binary.io, strings)
    provenance = _provenance_bytes(binary, strings)
    host = _host_bytes(binary, strings) if binary.host_segments else b""
    if binary.onnx_models and not binary.host_segments:
        raise XnpuError("binary: ONNX models without a host segment to run them")
    payloads = {
        SECTION_INSTRUCTIONS: encode_program(binary.instructions),
        SECTION_CONSTANTS: bytes(binary.constants),
        SECTION_STRINGS: bytes(strings.data),
        SECTION_IO: io,
        SECTION_PROVENANCE: provenance,
    }
    if binary.host_segments:
        payloads[SECTION_HOST_SEGMENTS] = host
    if binary.onnx_models:
        payloads[SECTION_ONNX_MODELS] = _onnx_models_bytes(binary.onnx_models)
    version = ONNX_FORMAT_VERSION if binary.onnx_models or _has_value_dtypes(binary) else FORMAT_VERSION
    table = bytearray()
    body = bytearray()
    position = HEADER_SIZE + SECTION_ENTRY.size * len(payloads)
    for kind, payload in payloads.items():
        alignment = WRITE_ALIGNMENT[kind]
        start = _align(position, alignment)
        body += bytes(start - position) + payload
        table += SECTION_ENTRY.pack(kind, start, len(payload), alignment)
        position = start + len(payload)
    total = _u32(position, "total size")
    header = HEADER.pack(MAGIC, version, HEADER_SIZE, 0, binary.target_id, 0, len(payloads), total, 0)
    image = bytearray(header + table + body)
    struct.pack_into("<I", image, CHECKSUM_OFFSET, zlib.crc32(image[CHECKSUMMED_FROM:]))
    return bytes(image)


# --------------------------------------------------------------------------------------
# Reading
# --------------------------------------------------------------------------------------


def _fail(message: str) -> XnpuError:
    return XnpuError(f"binary: {message}")


class _Cursor:
    """Bounds-checked little-endian reads from one section."""

    def __init__(self, data: bytes, section: str):
        self.data = data
        self.section = section
        self.position = 0

    def take(self, layout: struct.Struct, what: str) -> tuple:
        end = self.position + layout.size
        if end > len(self.data):
            raise _fail(f"{self.section} section ends inside {what} (at byte {self.position} of {len(self.data)})")
        values = layout.unpack_from(self.data, self.position)
        self.position = end
        return values

    def finish(self) -> None:
        if self.position != len(self.data):
            raise _fail(f"{self.section} section has {len(self.data) - self.position} unexpected trailing bytes")


def _string(strings: bytes, offset: int, what: str) -> str:
    if offset >= len(strings):
        raise _fail(f"{what} points at string offset {offset}, past the {len(strings)}-byte string table")
    end = strings.find(b"\0", offset)
    if end < 0:
        raise _fail(f"{what}: string at offset {offset} is not NUL-terminated")
    try:
        return strings[offset:end].decode("utf-8")
    except UnicodeDecodeError:
        raise _fail(f"{what}: string at offset {offset} is not valid UTF-8") from None


def _read_header(data: bytes) -> tuple[int, int, int]:
    if len(data) < HEADER_SIZE:
        raise _fail(f"truncated: {len(data)} bytes is shorter than the {HEADER_SIZE}-byte header")
    magic, version, header_size, checksum, target_id, flags, count, total, reserved = HEADER.unpack_from(data)
    if magic != MAGIC:
        raise _fail(f"bad magic {magic!r}, expected {MAGIC!r}: not an xnpu binary")
    if version in IN_ORDER_VERSIONS:
        raise _fail(f"format version {version} is a strictly in-order program without dependency tokens; this "
                    f"reader runs versions {FORMAT_VERSION} and {ONNX_FORMAT_VERSION} (two queues, docs/isa.md section 3): recompile the model")
    if version not in SUPPORTED_VERSIONS:
        raise _fail(f"format version {version} is not supported (this reader reads versions "
                    f"{', '.join(map(str, SUPPORTED_VERSIONS))})")
    if total > len(data):
        raise _fail(f"truncated: the header says {total} bytes, the file has {len(data)}")
    if total < len(data):
        raise _fail(f"{len(data) - total} trailing bytes after the {total} bytes the header declares")
    actual = zlib.crc32(data[CHECKSUMMED_FROM:])
    if actual != checksum:
        raise _fail(f"checksum mismatch: header has {checksum:#010x}, contents give {actual:#010x} (corrupt file)")
    if header_size != HEADER_SIZE:
        raise _fail(f"header size {header_size} is not {HEADER_SIZE}")
    if flags:
        raise _fail(f"unknown header flags {flags:#x}")
    if reserved:
        raise _fail("reserved header field is not zero")
    return target_id, count, version


def _read_sections(data: bytes, count: int, version: int = FORMAT_VERSION) -> dict[int, bytes]:
    table_end = HEADER_SIZE + count * SECTION_ENTRY.size
    if table_end > len(data):
        raise _fail(f"section table of {count} entries runs past the end of the {len(data)}-byte file")
    sections: dict[int, bytes] = {}
    previous_end = table_end
    for index in range(count):
        kind, offset, size, alignment = SECTION_ENTRY.unpack_from(data, HEADER_SIZE + index * SECTION_ENTRY.size)
        where = f"section {index}"
        if kind == SECTION_ONNX_MODELS and version < ONNX_FORMAT_VERSION:
            raise _fail(f"{where}: kind {kind} (onnx models) is reserved and not valid in format version {version}")
        if kind in RETIRED_SECTIONS:
            raise _fail(f"{where}: section kind {kind} ({RETIRED_SECTIONS[kind]}: weights decoded into DDR before the "
                        f"run) is no longer read; LOADs decode compressed weights (docs/isa.md): recompile the model")
        if kind not in SECTION_NAMES:
            raise _fail(f"{where}: unknown section kind {kind}")
        name = SECTION_NAMES[kind]
        if kind in sections:
            raise _fail(f"{where}: a second {name} section")
        if alignment == 0 or alignment & (alignment - 1) or alignment > MAX_ALIGNMENT:
            raise _fail(f"{where} ({name}): alignment {alignment} is not a power of two up to {MAX_ALIGNMENT}")
        if offset % alignment:
            raise _fail(f"{where} ({name}): offset {offset} is not a multiple of its alignment {alignment}")
        if offset < previous_end:
            raise _fail(f"{where} ({name}): offset {offset} overlaps the header, section table or previous section")
        if offset + size > len(data):
            raise _fail(f"{where} ({name}): bytes [{offset}, {offset + size}) are out of bounds of the {len(data)}-byte file")
        sections[kind] = data[offset : offset + size]
        previous_end = offset + size
    for kind in REQUIRED_SECTIONS:
        if kind not in sections:
            raise _fail(f"the {SECTION_NAMES[kind]} section is missing")
    return sections


def _read_io(section: bytes, strings: bytes, version: int) -> list[IoTensor]:
    cursor = _Cursor(section, "io")
    (count,) = cursor.take(U32, "the entry count")
    io = [_read_io_entry(cursor, strings, f"io entry {index}", version) for index in range(count)]
    cursor.finish()
    return io


def _read_io_entry(cursor: _Cursor, strings: bytes, what: str, version: int) -> IoTensor:
    direction, dtype, layout, rank, name, scale, zero_point, ddr_addr = cursor.take(IO_ENTRY, what)
    if direction not in DIRECTIONS:
        raise _fail(f"{what}: direction {direction} is not 0 (input) or 1 (output)")
    if dtype not in DTYPES or (dtype >= FIRST_VALUE_DTYPE_CODE and version < ONNX_FORMAT_VERSION):
        raise _fail(f"{what}: unknown dtype code {dtype}" + (f" in format version {version}" if dtype in DTYPES else ""))
    if layout not in LAYOUTS:
        raise _fail(f"{what}: unknown layout code {layout}")
    if rank > MAX_RANK:
        raise _fail(f"{what}: rank {rank} exceeds {MAX_RANK}")
    if not (math.isfinite(scale) and scale > 0):
        raise _fail(f"{what}: scale {scale} is not positive and finite")
    shape = tuple(cursor.take(U32, f"{what} dimensions")[0] for _ in range(rank))
    return IoTensor(_string(strings, name, what), DIRECTIONS[direction], shape, DTYPES[dtype],
                    scale, zero_point, ddr_addr, LAYOUTS[layout])


def _read_provenance(section: bytes, strings: bytes, instruction_count: int) -> dict[int, tuple[str, ...]]:
    cursor = _Cursor(section, "provenance")
    (count,) = cursor.take(U32, "the entry count")
    provenance: dict[int, list[str]] = {}
    previous = -1
    for entry in range(count):
        what = f"provenance entry {entry}"
        index, name = cursor.take(PROVENANCE_ENTRY, what)
        if index >= instruction_count:
            raise _fail(f"{what} names instruction {index}, but there are {instruction_count}")
        if index < previous:
            raise _fail(f"{what}: entries are not sorted by instruction index")
        previous = index
        provenance.setdefault(index, []).append(_string(strings, name, what))
    cursor.finish()
    return {index: tuple(names) for index, names in provenance.items()}


def _read_onnx_models(section: bytes) -> list[bytes]:
    cursor = _Cursor(section, "onnx-models")
    (count,) = cursor.take(U32, "the model count")
    models = []
    for index in range(count):
        what = f"ONNX model {index}"
        (size,) = cursor.take(U32, f"{what} size")
        if not size:
            raise _fail(f"{what} is empty")
        models.append(cursor.take(struct.Struct(f"{size}s"), f"{what} ({size} bytes)")[0])
        padding = -cursor.position % 4
        if section[cursor.position : cursor.position + padding] != bytes(padding):
            raise _fail(f"{what}: padding after the model is not zero bytes")
        cursor.position = min(cursor.position + padding, len(section))
    cursor.finish()
    return models


def _read_host(section: bytes, strings: bytes, version: int) -> list[HostSegment]:
    cursor = _Cursor(section, "host-segments")
    (count,) = cursor.take(U32, "the segment count")
    segments: list[HostSegment] = []
    for index in range(count):
        what = f"host segment {index}"
        token, inputs, outputs, body = cursor.take(HOST_ENTRY, what)
        if token > MAX_TOKEN:
            raise _fail(f"{what}: token {token} does not fit the 16-bit SYNC field")
        if segments and token <= segments[-1].token:
            raise _fail(f"{what}: token {token} is not above the previous segment's {segments[-1].token}")
        tensors = {}
        for direction, number in (("input", inputs), ("output", outputs)):
            tensors[direction] = [_read_io_entry(cursor, strings, f"{what} {direction} {i}", version) for i in range(number)]
            if any(tensor.direction != direction for tensor in tensors[direction]):
                raise _fail(f"{what}: a tensor among its {direction}s has the other direction")
        segments.append(HostSegment(token, tensors["input"], tensors["output"], _string(strings, body, f"{what} body")))
    cursor.finish()
    return segments


def _read(data: bytes) -> Binary:
    target_id, count, version = _read_header(data)
    sections = _read_sections(data, count, version)
    if SECTION_ONNX_MODELS in sections and SECTION_HOST_SEGMENTS not in sections:
        raise _fail("an onnx-models section without a host-segments section to run its models")
    code = sections[SECTION_INSTRUCTIONS]
    if len(code) % WORD_BYTES:
        raise _fail(f"instructions section of {len(code)} bytes is not a whole number of {WORD_BYTES}-byte words")
    try:
        instructions = decode_program(code)
    except XnpuError as error:
        raise _fail(str(error)) from None
    strings = sections[SECTION_STRINGS]
    io = _read_io(sections[SECTION_IO], strings, version)
    provenance = _read_provenance(sections.get(SECTION_PROVENANCE, U32.pack(0)), strings, len(instructions))
    constants = sections.get(SECTION_CONSTANTS, b"")
    host = _read_host(sections[SECTION_HOST_SEGMENTS], strings, version) if SECTION_HOST_SEGMENTS in sections else []
    models = _read_onnx_models(sections[SECTION_ONNX_MODELS]) if SECTION_ONNX_MODELS in sections else []
    binary = Binary(target_id, instructions, constants, io, provenance, host, models)
    if version == ONNX_FORMAT_VERSION and not models and not _has_value_dtypes(binary):
        raise _fail(f"format version {version} without an onnx-models section or a value dtype (such programs are "
                    f"version {FORMAT_VERSION})")
    return binary
