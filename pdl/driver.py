"""xnpu's PDL pattern driver: declarative rewrites in `pdl.pattern` files, applied by passes.

Every declarative lowering of xnpu is a file of `pdl.pattern`s next to the pass that applies
it (`lowering/nn_to_fixed/`, `lowering/legalize/`, `lowering/fixed_to_npu/`, ...), plus
Python functions registered by name where a parameter must be computed
(`@native_constraint`, `@native_rewrite`); pdl/patterns.py loads both, this module
matches and applies them. docs/extending.md walks through adding one.

Matching extends xDSL's `PDLMatcher` with what MLIR's PDL has and xnpu's patterns need:

- an operation whose operands (or result types) are not listed matches any number of them,
  as in MLIR; listed ones match exactly, except that one `pdl.operands` (`pdl.types`) range
  takes whatever the single values leave (a conv with or without a bias is one pattern);
- operands of an op with the `Commutative` trait are tried in both orders, so `mul(x, c)`
  and `mul(c, x)` are one pattern; the search backtracks over every choice until the
  native constraints accept one;
- `pdl.apply_native_constraint` runs the registered Python function on the matched values.

Rewriting runs the `pdl.rewrite` region op by op (`Rewrite`): `pdl.operation` creates an op,
`pdl.replace` / `pdl.erase` change the IR, always through the walk's `PatternRewriter`, so the
walk sees every change; `pdl.apply_native_rewrite` calls the registry, whose functions only
compute values: attributes, types, existing IR values, or a new op built from matched ones
and not yet in the IR, which the `pdl.replace` naming it inserts (with any new op it reads).
Every created op gets the root's location and name hint (the ONNX provenance, and the value
names `PatternRewriter.replace` would give) and is verified; a failure names the pattern.

Patterns are tried per op by decreasing `benefit`, then file order; the first that matches
rewrites, and the walk repeats until nothing changes (`apply_patterns`).
"""

from __future__ import annotations

import weakref
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from typing import Any

from xdsl.dialects import pdl
from xdsl.dialects.builtin import ModuleOp
from xdsl.ir import Attribute, Operation, OpResult, SSAValue
from xdsl.irdl import IRDLOperation
from xdsl.pattern_rewriter import PatternRewriter, PatternRewriteWalker, RewritePattern
from xdsl.traits import Commutative, ConstantLike
from xdsl.utils.exceptions import VerifyException

from xnpu.core.errors import XnpuError
from xnpu.ir.context import make_context
from xnpu.ir.locations import fused_location
from xnpu.pdl.patterns import NATIVE_CONSTRAINTS, NATIVE_REWRITES, Pattern, PatternContext

# --------------------------------------------------------------------------------------
# Matching
# --------------------------------------------------------------------------------------


def _fail(pattern: Pattern, message: str) -> XnpuError:
    return XnpuError(f"pattern @{pattern.name} ({pattern.source.name}): {message}")


def _is_range(value: SSAValue) -> bool:
    return isinstance(value.owner, (pdl.OperandsOp, pdl.TypesOp))


@dataclass(frozen=True)
class _Parts:
    """What the matcher reads of a `pdl.operation`, decoded once (xDSL decodes the operand
    segment sizes again on every access to its operands, attributes or types)."""

    name: str | None
    attributes: tuple[tuple[str, SSAValue], ...]
    operands: tuple[SSAValue, ...]
    types: tuple[SSAValue, ...]
    swappable: bool  # two single operands: tried in both orders on a Commutative op


_PARTS: weakref.WeakKeyDictionary[pdl.OperationOp, _Parts] = weakref.WeakKeyDictionary()


def _parts(pattern: pdl.OperationOp) -> _Parts:
    parts = _PARTS.get(pattern)
    if parts is None:
        operands = tuple(pattern.operand_values)
        parts = _PARTS[pattern] = _Parts(
            pattern.opName.data if pattern.opName is not None else None,
            tuple(zip((n.data for n in pattern.attributeValueNames.data), pattern.attribute_values)),
            operands, tuple(pattern.type_values), len(operands) == 2 and not any(map(_is_range, operands)))
    return parts


class PatternMatcher:
    """A backtracking search for the ways a pattern fits at an op: each `_match_*` generator
    yields once per way, leaving its bindings (PDL value -> op, value, attribute or type) in
    `matching_context` while suspended and restoring the context it found before it tries
    the next way or gives up."""

    def __init__(self) -> None:
        self.matching_context: dict[SSAValue, Any] = {}

    def match_operand(self, pattern_value: SSAValue, pattern: pdl.OperandOp, value: SSAValue) -> bool:
        if pattern_value in self.matching_context:
            return self.matching_context[pattern_value] == value
        if pattern.value_type is not None:
            type_op = pattern.value_type.owner
            assert isinstance(type_op, pdl.TypeOp)
            if not self.match_type(pattern.value_type, type_op, value.type):
                return False
        self.matching_context[pattern_value] = value
        return True

    def match_type(self, pattern_value: SSAValue, pattern: pdl.TypeOp, type_: Attribute) -> bool:
        if pattern_value in self.matching_context:
            return self.matching_context[pattern_value] == type_
        if pattern.constantType is not None and pattern.constantType != type_:
            return False
        self.matching_context[pattern_value] = type_
        return True

    def match_attribute(self, pattern_value: SSAValue, pattern: pdl.AttributeOp, attribute: Attribute) -> bool:
        if pattern_value in self.matching_context:
            return self.matching_context[pattern_value] == attribute
        if pattern.value is not None and pattern.value != attribute:
            return False
        self.matching_context[pattern_value] = attribute
        return True

    def constant_or_matched(self, value: SSAValue):
        """What a PDL value stands for: its match, or the constant a `pdl.attribute` or
        `pdl.type` gives."""
        if value in self.matching_context:
            return self.matching_context[value]
        owner = value.owner
        if isinstance(owner, pdl.AttributeOp) and owner.value is not None:
            return owner.value
        if isinstance(owner, pdl.TypeOp) and owner.constantType is not None:
            return owner.constantType
        if isinstance(owner, pdl.TypesOp) and owner.constantTypes is not None:
            return list(owner.constantTypes.data)
        raise LookupError("expected a constant or a matched value")

    def _restore(self, saved: dict) -> None:
        self.matching_context.clear()
        self.matching_context.update(saved)

    def matches(self, root: pdl.OperationOp, op: Operation) -> Iterator[None]:
        return self._match_operation(root.op, root, op)

    def _match_operation(self, value: SSAValue, pattern: pdl.OperationOp, op: Operation) -> Iterator[None]:
        if value in self.matching_context:
            if self.matching_context[value] is op:
                yield
            return
        parts = _parts(pattern)
        if parts.name is not None and op.name != parts.name:
            return
        saved = dict(self.matching_context)
        for name, attr_value in parts.attributes:
            attr = op.get_attr_or_prop(name)
            assert isinstance(attr_value.owner, pdl.AttributeOp)
            if attr is None or not self.match_attribute(attr_value, attr_value.owner, attr):
                self._restore(saved)
                return
        with_attributes = dict(self.matching_context)
        for operands in self._operand_orders(parts, op):
            self._restore(with_attributes)
            for _ in self._match_values(list(parts.operands), operands):
                if self._match_types(list(parts.types), [r.type for r in op.results]):
                    self.matching_context[value] = op
                    yield
        self._restore(saved)

    @staticmethod
    def _operand_orders(parts: _Parts, op: Operation) -> list[Sequence[SSAValue]]:
        operands = list(op.operands)
        if parts.swappable and len(operands) == 2 and op.has_trait(Commutative):
            return [operands, operands[::-1]]
        return [operands]

    def _match_values(self, patterns: list[SSAValue], values: Sequence[SSAValue]) -> Iterator[None]:
        """Operand lists: none listed matches any; one range takes what the others leave."""
        if not patterns:
            yield
            return
        yield from self._match_sequence(patterns, list(values))

    def _match_sequence(self, patterns: list[SSAValue], values: list[SSAValue]) -> Iterator[None]:
        if not patterns:
            if not values:
                yield
            return
        head, rest = patterns[0], patterns[1:]
        saved = dict(self.matching_context)
        if _is_range(head):
            count = len(values) - len(rest)
            if count >= 0 and self._bind(head, list(values[:count])):
                yield from self._match_sequence(rest, values[count:])
            self._restore(saved)
            return
        if not values:
            return
        for _ in self._match_value(head, values[0]):
            yield from self._match_sequence(rest, values[1:])
        self._restore(saved)

    def _bind(self, value: SSAValue, obj: Any) -> bool:
        if value in self.matching_context:
            return self.matching_context[value] == obj
        self.matching_context[value] = obj
        return True

    def _match_value(self, pattern_value: SSAValue, value: SSAValue) -> Iterator[None]:
        owner = pattern_value.owner
        saved = dict(self.matching_context)
        if isinstance(owner, pdl.OperandOp):
            if self.match_operand(pattern_value, owner, value):
                yield
        elif isinstance(owner, pdl.ResultOp):
            producer_value = owner.parent_
            producer = producer_value.owner
            assert isinstance(producer, pdl.OperationOp)
            if isinstance(value, OpResult) and value.index == owner.index.value.data:
                for _ in self._match_operation(producer_value, producer, value.op):
                    if self._bind(pattern_value, value):
                        yield
        self._restore(saved)

    def _match_types(self, patterns: list[SSAValue], types: list[Attribute]) -> bool:
        if not patterns:
            return True
        ranges = [p for p in patterns if _is_range(p)]
        if not ranges and len(patterns) != len(types):
            return False
        count = len(types) - (len(patterns) - len(ranges))
        if count < 0:
            return False
        position = 0
        for pattern_value in patterns:
            if _is_range(pattern_value):
                if not self._bind(pattern_value, types[position:position + count]):
                    return False
                position += count
                continue
            owner = pattern_value.owner
            assert isinstance(owner, pdl.TypeOp)
            if not self.match_type(pattern_value, owner, types[position]):
                return False
            position += 1
        return True

    def value(self, pattern: Pattern, value: SSAValue):
        try:
            return self.constant_or_matched(value)
        except LookupError as error:
            raise _fail(pattern, f"{error} for {value.owner.name}") from None


def match(pattern: Pattern, op: Operation, ctx: PatternContext) -> PatternMatcher | None:
    """The first way `pattern` fits at `op` that every native constraint accepts, or None."""
    if op in ctx.excluded:
        return None
    matcher = PatternMatcher()
    for _ in matcher.matches(pattern.root, op):
        if ctx.excluded and any(v in ctx.excluded for v in matcher.matching_context.values() if isinstance(v, Operation)):
            continue
        if all(_constraint_holds(pattern, constraint, matcher, ctx) for constraint in pattern.constraints):
            return matcher
    return None


def _constraint_holds(pattern: Pattern, constraint: pdl.ApplyNativeConstraintOp, matcher: PatternMatcher,
                      ctx: PatternContext) -> bool:
    name = constraint.constraint_name.data
    function = NATIVE_CONSTRAINTS.get(name)
    if function is None:
        raise _fail(pattern, f"native constraint '{name}' is not registered")
    return bool(function(ctx, *(matcher.value(pattern, v) for v in constraint.args)))


# --------------------------------------------------------------------------------------
# Rewriting
# --------------------------------------------------------------------------------------


class Rewrite:
    """One run of a pattern's `pdl.rewrite` region: its values, the ops it created."""

    def __init__(self, pattern: Pattern, matcher: PatternMatcher, ir_ctx, ctx: PatternContext, rewriter: PatternRewriter):
        self.pattern, self.ir_ctx, self.ctx, self.rewriter = pattern, ir_ctx, ctx, rewriter
        self.values: dict[SSAValue, Any] = dict(matcher.matching_context)
        self.created: list[Operation] = []  # by pdl.operation: they take the root's location
        self.built: list[Operation] = []  # by native rewrites: they keep the location they were built with

    def get(self, value: SSAValue):
        if value in self.values:
            return self.values[value]
        owner = value.owner
        if isinstance(owner, pdl.AttributeOp) and owner.value is not None:
            return owner.value
        if isinstance(owner, pdl.TypeOp) and owner.constantType is not None:
            return owner.constantType
        raise _fail(self.pattern, f"{owner.name} is neither matched nor a constant")

    def run(self) -> None:
        for op in self.pattern.rewrite.body.block.ops:
            step = self.STEPS.get(type(op))
            if step is None:
                raise _fail(self.pattern, f"{op.name} is not supported in a rewrite")
            results = step(self, op)
            for result, value in zip(op.results, results):
                self.values[result] = value

    def operation(self, op: pdl.OperationOp) -> tuple[Operation]:
        assert op.opName is not None
        op_type = self.ir_ctx.get_optional_op(op.opName.data)
        if op_type is None:
            raise _fail(self.pattern, f"cannot create unknown op '{op.opName.data}'")
        operands = _flatten([self.get(v) for v in op.operand_values])
        result_types = _flatten([self.get(v) for v in op.type_values])
        property_names = op_type.get_irdl_definition().properties.keys() if issubclass(op_type, IRDLOperation) else ()
        attributes: dict[str, Attribute] = {}
        properties: dict[str, Attribute] = {}
        for key, value in zip((n.data for n in op.attributeValueNames.data), op.attribute_values):
            (properties if key in property_names else attributes)[key] = self.get(value)
        new = op_type.create(operands=operands, result_types=result_types, attributes=attributes, properties=properties)
        assert self.ctx.root is not None
        new.location = self.ctx.root.location
        self.rewriter.insert(new)
        self.created.append(new)
        return (new,)

    def result(self, op: pdl.ResultOp) -> tuple[SSAValue]:
        parent = self.get(op.parent_)
        return (parent.results[op.index.value.data],)

    def constant(self, op: pdl.AttributeOp | pdl.TypeOp) -> tuple[Attribute]:
        return (self.get(op.results[0]),)

    def native(self, op: pdl.ApplyNativeRewriteOp) -> tuple[Any, ...]:
        name = op.constraint_name.data
        function = NATIVE_REWRITES.get(name)
        if function is None:
            raise _fail(self.pattern, f"native rewrite '{name}' is not registered")
        results = function(self.ctx, *(self.get(v) for v in op.args))
        results = () if results is None else results if isinstance(results, tuple) else (results,)
        if len(results) != len(op.res):
            raise _fail(self.pattern, f"native rewrite '{name}' returned {len(results)} values, the pattern expects {len(op.res)}")
        return results

    def replace(self, op: pdl.ReplaceOp) -> tuple[()]:
        """The op's results become the replacement's; a new op a native built (not in the IR
        yet) is inserted first, with the new ops it reads. The created ops take the replaced
        op's name hint, as `PatternRewriter.replace` gives it."""
        old = self.get(op.op_value)
        hint = old.results[0].name_hint if len(old.results) == 1 else None
        if op.repl_operation is not None:
            new_op = self.get(op.repl_operation)
            inserted = _not_inserted(new_op)
            self.built += inserted
            self.rewriter.replace(old, inserted, new_op.results)
        else:
            new_values = _flatten([self.get(v) for v in op.repl_values])
            for new in _flatten([_not_inserted(v.owner) for v in new_values if isinstance(v.owner, Operation)]):
                self.rewriter.insert(new)
                self.built.append(new)
            self.rewriter.replace(old, [], new_values)
        for new in self.created:
            for result in new.results:
                if hint is not None and result.name_hint is None:
                    result.name_hint = hint
        return ()

    def erase(self, op: pdl.EraseOp) -> tuple[()]:
        self.rewriter.erase(self.get(op.op_value))
        return ()

    STEPS = {pdl.OperationOp: operation, pdl.ResultOp: result, pdl.AttributeOp: constant, pdl.TypeOp: constant,
             pdl.ApplyNativeRewriteOp: native, pdl.ReplaceOp: replace, pdl.EraseOp: erase}


def _not_inserted(op: Operation) -> list[Operation]:
    """`op` and the new ops it reads that are in no block yet, producers first (a native's
    new op may read other new ops: the phase units of a new interleave)."""
    if op.parent is not None:
        return []
    found: list[Operation] = []
    for operand in op.operands:
        if isinstance(operand.owner, Operation):
            found += [new for new in _not_inserted(operand.owner) if new not in found]
    return found + [op]


def _flatten(values: Sequence[Any]) -> list[Any]:
    flat: list[Any] = []
    for value in values:
        flat.extend(value) if isinstance(value, (list, tuple)) else flat.append(value)
    return flat


class PatternSet(RewritePattern):
    """All patterns, indexed by root op name, each op trying its candidates by benefit."""

    def __init__(self, patterns: Sequence[Pattern], ctx: PatternContext):
        self.ctx = ctx
        self.ir_ctx = make_context()
        self.by_root: dict[str | None, list[Pattern]] = {}
        for pattern in patterns:
            self.by_root.setdefault(pattern.root_name, []).append(pattern)
        self.fired: list[str] = []

    def candidates(self, op: Operation) -> list[Pattern]:
        named, anonymous = self.by_root.get(op.name, []), self.by_root.get(None, [])
        if not anonymous:
            return named
        return sorted(named + anonymous, key=lambda p: (-p.benefit, p.order))

    def match_and_rewrite(self, op: Operation, rewriter: PatternRewriter) -> None:
        for pattern in self.candidates(op):
            self.ctx.root, self.ctx.rewriter = op, rewriter
            matcher = match(pattern, op, self.ctx)
            if matcher is not None:
                self.rewrite(pattern, matcher, rewriter)
                self.fired.append(pattern.name)
                return

    def rewrite(self, pattern: Pattern, matcher: PatternMatcher, rewriter: PatternRewriter) -> None:
        rewrite = Rewrite(pattern, matcher, self.ir_ctx, self.ctx, rewriter)
        rewrite.run()
        location = fused_location(*_absorbed(matcher), self.ctx.root) if self.ctx.root is not None else None
        for new in rewrite.created + rewrite.built:
            if new.parent is None:
                continue  # created and erased again by the same rewrite
            if location is not None and new in rewrite.created:
                new.location = location
            try:
                new.verify()
            except VerifyException as error:
                raise _fail(pattern, f"created an invalid {new.name}: {error}") from None


def _absorbed(matcher: PatternMatcher) -> list[Operation]:
    """The matched ops (other than the root and constants) the rewrite left without a use: they
    go with the root, so the ops that replace them carry their ONNX names too (a hard-swish spelled
    add-clip-mul-div names all four nodes). Producers first."""
    matched = [v for v in matcher.matching_context.values()
               if isinstance(v, Operation) and v.parent is not None and not v.has_trait(ConstantLike)]
    absorbed: list[Operation] = []
    changed = True
    while changed:  # an op is absorbed once every user of its results is
        changed = False
        for op in matched:
            if op not in absorbed and all(use.operation in absorbed for r in op.results for use in r.uses):
                absorbed.append(op)
                changed = True
    return absorbed[::-1]


def apply_patterns(module: ModuleOp, patterns: Sequence[Pattern], ctx: PatternContext) -> list[str]:
    """Rewrite `module` to a fixed point; returns the names of the patterns that fired, in order."""
    pattern_set = PatternSet(patterns, ctx)
    PatternRewriteWalker(pattern_set, apply_recursively=True).rewrite_module(module)
    return pattern_set.fired

