"""The fuzz campaign's hostile families (tools/fuzz.py runs them; docs/reliability.md):

- `cache`: the pattern cache entry of a pattern directory given as `patterns=` (beside the
  file or in the user cache directory) damaged, replaced by a pickle whose code would leave
  a file `pwned` behind, or by any bytes, under a header that holds for the pattern file (so
  the decoder, not the header check, is what meets the damage), run through `xnpu-opt`;
- `tosa`: the TOSA export of tiny_cnn, damaged as text or aimed at what IREE trusts (gather
  indices and tables, slices, shapes, element types, ops the exporter never writes), run by
  `xnpu-run` through IREE;
- `names`: tiny_cnn with node, input and output names holding control characters, terminal
  escapes, quotes, bidirectional overrides, line separators and other scripts, through every
  level and the report (and binaries built with such names through `xnpu-objdump`);
- `sizes`: a few bytes describing gigabytes: splat literals, function arguments, ONNX shape
  computations (ConstantOfShape, Expand, Range, Tile, Resize), a convolution of very many
  channels, brackets nested deep; sizes drawn around the budget (core/budget.py).
"""

from __future__ import annotations

import io
import json
import os
import pickle
import re
import sys
from pathlib import Path

import numpy as np

from xnpu.pdl import cache as pdl_cache
from xnpu.tools.fuzz_case import Case
from xnpu.tools.fuzz_case import pick as _pick

FAMILIES = ("cache", "tosa", "names", "sizes")
CACHE_PATTERN_FILE = "extra/clamp.mlir"  # a pattern directory given as `patterns=extra`
PWNED = "pwned"  # what a planted pickle creates if it ever runs: the case is then a bug

HOSTILE_NAMES = ("conv\nisa.halt", "relu\r\n  %0 = isa.load", "\x1b[31mred\x1b[0m", "\x1b]0;title\x07", "nul\x00byte",
                 'quo"te', "back\\slash", "\u202eevil", "line\u2028sep", "tab\there", "conv_é", "層", "😀",
                 "=HYPERLINK(\"http://x\",\"y\")", "@SUM(A1:A2)", "-1+2", "", " ", "a" * 5000, "loc(\"x\")",
                 "}\n}\nfunc.func @evil() {", "%0", "#map", "\x7f\x80\x9f")


# --------------------------------------------------------------------------------------
# cache
# --------------------------------------------------------------------------------------


class _Planted:
    """A pickle that creates PWNED in the working directory (the case's) when it is unpickled."""

    def __reduce__(self):
        return (eval, (f"open({PWNED!r}, 'w').close()",))


def cache_case(base, rng: np.random.Generator, mutate_text):
    text = base.pattern_text
    payload = base.pattern_entry
    kind = _pick(rng, ("json-mutated", "json-mutated", "json-value", "pickle", "pickle-old-name", "bytes", "truncated",
                       "wrong-header", "huge-number", "deep-json"))
    if kind == "json-mutated":
        damaged, what = mutate_text(payload.decode(), rng)
        payload, kind = damaged.encode("utf-8", "surrogatepass"), f"json-{what}"
    elif kind == "json-value":
        document = json.loads(payload)
        _replace_json_value(document, rng)
        payload = json.dumps(document).encode()
    elif kind in ("pickle", "pickle-old-name"):
        payload = pickle.dumps(_Planted())
    elif kind == "bytes":
        payload = bytes(rng.integers(256, size=int(rng.integers(0, 400)), dtype=np.uint8))
    elif kind == "truncated":
        payload = payload[: int(rng.integers(len(payload)))]
    elif kind == "huge-number":
        payload = re.sub(rb"\d+", lambda m: _pick(rng, (b"1" + b"0" * 5000, b"-1", b"1e999", b"99999999999")), payload, count=3)
    elif kind == "deep-json":
        payload = b"[" * int(rng.integers(500, 100_000)) + b"]"
    header = pdl_cache._header(text, payload)
    if kind == "wrong-header":
        header = header.replace(b"xnpu-patterns", b"xnpu-patterns 99")
    entry = header + payload
    place = "old" if kind == "pickle-old-name" else _pick(rng, ("pycache", "user"))
    fixed = base.ir["fixed"].encode()
    argv = ["xnpu-opt", "m.mlir", "-p", 'legalize{target="xnpu_lite" patterns="extra"},lower-fixed-to-npu', "-o", "out.mlir"]
    case = Case("cache", f"{kind}@{place}", argv, {"m.mlir": fixed, CACHE_PATTERN_FILE: text.encode()}, output="out.mlir")
    case.cache_entry = (place, entry)
    case.env = {"XDG_CACHE_HOME": "usercache"}  # made absolute in the case's directory
    return case


def _replace_json_value(document, rng: np.random.Generator) -> None:
    """One value somewhere in a JSON document replaced by another of a surprising type."""
    containers = []

    def walk(node):
        if isinstance(node, (list, dict)):
            containers.append(node)
            for child in (node.values() if isinstance(node, dict) else node):
                walk(child)

    walk(document)
    container = _pick(rng, containers)
    if not container:
        return
    key = _pick(rng, list(container)) if isinstance(container, dict) else int(rng.integers(len(container)))
    container[key] = _pick(rng, (None, -1, 2**70, 1.5, "", "builtin.module", "pdl.operation", [], {}, [[[]]], True,
                                 "i32", "tensor<100000000000xf32>", "#builtin.bogus", "!pdl.value"))


# --------------------------------------------------------------------------------------
# tosa
# --------------------------------------------------------------------------------------


TOSA_EDITS = (
    (r"dense<(-?\d+)> : tensor<(\d+)xi32>", lambda m, rng: f"dense<{_pick(rng, ('-1', '256', '70000', '2147483647'))}> : tensor<{m.group(2)}xi32>"),
    (r"tensor<256xi8>", lambda m, rng: _pick(rng, ("tensor<255xi8>", "tensor<257xi8>", "tensor<1xi8>", "tensor<0xi8>"))),
    (r"tensor<513xi16>", lambda m, rng: _pick(rng, ("tensor<512xi16>", "tensor<514xi16>"))),
    (r"\"tosa\.\w+\"", lambda m, rng: _pick(rng, ('"tosa.gather"', '"tosa.custom"', '"tosa.while_loop"', '"func.call"',
                                                   '"tosa.table"', '"tosa.slice"', '"arith.constant"'))),
    (r"\d+x", lambda m, rng: _pick(rng, ("0x", "1x", "2x", "?x", "1000000x"))),
    (r"\bi(8|16|32)\b", lambda m, rng: _pick(rng, ("i1", "i4", "i48", "i64", "f32", "f16", "index"))),
    (r"array<i64: [^>]*>", lambda m, rng: _pick(rng, ("array<i64: -1, 0, 0, 0>", "array<i64: 1000000, 0, 0, 0>",
                                                     "array<i64>", "array<i64: 9223372036854775807>"))),
)


def tosa_case(base, rng: np.random.Generator, mutate_text):
    text, kinds = base.tosa, []
    for _ in range(int(rng.integers(1, 3))):
        if rng.random() < 0.5:
            text, kind = mutate_text(text, rng)
        else:
            pattern, make = _pick(rng, TOSA_EDITS)
            matches = list(re.finditer(pattern, text))
            kind = "edit-" + pattern[:12]
            if matches:
                match = _pick(rng, matches)
                text = text[: match.start()] + make(match, rng) + text[match.end():]
        kinds.append(kind)
    argv = ["xnpu-run", "m.tosa.mlir", "--input", "input.npy", "-o", "out.npz"]
    return Case("tosa", "+".join(kinds), argv, {"m.tosa.mlir": text.encode("utf-8", "surrogatepass"), "input.npy": base.input},
                output="out.npz")


# --------------------------------------------------------------------------------------
# names
# --------------------------------------------------------------------------------------


def renamed_model(onnx_bytes: bytes, names: list[str], input_name: str, output_name: str) -> bytes:
    """tiny_cnn with its nodes named `names` in turn, and its input and output renamed."""
    import onnx

    model = onnx.load_from_string(onnx_bytes)
    graph = model.graph
    for index, node in enumerate(graph.node):
        node.name = names[index % len(names)] + ("" if index < len(names) else f"#{index}")
        for values in (node.input, node.output):
            for position, value in enumerate(values):
                values[position] = {"input": input_name, "logits": output_name}.get(value, value)
    graph.input[0].name, graph.output[0].name = input_name, output_name
    return model.SerializeToString()


def hostile_names(rng: np.random.Generator, count: int) -> list[str]:
    names = []
    for _ in range(count):
        parts = [_pick(rng, HOSTILE_NAMES) for _ in range(int(rng.integers(1, 3)))]
        if rng.random() < 0.3:
            parts.append(chr(int(rng.integers(0, 0x3000))))
        names.append("".join(parts))
    return names


def names_case(base, rng: np.random.Generator, mutate_text):
    if rng.random() < 0.2 and base.named_binaries:  # a binary compiled with such names, through objdump
        index = int(rng.integers(len(base.named_binaries)))
        argv = _pick(rng, (["xnpu-objdump", "m.xnb", "-o", "out.mlir"], ["xnpu-objdump", "m.xnb"],
                           ["xnpu-run", "m.xnb", "--input", "input.npy", "--profile"],
                           ["xnpu-run", "m.xnb", "--input", "input.npy", "--trace"]))
        return Case("names", f"binary{index}", list(argv), {"m.xnb": base.named_binaries[index], "input.npy": base.input},
                    output="out.mlir" if "-o" in argv else None)
    names = hostile_names(rng, int(rng.integers(1, 8)))
    input_name, output_name = (_pick(rng, (*HOSTILE_NAMES, "input")) for _ in range(2))
    model = renamed_model(base.onnx, names, input_name or "input", output_name or "logits")
    calibration = base.calibration if rng.random() < 0.7 else _npz_named(base.calibration, input_name)
    argv = _pick(rng, (
        ["xnpu-translate", "--import-onnx", "m.onnx", "-o", "out.mlir"],
        ["xnpu-compile", "m.onnx", "-c", "calib.npy", "--emit", "nn", "-o", "out.mlir"],
        ["xnpu-compile", "m.onnx", "-c", "calib.npy", "--emit", "fixed", "-o", "out.mlir"],
        ["xnpu-compile", "m.onnx", "-c", "calib.npy", "--emit", "npu", "-o", "out.mlir"],
        ["xnpu-compile", "m.onnx", "-c", "calib.npy", "--emit", "isa", "-o", "out.mlir"],
        ["xnpu-compile", "m.onnx", "-c", "calib.npy", "--emit", "tosa", "-o", "out.mlir"],
        ["xnpu-compile", "m.onnx", "-c", "calib.npy", "-o", "out.xnb"],
        ["xnpu-compile", "m.onnx", "-c", "calib.npy", "--target", "xnpu_lite", "--report", "rep", "-o", "out.xnb"],
        ["xnpu-quantize", "m.onnx", "--calibration", "calib.npy", "--report", "rep", "-o", "out.mlir"],
        ["xnpu-compile", "m.onnx", "-c", "calib.npy", "--input-shape", f"{input_name}=2,1,16,16", "-o", "out.xnb"],
    ))
    what = "names=" + ",".join(repr(n)[:24] for n in names[:3])
    return Case("names", what, list(argv), {"m.onnx": model, "calib.npy": calibration}, output=argv[-1])


def _npz_named(npy: bytes, name: str) -> bytes:
    buffer = io.BytesIO()
    try:
        np.savez(buffer, **{name: np.load(io.BytesIO(npy))})
    except (TypeError, ValueError):
        return npy
    return buffer.getvalue()


# --------------------------------------------------------------------------------------
# sizes
# --------------------------------------------------------------------------------------


def _elements(rng: np.random.Generator) -> int:
    """A size around the budget: 2^20 to 2^40 elements, near the 256 MiB line more often."""
    if rng.random() < 0.4:
        return int(2 ** 26 * _pick(rng, (0.5, 0.99, 1.0, 1.01, 2.0)))
    return int(2 ** rng.uniform(20, 40))


def _dims(rng: np.random.Generator, elements: int) -> list[int]:
    rank = int(rng.integers(1, 5))
    side = max(1, round(elements ** (1 / rank)))
    return [side] * rank


def sizes_case(base, rng: np.random.Generator, mutate_text):
    kind = _pick(rng, ("splat", "argument", "constant-of-shape", "expand", "range", "tile", "resize", "channels", "nesting"))
    dims = _dims(rng, _elements(rng))
    shape = "x".join(map(str, dims))
    files = {"x.npy": _npy(np.ones((1, 4), np.float32)), "calib.npy": _npy(np.ones((2, 1, 4), np.float32))}
    if kind in ("splat", "argument", "nesting"):
        if kind == "splat":
            element = _pick(rng, ("f32", "i8", "i32", "f64", "i1"))
            value = "1.0" if element.startswith("f") else "1"
            body = f"  %c = nn.constant dense<{value}> : tensor<{shape}x{element}>\n" if rng.random() < 0.5 else ""
            signature = "%x: tensor<1x4xf32>"
            text = (f"func.func @main({signature}) -> tensor<1x4xf32> {{\n{body}"
                    f"  %k = nn.constant dense<{value}> : tensor<{shape}x{element}>\n  func.return %x : tensor<1x4xf32>\n}}\n")
        elif kind == "argument":
            text = (f"func.func @main(%x: tensor<{shape}xf32>) -> tensor<{shape}xf32> {{\n"
                    f"  %y = nn.relu %x : (tensor<{shape}xf32>) -> tensor<{shape}xf32>\n  func.return %y : tensor<{shape}xf32>\n}}\n")
        else:
            depth = int(rng.integers(40, 20000))
            text = ("func.func @main(%x: tensor<1x4xf32>) -> tensor<1x4xf32> attributes {deep = "
                    + "[" * depth + "1" + "]" * depth + "} {\n  func.return %x : tensor<1x4xf32>\n}\n")
        files["m.mlir"] = text.encode()
        argv = _pick(rng, (["xnpu-opt", "m.mlir", "-o", "out.mlir"], ["xnpu-run", "m.mlir", "--input", "x.npy", "-o", "out.npz"],
                           ["xnpu-opt", "m.mlir", "-p", "constant-fold", "-o", "out.mlir"],
                           ["xnpu-quantize", "m.mlir", "--calibration", "calib.npy", "-o", "out.mlir"]))
        return Case("sizes", f"{kind} {shape}", list(argv), files, output=argv[-1])
    files["m.onnx"] = _onnx_bomb(kind, dims, rng)
    argv = _pick(rng, (["xnpu-translate", "--import-onnx", "m.onnx", "-o", "out.mlir"],
                       ["xnpu-compile", "m.onnx", "-c", "calib.npy", "-o", "out.xnb"]))
    return Case("sizes", f"{kind} {shape}", list(argv), files, output=argv[-1])


def _npy(array: np.ndarray) -> bytes:
    buffer = io.BytesIO()
    np.save(buffer, array)
    return buffer.getvalue()


def _onnx_bomb(kind: str, dims: list[int], rng: np.random.Generator) -> bytes:
    """A model of a few hundred bytes whose shape computation (or one layer) describes `dims`."""
    from onnx import TensorProto, helper, numpy_helper

    ints = lambda values: np.array(values, np.int64)  # noqa: E731
    x_shape = [1, 1, 1, 4]
    if kind == "constant-of-shape":
        nodes, init = [helper.make_node("ConstantOfShape", ["shape"], ["big"], name="bomb")], {"shape": ints(dims)}
    elif kind == "expand":
        nodes, init = ([helper.make_node("Expand", ["one", "shape"], ["big"], name="bomb")],
                       {"one": np.ones([1] * len(dims), np.float32), "shape": ints(dims)})
    elif kind == "range":
        nodes = [helper.make_node("Range", ["start", "limit", "delta"], ["ints"], name="bomb"),
                 helper.make_node("Cast", ["ints"], ["big"], name="to_float", to=TensorProto.FLOAT)]
        init = {"start": ints(0), "limit": ints(int(np.prod(dims, dtype=np.float64))), "delta": ints(1)}
    elif kind == "tile":
        nodes, init = ([helper.make_node("Tile", ["one", "repeats"], ["big"], name="bomb")],
                       {"one": np.ones([1] * len(dims), np.float32), "repeats": ints(dims)})
    elif kind == "resize":
        factor = float(_pick(rng, (2.0, 64.0, 1000.0, 2 ** 15)))
        nodes = [helper.make_node("Resize", ["x", "", "scales"], ["big"], name="bomb", mode="nearest")]
        init = {"scales": np.array([1, 1, factor, factor], np.float32)}
        x_shape = [1, 1, 4, 4]
    else:  # channels: one convolution of very many output channels (its weights stay small: 1x1 over one channel)
        channels = int(_pick(rng, (4096, 65536, 1_000_000)))
        nodes = [helper.make_node("Conv", ["x", "w"], ["big"], name="bomb", kernel_shape=[1, 1])]
        init = {"w": np.ones((channels, 1, 1, 1), np.float32)}
        x_shape = [1, 1, 4, 4]
    output = "big" if kind in ("resize", "channels") else "y"
    if output == "y":
        nodes.append(helper.make_node("Add", ["x", "big"], ["y"], name="add"))
    graph = helper.make_graph(nodes, "g", [helper.make_tensor_value_info("x", TensorProto.FLOAT, x_shape)],
                              [helper.make_tensor_value_info(output, TensorProto.FLOAT, None)],
                              [numpy_helper.from_array(value, name) for name, value in init.items()])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    model.ir_version = 8
    return model.SerializeToString()


def prepare_cache_entry(case, directory: Path) -> None:
    """Plant the cache case's entry where the tool will look for it, for the pattern file in `directory`."""
    place, entry = case.cache_entry
    case.env = {name: str(directory / value) for name, value in case.env.items()}
    pattern_file = (directory / CACHE_PATTERN_FILE).resolve()
    previous = os.environ.get("XDG_CACHE_HOME")
    os.environ["XDG_CACHE_HOME"] = case.env["XDG_CACHE_HOME"]
    try:
        places = pdl_cache.cache_paths(pattern_file)
    finally:
        if previous is None:
            del os.environ["XDG_CACHE_HOME"]
        else:
            os.environ["XDG_CACHE_HOME"] = previous
    beside, user = places[0], places[-1]  # bytecode's place and the user cache (one of them may be missing)
    old = beside.with_name(beside.name.replace(pdl_cache.NAME_SUFFIX, f"{sys.implementation.cache_tag}.pickle"))
    target = {"pycache": beside, "user": user, "old": old}[place]
    target.parent.mkdir(parents=True, exist_ok=True)
    target.write_bytes(entry)
    target.chmod(0o644)
