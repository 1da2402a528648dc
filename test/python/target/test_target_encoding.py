"""Instruction word encode/decode: exact bit positions, range checks, round trips."""

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from xnpu.core.errors import XnpuError
from xnpu.target.encoding import (
    ENUMS,
    FORMATS,
    OPCODES,
    WORD_BITS,
    WORD_BYTES,
    Instruction,
    decode,
    decode_program,
    decode_word,
    encode,
    encode_program,
    encode_word,
    make_instruction,
)


@st.composite
def instructions(draw):
    op = draw(st.sampled_from(sorted(OPCODES)))
    fmt_name = OPCODES[op][1]
    fields = {}
    for f in FORMATS[fmt_name].fields:
        if f.name == "opcode":
            continue
        allowed = ENUMS.get((fmt_name, f.name))
        if allowed is not None:
            fields[f.name] = draw(st.sampled_from(sorted(allowed)))
        else:
            fields[f.name] = draw(st.integers(f.minimum, f.maximum))
    return Instruction(op, fields)


@settings(max_examples=400, deadline=None)
@given(instructions())
def test_decode_inverts_encode(instruction):
    word = encode(instruction)
    assert len(word) == WORD_BYTES
    assert decode(word) == instruction


@settings(max_examples=400, deadline=None)
@given(instructions())
def test_encode_inverts_decode_on_valid_words(instruction):
    word = encode_word(instruction)
    assert encode_word(decode_word(word)) == word


@settings(max_examples=600, deadline=None)
@given(st.integers(0, (1 << WORD_BITS) - 1), st.sampled_from(sorted(code for code, _ in OPCODES.values())))
def test_any_word_either_round_trips_or_is_rejected(noise, opcode):
    # Random words with a valid opcode: most have reserved bits set and must be rejected
    # with XnpuError; the rest must re-encode to the very same word.
    for word in (noise, (noise & ~0xFF) | opcode):
        try:
            decoded = decode_word(word)
        except XnpuError:
            continue
        assert encode_word(decoded) == word


def test_fields_land_on_their_documented_bits():
    word = encode_word(make_instruction("CLAMP", in_addr=0x123456, out_addr=0xABCDEF, h=7, w=9, c=33, min=-127, max=100))
    assert word & 0xFF == 0x14
    assert (word >> 16) & 0xFFFFFF == 0x123456
    assert (word >> 40) & 0xFFFFFF == 0xABCDEF
    assert (word >> 64) & 0xFFFF == 7 and (word >> 80) & 0xFFFF == 9 and (word >> 96) & 0xFFFF == 33
    assert (word >> 112) & 0xFFFF == 0x10000 - 127  # two's complement
    assert (word >> 128) & 0xFFFF == 100
    assert word >> 144 == 0
    data = encode(make_instruction("SYNC", halt=1, token=0xBEEF))
    assert data == bytes([0x01, 0x01, 0xEF, 0xBE]) + bytes(28)  # little-endian bytes


def test_signed_fields_round_trip_extremes():
    for shift in (-64, -16, -1, 0, 62, 63):
        inst = make_instruction("ELTWISE", op=0, a_shift=shift, out_shift=-shift - 1 if shift > -64 else 0)
        assert decode(encode(inst)) == inst


@pytest.mark.parametrize(
    "op, fields, message",
    [
        ("CONV", {"kernel_h": 16}, "CONV.kernel_h = 16 does not fit its 4-bit unsigned field [0, 15]"),
        ("CONV", {"in_addr": 1 << 24}, "CONV.in_addr = 16777216 does not fit its 24-bit"),
        ("CLAMP", {"min": -32769}, "CLAMP.min = -32769 does not fit its 16-bit signed field [-32768, 32767]"),
        ("ELTWISE", {"out_shift": 64}, "ELTWISE.out_shift = 64 does not fit its 7-bit signed field"),
        ("ELTWISE", {"a_multiplier": 1 << 15}, "ELTWISE.a_multiplier = 32768 does not fit"),
        ("LOAD", {"ddr_addr": -1}, "LOAD.ddr_addr = -1 does not fit"),
        ("LOAD", {"layout": 5}, "LOAD.layout = 5 is not one of 0=RAW, 1=NHWC"),
        ("POOL", {"kind": 3}, "POOL.kind = 3 is not one of 0=max, 1=avg, 2=global_avg"),
        ("ELTWISE", {"op": 3}, "ELTWISE.op = 3 is not one of 0=add, 1=sub, 2=mul"),
        ("CONV", {"groups": 2}, "CONV has no field 'groups'"),
        ("JUMP", {}, "unknown instruction 'JUMP'"),
    ],
)
def test_out_of_range_values_are_rejected_with_one_line(op, fields, message):
    with pytest.raises(XnpuError) as error:
        make_instruction(op, **fields)
    assert message in str(error.value)
    assert "\n" not in str(error.value)


def test_encode_checks_instructions_built_by_hand():
    with pytest.raises(XnpuError, match="field 'token' is missing"):
        encode(Instruction("SYNC", {"halt": 0}))
    with pytest.raises(XnpuError, match="is not an integer"):
        encode(Instruction("SYNC", {"halt": True, "token": 0}))


def test_decode_rejects_non_instructions():
    with pytest.raises(XnpuError, match="unknown opcode 0x00"):
        decode(bytes(WORD_BYTES))
    with pytest.raises(XnpuError, match="unknown opcode 0x7f"):
        decode(bytes([0x7F]) + bytes(31))
    with pytest.raises(XnpuError, match=r"SYNC: reserved bits set \(mask 0x200\)"):
        decode_word(0x01 | (1 << 9))
    with pytest.raises(XnpuError, match="LOAD.layout = 7"):
        decode_word(0x02 | (7 << 8))
    with pytest.raises(XnpuError, match="32 bytes, got 31"):
        decode(bytes(31))


def test_program_streams():
    program = [make_instruction("LOAD", layout=1, d0=4, d1=4, d2=3), make_instruction("SYNC", halt=1)]
    data = encode_program(program)
    assert len(data) == 2 * WORD_BYTES
    assert decode_program(data) == program
    with pytest.raises(XnpuError, match="not a whole number of 32-byte words"):
        decode_program(data[:-1])
    with pytest.raises(XnpuError, match="instruction 1: unknown opcode"):
        decode_program(data[:WORD_BYTES] + bytes(WORD_BYTES))


def test_formats_fit_the_word_and_start_with_the_opcode():
    for fmt in FORMATS.values():
        assert fmt.fields[0].name == "opcode" and fmt.fields[0].offset == 0 and fmt.fields[0].width == 8
        assert max(f.offset + f.width for f in fmt.fields) <= WORD_BITS
