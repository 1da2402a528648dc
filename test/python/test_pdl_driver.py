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

from xnpu.errors import XnpuError
from xnpu.ir_io import parse_ir, print_ir
from xnpu.lowering.pdl_driver import (
    NATIVE_CONSTRAINTS,
    NATIVE_REWRITES,
    PatternContext,
    apply_patterns,
    load_patterns,
    native_constraint,
    native_rewrite,
    parse_pattern_file,
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
    blocks = BLOCK.findall((ROOT / "docs" / "extending.md").read_text())
    names = [name for _, name, _ in blocks]
    assert names == ["relu_natives.py", "patterns/relu_conv.mlir", "pool_relu.mlir", "legalize.sh", "check.py"]
    for _, name, body in blocks:
        (tmp_path / name).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / name).write_text(body)
    env = dict(os.environ, PATH=os.pathsep.join([str(Path(sys.executable).parent), os.environ.get("PATH", "")]))
    shell = subprocess.run(["bash", "-e", "legalize.sh"], cwd=tmp_path, capture_output=True, text=True, env=env)
    assert shell.returncode == 0, shell.stderr
    assert shell.stdout.strip() == "1"
    check = subprocess.run([sys.executable, "check.py"], cwd=tmp_path, capture_output=True, text=True, env=env)
    assert check.returncode == 0, check.stderr
    assert "shipped patterns 3, with relu_as_flagged_conv 1" in check.stdout


# --------------------------------------------------------------------------------------
# Matching beyond xDSL's PDLMatcher: commutative operands, ranges, unlisted operands
# --------------------------------------------------------------------------------------

MUL_MODULE = """
builtin.module {
  func.func @main(%a: tensor<1x2xf32>) -> (tensor<1x2xi16>, tensor<1x2xi16>, tensor<1x2xi16>) {
    %q = fixed.quantize %a {scale = 0.5 : f64} : tensor<1x2xf32> -> tensor<1x2xi8>
    %c = fixed.constant dense<3> : tensor<1x2xi8>
    %0 = fixed.mul %q, %c : (tensor<1x2xi8>, tensor<1x2xi8>) -> tensor<1x2xi16>
    %1 = fixed.mul %c, %q : (tensor<1x2xi8>, tensor<1x2xi8>) -> tensor<1x2xi16>
    %2 = fixed.mul %q, %q : (tensor<1x2xi8>, tensor<1x2xi8>) -> tensor<1x2xi16>
    func.return %0, %1, %2 : tensor<1x2xi16>, tensor<1x2xi16>, tensor<1x2xi16>
  }
}
"""

# mul(x, constant) in either operand order, x not a constant: the first order that matches
# structurally (c bound to the quantize in `mul %c, %q`) fails the constraint, the swapped one passes
SCALE_BY_CONSTANT = """
pdl.pattern @t_mul_by_constant : benefit(1) {
  %t = pdl.type
  %ct = pdl.type
  %const = pdl.operation "fixed.constant" -> (%ct : !pdl.type)
  %c = pdl.result 0 of %const
  %x = pdl.operand
  %mul = pdl.operation "fixed.mul"(%x, %c : !pdl.value, !pdl.value) -> (%t : !pdl.type)
  pdl.apply_native_constraint "test_not_constant"(%x : !pdl.value)
  pdl.rewrite %mul {
    %m = pdl.attribute = array<i64: 16384>
    %s = pdl.attribute = array<i64: 13>
    %new = pdl.operation "fixed.rescale"(%x : !pdl.value) {"multiplier" = %m, "shift" = %s} -> (%t : !pdl.type)
    pdl.replace %mul with %new
  }
}
"""


@native_constraint("test_not_constant")
def _not_constant(ctx, value):
    return value.owner.name != "fixed.constant"


def test_commutative_operands_match_in_either_order_and_backtrack_over_constraints(tmp_path):
    (tmp_path / "p.mlir").write_text(SCALE_BY_CONSTANT)
    module = parse_ir(MUL_MODULE)
    fired = apply_patterns(module, load_patterns([tmp_path]), PatternContext())
    text = print_ir(module)
    assert fired == ["t_mul_by_constant", "t_mul_by_constant"]
    assert text.count("fixed.rescale %q {multiplier = array<i64: 16384>, shift = array<i64: 13>}") == 2
    assert "fixed.mul %q, %q" in text  # two activations: no constant operand in either order


CONV_MODULE = """
builtin.module {
  func.func @main(%x: tensor<1x1x2x2xi8>) -> (tensor<1x1x2x2xi32>, tensor<1x1x2x2xi32>) {
    %w = fixed.constant dense<1> : tensor<1x1x1x1xi8>
    %b = fixed.constant dense<5> : tensor<1xi32>
    %0 = fixed.conv2d %x, %w, %b {strides = array<i64: 1, 1>, pads = array<i64: 0, 0, 0, 0>, dilations = array<i64: 1, 1>, group = 1 : i64} : (tensor<1x1x2x2xi8>, tensor<1x1x1x1xi8>, tensor<1xi32>) -> tensor<1x1x2x2xi32>
    %1 = fixed.conv2d %x, %w {strides = array<i64: 1, 1>, pads = array<i64: 0, 0, 0, 0>, dilations = array<i64: 1, 1>, group = 1 : i64} : (tensor<1x1x2x2xi8>, tensor<1x1x1x1xi8>) -> tensor<1x1x2x2xi32>
    func.return %0, %1 : tensor<1x1x2x2xi32>, tensor<1x1x2x2xi32>
  }
}
"""

# one pattern for a conv with or without its bias: the range takes what %x and %w leave,
# and the created op gets the same operands back (a 1x1 kernel: dilation keeps the shape)
DILATE_CONV = """
pdl.pattern @t_dilate_conv : benefit(1) {
  %x = pdl.operand
  %w = pdl.operand
  %rest = pdl.operands
  %p = pdl.attribute
  %s = pdl.attribute
  %d = pdl.attribute = array<i64: 1, 1>
  %g = pdl.attribute
  %conv = pdl.operation "fixed.conv2d"(%x, %w, %rest : !pdl.value, !pdl.value, !pdl.range<value>) {"pads" = %p, "strides" = %s, "dilations" = %d, "group" = %g}
  pdl.rewrite %conv {
    %t = pdl.type : tensor<1x1x2x2xi32>
    %dilations = pdl.attribute = array<i64: 2, 2>
    %new = pdl.operation "fixed.conv2d"(%x, %w, %rest : !pdl.value, !pdl.value, !pdl.range<value>) {"pads" = %p, "strides" = %s, "dilations" = %dilations, "group" = %g} -> (%t : !pdl.type)
    pdl.replace %conv with %new
  }
}
"""


def test_operand_ranges_and_unlisted_results(tmp_path):
    (tmp_path / "p.mlir").write_text(DILATE_CONV)
    module = parse_ir(CONV_MODULE)
    fired = apply_patterns(module, load_patterns([tmp_path]), PatternContext())
    text = print_ir(module)
    assert fired == ["t_dilate_conv", "t_dilate_conv"]
    assert re.search(r"fixed.conv2d %x, %w, %b \{[^}]*dilations = array<i64: 2, 2>", text)
    assert re.search(r"fixed.conv2d %x, %w \{[^}]*dilations = array<i64: 2, 2>", text)


NAMED_MODULE = """
builtin.module {
  func.func @main(%x: tensor<2xi8>) -> tensor<2xi8> {
    %relu = fixed.clamp %x {min = 0 : i64, max = 127 : i64} : tensor<2xi8> -> tensor<2xi8>
    func.return %relu : tensor<2xi8>
  }
}
"""

# two created ops: the inner one is no replacement value, yet it is named after the root too
SPLIT_CLAMP = """
pdl.pattern @t_split_clamp : benefit(1) {
  %t = pdl.type
  %x = pdl.operand : %t
  %lo = pdl.attribute = 0 : i64
  %hi = pdl.attribute = 127 : i64
  %clamp = pdl.operation "fixed.clamp"(%x : !pdl.value) {"min" = %lo, "max" = %hi} -> (%t : !pdl.type)
  pdl.rewrite %clamp {
    %mid = pdl.attribute = 100 : i64
    %first = pdl.operation "fixed.clamp"(%x : !pdl.value) {"min" = %lo, "max" = %mid} -> (%t : !pdl.type)
    %y = pdl.result 0 of %first
    %second = pdl.operation "fixed.clamp"(%y : !pdl.value) {"min" = %lo, "max" = %mid} -> (%t : !pdl.type)
    pdl.replace %clamp with %second
  }
}
"""


def test_created_ops_take_the_name_of_the_replaced_op(tmp_path):
    (tmp_path / "p.mlir").write_text(SPLIT_CLAMP)
    module = parse_ir(NAMED_MODULE)
    assert apply_patterns(module, load_patterns([tmp_path]), PatternContext()) == ["t_split_clamp"]
    text = print_ir(module)
    assert "%relu = fixed.clamp %x {min = 0 : i64, max = 100 : i64}" in text
    assert "%relu_1 = fixed.clamp %relu {min = 0 : i64, max = 100 : i64}" in text
    assert "func.return %relu_1" in text


def test_pattern_files_are_parsed_once_per_version(tmp_path):
    path = tmp_path / "p.mlir"
    path.write_text(pattern_text("t_first", 1, "test_never", 1))
    first, again = load_patterns([path]), load_patterns([path])
    assert first[0].op is again[0].op  # parsed once
    assert first[0] is not again[0]  # each load orders its own patterns
    path.write_text(pattern_text("t_second_version", 1, "test_never", 1))
    assert [p.name for p in load_patterns([path])] == ["t_second_version"]
