"""Hostile inputs, run through the real tools (docs/reliability.md): nothing loaded from disk
runs code, names print escaped, and every input of unbounded cost ends in one clean line.

Each case runs the installed command in its own process and checks what a user sees and
what the machine pays: the exit status, the one error line (no control character in it),
no output or temporary file left, the inputs unchanged, and at most 20 s of CPU time and
1 GB of peak memory (the child's own rusage, so the load of the machine does not matter).
"""

from __future__ import annotations

import functools
import hashlib
import os
import pickle
import re
import signal
import subprocess
import sys
import tempfile
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pytest
import xdsl

ROOT = Path(__file__).resolve().parents[2]
EXAMPLES = ROOT / "examples"
BIN = Path(sys.executable).parent
CPU_SECONDS = 20.0  # the costliest case, a Conv of 3 x 10^5 channels refused, takes ~4.5 s of CPU
PEAK_BYTES = 1 << 30


@dataclass
class Run:
    returncode: int
    stdout: str
    stderr: str
    cpu_seconds: float
    peak_bytes: int

    def within_bounds(self) -> None:
        assert self.cpu_seconds <= CPU_SECONDS, f"{self.cpu_seconds:.1f} s of CPU"
        assert self.peak_bytes <= PEAK_BYTES, f"{self.peak_bytes >> 20} MB at peak"


# Forks the tool and reports its CPU time and peak RSS from wait4: measured in the test's own
# child, the peak would be the pytest process's, which Linux counts into a child that forks
# from it and then execs (and a launcher this small adds nothing).
LAUNCHER = """
import os, sys
pid = os.fork()
if pid == 0:
    os.execv(sys.argv[2], sys.argv[2:])
_, status, usage = os.wait4(pid, 0)
with open(sys.argv[1], "w") as report:
    report.write(f"{usage.ru_utime + usage.ru_stime} {usage.ru_maxrss}")
sys.exit(os.waitstatus_to_exitcode(status) if os.WIFEXITED(status) else 128 + os.WTERMSIG(status))
"""


def bounded(name: str, *args, cwd: Path, env: dict[str, str] | None = None, timeout: float = 120) -> Run:
    """Run a tool in its own process; its CPU time and peak RSS from its own rusage."""
    script = BIN / name
    command = [str(script)] if script.exists() else [sys.executable, "-m", f"xnpu.tools.{name.replace('-', '_')}"]
    with tempfile.NamedTemporaryFile("r", suffix=".rusage") as usage:
        process = subprocess.Popen([sys.executable, "-c", LAUNCHER, usage.name, *command, *map(str, args)], cwd=cwd,
                                   env={**os.environ, **(env or {})}, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                                   stderr=subprocess.PIPE, start_new_session=True)
        try:
            stdout, stderr = process.communicate(timeout=timeout)
        except subprocess.TimeoutExpired:
            os.killpg(process.pid, signal.SIGKILL)  # the launcher and the tool
            raise
        cpu, peak = usage.read().split()
        result = subprocess.CompletedProcess(process.args, process.returncode, stdout, stderr)
    return Run(result.returncode, result.stdout.decode(errors="replace"), result.stderr.decode(errors="replace"),
               float(cpu), int(peak) * 1024)


CONTROL = re.compile(r"[\x00-\x08\x0b-\x1f\x7f-\x9f]")


def one_clean_error(run: Run, tool: str, pattern: str, returncode: int = 1) -> str:
    """The only stderr line, `<tool>: error: <pattern>` (or `FILE:L:C: error: <pattern>`), printable."""
    assert run.returncode == returncode, run
    lines = run.stderr.split("\n")
    assert len(lines) == 2 and lines[1] == "", run.stderr  # one line, ended by its newline
    assert "Traceback" not in run.stderr and not CONTROL.search(lines[0]), lines[0]
    located = r"\S+:\d+:\d+: "
    assert re.fullmatch(rf"({re.escape(tool)}: error: ({located})?|{located}error: )({pattern})", lines[0]), lines[0]
    run.within_bounds()
    return lines[0]


def snapshot(directory: Path) -> dict[str, bytes]:
    return {str(p.relative_to(directory)): p.read_bytes() for p in sorted(directory.rglob("*")) if p.is_file()}


def nothing_left_and_inputs_untouched(directory: Path, before: dict[str, bytes]) -> None:
    assert snapshot(directory) == before  # no output, no temporary file, every input as it was


@pytest.fixture
def work(tmp_path: Path) -> Path:
    for name in ("tiny_cnn.onnx", "tiny_calib.npy", "tiny_input.npy"):
        (tmp_path / name).write_bytes((EXAMPLES / name).read_bytes())
    return tmp_path


# --------------------------------------------------------------------------------------
# Nothing loaded from disk runs code: pattern cache entries; no machine code is cached
# --------------------------------------------------------------------------------------


class Planted:
    """A pickle that creates `marker` when it is unpickled."""

    def __init__(self, marker: Path):
        self.marker = marker

    def __reduce__(self):
        return (os.system, (f"touch {self.marker}",))


def plant_pattern_entries(pattern_file: Path, marker: Path, prefix: Path, user_cache: Path, monkeypatch) -> None:
    """A pickle where every entry of `pattern_file` may be read from (the JSON entry, with a
    header that holds for the file, and the pickled format's name), for this prefix and user cache."""
    from xnpu.pdl import cache as pdl_cache

    monkeypatch.setattr(sys, "pycache_prefix", str(prefix))
    monkeypatch.setenv("XDG_CACHE_HOME", str(user_cache))
    payload = pickle.dumps(Planted(marker))
    for place in pdl_cache.cache_paths(pattern_file):
        place.parent.mkdir(parents=True, exist_ok=True)
        place.write_bytes(pdl_cache._header(pattern_file.read_text(), payload) + payload)
        # the pickled format's entry, with the header it checked
        old_name = place.name.replace(pdl_cache.NAME_SUFFIX, f"{sys.implementation.cache_tag}.pickle")
        digest = hashlib.sha256(pattern_file.read_text().encode()).hexdigest()
        old_header = f"xnpu-patterns 1 xdsl {xdsl.__version__} python {sys.hexversion:x} {digest}\n"
        place.with_name(old_name).write_bytes(old_header.encode() + payload)


@pytest.mark.parametrize("write_bytecode", [True, False])
def test_planted_pattern_cache_entries_never_run(work, tmp_path, monkeypatch, write_bytecode):
    """A pickle planted as the cache entry of every shipped pattern file (beside it under
    PYTHONPYCACHEPREFIX, and in the user cache directory) and of a pattern directory given
    as `patterns=`: compiling reads none of them as code."""
    marker = tmp_path / "pwned"
    prefix, user_cache = tmp_path / "prefix", tmp_path / "user"
    shipped = sorted([*ROOT.glob("lowering/**/*.mlir"), *ROOT.glob("transforms/**/*.mlir")])
    extra = work / "extra"
    extra.mkdir()
    (extra / "clamp.mlir").write_text((ROOT / "lowering" / "legalize" / "clamp.mlir").read_text().replace("@", "@extra_"))
    for pattern_file in [*shipped, (extra / "clamp.mlir").resolve()]:
        plant_pattern_entries(pattern_file, marker, prefix, user_cache, monkeypatch)
    environment = {"PYTHONPYCACHEPREFIX": str(prefix), "XDG_CACHE_HOME": str(user_cache)}
    if not write_bytecode:
        environment["PYTHONDONTWRITEBYTECODE"] = "1"
    else:
        monkeypatch.delenv("PYTHONDONTWRITEBYTECODE", raising=False)
    run = bounded("xnpu-compile", "tiny_cnn.onnx", "-c", "tiny_calib.npy", "--target", "xnpu_lite", "-o", "m.xnb",
                  "--quiet", cwd=work, env=environment)
    assert run.returncode == 0 and run.stderr == "", run
    run.within_bounds()
    # a fixed-level module of clamps, the root of the extra patterns (the compile above read every shipped entry)
    (work / "m.mlir").write_text((ROOT / "test" / "filecheck" / "lowering" / "legalize" / "clamp.mlir").read_text())
    run = bounded("xnpu-opt", "m.mlir", "-p", 'legalize{target="xnpu_lite" patterns="extra"}', "-o", "out.mlir",
                  cwd=work, env=environment)
    assert run.returncode == 0 and run.stderr == "", run
    assert not marker.exists()


def test_compiled_loops_are_the_installed_extension_modules_and_no_machine_code_is_cached(work, tmp_path):
    """The compiled loops are extension modules built when xnpu is installed, beside their C
    sources in the package; nothing compiles or caches machine code when a tool runs: a compile
    and a run with an empty home and user cache directory leave there no machine code and no
    pickle; xnpu's own files there are the pattern cache's JSON entries (data, checked above)."""
    from importlib.machinery import ExtensionFileLoader

    from xnpu.semantics import fixed_point_loops
    from xnpu.transforms import calibrate_loops

    for module in (fixed_point_loops, calibrate_loops):
        assert isinstance(module.__loader__, ExtensionFileLoader)
        assert Path(module.__file__).resolve().parent == ROOT / module.__name__.split(".")[1]
    home, cache = tmp_path / "home", tmp_path / "cache"
    home.mkdir(), cache.mkdir()
    environment = {"HOME": str(home), "XDG_CACHE_HOME": str(cache), "PYTHONDONTWRITEBYTECODE": "1"}
    binary = bounded("xnpu-compile", "tiny_cnn.onnx", "-c", "tiny_calib.npy", "-o", "m.xnb", "--quiet", cwd=work,
                     env=environment)
    assert binary.returncode == 0, binary
    run = bounded("xnpu-run", "m.xnb", "--input", "tiny_input.npy", "-o", "out.npz", cwd=work, env=environment)
    assert run.returncode == 0 and run.stderr == "", run
    run.within_bounds()
    written = [path for path in [*home.rglob("*"), *cache.rglob("*")] if path.is_file()]
    assert not [path for path in written if path.read_bytes()[:4] == b"\x7fELF" or path.read_bytes()[:1] == b"\x80"]
    assert all(path.name.endswith(".patterns.json") for path in written if "xnpu" in path.parts), written


# --------------------------------------------------------------------------------------
# Names and strings escaped wherever printed
# --------------------------------------------------------------------------------------

NASTY_NAMES = [
    'conv_é', "tab\there", 'a\n  isa.halt\n"x', "\x1b[31mred\x1b[0m\x07", "\x01\x7f\x9b", "back\\slash\\0A",
    "line\u2028separator", "\u202eevil", "// [3] fake", '"}) loc(', "日本語", "emoji🙂", "=HYPERLINK(\"http://x\")",
]


def renamed_tiny_cnn(directory: Path, names: list[str], input_name: str = "input", output_name: str = "logits") -> Path:
    """tiny_cnn with its nodes (in turn) named `names`, and its input and output renamed."""
    from xnpu.tools.fuzz_hostile import renamed_model

    path = directory / "named.onnx"
    path.write_bytes(renamed_model((EXAMPLES / "tiny_cnn.onnx").read_bytes(), names, input_name, output_name))
    return path


def test_listing_reassembles_to_the_same_binary_whatever_the_names(work):
    """xnpu-objdump prints names escaped: a name with a newline cannot add an instruction, and
    the listing assembles back to the same bytes, provenance and io names included."""
    renamed_tiny_cnn(work, NASTY_NAMES, input_name="in\nput é", output_name='lo"gits\x1b')
    assert bounded("xnpu-compile", "named.onnx", "-c", "tiny_calib.npy", "-o", "m.xnb", "--quiet", cwd=work).returncode == 0
    run = bounded("xnpu-objdump", "m.xnb", "-o", "listing.mlir", cwd=work)
    assert run.returncode == 0 and run.stderr == "", run
    listing = (work / "listing.mlir").read_text()
    assert not CONTROL.search(listing.replace("\n", "")) and "\u2028" not in listing and "\u202e" not in listing
    from xnpu.backend.binary import Binary

    binary = Binary.from_bytes((work / "m.xnb").read_bytes())
    instructions = [line for line in listing.splitlines() if re.match(r"\s*isa\.(?!io|constants|host_segment)\w+ ", line)]
    assert len(instructions) == len(binary.instructions)
    assert {name for names in binary.provenance.values() for name in names} >= {NASTY_NAMES[0], NASTY_NAMES[2]}
    run = bounded("xnpu-translate", "--emit-binary", "listing.mlir", "-o", "again.xnb", cwd=work)
    assert run.returncode == 0 and run.stderr == "", run
    assert (work / "again.xnb").read_bytes() == (work / "m.xnb").read_bytes()


@pytest.mark.parametrize("level", ["nn", "fixed", "npu", "isa", "tosa"])
def test_emitted_ir_with_any_names_reads_back(work, level):
    """`loc("conv_é")` prints as `loc("conv_\\C3\\A9")`, as MLIR prints it; every level's text
    reads back, and prints again the same."""
    renamed_tiny_cnn(work, NASTY_NAMES, input_name="entrée", output_name="sortie\n")
    run = bounded("xnpu-compile", "named.onnx", "-c", "tiny_calib.npy", "--emit", level, "-o", "m.mlir", "--quiet", cwd=work)
    assert run.returncode == 0 and run.stderr == "", run
    assert "\"conv_\\C3\\A9\"" in (work / "m.mlir").read_text() or level == "tosa"
    run = bounded("xnpu-opt", "m.mlir", "-o", "again.mlir", cwd=work)
    assert run.returncode == 0 and run.stderr == "", run
    if level != "tosa":  # the export is printed in generic form; xnpu-opt prints the custom one
        assert (work / "again.mlir").read_text() == (work / "m.mlir").read_text()
    if level in ("fixed", "isa"):
        np.save(work / "x.npy", np.load(work / "tiny_input.npy"))
        run = bounded("xnpu-run", "m.mlir", "--input", "x.npy", cwd=work)
        assert run.returncode == 0 and "sortie\\0A" in run.stdout and not CONTROL.search(run.stdout.replace("\n", ""))


def test_a_name_the_binary_cannot_hold_is_one_error(work):
    """The binary's string table ends each string with a NUL, so a name holding one is refused."""
    renamed_tiny_cnn(work, ["nul\x00byte"])
    before = snapshot(work)
    one_clean_error(bounded("xnpu-compile", "named.onnx", "-c", "tiny_calib.npy", "-o", "m.xnb", cwd=work),
                    "xnpu-compile", r"binary: string 'nul\\x00byte' contains a NUL character")
    nothing_left_and_inputs_untouched(work, before)


def test_error_lines_hold_no_control_characters(work):
    import onnx

    model = onnx.load(str(renamed_tiny_cnn(work, NASTY_NAMES)))
    model.graph.node[3].op_type = "Bogus"
    onnx.save(model, str(work / "bogus.onnx"))
    before = snapshot(work)
    for command in (["xnpu-compile", "bogus.onnx", "-c", "tiny_calib.npy", "-o", "out.xnb"],
                    ["xnpu-translate", "--import-onnx", "bogus.onnx", "-o", "out.mlir"]):
        line = one_clean_error(bounded(*command, cwd=work), command[0],
                               # an op onnxruntime does not know either: the node named, escaped
                               r"ONNX node '\\1B\[31mred\\1B\[0m\\07' \(Bogus\): onnxruntime cannot load it: .*")
        assert "\x1b" not in line
    nothing_left_and_inputs_untouched(work, before)
    # a usage error quoting what was typed, and a pass option naming a file
    one_clean_error(bounded("xnpu-compile", "named.onnx", "--target", "x\x1b[2Jy", "-c", "tiny_calib.npy", cwd=work),
                    "xnpu-compile", r".*x\\1B\[2Jy.*")
    (work / "m.mlir").write_text("func.func @main(%x: tensor<1xf32>) -> tensor<1xf32> {\n  func.return %x : tensor<1xf32>\n}\n")
    one_clean_error(bounded("xnpu-run", "m.mlir", "--input", "a\nb.npy", cwd=work), "xnpu-run", r"a\\0Ab\.npy: cannot read: .*")


def test_report_csv_neutralises_formulas(work):
    """A node named `=HYPERLINK(...)` (or starting with +, -, @, a tab) is a text cell starting
    with ' in report.csv, as OWASP advises; report.html and report.dot escape it as markup."""
    import csv

    names = ["=HYPERLINK(\"http://evil\",\"x\")", "+1+cmd|' /C calc'!A0", "-2", "@SUM(A1:A9)", "\tTAB", "plain"]
    renamed_tiny_cnn(work, names)
    run = bounded("xnpu-quantize", "named.onnx", "--calibration", "tiny_calib.npy", "-o", "m.mlir", "--report", "report",
                  cwd=work)
    assert run.returncode == 0, run
    with open(work / "report" / "report.csv", newline="") as handle:
        cells = [cell for row in csv.reader(handle) for cell in row]
    assert not [cell for cell in cells if cell[:1] in ("=", "+", "@", "\t", "\r")]
    assert "'=HYPERLINK(\"http://evil\",\"x\")" in cells and "'@SUM(A1:A9)" in cells and "plain" in cells
    html = (work / "report" / "report.html").read_text()
    assert "=HYPERLINK(&quot;http://evil&quot;" in html and '"http://evil"' not in html


def test_a_report_directory_is_written_whole_or_not_at_all(work):
    """A report replaces an earlier one whole (no file of the earlier model's is left beside
    it); a report that cannot be written leaves the earlier one as it was."""
    quantize = ("xnpu-quantize", "named.onnx", "--calibration", "tiny_calib.npy", "-o", "m.mlir", "--report", "report")
    renamed_tiny_cnn(work, ["first_model_" + str(i) for i in range(6)])
    assert bounded(*quantize, cwd=work).returncode == 0
    (work / "report" / "report.svg").write_text("<svg>first_model_0</svg>")  # as if dot had drawn it
    (work / "m.mlir").unlink()
    renamed_tiny_cnn(work, ["second_model_" + str(i) for i in range(6)])
    run = bounded(*quantize, cwd=work)
    assert run.returncode == 0, run
    report = snapshot(work / "report")
    assert not [name for name, data in report.items() if b"first_model" in data]
    assert "report.svg" not in report or b"second_model" in report["report.svg"]
    assert b"second_model_0" in report["report.csv"] and b"second_model_0" in report["report.html"]

    # a file of the report that cannot be replaced (here a directory in its place): one line,
    # nothing written, the earlier report unchanged and no output
    (work / "m.mlir").unlink()
    (work / "report" / "report.json").unlink()
    (work / "report" / "report.json").mkdir()
    renamed_tiny_cnn(work, ["third_model_" + str(i) for i in range(6)])
    before = snapshot(work)
    one_clean_error(bounded(*quantize, cwd=work), "xnpu-quantize", r"report/report\.json: cannot write: not a regular file")
    nothing_left_and_inputs_untouched(work, before)


# --------------------------------------------------------------------------------------
# Bounded resources: one budget for materialised tensors, instructions, nesting
# --------------------------------------------------------------------------------------

SPLAT = """\
func.func @main(%x: tensor<1x4xf32>) -> tensor<1x4xf32> {
  %c = nn.constant dense<1.0> : tensor<134217728xf32>
  %0 = nn.relu %x : tensor<1x4xf32> -> tensor<1x4xf32>
  func.return %0 : tensor<1x4xf32>
}
"""


@pytest.mark.parametrize("command", [["xnpu-opt", "splat.mlir", "-o", "out.mlir"],
                                     ["xnpu-run", "splat.mlir", "--input", "x.npy", "-o", "out.npz"],
                                     ["xnpu-translate", "--emit-binary", "splat.mlir", "-o", "out.xnb"]])
def test_a_splat_literal_over_the_budget_is_refused_before_it_is_expanded(work, command):
    """285 bytes of IR describing 512 MiB (it took 3.2 GB and 20 s): one line at the literal."""
    (work / "splat.mlir").write_text(SPLAT)
    np.save(work / "x.npy", np.ones((1, 4), np.float32))
    before = snapshot(work)
    line = one_clean_error(bounded(*command, cwd=work), command[0],
                           r"dense literal: a 134217728 f32 tensor \(512 MiB\) is over the 256 MiB budget for one tensor")
    assert "splat.mlir:2:33:" in line
    nothing_left_and_inputs_untouched(work, before)


def test_a_splat_within_the_budget_is_expanded_as_bytes(work):
    """A 192 MiB splat parses, prints and runs without a list of 50 M Python floats."""
    (work / "splat.mlir").write_text(SPLAT.replace("134217728", "50331648"))
    np.save(work / "x.npy", np.ones((1, 4), np.float32))
    for command in (["xnpu-opt", "splat.mlir", "-o", "out.mlir"], ["xnpu-run", "splat.mlir", "--input", "x.npy"]):
        run = bounded(*command, cwd=work)
        assert run.returncode == 0 and run.stderr == "", run
        run.within_bounds()
    assert "dense<1.000000e+00> : tensor<50331648xf32>" in (work / "out.mlir").read_text()


@pytest.mark.parametrize("command", [["xnpu-opt", "splat.mlir"], ["xnpu-run", "splat.mlir"]])
def test_an_op_refusing_a_large_literal_is_reported_without_printing_it(work, command):
    """xDSL prints the failing op into its diagnostic, one Python object per element: a 64 MiB
    i1 splat that nn.constant refuses (f32 only) cost 1.2 GB and 11 s to report."""
    (work / "splat.mlir").write_text(
        "func.func @main() -> tensor<8192x8192xi1> {\n"
        "  %c = nn.constant dense<true> : tensor<8192x8192xi1>\n"
        "  func.return %c : tensor<8192x8192xi1>\n}\n")
    run = bounded(*command, cwd=work)
    one_clean_error(run, command[0], r"'nn.constant': result 'result' at position 0 does not verify: "
                                     r"i1 should be of base attribute f32")
    assert "splat.mlir:2:3:" in run.stderr
    run.within_bounds()
    assert run.peak_bytes < 400 << 20, f"{run.peak_bytes >> 20} MB at peak"


def save_model_of(path: Path, nodes: list, x_shape: list[int], initializers: dict[str, np.ndarray]) -> Path:
    """An opset-17 model of `nodes` from the float input x (`x_shape`) to the float output y
    (its shape left to inference), with `initializers`, saved at `path`."""
    import onnx
    from onnx import TensorProto, helper, numpy_helper

    graph = helper.make_graph(nodes, "g", [helper.make_tensor_value_info("x", TensorProto.FLOAT, x_shape)],
                              [helper.make_tensor_value_info("y", TensorProto.FLOAT, None)],
                              [numpy_helper.from_array(value, name) for name, value in initializers.items()])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    model.ir_version = 8
    onnx.save(model, str(path))
    return path


def onnx_bomb(directory: Path, kind: str) -> Path:
    """A model of a few hundred bytes whose shape computation describes gigabytes."""
    from onnx import TensorProto, helper

    constants = {
        "ConstantOfShape": ([helper.make_node("ConstantOfShape", ["shape"], ["big"], name="bomb")],
                            {"shape": np.array([1, 1, 16000, 16000], np.int64)}),
        "Expand": ([helper.make_node("Expand", ["one", "shape"], ["big"], name="bomb")],
                   {"one": np.ones((1, 1), np.float32), "shape": np.array([30000, 30000], np.int64)}),
        "Range": ([helper.make_node("Range", ["start", "limit", "delta"], ["ints"], name="bomb"),
                   helper.make_node("Cast", ["ints"], ["big"], name="to_float", to=TensorProto.FLOAT)],
                  {"start": np.array(0, np.int64), "limit": np.array(400_000_000, np.int64), "delta": np.array(1, np.int64)}),
        "Gather": ([helper.make_node("Range", ["start", "limit", "delta"], ["ints"], name="ints"),
                    helper.make_node("Gather", ["ints", "indices"], ["gathered"], name="bomb", axis=0),
                    helper.make_node("Cast", ["gathered"], ["big"], name="to_float", to=TensorProto.FLOAT)],
                   {"start": np.array(0, np.int64), "limit": np.array(20_000, np.int64), "delta": np.array(1, np.int64),
                    "indices": np.zeros((20_000, 1), np.int64)}),
    }
    nodes, initializers = constants[kind]
    nodes = [*nodes, helper.make_node("Add", ["x", "big"], ["y"], name="add")]
    return save_model_of(directory / f"{kind}.onnx", nodes, [1], initializers)


BOMBS = {"ConstantOfShape": r"1x1x16000x16000 tensor \(977 MiB\)", "Expand": r"30000x30000 tensor \(3\.35 GiB\)",
         "Range": r"400000000 tensor \(2\.98 GiB\)", "Gather": r"20000x1 tensor .*|.*"}


# Both tools fold in the one ONNX import (frontend/onnx_import.py): every kind through
# xnpu-translate; xnpu-compile on Expand (the refusal) and Gather (a fold within the budget,
# which then compiles), not again on the other refusals of the same import path.
@pytest.mark.parametrize("kind, tool", [*((kind, "xnpu-translate") for kind in BOMBS), ("Expand", "xnpu-compile"),
                                        ("Gather", "xnpu-compile")])
def test_onnx_shape_folding_is_checked_before_it_allocates(work, kind, tool):
    """ConstantOfShape of 1x1x16000x16000 from 172 bytes took 4 GB; Expand to 30000x30000 7 GB
    and then SIGSEGV; Range of 4e8 6 GB. Each folded result is checked before it is computed."""
    shape = BOMBS[kind]
    onnx_bomb(work, kind)
    np.save(work / "calib.npy", np.ones((2, 1), np.float32))
    before = snapshot(work)
    command = (["xnpu-translate", "--import-onnx", f"{kind}.onnx", "-o", "out.mlir"] if tool == "xnpu-translate"
               else ["xnpu-compile", f"{kind}.onnx", "-c", "calib.npy", "-o", "out.xnb"])
    if kind == "Gather":  # within the budget for one tensor: folded, and the model compiles or is refused cleanly
        run = bounded(*command, cwd=work)
        assert run.returncode in (0, 1) and "Traceback" not in run.stderr and len(run.stderr.splitlines()) <= 1, run
        run.within_bounds()
        return
    one_clean_error(bounded(*command, cwd=work), tool,
                    rf"ONNX node 'bomb' \({kind}\), folded as a shape computation: a {shape} is over the 256 MiB budget "
                    r"for one tensor")
    nothing_left_and_inputs_untouched(work, before)


def folded_model(directory: Path, op_type: str, dims: list[int], read_by: str) -> Path:
    """ConstantOfShape or Expand to `dims`, read by an Add (the result stays a constant of the
    model) or only by a Shape (it is folded away with it)."""
    from onnx import TensorProto, helper

    initializers = {"shape": np.array(dims, np.int64)}
    node = helper.make_node("ConstantOfShape", ["shape"], ["big"], name="bomb")
    if op_type == "Expand":
        initializers["one"] = np.ones([1] * len(dims), np.float32)
        node = helper.make_node("Expand", ["one", "shape"], ["big"], name="bomb")
    nodes = [node]
    if read_by == "Shape":
        nodes += [helper.make_node("Shape", ["big"], ["dims"], name="dims"),
                  helper.make_node("Cast", ["dims"], ["big_dims"], name="to_float", to=TensorProto.FLOAT),
                  helper.make_node("ReduceSum", ["big_dims"], ["total"], name="total", keepdims=0)]
    nodes.append(helper.make_node("Add", ["x", "total" if read_by == "Shape" else "big"], ["y"], name="add"))
    return save_model_of(directory / f"{op_type}.onnx", nodes, [1, 1, 1, 4], initializers)


# the same import path in both tools: xnpu-compile is checked on one of the two (the note above)
@pytest.mark.parametrize("op_type, dims, text, tool", [
    ("ConstantOfShape", [90, 90, 90, 90], r"90x90x90x90 result \(250 MiB\)", "xnpu-translate"),
    ("Expand", [405, 405, 405], r"405x405x405 result \(253 MiB\)", "xnpu-translate"),
    ("Expand", [405, 405, 405], r"405x405x405 result \(253 MiB\)", "xnpu-compile")])
def test_a_folded_constant_counts_every_copy_the_tools_hold(work, op_type, dims, text, tool):
    """The fuzz campaign's over-memory cases: a ConstantOfShape or Expand just inside the budget for
    one tensor, which stays a constant of the model, cost 2.0 GB (the evaluator's array, the
    initializer, shape inference's model, the IR literal, a host op's model and onnxruntime's
    copies): it counts KEPT_FOLD_COPIES times, and is refused before it is computed."""
    folded_model(work, op_type, dims, "Add")
    np.save(work / "calib.npy", np.ones((2, 1, 1, 1, 4), np.float32))
    before = snapshot(work)
    command = (["xnpu-translate", "--import-onnx", f"{op_type}.onnx", "-o", "out.mlir"] if tool == "xnpu-translate"
               else ["xnpu-compile", f"{op_type}.onnx", "-c", "calib.npy", "-o", "out.xnb"])
    run = bounded(*command, cwd=work)
    one_clean_error(run, tool, rf"ONNX node 'bomb' \({op_type}\), folded as a shape computation: its {text} stays a "
                    r"constant of the model, which the tools hold 8 times over at once: 1\.9\d GiB of tensors at once "
                    r"is over the 512 MiB budget")
    assert run.peak_bytes < 300 << 20, f"{run.peak_bytes >> 20} MB at peak"  # refused before it is computed
    nothing_left_and_inputs_untouched(work, before)


def test_a_folded_value_the_fold_consumes_counts_once(work):
    """A 128 MiB ConstantOfShape whose only reader is a folded Shape is computed (once) and gone."""
    folded_model(work, "ConstantOfShape", [4096, 8192], "Shape")
    run = bounded("xnpu-translate", "--import-onnx", "ConstantOfShape.onnx", "-o", "out.mlir", cwd=work)
    assert run.returncode == 0 and run.stderr == "", run
    assert "4096x8192" not in (work / "out.mlir").read_text()
    run.within_bounds()


@pytest.mark.parametrize("tool", ["xnpu-translate", "xnpu-compile"])
def test_operands_that_do_not_broadcast_are_one_line_naming_the_node(work, tool):
    """An Add of [1, 1, 1, 4] and a folded [3, 3, 3, 3] (a fuzz case's Expand, smaller) ended in
    the nn op constructor's ValueError traceback; the node goes to onnxruntime, which refuses it."""
    from onnx import helper

    save_model_of(work / "m.onnx", [helper.make_node("Expand", ["one", "shape"], ["big"], name="expand"),
                                    helper.make_node("Add", ["x", "big"], ["y"], name="add")], [1, 1, 1, 4],
                  {"one": np.ones((1, 1, 1, 1), np.float32), "shape": np.array([3, 3, 3, 3], np.int64)})
    np.save(work / "calib.npy", np.ones((2, 1, 1, 1, 4), np.float32))
    before = snapshot(work)
    command = (["xnpu-translate", "--import-onnx", "m.onnx", "-o", "out.mlir"] if tool == "xnpu-translate"
               else ["xnpu-compile", "m.onnx", "-c", "calib.npy", "-o", "out.xnb"])
    one_clean_error(bounded(*command, cwd=work), tool, r"ONNX node 'add' \(Add\): onnxruntime cannot load it: .*")
    nothing_left_and_inputs_untouched(work, before)


@functools.cache
def tiny_cnn_with_host_softmax():
    """tiny_cnn with a Softmax placed on the host, compiled (once: each case replaces its segment's body)."""
    import onnx
    from onnx import helper

    import xnpu

    model = onnx.load(str(EXAMPLES / "tiny_cnn.onnx"))
    model.graph.node.append(helper.make_node("Softmax", ["logits"], ["probs"], name="softmax", axis=1))
    model.graph.output[0].name = "probs"
    return xnpu.compile(model, np.load(EXAMPLES / "tiny_calib.npy"), progress=False)


def host_segment_binary(work: Path, body: str) -> Path:
    """tiny_cnn with a Softmax placed on the host, its segment's body replaced by `body`."""
    import dataclasses

    binary = tiny_cnn_with_host_softmax()
    (segment,) = binary.host_segments
    binary = dataclasses.replace(binary, host_segments=[dataclasses.replace(segment, body=body)])
    path = work / "m.xnb"
    path.write_bytes(binary.to_bytes())
    return path


SEGMENT = """\
"func.func"() <{{sym_name = "host_segment_1", function_type = (tensor<1x10xi8>) -> tensor<1x10xf32>}}> ({{
^bb0(%0: tensor<1x10xi8>):
  %1 = "fixed.dequantize"(%0) <{{scale = 0.026188898831605911 : f64}}> : (tensor<1x10xi8>) -> tensor<1x10xf32>
{extra}
  "func.return"({result}) : (tensor<1x10xf32>) -> ()
}}) : () -> ()
"""
RESIZE = ('  %{out} = "nn.resize"(%{source}) <{{mode = "nearest", coordinate_transformation_mode = "asymmetric", '
          'nearest_mode = "floor"}}> : ({source_type}) -> {out_type}')


def resized(sizes: list[tuple[int, int]]) -> str:
    """The segment's values as 1x1x1x10, resized to each size (from that 1x1x1x10, so all stay
    alive), the results summed, averaged to 1x1x1x1 and added back to the values."""
    lines = ['  %2 = "nn.reshape"(%1) : (tensor<1x10xf32>) -> tensor<1x1x1x10xf32>']
    names = []
    for index, (h, w) in enumerate(sizes):
        out, out_type = f"r{index}", f"tensor<1x1x{h}x{w}xf32>"
        lines.append(RESIZE.format(out=out, source=2, source_type="tensor<1x1x1x10xf32>", out_type=out_type))
        names.append(out)
    h, w = sizes[0]
    big = f"tensor<1x1x{h}x{w}xf32>"
    total = names[0]
    for index, name in enumerate(names[1:]):
        lines.append(f'  %s{index} = "nn.add"(%{total}, %{name}) : ({big}, {big}) -> {big}')
        total = f"s{index}"
    lines += [f'  %g = "nn.global_average_pool"(%{total}) : ({big}) -> tensor<1x1x1x1xf32>',
              '  %m = "nn.reshape"(%g) : (tensor<1x1x1x1xf32>) -> tensor<1x1xf32>',
              '  %99 = "nn.add"(%1, %m) : (tensor<1x10xf32>, tensor<1x1xf32>) -> tensor<1x10xf32>']
    return "\n".join(lines)


@pytest.mark.parametrize("case, pattern", [
    ("splat", r"binary: host segment 1: body:\d+:\d+: dense literal: a 134217728 f32 tensor \(512 MiB\) is over "
              r"the 256 MiB budget for one tensor"),
    ("one resize", r"binary: host segment 1: body:\d+:\d+: 'nn.resize': a 1x1x40000x40000 f32 tensor "
                   r"\(5\.96 GiB\) is over the 256 MiB budget for one tensor"),
    ("four resizes", r"binary: host segment 1: running host_segment_1: .* of tensors at once is over the 512 MiB budget"),
])
def test_host_segment_tensors_are_within_the_budget(work, case, pattern):
    """A 5 KB binary's host segment described a 512 MiB splat, or resizes of 2.8 GB."""
    if case == "splat":
        body = SEGMENT.format(extra='  %2 = "nn.constant"() <{value = dense<1.0> : tensor<134217728xf32>}> : () -> '
                                    'tensor<134217728xf32>', result="%1")
    elif case == "one resize":
        body = SEGMENT.format(extra=resized([(40000, 40000)]), result="%99")
    else:  # 244 MiB each, all alive at once
        body = SEGMENT.format(extra=resized([(8000, 8000)] * 4), result="%99")
    host_segment_binary(work, body)
    before = snapshot(work)
    one_clean_error(bounded("xnpu-run", "m.xnb", "--input", "tiny_input.npy", "-o", "out.npz", cwd=work), "xnpu-run", pattern)
    nothing_left_and_inputs_untouched(work, before)


def test_a_layer_of_300k_channels_is_refused_in_seconds(work):
    """A Conv with 10^6 output channels was still compiling after 150 s: the tiling counts the
    instructions the program would need before they are emitted. 3 x 10^5 channels are past the
    limit too, for 60% of the CPU (a refusal that grew with the channels would still show)."""
    from onnx import helper

    save_model_of(work / "wide.onnx", [helper.make_node("Conv", ["x", "w"], ["y"], name="conv")], [1, 1, 4, 4],
                  {"w": np.ones((300_000, 1, 1, 1), np.float32)})
    np.save(work / "calib.npy", np.ones((2, 1, 4, 4), np.float32))
    before = snapshot(work)
    one_clean_error(bounded("xnpu-compile", "wide.onnx", "-c", "calib.npy", "-o", "out.xnb", cwd=work), "xnpu-compile",
                    r"'npu.relayout' at loc\(\"conv\"\): the program needs more than 262144 instructions: a layer this "
                    r"large is too big for one accelerator program \(target xnpu_default\)")
    nothing_left_and_inputs_untouched(work, before)


def deep_attribute(depth: int) -> str:
    return ("func.func @main(%x: tensor<1x4xf32>) -> tensor<1x4xf32> attributes {deep = "
            + "[" * depth + "1" + "]" * depth + "} {\n  func.return %x : tensor<1x4xf32>\n}\n")


@pytest.mark.parametrize("command", [["xnpu-opt", "deep.mlir", "-o", "out.mlir"],
                                     ["xnpu-run", "deep.mlir", "--input", "x.npy", "-o", "out.npz"],
                                     ["xnpu-translate", "--emit-binary", "deep.mlir", "-o", "out.xnb"],
                                     ["xnpu-quantize", "deep.mlir", "--calibration", "x.npy", "-o", "out.mlir"]])
def test_deep_nesting_is_one_line_in_every_tool_that_parses_ir(work, command):
    """An attribute nested ~200 deep gave a 3,000-line RecursionError traceback."""
    (work / "deep.mlir").write_text(deep_attribute(200))
    np.save(work / "x.npy", np.ones((1, 4), np.float32))
    before = snapshot(work)
    line = one_clean_error(bounded(*command, cwd=work), command[0], r"brackets nested more than 64 deep")
    assert "deep.mlir:1:" in line
    nothing_left_and_inputs_untouched(work, before)


def test_nesting_within_the_limit_parses_verifies_prints_and_runs(work):
    (work / "deep.mlir").write_text(deep_attribute(62))
    np.save(work / "x.npy", np.ones((1, 4), np.float32))
    for command in (["xnpu-opt", "deep.mlir", "-o", "out.mlir"], ["xnpu-run", "deep.mlir", "--input", "x.npy"]):
        run = bounded(*command, cwd=work)
        assert run.returncode == 0 and run.stderr == "", run
    assert "[" * 62 + "1" in (work / "out.mlir").read_text()


def test_any_other_recursion_is_one_line(work):
    """A target TOML nested 1500 deep: Python's TOML reader recurses; the tools say so in one line."""
    (work / "deep.toml").write_text('name = "t"\nx = ' + "[" * 1500 + "1" + "]" * 1500 + "\n")
    one_clean_error(bounded("xnpu-compile", "tiny_cnn.onnx", "-c", "tiny_calib.npy", "--target", "deep.toml", "-o", "out.xnb",
                            cwd=work), "xnpu-compile", r"the input nests too deeply to be read \(Python's recursion limit\)")


# --------------------------------------------------------------------------------------
# TOSA text given to xnpu-run, and IREE
# --------------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def exported_resize(tmp_path_factory) -> Path:
    """A linear Resize exported as TOSA (once for the cases that damage it): its dequantizing
    table lookups are gathers whose indices are computed from the data, its resize gathers have
    constant indices."""
    from onnx import helper

    pytest.importorskip("iree.runtime", reason="IREE runs the TOSA export (pip install iree-base-runtime)")
    directory = tmp_path_factory.mktemp("resize")
    save_model_of(directory / "resize.onnx", [helper.make_node("Resize", ["x", "", "scales"], ["y"], name="up",
                                                               mode="linear", coordinate_transformation_mode="half_pixel")],
                  [1, 2, 4, 4], {"scales": np.array([1, 1, 2, 2], np.float32)})
    rng = np.random.default_rng(3)
    np.save(directory / "rc.npy", rng.random((8, 2, 4, 4), dtype=np.float32))
    np.save(directory / "rx.npy", rng.random((1, 2, 4, 4), dtype=np.float32))
    run = bounded("xnpu-compile", "resize.onnx", "-c", "rc.npy", "--emit", "tosa", "-o", "r.tosa.mlir", cwd=directory)
    assert run.returncode == 0, run
    return directory


@pytest.fixture
def tosa_resize(exported_resize, work) -> Path:
    for name in ("resize.onnx", "rc.npy", "rx.npy", "r.tosa.mlir"):
        (work / name).write_bytes((exported_resize / name).read_bytes())
    return work / "r.tosa.mlir"


def test_computed_gather_indices_out_of_range_never_reach_iree(tosa_resize, work):
    """The table lookup's offset of 128 changed: its indices leave the table. IREE read heap
    bytes into the output or crashed (SIGSEGV, exit status 139, no message); the indices are
    clamped to the table before IREE sees them."""
    text = tosa_resize.read_text()
    assert "dense<128> : tensor<1x1x1x1xi32>" in text
    for offset in ("100000000", "-2000000000"):
        (work / "bad.tosa.mlir").write_text(text.replace("dense<128> : tensor<1x1x1x1xi32>",
                                                         f"dense<{offset}> : tensor<1x1x1x1xi32>"))
        run = bounded("xnpu-run", "bad.tosa.mlir", "--input", "rx.npy", "-o", "bad.npz", cwd=work)
        assert run.returncode == 0 and run.stderr == "", run
        values = np.load(work / "bad.npz")["output0"]
        assert np.isfinite(values).all() and np.unique(values).size == 1  # every index clamped to one table end
        run.within_bounds()


@pytest.mark.parametrize("damage, pattern", [
    ((r"-> tensor<1x(\d+)x1xf32> loc", r"-> tensor<1x999x1xf32> loc"), r"d\.tosa\.mlir:\d+:\d+: .*"),  # shapes disagree
    ((r'"tosa\.gather"\((%\d+), (%\d+)\)', r'"tosa.gather"(\2, \1)'), r".*"),  # operands swapped
    ((r'"tosa\.add"', r'"tosa.sub"'), None),  # well-formed, another program: it runs
])
def test_damaged_tosa_is_one_line(tosa_resize, work, damage, pattern):
    """Damaged TOSA text ends in exit 0 or one error line: refused by the parser, the checks
    above, or iree-compile (its first error; a compiler crash is one line too)."""
    text, count = re.subn(*damage, tosa_resize.read_text(), count=1)
    assert count == 1
    (work / "d.tosa.mlir").write_text(text)
    before = snapshot(work)
    run = bounded("xnpu-run", "d.tosa.mlir", "--input", "rx.npy", "-o", "out.npz", cwd=work)
    if pattern is None:
        assert run.returncode == 0 and run.stderr == "", run
        return
    one_clean_error(run, "xnpu-run", pattern)
    nothing_left_and_inputs_untouched(work, before)


GATHER = """\
func.func @main(%x: tensor<1x4x1xf32>) -> tensor<1x3x1xf32> {{
  %i = "tosa.const"() <{{values = dense<[[0, {index}, 2]]> : tensor<1x3xi32>}}> : () -> tensor<1x3xi32>
  %0 = "tosa.gather"(%x, %i) : (tensor<1x4x1xf32>, tensor<1x3xi32>) -> tensor<1x3x1xf32>
  func.return %0 : tensor<1x3x1xf32>
}}
"""


def test_constant_gather_indices_are_checked(work):
    pytest.importorskip("iree.runtime", reason="IREE runs the TOSA export")
    np.save(work / "x.npy", np.arange(4, dtype=np.float32).reshape(1, 4, 1))
    (work / "ok.tosa.mlir").write_text(GATHER.format(index=3))
    run = bounded("xnpu-run", "ok.tosa.mlir", "--input", "x.npy", "-o", "out.npz", cwd=work)
    assert run.returncode == 0 and run.stderr == "", run
    assert np.load(work / "out.npz")["output0"].reshape(-1).tolist() == [0.0, 3.0, 2.0]
    (work / "bad.tosa.mlir").write_text(GATHER.format(index=4000000))
    one_clean_error(bounded("xnpu-run", "bad.tosa.mlir", "--input", "x.npy", cwd=work), "xnpu-run",
                    r"'tosa\.gather': indices \[0, 4000000\] are outside the 4 rows gathered from")


def test_a_tosa_file_holds_tosa_only(work):
    (work / "mixed.tosa.mlir").write_text(
        'func.func @main(%x: tensor<1x4xf32>) -> tensor<1x4xf32> {\n'
        '  %0 = nn.relu %x : tensor<1x4xf32> -> tensor<1x4xf32>\n'
        '  %1 = "tosa.abs"(%0) : (tensor<1x4xf32>) -> tensor<1x4xf32>\n'
        '  func.return %1 : tensor<1x4xf32>\n}\n')
    np.save(work / "x.npy", np.ones((1, 4), np.float32))
    one_clean_error(bounded("xnpu-run", "mixed.tosa.mlir", "--input", "x.npy", cwd=work), "xnpu-run",
                    r"'nn\.relu': a TOSA program holds tosa ops in one function only \(what convert-fixed-to-tosa writes\)")


def test_tosa_tables_must_match_their_index_type(work):
    pytest.importorskip("iree.runtime", reason="IREE runs the TOSA export")
    (work / "table.tosa.mlir").write_text(
        'func.func @main(%x: tensor<1x4xi8>) -> tensor<1x4xi8> {\n'
        '  %t = "tosa.const"() <{values = dense<1> : tensor<16xi8>}> : () -> tensor<16xi8>\n'
        '  %0 = "tosa.table"(%x, %t) : (tensor<1x4xi8>, tensor<16xi8>) -> tensor<1x4xi8>\n'
        '  func.return %0 : tensor<1x4xi8>\n}\n')
    np.save(work / "x.npy", np.full((1, 4), 100, np.int8))
    one_clean_error(bounded("xnpu-run", "table.tosa.mlir", "--input", "x.npy", cwd=work), "xnpu-run",
                    r"'tosa\.table': a table for i8 values has 256 entries of i8, not tensor<16xi8>")
