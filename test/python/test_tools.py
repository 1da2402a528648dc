"""The command line tools, run as a user runs them: exit codes, stdout, one-line errors, output files.

The installed commands run as processes where the process is what is checked (a tool reading
stdin from another's output, stock xdsl-opt, xnpu-run's summary and its failing exits); the
other cases run the same `main` in a forked process of its own (`forked_tool`), without an
interpreter's start and imports (~0.6 s of CPU each); lit runs xnpu-opt on files throughout."""

from __future__ import annotations

import os
import re
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np
import pytest

import xnpu

BIN = Path(sys.executable).parent

CONV_BN = """\
func.func @main(%x: tensor<1x2x4x4xf32> {nn.name = "image"}) -> (tensor<1x3x4x4xf32> {nn.name = "features"}) {
  %w = nn.constant dense<[[[[1.0]], [[2.0]]], [[[3.0]], [[4.0]]], [[[5.0]], [[6.0]]]]> : tensor<3x2x1x1xf32>
  %g = nn.constant dense<[2.0, 1.0, 0.5]> : tensor<3xf32>
  %beta = nn.constant dense<[1.0, 0.0, -1.0]> : tensor<3xf32>
  %m = nn.constant dense<[0.5, 1.0, 2.0]> : tensor<3xf32>
  %v = nn.constant dense<[3.0, 0.0, 15.0]> : tensor<3xf32>
  %y = nn.conv2d %x, %w {strides = array<i64: 1, 1>, pads = array<i64: 0, 0, 0, 0>, dilations = array<i64: 1, 1>, group = 1 : i64} : (tensor<1x2x4x4xf32>, tensor<3x2x1x1xf32>) -> tensor<1x3x4x4xf32> loc("conv0")
  %z = nn.batch_norm %y, %g, %beta, %m, %v {epsilon = 1.0 : f32} : (tensor<1x3x4x4xf32>, tensor<3xf32>, tensor<3xf32>, tensor<3xf32>, tensor<3xf32>) -> tensor<1x3x4x4xf32> loc("bn0")
  func.return %z : tensor<1x3x4x4xf32>
}
"""

# the conv's result type claims 4x4 but a 3x3 kernel without padding gives 2x2
WRONG_SHAPE = CONV_BN.replace("tensor<3x2x1x1xf32>", "tensor<3x2x3x3xf32>").replace(
    "dense<[[[[1.0]], [[2.0]]], [[[3.0]], [[4.0]]], [[[5.0]], [[6.0]]]]>", "dense<1.0>"
)

MALFORMED = """\
func.func @main(%x: tensor<2xf32>) -> tensor<2xf32> {
  %r = nn.rectify %x : tensor<2xf32> -> tensor<2xf32>
  func.return %r : tensor<2xf32>
}
"""


def tool(name: str, *args, cwd: Path | None = None, stdin: str | None = None, timeout: float = 120) -> subprocess.CompletedProcess:
    """Run a tool in its own process (each start costs a second or two of imports)."""
    script = BIN / name
    command = [str(script)] if script.exists() else [sys.executable, "-m", f"xnpu.tools.{name.replace('-', '_')}"]
    return subprocess.run(
        [*command, *map(str, args)], capture_output=True, text=True, cwd=cwd, input=stdin, timeout=timeout
    )


def forked_tool(name: str, *args, cwd: Path | None = None, timeout: float = 120) -> subprocess.CompletedProcess:
    """Run a tool's main in a forked child of this process as its console script runs it (the
    fuzz campaign's way, tools/fuzz.py `run_child`): its own process, exit status, stdout and
    stderr, Python's default warning filters and a timeout, without the ~1 s of an interpreter's
    start and imports."""
    from xnpu.tools import fuzz
    from xnpu.tools.fuzz_case import Case

    with tempfile.TemporaryDirectory() as streams:
        pid = fuzz.start_child(Case("test", "", [name, *map(str, args)]), cwd or Path.cwd(), fuzz.tool_mains(),
                               Path(streams))
        deadline = time.monotonic() + timeout
        while not (waited := os.waitpid(pid, os.WNOHANG))[0]:
            if time.monotonic() > deadline:
                os.kill(pid, signal.SIGKILL)
                os.waitpid(pid, 0)
                raise subprocess.TimeoutExpired([name, *map(str, args)], timeout)
            time.sleep(0.002)
        stdout, stderr = (Path(streams, stream).read_text() for stream in ("stdout", "stderr"))
    return subprocess.CompletedProcess([name, *args], os.waitstatus_to_exitcode(waited[1]), stdout, stderr)


def tool_in_process(main, *args, cwd: Path, capsys, monkeypatch) -> subprocess.CompletedProcess:
    """Run a tool's main() here: the same code path as the process, without its start-up cost."""
    monkeypatch.chdir(cwd)
    returncode = main([str(arg) for arg in args])
    captured = capsys.readouterr()
    return subprocess.CompletedProcess(args, returncode, captured.out, captured.err)


def assert_one_line_error(result: subprocess.CompletedProcess, pattern: str) -> str:
    assert result.returncode == 1, result
    assert "Traceback" not in result.stderr
    lines = result.stderr.splitlines()
    assert len(lines) == 1, result.stderr
    assert re.fullmatch(pattern, lines[0]), lines[0]
    return lines[0]


@pytest.fixture
def files(tmp_path: Path) -> Path:
    (tmp_path / "model.mlir").write_text(CONV_BN)
    (tmp_path / "wrong_shape.mlir").write_text(WRONG_SHAPE)
    (tmp_path / "malformed.mlir").write_text(MALFORMED)
    (tmp_path / "int_relu.mlir").write_text(MALFORMED.replace("nn.rectify", "nn.relu").replace("f32", "i32"))
    return tmp_path


# --------------------------------------------------------------------------------------
# xnpu-opt
# --------------------------------------------------------------------------------------


def test_opt_runs_passes_and_keeps_locations(files):
    result = forked_tool("xnpu-opt", files / "model.mlir", "-p", "fold-batch-norm,constant-fold{max-elements=100}")
    assert result.returncode == 0, result.stderr
    assert "nn.batch_norm" not in result.stdout
    assert 'loc(fused["conv0", "bn0"])' in result.stdout
    assert "loc(unknown)" not in result.stdout
    module = xnpu.parse_ir(result.stdout)
    x = np.random.default_rng(0).standard_normal((3, 2, 4, 4)).astype(np.float32)
    expected = xnpu.run(xnpu.parse_ir(CONV_BN), x)["features"]
    np.testing.assert_allclose(xnpu.run(module, x)["features"], expected, rtol=1e-5, atol=1e-6)


def test_opt_output_is_reparseable_and_stable(files):
    generic = tool("xnpu-opt", files / "model.mlir", "--print-op-generic")
    from_generic = tool("xnpu-opt", stdin=generic.stdout)
    assert generic.returncode == from_generic.returncode == 0
    assert '"nn.conv2d"(' in generic.stdout and 'loc("conv0")' in generic.stdout
    assert from_generic.stdout == xnpu.print_ir(xnpu.parse_ir(CONV_BN))
    assert xnpu.print_ir(xnpu.parse_ir(from_generic.stdout)) == from_generic.stdout


def test_opt_writes_output_file(files):
    out = files / "out.mlir"
    result = forked_tool("xnpu-opt", files / "model.mlir", "-p", "fold-batch-norm", "-o", out)
    assert result.returncode == 0 and result.stdout == ""
    assert "nn.conv2d" in out.read_text() and "nn.batch_norm" not in out.read_text()
    assert [p.name for p in files.iterdir() if p.name.startswith(".out.mlir")] == []


def test_opt_malformed_file_is_one_located_line(files):
    out = files / "out.mlir"
    result = forked_tool("xnpu-opt", files / "malformed.mlir", "-o", out)
    assert_one_line_error(result, re.escape(str(files / "malformed.mlir")) + r":2:\d+: error: .*nn\.rectify.*")
    assert not out.exists()


def test_opt_verifier_failure_names_op_and_node_and_keeps_old_output(files):
    out = files / "out.mlir"
    out.write_text("previous result\n")
    result = forked_tool("xnpu-opt", files / "wrong_shape.mlir", "-o", out)
    line = assert_one_line_error(result, r".*wrong_shape\.mlir:7:3: error: .*")
    assert line.endswith(
        "error: 'nn.conv2d' at loc(\"conv0\"): result shape is [1, 3, 4, 4] but the operands give [1, 3, 2, 2]"
    )
    assert out.read_text() == "previous result\n"
    assert [p.name for p in files.iterdir() if p.name.startswith(".out")] == []


def test_opt_verify_diagnostics_prints_to_stdout(files):
    result = forked_tool("xnpu-opt", files / "wrong_shape.mlir", "--verify-diagnostics")
    assert result.returncode == 0 and result.stderr == ""
    assert result.stdout.splitlines()[0] == "nn.conv2d: result shape is [1, 3, 4, 4] but the operands give [1, 3, 2, 2]"


def test_opt_split_input_file_counts_lines_from_the_file_start(files):
    path = files / "split.mlir"
    path.write_text(CONV_BN + "// -----\n" + MALFORMED)
    result = forked_tool("xnpu-opt", path, "--split-input-file")
    bad_line = CONV_BN.count("\n") + 1 + 2  # the separator line, then line 2 of the chunk
    assert_one_line_error(result, re.escape(f"{path}:{bad_line}:") + r"\d+: error: .*")
    assert "nn.conv2d" in result.stdout  # the first chunk was printed before the failure

    path.write_text(CONV_BN + "// -----\n" + CONV_BN)
    result = forked_tool("xnpu-opt", path, "--split-input-file", "-p", "fold-batch-norm")
    assert result.returncode == 0
    assert result.stdout.count("// -----") == 1 and result.stdout.count("nn.conv2d") == 2


def test_opt_lists_passes_from_the_registry():
    from xnpu.driver.registry import all_passes

    result = forked_tool("xnpu-opt", "--list-passes")
    assert result.returncode == 0
    names = [line.split()[0] for line in result.stdout.splitlines()]
    assert names == list(all_passes())
    assert any(line.startswith("fold-batch-norm") and "batch_norm" in line for line in result.stdout.splitlines())


@pytest.mark.parametrize(
    "pipeline, reason",
    [
        ("no-such-pass", r"Unrecognized passes: \['no-such-pass'\]"),
        ("constant-fold{max-elements=many}", r".*"),
        ("constant-fold{unknown-option=1}", r".*unknown_option.*"),
    ],
)
def test_opt_bad_pipeline_is_one_line(files, pipeline, reason, capsys, monkeypatch):
    from xnpu.tools.xnpu_opt import main

    result = tool_in_process(main, files / "model.mlir", "-p", pipeline, cwd=files, capsys=capsys, monkeypatch=monkeypatch)
    assert_one_line_error(result, re.escape(f"xnpu-opt: error: invalid pass pipeline '{pipeline}': ") + reason)


def test_opt_missing_input_file(files):
    result = forked_tool("xnpu-opt", files / "absent.mlir")
    assert_one_line_error(result, r"xnpu-opt: error: .*absent\.mlir: cannot read: .*")


def test_stock_xdsl_opt_runs_xnpu_passes(files):
    result = tool("xdsl-opt", files / "model.mlir", "-p", "fold-batch-norm")
    assert result.returncode == 0, result.stderr
    assert "nn.conv2d" in result.stdout and "nn.batch_norm" not in result.stdout


# --------------------------------------------------------------------------------------
# xnpu-run
# --------------------------------------------------------------------------------------


@pytest.fixture
def arrays(files: Path) -> Path:
    rng = np.random.default_rng(1)
    np.save(files / "x.npy", rng.standard_normal((1, 2, 4, 4)).astype(np.float32))
    np.save(files / "batch.npy", rng.standard_normal((4, 2, 4, 4)).astype(np.float32))
    np.savez(files / "inputs.npz", image=np.load(files / "x.npy"))
    np.save(files / "wrong_shape.npy", np.zeros((1, 3, 4, 4), np.float32))
    np.save(files / "ints.npy", np.zeros((1, 2, 4, 4), np.int32))
    np.savez(files / "wrong_name.npz", picture=np.load(files / "x.npy"))
    return files


def expected_features(path: Path) -> np.ndarray:
    return xnpu.run(xnpu.parse_ir(CONV_BN), np.load(path))["features"]


def assert_summary(stdout: str, features: np.ndarray) -> None:
    first, values = stdout.splitlines()[:2]
    assert first.startswith("features: 1x3x4x4 float32")
    assert f"max {features.max():.6g}" in first and f"min {features.min():.6g}" in first
    assert values.startswith(f"  values: [{features.reshape(-1)[0]:.6g}, ")


def test_run_summarizes_outputs(arrays):
    result = tool("xnpu-run", "model.mlir", "--input", "x.npy", cwd=arrays)
    assert result.returncode == 0, result.stderr
    assert_summary(result.stdout, expected_features(arrays / "x.npy"))


@pytest.mark.parametrize("spec", ["image=x.npy", "inputs.npz"])
def test_run_takes_inputs_by_name(arrays, spec, capsys, monkeypatch):
    from xnpu.tools.xnpu_run import main

    result = tool_in_process(main, "model.mlir", "--input", spec, cwd=arrays, capsys=capsys, monkeypatch=monkeypatch)
    assert result.returncode == 0, result.stderr
    assert_summary(result.stdout, expected_features(arrays / "x.npy"))


def test_run_writes_outputs_for_a_batch(arrays):
    result = forked_tool("xnpu-run", "model.mlir", "-i", "batch.npy", "-o", "out.npz", cwd=arrays)
    assert result.returncode == 0, result.stderr
    with np.load(arrays / "out.npz") as saved:
        assert saved.files == ["features"]
        assert saved["features"].shape == (4, 3, 4, 4)
        np.testing.assert_array_equal(saved["features"], expected_features(arrays / "batch.npy"))


@pytest.mark.parametrize(
    "args, pattern",
    [
        (["model.mlir", "-i", "wrong_shape.npy"], r".*'image' has shape \[1, 3, 4, 4\], the model expects \[1, 2, 4, 4\].*"),
        (["model.mlir", "-i", "ints.npy"], r".*'image' has dtype int32, the model expects float32"),
        (["model.mlir", "-i", "wrong_name.npz"], r".*unknown input 'picture'; the model's inputs are: image"),
        (["model.mlir", "-i", "picture=x.npy"], r".*unknown input 'picture'.*"),
        (["model.mlir", "-i", "absent.npy"], r".*absent\.npy: cannot read: .*"),
        (["model.mlir"], r".*missing input 'image'.*"),
        (["absent.mlir", "-i", "x.npy"], r".*absent\.mlir: cannot read.*"),
        (["malformed.mlir", "-i", "x.npy"], r".*malformed\.mlir:2:\d+: .*nn\.rectify.*"),
        (["int_relu.mlir", "-i", "ints.npy"], r"int_relu\.mlir:2:3: i32 should be of base attribute f32"),
        (["wrong_shape.mlir", "-i", "x.npy"], r".*'nn\.conv2d' at loc\(\"conv0\"\): result shape .*"),
        (["model.onnx", "-i", "x.npy"], r".*unknown model file type '\.onnx'.*"),
    ],
)
def test_run_errors_are_one_line_and_leave_no_output(arrays, args, pattern, capsys, monkeypatch):
    from xnpu.tools.xnpu_run import main

    result = tool_in_process(main, *args, "-o", "out.npz", cwd=arrays, capsys=capsys, monkeypatch=monkeypatch)
    assert_one_line_error(result, r"xnpu-run: error: " + pattern)
    assert not (arrays / "out.npz").exists()
    assert [p.name for p in arrays.iterdir() if p.name.startswith(".out")] == []


@pytest.mark.parametrize(
    "args, pattern",
    [
        (["model.mlir", "-i", "wrong_shape.npy"], r".*'image' has shape .*"),
        (["malformed.mlir", "-i", "x.npy"], r".*malformed\.mlir:2:\d+: .*"),
    ],
)
def test_run_error_process_exits_1_without_traceback(arrays, args, pattern):
    result = tool("xnpu-run", *args, "-o", "out.npz", cwd=arrays)
    assert_one_line_error(result, r"xnpu-run: error: " + pattern)
    assert not (arrays / "out.npz").exists()


def test_outputs_get_the_usual_file_mode(tmp_path):
    """Atomic writes go through a private temporary file; the result must not stay private."""
    import os

    from xnpu.core.files import write_atomically

    target = tmp_path / "out.mlir"
    old = os.umask(0o022)
    try:
        write_atomically(target, "text")
    finally:
        os.umask(old)
    assert target.read_text() == "text"
    assert (target.stat().st_mode & 0o777) == 0o644


def test_the_tools_calibration_choices_are_the_compilers():
    """tools/calibration_options.py writes out the methods and runtimes (parsing a command line
    loads no compiler module): they are calibrate's, its default method first."""
    from xnpu.tools import calibration_options
    from xnpu.transforms import calibrate

    assert sorted(calibration_options.METHODS) == sorted(calibrate.METHODS)
    assert calibration_options.METHODS[0] == calibrate.DEFAULT_METHOD
    assert sorted(calibration_options.RUNTIMES) == sorted(calibrate.RUNTIMES)
    assert calibration_options.RUNTIMES[0] == calibrate.DEFAULT_RUNTIME
