"""Seed 003's log-domain codebook: the pure functions, the pass, binary section kind 6 and the
simulator's decode, bit-exact against the fixed level (docs/compression.md)."""

from __future__ import annotations

import struct
import zlib
from pathlib import Path

import numpy as np
import pytest

import xnpu
from xnpu.ir.context import make_context
from xnpu.core.errors import XnpuError
from xnpu.driver.pipeline import compile as compile_model
from xnpu.backend.binary import (
    CHECKSUMMED_FROM,
    FORMAT_VERSION,
    HEADER_SIZE,
    SECTION_COMPRESSED_WEIGHTS,
    SECTION_ENTRY,
    Binary,
    CompressedWeights,
    pack_ids,
    packed_size,
    unpack_ids,
)
from xnpu.backend.simulator import simulate
from xnpu.transforms.compress_weights import (
    FIXED_CODEBOOK_ATTR,
    FIXED_CODEBOOK_BITS_ATTR,
    METHODS,
    codebook,
    compress_module,
    int8_dictionary,
    log_codebook,
    per_tensor_scale,
)

ROOT = Path(__file__).resolve().parents[2]
EXAMPLES = ROOT / "examples"
SHARED = ROOT / ".." / "shared" / "bench" / "digits"
LOG_METHODS = ("seed003", "frequency")


def layer_weights(seed: int = 0, shape=(16, 8, 3, 3)) -> np.ndarray:
    return np.random.default_rng(seed).normal(0.0, 0.1, size=shape).astype(np.float32)


# --------------------------------------------------------------------------------------
# The codebook
# --------------------------------------------------------------------------------------


@pytest.mark.parametrize("method", METHODS)
@pytest.mark.parametrize("bits", range(1, 9))
def test_decode_is_the_dictionary_entry_of_every_id(method, bits):
    w = layer_weights(bits)
    book = codebook(w, bits, 0.125, method)
    assert book.dictionary.shape == (1 << bits,)
    assert book.ids.shape == w.shape and book.ids.max() < 1 << bits
    decoded = book.decode()
    for index in np.ndindex(w.shape):
        assert decoded[index] == book.dictionary[book.ids[index]]
    if method in LOG_METHODS:  # the log dictionary keeps every weight's sign
        assert np.all(np.sign(decoded) == np.sign(w))


@pytest.mark.parametrize("method", LOG_METHODS)
def test_log_dictionary_is_sign_symmetric_and_on_the_log_grid(method):
    w = layer_weights(3)
    for bits in (2, 4, 8):
        book = log_codebook(w, bits, 0.125, method)
        half = 1 << (bits - 1)
        assert np.array_equal(book.dictionary[half:], -book.dictionary[:half])
        q = np.log(book.dictionary[:half]) / 0.125
        assert np.allclose(q, np.round(q))
        assert np.all(np.diff(book.dictionary[:half]) <= 0)  # descending, as the seed sorts
        assert np.array_equal(log_codebook(-w, bits, 0.125, method).decode(), -book.decode())


def test_seed003_follows_the_seed_step_by_step():
    # q = round(ln|w| / l): 0, 0, -1, -8; kept (b = 2): the two largest, [0, -1]
    w = np.array([1.0, -1.0, np.exp(-0.125), np.exp(-1.0), -np.exp(-1.0)])
    book = log_codebook(w, 2, 0.125, "seed003")
    assert book.ids.tolist() == [0, 2, 1, 1, 3]
    assert np.allclose(book.dictionary, [1.0, np.exp(-0.125), -1.0, -np.exp(-0.125)])


def test_frequency_keeps_the_most_frequent_logs_and_seed003_the_largest():
    w = np.array([1.0] + [np.exp(-2.0)] * 5 + [np.exp(-3.0)] * 4 + [np.exp(-0.5)] * 2)
    seed = log_codebook(w, 2, 0.125, "seed003")
    frequent = log_codebook(w, 2, 0.125, "frequency")
    assert np.allclose(np.log(seed.dictionary[:2]), [0.0, -0.5])
    assert np.allclose(np.log(frequent.dictionary[:2]), [-2.0, -3.0])
    assert np.allclose(frequent.decode()[1:10], w[1:10])  # the frequent values are exact


@pytest.mark.parametrize("method", METHODS)
def test_all_zero_layer_decodes_to_zeros(method):
    book = codebook(np.zeros((4, 3)), 4, 0.125, method)
    assert np.array_equal(book.decode(), np.zeros((4, 3)))
    assert np.all(book.ids == 0) and np.all(book.dictionary == 0)
    assert per_tensor_scale(book.dictionary) == 1.0


@pytest.mark.parametrize("method", METHODS)
def test_single_value_layer(method):
    w = np.full((5, 5), -0.3)
    book = codebook(w, 3, 0.125, method)
    assert len(np.unique(book.ids)) == 1
    expected = -np.exp(0.125 * np.round(np.log(0.3) / 0.125)) if method != "kmeans" else -0.3
    assert np.allclose(book.decode(), expected)


@pytest.mark.parametrize("method", LOG_METHODS)
def test_fewer_distinct_points_than_the_dictionary_holds(method):
    magnitudes = np.exp(0.125 * np.array([-3, -10, -20]))
    w = np.concatenate([magnitudes, -magnitudes, magnitudes])
    book = log_codebook(w, 8, 0.125, method)
    assert np.allclose(book.decode(), w)  # each weight has its own point: lossless
    assert set(np.unique(book.ids % 128)) == {0, 1, 2}
    # the unused positions repeat the last point, so the dictionary is total
    assert np.allclose(book.dictionary[3:128], magnitudes[-1])


@pytest.mark.parametrize("method", METHODS)
def test_zero_rule_reserves_entry_zero(method):
    w = layer_weights(5)
    w.reshape(-1)[::7] = 0.0
    for bits in (2, 4, 8):
        book = codebook(w, bits, 0.125, method)
        half = 1 << (bits - 1)
        assert book.dictionary[0] == 0.0
        assert np.all(book.ids[w == 0] == 0)
        assert np.all(book.decode()[w == 0] == 0.0)
        nonzero_ids = book.ids[w != 0]
        assert not np.isin(nonzero_ids, [0, half] if method != "kmeans" else [0]).any()
        assert np.all(book.decode()[w != 0] != 0)
    # without zeros no entry is spent on them
    assert np.all(codebook(layer_weights(5), 4, 0.125, method).dictionary != 0)


@pytest.mark.parametrize("bits", range(1, 9))
@pytest.mark.parametrize("count", [0, 1, 3, 7, 13, 64, 101])
def test_pack_unpack_round_trip_at_odd_lengths(bits, count):
    ids = np.random.default_rng(bits * 100 + count).integers(0, 1 << bits, size=count)
    packed = pack_ids(ids, bits)
    assert len(packed) == packed_size(count, bits) == -(-count * bits // 8)
    assert np.array_equal(unpack_ids(packed, bits, count), ids)
    if count * bits % 8:
        assert packed[-1] >> (count * bits % 8) == 0  # unused high bits are zero


def test_packing_is_lsb_first():
    assert pack_ids([1, 2, 3], 2) == bytes([0b00111001])
    assert pack_ids([5, 1, 7], 3) == bytes([0b11001101, 0b1])
    with pytest.raises(XnpuError, match="does not fit 2 bits"):
        pack_ids([4], 2)


def test_bad_options_are_one_line_errors():
    for kwargs, message in (
        ({"bits": 0}, "bits must be 1..8"),
        ({"bits": 9}, "bits must be 1..8"),
        ({"step": 0.0}, "step must be positive"),
        ({"method": "median"}, "unknown method 'median'"),
    ):
        with pytest.raises(XnpuError, match=message):
            codebook(layer_weights(), **kwargs)


# --------------------------------------------------------------------------------------
# The pass and the fixed level
# --------------------------------------------------------------------------------------


def calibrated_tiny():
    from xnpu.driver.pipeline import float_cleanup
    from xnpu.transforms.calibrate import calibrate

    module = xnpu.import_onnx(EXAMPLES / "tiny_cnn.onnx")
    float_cleanup(module)
    calibrate(module, np.load(EXAMPLES / "tiny_calib.npy"), progress=False)
    return module


def test_pass_selects_layers_by_name_and_size():
    # by default layers under 1000 weights stay int8: of tiny_cnn's, only conv3 (1152) is compressed
    assert compress_module(calibrated_tiny(), 4) == ["conv3"]
    assert compress_module(calibrated_tiny(), 4, min_elements=0) == ["conv1", "conv2", "conv3", "fc"]
    assert compress_module(calibrated_tiny(), 4, min_elements=0, exclude=frozenset({"conv1", "fc"})) == ["conv2", "conv3"]
    assert compress_module(calibrated_tiny(), 4, min_elements=0, include=frozenset({"conv2"})) == ["conv2"]
    module = calibrated_tiny()
    assert compress_module(module, 4, min_elements=10**9) == []
    assert not any("nn.codebook" in op.attributes for op in module.walk())


def test_fixed_weights_are_exactly_the_int8_dictionary():
    fixed = compile_model(EXAMPLES / "tiny_cnn.onnx", np.load(EXAMPLES / "tiny_calib.npy"), stop_at="fixed",
                          compress_bits=3, compress_method="seed003", compress_min_elements=0)
    marked = [op for op in fixed.walk() if FIXED_CODEBOOK_ATTR in op.attributes]
    assert len(marked) == 4
    for op in marked:
        dictionary = np.asarray(op.attributes[FIXED_CODEBOOK_ATTR].get_values())
        assert dictionary.size == 1 << op.attributes[FIXED_CODEBOOK_BITS_ATTR].value.data == 8
        assert set(np.unique(op.to_numpy())) <= set(dictionary.tolist())
        assert np.array_equal(dictionary[4:], -dictionary[:4])


def test_int8_dictionary_is_the_weight_quantization():
    book = codebook(layer_weights(7), 4, 0.125, "kmeans")
    scale = per_tensor_scale(book.dictionary)
    entries = int8_dictionary(book.dictionary, scale)
    assert np.abs(entries).max() == 127
    assert np.array_equal(entries[book.ids], int8_dictionary(book.decode(), scale))


def test_recalibrating_per_channel_after_compression_is_refused():
    from xnpu.lowering.nn_to_fixed import LowerNNToFixedPass
    from xnpu.transforms.calibrate import calibrate

    module = calibrated_tiny()
    compress_module(module, 5, method="kmeans", min_elements=0)
    calibrate(module, np.load(EXAMPLES / "tiny_calib.npy"), per_channel_weights=True, progress=False)
    with pytest.raises(XnpuError, match="not its codebook; run compress-weights after calibrate"):
        LowerNNToFixedPass().apply(make_context(), module)


# --------------------------------------------------------------------------------------
# Binary section kind 6 and the simulator
# --------------------------------------------------------------------------------------


def tiny_binary(bits: int, method: str = "seed003"):
    calibration = np.load(EXAMPLES / "tiny_calib.npy")
    options = {"compress_bits": bits, "compress_method": method, "compress_min_elements": 0}
    fixed = compile_model(EXAMPLES / "tiny_cnn.onnx", calibration, stop_at="fixed", **options)
    binary = compile_model(EXAMPLES / "tiny_cnn.onnx", calibration, **options)
    return fixed, binary


@pytest.mark.parametrize("bits, method", [(8, "seed003"), (5, "frequency"), (4, "kmeans"), (3, "seed003"), (1, "frequency")])
def test_compressed_binary_is_bit_exact_with_the_fixed_level(bits, method):
    fixed, binary = tiny_binary(bits, method)
    assert len(binary.compressed) == 4 and all(r.bits == bits for r in binary.compressed)
    data = binary.to_bytes()
    assert struct.unpack_from("<H", data, 4)[0] == FORMAT_VERSION
    decoded = Binary.from_bytes(data)
    assert decoded == binary and decoded.to_bytes() == data
    x = np.load(EXAMPLES / "tiny_input.npy")
    x = np.concatenate([x, np.load(EXAMPLES / "tiny_calib.npy")[:3]])
    expected = xnpu.run(fixed, x)
    run = simulate(decoded, x)
    for name, value in expected.items():
        assert np.array_equal(run.outputs[name], value)
    assert run.stats.by_class["DECODE"] > 0
    # the stored image leaves placeholders; the decode is what puts the weights back
    for region in decoded.compressed:
        assert not any(decoded.constants[region.ddr_addr : region.ddr_addr + region.size])


def test_compressed_binary_is_smaller_and_equals_the_plain_compile_of_codebook_weights():
    _, binary = tiny_binary(2)
    plain = compile_model(EXAMPLES / "tiny_cnn.onnx", np.load(EXAMPLES / "tiny_calib.npy"))
    assert len(binary.to_bytes()) < len(plain.to_bytes())
    assert len(binary.constant_image()) == len(plain.constants)
    stored = sum(len(r.dictionary) + packed_size(r.size, r.bits) for r in binary.compressed)
    assert stored < sum(r.size for r in binary.compressed) / 2


def test_digits_model_compressed_is_bit_exact():
    if not SHARED.is_dir():
        pytest.skip(f"bench data not found at {SHARED}")
    calibration = np.load(SHARED / "calib_x.npy")[:32]
    x = np.load(SHARED / "test_x.npy")[:8]
    model = SHARED / "digits_resnet.onnx"
    for bits in (6, 4):
        fixed = compile_model(model, calibration, stop_at="fixed", compress_bits=bits, compress_method="frequency")
        binary = Binary.from_bytes(compile_model(model, calibration, compress_bits=bits, compress_method="frequency").to_bytes())
        assert np.array_equal(simulate(binary, x).outputs["logits"], xnpu.run(fixed, x)["logits"])


def recrc(image: bytearray) -> bytes:
    struct.pack_into("<I", image, 8, zlib.crc32(bytes(image[CHECKSUMMED_FROM:])))
    return bytes(image)


def small_compressed_binary(bits: int = 3, count: int = 11) -> Binary:
    from xnpu.target.encoding import make_instruction

    ids = np.arange(count) % (1 << bits)
    dictionary = bytes(range(1 << bits))
    constants = bytes(range(1, 65)) + bytes(count) + b"\x7f" * 5
    return Binary(1, [make_instruction("SYNC", halt=1)], constants, [], {}, [CompressedWeights(64, bits, dictionary, ids)])


def kind6_offset(data: bytes) -> tuple[int, int]:
    count = struct.unpack_from("<I", data, 20)[0]
    for index in range(count):
        kind, offset, size, _ = SECTION_ENTRY.unpack_from(data, HEADER_SIZE + index * SECTION_ENTRY.size)
        if kind == SECTION_COMPRESSED_WEIGHTS:
            return offset, size
    raise AssertionError("no kind-6 section")


def test_kind6_layout_is_the_documented_one():
    binary = small_compressed_binary()
    data = binary.to_bytes()
    offset, size = kind6_offset(data)
    section = data[offset : offset + size]
    assert struct.unpack_from("<IIIB", section) == (1, 64, 11, 3)
    assert section[13:16] == bytes(3) and section[16:24] == bytes(range(8))
    assert section[24:29] == pack_ids(np.arange(11) % 8, 3) and size == 32  # 29 padded to 4
    assert Binary.from_bytes(data).constant_image()[64:75] == bytes((np.arange(11) % 8).tolist())
    assert Binary.from_bytes(data).constants == binary.constants


def damaged(offset_in_section: int, value: bytes, size_delta: int = 0) -> bytes:
    data = small_compressed_binary().to_bytes()
    offset, _ = kind6_offset(data)
    image = bytearray(data)
    image[offset + offset_in_section : offset + offset_in_section + len(value)] = value
    return recrc(image)


@pytest.mark.parametrize("offset, value, message", [
    (12, b"\x00", "bits 0 is not 1..8"),
    (12, b"\x09", "bits 9 is not 1..8"),
    (13, b"\x01", "reserved bytes are not zero"),
    (8, struct.pack("<I", 40), "ends inside compressed region 0 ids"),
    (12, b"\x08", "ends inside compressed region 0 dictionary of 256 entries"),
    (28, b"\xff", "unused bits after the last id are not zero"),
    (4, struct.pack("<I", 10**6), "past the end of the constant image"),
    (0, struct.pack("<I", 2), "ends inside compressed region 1"),
])
def test_kind6_damage_is_one_line(offset, value, message):
    with pytest.raises(XnpuError, match=message) as error:
        Binary.from_bytes(damaged(offset, value))
    assert "\n" not in str(error.value) and str(error.value).startswith("binary:")


def test_kind6_is_optional_in_version_4_and_in_order_versions_are_refused():
    data = bytearray(small_compressed_binary().to_bytes())
    assert struct.unpack_from("<H", data, 4)[0] == 4
    plain = small_compressed_binary()
    plain.compressed = []
    assert struct.unpack_from("<H", plain.to_bytes(), 4)[0] == 4
    struct.pack_into("<H", data, 4, 2)  # the decode-before-run format of the in-order machine
    with pytest.raises(XnpuError, match="format version 2 is a strictly in-order program"):
        Binary.from_bytes(recrc(data))


def test_writer_rejects_inconsistent_regions():
    binary = small_compressed_binary()
    binary.constants = bytes(range(1, 100))
    with pytest.raises(XnpuError, match="are not zero placeholders"):
        binary.to_bytes()
    binary = small_compressed_binary()
    binary.compressed[0].dictionary = bytes(4)
    with pytest.raises(XnpuError, match="dictionary of 4 entries, 3 bits need 8"):
        binary.to_bytes()
    binary = small_compressed_binary()
    binary.compressed.append(CompressedWeights(70, 2, bytes(4), np.zeros(3, dtype=np.uint8)))
    with pytest.raises(XnpuError, match="not past the previous region's end"):
        binary.to_bytes()


# --------------------------------------------------------------------------------------
# xnpu-compile
# --------------------------------------------------------------------------------------


def test_xnpu_compile_compress_options(tmp_path, capsys):
    from xnpu.tools.xnpu_compile import main

    output = tmp_path / "tiny.xnb"
    args = [str(EXAMPLES / "tiny_cnn.onnx"), "--calibration", str(EXAMPLES / "tiny_calib.npy"), "-o", str(output)]
    every_layer = ["--compress-min-elements", "0"]
    assert main(args + ["--compress-bits", "4", "--compress-method", "kmeans", "--compress-exclude", "fc", *every_layer]) == 0
    binary = Binary.from_bytes(output.read_bytes())
    assert len(binary.compressed) == 3 and {r.bits for r in binary.compressed} == {4}
    assert main(args + ["--compress-bits", "4"]) == 0  # by default layers under 1000 weights stay int8
    assert len(Binary.from_bytes(output.read_bytes()).compressed) == 1
    output.unlink()
    assert main(args + ["--compress-bits", "9"]) == 1
    error = capsys.readouterr().err
    assert error.strip() == "xnpu-compile: error: compress-weights: bits must be 1..8, got 9"
    assert not output.exists()


def test_isa_text_keeps_the_regions_and_disassembly_reassembles_plain():
    from xnpu.ir.io import parse_ir, print_ir
    from xnpu.backend.emit import emit_binary, module_from_binary

    isa_module = compile_model(EXAMPLES / "tiny_cnn.onnx", np.load(EXAMPLES / "tiny_calib.npy"), stop_at="isa",
                               compress_bits=3, compress_method="kmeans", compress_min_elements=0)
    binary = emit_binary(isa_module)
    assert emit_binary(parse_ir(print_ir(isa_module))).to_bytes() == binary.to_bytes()
    plain = emit_binary(module_from_binary(binary))
    assert plain.compressed == [] and plain.constants == binary.constant_image()
    x = np.load(EXAMPLES / "tiny_input.npy")
    assert np.array_equal(simulate(plain, x).outputs["logits"], simulate(binary, x).outputs["logits"])
