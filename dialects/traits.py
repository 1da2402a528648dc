"""What the compiler knows about an op beside its verifier, declared in the op's definition.

xDSL's traits are MLIR's traits and interfaces in one: an op lists them in `traits_def(...)`,
and every pass asks the op (`op.get_trait(SampleBatching)`) instead of keeping a table of op
names of its own. xnpu's dialects attach these:

- `SampleBatching` (nn and fixed ops): whether N samples stacked along axis 0 of a batch-1
  graph pass through the op apart, so the interpreters can run them at once
  (interpreters/batching.py). An op without one runs sample by sample.
- `ScaleRule` (nn ops): how an op's output scale relates to its input's, which
  lower-nn-to-fixed's `refine_scales` uses to save a rounding (lowering/nn_to_fixed/scales.py).
- `UnitForm` (fixed ops): which accelerator unit runs the op, its limits on a target (the line
  of docs/supported-ops.md), and why one instance does not run as it stands. legalize (what
  to rewrite), unit selection and host placement (lower-fixed-to-npu) and the
  supported-operators report all ask this one answer.

The float semantics of a pointwise nn op is its `function` (nn.PointwiseOp); the integer
semantics of every fixed and npu op is a function of the semantics package (semantics/) named in its
docstring.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, ClassVar

from xdsl.dialects.builtin import TensorType
from xdsl.ir import Operation, SSAValue
from xdsl.traits import OpTrait

if TYPE_CHECKING:
    from xnpu.target.description import TargetDescription

# --------------------------------------------------------------------------------------
# Batching: N samples along axis 0 of a batch-1 graph
# --------------------------------------------------------------------------------------


def value_shape(value: SSAValue) -> tuple[int, ...] | None:
    return tuple(value.type.get_shape()) if isinstance(value.type, TensorType) else None


def carries_samples(value: SSAValue) -> bool:
    """A value whose leading dimension is the (batch-1) sample axis."""
    shape = value_shape(value)
    return shape is not None and len(shape) >= 1 and shape[0] == 1


def broadcasts_over_samples(value: SSAValue, rank: int) -> bool:
    """A value that does not depend on the inputs must not stretch along the sample axis."""
    shape = value_shape(value)
    return shape is not None and (len(shape) < rank or (len(shape) >= 1 and shape[0] == 1))


class SampleBatching(OpTrait):
    """Whether the samples stacked along axis 0 stay apart through the op, given which
    operands carry them (`batched`); subclasses say for which kinds of op."""

    def keeps_samples(self, op: Operation, batched: Sequence[bool]) -> bool:
        raise NotImplementedError


@dataclass(frozen=True)
class ElementwiseSamples(SampleBatching):
    """Element-wise (or NCHW per sample) whatever the attributes: every operand that does not
    carry the samples broadcasts against the sample axis."""

    def keeps_samples(self, op: Operation, batched: Sequence[bool]) -> bool:
        rank = len(value_shape(op.results[0]) or ()) if op.results else 0
        return all(b or broadcasts_over_samples(v, rank) for v, b in zip(op.operands, batched))


@dataclass(frozen=True)
class FirstOperandSamples(SampleBatching):
    """Axis 0 of the first operand is the batch (a convolution's map, a gemm's rows); the
    other operands are weights. `unless(op)`: an attribute that moves the batch elsewhere."""

    unless: Callable[[Operation], bool] | None = None

    def keeps_samples(self, op: Operation, batched: Sequence[bool]) -> bool:
        if not batched[0] or any(batched[1:]):
            return False
        return self.unless is None or not self.unless(op)


@dataclass(frozen=True)
class SamplesUnlessAxisZero(SampleBatching):
    """Samples stay apart unless the op's `attribute` (softmax's axis, a per-channel
    rescale's channel axis) names axis 0; `every_operand`: each operand must carry them
    (a concatenation of samples with a constant would stretch it)."""

    attribute: str = "axis"
    every_operand: bool = False

    def keeps_samples(self, op: Operation, batched: Sequence[bool]) -> bool:
        attribute = getattr(op, self.attribute, None)
        axis = None if attribute is None else attribute.value.data
        rank = len(value_shape(op.operands[0]) or ())
        if axis is not None and axis % max(rank, 1) == 0:
            return False
        return all(batched) if self.every_operand else True


@dataclass(frozen=True)
class ReshapeSamples(SampleBatching):
    """A reshape keeps the samples when its input's leading dimension is the sample axis (the
    interpreters map the IR's batch-1 shape to N samples)."""

    def keeps_samples(self, op: Operation, batched: Sequence[bool]) -> bool:
        return carries_samples(op.operands[0])


@dataclass(frozen=True)
class FlattenSamples(SampleBatching):
    """A flatten collapses [0, axis) into a leading 1: it keeps axis 0 when axis >= 1."""

    def keeps_samples(self, op: Operation, batched: Sequence[bool]) -> bool:
        axis = op.axis.value.data  # type: ignore[attr-defined]
        return (axis + len(value_shape(op.operands[0]) or ()) if axis < 0 else axis) >= 1


@dataclass(frozen=True)
class TransposeSamples(SampleBatching):
    """A transpose keeps the samples when its permutation leaves axis 0 in place."""

    def keeps_samples(self, op: Operation, batched: Sequence[bool]) -> bool:
        return tuple(op.perm.get_values())[:1] == (0,)  # type: ignore[attr-defined]


@dataclass(frozen=True)
class SampleBySample(SampleBatching):
    """The op runs one sample at a time: an ONNX node onnxruntime runs (nn.onnx) has a model
    built for the graph's batch-1 shapes."""

    def keeps_samples(self, op: Operation, batched: Sequence[bool]) -> bool:
        return False


# --------------------------------------------------------------------------------------
# Scales of the float graph
# --------------------------------------------------------------------------------------


class ScaleRule(OpTrait):
    """How an nn op's integer output scale may follow its input's (refine_scales)."""


@dataclass(frozen=True)
class Rescales(ScaleRule):
    """The op ends in a rescale of its own (a conv, an add, a pool's average): its output
    scale is free, so a clamp that is its only user can lend it its own."""


@dataclass(frozen=True)
class KeepsRange(ScaleRule):
    """The op's outputs are some of its input values (max pool, reshape, a nearest resize):
    the input's scale serves the output and no rescale is needed. `when(op)`: only for
    instances where that holds."""

    when: Callable[[Operation], bool] | None = None

    def holds(self, op: Operation) -> bool:
        return self.when is None or self.when(op)


@dataclass(frozen=True)
class ClampsCodes(ScaleRule):
    """The op is a clamp of its input's codes (relu, clip with constant bounds): at its
    input's scale it is a bare fixed.clamp (R8)."""


# --------------------------------------------------------------------------------------
# The accelerator's form of a fixed op
# --------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Capability:
    """One line of the supported-operators report: whether a target runs an op natively,
    and within which limits (when native) or why not."""

    op: str
    native: bool
    limits: str


class UnitForm(OpTrait):
    """How the accelerator runs a fixed op (an interface: each op's subclass answers for it).

    `problem(op, target)` is None when the op runs natively as it stands (on its unit, by the
    DMA, or folded into its producer's output stage), else the reason in a few words; it is
    the one answer legalize (rewrite what is not native), unit selection and host placement
    give. `capability(target)` is the op's line in docs/supported-ops.md. `needs` says what
    unit selection needs beyond that (a wide result rescaled to int8 by its only user), for
    the placement report when an instance is left over; `selected_with_consumer`: a unit
    pattern takes the op together with its consumer (its rescale, its producer's epilogue),
    so an op after it waits until that is decided.
    """

    needs: ClassVar[str | None] = None
    selected_with_consumer: ClassVar[bool] = False

    def capability(self, op_name: str, target: TargetDescription) -> Capability:
        raise NotImplementedError

    def problem(self, op: Operation, target: TargetDescription) -> str | None:
        return None


def unit_form(op: Operation) -> UnitForm | None:
    return op.get_trait(UnitForm)


def is_native(op: Operation, target: TargetDescription) -> bool:
    """Whether `target` runs this fixed op instance as it stands (an op with no form: no)."""
    form = unit_form(op)
    return form is not None and form.problem(op, target) is None
