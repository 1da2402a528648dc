"""Split a depthwise block into channel groups, so that each group's activations get a scale of
their own.

int8 activations have one scale per tensor (docs/fixed-point.md). A depthwise convolution
reads each channel of its input alone, and after batch norm its input's channels can span
ranges a hundredfold apart: one scale set by the large channels rounds the small ones to a
few steps, and their depthwise kernels (batch norm made them large) pass that error on
(layout_cdla: docs/quantization.md). The block

    y = consumer(act2(depthwise(act1(producer(x)))))

(`producer` and `consumer` ordinary convolutions, `act1`/`act2` optional element-wise
activations, every intermediate read once) computes each channel of the depthwise input on
its own up to the consumer, so it can be computed group by group:

    y = consumer'(concat(act2(depthwise_g(act1(producer_g(x)))) for g in groups))

with producer_g and depthwise_g the rows (kernels, biases) of the group's channels and
consumer' reading the concatenation's channel order (its weights' input channels permuted).
The float result is the same up to float rounding; each group's tensors are then calibrated
apart. Which channels form the groups is data: `CHANNEL_GROUPS_ATTR` on the depthwise
convolution gives each channel's group (transforms/calibrate_channel_groups.py chooses them
on the calibration samples); this pass splits every block so marked.

The new ops keep the locations of the ops they replace and record, in `ONNX_CHANNELS_ATTR`,
which channels of that op's result they hold: calibration on onnxruntime then reads them
from the imported model's tensors (transforms/calibrate_onnx.py).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from xdsl.context import Context
from xdsl.dialects.builtin import DenseArrayBase, IntegerType, ModuleOp, TensorType, i64
from xdsl.ir import Operation, SSAValue
from xdsl.passes import ModulePass

from xnpu.core.errors import XnpuError
from xnpu.dialects import nn
from xnpu.ir.io import describe_op
from xnpu.transforms.constants import constant_array, is_constant

CHANNEL_GROUPS_ATTR = "xnpu.channel_groups"  # on a depthwise conv: the group of each channel (0, 1, ...)
ONNX_CHANNELS_ATTR = "xnpu.onnx_channels"  # on an op of a split: the channels of the replaced op's result it holds


def is_channelwise_activation(op: Operation | None) -> bool:
    """An element-wise op of one tensor (a pointwise function, or a clip with constant bounds)."""
    if isinstance(op, nn.PointwiseOp):
        return True
    return isinstance(op, nn.ClipOp) and op.min_value is None and op.max_value is None


def _constant_parameters(conv: nn.Conv2dOp) -> bool:
    return is_constant(conv.weight) and (conv.bias is None or is_constant(conv.bias))


def _dense_conv(op: Operation | None) -> bool:
    return isinstance(op, nn.Conv2dOp) and op.group.value.data == 1 and _constant_parameters(op)


@dataclass(frozen=True)
class DepthwiseBlock:
    """producer -> [act1] -> depthwise -> [act2] -> consumer, every intermediate read once."""

    producer: nn.Conv2dOp
    act1: Operation | None
    depthwise: nn.Conv2dOp
    act2: Operation | None
    consumer: nn.Conv2dOp

    @property
    def channels(self) -> int:
        return nn.shape_of(self.depthwise.result)[1]


def _single_reader(value: SSAValue) -> Operation | None:
    uses = list(value.uses)
    if len(uses) != 1:
        return None
    return uses[0].operation if uses[0].index == 0 else None


def depthwise_block(depthwise: Operation) -> DepthwiseBlock | None:
    """The splittable block around a depthwise convolution (the module doc), or None."""
    if not isinstance(depthwise, nn.Conv2dOp) or not depthwise.is_depthwise:
        return None
    if not _constant_parameters(depthwise):
        return None
    act1 = depthwise.input.owner if is_channelwise_activation(depthwise.input.owner) else None
    if act1 is not None and _single_reader(act1.result) is not depthwise:
        return None
    producer = (act1.input if act1 is not None else depthwise.input).owner
    if not _dense_conv(producer) or _single_reader(producer.result) is not (act1 or depthwise):
        return None
    after = _single_reader(depthwise.result)
    act2 = after if is_channelwise_activation(after) else None
    consumer = _single_reader(act2.result) if act2 is not None else after
    if not _dense_conv(consumer):
        return None
    return DepthwiseBlock(producer, act1, depthwise, act2, consumer)


def _with_channels(op: Operation, operands: list[SSAValue], channels: np.ndarray,
                   properties: dict | None = None) -> Operation:
    """A copy of `op` on `operands` whose result holds `channels` of op's result."""
    shape = list(nn.shape_of(op.results[0]))
    shape[1] = len(channels)
    new = type(op).create(operands=operands, result_types=[TensorType(nn.f32, shape)],
                          properties={**op.properties, **(properties or {})}, attributes=dict(op.attributes))
    new.attributes.pop(CHANNEL_GROUPS_ATTR, None)
    new.attributes[ONNX_CHANNELS_ATTR] = DenseArrayBase.from_list(i64, [int(c) for c in channels])
    new.location = op.location
    return new


def _conv_rows(conv: nn.Conv2dOp, input: SSAValue, channels: np.ndarray, properties: dict | None = None) -> list[Operation]:
    """`conv` computing only its output `channels` from `input`: its kernels' and bias's rows of
    those channels as new constants, then the conv (last)."""
    parameters = [nn.ConstantOp(np.ascontiguousarray(constant_array(value)[channels]))
                  for value in (conv.weight, conv.bias) if value is not None]
    return [*parameters, _with_channels(conv, [input, *(p.result for p in parameters)], channels, properties)]


def _activation_rows(activation: Operation | None, input: SSAValue, channels: np.ndarray) -> list[Operation]:
    """The element-wise `activation` (if any) on `input`, the given channels of its result."""
    return [] if activation is None else [_with_channels(activation, [input, *activation.operands[1:]], channels)]


def group_channels(groups: np.ndarray) -> list[np.ndarray]:
    """The channels of each group, in group order (empty groups left out)."""
    return [np.flatnonzero(groups == g) for g in np.unique(groups)]


def split_block(block: DepthwiseBlock, groups: np.ndarray) -> None:
    """Rewrite `block` group by group (the module doc); `groups` gives each channel's group."""
    parts = group_channels(groups)
    order = np.concatenate(parts)
    anchor = block.consumer
    joined: list[SSAValue] = []
    for channels in parts:
        new_ops = _conv_rows(block.producer, block.producer.input, channels)
        new_ops += _activation_rows(block.act1, new_ops[-1].results[0], channels)
        new_ops += _conv_rows(block.depthwise, new_ops[-1].results[0], channels, {"group": nn.i64_attr(len(channels))})
        new_ops += _activation_rows(block.act2, new_ops[-1].results[0], channels)
        _insert_before(anchor, new_ops)
        joined.append(new_ops[-1].results[0])
    last = block.act2 or block.depthwise
    concat = nn.ConcatOp(joined, 1)
    concat.attributes[ONNX_CHANNELS_ATTR] = DenseArrayBase.from_list(i64, [int(c) for c in order])
    concat.location = last.location
    weight = nn.ConstantOp(np.ascontiguousarray(constant_array(block.consumer.weight)[:, order]))
    _insert_before(anchor, [concat, weight])
    old_weight = block.consumer.weight
    block.consumer.operands = [concat.result, weight.result, *block.consumer.operands[2:]]
    _erase_if_unused_constant(old_weight)
    for op in (block.act2, block.depthwise, block.act1, block.producer):  # readers first
        if op is not None:
            _erase_with_dead_constants(op)


def _insert_before(anchor: Operation, ops: list[Operation]) -> None:
    block = anchor.parent_block()
    for op in ops:
        block.insert_op_before(op, anchor)


def _erase_if_unused_constant(value: SSAValue) -> None:
    if is_constant(value) and not list(value.uses):
        value.owner.detach()
        value.owner.erase()


def _erase_with_dead_constants(op: Operation) -> None:
    operands = list(op.operands)
    op.detach()
    op.erase()
    for value in operands:
        _erase_if_unused_constant(value)


def split_marked_blocks(module: ModuleOp) -> int:
    """Split every block whose depthwise convolution carries CHANNEL_GROUPS_ATTR; returns how many."""
    marked = [op for op in module.walk() if CHANNEL_GROUPS_ATTR in op.attributes]
    for op in marked:
        block = depthwise_block(op)
        mark = op.attributes[CHANNEL_GROUPS_ATTR]
        if not isinstance(mark, DenseArrayBase) or not isinstance(mark.elt_type, IntegerType):
            raise XnpuError(f"{describe_op(op)}: {CHANNEL_GROUPS_ATTR} must be an array<i64: ...> of group indices")
        groups = np.asarray(mark.get_values(), dtype=np.int64)
        if block is None:
            raise XnpuError(f"{describe_op(op)}: {CHANNEL_GROUPS_ATTR} marks no splittable depthwise block "
                            "(conv -> [activation] -> depthwise conv -> [activation] -> conv, each read once)")
        if groups.shape != (block.channels,) or (groups < 0).any():
            raise XnpuError(f"{describe_op(op)}: {CHANNEL_GROUPS_ATTR} needs one group index >= 0 per channel "
                            f"({block.channels}), got {groups.size}")
        if len(np.unique(groups)) < 2:
            del op.attributes[CHANNEL_GROUPS_ATTR]
            continue
        split_block(block, groups)
    return len(marked)


@dataclass(frozen=True)
class SplitChannelGroupsPass(ModulePass):
    """Split each depthwise block marked with xnpu.channel_groups into its groups (module doc)."""

    name = "split-channel-groups"

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        split_marked_blocks(op)
