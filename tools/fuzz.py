"""Fuzz the command-line tools: every run must end in success or in one clean error line.

    python -m xnpu.tools.fuzz                             # 3000 cases, seed 0, both cores
    python -m xnpu.tools.fuzz --cases 200 --seed 7 --timeout 60 --jobs 2
    python -m xnpu.tools.fuzz --json                      # the counts as JSON (test_fuzz.py reads them)
    make fuzz

Each case is one tool invocation on a damaged input, in its own directory. The categories:

- `ir-nn`, `ir-fixed`, `ir-npu`, `ir-isa`: the bundled tiny_cnn as textual IR at each level, with one
  to three mutations (lines deleted, duplicated, swapped or cut; characters, numbers,
  dimensions, element types, SSA names or op names replaced; quotes dropped), run through
  xnpu-opt, xnpu-run, xnpu-quantize or xnpu-translate;
- `binary`: the compiled .xnb with bits flipped, words overwritten, bytes cut or appended,
  and its CRC fixed again so that the reader's other checks are what is tested;
- `onnx`: the ONNX model with one damaged field (dims, data, data type, values inf/NaN/3e38,
  inputs, nodes, op types, attributes, opset, shapes, names) or its bytes flipped;
- `numpy`: input and calibration files with bad values, shapes, dtypes, headers, pickles and zips;
- `paths`: outputs that are inputs (same name, hard link, symlink), directories, devices and
  FIFOs as inputs or outputs, and out-of-range option values.

A case runs as the tool's own `main` in a forked child of this process (the modules are
imported once, so a case costs its own work, not an interpreter start), with stdin empty,
stdout and stderr in files, Python's default warning filters and a timeout. Its outcome:

- `ok`: exit status 0, and nothing on stderr but the tool's own `<tool>: warning:` and
  `<tool>: note:` lines;
- `error`: exit status 1 (2 for a usage error) and exactly one stderr line,
  `<tool>: error: ...` or `FILE:L:C: error: ...`, with no output file and no temporary file left;
- the bugs: `hang` (the timeout: seconds of CPU, or ten times as many on the clock), `traceback`, `messy` (any other stderr), `output-left`,
  `input-changed` (an input file's bytes changed, or a device or FIFO was replaced) and
  `crashed` (killed by a signal, or another exit status).
"""

from __future__ import annotations

import argparse
import dataclasses
import io
import json
import os
import re
import resource
import shutil
import signal
import stat
import struct
import sys
import tempfile
import threading
import time
import traceback
import warnings
import zlib
from collections import Counter, defaultdict
from collections.abc import Callable
from pathlib import Path

import numpy as np

import xnpu
import xnpu.backend.npu_to_isa  # noqa: F401
import xnpu.backend.simulator  # noqa: F401
import xnpu.driver.pipeline  # noqa: F401
import xnpu.driver.runner  # noqa: F401
import xnpu.frontend.onnx_import  # noqa: F401
import xnpu.lowering.fixed_to_npu  # noqa: F401
from xnpu.driver.pipeline import below_npu
from xnpu.driver.pipeline import compile as compile_model
from xnpu.ir.io import print_ir
from xnpu.pdl import cache as pdl_cache
from xnpu.pdl.patterns import parse_pattern_file
from xnpu.tools import fuzz_hostile, xnpu_compile, xnpu_objdump, xnpu_opt, xnpu_quantize, xnpu_run, xnpu_translate
from xnpu.tools.fuzz_case import Case
from xnpu.tools.fuzz_case import pick as _pick

ROOT = Path(__file__).resolve().parents[1]
EXAMPLES = ROOT / "examples"
CATEGORIES = ("ir-nn", "ir-fixed", "ir-npu", "ir-isa", "binary", "onnx", "numpy", "paths", *fuzz_hostile.FAMILIES)
CLEAN = ("ok", "error")
OUTCOMES = ("ok", "error", "hang", "traceback", "messy", "output-left", "input-changed", "crashed", "code-ran",
            "over-memory")
# what a case may hold at its peak beyond what the campaign's process held when it forked it
MEMORY_LIMIT_BYTES = 1 << 30
# a character no line of a tool may hold: names are printed escaped (docs/reliability.md)
CONTROL = re.compile(r"[\x00-\x08\x0b-\x1f\x7f-\x9f\u2028\u2029\u202a-\u202e]")
ERROR_LINE = re.compile(r"^(xnpu-[a-z]+: error: |\S+:\d+:\d+: error: ).+")


# --------------------------------------------------------------------------------------
# Cases
# --------------------------------------------------------------------------------------


@dataclasses.dataclass(frozen=True)
class Base:
    """The undamaged inputs every case starts from: tiny_cnn at every level and its data."""

    onnx: bytes
    ir: dict[str, str]  # level -> text
    binary: bytes
    input: bytes  # .npy, 4 samples
    calibration: bytes  # .npy, 8 samples
    tosa: str  # the fixed level exported as TOSA (generic form, as --emit=tosa writes it)
    pattern_text: str  # a pattern file of a `patterns=` directory, and its cache entry's payload
    pattern_entry: bytes
    named_binaries: tuple[bytes, ...]  # tiny_cnn compiled with hostile names

    @staticmethod
    def build() -> Base:
        model = EXAMPLES / "tiny_cnn.onnx"
        calibration = np.load(EXAMPLES / "tiny_calib.npy")[:8]
        nn_module = xnpu.import_onnx(model)
        ir = {"nn": xnpu.print_ir(nn_module)}
        for level in ("fixed", "npu", "isa"):
            ir[level] = xnpu.print_ir(compile_model(model, calibration, stop_at=level))
        pattern_text = (ROOT / "lowering" / "legalize" / "clamp.mlir").read_text().replace("@", "@extra_")
        with tempfile.TemporaryDirectory() as scratch:
            pattern_file = Path(scratch) / "clamp.mlir"
            pattern_file.write_text(pattern_text)
            entries = [(p.name, p.benefit, p.root_name, p.summary, p.op) for p in parse_pattern_file(pattern_file, pattern_text)]
            named = []
            for seed in range(3):
                names = fuzz_hostile.hostile_names(np.random.default_rng([99, seed]), 8)
                path = Path(scratch) / f"named{seed}.onnx"
                path.write_bytes(fuzz_hostile.renamed_model(model.read_bytes(), [n.replace("\0", "") or "x" for n in names],
                                                            "in\nput é", 'lo"gits\x1b'))
                named.append(compile_model(path, calibration).to_bytes())
        return Base(model.read_bytes(), ir, compile_model(model, calibration).to_bytes(),
                    npy_bytes(np.load(EXAMPLES / "tiny_input.npy")), npy_bytes(calibration),
                    print_ir(compile_model(model, calibration, stop_at="tosa"), generic=True), pattern_text,
                    json.dumps(pdl_cache.encode(entries), separators=(",", ":")).encode(), tuple(named))


def npy_bytes(array: np.ndarray, allow_pickle: bool = False) -> bytes:
    buffer = io.BytesIO()
    np.save(buffer, array, allow_pickle=allow_pickle)
    return buffer.getvalue()


def npz_bytes(arrays: dict[str, np.ndarray]) -> bytes:
    buffer = io.BytesIO()
    np.savez(buffer, **arrays)
    return buffer.getvalue()


INTERESTING_NUMBERS = ("0", "-1", "1", "7", "127", "128", "-129", "255", "1000", "65536", "2147483648",
                       "9223372036854775808", "-9223372036854775809", "1e40", "-1e40", "3e38", "1e-45",
                       "nan", "inf", "0x7FC00000", "0.5", "100000000000")
INTERESTING_CHARS = '{}()<>[]",:=%@#^!x0-. \n\\/'


def _replace_match(text: str, pattern: str, rng: np.random.Generator, make: Callable[[str], str]) -> str:
    matches = list(re.finditer(pattern, text))
    if not matches:
        return text
    match = _pick(rng, matches)
    return text[: match.start()] + make(match.group(0)) + text[match.end() :]


def _lines_op(text: str, rng: np.random.Generator, kind: str) -> str:
    lines = text.split("\n")
    i, j = (int(v) for v in rng.integers(len(lines), size=2))
    if kind == "delete-line":
        del lines[i]
    elif kind == "duplicate-line":
        lines.insert(j, lines[i])
    else:
        lines[i], lines[j] = lines[j], lines[i]
    return "\n".join(lines)


def mutate_text(text: str, rng: np.random.Generator) -> tuple[str, str]:
    """One random mutation of IR text; returns the text and its name."""
    kind = _pick(rng, ("delete-line", "duplicate-line", "swap-lines", "truncate", "flip-char", "insert-token",
                       "number", "dimension", "element-type", "ssa-name", "op-name", "drop-quote"))
    at = int(rng.integers(len(text) + 1))
    if kind in ("delete-line", "duplicate-line", "swap-lines"):
        text = _lines_op(text, rng, kind)
    elif kind == "truncate":
        text = text[:at]
    elif kind == "flip-char":
        text = text[:at] + _pick(rng, INTERESTING_CHARS) + text[at + 1 :]
    elif kind == "insert-token":
        text = text[:at] + _pick(rng, INTERESTING_CHARS + "".join(INTERESTING_NUMBERS)) + text[at:]
    elif kind == "number":
        text = _replace_match(text, r"(?<![%\w.])-?\d+(\.\d+)?(e[-+]?\d+)?", rng, lambda _: _pick(rng, INTERESTING_NUMBERS))
    elif kind == "dimension":
        text = _replace_match(text, r"\d+x", rng, lambda _: _pick(rng, ("0x", "1x", "3x", "100000x", "4294967296x")))
    elif kind == "element-type":
        text = _replace_match(text, r"\b(f32|i8|i32|i16|i64)\b", rng, lambda _: _pick(rng, ("f32", "i8", "i32", "f64", "f16", "i1", "index", "i3")))
    elif kind == "ssa-name":
        names = sorted(set(re.findall(r"%\w+", text)))
        if names:
            text = _replace_match(text, r"%\w+", rng, lambda _: _pick(rng, names))
    elif kind == "op-name":
        names = sorted(set(re.findall(r"\b(?:nn|fixed|npu|isa)\.\w+", text)))
        if names:
            text = _replace_match(text, r"\b(?:nn|fixed|npu|isa)\.\w+", rng, lambda _: _pick(rng, names))
    else:
        quotes = [m.start() for m in re.finditer('"', text)]
        if quotes:
            q = _pick(rng, quotes)
            text = text[:q] + text[q + 1 :]
    return text, kind


BELOW_NPU = ",".join(step.name for step in below_npu("xnpu_default"))  # the pipeline's passes, in order
IR_COMMANDS = {
    "nn": (
        ["xnpu-opt", "m.mlir", "-o", "out.mlir"],
        ["xnpu-opt", "m.mlir", "-p", "fold-batch-norm,remove-noop,constant-fold", "-o", "out.mlir"],
        ["xnpu-run", "m.mlir", "--input", "input.npy", "-o", "out.npz"],
        ["xnpu-quantize", "m.mlir", "--calibration", "calib.npy", "-o", "out.mlir"],
    ),
    "fixed": (
        ["xnpu-opt", "m.mlir", "-o", "out.mlir"],
        ["xnpu-opt", "m.mlir", "-p", f"lower-fixed-to-npu,{BELOW_NPU}", "-o", "out.mlir"],
        ["xnpu-run", "m.mlir", "--input", "input.npy", "-o", "out.npz"],
    ),
    "npu": (
        ["xnpu-opt", "m.mlir", "-o", "out.mlir"],
        ["xnpu-opt", "m.mlir", "-p", BELOW_NPU, "-o", "out.mlir"],
        ["xnpu-run", "m.mlir", "--input", "input.npy", "-o", "out.npz"],
    ),
    "isa": (
        ["xnpu-opt", "m.mlir", "-o", "out.mlir"],
        ["xnpu-translate", "--emit-binary", "m.mlir", "-o", "out.xnb"],
        ["xnpu-run", "m.mlir", "--input", "input.npy", "-o", "out.npz"],
    ),
}


def ir_case(level: str, base: Base, rng: np.random.Generator) -> Case:
    text, kinds = base.ir[level], []
    for _ in range(int(rng.integers(1, 4))):
        text, kind = mutate_text(text, rng)
        kinds.append(kind)
    argv = list(_pick(rng, IR_COMMANDS[level]))
    return Case(f"ir-{level}", "+".join(kinds), argv, {"m.mlir": text.encode("utf-8", "surrogatepass"),
                "input.npy": base.input, "calib.npy": base.calibration}, output=argv[argv.index("-o") + 1])


def fix_crc(data: bytearray) -> bytes:
    """The binary's CRC-32 field recomputed over bytes [12, end) (docs/binary-format.md)."""
    if len(data) >= 12:
        struct.pack_into("<I", data, 8, zlib.crc32(bytes(data[12:])))
    return bytes(data)


INTERESTING_WORDS = (0, 1, 2, 3, 6, 7, 31, 32, 64, 255, 4096, 0x7FFF_FFFF, 0x8000_0000, 0xFFFF_FFFF)


def binary_case(base: Base, rng: np.random.Generator) -> Case:
    data = bytearray(base.binary)
    kind = _pick(rng, ("flip-bits", "header-word", "table-word", "word", "truncate", "append", "byte-run"))
    if kind == "flip-bits":
        for _ in range(int(rng.integers(1, 9))):
            bit = int(rng.integers(len(data) * 8))
            data[bit // 8] ^= 1 << (bit % 8)
    elif kind in ("header-word", "table-word", "word"):
        limit = {"header-word": 32, "table-word": 32 + 16 * 6}.get(kind, len(data) - 4)
        offset = 12 + 4 * int(rng.integers(max((limit - 12) // 4, 1)))
        if offset + 4 <= len(data):
            struct.pack_into("<I", data, offset, _pick(rng, INTERESTING_WORDS))
    elif kind == "truncate":
        del data[int(rng.integers(len(data))) :]
    elif kind == "append":
        data += bytes(rng.integers(256, size=int(rng.integers(1, 200)), dtype=np.uint8))
    else:
        start = int(rng.integers(len(data)))
        run = bytes(rng.integers(256, size=min(int(rng.integers(1, 64)), len(data) - start), dtype=np.uint8))
        data[start : start + len(run)] = run
    argv = _pick(rng, (
        ["xnpu-run", "m.xnb", "--input", "input.npy", "-o", "out.npz"],
        ["xnpu-objdump", "m.xnb", "-o", "out.mlir"],
        ["xnpu-translate", "--disassemble", "m.xnb", "-o", "out.mlir"],
    ))
    return Case("binary", kind, list(argv), {"m.xnb": fix_crc(data), "input.npy": base.input}, output=argv[-1])


def onnx_case(base: Base, rng: np.random.Generator) -> Case:
    import onnx
    from onnx import helper, numpy_helper

    model = onnx.load_from_string(base.onnx)
    graph = model.graph
    kind = _pick(rng, ("dims", "raw-data", "data-type", "values", "drop-initializer", "node-input", "drop-node",
                       "duplicate-node", "op-type", "attribute", "opset", "input-shape", "input-type",
                       "output-name", "ir-version", "bytes"))
    initializer = _pick(rng, list(graph.initializer))
    node = _pick(rng, list(graph.node))
    if kind == "dims":
        if initializer.dims:
            initializer.dims[int(rng.integers(len(initializer.dims)))] = _pick(rng, (0, -1, 2, 3, 10**12))
        else:
            initializer.dims.append(_pick(rng, (0, 2, 10**12)))
    elif kind == "raw-data":
        initializer.raw_data = initializer.raw_data[: int(rng.integers(len(initializer.raw_data) + 1))]
    elif kind == "data-type":
        initializer.data_type = _pick(rng, (0, 2, 3, 6, 7, 10, 11, 16, 99))
    elif kind == "values":
        array = numpy_helper.to_array(initializer).copy()
        flat = array.reshape(-1)
        count = max(1, int(rng.integers(flat.size + 1)))
        flat[rng.choice(flat.size, count, replace=False)] = _pick(rng, (np.inf, -np.inf, np.nan, 3e38, -3e38, 0.0))
        initializer.CopyFrom(numpy_helper.from_array(array, initializer.name))
    elif kind == "drop-initializer":
        graph.initializer.remove(initializer)
    elif kind == "node-input":
        names = [name for n in graph.node for name in n.output] + [i.name for i in graph.initializer] + ["", "ghost"]
        if node.input:
            node.input[int(rng.integers(len(node.input)))] = _pick(rng, names)
    elif kind == "drop-node":
        graph.node.remove(node)
    elif kind == "duplicate-node":
        graph.node.insert(int(rng.integers(len(graph.node) + 1)), node)
    elif kind == "op-type":
        node.op_type = _pick(rng, ("Relu", "Conv", "Gemm", "MaxPool", "AveragePool", "Add", "Softmax", "Clip",
                                   "Reshape", "BatchNormalization", "Transpose", "LSTM", "Loop", "Bogus"))
    elif kind == "attribute":
        name = _pick(rng, ("pads", "strides", "kernel_shape", "group", "axis", "dilations", "transB", "ceil_mode", "auto_pad"))
        value = _pick(rng, ([0, 0], [-1, -1], [1, 1, 1, 1], [100, 100], [1], 0, -5, 3, 10**9, "SAME_UPPER", "BOGUS", 1.5))
        del node.attribute[:]
        node.attribute.append(helper.make_attribute(name, value))
    elif kind == "opset":
        model.opset_import[0].version = _pick(rng, (0, 1, 7, 10, 11, 13, 99))
    elif kind == "input-shape":
        dim = graph.input[0].type.tensor_type.shape.dim[int(rng.integers(4))]
        value = _pick(rng, (0, -1, 2, 3, 10**9, "N"))
        if isinstance(value, str):
            dim.dim_param = value
        else:
            dim.dim_value = value
    elif kind == "input-type":
        graph.input[0].type.tensor_type.elem_type = _pick(rng, (0, 2, 6, 7, 10, 11, 16))
    elif kind == "output-name":
        graph.output[0].name = _pick(rng, ("ghost", "c1", "input", "conv1.w", ""))
    elif kind == "ir-version":
        model.ir_version = _pick(rng, (0, -1, 1, 3, 99))
    data = model.SerializeToString()
    if kind == "bytes":
        damaged = bytearray(data)
        for _ in range(int(rng.integers(1, 9))):
            damaged[int(rng.integers(len(damaged)))] = int(rng.integers(256))
        data = bytes(damaged[: int(rng.integers(len(damaged) // 2, len(damaged) + 1))])
    argv = _pick(rng, (
        ["xnpu-translate", "--import-onnx", "m.onnx", "-o", "out.mlir"],
        ["xnpu-translate", "--import-onnx", "m.onnx", "-o", "out.mlir"],
        ["xnpu-quantize", "m.onnx", "--calibration", "calib.npy", "-o", "out.mlir"],
        ["xnpu-compile", "m.onnx", "-c", "calib.npy", "-o", "out.xnb"],
    ))
    return Case("onnx", kind, list(argv), {"m.onnx": data, "calib.npy": base.calibration}, output=argv[-1])


def _npy_with_header(header: str, data: bytes = b"", version: bytes = b"\x01\x00") -> bytes:
    text = header + " " * (-(len(header) + 11) % 64) + "\n"
    return b"\x93NUMPY" + version + struct.pack("<H", len(text)) + text.encode("latin1") + data


def bad_array_file(rng: np.random.Generator, good: np.ndarray) -> tuple[str, bytes, str]:
    """(file name, bytes, what) of a damaged or unexpected numpy file."""
    shape = good.shape
    kind = _pick(rng, ("nan", "inf", "3e38", "shape", "float64", "int32", "bool", "big-endian", "fortran",
                       "empty", "object", "structured", "string", "huge-header", "negative-header", "bad-descr",
                       "not-a-dict", "truncated-data", "truncated-header", "version", "not-npy", "zip-garbage",
                       "zip-member", "zip-bad-member", "zip-wrong-name", "zip-two"))
    values = good.copy()
    name = "data.npy"
    if kind in ("nan", "inf", "3e38"):
        flat = values.reshape(-1)
        flat[rng.choice(flat.size, max(1, int(rng.integers(flat.size))), replace=False)] = float(kind)
        return name, npy_bytes(values), kind
    if kind == "shape":
        return name, npy_bytes(np.zeros(_pick(rng, ((1, 16, 16), (2, 1, 16, 15), (1,), (3, 2, 1, 16, 16))), np.float32)), kind
    if kind in ("float64", "int32", "bool"):
        return name, npy_bytes(values.astype(kind)), kind
    if kind == "big-endian":
        return name, npy_bytes(values.astype(">f4")), kind
    if kind == "fortran":
        return name, npy_bytes(np.asfortranarray(values)), kind
    if kind == "empty":
        return name, npy_bytes(values[:0]), kind
    if kind == "object":
        return name, npy_bytes(np.array([{"x": 1}, None], dtype=object), allow_pickle=True), kind
    if kind == "structured":
        return name, npy_bytes(np.zeros(shape[:1], dtype=[("a", "<f4"), ("b", "<i4")])), kind
    if kind == "string":
        return name, npy_bytes(np.array(["input"] * shape[0])), kind
    if kind == "huge-header":
        dims = ", ".join(str(d) for d in (10**11,) + shape[1:])
        return name, _npy_with_header(f"{{'descr': '<f4', 'fortran_order': False, 'shape': ({dims}), }}", b"\0" * 64), kind
    if kind == "negative-header":
        return name, _npy_with_header("{'descr': '<f4', 'fortran_order': False, 'shape': (-4, 1, 16, 16), }"), kind
    if kind == "bad-descr":
        descr = _pick(rng, ("'<q9'", "'O'", "[('a', 'O')]", "12", "'<f4' + 'x'"))
        return name, _npy_with_header(f"{{'descr': {descr}, 'fortran_order': False, 'shape': (4,), }}", b"\0" * 64), kind
    if kind == "not-a-dict":
        return name, _npy_with_header(_pick(rng, ("[1, 2, 3]", "{'descr': '<f4'}", "((((((((((((((((((((", "__import__('os')"))), kind
    if kind == "truncated-data":
        data = npy_bytes(values)
        return name, data[: int(rng.integers(128, len(data)))], kind
    if kind == "truncated-header":
        return name, npy_bytes(values)[: int(rng.integers(6, 128))], kind
    if kind == "version":
        return name, _npy_with_header("{'descr': '<f4', 'fortran_order': False, 'shape': (4,), }", b"\0" * 16,
                                      _pick(rng, (b"\x03\x00", b"\x09\x09", b"\x00\x00"))), kind
    if kind == "not-npy":
        return name, bytes(rng.integers(256, size=int(rng.integers(0, 300)), dtype=np.uint8)), kind
    name = "data.npz"
    if kind == "zip-garbage":
        return name, b"PK\x03\x04" + bytes(rng.integers(256, size=200, dtype=np.uint8)), kind
    import zipfile

    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w") as archive:
        if kind == "zip-member":
            archive.writestr("readme.txt", "not an array")
        elif kind == "zip-bad-member":
            archive.writestr("input.npy", _npy_with_header("{'descr': '<f4', 'fortran_order': False, 'shape': (100000000000,), }"))
        elif kind == "zip-wrong-name":
            archive.writestr("images.npy", npy_bytes(values))
            archive.writestr("labels.npy", npy_bytes(np.arange(shape[0])))
        else:
            archive.writestr("input.npy", npy_bytes(values))
            archive.writestr("extra.npy", npy_bytes(values))
    return name, buffer.getvalue(), kind


def numpy_case(base: Base, rng: np.random.Generator) -> Case:
    good = np.load(io.BytesIO(base.input if rng.random() < 0.5 else base.calibration))
    name, data, kind = bad_array_file(rng, good)
    files = {name: data, "m.onnx": base.onnx, "nn.mlir": base.ir["nn"].encode(), "m.xnb": base.binary}
    argv = _pick(rng, (
        ["xnpu-run", "nn.mlir", "--input", name, "-o", "out.npz"],
        ["xnpu-run", "m.xnb", "--input", name, "-o", "out.npz"],
        ["xnpu-run", "nn.mlir", "--input", f"input={name}", "-o", "out.npz"],
        ["xnpu-quantize", "m.onnx", "--calibration", name, "-o", "out.mlir"],
        ["xnpu-compile", "m.onnx", "-c", name, "-o", "out.xnb"],
        ["xnpu-opt", "nn.mlir", "-p", f'calibrate{{data="{name}"}}', "-o", "out.mlir"],
    ))
    return Case("numpy", kind, list(argv), files, output=argv[-1])


def paths_case(base: Base, rng: np.random.Generator) -> Case:
    files = {"m.onnx": base.onnx, "nn.mlir": base.ir["nn"].encode(), "isa.mlir": base.ir["isa"].encode(),
             "m.xnb": base.binary, "input.npy": base.input, "calib.npy": base.calibration}
    compile_argv = ["xnpu-compile", "m.onnx", "-c", "calib.npy"]
    kind = _pick(rng, ("output-is-input", "output-hard-link", "output-symlink", "output-directory", "output-missing-dir",
                       "output-fifo", "output-null", "output-full", "input-directory", "input-missing", "input-empty",
                       "input-fifo", "input-zero", "option-value", "target"))
    case = Case("paths", kind, [], files)
    if kind in ("output-is-input", "output-hard-link", "output-symlink"):
        argv, source = _pick(rng, (
            (compile_argv, "m.onnx"), (compile_argv, "calib.npy"),
            (["xnpu-opt", "nn.mlir"], "nn.mlir"),
            (["xnpu-translate", "--emit-binary", "isa.mlir"], "isa.mlir"),
            (["xnpu-translate", "--disassemble", "m.xnb"], "m.xnb"),
            (["xnpu-objdump", "m.xnb"], "m.xnb"),
            (["xnpu-run", "nn.mlir", "--input", "input.npy"], "input.npy"),
            (["xnpu-quantize", "nn.mlir", "--calibration", "calib.npy"], "nn.mlir"),
        ))
        output = source if kind == "output-is-input" else f"other{Path(source).suffix}"
        if kind == "output-is-input" and rng.random() < 0.5:
            output = f"./{source}"
        if kind != "output-is-input":
            case.links[output] = ("hard" if kind == "output-hard-link" else "sym", source)
        case.argv, case.output = [*argv, "-o", output], None
        return case
    if kind in ("output-directory", "output-missing-dir"):
        output = _pick(rng, (".", "..", "sub")) if kind == "output-directory" else "missing/dir/out.mlir"
        case.files["sub/keep"] = b""
        case.argv = [*_pick(rng, (compile_argv, ["xnpu-opt", "nn.mlir"], ["xnpu-objdump", "m.xnb"])), "-o", output]
        case.output = output if kind == "output-missing-dir" else None
        return case
    if kind in ("output-fifo", "output-null", "output-full"):
        output = {"output-fifo": "pipe", "output-null": "null", "output-full": "full"}[kind]
        if kind == "output-fifo":
            case.fifos, case.drain = (output,), output
        else:
            case.devices[output] = (1, 3) if kind == "output-null" else (1, 7)
        suffix = _pick(rng, (compile_argv, ["xnpu-opt", "nn.mlir"], ["xnpu-translate", "--disassemble", "m.xnb"],
                             ["xnpu-run", "nn.mlir", "--input", "input.npy"]))
        case.argv = [*suffix, "-o", output]
        return case
    if kind.startswith("input-"):
        path = {"input-directory": "sub", "input-missing": "ghost.onnx", "input-empty": "empty",
                "input-fifo": "pipe", "input-zero": "zero"}[kind]
        case.files["sub/keep"] = b""
        case.files["empty"] = b""
        if kind == "input-fifo":
            case.fifos = (path,)
        if kind == "input-zero":
            case.devices[path] = (1, 5)
        argv = _pick(rng, (
            ["xnpu-compile", path, "-c", "calib.npy", "-o", "out.xnb"], ["xnpu-compile", "m.onnx", "-c", path, "-o", "out.xnb"],
            ["xnpu-opt", path, "-o", "out.mlir"], ["xnpu-objdump", path, "-o", "out.mlir"],
            ["xnpu-run", path, "--input", "input.npy", "-o", "out.npz"], ["xnpu-run", "nn.mlir", "--input", path, "-o", "out.npz"],
            ["xnpu-translate", "--import-onnx", path, "-o", "out.mlir"], ["xnpu-quantize", "m.onnx", "--calibration", path, "-o", "out.mlir"],
        ))
        case.argv, case.output = argv, argv[-1]
        return case
    if kind == "option-value":
        option, value = _pick(rng, (
            ("--compress-bits", _pick(rng, ("-1", "0", "9", "100", "abc", "4"))),
            ("--compress-step", _pick(rng, ("0", "-1", "nan", "inf", "1e-30", "1e30", "x"))),
            ("--compress-method", "bogus"), ("--compress-min-elements", "-3"),
            ("--calibration-samples", _pick(rng, ("0", "-5", "99999999999"))),
            ("--emit", _pick(rng, ("nn", "fixed", "isa", "bin", "llvm"))),
            ("--method", _pick(rng, ("percentile", "entropy", "bogus"))),
        ))
        case.argv, case.output = [*compile_argv, option, value, "-o", "out.xnb"], "out.xnb"
        return case
    target = _pick(rng, ("ghost", "sub", "bad.toml", "calib.npy", "xnpu_lite", "pipe.toml"))
    case.files["bad.toml"] = _pick(rng, (b"[target\nname=", b'name = "t"\nid = -1\n', b"\x00\xff", b'name = "t"\n'))
    case.files["sub/keep"] = b""
    case.fifos = ("pipe.toml",)
    case.argv = _pick(rng, ([*compile_argv, "--target", target, "-o", "out.xnb"],
                            ["xnpu-opt", "nn.mlir", "--target", target, "-o", "out.mlir"],
                            ["xnpu-objdump", "m.xnb", "--target", target, "-o", "out.mlir"]))
    case.output = case.argv[-1]
    return case


def make_case(base: Base, seed: int, index: int, categories: tuple[str, ...] = CATEGORIES) -> Case:
    """Case `index` of the campaign with `seed`: the categories in turn, each with its own random stream."""
    rng = np.random.default_rng([seed, index])
    category = categories[index % len(categories)]
    if category.startswith("ir-"):
        return ir_case(category[3:], base, rng)
    if category in fuzz_hostile.FAMILIES:
        return getattr(fuzz_hostile, f"{category}_case")(base, rng, mutate_text)
    return {"binary": binary_case, "onnx": onnx_case, "numpy": numpy_case, "paths": paths_case}[category](base, rng)


# --------------------------------------------------------------------------------------
# Running a case
# --------------------------------------------------------------------------------------


def tool_mains() -> dict[str, Callable]:
    """Every tool's `main`, with the modules its work needs imported before the forks."""

    return {"xnpu-compile": xnpu_compile.main, "xnpu-objdump": xnpu_objdump.main, "xnpu-opt": xnpu_opt.main,
            "xnpu-quantize": xnpu_quantize.main, "xnpu-run": xnpu_run.main, "xnpu-translate": xnpu_translate.main}


def prepare(case: Case, directory: Path) -> dict[str, object]:
    """Write the case's files; returns what each input looks like before the run."""
    directory.mkdir(parents=True)
    for name, data in case.files.items():
        (directory / name).parent.mkdir(parents=True, exist_ok=True)
        (directory / name).write_bytes(data)
    for name in case.fifos:
        os.mkfifo(directory / name)
    for name, (major, minor) in case.devices.items():
        try:
            os.mknod(directory / name, stat.S_IFCHR | 0o666, os.makedev(major, minor))
        except OSError:  # not permitted here: a regular file stands in (the case still must end cleanly)
            (directory / name).write_bytes(b"")
    for name, (kind, target) in case.links.items():
        (os.link if kind == "hard" else os.symlink)(target if kind == "sym" else directory / target, directory / name)
    if case.cache_entry is not None:
        fuzz_hostile.prepare_cache_entry(case, directory)
    return snapshot(case, directory)


def snapshot(case: Case, directory: Path) -> dict[str, object]:
    state: dict[str, object] = {}
    for name in [*case.files, *case.fifos, *case.devices]:
        path = directory / name
        mode = path.lstat().st_mode
        state[name] = path.read_bytes() if stat.S_ISREG(mode) else stat.S_IFMT(mode)
    return state


def start_child(case: Case, directory: Path, mains: dict[str, Callable], streams: Path | None = None) -> int:
    """Fork a child that runs the case's tool (run_child) and return its pid; this process's
    buffered output is flushed first, so the child does not write it again."""
    sys.stdout.flush()
    sys.stderr.flush()
    pid = os.fork()
    if pid == 0:
        run_child(case, directory, mains, streams)
    return pid


def run_child(case: Case, directory: Path, mains: dict[str, Callable], streams: Path | None = None) -> None:
    """In the forked child: run the tool as its console script would, then _exit with its status.
    Its stdout and stderr go to the files `stdout` and `stderr` in `streams` (the case's directory
    unless given)."""
    code = 1
    try:
        streams = Path(directory if streams is None else streams).absolute()
        os.chdir(directory)
        os.environ.update(case.env)
        for fd, name, flags in ((0, os.devnull, os.O_RDONLY), (1, streams / "stdout", os.O_WRONLY | os.O_CREAT),
                                (2, streams / "stderr", os.O_WRONLY | os.O_CREAT)):
            os.dup2(os.open(name, flags, 0o644), fd)
        sys.stdin = open(0, closefd=False)
        sys.stdout = io.TextIOWrapper(open(1, "wb", closefd=False), line_buffering=True)
        sys.stderr = io.TextIOWrapper(open(2, "wb", closefd=False), line_buffering=True)
        if case.drain is not None:
            threading.Thread(target=lambda: Path(case.drain).read_bytes(), daemon=True).start()
        code = exit_status_of(mains[case.tool], case.argv[1:])
    finally:
        os._exit(code)


def exit_status_of(main: Callable, args: list[str]) -> int:
    """Run a tool's `main` as its console script would (`sys.exit(main())`) in a forked child
    whose streams are bound: Python's default warning filters (not the parent's, pytest's), the
    status main returns or exits with (a string exit prints it, status 1), a traceback and
    status 1 for anything else; the streams flushed."""
    warnings.resetwarnings()
    for category in (DeprecationWarning, PendingDeprecationWarning, ImportWarning, ResourceWarning):
        warnings.simplefilter("ignore", category)
    try:
        result = main(args)
        code = result if isinstance(result, int) else 0
    except SystemExit as exit_:
        code = exit_.code if isinstance(exit_.code, int) else (0 if exit_.code is None else 1)
        if isinstance(exit_.code, str):
            print(exit_.code, file=sys.stderr)
    except BaseException:
        traceback.print_exc()
        code = 1
    sys.stdout.flush()
    sys.stderr.flush()
    return code


def classify(case: Case, directory: Path, status: int | None, before: dict[str, object], peak_bytes: int = 0) -> tuple[str, str]:
    """(outcome, stderr) of a finished (or timed-out, status None) case."""
    stderr = (directory / "stderr").read_text(errors="replace") if (directory / "stderr").exists() else ""
    stdout = (directory / "stdout").read_text(errors="replace") if (directory / "stdout").exists() else ""
    if (directory / fuzz_hostile.PWNED).exists():
        return "code-ran", stderr
    if peak_bytes > MEMORY_LIMIT_BYTES:
        return "over-memory", f"{peak_bytes >> 20} MB more than the campaign's process at its peak\n" + stderr
    if status is None:
        return "hang", stderr
    if os.WIFSIGNALED(status):
        return "crashed", stderr
    code = os.WEXITSTATUS(status)
    lines = [line for line in stderr.splitlines() if line.strip()]
    if any("Traceback (most recent call last)" in line for line in lines):
        return "traceback", stderr
    if any(CONTROL.search(line) for line in [*lines, *stdout.split("\n")]):
        return "messy", stderr  # a name printed raw: it could end the line or recolour the terminal
    after = snapshot(case, directory)
    changed = [name for name in before if name != case.output and after.get(name) != before[name]]
    if changed:
        return "input-changed", stderr
    own = (f"{case.tool}: warning: ", f"{case.tool}: note: ")
    if code == 0:  # the tool's own notes and warnings, and the placement summary (docs/npu.md)
        return ("ok" if all(line.startswith((*own, "placement on ", "  ")) for line in lines) else "messy"), stderr
    if code not in (1, 2):
        return "crashed", stderr
    if not lines or not ERROR_LINE.match(lines[-1]) or not all(line.startswith(own) for line in lines[:-1]):
        return "messy", stderr
    leftovers = [p.name for p in directory.iterdir() if p.name.startswith(".") and p.name not in (".", "..")]
    if case.output is not None and (directory / case.output).exists() and case.output not in before or leftovers:
        return "output-left", stderr
    return "error", stderr


@dataclasses.dataclass
class Result:
    case: Case
    outcome: str
    stderr: str
    seconds: float


# A case hangs when it has computed for `timeout` seconds, or waited WALL_FACTOR times as long
# on the clock (a read that blocks uses no CPU): on a shared, loaded machine a case that computes
# for 6 s (an IREE compile) can take minutes on the clock.
WALL_FACTOR = 10


def cpu_seconds(pid: int) -> float:
    """The CPU time a running child has used so far (Linux /proc; 0 where it cannot be read)."""
    try:
        fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    except (OSError, IndexError):
        return 0.0
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")  # utime, stime


def run_cases(cases: list[Case], root: Path, timeout: float, jobs: int, progress: Callable[[Result], None]) -> list[Result]:
    """Run every case in a forked child, `jobs` at a time, each under `timeout` seconds of CPU."""
    mains = tool_mains()
    pending = list(enumerate(cases))
    running: dict[int, tuple[int, float, dict[str, object]]] = {}  # pid -> (index, start, before)
    results: list[Result | None] = [None] * len(cases)
    while pending or running:
        while pending and len(running) < jobs:
            index, case = pending.pop(0)
            directory = root / f"case{index:05d}"
            before = prepare(case, directory)
            running[start_child(case, directory, mains)] = (index, time.monotonic(), before)
        finished = []
        for pid, (index, start, before) in running.items():
            done, status, usage = os.wait4(pid, os.WNOHANG)
            if not done and (cpu_seconds(pid) > timeout or time.monotonic() - start > timeout * WALL_FACTOR):
                os.kill(pid, signal.SIGKILL)
                _, _, usage = os.wait4(pid, 0)
                done, status = pid, None
            if done:
                finished.append(pid)
                case = cases[index]
                # a forked child's peak counts the pages it shares with this process: only what is above is its own
                peak = usage.ru_maxrss * 1024 - resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024
                outcome, stderr = classify(case, root / f"case{index:05d}", status, before, peak)
                results[index] = Result(case, outcome, stderr, time.monotonic() - start)
                progress(results[index])
        for pid in finished:
            del running[pid]
        if running and not finished:
            time.sleep(0.005)
    return [r for r in results if r is not None]


# --------------------------------------------------------------------------------------
# The campaign
# --------------------------------------------------------------------------------------


def counts(results: list[Result]) -> dict[str, dict[str, int]]:
    table: dict[str, Counter] = defaultdict(Counter)
    for result in results:
        table[result.case.category][result.outcome] += 1
    return {category: dict(table[category]) for category in CATEGORIES if category in table}


def summary_table(results: list[Result]) -> str:
    table = counts(results)
    columns = [o for o in OUTCOMES if any(o in row for row in table.values())]
    lines = ["| category | cases | " + " | ".join(columns) + " |", "|---|---" + "|---" * len(columns) + "|"]
    for category, row in table.items():
        lines.append(f"| {category} | {sum(row.values())} | " + " | ".join(str(row.get(o, 0)) for o in columns) + " |")
    total = Counter(r.outcome for r in results)
    lines.append(f"| all | {len(results)} | " + " | ".join(str(total.get(o, 0)) for o in columns) + " |")
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m xnpu.tools.fuzz", description=__doc__.splitlines()[0])
    parser.add_argument("--cases", type=int, default=3000, help="number of cases (default 3000)")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--timeout", type=float, default=60.0,
                        help="seconds of CPU (or ten times as many on the clock) before a case counts as a hang")
    parser.add_argument("--jobs", type=int, default=os.cpu_count() or 1, help="cases run at once")
    parser.add_argument("--json", action="store_true", help="print the counts and the bugs as JSON")
    parser.add_argument("--keep", type=Path, help="keep every case's directory under this one")
    parser.add_argument("--categories", default=",".join(CATEGORIES), help="the categories to run, in turn (default: all)")
    args = parser.parse_args(argv)
    categories = tuple(args.categories.split(","))
    if not set(categories) <= set(CATEGORIES):
        parser.error(f"unknown categories: {', '.join(sorted(set(categories) - set(CATEGORIES)))}")
    base = Base.build()
    cases = [make_case(base, args.seed, index, categories) for index in range(args.cases)]
    root = Path(tempfile.mkdtemp(prefix="xnpu-fuzz.")) if args.keep is None else args.keep
    started = time.monotonic()

    def progress(result: Result) -> None:
        if not args.json and result.outcome not in CLEAN:
            print(f"{result.outcome}: {result.case.category} {result.case.what}: {' '.join(result.case.argv)}", flush=True)

    try:
        results = run_cases(cases, root, args.timeout, args.jobs, progress)
    finally:
        if args.keep is None:
            shutil.rmtree(root, ignore_errors=True)
    bugs = [r for r in results if r.outcome not in CLEAN]
    if args.json:
        print(json.dumps({
            "cases": len(results), "seed": args.seed, "seconds": round(time.monotonic() - started, 1),
            "counts": counts(results),
            "bugs": [{"category": r.case.category, "what": r.case.what, "argv": r.case.argv, "outcome": r.outcome,
                      "stderr": r.stderr[-2000:]} for r in bugs[:50]],
        }, indent=1))
    else:
        print(f"{len(results)} cases, seed {args.seed}, {time.monotonic() - started:.0f} s\n")
        print(summary_table(results))
    return 1 if bugs else 0


if __name__ == "__main__":
    sys.exit(main())
