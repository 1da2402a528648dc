"""Evaluate nn ops whose operands are all constants, at compile time.

The value is computed by the `nn` interpreter (xnpu.interpreters.nn, i.e. the float
semantics every other level is checked against), so folding can never disagree with
running the unfolded graph. Results larger than `max-elements` are left alone: a folded
constant is stored in the IR, and a broadcast that turns a scalar into a huge tensor
would make the module bigger, not smaller.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
from xdsl.context import Context
from xdsl.dialects.builtin import ModuleOp
from xdsl.interpreter import Interpreter
from xdsl.ir import Operation
from xdsl.passes import ModulePass
from xdsl.pattern_rewriter import (
    GreedyRewritePatternApplier,
    PatternRewriter,
    PatternRewriteWalker,
    RewritePattern,
)

from xnpu.dialects import nn
from xnpu.interpreters.function import interpreter_functions
from xnpu.transforms.constants import constant_array


@dataclass
class FoldConstantOperands(RewritePattern):
    """op(nn.constant, ...) -> nn.constant, for any nn op the interpreter can run."""

    interpreter: Interpreter
    max_elements: int

    def match_and_rewrite(self, op: Operation, rewriter: PatternRewriter) -> None:
        if op.dialect_name() != nn.NN.name or isinstance(op, nn.ConstantOp) or not op.operands:
            return
        if len(op.results) != 1 or math.prod(nn.shape_of(op.results[0])) > self.max_elements:
            return
        arguments = [constant_array(operand) for operand in op.operands]
        if any(argument is None for argument in arguments):
            return
        (value,) = self.interpreter.run_op(op, tuple(arguments))
        folded = nn.ConstantOp(np.asarray(value, np.float32).reshape(nn.shape_of(op.results[0])))
        folded.location = op.location
        rewriter.replace(op, folded)


@dataclass(frozen=True)
class ConstantFoldPass(ModulePass):
    """Replace nn ops with all-constant operands by the constant they compute."""

    name = "constant-fold"

    max_elements: int = 1 << 22
    """Largest result (in elements) that is folded into a constant."""

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        interpreter = Interpreter(op)
        for functions in interpreter_functions():
            interpreter.register_implementations(functions)
        pattern = FoldConstantOperands(interpreter, self.max_elements)
        PatternRewriteWalker(GreedyRewritePatternApplier([pattern])).rewrite_module(op)
