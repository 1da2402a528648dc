"""Remove ops that leave their input unchanged.

ONNX exporters leave identity reshapes, identity transposes, open clips, `+ 0` and `* 1`
behind (often from folded-away subgraphs); each costs an instruction and, once quantized,
a requantization step for nothing. Every rewrite here only fires when the replacement
value has exactly the type of the op's result, so the graph's shapes never change.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
from xdsl.context import Context
from xdsl.dialects.builtin import ModuleOp
from xdsl.ir import Operation, SSAValue
from xdsl.passes import ModulePass
from xdsl.pattern_rewriter import (
    GreedyRewritePatternApplier,
    PatternRewriter,
    PatternRewriteWalker,
    RewritePattern,
    op_type_rewrite_pattern,
)

from xnpu.dialects import nn
from xnpu.transforms.constants import constant_array


def _forward(op: Operation, value: SSAValue, rewriter: PatternRewriter) -> None:
    """Replace `op` by `value` when that keeps every user's operand type."""
    if value.type == op.results[0].type:
        rewriter.replace(op, [], [value])


def _is_constant_fill(value: SSAValue, fill: float) -> bool:
    array = constant_array(value)
    return array is not None and bool(np.all(array == fill))


class RemoveSameShapeReshape(RewritePattern):
    @op_type_rewrite_pattern
    def match_and_rewrite(self, op: nn.ReshapeOp | nn.FlattenOp, rewriter: PatternRewriter) -> None:
        _forward(op, op.input, rewriter)


class CollapseReshapeChain(RewritePattern):
    """reshape/flatten of a reshape/flatten is one reshape of the original input."""

    @op_type_rewrite_pattern
    def match_and_rewrite(self, op: nn.ReshapeOp | nn.FlattenOp, rewriter: PatternRewriter) -> None:
        inner = op.input.owner
        if not isinstance(inner, nn.ReshapeOp | nn.FlattenOp):
            return
        collapsed = nn.ReshapeOp(inner.input, nn.shape_of(op.result))
        collapsed.location = op.location
        rewriter.replace(op, collapsed)


class RemoveIdentityTranspose(RewritePattern):
    @op_type_rewrite_pattern
    def match_and_rewrite(self, op: nn.TransposeOp, rewriter: PatternRewriter) -> None:
        if list(nn.ints(op.perm)) == list(range(len(nn.shape_of(op.input)))):
            _forward(op, op.input, rewriter)


class RemoveOpenClip(RewritePattern):
    @op_type_rewrite_pattern
    def match_and_rewrite(self, op: nn.ClipOp, rewriter: PatternRewriter) -> None:
        if not op.has_operand_bounds and op.bounds() == (-math.inf, math.inf):
            _forward(op, op.input, rewriter)


class RemoveIdentityArithmetic(RewritePattern):
    """x + 0, 0 + x, x - 0, x * 1, 1 * x, x / 1, where the constant does not broadcast x."""

    @op_type_rewrite_pattern
    def match_and_rewrite(self, op: nn.AddOp | nn.SubOp | nn.MulOp | nn.DivOp, rewriter: PatternRewriter) -> None:
        identity = 0.0 if isinstance(op, nn.AddOp | nn.SubOp) else 1.0
        commutative = isinstance(op, nn.AddOp | nn.MulOp)
        if _is_constant_fill(op.rhs, identity):
            _forward(op, op.lhs, rewriter)
        elif commutative and _is_constant_fill(op.lhs, identity):
            _forward(op, op.rhs, rewriter)


class RemoveSingleInputConcat(RewritePattern):
    @op_type_rewrite_pattern
    def match_and_rewrite(self, op: nn.ConcatOp, rewriter: PatternRewriter) -> None:
        if len(op.inputs) == 1:
            _forward(op, op.inputs[0], rewriter)


@dataclass(frozen=True)
class RemoveNoOpPass(ModulePass):
    """Remove identity reshapes/transposes/concats, open clips, +0 and *1; collapse reshape chains."""

    name = "remove-noop"

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        PatternRewriteWalker(
            GreedyRewritePatternApplier(
                [
                    RemoveSameShapeReshape(),
                    CollapseReshapeChain(),
                    RemoveIdentityTranspose(),
                    RemoveOpenClip(),
                    RemoveIdentityArithmetic(),
                    RemoveSingleInputConcat(),
                ]
            )
        ).rewrite_module(op)
