"""Running N samples of a batch-1 model in one pass.

A model's shapes say batch 1, but the numpy semantics of nearly every op do not care about
the leading dimension: a convolution of N x C x H x W is N convolutions. `runs_batched`
checks, op by op, that a function keeps the samples apart along axis 0 -- every value that
depends on an input has a leading dimension of 1 in the IR, and each op that reads one is
of a kind (and has attributes) for which the sample axis passes straight through. Only
then do the runner and calibration feed N samples at once; any other function (an op not
known here, a transpose that moves axis 0, a reshape that merges it) runs sample by sample,
exactly as before. The interpreters map the IR's batch-1 shapes to N samples where an op
names a shape (reshape, flatten) with `batch_shape`.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

from xdsl.dialects import func
from xdsl.dialects.builtin import TensorType
from xdsl.ir import Operation, SSAValue

# Ops whose samples pass through unchanged whatever their attributes, given that every
# operand which does not depend on the inputs broadcasts against the sample axis.
_SAMPLEWISE = {
    # element-wise
    "nn.relu", "nn.sigmoid", "nn.tanh", "nn.hard_sigmoid", "nn.hard_swish", "nn.clip",
    "nn.add", "nn.sub", "nn.mul", "nn.div",
    "fixed.quantize", "fixed.shift", "fixed.clamp", "fixed.add", "fixed.sub", "fixed.mul", "fixed.table",
    # NCHW ops whose axis 0 is the batch; their other operands are weights
    "nn.conv2d", "nn.batch_norm", "nn.max_pool", "nn.average_pool", "nn.global_average_pool",
    "fixed.conv2d", "fixed.max_pool", "fixed.avg_pool", "fixed.global_avg_pool",
    "nn.conv_transpose2d", "fixed.conv_transpose2d", "nn.resize", "fixed.resize", "fixed.resize_linear",
    # rows of A are samples
    "nn.gemm", "nn.matmul", "fixed.gemm",
}
# Ops that keep samples apart unless an attribute names axis 0.
_AXIS_ATTRIBUTE = {"nn.softmax": "axis", "nn.concat": "axis", "fixed.concat": "axis",
                   "fixed.rescale": "axis", "fixed.dequantize": "axis"}
_FIRST_OPERAND_ONLY = {"nn.conv2d", "nn.batch_norm", "nn.gemm", "nn.matmul", "fixed.conv2d", "fixed.gemm",
                       "nn.conv_transpose2d", "fixed.conv_transpose2d"}


def _shape(value: SSAValue) -> tuple[int, ...] | None:
    return tuple(value.type.get_shape()) if isinstance(value.type, TensorType) else None


def _carries_samples(value: SSAValue) -> bool:
    shape = _shape(value)
    return shape is not None and len(shape) >= 1 and shape[0] == 1


def _broadcasts(value: SSAValue, rank: int) -> bool:
    """A value that does not depend on the inputs must not stretch along the sample axis."""
    shape = _shape(value)
    return shape is not None and (len(shape) < rank or (len(shape) >= 1 and shape[0] == 1))


def _keeps_samples(op: Operation, batched: Sequence[bool]) -> bool:
    name = op.name
    result_rank = len(_shape(op.results[0]) or ()) if op.results else 0
    if name in _FIRST_OPERAND_ONLY:
        if not batched[0] or any(batched[1:]):
            return False
        if name == "nn.gemm" and op.trans_a.value.data:
            return False
        return name != "nn.matmul" or len(_shape(op.operands[0])) >= 2
    if name in _SAMPLEWISE:
        return all(b or _broadcasts(v, result_rank) for v, b in zip(op.operands, batched))
    if name in _AXIS_ATTRIBUTE:
        attribute = getattr(op, _AXIS_ATTRIBUTE[name], None)
        axis = None if attribute is None else attribute.value.data
        rank = len(_shape(op.operands[0]) or ())
        if axis is not None and axis % max(rank, 1) == 0:
            return False
        return all(batched) if name.endswith("concat") else True
    if name in ("nn.reshape", "fixed.reshape"):
        return _carries_samples(op.operands[0])
    if name in ("nn.flatten", "fixed.flatten"):
        # flatten keeps axis 0 when it collapses [0, axis) with axis >= 1 into a leading 1
        axis = op.axis.value.data
        return (axis + len(_shape(op.operands[0]) or ()) if axis < 0 else axis) >= 1
    if name in ("nn.transpose", "fixed.transpose"):
        return tuple(op.perm.get_values())[:1] == (0,)
    return False


def runs_batched(function: func.FuncOp) -> bool:
    """Whether N samples along axis 0 can run through `function` in one pass (see the module doc)."""
    block = function.body.blocks.first
    if block is None or block.next_block is not None:
        return False
    batched: set[SSAValue] = set()
    for argument in block.args:
        if not _carries_samples(argument):
            return False
        batched.add(argument)
    for op in block.ops:
        flags = [operand in batched for operand in op.operands]
        if isinstance(op, func.ReturnOp):
            return all(flags)  # every output carries the samples
        if not any(flags):
            continue  # computed from constants only: the same for every sample
        if op.regions or not _keeps_samples(op, flags) or not all(_carries_samples(r) for r in op.results):
            return False
        batched.update(op.results)
    return False


def batch_shape(values, shape: Sequence[int]) -> tuple[int, ...]:
    """The IR's batch-1 result `shape` for the samples in `values` (N along axis 0)."""
    shape = tuple(shape)
    if shape and shape[0] == 1 and values.ndim >= 1 and values.shape[0] != 1:
        count = values.shape[0]
        if values.size == count * math.prod(shape):
            return (count, *shape[1:])
    return shape
