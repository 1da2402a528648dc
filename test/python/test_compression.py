"""Seed 003's log-domain codebook: the pure functions, the pass, the compressed weights in the
constant image and the decoding LOADs that read them, bit-exact against the fixed level
(docs/compression.md, docs/isa.md "Decoding LOADs")."""

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
from xnpu.backend.binary import CHECKSUMMED_FROM, FORMAT_VERSION, HEADER_SIZE, SECTION_ENTRY, Binary
from xnpu.backend.simulator import Machine, simulate
from xnpu.target.codebook import compressed_weights, pack_rows, row_bytes, unpack_rows
from xnpu.target.cost import instruction_cycles
from xnpu.target.description import load_target
from xnpu.target.encoding import make_instruction
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
@pytest.mark.parametrize("rows, count", [(1, 0), (1, 1), (3, 3), (2, 7), (4, 13), (1, 64), (3, 101)])
def test_pack_unpack_round_trip_at_odd_lengths(bits, rows, count):
    ids = np.random.default_rng(bits * 100 + count).integers(0, 1 << bits, size=(rows, count))
    packed = pack_rows(ids, bits)
    width = row_bytes(count, bits)
    assert len(packed) == rows * width and width == -(-count * bits // 8)
    matrix = np.frombuffer(packed, dtype=np.uint8).reshape(rows, width)
    assert np.array_equal(unpack_rows(matrix, bits, count), ids)
    if count * bits % 8:
        assert not (matrix[:, -1] >> (count * bits % 8)).any()  # unused high bits of every row are zero


def test_packing_is_lsb_first_and_every_row_starts_on_a_byte():
    assert pack_rows([[1, 2, 3]], 2) == bytes([0b00111001])
    assert pack_rows([[5, 1, 7]], 3) == bytes([0b11001101, 0b1])
    assert pack_rows([[5, 1, 7], [7, 1, 5]], 3) == bytes([0b11001101, 0b1, 0b01001111, 0b1])
    with pytest.raises(XnpuError, match="does not fit 2 bits"):
        pack_rows([[4]], 2)


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
# Compressed weights in DDR and the decoding LOADs
# --------------------------------------------------------------------------------------


def weight_sizes(model: Path) -> dict[str, int]:
    """Weights per Conv / Gemm node of an ONNX model."""
    import onnx

    graph = onnx.load(str(model)).graph
    initializers = {i.name: i for i in graph.initializer}
    return {n.name: int(np.prod(initializers[n.input[1]].dims)) for n in graph.node if n.op_type in ("Conv", "Gemm")}


def decoded_weights(binary: Binary) -> tuple[set[int], int]:
    """(the bits, the number of weights) the binary's decoding LOADs read."""
    layers = compressed_weights(binary.instructions).values()
    return {bits for bits, _, _ in layers}, sum(weights for _, weights, _ in layers)


def tiny_binary(bits: int, method: str = "seed003"):
    calibration = np.load(EXAMPLES / "tiny_calib.npy")
    options = {"compress_bits": bits, "compress_method": method, "compress_min_elements": 0}
    fixed = compile_model(EXAMPLES / "tiny_cnn.onnx", calibration, stop_at="fixed", **options)
    binary = compile_model(EXAMPLES / "tiny_cnn.onnx", calibration, **options)
    return fixed, binary


@pytest.mark.parametrize("bits, method", [(8, "seed003"), (5, "frequency"), (4, "kmeans"), (3, "seed003"), (1, "frequency")])
def test_compressed_binary_is_bit_exact_with_the_fixed_level(bits, method):
    fixed, binary = tiny_binary(bits, method)
    assert decoded_weights(binary) == ({bits}, sum(weight_sizes(EXAMPLES / "tiny_cnn.onnx").values()))
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
    assert set(run.stats.by_class) <= {"SYNC", "LOAD", "STORE", "CONV", "ELTWISE", "POOL", "TABLE", "CLAMP"}  # no decode step


def test_compressed_binary_is_smaller_and_its_loads_cost_the_packed_bytes():
    _, binary = tiny_binary(2)
    plain = compile_model(EXAMPLES / "tiny_cnn.onnx", np.load(EXAMPLES / "tiny_calib.npy"))
    assert len(binary.to_bytes()) < len(plain.to_bytes()) and len(binary.constants) < len(plain.constants)
    layers = compressed_weights(binary.instructions).values()
    assert sum(4 + ids for _, _, ids in layers) < sum(weights for _, weights, _ in layers) / 2
    target = load_target("xnpu_default")
    cost = target.cost
    for i in binary.instructions:
        if i.op == "LOAD" and i["codebook_bits"]:
            rows = i["d0"]
            elements = i["d1"] * i["d2"] * (i["d3"] if i["layout"] == 3 else 1)
            packed = rows * row_bytes(elements, 2) + 4  # the id rows and the dictionary
            assert instruction_cycles(i, target) == (cost.instruction_overhead_cycles + cost.dma_latency_cycles
                                                     + -(-packed // cost.dma_bytes_per_cycle))
    x = np.load(EXAMPLES / "tiny_input.npy")
    assert simulate(binary, x).stats.by_class["LOAD"] < simulate(plain, x).stats.by_class["LOAD"]


def test_a_decoding_load_writes_the_dictionary_entries_of_its_rows():
    m = Machine("xnpu_default", ddr_size=1 << 16)
    dictionary = np.array([0, -3, 7, 100, -127, 1, 2, -1], dtype=np.int8)  # b = 3
    ids = np.random.default_rng(3).integers(0, 8, size=(5, 2 * 2 * 3))  # O = 5 rows of KH x KW x I = 2 x 2 x 3
    packed = pack_rows(ids, 3)
    width = row_bytes(12, 3)
    assert width == 5 and len(packed) == 25  # 36 bits: every row takes whole bytes
    m.write_ddr(64, dictionary.tobytes())
    m.write_ddr(128, packed)
    m.sram[:] = 0x55
    fields = dict(layout=3, d1=2, d2=2, d3=3, codebook_bits=3, dictionary_addr=64)
    m.execute([  # rows 0-1 at SRAM 0, rows 2-4 (starting on row 2's byte) at 0x1000
        make_instruction("LOAD", sram_addr=0, ddr_addr=128, d0=2, **fields),
        make_instruction("LOAD", sram_addr=0x1000, ddr_addr=128 + 2 * width, d0=3, **fields),
    ])
    weights = dictionary[ids].reshape(5, 2, 2, 3)
    for address, part in ((0, weights[:2]), (0x1000, weights[2:])):
        padded = m.sram[address : address + 16 * 4 * 16].view(np.int8).reshape(16, 2, 2, 16)
        assert np.array_equal(padded[: len(part), :, :, :3], part)
        assert not padded[len(part) :].any() and not padded[:, :, :, 3:].any()  # pad lanes zero


@pytest.mark.parametrize("fields, message", [
    (dict(op="STORE", layout=1, d0=1, d1=1, d2=1, codebook_bits=4), "only a LOAD of int8 weights"),
    (dict(op="LOAD", layout=1, d0=1, d1=1, d2=1, codebook_bits=4), "only a LOAD of int8 weights"),
    (dict(op="LOAD", layout=3, elem_log2=1, d0=1, d1=1, d2=1, d3=1, codebook_bits=4), "only a LOAD of int8 weights"),
    (dict(op="LOAD", layout=4, d0=1, d1=1, d2=1, codebook_bits=9), "codebook_bits 9 is not 0..8"),
    (dict(op="LOAD", layout=4, d0=1, d1=1, d2=1, dictionary_addr=64), "dictionary_addr must be 0"),
])
def test_codebook_fields_outside_a_weight_load_are_refused(fields, message):
    op = fields.pop("op")
    with pytest.raises(XnpuError, match=f"{op} is not valid on target xnpu_default: {message}"):
        load_target("xnpu_default").check_instruction(make_instruction(op, **fields))


def recrc(image: bytearray) -> bytes:
    struct.pack_into("<I", image, 8, zlib.crc32(bytes(image[CHECKSUMMED_FROM:])))
    return bytes(image)


def test_a_section_that_decoded_weights_before_the_run_is_refused():
    _, binary = tiny_binary(4)
    data = bytearray(binary.to_bytes())
    count = struct.unpack_from("<I", data, 20)[0]
    for index in range(count):  # the provenance section relabelled as the retired kind 6
        entry = HEADER_SIZE + index * SECTION_ENTRY.size
        if struct.unpack_from("<I", data, entry)[0] == 5:
            struct.pack_into("<I", data, entry, 6)
    with pytest.raises(XnpuError, match=r"^binary: section \d+: section kind 6 .* recompile the model$"):
        Binary.from_bytes(recrc(data))


# --------------------------------------------------------------------------------------
# xnpu-compile
# --------------------------------------------------------------------------------------


def test_xnpu_compile_compress_options(tmp_path, capsys):
    from xnpu.tools.xnpu_compile import main

    output = tmp_path / "tiny.xnb"
    args = [str(EXAMPLES / "tiny_cnn.onnx"), "--calibration", str(EXAMPLES / "tiny_calib.npy"), "-o", str(output)]
    every_layer = ["--compress-min-elements", "0"]
    assert main(args + ["--compress-bits", "4", "--compress-method", "kmeans", "--compress-exclude", "fc", *every_layer]) == 0
    sizes = weight_sizes(EXAMPLES / "tiny_cnn.onnx")
    assert decoded_weights(Binary.from_bytes(output.read_bytes())) == ({4}, sum(sizes.values()) - sizes["fc"])
    assert main(args + ["--compress-bits", "4"]) == 0  # by default layers under 1000 weights stay int8
    assert decoded_weights(Binary.from_bytes(output.read_bytes())) == ({4}, sum(n for n in sizes.values() if n >= 1000))
    output.unlink()
    assert main(args + ["--compress-bits", "9"]) == 1
    error = capsys.readouterr().err
    assert error.strip() == "xnpu-compile: error: compress-weights: bits must be 1..8, got 9"
    assert not output.exists()


def test_isa_text_and_disassembly_reassemble_to_the_same_bytes():
    from xnpu.ir.io import parse_ir, print_ir
    from xnpu.backend.emit import emit_binary, module_from_binary

    isa_module = compile_model(EXAMPLES / "tiny_cnn.onnx", np.load(EXAMPLES / "tiny_calib.npy"), stop_at="isa",
                               compress_bits=3, compress_method="kmeans", compress_min_elements=0)
    binary = emit_binary(isa_module)
    assert emit_binary(parse_ir(print_ir(isa_module))).to_bytes() == binary.to_bytes()
    assert emit_binary(module_from_binary(binary)).to_bytes() == binary.to_bytes()
    assert "codebook_bits = 3" in print_ir(isa_module)
