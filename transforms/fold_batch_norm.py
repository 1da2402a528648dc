"""Fold inference batch normalization, and a constant added per output channel, into the
convolution that feeds it.

    y = bn(conv(x, w, b)) = conv(x, w * f, (b - mean) * f + beta),  f = scale / sqrt(var + eps)
    y = conv(x, w, b) + c  = conv(x, w, b + c)

per output channel. The float graph keeps one op where ONNX had two, and the fixed-point
levels below see a plain convolution (whose weights they quantize once) instead of a
per-channel affine step they would otherwise have to quantize separately: an add after the
conv rounds the conv's output to int8 once more (Paddle exports write every conv bias as
such an add: PP-OCRv6_rec_small has 54).
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


def _per_channel(value: np.ndarray, channels: int) -> np.ndarray | None:
    """`value` as one number per output channel when it broadcasts against [N, C, H, W] along C
    only (a scalar, [C], [C, 1, 1] or [1, C, 1, 1]), else None."""
    shape = value.shape
    if value.size == 1:
        return np.full(channels, value.reshape(()), np.float32)
    if len(shape) in (3, 4) and shape[-3] == channels and value.size == channels:
        return value.reshape(channels).astype(np.float32)
    return None


class FoldAddIntoConv(RewritePattern):
    """conv + c -> conv with bias b + c, when c is a constant per output channel."""

    @op_type_rewrite_pattern
    def match_and_rewrite(self, add: nn.AddOp, rewriter: PatternRewriter) -> None:
        for conv_value, other in ((add.lhs, add.rhs), (add.rhs, add.lhs)):
            conv = conv_value.owner
            if not isinstance(conv, nn.Conv2dOp) or not conv.result.has_one_use():
                continue
            if nn.shape_of(add.result) != nn.shape_of(conv.result):
                continue  # the add broadcasts the conv's result: not a bias
            constant, weight = constant_array(other), constant_array(conv.weight)
            channels = nn.shape_of(conv.weight)[0]
            offset = None if constant is None else _per_channel(constant, channels)
            bias = np.zeros(channels, np.float32) if conv.bias is None else constant_array(conv.bias)
            if offset is None or weight is None or bias is None:
                continue
            new_bias = nn.ConstantOp((bias + offset).astype(np.float32))
            new_bias.result.name_hint = "bias" if conv.bias is None else conv.bias.name_hint
            folded = nn.Conv2dOp(conv.input, conv.weight, new_bias.result, strides=nn.ints(conv.strides),
                                 pads=nn.ints(conv.pads), dilations=nn.ints(conv.dilations),
                                 group=conv.group.value.data, result_type=add.result.type)
            folded.attributes.update(conv.attributes)
            folded.location = fused_location(conv, add)
            rewriter.replace(add, [new_bias, folded])
            rewriter.erase(conv)
            return


@dataclass(frozen=True)
class FoldBatchNormPass(ModulePass):
    """Fold nn.batch_norm, and an nn.add of a constant per output channel, into a preceding
    nn.conv2d with constant weights."""

    name = "fold-batch-norm"

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        PatternRewriteWalker(GreedyRewritePatternApplier([FoldBatchNormIntoConv(), FoldAddIntoConv()])).rewrite_module(op)
