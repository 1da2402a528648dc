"""Native functions every pattern set may call: questions about values PDL cannot ask, and
the shape of the identity depthwise 1x1 convolution that seed 001's bias-adds (and any
per-channel affine on the CONV unit) are made of.

Native names are global (docs/extending.md); the ones here are shared by the nn -> fixed,
legalize and fixed -> npu patterns instead of being defined once per pass.
"""

from __future__ import annotations

import numpy as np
from xdsl.ir import Operation, SSAValue

from xnpu.dialects import fixed
from xnpu.dialects.shapes import i64_array, i64_attr, shape_of
from xnpu.pdl.patterns import PatternContext, native_constraint, native_rewrite


@native_constraint()
def single_use(ctx: PatternContext, value: SSAValue) -> bool:
    return len(list(value.uses)) == 1


@native_constraint()
def is_i8(ctx: PatternContext, value: SSAValue | Operation) -> bool:
    """An i8 value, or an op whose (first) result is i8."""
    return fixed.width_of(value.results[0] if isinstance(value, Operation) else value) == 8


@native_constraint()
def is_map(ctx: PatternContext, value: SSAValue) -> bool:
    """An NCHW map (rank 4), what a convolution reads: tokens and matrices are not."""
    return len(shape_of(value)) == 4


@native_rewrite()
def depthwise_1x1(ctx: PatternContext, x: SSAValue):
    """(strides, pads, dilations, group, i32 accumulator type) of a 1x1 depthwise conv over x."""
    shape = shape_of(x)
    return (i64_array([1, 1]), i64_array([0, 0, 0, 0]), i64_array([1, 1]), i64_attr(shape[1]),
            fixed.int_tensor(32, shape))


@native_rewrite()
def identity_depthwise_weight(ctx: PatternContext, x: SSAValue):
    """Weight 1 for every channel of x: C x 1 x 1 x 1 (i8)."""
    weight = fixed.dense_from_ints(np.ones((shape_of(x)[1], 1, 1, 1), dtype=np.int8), 8)
    return weight, weight.type
