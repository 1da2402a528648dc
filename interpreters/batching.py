"""Running N samples of a batch-1 model in one pass.

A model's shapes say batch 1, but the numpy semantics of nearly every op do not care about
the leading dimension: a convolution of N x C x H x W is N convolutions. `runs_batched`
checks, op by op, that a function keeps the samples apart along axis 0 -- every value that
depends on an input has a leading dimension of 1 in the IR, and each op that reads one says
(its SampleBatching trait, declared with the op) that the sample axis passes straight
through it with these attributes. Only
then do the runner and calibration feed N samples at once; any other function (an op not
known here, a transpose that moves axis 0, a reshape that merges it) runs sample by sample,
exactly as before. The interpreters map the IR's batch-1 shapes to N samples where an op
names a shape (reshape, flatten) with `batch_shape`.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

from xdsl.dialects import func
from xdsl.ir import Operation, SSAValue

from xnpu.dialects.traits import SampleBatching, carries_samples


def _keeps_samples(op: Operation, batched: Sequence[bool]) -> bool:
    """The op's own answer (its SampleBatching trait, dialects/traits.py); an op without one
    is not known to keep samples apart."""
    batching = op.get_trait(SampleBatching)
    return batching is not None and batching.keeps_samples(op, batched)


def runs_batched(function: func.FuncOp) -> bool:
    """Whether N samples along axis 0 can run through `function` in one pass (see the module doc)."""
    block = function.body.blocks.first
    if block is None or block.next_block is not None:
        return False
    batched: set[SSAValue] = set()
    for argument in block.args:
        if not carries_samples(argument):
            return False
        batched.add(argument)
    for op in block.ops:
        flags = [operand in batched for operand in op.operands]
        if isinstance(op, func.ReturnOp):
            return all(flags)  # every output carries the samples
        if not any(flags):
            continue  # computed from constants only: the same for every sample
        if op.regions or not _keeps_samples(op, flags) or not all(carries_samples(r) for r in op.results):
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
