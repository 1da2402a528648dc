"""Declarative patterns of xnpu: the native-function registry, the pattern model and the
pattern files (`pdl.pattern`s next to the pass that applies them).

Python functions are registered by name where a pattern must compute a parameter
(`@native_constraint`, `@native_rewrite`); names are global, one registry for every pass.
A pattern file is parsed once per version of the file, and the parse is kept on disk for the
next run (pdl/cache.py). pdl/driver.py matches and applies the patterns;
docs/extending.md walks through adding one.
"""

from __future__ import annotations

import importlib.util
import re
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field, replace
from functools import cache, cached_property
from pathlib import Path

from xdsl.context import Context
from xdsl.dialects import pdl
from xdsl.dialects.builtin import Builtin
from xdsl.ir import Operation
from xdsl.pattern_rewriter import PatternRewriter
from xdsl.utils.exceptions import ParseError, VerifyException

from xnpu.core.errors import XnpuError
from xnpu.pdl import cache as pdl_cache
from xnpu.target.description import TargetDescription

# --------------------------------------------------------------------------------------
# Native function registries
# --------------------------------------------------------------------------------------

NATIVE_CONSTRAINTS: dict[str, Callable[..., bool]] = {}
NATIVE_REWRITES: dict[str, Callable[..., object]] = {}


def _register(table: dict[str, Callable], name: str | None):
    """Names are global (every pass's patterns call into one registry): a second function
    under a taken name is a mistake, unless it is the same function loaded again."""

    def decorate(function: Callable) -> Callable:
        key = name or function.__name__
        known = table.get(key)
        if known is not None and (known.__module__, known.__qualname__) != (function.__module__, function.__qualname__):
            raise XnpuError(f"native function '{key}' is already registered by {known.__module__}")
        table[key] = function
        return function
    return decorate


def native_constraint(name: str | None = None):
    """Register `f(ctx, *values) -> bool` for `pdl.apply_native_constraint "name"`."""
    return _register(NATIVE_CONSTRAINTS, name)


def native_rewrite(name: str | None = None):
    """Register `f(ctx, *values) -> result | tuple of results` for `pdl.apply_native_rewrite "name"`."""
    return _register(NATIVE_REWRITES, name)


def load_natives(path: str | Path) -> None:
    """Import a Python file whose `@native_constraint` / `@native_rewrite` functions register themselves."""
    path = Path(path)
    if not path.is_file():
        raise XnpuError(f"{path}: no such native functions file")
    spec = importlib.util.spec_from_file_location(f"xnpu_natives_{path.stem}", path)
    assert spec is not None and spec.loader is not None
    spec.loader.exec_module(importlib.util.module_from_spec(spec))


@dataclass
class PatternContext:
    """What native functions receive first: the target (None above the target-specific
    levels), the pass options, and, while a pattern runs, its root op and the rewriter.
    No pattern matches an op in `excluded` (ops a pass decided for elsewhere, e.g. the host)."""

    target: TargetDescription | None = None
    options: dict[str, str] = field(default_factory=dict)
    root: Operation | None = None
    rewriter: PatternRewriter | None = None
    excluded: set[Operation] = field(default_factory=set)


# --------------------------------------------------------------------------------------
# Pattern files
# --------------------------------------------------------------------------------------


@dataclass
class Pattern:
    """A pattern of a file. Patterns of xnpu's own files are known from a scan of their text
    (name, benefit, root op, summary) and parsed when one is first tried (`op`): a compile
    meets the roots of a few files only, and parsing all of them costs more than most passes."""

    name: str
    benefit: int
    root_name: str | None  # None: any op
    summary: str  # the comment above the pattern
    source: Path
    order: int = 0
    parsed: pdl.PatternOp | None = None
    stored: Callable[[], Operation | None] | None = field(default=None, repr=False, compare=False)  # a cache entry's op

    @property
    def op(self) -> pdl.PatternOp:
        if self.parsed is None:
            self.parsed = _parsed_op(self.source, self.name)
        return self.parsed

    @cached_property
    def rewrite(self) -> pdl.RewriteOp:
        last = self.op.body.block.last_op
        assert isinstance(last, pdl.RewriteOp)
        return last

    @cached_property
    def root(self) -> pdl.OperationOp:
        root = self.rewrite.root
        assert root is not None and isinstance(root.owner, pdl.OperationOp)
        return root.owner

    @cached_property
    def constraints(self) -> list[pdl.ApplyNativeConstraintOp]:
        return [op for op in self.op.body.block.ops if isinstance(op, pdl.ApplyNativeConstraintOp)]

    @property
    def legalizes(self) -> str | None:
        """The op the pattern replaces: the one its `not_native` constraint asks about, else the root."""
        for constraint in self.constraints:
            if constraint.constraint_name.data == "not_native":
                owner = constraint.args[0].owner
                if isinstance(owner, pdl.OperationOp) and owner.opName is not None:
                    return owner.opName.data
        return self.root_name


def pdl_context() -> Context:
    ctx = Context()
    ctx.load_dialect(Builtin)
    ctx.load_dialect(pdl.PDL)
    return ctx


@cache
def _entry_context() -> Context:
    """The context cache entries are built in: one per process (making one costs more than reading an entry)."""
    return pdl_context()


UNSUPPORTED = (pdl.ResultsOp, pdl.RangeOp)
_COMMENT_BEFORE = re.compile(r"((?:^[ \t]*//[^\n]*\n)+)[ \t]*pdl\.pattern\s+@([\w$.]+)", re.MULTILINE)


def _summaries(text: str) -> dict[str, str]:
    """Each pattern's summary: the comment lines right above it, joined."""
    return {m.group(2): " ".join(line.strip().lstrip("/").strip() for line in m.group(1).splitlines())
            for m in _COMMENT_BEFORE.finditer(text)}


def _check_ranges(op: pdl.OperationOp, path: Path, name: str) -> None:
    for values, kind in ((op.operand_values, pdl.OperandsOp), (op.type_values, pdl.TypesOp)):
        if sum(isinstance(v.owner, kind) for v in values) > 1:
            raise XnpuError(f"{path}: pattern @{name}: one {kind.name} range per operation at most")


def parse_pattern_file(path: Path, text: str | None = None) -> list[Pattern]:
    """The patterns of the file at `path` (its `text`, when already read), checked for what
    xnpu's driver supports."""
    from xdsl.parser import Parser

    text = path.read_text() if text is None else text
    try:
        module = Parser(pdl_context(), text, str(path)).parse_module()
        module.verify()
    except (ParseError, VerifyException) as error:
        raise XnpuError(f"{path}: not a valid PDL pattern file: {str(error).strip().splitlines()[-1]}") from None
    summaries = _summaries(text)
    patterns = []
    for op in module.ops:
        if not isinstance(op, pdl.PatternOp):
            raise XnpuError(f"{path}: only pdl.pattern ops belong in a pattern file, found {op.name}")
        name = op.sym_name.data if op.sym_name else f"{path.stem}_{len(patterns)}"
        for inner in op.walk():
            if isinstance(inner, UNSUPPORTED):
                raise XnpuError(f"{path}: pattern @{name}: {inner.name} is not supported by xnpu's PDL driver")
            if isinstance(inner, pdl.OperationOp):
                _check_ranges(inner, path, name)
        rewrite = op.body.block.last_op
        if not isinstance(rewrite, pdl.RewriteOp) or rewrite.root is None or rewrite.name_ is not None:
            raise XnpuError(f"{path}: pattern @{name} needs an inline `pdl.rewrite %root {{...}}`")
        root = rewrite.root.owner
        assert isinstance(root, pdl.OperationOp)
        patterns.append(Pattern(name, op.benefit.value.data, root.opName.data if root.opName else None,
                                summaries.get(name, ""), path, parsed=op))
    return patterns


def pattern_files(sources: Iterable[str | Path]) -> list[Path]:
    """The `.mlir` files of each source: a file, or every one in a directory (sorted)."""
    files: list[Path] = []
    for entry in sources:
        entry = Path(entry)
        if entry.is_dir():
            files.extend(sorted(entry.glob("*.mlir")))
        elif entry.is_file():
            files.append(entry)
        else:
            raise XnpuError(f"{entry}: no such pattern file or directory")
    return files


_PARSED: dict[tuple[Path, int, int], list[Pattern]] = {}
_SCANNED: dict[tuple[Path, int, int], list[Pattern]] = {}
SHIPPED_ROOT = Path(__file__).resolve().parents[1]  # xnpu's source tree: its pattern files are tested
_HEAD = re.compile(r"pdl\.pattern\s+@([\w$.]+)\s*:\s*benefit\s*\(\s*(\d+)\s*\)")
_REWRITE_ROOT = re.compile(r"pdl\.rewrite\s+(%[\w$.-]+)")


def _version(path: Path) -> tuple[Path, int, int]:
    stat = path.stat()
    return (path.resolve(), stat.st_mtime_ns, stat.st_size)


def _parsed(path: Path) -> list[Pattern]:
    """`parse_pattern_file`, once per version of the file: a pass loads its patterns each run.
    Across runs the parse comes from the file's cache entry, when one holds for its text."""
    key = _version(path)
    if key not in _PARSED:
        text = path.read_text()
        patterns = _cached(path, text)
        if patterns is None:
            patterns = parse_pattern_file(path, text)
            pdl_cache.store(path, text, [(p.name, p.benefit, p.root_name, p.summary, p.op) for p in patterns])
        _PARSED[key] = patterns
    return _PARSED[key]


def _cached(path: Path, text: str) -> list[Pattern] | None:
    """The patterns of the cache entry of `path` for `text`, named by `path` where they are now;
    each op is built from the entry when the pattern is first tried."""
    entries = pdl_cache.load(path, text, _entry_context())
    if entries is None:
        return None
    return [Pattern(name, benefit, root, summary, path, stored=op) for name, benefit, root, summary, op in entries]


def _parsed_op(path: Path, name: str) -> pdl.PatternOp:
    for pattern in _parsed(path):
        if pattern.name == name:
            if pattern.parsed is None and pattern.stored is not None:
                op = pattern.stored()
                pattern.parsed = op if isinstance(op, pdl.PatternOp) else None
            if pattern.parsed is None:  # a cache entry that does not build: the file is parsed after all
                _PARSED[_version(path)] = parse_pattern_file(path)
                return _parsed_op(path, name)
            return pattern.parsed
    raise XnpuError(f"{path}: pattern @{name} is not in the file any more")


def scan_pattern_file(path: Path) -> list[Pattern] | None:
    """The patterns of a file from its text alone (no op parsed), or None where the text does
    not say plainly (an unnamed pattern, a root that is not `%x = pdl.operation "name"`)."""
    text = path.read_text()
    heads = list(_HEAD.finditer(text))
    if len(heads) != text.count("pdl.pattern"):
        return None
    summaries = _summaries(text)
    patterns = []
    for index, head in enumerate(heads):
        body = text[head.end(): heads[index + 1].start() if index + 1 < len(heads) else len(text)]
        rewrite = _REWRITE_ROOT.search(body)
        root = rewrite and re.search(re.escape(rewrite.group(1)) + r"\s*=\s*pdl\.operation\s+\"([^\"]+)\"", body)
        if root is None:
            return None
        patterns.append(Pattern(head.group(1), int(head.group(2)), root.group(1), summaries.get(head.group(1), ""), path))
    return patterns


def _patterns_of(path: Path) -> list[Pattern]:
    """xnpu's own files are scanned (parsed pattern by pattern when tried); any other file is
    parsed at once, so a mistake in it is reported when it is loaded."""
    if not path.resolve().is_relative_to(SHIPPED_ROOT):
        return _parsed(path)
    key = _version(path)
    if key not in _SCANNED:
        _SCANNED[key] = scan_pattern_file(path) or _parsed(path)
    return _SCANNED[key]


def load_patterns(sources: Iterable[str | Path]) -> list[Pattern]:
    """Every pattern of `sources` (files or directories), by decreasing benefit, then file order."""
    patterns = [replace(p) for path in pattern_files(sources) for p in _patterns_of(path)]
    names: dict[str, Path] = {}
    for order, pattern in enumerate(patterns):
        if pattern.name in names:
            raise XnpuError(f"{pattern.source}: pattern @{pattern.name} is already defined in {names[pattern.name]}")
        names[pattern.name] = pattern.source
        pattern.order = order
    return sorted(patterns, key=lambda p: (-p.benefit, p.order))


def split_paths(option: str) -> list[str]:
    """A pass option listing paths, comma-separated."""
    return [p for p in option.split(",") if p]
