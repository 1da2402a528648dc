"""Hostile inputs, run through the real tools (docs/reliability.md): nothing loaded from disk
runs code, names print escaped, and every input of unbounded cost ends in one clean line.

Each case runs the installed command in its own process and checks what a user sees and
what the machine pays: the exit status, the one error line (no control character in it),
no output or temporary file left, the inputs unchanged, and at most 10 s of CPU time and
1 GB of peak memory (the child's own rusage, so the load of the machine does not matter).
"""

from __future__ import annotations

import hashlib
import os
import pickle
import re
import resource
import subprocess
import sys
import threading
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pytest
import xdsl

ROOT = Path(__file__).resolve().parents[2]
EXAMPLES = ROOT / "examples"
BIN = Path(sys.executable).parent
CPU_SECONDS = 10.0
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


def bounded(name: str, *args, cwd: Path, env: dict[str, str] | None = None, timeout: float = 120) -> Run:
    """Run a tool in its own process; its CPU time and peak RSS from its own rusage (wait4)."""
    script = BIN / name
    command = [str(script)] if script.exists() else [sys.executable, "-m", f"xnpu.tools.{name.replace('-', '_')}"]
    process = subprocess.Popen([*command, *map(str, args)], cwd=cwd, env={**os.environ, **(env or {})},
                               stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    output: dict[str, bytes] = {}
    readers = [threading.Thread(target=lambda key, stream: output.__setitem__(key, stream.read()), args=item)
               for item in (("stdout", process.stdout), ("stderr", process.stderr))]
    for reader in readers:
        reader.start()
    timer = threading.Timer(timeout, process.kill)
    timer.start()
    try:
        _, status, usage = os.wait4(process.pid, 0)
    finally:
        timer.cancel()
    process.returncode = os.waitstatus_to_exitcode(status)
    for reader in readers:
        reader.join()
    return Run(process.returncode, output["stdout"].decode(errors="replace"), output["stderr"].decode(errors="replace"),
               usage.ru_utime + usage.ru_stime, usage.ru_maxrss * 1024)


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
# Nothing loaded from disk runs code: pattern cache entries, numba's cache
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
    (work / "m.mlir").write_text(bounded("xnpu-compile", "tiny_cnn.onnx", "-c", "tiny_calib.npy", "--emit", "fixed",
                                         "-o", "-", cwd=work, env=environment).stdout)
    run = bounded("xnpu-opt", "m.mlir", "-p", 'legalize{target="xnpu_lite" patterns="extra"}', "-o", "out.mlir",
                  cwd=work, env=environment)
    assert run.returncode == 0 and run.stderr == "", run
    assert not marker.exists()


def test_planted_numba_cache_never_runs(work, tmp_path, monkeypatch):
    """numba's cache index is a pickle, and NUMBA_CACHE_DIR is the first place stock numba
    reads it from: a pickle planted there for every compiled loop is never loaded."""
    import numba.core.config
    from numba.core.caching import FunctionCache

    from xnpu.semantics import fixed_point_loops
    from xnpu.transforms import calibrate_loops

    marker = tmp_path / "pwned"
    monkeypatch.setattr(numba.core.config, "CACHE_DIR", str(tmp_path / "numba"))
    loops = [value for module in (fixed_point_loops, calibrate_loops) for value in vars(module).values()
             if hasattr(value, "py_func")]
    assert len(loops) >= 4
    for loop in loops:
        index = FunctionCache(loop.py_func)._cache_file._index_path  # where stock numba reads it with NUMBA_CACHE_DIR
        Path(index).parent.mkdir(parents=True, exist_ok=True)
        Path(index).write_bytes(pickle.dumps(Planted(marker)))
    binary = bounded("xnpu-compile", "tiny_cnn.onnx", "-c", "tiny_calib.npy", "-o", "m.xnb", "--quiet", cwd=work,
                     env={"NUMBA_CACHE_DIR": str(tmp_path / "numba")})
    assert binary.returncode == 0, binary
    run = bounded("xnpu-run", "m.xnb", "--input", "tiny_input.npy", "-o", "out.npz", cwd=work,
                  env={"NUMBA_CACHE_DIR": str(tmp_path / "numba")})
    assert run.returncode == 0 and run.stderr == "", run
    run.within_bounds()
    assert not marker.exists()


# --------------------------------------------------------------------------------------
# Names and strings escaped wherever printed
# --------------------------------------------------------------------------------------

NASTY_NAMES = [
    'conv_é', "tab\there", 'a\n  isa.halt\n"x', "\x1b[31mred\x1b[0m\x07", "\x01\x7f\x9b", "back\\slash\\0A",
    "line\u2028separator", "\u202eevil", "// [3] fake", '"}) loc(', "日本語", "emoji🙂", "=HYPERLINK(\"http://x\")",
]


def renamed_tiny_cnn(directory: Path, names: list[str], input_name: str = "input", output_name: str = "logits") -> Path:
    """tiny_cnn with its nodes (in turn) named `names`, and its input and output renamed."""
    import onnx

    model = onnx.load(str(EXAMPLES / "tiny_cnn.onnx"))
    graph = model.graph
    for index, node in enumerate(graph.node):
        node.name = names[index % len(names)] + ("" if index < len(names) else f"#{index}")
        for values in (node.input, node.output):
            for position, value in enumerate(values):
                values[position] = {"input": input_name, "logits": output_name}.get(value, value)
    graph.input[0].name, graph.output[0].name = input_name, output_name
    path = directory / "named.onnx"
    onnx.save(model, str(path))
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
                               r"unsupported ONNX op 'Bogus' \(node '\\1B\[31mred\\1B\[0m\\07'\): no nn equivalent")
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
