"""Fold inference batch normalization into the convolution that feeds it.

    y = bn(conv(x, w, b)) = conv(x, w * f, (b - mean) * f + beta),  f = scale / sqrt(var + eps)

per output channel. The float graph keeps one op where ONNX had two, and the fixed-point
levels below see a plain convolution (whose weights they quantize once) instead of a
per-channel affine step they would otherwise have to quantize separately.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from xdsl.context import Context
from xdsl.dialects.builtin import ModuleOp
from xdsl.passes import ModulePass
from xdsl.pattern_rewriter import (
    GreedyRewritePatternApplier,
    PatternRewriter,
    PatternRewriteWalker,
    RewritePattern,
    op_type_rewrite_pattern,
)

from xnpu.core.errors import XnpuError
from xnpu.dialects import nn
from xnpu.ir.io import describe_op
from xnpu.ir.locations import fused_location
from xnpu.transforms.constants import constant_array


class FoldBatchNormIntoConv(RewritePattern):
    """bn(conv) -> conv with scaled weights and a new bias, when every parameter is constant."""

    @op_type_rewrite_pattern
    def match_and_rewrite(self, bn: nn.BatchNormOp, rewriter: PatternRewriter) -> None:
        conv = bn.input.owner
        # another user of the conv still needs the unnormalized result
        if not isinstance(conv, nn.Conv2dOp) or not conv.result.has_one_use():
            return
        weight = constant_array(conv.weight)
        bias = (
            np.zeros(nn.shape_of(conv.weight)[0], np.float32)
            if conv.bias is None
            else constant_array(conv.bias)
        )
        stats = [constant_array(v) for v in (bn.scale, bn.bias, bn.mean, bn.var)]
        if weight is None or bias is None or any(s is None for s in stats):
            return
        scale, beta, mean, var = stats
        if np.any(var + np.float32(bn.epsilon.value.data) < 0):
            # the square root below would be NaN: the model is broken, say where
            raise XnpuError(f"{describe_op(bn)}: variance {float(var.min()):g} plus epsilon is negative")
        # the same float32 factor float_ops.batch_norm applies
        factor = (scale / np.sqrt(var + np.float32(bn.epsilon.value.data))).astype(np.float32)
        new_weight = nn.ConstantOp(weight * factor.reshape(-1, 1, 1, 1))
        new_bias = nn.ConstantOp((bias - mean) * factor + beta)
        # the folded tensors replace the conv's weight and bias; keep their names
        new_weight.result.name_hint = conv.weight.name_hint
        new_bias.result.name_hint = "bias" if conv.bias is None else conv.bias.name_hint
        folded = nn.Conv2dOp(
            conv.input,
            new_weight.result,
            new_bias.result,
            strides=nn.ints(conv.strides),
            pads=nn.ints(conv.pads),
            dilations=nn.ints(conv.dilations),
            group=conv.group.value.data,
            result_type=bn.result.type,
        )
        folded.attributes.update(conv.attributes)
        folded.location = fused_location(conv, bn)
        rewriter.replace(bn, [new_weight, new_bias, folded])
        rewriter.erase(conv)


@dataclass(frozen=True)
class FoldBatchNormPass(ModulePass):
    """Fold nn.batch_norm into a preceding nn.conv2d with constant weights."""

    name = "fold-batch-norm"

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        PatternRewriteWalker(GreedyRewritePatternApplier([FoldBatchNormIntoConv()])).rewrite_module(op)
