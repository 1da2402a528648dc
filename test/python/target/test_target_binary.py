"""The binary container: byte-identical round trips and one clear error per kind of damage."""

import random
import struct
import zlib

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from xnpu.core.errors import XnpuError
from xnpu.backend.binary import (
    CHECKSUMMED_FROM,
    HEADER_SIZE,
    SECTION_ENTRY,
    Binary,
    IoTensor,
)
from xnpu.target.encoding import make_instruction

from test_target_encoding import instructions


def sample_binary() -> Binary:
    program = [
        make_instruction("LOAD", layout=2, d0=1, d1=16, d2=16, sram_addr=0, ddr_addr=4096),
        make_instruction("LOAD", layout=3, d0=8, d1=3, d2=3, d3=1, sram_addr=0x1000, ddr_addr=0),
        make_instruction("LOAD", layout=0, elem_log2=2, d0=1, d1=8, sram_addr=0x2000, ddr_addr=128),
        make_instruction("CONV", relu=1, bias=1, per_channel=1, in_addr=0, weight_addr=0x1000, bias_addr=0x2000,
                         rescale_addr=0x2040, out_addr=0x3000, in_h=16, in_w=16, in_c=1, out_c=8,
                         kernel_h=3, kernel_w=3, stride_h=1, stride_w=1, dilation_h=1, dilation_w=1,
                         pad_top=1, pad_left=1, pad_bottom=1, pad_right=1),
        make_instruction("POOL", kind=2, in_addr=0x3000, out_addr=0x8000, in_h=16, in_w=16, c=8, out_h=1, out_w=1,
                         out_multiplier=20000, out_shift=20),
        make_instruction("STORE", layout=1, d0=1, d1=1, d2=8, sram_addr=0x8000, ddr_addr=8192),
        make_instruction("SYNC", halt=1),
    ]
    return Binary(
        target_id=1,
        instructions=program,
        constants=bytes(range(256)) * 2,
        io=[
            IoTensor("input", "input", (1, 1, 16, 16), "int8", 0.0123, 0, 4096, "NCHW"),
            IoTensor("logits", "output", (1, 8), "int8", 0.25, 0, 8192, "RAW"),
        ],
        provenance={3: ("conv1", "relu1"), 4: ("gap",), 6: ("gap",)},
    )


def recrc(data: bytearray) -> bytes:
    struct.pack_into("<I", data, 8, zlib.crc32(bytes(data[CHECKSUMMED_FROM:])))
    return bytes(data)


def test_round_trip_is_byte_identical():
    binary = sample_binary()
    data = binary.to_bytes()
    decoded = Binary.from_bytes(data)
    assert decoded == binary
    assert decoded.to_bytes() == data
    assert data[:4] == b"XNPU"
    assert [t.name for t in decoded.inputs()] == ["input"] and [t.name for t in decoded.outputs()] == ["logits"]


def test_sections_sit_where_the_doc_says():
    data = sample_binary().to_bytes()
    magic, version, header_size, checksum, target, flags, count, total, reserved = struct.unpack_from("<4sHHIIIIII", data)
    assert (magic, version, header_size, target, flags, count, total, reserved) == (b"XNPU", 4, 32, 1, 0, 5, len(data), 0)
    assert checksum == zlib.crc32(data[12:])
    entries = [SECTION_ENTRY.unpack_from(data, HEADER_SIZE + i * 16) for i in range(count)]
    assert [e[0] for e in entries] == [1, 2, 3, 4, 5]
    kind, offset, size, alignment = entries[0]
    assert (offset, size, alignment) == (128, 7 * 32, 32)  # 32 + 5 * 16 = 112, aligned up to 32
    assert entries[1][1] % 64 == 0 and data[entries[1][1] : entries[1][1] + 512] == bytes(range(256)) * 2
    strings = data[entries[2][1] : entries[2][1] + entries[2][2]]
    assert strings == b"input\0logits\0conv1\0relu1\0gap\0"


names = st.text(st.characters(blacklist_characters="\0", blacklist_categories=("Cs",)), max_size=12)


@st.composite
def binaries(draw):
    program = draw(st.lists(instructions(), max_size=6))
    io = draw(st.lists(st.builds(
        IoTensor, names, st.sampled_from(["input", "output"]),
        st.lists(st.integers(0, 2**32 - 1), max_size=8).map(tuple),
        st.sampled_from(["int8", "int16", "int32", "float32", "uint8"]),
        st.floats(min_value=1e-30, max_value=1e30), st.integers(-(2**31), 2**31 - 1),
        st.integers(0, 2**32 - 1), st.sampled_from(["RAW", "NHWC", "NCHW"]),
    ), max_size=4))
    provenance = {}
    if program:
        provenance = draw(st.dictionaries(st.integers(0, len(program) - 1), st.lists(names, min_size=1, max_size=3).map(tuple), max_size=4))
    return Binary(draw(st.integers(0, 2**32 - 1)), program, draw(st.binary(max_size=200)), io, provenance)


@settings(max_examples=150, deadline=None)
@given(binaries())
def test_random_binaries_round_trip(binary):
    data = binary.to_bytes()
    decoded = Binary.from_bytes(data)
    assert decoded == binary
    assert decoded.to_bytes() == data


def _damage(data: bytes, offset: int, value: bytes, fix_crc: bool = True) -> bytes:
    image = bytearray(data)
    image[offset : offset + len(value)] = value
    return recrc(image) if fix_crc else bytes(image)


def _section_entry_offset(index: int) -> int:
    return HEADER_SIZE + index * SECTION_ENTRY.size


GOOD = sample_binary().to_bytes()


@pytest.mark.parametrize(
    "data, message",
    [
        (GOOD[:20], "truncated: 20 bytes is shorter than the 32-byte header"),
        (GOOD[:-1], f"truncated: the header says {len(GOOD)} bytes, the file has {len(GOOD) - 1}"),
        (GOOD + b"\0", "1 trailing bytes after"),
        (b"ELF\x7f" + GOOD[4:], "bad magic b'ELF\\x7f', expected b'XNPU': not an xnpu binary"),
        (_damage(GOOD, 4, struct.pack("<H", 6)), "format version 6 is not supported"),
        (_damage(GOOD, 4, struct.pack("<H", 5)), "format version 5 without an onnx-models section or a value dtype"),
        (_damage(GOOD, 4, struct.pack("<H", 3)), "format version 3 is a strictly in-order program without dependency tokens"),
        (_damage(GOOD, 4, struct.pack("<H", 1)), "recompile the model"),
        (_damage(GOOD, 200, b"\xff", fix_crc=False), "checksum mismatch"),
        (_damage(GOOD, 16, struct.pack("<I", 4)), "unknown header flags 0x4"),
        (_damage(GOOD, 20, struct.pack("<I", 1000)), "section table of 1000 entries runs past the end"),
        (_damage(GOOD, _section_entry_offset(1) + 8, struct.pack("<I", 10**6)), "section 1 (constants): bytes"),
        (_damage(GOOD, _section_entry_offset(1) + 4, struct.pack("<I", 64)), "overlaps the header, section table or previous section"),
        (_damage(GOOD, _section_entry_offset(1) + 4, struct.pack("<I", 65 * 64 + 1)), "is not a multiple of its alignment 64"),
        (_damage(GOOD, _section_entry_offset(1) + 12, struct.pack("<I", 48)), "alignment 48 is not a power of two"),
        (_damage(GOOD, _section_entry_offset(1), struct.pack("<I", 99)), "unknown section kind 99"),
        (_damage(GOOD, _section_entry_offset(1), struct.pack("<I", 1)), "a second instructions section"),
        (_damage(GOOD, _section_entry_offset(0) + 8, struct.pack("<I", 33)), "not a whole number of 32-byte words"),
        (_damage(GOOD, 128, b"\x7f"), "instruction 0: unknown opcode 0x7f"),
        (_damage(GOOD, 128 + 32 + 31, b"\x40"), "instruction 1: LOAD: reserved bits set"),  # bit 254
    ],
)
def test_damaged_files_give_one_clear_line(data, message):
    with pytest.raises(XnpuError) as error:
        Binary.from_bytes(data)
    text = str(error.value)
    assert text.startswith("binary: ") and message in text, text
    assert "\n" not in text


def _section(data: bytes, kind: int) -> tuple[int, int]:
    for index in range(5):
        k, offset, size, _ = SECTION_ENTRY.unpack_from(data, _section_entry_offset(index))
        if k == kind:
            return offset, size
    raise AssertionError(kind)


def test_bad_tables_inside_sections():
    io_offset, _ = _section(GOOD, 4)
    prov_offset, _ = _section(GOOD, 5)
    cases = [
        (_damage(GOOD, io_offset + 4, b"\x02"), "io entry 0: direction 2"),
        (_damage(GOOD, io_offset + 5, b"\x09"), "io entry 0: unknown dtype code 9"),
        (_damage(GOOD, io_offset + 8, struct.pack("<I", 5000)), "past the 29-byte string table"),
        (_damage(GOOD, io_offset + 12, struct.pack("<d", -1.0)), "io entry 0: scale -1.0 is not positive"),
        (_damage(GOOD, io_offset, struct.pack("<I", 3)), "io section ends inside io entry 2"),
        (_damage(GOOD, prov_offset + 4, struct.pack("<I", 7)), "provenance entry 0 names instruction 7, but there are 7"),
        (_damage(GOOD, prov_offset + 4, struct.pack("<I", 5)), "provenance entry 1: entries are not sorted"),
        (_damage(GOOD, prov_offset, struct.pack("<I", 2)), "provenance section has 16 unexpected trailing bytes"),
    ]
    for data, message in cases:
        with pytest.raises(XnpuError) as error:
            Binary.from_bytes(data)
        assert message in str(error.value), str(error.value)


def test_strings_must_be_terminated_utf8():
    strings_offset, size = _section(GOOD, 3)
    unterminated = _damage(GOOD, strings_offset + size - 1, b"x")
    with pytest.raises(XnpuError, match="is not NUL-terminated"):
        Binary.from_bytes(unterminated)
    invalid = _damage(GOOD, strings_offset, b"\xff")
    with pytest.raises(XnpuError, match="string at offset 0 is not valid UTF-8"):
        Binary.from_bytes(invalid)


def test_writer_rejects_what_it_cannot_represent():
    binary = sample_binary()
    binary.provenance = {9: ("x",)}
    with pytest.raises(XnpuError, match="provenance names instruction 9, but there are 7"):
        binary.to_bytes()
    binary = sample_binary()
    binary.io[0].name = "in\0put"
    with pytest.raises(XnpuError, match="contains a NUL character"):
        binary.to_bytes()
    binary = sample_binary()
    binary.io[1].dtype = "bfloat16"
    with pytest.raises(XnpuError, match="dtype 'bfloat16' is not one of"):
        binary.to_bytes()
    binary = sample_binary()
    binary.target_id = -1
    with pytest.raises(XnpuError, match="target id = -1 does not fit"):
        binary.to_bytes()


def test_fuzzed_files_only_ever_raise_xnpu_error():
    rng = random.Random(20261129)
    outcomes = {"rejected": 0, "accepted": 0}
    for trial in range(3000):
        image = bytearray(GOOD)
        mode = trial % 3
        if mode == 0:  # truncate anywhere
            image = image[: rng.randrange(len(image))]
        else:  # flip 1-4 random bytes; in mode 2 repair the checksum so the parser sees the damage
            for _ in range(rng.randint(1, 4)):
                image[rng.randrange(len(image))] ^= rng.randrange(1, 256)
            if mode == 2 and len(image) >= CHECKSUMMED_FROM:
                image = bytearray(recrc(image))
        try:
            Binary.from_bytes(bytes(image))
            outcomes["accepted"] += 1
        except XnpuError as error:
            assert "\n" not in str(error)
            outcomes["rejected"] += 1
    # Truncations and unrepaired flips are always caught; some repaired flips land in
    # constants or free fields and legitimately decode.
    assert outcomes["rejected"] >= 2000


def test_check_target_compares_ids_and_instructions():
    from xnpu.target.description import load_target

    binary = sample_binary()
    binary.check_target(load_target("xnpu_default"))
    with pytest.raises(XnpuError, match="binary: built for target id 1, but xnpu_lite has id 2"):
        binary.check_target(load_target("xnpu_lite"))
    binary.target_id = 2
    binary.instructions.insert(0, make_instruction("CLAMP", h=1, w=1, c=1, min=0, max=127))
    with pytest.raises(XnpuError, match="binary: instruction 0: CLAMP is not valid on target xnpu_lite"):
        binary.check_target(load_target("xnpu_lite"))
