"""What one accelerator operation may be on a target: the single definition of the limits,
on shapes and integers (no dialect is imported here).

Every question "can this target run that?" is answered here, from the target's description
(target/*.toml), and nowhere else:

- the `npu` dialect's verifiers check each op of a module that names its target
  (`npu.target`) with the `*_problem` functions below;
- each fixed op's `UnitForm` (dialects/fixed.py) applies them to one instance, and legalize,
  the `fixed -> npu` patterns (native constraints `conv_fits`, `eltwise_fits`, ...) and host
  placement ask that form, so a pattern never builds an op the verifier would reject;
- `TargetDescription.check_instruction` (the `isa` verifier and the simulator) checks each
  instruction's fields with them.

Each function returns None when the operation is legal, else the reason in a few words
("kernel 9x9 is outside [1, 7]"), which callers wrap with the op, its ONNX node and the target.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Sequence
from typing import TYPE_CHECKING

from xnpu.target.encoding import FORMATS

if TYPE_CHECKING:
    from xnpu.target.description import TargetDescription

Check = tuple[str, Sequence[int], int, int]


def outside_limits(checks: Iterable[Check]) -> str | None:
    """The first (what, values, low, high) whose values leave [low, high], as a reason."""
    for what, values, low, high in checks:
        if any(not low <= v <= high for v in values):
            return f"{what} {'x'.join(map(str, values))} is outside [{low}, {high}]"
    return None


def dense_dilated_kernel(target: TargetDescription, kernel: Sequence[int], dilations: Sequence[int]) -> tuple[int, int] | None:
    """The kernel extent when a dilation beyond the unit's limit is run as a zero-filled dense
    kernel (exact: zero taps add nothing to R13's sum), or None when that does not fit either."""
    extent = tuple(d * (k - 1) + 1 for d, k in zip(dilations, kernel))
    return extent if max(extent) <= target.conv.max_kernel else None  # type: ignore[return-value]


def hop_folded_kernel(in_shape: Sequence[int], kernel: Sequence[int], strides: Sequence[int], dilations: Sequence[int],
                      pads: Sequence[int], group: int) -> tuple[int, int] | None:
    """(S, k) when a 1-D convolution of one channel ([1, 1, 1, L], a 1 x kS kernel, stride S,
    no pads: an STFT's frames) is the stride-1 convolution of its input read as S channels of
    hops (x[s, j] = x[j S + s]) by 1 x k kernels (w'[o, s, j] = w[o, j S + s]): the same
    products, so the same exact sums (R13); else None."""
    if len(in_shape) != 4 or in_shape[1] != 1 or in_shape[2] != 1 or group != 1 or any(pads) or max(dilations) != 1:
        return None
    hop, width = strides[1], kernel[1]
    if kernel[0] != 1 or strides[0] != 1 or hop < 2 or width % hop or in_shape[3] % hop:
        return None
    return hop, width // hop


def conv_problem(
    target: TargetDescription,
    *,
    kernel: Sequence[int],
    strides: Sequence[int],
    dilations: Sequence[int],
    pads: Sequence[int],
    in_channels: int,
    depthwise: bool,
    out_channels: int | None = None,
) -> str | None:
    """One CONV: `in_channels` is the reduction's channel count (per group; 1 for depthwise
    at the op level), `out_channels` is checked only for one instruction (ops are cut into
    output-channel chunks)."""
    c = target.conv
    if depthwise and not c.depthwise:
        return "the target has no depthwise convolution"
    checks: list[Check] = [
        ("kernel", kernel, 1, c.max_kernel),
        ("stride", strides, 1, c.max_stride),
        ("dilation", dilations, 1, c.max_dilation),
        ("pad", pads, 0, c.max_pad),
        ("input channels", (in_channels,), 1, c.max_channels),
    ]
    if out_channels is not None:
        checks.append(("output channels", (out_channels,), 1, c.max_channels))
    return outside_limits(checks)


def eltwise_problem(target: TargetDescription, op: str, channels: int | None = None) -> str | None:
    if not target.supports_eltwise(op):
        return f"element-wise {op} is not supported (supported: {', '.join(target.eltwise.ops) or 'none'})"
    if channels is not None and channels > target.eltwise.max_channels:
        return f"{channels} channels exceed the element-wise limit {target.eltwise.max_channels}"
    return None


def pool_problem(
    target: TargetDescription, kind: str, kernel: Sequence[int] = (), strides: Sequence[int] = (), pads: Sequence[int] = ()
) -> str | None:
    if not target.supports_pool(kind):
        return f"{kind} pooling is not supported (supported: {', '.join(target.pool.kinds) or 'none'})"
    if kind == "global_avg":
        return None
    p = target.pool
    return outside_limits((("kernel", kernel, 1, p.max_kernel), ("stride", strides, 1, p.max_stride),
                           ("pad", pads, 0, p.max_pad)))


def eltwise_broadcast(full: Sequence[int], other: Sequence[int]) -> str | None:
    """How the ELTWISE unit reads its second operand against a first of shape `full`: `none`
    (same elements), `channel` (one value per channel of an NCHW map), `scalar`; None when it
    cannot."""
    full, other = tuple(full), tuple(other)
    if other == full:
        return "none"
    if math.prod(other) == 1:
        return "scalar"
    if len(full) == 4 and len(other) == 4 and other[0] == 1 and other[1] == full[1] and other[2] == other[3] == 1:
        return "channel"
    if len(full) != 4 and len(other) <= len(full) and other[-1] == full[-1] and math.prod(other) == full[-1]:
        # a row-major tensor is a matrix of its last axis: one value per column is per channel
        return "none" if math.prod(full[:-1]) == 1 else "channel"
    return None


def unit_problem(target: TargetDescription, unit: str) -> str | None:
    """`clamp` or `table`: whether the target has that unit."""
    present = {"clamp": target.has_clamp, "table": target.has_table}[unit]
    return None if present else f"the target has no {unit} unit"


def clamp_is_saturation(target: TargetDescription, low: int, high: int) -> bool:
    """A clamp every unit applies anyway: the result saturation [smin, smax] (R3)."""
    return low <= target.data.saturation_min and high >= target.data.saturation_max


def clamp_is_relu(target: TargetDescription, low: int, high: int) -> bool:
    """A clamp a CONV or ELTWISE relu flag computes: [0, smax] after saturation."""
    return low == 0 and high >= target.data.saturation_max


# --------------------------------------------------------------------------------------
# Upsampling: DMA moves and phase decompositions (target/phases.py)
# --------------------------------------------------------------------------------------


def interleave_problem(target: TargetDescription, channels: int, out_hw: Sequence[int], factors: Sequence[int]) -> str | None:
    """DMA stores of phase maps every factors[0]-th row and factors[1]-th pixel of an
    out_hw x channels map (factors 1, 1: a plain copy): the DMA word's dimension and stride
    fields must hold them."""
    dma = FORMATS["DMA"]
    pixel = factors[1] * channels
    return outside_limits((
        ("map", (*out_hw, channels), 1, dma.field("d0").maximum),
        ("DMA pixel stride", (pixel,), 1, dma.field("ddr_pixel_stride").maximum),
        ("DMA row stride", (factors[0] * out_hw[1] * channels,), 1, dma.field("ddr_row_stride").maximum),
    ))


# --------------------------------------------------------------------------------------
# Tensors in memory: what shape the accelerator can hold, and the DMA's data movement
# --------------------------------------------------------------------------------------


def memory_shape_problem(shape: Sequence[int]) -> str | None:
    """A tensor the accelerator holds in DDR or SRAM is an H x W x C view of static shape: an
    NCHW map of batch 1, or a row-major tensor of any other rank as a matrix of its last axis
    (N x K is N x 1 x K, [1, L, C] tokens L x 1 x C, a vector 1 x 1 x K)."""
    shape = tuple(shape)
    if any(d < 0 for d in shape):
        return f"shape [{', '.join('?' if d < 0 else str(d) for d in shape)}] depends on the data"
    if 0 in shape:
        return f"shape {list(shape)} is empty"
    if len(shape) == 4:
        return None if shape[0] == 1 else f"batch {shape[0]} is not supported (the accelerator runs batch 1)"
    if not shape:
        return "rank-0 tensors are not supported"
    return None


def concat_problem(shape: Sequence[int], axis: int) -> str | None:
    """The DMA copies inputs into place along the channels of NCHW maps."""
    if len(shape) != 4 or axis % 4 != 1:
        return f"only channel concatenation of NCHW maps has a DMA pattern (axis {axis} of rank {len(shape)})"
    return None


def transpose_is_view(in_shape: Sequence[int], perm: Sequence[int]) -> bool:
    """Whether a transpose is a view of its input's bytes, in row-major or NHWC order (as they
    lie, or after one relayout copy): the result's row-major or NHWC order is one of them
    (axes of size 1 aside)."""
    out_shape = [in_shape[p] for p in perm]
    storage = [[a for a in range(len(in_shape)) if in_shape[a] != 1]]
    if len(in_shape) == 4:
        storage.append([a for a in (0, 2, 3, 1) if in_shape[a] != 1])
    wanted = [[perm[i] for i in range(len(out_shape)) if out_shape[i] != 1]]
    if len(out_shape) == 4:
        wanted.append([perm[i] for i in (0, 2, 3, 1) if out_shape[i] != 1])
    return any(order in wanted for order in storage)


def transpose_blocks(in_shape: Sequence[int], perm: Sequence[int]) -> tuple[int, int, int] | None:
    """(A, B, C) when a transpose swaps two blocks of axes of its row-major input ahead of a
    block it keeps last (axes of size 1 aside; A, B, C the blocks' sizes, C 1 when nothing
    stays): [1, C, L] -> [1, L, C] is (C, L, 1), [1, H, T, D] -> [1, T, H, D] (attention heads)
    is (H, T, D); else None."""
    axes = [a for a in range(len(in_shape)) if in_shape[a] != 1]
    order = [a for a in perm if in_shape[a] != 1]
    for end in range(len(axes), 1, -1):
        if order[end:] != axes[end:]:
            continue
        for k in range(1, end):
            if order[:end] == axes[k:end] + axes[:k]:
                return (math.prod(in_shape[a] for a in axes[:k]), math.prod(in_shape[a] for a in axes[k:end]),
                        math.prod(in_shape[a] for a in axes[end:]))
    return None


def transpose_problem(target: TargetDescription, in_shape: Sequence[int], perm: Sequence[int]) -> str | None:
    """The DMA transposes what is a view of its input's bytes (row-major or NHWC order), a swap
    of two blocks of axes (one relayout of the map [1, A, 1, B]), or such a swap ahead of a
    block it keeps (the A rows of the map A x B x C stored as interleaved phases)."""
    if transpose_is_view(in_shape, perm):
        return None
    blocks = transpose_blocks(in_shape, perm)
    if blocks is None:
        return f"transpose {list(perm)} of {list(in_shape)} is neither the NHWC nor the NCHW order of its input"
    a, b, c = blocks
    return None if c == 1 else interleave_problem(target, c, (1, a * b), (1, a))
