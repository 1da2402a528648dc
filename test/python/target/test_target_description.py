"""Target descriptions: the shipped targets, and one clear error per kind of bad file."""

import copy
import sys
from dataclasses import FrozenInstanceError
from pathlib import Path

import pytest

from xnpu.core.errors import XnpuError
from xnpu.target.description import TARGET_DIR, list_targets, load_target, parse_target

if sys.version_info >= (3, 11):
    import tomllib
else:
    import tomli as tomllib


def default_document() -> dict:
    return tomllib.loads((TARGET_DIR / "xnpu_default.toml").read_text())


def test_shipped_targets_load_and_are_distinct():
    assert list_targets() == ["xnpu_default", "xnpu_lite"]
    targets = [load_target(name) for name in list_targets()]
    assert [t.name for t in targets] == list_targets()  # name matches the file
    assert len({t.id for t in targets}) == len(targets)


def test_default_target_has_every_unit():
    t = load_target("xnpu_default")
    assert t.id == 1
    assert t.memory.sram_bytes == 1 << 20 and t.memory.channel_alignment == 16
    assert t.memory.kernel_layout == "OHWI"
    assert (t.data.saturation_min, t.data.saturation_max) == (-127, 127)
    assert t.has_clamp and t.has_table and t.conv.depthwise
    assert all(t.supports_eltwise(op) for op in ("add", "sub", "mul"))
    assert all(t.supports_pool(kind) for kind in ("max", "avg", "global_avg"))
    assert t.align(1) == 16 and t.align(16) == 16 and t.align(17) == 32


def test_lite_target_lacks_clamp_and_mul():
    t = load_target("xnpu_lite")
    assert t.id == 2 and t.memory.sram_bytes == 256 * 1024
    assert not t.has_clamp and t.has_table and t.conv.depthwise
    assert t.supports_eltwise("add") and not t.supports_eltwise("mul")


def test_target_is_frozen():
    t = load_target("xnpu_default")
    with pytest.raises(FrozenInstanceError):
        t.memory.sram_bytes = 1  # type: ignore[misc]


def test_load_by_path(tmp_path: Path):
    path = tmp_path / "mine.toml"
    path.write_text((TARGET_DIR / "xnpu_lite.toml").read_text())
    assert load_target(path) == load_target("xnpu_lite")
    assert load_target(str(path)).name == "xnpu_lite"


def _mutated(edit) -> dict:
    document = copy.deepcopy(default_document())
    edit(document)
    return document


@pytest.mark.parametrize(
    "edit, message",
    [
        (lambda d: d["memory"].pop("sram_bytes"), "missing field 'memory.sram_bytes'"),
        (lambda d: d.pop("units"), "missing field 'units.conv.depthwise'"),
        (lambda d: d["memory"].update(sram_bytes="1MiB"), "field 'memory.sram_bytes' must be an integer, got a string"),
        (lambda d: d["units"]["table"].update(present=1), "field 'units.table.present' must be true or false, got an integer"),
        (lambda d: d["units"]["eltwise"].update(ops="add"), "field 'units.eltwise.ops' must be a list of strings"),
        (lambda d: d["units"]["eltwise"].update(ops=["add", "div"]), "field 'units.eltwise.ops' has 'div', not one of add, sub, mul"),
        (lambda d: d["units"]["pool"].update(kinds=["max", "max"]), "lists an entry twice"),
        (lambda d: d["memory"].update(channel_alignment=12), "field 'memory.channel_alignment' = 12 is not a power of two"),
        (lambda d: d["memory"].update(sram_bytes=64), "memory.sram_bytes = 64 is smaller than one aligned row of 4096 bytes"),
        (lambda d: d["memory"].update(sram_bytes=(1 << 24) + 16), "must be in [1, 16777216]"),
        (lambda d: d["memory"].update(kernel_layout="HWIO"), "field 'memory.kernel_layout' = 'HWIO' is not one of OHWI"),
        (lambda d: d["units"]["conv"].update(max_kernel=16), "field 'units.conv.max_kernel' = 16 must be in [1, 15]"),
        (lambda d: d["units"]["pool"].update(max_stride=16), "field 'units.pool.max_stride' = 16 must be in [1, 15]"),
        (lambda d: d["data"].update(width=16), "the instruction set computes on int8 only"),
        (lambda d: d["data"].update(saturation_min=127), "saturation range [127, 127] is not an ordered range inside int8"),
        (lambda d: d["cost"].update(clock_mhz=0), "field 'cost.clock_mhz' = 0 must be a positive finite number"),
        (lambda d: d["cost"].update(vector_lanes=0), "field 'cost.vector_lanes' = 0 must be >= 1"),
        (lambda d: d.update(id=0), "field 'id' = 0 must be in [1, 4294967295]"),
        (lambda d: d["memory"].update(sram_byte=1), "unknown field 'memory.sram_byte'"),
        (lambda d: d.update(extra={"x": 1}), "unknown field 'extra'"),
    ],
)
def test_bad_descriptions_give_one_line(edit, message):
    with pytest.raises(XnpuError) as error:
        parse_target(_mutated(edit), "bad.toml")
    text = str(error.value)
    assert text.startswith("target bad.toml: ")
    assert message in text
    assert "\n" not in text


def test_unknown_target_and_bad_files(tmp_path: Path):
    with pytest.raises(XnpuError, match="unknown target 'nope' \\(known: xnpu_default, xnpu_lite\\)"):
        load_target("nope")
    with pytest.raises(XnpuError, match="missing.toml: cannot read: No such file"):
        load_target(tmp_path / "missing.toml")
    broken = tmp_path / "broken.toml"
    broken.write_text("name = [\n")
    with pytest.raises(XnpuError, match="invalid TOML") as error:
        load_target(broken)
    assert "\n" not in str(error.value)


def test_instructions_are_checked_against_the_target():
    from xnpu.target.encoding import make_instruction

    default, lite = load_target("xnpu_default"), load_target("xnpu_lite")
    clamp = make_instruction("CLAMP", h=1, w=1, c=16, min=0, max=127)
    default.check_instruction(clamp)
    with pytest.raises(XnpuError, match="CLAMP is not valid on target xnpu_lite: the target has no clamp unit"):
        lite.check_instruction(clamp)
    mul = make_instruction("ELTWISE", op=2, h=2, w=2, c=16, out_multiplier=16384, out_shift=20)
    default.check_instruction(mul)
    with pytest.raises(XnpuError, match="element-wise mul is not supported \\(supported: add, sub\\)"):
        lite.check_instruction(mul)
    with pytest.raises(XnpuError, match="mul takes no input rescales"):
        default.check_instruction(make_instruction("ELTWISE", op=2, a_multiplier=16384, h=1, w=1, c=1))
    conv = make_instruction("CONV", in_h=8, in_w=8, in_c=16, out_c=16, kernel_h=9, kernel_w=9,
                            stride_h=1, stride_w=1, dilation_h=1, dilation_w=1)
    default.check_instruction(conv)
    with pytest.raises(XnpuError, match="kernel 9x9 is outside \\[1, 7\\]"):
        lite.check_instruction(conv)
    with pytest.raises(XnpuError, match="stride 0x1 is outside"):
        default.check_instruction(make_instruction("CONV", in_h=1, in_w=1, in_c=1, out_c=1, kernel_h=1, kernel_w=1,
                                                   stride_h=0, stride_w=1, dilation_h=1, dilation_w=1))
    with pytest.raises(XnpuError, match="out_addr 262144 is outside the 262144-byte SRAM"):
        lite.check_instruction(make_instruction("TABLE", out_addr=262144, h=1, w=1, c=1))
    with pytest.raises(XnpuError, match="kernel layouts are LOAD-only"):
        default.check_instruction(make_instruction("STORE", layout=3, d0=1, d1=1, d2=1, d3=1))
    gap = make_instruction("POOL", kind=2, in_h=64, in_w=64, c=8, out_h=1, out_w=1, out_multiplier=16384, out_shift=20)
    lite.check_instruction(gap)  # global pooling has no window limits
