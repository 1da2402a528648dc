"""`expand-layer-norm`: a LayerNorm spelled in ops the accelerator runs, so that it leaves the host.

`nn.layer_norm` (fuse-activations) is one float op for the host. Over the last axis with
constant scale and bias (a transformer's tokens [.., T, C]) it is rewritten (`layer_norm.mlir`)
into ops whose integer forms the accelerator has:

    d = x - x @ (J / C)                  mean of every token, broadcast to its C channels: one matmul
    v = mean_square(d)                   the biased variance, [.., T, 1]: exact sums of squared codes
    r = reciprocal_sqrt(v, epsilon)      1 / sqrt(v + epsilon): a table
    y = d * (r @ scale[None, :]) + bias  r spread along the channels times scale[c]: a matmul of one column

The matmuls' weights are equal within each output column (1/C) or one per column (scale[c]),
so their int8 codes are exact (per-channel weights: 127 each, the value in the scale) and
their int32 sums exact (R13); the squares are summed exactly too (lower-nn-to-fixed,
`nn.mean_square`): an int8 square would keep little of the small deviations of a token next
to an outlier channel. What the integer form adds to the float LayerNorm is the int8 rounding
of d, v, r and r * scale (calibrated like every other value) and of the table's outputs. Calibration sees each of them, so the pass runs before it (in
`float_cleanup`, after fuse-activations).
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import numpy as np
from xdsl.context import Context
from xdsl.dialects.builtin import ModuleOp, TensorType, f32
from xdsl.ir import Operation
from xdsl.passes import ModulePass
from xdsl.rewriter import InsertPoint
from xdsl.transforms.dead_code_elimination import dce

from xnpu.dialects import nn
from xnpu.pdl.driver import apply_patterns
from xnpu.pdl.patterns import PatternContext, load_patterns, native_constraint, native_rewrite
from xnpu.transforms.constants import constant_array

PATTERN_DIR = Path(__file__).resolve().parent


def _per_channel(value, channels: int) -> np.ndarray | None:
    """A constant that broadcasts as one value per channel of the last axis, as [C]; else None."""
    array = constant_array(value)
    if array is None:
        return None
    array = np.asarray(array, np.float32)
    if array.ndim == 0 or any(n != 1 for n in array.shape[:-1]) or array.shape[-1] not in (1, channels):
        return None
    return np.broadcast_to(array.reshape(-1), (channels,)).copy()


@native_constraint()
def normalizes_last_axis_by_constants(ctx: PatternContext, op: Operation) -> bool:
    """A LayerNorm over the last axis only of a tensor of rank 2 or more, scale and bias constants of
    one value per channel (or one value)."""
    if not isinstance(op, nn.LayerNormOp):
        return False
    shape = nn.shape_of(op.input)
    rank = len(shape)
    if rank < 2 or op.axis.value.data % rank != rank - 1 or shape[-1] < 1:
        return False
    return _per_channel(op.scale, shape[-1]) is not None and _per_channel(op.bias, shape[-1]) is not None


def _constant(ctx: PatternContext, values: np.ndarray):
    constant = nn.ConstantOp(np.ascontiguousarray(values, np.float32))
    constant.location = ctx.root.location  # type: ignore[union-attr]
    ctx.rewriter.insert(constant, InsertPoint.before(ctx.root))  # type: ignore[union-attr]
    return constant.result


@native_rewrite()
def layer_norm_matrices(ctx: PatternContext, op: Operation):
    """(J / C [C, C], scale [1, C], the variance's type [.., T, 1], epsilon)."""
    assert isinstance(op, nn.LayerNormOp)
    shape = nn.shape_of(op.input)
    channels = shape[-1]
    scale = _per_channel(op.scale, channels)
    means = _constant(ctx, np.full((channels, channels), 1.0 / channels, np.float32))
    scale_row = _constant(ctx, scale.reshape(1, channels))
    return means, scale_row, TensorType(f32, [*shape[:-1], 1]), op.epsilon


@dataclass(frozen=True)
class ExpandLayerNormPass(ModulePass):
    """Rewrite nn.layer_norm over the last axis (constant scale and bias) into two matmuls by
    constants, a subtraction, a mean of squares, a reciprocal square root (a table), a
    multiplication and an addition."""

    name = "expand-layer-norm"

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        if apply_patterns(op, load_patterns([PATTERN_DIR]), PatternContext()):
            dce(op)
