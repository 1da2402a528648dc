"""xnpu's PDL pattern driver and the `legalize` pass.

Legalizations are declarative: each is a `pdl.pattern` in `lowering/patterns/*.mlir` (or a
directory given to the pass), plus, where a parameter must be computed, a Python function
registered by name with `@native_constraint` / `@native_rewrite` (lowering/legalize_natives.py).
docs/extending.md walks through adding one.

Why not xDSL's `apply-pdl`: in xDSL 0.74 it registers no native constraints, neither PDL
interpreter implements `pdl.apply_native_rewrite`, `benefit` is ignored and two patterns on
one op crash `apply-pdl-interp`. This driver interprets the subset xnpu's patterns need:

- match (reusing xDSL's `PDLMatcher`): `pdl.operation` with a name, named attributes,
  operands and result types; `pdl.operand`, `pdl.result`, `pdl.type` and `pdl.attribute`
  (bound or constant); then every `pdl.apply_native_constraint` of the pattern, in order,
  against the constraint registry. Operand counts and result counts must match exactly
  (a conv without a bias has two operands); `pdl.operands`/`pdl.results` ranges are not
  supported (rejected when the file is loaded).
- rewrite: `pdl.operation` creates an op (named attributes go to properties when the op
  defines them) before the root, with the root's location; `pdl.result`, constant
  `pdl.type` / `pdl.attribute`, `pdl.apply_native_rewrite` (returns attributes, types or
  values), `pdl.replace` (with an op or values) and `pdl.erase`.
- patterns are tried per op in order of decreasing `benefit` (then file order); the first
  that matches rewrites, and the walk repeats until nothing changes.

Native functions receive a `LegalizeContext` first (the target, the pass options, the root
op, the rewriter), then the matched PDL values in argument order.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path

from xdsl.context import Context
from xdsl.dialects import pdl
from xdsl.dialects.builtin import Builtin, ModuleOp
from xdsl.interpreters.pdl import PDLMatcher
from xdsl.ir import Attribute, Operation, SSAValue
from xdsl.irdl import IRDLOperation
from xdsl.passes import ModulePass
from xdsl.pattern_rewriter import PatternRewriter, PatternRewriteWalker, RewritePattern
from xdsl.rewriter import InsertPoint
from xdsl.utils.exceptions import InterpretationError, ParseError, VerifyException

from xnpu.context import make_context
from xnpu.errors import XnpuError
from xnpu.target.description import TargetDescription, load_target

PATTERN_DIR = Path(__file__).resolve().parent / "patterns"
CLAMP_METHODS = ("auto", "saturate", "bias")

# --------------------------------------------------------------------------------------
# Native function registries
# --------------------------------------------------------------------------------------

NATIVE_CONSTRAINTS: dict[str, Callable[..., bool]] = {}
NATIVE_REWRITES: dict[str, Callable[..., object]] = {}


def _register(table: dict[str, Callable], name: str | None):
    def decorate(function: Callable) -> Callable:
        key = name or function.__name__
        table[key] = function
        return function
    return decorate


def native_constraint(name: str | None = None):
    """Register `f(ctx, *values) -> bool` for `pdl.apply_native_constraint "name"`."""
    return _register(NATIVE_CONSTRAINTS, name)


def native_rewrite(name: str | None = None):
    """Register `f(ctx, *values) -> result | tuple of results` for `pdl.apply_native_rewrite "name"`."""
    return _register(NATIVE_REWRITES, name)


def _load_builtin_natives() -> None:
    import xnpu.lowering.legalize_natives  # noqa: F401  (registers by decoration)


def load_natives(path: str | Path) -> None:
    """Import a Python file whose `@native_constraint` / `@native_rewrite` functions register themselves."""
    import importlib.util

    path = Path(path)
    if not path.is_file():
        raise XnpuError(f"{path}: no such native functions file")
    spec = importlib.util.spec_from_file_location(f"xnpu_natives_{path.stem}", path)
    assert spec is not None and spec.loader is not None
    spec.loader.exec_module(importlib.util.module_from_spec(spec))


@dataclass
class LegalizeContext:
    target: TargetDescription
    options: dict[str, str]
    root: Operation | None = None
    rewriter: PatternRewriter | None = None


# --------------------------------------------------------------------------------------
# Pattern files
# --------------------------------------------------------------------------------------


@dataclass
class Pattern:
    name: str
    benefit: int
    root_name: str | None  # None: any op
    summary: str  # the comment above the pattern
    op: pdl.PatternOp
    source: Path
    order: int = 0

    @property
    def rewrite(self) -> pdl.RewriteOp:
        last = self.op.body.block.last_op
        assert isinstance(last, pdl.RewriteOp)
        return last

    @property
    def legalizes(self) -> str | None:
        """The op the pattern legalizes: the one its `not_native` constraint asks about, else the root."""
        for constraint in self.op.body.block.ops:
            if isinstance(constraint, pdl.ApplyNativeConstraintOp) and constraint.constraint_name.data == "not_native":
                owner = constraint.args[0].owner
                if isinstance(owner, pdl.OperationOp) and owner.opName is not None:
                    return owner.opName.data
        return self.root_name

    @property
    def root(self) -> pdl.OperationOp:
        root = self.rewrite.root
        assert root is not None and isinstance(root.owner, pdl.OperationOp)
        return root.owner


def pdl_context() -> Context:
    ctx = Context()
    ctx.load_dialect(Builtin)
    ctx.load_dialect(pdl.PDL)
    return ctx


UNSUPPORTED = (pdl.OperandsOp, pdl.ResultsOp, pdl.TypesOp, pdl.RangeOp)
_COMMENT_BEFORE = re.compile(r"((?:^[ \t]*//[^\n]*\n)+)[ \t]*pdl\.pattern\s+@([\w$.]+)", re.MULTILINE)


def parse_pattern_file(path: Path) -> list[Pattern]:
    from xdsl.parser import Parser

    text = path.read_text()
    try:
        module = Parser(pdl_context(), text, str(path)).parse_module()
        module.verify()
    except (ParseError, VerifyException) as error:
        raise XnpuError(f"{path}: not a valid PDL pattern file: {str(error).strip().splitlines()[-1]}") from None
    summaries = {m.group(2): " ".join(line.strip().lstrip("/").strip() for line in m.group(1).splitlines())
                 for m in _COMMENT_BEFORE.finditer(text)}
    patterns = []
    for op in module.ops:
        if not isinstance(op, pdl.PatternOp):
            raise XnpuError(f"{path}: only pdl.pattern ops belong in a pattern file, found {op.name}")
        name = op.sym_name.data if op.sym_name else f"{path.stem}_{len(patterns)}"
        for inner in op.walk():
            if isinstance(inner, UNSUPPORTED):
                raise XnpuError(f"{path}: pattern @{name}: {inner.name} is not supported by xnpu's PDL driver")
        rewrite = op.body.block.last_op
        if not isinstance(rewrite, pdl.RewriteOp) or rewrite.root is None or rewrite.name_ is not None:
            raise XnpuError(f"{path}: pattern @{name} needs an inline `pdl.rewrite %root {{...}}`")
        root = rewrite.root.owner
        assert isinstance(root, pdl.OperationOp)
        patterns.append(Pattern(name, op.benefit.value.data, root.opName.data if root.opName else None,
                                summaries.get(name, ""), op, path))
    return patterns


def pattern_files(extra: Iterable[str | Path] = ()) -> list[Path]:
    files = sorted(PATTERN_DIR.glob("*.mlir"))
    for entry in extra:
        entry = Path(entry)
        if entry.is_dir():
            files.extend(sorted(entry.glob("*.mlir")))
        elif entry.is_file():
            files.append(entry)
        else:
            raise XnpuError(f"{entry}: no such pattern file or directory")
    return files


def load_patterns(extra: Iterable[str | Path] = ()) -> list[Pattern]:
    """Every shipped pattern and those in `extra` (files or directories), by decreasing benefit."""
    patterns = [p for path in pattern_files(extra) for p in parse_pattern_file(path)]
    names: dict[str, Path] = {}
    for order, pattern in enumerate(patterns):
        if pattern.name in names:
            raise XnpuError(f"{pattern.source}: pattern @{pattern.name} is already defined in {names[pattern.name]}")
        names[pattern.name] = pattern.source
        pattern.order = order
    return sorted(patterns, key=lambda p: (-p.benefit, p.order))


# --------------------------------------------------------------------------------------
# Matching and rewriting
# --------------------------------------------------------------------------------------


def _fail(pattern: Pattern, message: str) -> XnpuError:
    return XnpuError(f"pattern @{pattern.name} ({pattern.source.name}): {message}")


class _Values:
    """PDL SSA values -> matched or created IR objects."""

    def __init__(self, matcher: PDLMatcher, pattern: Pattern):
        self.matcher = matcher
        self.pattern = pattern

    def __getitem__(self, value: SSAValue):
        try:
            return self.matcher.get_constant_or_matched_value(value)
        except InterpretationError as error:
            raise _fail(self.pattern, f"{error} for {value.owner.name}") from None

    def __setitem__(self, value: SSAValue, obj) -> None:
        self.matcher.matching_context[value] = obj


def match(pattern: Pattern, op: Operation, ctx: LegalizeContext) -> PDLMatcher | None:
    matcher = PDLMatcher()
    if not matcher.match_operation(pattern.rewrite.root, pattern.root, op):  # type: ignore[arg-type]
        return None
    values = _Values(matcher, pattern)
    for constraint in pattern.op.body.block.ops:
        if not isinstance(constraint, pdl.ApplyNativeConstraintOp):
            continue
        name = constraint.constraint_name.data
        function = NATIVE_CONSTRAINTS.get(name)
        if function is None:
            raise _fail(pattern, f"native constraint '{name}' is not registered")
        if not function(ctx, *(values[v] for v in constraint.args)):
            return None
    return matcher


def _create(op: pdl.OperationOp, values: _Values, ir_ctx: Context, pattern: Pattern) -> Operation:
    name = op.opName.data if op.opName else None
    op_type = ir_ctx.get_optional_op(name) if name else None
    if op_type is None:
        raise _fail(pattern, f"cannot create unknown op '{name}'")
    names = [n.data for n in op.attributeValueNames.data]
    property_names = op_type.get_irdl_definition().properties.keys() if issubclass(op_type, IRDLOperation) else ()
    attributes: dict[str, Attribute] = {}
    properties: dict[str, Attribute] = {}
    for key, value in zip(names, op.attribute_values):
        (properties if key in property_names else attributes)[key] = values[value]
    return op_type.create(operands=[values[v] for v in op.operand_values],
                          result_types=[values[v] for v in op.type_values],
                          attributes=attributes, properties=properties)


def rewrite(pattern: Pattern, root: Operation, matcher: PDLMatcher, ctx: LegalizeContext, ir_ctx: Context) -> None:
    rewriter = ctx.rewriter
    assert rewriter is not None
    values = _Values(matcher, pattern)
    created: list[Operation] = []
    for step in pattern.rewrite.body.block.ops:
        if isinstance(step, pdl.OperationOp):
            new = _create(step, values, ir_ctx, pattern)
            new.location = root.location
            rewriter.insert(new, InsertPoint.before(root))
            created.append(new)
            values[step.op] = new
        elif isinstance(step, pdl.ResultOp):
            values[step.val] = values[step.parent_].results[step.index.value.data]
        elif isinstance(step, (pdl.TypeOp, pdl.AttributeOp)):
            pass  # constants: read where used
        elif isinstance(step, pdl.ApplyNativeRewriteOp):
            name = step.constraint_name.data
            function = NATIVE_REWRITES.get(name)
            if function is None:
                raise _fail(pattern, f"native rewrite '{name}' is not registered")
            results = function(ctx, *(values[v] for v in step.args))
            results = () if results is None else results if isinstance(results, tuple) else (results,)
            if len(results) != len(step.res):
                raise _fail(pattern, f"native rewrite '{name}' returned {len(results)} values, the pattern expects {len(step.res)}")
            for pdl_value, obj in zip(step.res, results):
                values[pdl_value] = obj
        elif isinstance(step, pdl.ReplaceOp):
            old = values[step.op_value]
            if step.repl_operation is not None:
                new_results = list(values[step.repl_operation].results)
            else:
                new_results = [values[v] for v in step.repl_values]
            rewriter.replace(old, [], new_results)
        elif isinstance(step, pdl.EraseOp):
            rewriter.erase(values[step.op_value])
        else:
            raise _fail(pattern, f"{step.name} is not supported in a rewrite by xnpu's PDL driver")
    for new in created:
        try:
            new.verify()
        except VerifyException as error:
            raise _fail(pattern, f"created an invalid {new.name}: {error}") from None


class PatternSet(RewritePattern):
    """All patterns, indexed by root op name, each op trying its candidates by benefit."""

    def __init__(self, patterns: Sequence[Pattern], ctx: LegalizeContext):
        self.patterns = list(patterns)
        self.ctx = ctx
        self.ir_ctx = make_context()
        self.fired: list[str] = []

    def candidates(self, op: Operation) -> list[Pattern]:
        return [p for p in self.patterns if p.root_name in (None, op.name)]

    def match_and_rewrite(self, op: Operation, rewriter: PatternRewriter) -> None:
        for pattern in self.candidates(op):
            self.ctx.root, self.ctx.rewriter = op, rewriter
            matcher = match(pattern, op, self.ctx)
            if matcher is None:
                continue
            rewrite(pattern, op, matcher, self.ctx, self.ir_ctx)
            self.fired.append(pattern.name)
            return


def apply_patterns(module: ModuleOp, patterns: Sequence[Pattern], ctx: LegalizeContext) -> list[str]:
    """Rewrite `module` to a fixed point; returns the names of the patterns that fired, in order."""
    _load_builtin_natives()
    pattern_set = PatternSet(patterns, ctx)
    PatternRewriteWalker(pattern_set, apply_recursively=True).rewrite_module(module)
    return pattern_set.fired


# --------------------------------------------------------------------------------------
# The pass
# --------------------------------------------------------------------------------------


@dataclass(frozen=True)
class LegalizePass(ModulePass):
    """Rewrite fixed ops the target does not run natively into ones it does (PDL patterns, docs/extending.md)."""

    name = "legalize"

    target: str = "xnpu_default"
    clamp_method: str = "auto"  # auto | saturate (seed 001 method 1) | bias (method 2)
    patterns: str = ""  # extra pattern files or directories, comma-separated
    natives: str = ""  # Python files registering extra native functions, comma-separated

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        if self.clamp_method not in CLAMP_METHODS:
            raise XnpuError(f"legalize: clamp-method must be one of {', '.join(CLAMP_METHODS)}, got '{self.clamp_method}'")
        for path in (p for p in self.natives.split(",") if p):
            load_natives(path)
        extra = [p for p in self.patterns.split(",") if p]
        context = LegalizeContext(load_target(self.target), {"clamp_method": self.clamp_method})
        apply_patterns(op, load_patterns(extra), context)
