"""The on-disk cache of parsed pattern files (pdl/cache.py): a cached file gives the
same patterns and the same lowering as a fresh parse; an entry that is corrupt, truncated or
for other text is ignored and rewritten; only checked parses are kept; no entry is written
beside the sources where bytecode is not written (-B), only in the user's cache; a directory that cannot be written falls back to the user's
cache directory, then to none. Entries are data: a planted pickle never runs, wherever it is
put and whatever its header says, and an entry another user could have written is not read."""

from __future__ import annotations

import json
import os
import pickle
import sys
from pathlib import Path

import pytest

import xnpu
import xnpu.pdl.patterns as patterns_module
from xnpu.core.errors import XnpuError
from xnpu.ir.io import print_ir
from xnpu.pdl import cache as pdl_cache
from xnpu.pdl.patterns import parse_pattern_file

from models import model_and_data

ROOT = Path(__file__).resolve().parents[2]
SHIPPED_PATTERN_FILES = sorted([*ROOT.glob("lowering/**/*.mlir"), *ROOT.glob("transforms/**/*.mlir")])

PATTERN = """
// drops a clamp that clamps to {max}
pdl.pattern @t_cached_{max} : benefit(2) {{
  %t = pdl.type
  %x = pdl.operand : %t
  %clamp = pdl.operation "fixed.clamp"(%x : !pdl.value) {{"max" = %hi}} -> (%t : !pdl.type)
  %hi = pdl.attribute = {max} : i64
  pdl.rewrite %clamp {{
    pdl.replace %clamp with (%x : !pdl.value)
  }}
}}
"""


class Runs:
    """Runs of xnpu in one test: each `next()` forgets the parses of the run before, as a new
    process would; `from_entries()` is a run in which parsing a pattern file fails the test."""

    def __init__(self, monkeypatch):
        self.monkeypatch = monkeypatch
        self.next()

    def next(self) -> None:
        self.monkeypatch.setattr(patterns_module, "_PARSED", {})
        self.monkeypatch.setattr(patterns_module, "_SCANNED", {})
        self.monkeypatch.setattr(patterns_module, "parse_pattern_file", parse_pattern_file)

    def from_entries(self) -> None:
        def parse(path, text=None):
            raise AssertionError(f"{path} was parsed, not read from its cache entry")

        self.next()
        self.monkeypatch.setattr(patterns_module, "parse_pattern_file", parse)


def isolate(monkeypatch, pycache_prefix: Path, user_cache: Path) -> None:
    """Entries written below these two places only (never in the source tree's __pycache__)."""
    monkeypatch.setattr(sys, "pycache_prefix", str(pycache_prefix))
    monkeypatch.setattr(sys, "dont_write_bytecode", False)
    monkeypatch.setenv("XDG_CACHE_HOME", str(user_cache))


@pytest.fixture
def runs(tmp_path, monkeypatch):
    isolate(monkeypatch, tmp_path / "prefix", tmp_path / "user")
    return Runs(monkeypatch)


def pattern_file(tmp_path: Path, max: int, name: str = "p.mlir") -> Path:
    path = tmp_path / name
    path.write_text(PATTERN.format(max=max))
    return path


def described(patterns):
    return [(p.name, p.benefit, p.root_name, p.summary, p.source, str(p.op)) for p in patterns]


def entry(path: Path) -> Path:
    return pdl_cache.cache_paths(path)[0]


def no_entry(path: Path) -> bool:
    return not any(place.exists() for place in pdl_cache.cache_paths(path))


def test_cache_entries_live_where_bytecode_does(tmp_path, monkeypatch):
    monkeypatch.setattr(sys, "pycache_prefix", None)
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "user"))
    path = tmp_path.resolve() / "p.mlir"
    name = "p.mlir.patterns.json"
    pycache, user = pdl_cache.cache_paths(path)
    assert pycache == path.parent / "__pycache__" / name
    assert user.parent == tmp_path / "user" / "xnpu" / "patterns" and user.name.endswith(f"-{name}")
    monkeypatch.setenv("XDG_CACHE_HOME", "relative/dir")  # ignored, as the XDG spec says
    assert pdl_cache.cache_paths(path)[1].parent == Path.home() / ".cache" / "xnpu" / "patterns"


@pytest.mark.parametrize("path", SHIPPED_PATTERN_FILES, ids=lambda p: f"{p.parent.name}/{p.name}")
def test_a_cached_pattern_file_gives_the_patterns_of_its_parse(path, runs):
    parsed = patterns_module._parsed(path)
    assert entry(path).is_file()
    runs.from_entries()
    cached = patterns_module._parsed(path)
    assert described(cached) == described(parsed) == described(parse_pattern_file(path))
    for pattern in cached:
        pattern.op.verify()


@pytest.mark.parametrize("target", ["xnpu_default", "xnpu_lite"])
def test_a_lowering_with_cached_patterns_equals_one_with_parsed_patterns(target, runs):
    """The zoo model down to the binary, once with every pattern file parsed (writing the
    entries), once with every one read from its entry: the same isa program, the same bytes."""
    model, calibration, _ = model_and_data("zoo")

    def compiled():
        isa = xnpu.compile(model, calibration, target=target, stop_at="isa", progress=False)
        return print_ir(isa), xnpu.compile(model, calibration, target=target, progress=False).to_bytes()

    parsed = compiled()
    entries = sorted(Path(sys.pycache_prefix).rglob("*.patterns.json"))
    assert len(entries) >= 8, entries  # nn_to_fixed, legalize, fixed_to_npu and fuse_activations files
    runs.from_entries()
    assert compiled() == parsed


def test_a_corrupt_or_truncated_entry_is_ignored_and_rewritten(tmp_path, runs):
    path = pattern_file(tmp_path, 4)
    expected = described(parse_pattern_file(path))
    patterns_module._parsed(path)
    good = entry(path).read_bytes()
    header_length = good.index(b"\n") + 1
    for damaged in (b"\x00garbage" * 50, good[: header_length + (len(good) - header_length) // 2],
                    good[:header_length] + b"not json", good[:header_length], good.replace(b'"t_cached_4"', b'"t_cached_5"'),
                    with_header(path, json.dumps([1, 2]).encode()),  # JSON, but not of patterns
                    with_header(path, json.dumps({"attributes": [], "patterns": [["p", 1, None, "", ["pdl.pattern"]]]}).encode()),
                    with_header(path, json.dumps({"attributes": [], "patterns": [["p", 1, None, "", ["os.system", [], [], {}, {}, []]]]}).encode())):
        entry(path).write_bytes(damaged)
        runs.next()
        assert described(patterns_module._parsed(path)) == expected
        assert entry(path).read_bytes() == good  # rewritten
    runs.from_entries()
    assert described(patterns_module._parsed(path)) == expected


def test_a_file_that_fails_its_checks_has_no_entry(tmp_path, runs):
    """Only the result of a parse that passed xnpu's checks is kept: the error comes every run."""
    path = tmp_path / "results.mlir"
    path.write_text(PATTERN.format(max=4).replace("  pdl.rewrite", "  %rs = pdl.results of %clamp\n  pdl.rewrite"))
    for _ in range(2):
        runs.next()
        with pytest.raises(XnpuError, match=r"pdl.results is not supported"):
            patterns_module._parsed(path)
        assert no_entry(path)


def test_a_changed_file_is_parsed_again(tmp_path, runs):
    path = pattern_file(tmp_path, 4)
    [first] = patterns_module._parsed(path)
    old_entry = entry(path).read_bytes()
    pattern_file(tmp_path, 5)  # the same size: the text, not the stat, tells
    runs.next()
    [second] = patterns_module._parsed(path)
    assert (first.name, second.name) == ("t_cached_4", "t_cached_5")
    assert "5 : i64" in str(second.parsed) and entry(path).read_bytes() != old_entry
    runs.from_entries()
    assert patterns_module._parsed(path)[0].name == "t_cached_5"


def test_an_entry_moves_with_the_name_of_its_file(tmp_path, runs):
    """Patterns read from an entry name the file as it is loaded now (errors point there)."""
    path = pattern_file(tmp_path, 4)
    patterns_module._parsed(path)
    runs.from_entries()
    relative = Path(*([".."] * len(Path.cwd().parts))) / path.relative_to("/")
    assert [p.source for p in patterns_module._parsed(relative)] == [relative]


def test_without_bytecode_entries_go_to_the_user_cache_only(tmp_path, runs, monkeypatch):
    path = pattern_file(tmp_path, 4)
    pycache, user = pdl_cache.cache_paths(path)
    monkeypatch.setattr(sys, "dont_write_bytecode", True)
    patterns_module._parsed(path)
    assert not pycache.exists() and user.is_file()
    runs.from_entries()
    assert patterns_module._parsed(path)[0].name == "t_cached_4"


def test_an_unwritable_cache_falls_back_to_the_user_cache_then_to_none(tmp_path, runs, monkeypatch):
    path = pattern_file(tmp_path, 4)
    pycache, user = pdl_cache.cache_paths(path)
    pycache.parent.parent.mkdir(parents=True)
    pycache.parent.write_text("a file where the __pycache__ directory would be")
    patterns_module._parsed(path)
    assert user.is_file()
    runs.from_entries()
    assert patterns_module._parsed(path)[0].name == "t_cached_4"

    monkeypatch.undo()  # parsing allowed again
    isolate(monkeypatch, pycache.parent / "below_a_file", pycache.parent / "also_below_a_file")
    other = pattern_file(tmp_path, 6, "q.mlir")
    Runs(monkeypatch)
    assert patterns_module._parsed(other)[0].name == "t_cached_6"
    assert no_entry(other)


def test_a_wide_pattern_is_kept_too(tmp_path, runs):
    """A pattern of a few hundred operands (pickle's recursion along the op list refused it)."""
    operands = 400
    values = "\n".join(f"  %v{i} = pdl.operand" for i in range(operands))
    path = tmp_path / "wide.mlir"
    path.write_text(f"""pdl.pattern @t_wide : benefit(1) {{
{values}
  %op = pdl.operation "fixed.concat"({", ".join(f"%v{i}" for i in range(operands))} : {", ".join(["!pdl.value"] * operands)})
  pdl.rewrite %op {{
    pdl.erase %op
  }}
}}
""")
    expected = described(parse_pattern_file(path))
    assert described(patterns_module._parsed(path)) == expected
    runs.from_entries()
    assert described(patterns_module._parsed(path)) == expected


def with_header(path: Path, payload: bytes) -> bytes:
    """`payload` as an entry for the pattern file at `path`: a header that holds for its text."""
    return pdl_cache._header(path.read_text(), payload) + payload


class Planted:
    """A pickle that creates `marker` when it is unpickled."""

    def __init__(self, marker: Path):
        self.marker = marker

    def __reduce__(self):
        return (os.system, (f"touch {self.marker}",))


def test_an_entry_holding_a_pickle_is_never_unpickled(tmp_path, runs):
    path = pattern_file(tmp_path, 4)
    expected = described(parse_pattern_file(path))
    marker = tmp_path / "pwned"
    payload = pickle.dumps(Planted(marker))
    for place in pdl_cache.cache_paths(path):
        place.parent.mkdir(parents=True, exist_ok=True)
        place.write_bytes(with_header(path, payload))
        place.with_name(place.name.replace(pdl_cache.NAME_SUFFIX, f"{sys.implementation.cache_tag}.pickle")).write_bytes(
            b"xnpu-patterns 1 header\n" + payload)  # where the pickled format kept its entries
    runs.next()
    assert described(patterns_module._parsed(path)) == expected
    assert not marker.exists()


def test_an_entry_others_can_write_is_not_read(tmp_path, runs):
    """Group- or world-writable entries (and, where this runs as root, entries of another
    user) are ignored: the file is parsed, and the entry written again as its owner's."""
    path = pattern_file(tmp_path, 4)
    patterns_module._parsed(path)
    place = entry(path)
    place.chmod(0o664)
    runs.from_entries()
    with pytest.raises(AssertionError, match="was parsed"):
        patterns_module._parsed(path)
    runs.next()
    patterns_module._parsed(path)
    assert place.stat().st_mode & 0o777 == 0o644
    runs.from_entries()
    patterns_module._parsed(path)
    if os.getuid() == 0:
        os.chown(place, 12345, -1)
        runs.from_entries()
        with pytest.raises(AssertionError, match="was parsed"):
            patterns_module._parsed(path)


def test_entries_name_the_installed_xdsl_version():
    """A cache entry holds for the xDSL it was built with: the version read from xDSL's dist-info
    folder name is the one importlib.metadata reads from that folder."""
    from importlib.metadata import version

    assert pdl_cache._xdsl_version() == version("xdsl")
    assert f"xdsl {version('xdsl')} " in pdl_cache._versions() + " "
