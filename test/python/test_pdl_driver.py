"""xnpu's PDL driver: benefit order, several patterns per op, native constraints and
rewrites by name, the supported subset, one-line errors, and the docs/extending.md
walk-through run from the markdown itself."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

from xnpu.core.errors import XnpuError
from xnpu.ir.io import parse_ir, print_ir
from xnpu.pdl.driver import apply_patterns
from xnpu.pdl.patterns import (
    NATIVE_CONSTRAINTS,
    NATIVE_REWRITES,
    PatternContext,
    load_patterns,
    native_constraint,
    native_rewrite,
    parse_pattern_file,
    scan_pattern_file,
)
from xnpu.lowering.legalize import legalize_patterns
from xnpu.target.description import load_target

ROOT = Path(__file__).resolve().parents[2]

MODULE = """
builtin.module {
  func.func @main(%a: tensor<1x2x2x2xf32>) -> tensor<1x2x2x2xf32> {
    %0 = fixed.quantize %a {scale = 0.5 : f64} : tensor<1x2x2x2xf32> -> tensor<1x2x2x2xi8>
    %1 = fixed.clamp %0 {min = -3 : i64, max = 4 : i64} : tensor<1x2x2x2xi8> -> tensor<1x2x2x2xi8> loc("c")
    %2 = fixed.dequantize %1 {scale = 0.5 : f64} : tensor<1x2x2x2xi8> -> tensor<1x2x2x2xf32>
    func.return %2 : tensor<1x2x2x2xf32>
  }
}
"""


def pattern_text(name: str, benefit: int, constraint: str, new_max: int) -> str:
    """A clamp -> clamp pattern whose new max comes from a native rewrite, guarded by `constraint`."""
    return f"""
// test pattern {name}
pdl.pattern @{name} : benefit({benefit}) {{
  %t = pdl.type
  %x = pdl.operand : %t
  %lo = pdl.attribute
  %hi = pdl.attribute
  %clamp = pdl.operation "fixed.clamp"(%x : !pdl.value) {{"min" = %lo, "max" = %hi}} -> (%t : !pdl.type)
  pdl.apply_native_constraint "{constraint}"(%clamp : !pdl.operation)
  pdl.rewrite %clamp {{
    %n = pdl.attribute = {new_max} : i64
    %max = pdl.apply_native_rewrite "test_max_plus_one"(%n : !pdl.attribute) : !pdl.attribute
    %new = pdl.operation "fixed.clamp"(%x : !pdl.value) {{"min" = %lo, "max" = %max}} -> (%t : !pdl.type)
    pdl.replace %clamp with %new
  }}
}}
"""


@native_constraint("test_max_is_4")
def _max_is_4(ctx, clamp):
    return clamp.bounds()[1] == 4


@native_constraint("test_never")
def _never(ctx, clamp):
    return False


@native_rewrite("test_max_plus_one")
def _plus_one(ctx, attr):
    from xdsl.dialects.builtin import IntegerAttr, i64

    return IntegerAttr(attr.value.data + 1, i64)


def run(tmp_path, *texts, target="xnpu_default"):
    for index, text in enumerate(texts):
        (tmp_path / f"p{index}.mlir").write_text(text)
    patterns = [p for p in load_patterns([tmp_path]) if p.name.startswith("t_")]
    module = parse_ir(MODULE)
    fired = apply_patterns(module, patterns, PatternContext(load_target(target), {}))
    return fired, print_ir(module)


def test_registries_hold_the_decorated_functions():
    assert NATIVE_CONSTRAINTS["test_max_is_4"] is _max_is_4
    assert NATIVE_REWRITES["test_max_plus_one"] is _plus_one


def test_highest_benefit_wins_and_native_rewrite_result_is_used(tmp_path):
    fired, text = run(tmp_path, pattern_text("t_low", 1, "test_max_is_4", 9) + pattern_text("t_high", 7, "test_max_is_4", 19))
    assert fired == ["t_high"]  # then the new clamp (max 20) no longer satisfies the constraint
    assert "max = 20 : i64" in text


def test_failing_constraint_falls_through_to_the_next_pattern(tmp_path):
    fired, text = run(tmp_path, pattern_text("t_high", 9, "test_never", 50), pattern_text("t_low", 2, "test_max_is_4", 29))
    assert fired == ["t_low"] and "max = 30 : i64" in text


def test_no_match_changes_nothing(tmp_path):
    fired, text = run(tmp_path, pattern_text("t_none", 1, "test_never", 5))
    assert fired == [] and "max = 4 : i64" in text


def test_summary_benefit_root_and_legalized_op(tmp_path):
    (tmp_path / "one.mlir").write_text(pattern_text("t_doc", 3, "test_never", 1))
    (pattern,) = parse_pattern_file(tmp_path / "one.mlir")
    assert (pattern.name, pattern.benefit, pattern.root_name, pattern.summary) == ("t_doc", 3, "fixed.clamp", "test pattern t_doc")
    shipped = {p.name: p for p in legalize_patterns()}
    assert shipped["mul_as_depthwise_conv"].root_name == "fixed.rescale"
    assert shipped["mul_as_depthwise_conv"].legalizes == "fixed.mul"
    assert [p.benefit for p in legalize_patterns()] == sorted((p.benefit for p in legalize_patterns()), reverse=True)


def test_unregistered_native_is_one_line_error(tmp_path):
    with pytest.raises(XnpuError, match=r"pattern @t_bad .*native constraint 'no_such' is not registered"):
        run(tmp_path, pattern_text("t_bad", 1, "no_such", 1))


def test_unsupported_ops_and_bad_files_are_rejected_on_load(tmp_path):
    results = tmp_path / "results.mlir"
    results.write_text("""
pdl.pattern @t_results : benefit(1) {
  %op = pdl.operation "fixed.concat"
  %rs = pdl.results of %op
  pdl.rewrite %op {
    pdl.erase %op
  }
}
""")
    with pytest.raises(XnpuError, match=r"pdl.results is not supported"):
        parse_pattern_file(results)
    two_ranges = tmp_path / "two_ranges.mlir"
    two_ranges.write_text("""
pdl.pattern @t_two_ranges : benefit(1) {
  %xs = pdl.operands
  %ys = pdl.operands
  %op = pdl.operation "fixed.concat"(%xs, %ys : !pdl.range<value>, !pdl.range<value>)
  pdl.rewrite %op {
    pdl.erase %op
  }
}
""")
    with pytest.raises(XnpuError, match=r"@t_two_ranges: one pdl.operands range per operation at most"):
        parse_pattern_file(two_ranges)
    broken = tmp_path / "broken.mlir"
    broken.write_text("pdl.pattern @x : benefit(1) {")
    with pytest.raises(XnpuError, match=r"broken.mlir: not a valid PDL pattern file"):
        parse_pattern_file(broken)
    duplicate = tmp_path / "dup"
    duplicate.mkdir()
    (duplicate / "a.mlir").write_text(pattern_text("clamp_as_bias_adds", 1, "test_never", 1))
    with pytest.raises(XnpuError, match=r"@clamp_as_bias_adds is already defined"):
        legalize_patterns([duplicate])


def test_invalid_created_op_names_the_pattern(tmp_path):
    # max 200 is outside int8's [-127, 127]: the created clamp fails its verifier
    with pytest.raises(XnpuError, match=r"pattern @t_invalid .*created an invalid fixed.clamp"):
        run(tmp_path, pattern_text("t_invalid", 1, "test_max_is_4", 199))


# --------------------------------------------------------------------------------------
# docs/extending.md, run as written
# --------------------------------------------------------------------------------------

BLOCK = re.compile(r"^```(\w+) file=(\S+)\n(.*?)^```", re.MULTILINE | re.DOTALL)


def test_extending_walkthrough(tmp_path):
    """docs/extending.md's files, written and run as they stand: an nn -> fixed pattern and a
    native rewrite put x + c on the CONV unit; every level down to isa computes the same."""
    blocks = BLOCK.findall((ROOT / "docs" / "extending.md").read_text())
    names = [name for _, name, _ in blocks]
    assert names == ["bias_natives.py", "patterns/add_constant_as_bias.mlir", "model.py", "compile.sh", "check.py"]
    for _, name, body in blocks:
        (tmp_path / name).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / name).write_text(body)
    env = dict(os.environ, PATH=os.pathsep.join([str(Path(sys.executable).parent), os.environ.get("PATH", "")]))
    shell = subprocess.run(["bash", "-e", "compile.sh"], cwd=tmp_path, capture_output=True, text=True, env=env)
    assert shell.returncode == 0, shell.stderr
    assert shell.stdout.splitlines()[0] == "1"  # grep -c npu.conv
    npu_text = (tmp_path / "model.npu.mlir").read_text()
    assert "npu.eltwise" not in npu_text and "relu" in npu_text.split("npu.conv", 1)[1].split("\n", 1)[0]
    isa_text = (tmp_path / "model.isa.mlir").read_text()
    assert isa_text.count("isa.conv") == 1 and "isa.eltwise" not in isa_text
    check = subprocess.run([sys.executable, "check.py"], cwd=tmp_path, capture_output=True, text=True, env=env)
    assert check.returncode == 0, check.stderr
    assert "bit-identical at fixed, npu and isa" in check.stdout
    shipped = subprocess.run(
        ["xnpu-opt", "model.mlir", "-p", 'calibrate{data="calib.npy"},lower-nn-to-fixed,fold-quantize-pairs,'
         "legalize{target=xnpu_lite},lower-fixed-to-npu{target=xnpu_lite}"],
        cwd=tmp_path, capture_output=True, text=True, env=env)
    assert shipped.returncode == 0, shipped.stderr
    assert 'npu.eltwise "add"' in shipped.stdout and "npu.conv" not in shipped.stdout  # the doc's claim


SHIPPED_PATTERN_FILES = sorted([*ROOT.glob("lowering/**/*.mlir"), *ROOT.glob("transforms/**/*.mlir")])


@pytest.mark.parametrize("path", SHIPPED_PATTERN_FILES, ids=lambda p: f"{p.parent.name}/{p.name}")
def test_the_scan_of_a_shipped_pattern_file_agrees_with_its_parse(path):
    """Shipped pattern files are parsed only when one of their roots is met; the scan that
    stands in for the parse until then must give the same names, benefits, roots and summaries."""
    scanned = scan_pattern_file(path)
    parsed = parse_pattern_file(path)
    if scanned is None:  # only a pattern rooted at any op is a reason to parse at load
        assert any(p.root_name is None for p in parsed), f"{path}: the scan cannot read it"
        return
    assert [(p.name, p.benefit, p.root_name, p.summary) for p in scanned] == \
        [(p.name, p.benefit, p.root_name, p.summary) for p in parsed]


def test_a_scanned_pattern_is_parsed_when_first_tried(tmp_path, monkeypatch):
    import xnpu.pdl.patterns as patterns_module

    path = tmp_path / "p.mlir"
    path.write_text(pattern_text("t_scanned", 3, "test_max_is_4", 6))
    monkeypatch.setattr(patterns_module, "SHIPPED_ROOT", tmp_path)
    [loaded] = load_patterns([path])
    assert (loaded.name, loaded.benefit, loaded.root_name, loaded.summary) == ("t_scanned", 3, "fixed.clamp",
                                                                               "test pattern t_scanned")
    assert loaded.parsed is None
    assert loaded.op.sym_name.data == "t_scanned" and loaded.root.opName.data == "fixed.clamp"
