"""Upsampling on the accelerator: how a resize or a transposed convolution splits into phases.

An upsampling by an integer factor f along an axis computes output position f * m + a from
input positions near m. Grouped by `a` (the phase), each group is an ordinary map of the
input's size: a copy of the input shifted by a few pixels (nearest), or a small stride-1
convolution of it (linear, transposed convolution). The accelerator computes each phase with
a unit it has and the DMA interleaves the phases into the output by strided stores
(`npu.interleave`, docs/npu.md). This module finds the phases (pure arithmetic on the fixed
op's parameters); target/legality.py asks whether the target's units take them, and the
fixed -> npu patterns build them.

Along one axis of `in` pixels:

- a **resize** phase `a` reads `x[clamp(m + shift + t)]` for taps `t < T` with integer weights
  `w[t]` (T = 1 for nearest, 2 for linear); clamping is an edge pad of the input by `before`
  and `after` pixels (`npu.pad "edge"`), after which phase `a` starts at row `shift + before`
  of the padded map (for linear, of the valid T x T convolution over it);
- a **transposed convolution** phase `r` (stride s, kernel k, pad p) is
  `y[s m + r] = sum_j x[m + c - j] * w[t + s j]` with `t = (r + p) mod s`, `c = (r + p) div s`:
  a convolution by the sub-kernel `w[t], w[t + s], ...` (flipped), zero padded, whose output
  starts at `offset`.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np


@dataclass(frozen=True)
class ResizePhase:
    """Output positions f * m + a read x[clamp(m + shift + t)] * weights[t]."""

    shift: int
    weights: tuple[int, ...]


@dataclass(frozen=True)
class ResizeAxis:
    """One axis of a resize split into its `factor` phases, and the edge pad they need."""

    factor: int
    phases: tuple[ResizePhase, ...]

    @property
    def taps(self) -> int:
        return len(self.phases[0].weights)

    @property
    def pad(self) -> tuple[int, int]:
        """Edge pixels before and after the input that make every clamp an index of the pad."""
        shifts = [phase.shift for phase in self.phases]
        return max(0, -min(shifts)), max(0, max(shifts) + self.taps - 1)

    def offsets(self) -> tuple[int, ...]:
        """Where each phase starts in the padded map (or in the valid convolution over it)."""
        before = self.pad[0]
        return tuple(phase.shift + before for phase in self.phases)

    @property
    def replicates(self) -> bool:
        """Every phase is the input itself (no shift): nearest upsampling by pixel replication."""
        return all(phase.shift == 0 for phase in self.phases) and self.taps == 1


def _interpolation_matrix(sources: np.ndarray, weights: np.ndarray, in_size: int) -> np.ndarray:
    """out x in: row o holds the weight of every input position in output o."""
    matrix = np.zeros((sources.shape[0], in_size), dtype=np.int64)
    np.add.at(matrix, (np.arange(sources.shape[0])[:, None], sources), weights)
    return matrix


def _phase_matrix(phase: ResizePhase, count: int, in_size: int) -> np.ndarray:
    m = np.arange(count)[:, None]
    sources = np.clip(m + phase.shift + np.arange(len(phase.weights))[None, :], 0, in_size - 1)
    return _interpolation_matrix(sources, np.broadcast_to(np.asarray(phase.weights), sources.shape), in_size)


def resize_axis(sources: Sequence[int] | np.ndarray, weights: Sequence[int] | np.ndarray | None,
                in_size: int) -> ResizeAxis | None:
    """The phases of one resized axis: `sources` (out, or out x T) and `weights` (the same
    shape; None: nearest, weight 1). None when some phase is not a shifted copy of the
    input with fixed weights (align_corners: where it reads and with which weights varies
    with the position)."""
    sources = np.asarray(sources, dtype=np.int64)
    sources = sources.reshape(sources.shape[0], -1)
    weights = np.ones_like(sources) if weights is None else np.asarray(weights, dtype=np.int64).reshape(sources.shape)
    out = sources.shape[0]
    if out % in_size:
        return None
    factor = out // in_size
    dense = _interpolation_matrix(sources, weights, in_size)
    phases = []
    for a in range(factor):
        rows = dense[a::factor]
        # a candidate from an inner position (no clamp), then from the edges for tiny inputs
        for m in dict.fromkeys((in_size // 2, 0, in_size - 1)):
            candidate = ResizePhase(int(sources[factor * m + a, 0]) - m, tuple(int(w) for w in weights[factor * m + a]))
            if np.array_equal(_phase_matrix(candidate, in_size, in_size), rows):
                phases.append(candidate)
                break
        else:
            return None
    return ResizeAxis(factor, tuple(phases))


@dataclass(frozen=True)
class TransposePhase:
    """Phase r of a transposed convolution along one axis: the convolution of the input by
    `taps` kernel taps from `start` in steps of the stride (of the flipped kernel), zero
    padded by `pads`, whose outputs from `offset` on are the phase's."""

    start: int
    taps: int
    pads: tuple[int, int]
    offset: int


def transpose_axis(in_size: int, out_size: int, kernel: int, stride: int, pad_begin: int) -> tuple[TransposePhase, ...] | None:
    """The `stride` phases of a transposed convolution along one axis (dilation 1), or None
    when a phase has no kernel tap (kernel < stride: its outputs would be the bias alone)."""
    phases = []
    for r in range(stride):
        t, c = (r + pad_begin) % stride, (r + pad_begin) // stride
        taps = len(range(t, kernel, stride))
        if taps == 0:
            return None
        shift = c - (taps - 1)
        before, offset = max(0, -shift), max(0, shift)
        count = len(range(r, out_size, stride))
        after = max(0, offset + count + taps - 1 - in_size - before)
        phases.append(TransposePhase(kernel - 1 - t - stride * (taps - 1), taps, (before, after), offset))
    return tuple(phases)


def transpose_phase_kernel(conv_weight: np.ndarray, rows: TransposePhase, cols: TransposePhase, stride: Sequence[int]) -> np.ndarray:
    """The sub-kernel of a phase, from the transposed convolution's convolution form
    (`float_ops.conv_transpose_as_conv`: transposed per group, flipped)."""
    return np.ascontiguousarray(
        conv_weight[:, :, rows.start :: stride[0], cols.start :: stride[1]][:, :, : rows.taps, : cols.taps])


# --------------------------------------------------------------------------------------
# The two ways to run an upsampling convolution, in CONV instructions (target/cost.py)
# --------------------------------------------------------------------------------------


@dataclass(frozen=True)
class ConvShape:
    """What one CONV instruction's cycles depend on (target/cost.py conv_cycles)."""

    out_hw: tuple[int, int]
    kernel: tuple[int, int]
    in_channels: int
    out_channels: int
    depthwise: bool


def transpose_conv_phase_shapes(in_hw, out_hw, kernel, stride, pads, channels, out_channels, depthwise) -> list[ConvShape]:
    """The phase convolutions of a transposed convolution (one per output phase)."""
    axes = [transpose_axis(in_hw[i], out_hw[i], kernel[i], stride[i], pads[i]) for i in range(2)]
    assert axes[0] is not None and axes[1] is not None
    return [ConvShape((in_hw[0] + sum(rows.pads) - rows.taps + 1, in_hw[1] + sum(cols.pads) - cols.taps + 1),
                      (rows.taps, cols.taps), channels, out_channels, depthwise)
            for rows in axes[0] for cols in axes[1]]


def resize_linear_phase_shapes(in_hw, rows: ResizeAxis, cols: ResizeAxis, channels: int) -> list[ConvShape]:
    """The depthwise phase convolutions of a linear resize over its edge-padded input."""
    out_hw = (in_hw[0] + sum(rows.pad) - rows.taps + 1, in_hw[1] + sum(cols.pad) - cols.taps + 1)
    return [ConvShape(out_hw, (rows.taps, cols.taps), channels, channels, True)] * (rows.factor * cols.factor)


def zero_insert_shape(out_hw, kernel, channels, out_channels, depthwise) -> list[ConvShape]:
    """The alternative: one stride-1 convolution over the zero-inserted input, one output per
    output pixel, by the whole kernel (a transposed convolution's; for half_pixel linear x2 the
    4 x 4 kernel outer([1, 3, 3, 1]) over the zero-inserted edge-padded input)."""
    return [ConvShape(tuple(out_hw), tuple(kernel), channels, out_channels, depthwise)]  # type: ignore[arg-type]
