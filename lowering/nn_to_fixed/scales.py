"""The scales lower-nn-to-fixed works with: each float value's calibrated scale (`nn.scale`,
written by transforms/calibrate.py) and `refine_scales`, which moves scales where that saves a
rounding before anything is rewritten: an op that does not change the range of its input
(max pool, reshape, flatten, transpose, a nearest resize) keeps its input's scale, and a
rescaling producer (conv, gemm, add, ...) feeding only a relu/clip takes the activation's
scale, so the activation becomes a bare clamp."""

from __future__ import annotations

import numpy as np
from xdsl.dialects import func
from xdsl.dialects.builtin import DenseArrayBase, FloatAttr
from xdsl.ir import BlockArgument, Operation, SSAValue

from xnpu.core.errors import XnpuError
from xnpu.dialects import fixed, nn
from xnpu.dialects.traits import ClampsCodes, KeepsRange, Rescales
from xnpu.ir.io import describe_op
from xnpu.semantics import fixed_point

SCALE_ATTR = "nn.scale"
RESULT_SCALES_ATTR = "nn.result_scales"  # an nn.onnx op's, one per result (transforms/calibrate.py)
WEIGHT_SCALES_ATTR = "nn.weight_scales"
INPUT_MEAN_ATTR = "nn.input_mean"  # a weighted op's, for its bias correction (transforms/calibrate.py)
DATA_BITS = 8



def _arg_attrs(arg: BlockArgument) -> dict:
    function = arg.block.parent_op()
    if isinstance(function, func.FuncOp) and function.arg_attrs is not None:
        return dict(function.arg_attrs.data[arg.index].data)
    return {}


def symmetric_scale(values: np.ndarray) -> float:
    """max|x| / 127 (seed 000); an all-zero tensor gets scale 1 (any positive scale is exact)."""
    peak = float(np.max(np.abs(values))) if values.size else 0.0
    return peak / fixed_point.qmax(DATA_BITS) if peak > 0 else 1.0


def scale_of(value: SSAValue) -> float:
    """The calibrated scale of a float value (constants: their own max|c| / 127)."""
    if isinstance(value, BlockArgument):
        attr = _arg_attrs(value).get(SCALE_ATTR)
        if isinstance(attr, FloatAttr):
            return attr.value.data
        raise XnpuError(
            f"function input {value.index} has no calibrated scale ('{SCALE_ATTR}'): run the calibrate pass first"
        )
    owner = value.owner
    if isinstance(owner, nn.ConstantOp):
        return symmetric_scale(owner.to_numpy())
    if isinstance(owner, nn.OnnxOp):  # a host op: one scale per result
        scales = owner.attributes.get(RESULT_SCALES_ATTR)
        if isinstance(scales, DenseArrayBase) and scales.get_values()[value.index] > 0:
            return float(scales.get_values()[value.index])
        raise XnpuError(f"{describe_op(owner)}: result {value.index} has no calibrated scale "
                        f"('{RESULT_SCALES_ATTR}'): run the calibrate pass first")
    if isinstance(owner, fixed.DequantizeOp):  # an already lowered producer
        return float(owner.scales()[0])
    attr = owner.attributes.get(SCALE_ATTR)
    if isinstance(attr, FloatAttr):
        return attr.value.data
    raise XnpuError(
        f"{describe_op(owner)} has no calibrated scale ('{SCALE_ATTR}'): run the calibrate pass first"
    )


def _set_scale(op: Operation, scale: float) -> None:
    op.attributes[SCALE_ATTR] = FloatAttr(scale, nn.f32)


def _single_user(value: SSAValue) -> Operation | None:
    uses = list(value.uses)
    return uses[0].operation if len(uses) == 1 else None


def refine_scales(function: func.FuncOp) -> None:
    """Choose each activation's integer scale so that no step rounds twice (see module doc):
    each op's ScaleRule trait (dialects/traits.py) says how its scale may follow its input's."""
    for op in function.body.walk():
        if op.has_trait(ClampsCodes):
            producer = op.operands[0].owner
            if isinstance(producer, Operation) and producer.has_trait(Rescales) and _single_user(op.operands[0]) is op:
                _set_scale(producer, scale_of(op.results[0]))
            else:
                _set_scale(op, scale_of(op.operands[0]))
        else:
            keeps = op.get_trait(KeepsRange)
            if keeps is not None and keeps.holds(op):
                _set_scale(op, scale_of(op.operands[0]))
