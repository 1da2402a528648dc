"""What one accelerator operation may be on a target: the single definition of the limits.

Every question "can this target run that?" is answered here, from the target's description
(target/*.toml), and nowhere else:

- the `npu` dialect's verifiers check each op of a module that names its target
  (`npu.target`) with the `*_problem` functions below;
- the `fixed -> npu` patterns ask the same functions (native constraints `conv_fits`,
  `eltwise_fits`, ...) before they select a unit, so a pattern never builds an op the
  verifier would reject;
- `TargetDescription.check_instruction` (the `isa` verifier and the simulator) checks each
  instruction's fields with them;
- `driver/capabilities.py` words them for `xnpu-opt --supported-ops` and
  docs/supported-ops.md.

Each function returns None when the operation is legal, else the reason in a few words
("kernel 9x9 is outside [1, 7]"), which callers wrap with the op, its ONNX node and the target.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Sequence
from typing import TYPE_CHECKING

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
# One fixed-level op instance: can the unit that would run it take it as it stands?
# (legalize asks this before rewriting, lower-fixed-to-npu before selecting a unit)
# --------------------------------------------------------------------------------------


def fixed_conv_problem(target: TargetDescription, conv, dense_dilation: bool = False) -> str | None:
    """A fixed.conv2d on the CONV unit: kernels that are constants or an activation read as
    DW kernels (seed 002), constant biases, the unit's limits. With `dense_dilation`, a
    dilation beyond the unit's limit counts as the dense kernel lower-fixed-to-npu makes of it."""
    from xnpu.dialects import fixed
    from xnpu.dialects.shapes import ints, shape_of

    x, w = shape_of(conv.input), shape_of(conv.weight)
    group = conv.group.value.data
    depthwise = group > 1 and group == x[1] == w[0]
    constant_kernels = isinstance(conv.weight.owner, fixed.ConstantOp)
    if not constant_kernels and not activation_kernels(conv.weight):
        return "convolution weights must be constants or an activation reshaped to kernels"
    if conv.bias is not None and not isinstance(conv.bias.owner, fixed.ConstantOp):
        return "convolution biases must be constants"
    kernel, dilations = w[2:], ints(conv.dilations)
    if dense_dilation and constant_kernels and max(dilations) > target.conv.max_dilation:
        extent = dense_dilated_kernel(target, kernel, dilations)
        if extent is not None:
            kernel, dilations = extent, (1, 1)
    return conv_problem(target, kernel=kernel, strides=ints(conv.strides), dilations=dilations,
                        pads=ints(conv.pads), in_channels=w[1], depthwise=depthwise)


def activation_kernels(value) -> bool:
    """Seed 002: O x 1 x KH x KW kernels that are an activation reshaped (its row-major bytes
    are the DW kernel layout)."""
    from xnpu.dialects import fixed, npu
    from xnpu.dialects.shapes import shape_of

    shape = shape_of(value)
    return isinstance(value.owner, (npu.ReshapeOp, fixed.ReshapeOp)) and len(shape) == 4 and shape[1] == 1


def fixed_gemm_problem(target: TargetDescription, gemm) -> str | None:
    """A fixed.gemm as a fully connected layer on the CONV unit (1x1, K input channels)."""
    from xnpu.dialects import fixed
    from xnpu.dialects.shapes import shape_of

    if not isinstance(gemm.b.owner, fixed.ConstantOp):
        return "gemm B must be a constant (the weights)"
    if gemm.bias is not None and not isinstance(gemm.bias.owner, fixed.ConstantOp):
        return "gemm bias must be a constant"
    columns = shape_of(gemm.result)[1]
    bias = () if gemm.bias is None else shape_of(gemm.bias)
    if gemm.bias is not None and bias not in ((columns,), (1, columns)) and math.prod(bias) != 1:
        return f"gemm bias of shape {list(bias)} is not one value per output column"
    return conv_problem(target, kernel=(1, 1), strides=(1, 1), dilations=(1, 1), pads=(0, 0, 0, 0),
                        in_channels=shape_of(gemm.a)[1], depthwise=False)


def fixed_eltwise_problem(target: TargetDescription, op) -> str | None:
    """A fixed.add/sub/mul on the ELTWISE unit: the op, and operands it can read (the first
    of the result's shape, after swapping a commutative add or mul; the second broadcast
    per channel, as one value, or not at all)."""
    from xnpu.dialects import npu
    from xnpu.dialects.shapes import shape_of

    kind = op.name.split(".")[1]
    problem = eltwise_problem(target, kind)
    if problem:
        return problem
    lhs, rhs = (shape_of(v) for v in op.operands)
    result = shape_of(op.results[0])
    if lhs != result and (kind == "sub" or rhs != result):
        return f"broadcasting the first operand {list(lhs)} to {list(result)} has no instruction"
    if lhs != result:
        lhs, rhs = rhs, lhs
    if npu.broadcast_kind(lhs, rhs) is None:
        return f"broadcasting {list(rhs)} to {list(lhs)} has no instruction (only per-channel or scalar)"
    return None


def fixed_pool_problem(target: TargetDescription, pool) -> str | None:
    from xnpu.dialects import fixed
    from xnpu.dialects.shapes import ints

    if isinstance(pool, fixed.GlobalAvgPoolOp):
        return pool_problem(target, "global_avg")
    if isinstance(pool, fixed.MaxPoolOp) and any(d != 1 for d in pool.pool_dilations()):
        return "dilated max pooling has no instruction"
    if fixed.width_of(pool.result) != 8:
        return "pooling must produce int8"
    kind = "max" if isinstance(pool, fixed.MaxPoolOp) else "avg"
    return pool_problem(target, kind, ints(pool.kernel_shape), ints(pool.strides), ints(pool.pads))


def relu_flaggable(clamp) -> bool:
    """A clamp whose input is the output stage of a CONV or ELTWISE (the rescale after a
    conv, gemm, add, sub, mul or int16 stage, used by nothing else; or after a transposed
    convolution or linear resize, whose phase CONVs each take the flag): its relu flag."""
    from xnpu.dialects import fixed

    producer = clamp.operands[0].owner
    if not isinstance(producer, fixed.RescaleOp) or len(list(producer.result.uses)) != 1:
        return False
    return isinstance(producer.input.owner, (fixed.Conv2dOp, fixed.GemmOp, fixed.AddOp, fixed.SubOp, fixed.MulOp,
                                             fixed.ShiftOp, fixed.ConvTranspose2dOp, fixed.ResizeLinearOp))


def fixed_clamp_problem(target: TargetDescription, clamp) -> str | None:
    """A fixed.clamp runs as it stands on a CLAMP unit, as the saturation every unit applies,
    or as the relu flag of its producer."""
    low, high = clamp.bounds()
    if target.has_clamp or clamp_is_saturation(target, low, high):
        return None
    if clamp_is_relu(target, low, high) and relu_flaggable(clamp):
        return None
    return f"the target has no clamp unit for [{low}, {high}]"


# --------------------------------------------------------------------------------------
# Upsampling: DMA moves and phase decompositions (target/phases.py)
# --------------------------------------------------------------------------------------


def interleave_problem(target: TargetDescription, channels: int, out_hw: Sequence[int], factors: Sequence[int]) -> str | None:
    """DMA stores of phase maps every factors[0]-th row and factors[1]-th pixel of an
    out_hw x channels map (factors 1, 1: a plain copy): the DMA word's dimension and stride
    fields must hold them."""
    from xnpu.target.encoding import FORMATS

    dma = FORMATS["DMA"]
    pixel = factors[1] * channels
    return outside_limits((
        ("map", (*out_hw, channels), 1, dma.field("d0").maximum),
        ("DMA pixel stride", (pixel,), 1, dma.field("ddr_pixel_stride").maximum),
        ("DMA row stride", (factors[0] * out_hw[1] * channels,), 1, dma.field("ddr_row_stride").maximum),
    ))


def resize_axes(op):
    """The phases (target/phases.py) of a fixed.resize or fixed.resize_linear along H and W;
    an axis without phases is None."""
    from xnpu.dialects import fixed
    from xnpu.dialects.shapes import ints, shape_of
    from xnpu.target.phases import resize_axis

    h, w = shape_of(op.input)[2:]
    if isinstance(op, fixed.ResizeLinearOp):
        rows, row_weights, cols, col_weights = op.taps()
        return resize_axis(rows, row_weights, h), resize_axis(cols, col_weights, w)
    return resize_axis(ints(op.rows), None, h), resize_axis(ints(op.cols), None, w)


def _not_phased(what: str, axes) -> str | None:
    for name, axis in zip(("rows", "columns"), axes):
        if axis is None:
            return f"{what}: its output {name} read pixels or weights that vary with the position (as align_corners does); no unit computes them"
    return None


def fixed_resize_problem(target: TargetDescription, op) -> str | None:
    """A nearest fixed.resize as DMA moves: every output phase a (clamped) shifted copy of the
    input (an edge pad and strided stores); align_corners' position-dependent maps are not."""
    from xnpu.dialects import fixed
    from xnpu.dialects.shapes import shape_of

    if fixed.width_of(op.input) != 8:
        return "only int8 maps are moved by the DMA"
    axes = resize_axes(op)
    problem = _not_phased("nearest resize", axes)
    if problem:
        return problem
    n, c, oh, ow = shape_of(op.result)
    return interleave_problem(target, c, (oh, ow), (axes[0].factor, axes[1].factor))


def fixed_resize_linear_problem(target: TargetDescription, op) -> str | None:
    """A fixed.resize_linear as 4 depthwise 2x2 convolutions of the edge-padded input, one per
    output phase, interleaved by the DMA: x2 in both axes with the same integer weights in
    every phase (half_pixel: 1, 3, 3, 9); align_corners' weights vary with the position."""
    from xnpu.dialects.shapes import shape_of

    axes = resize_axes(op)
    problem = _not_phased("linear resize", axes)
    if problem:
        return problem
    factors = (axes[0].factor, axes[1].factor)
    if factors != (2, 2):
        return f"linear resize by {factors[0]}x{factors[1]}: the phase pattern is x2 in both axes"
    largest = max(a * b for p in axes[0].phases for q in axes[1].phases for a in p.weights for b in q.weights)
    if largest > 127:
        return f"linear resize kernel weight {largest} does not fit int8"
    n, c, oh, ow = shape_of(op.result)
    return (conv_problem(target, kernel=(2, 2), strides=(1, 1), dilations=(1, 1), pads=(0, 0, 0, 0), in_channels=1,
                         depthwise=True)
            or interleave_problem(target, c, (oh, ow), factors))


def transpose_axes(op):
    """The phases (target/phases.py) of a fixed.conv_transpose2d along H and W (dilation 1)."""
    from xnpu.dialects.shapes import ints, shape_of
    from xnpu.target.phases import transpose_axis

    x, w, y = shape_of(op.input), shape_of(op.weight), shape_of(op.result)
    strides, pads = ints(op.strides), ints(op.pads)
    return tuple(transpose_axis(x[2 + i], y[2 + i], w[2 + i], strides[i], pads[i]) for i in range(2))


def fixed_conv_transpose_problem(target: TargetDescription, op) -> str | None:
    """A fixed.conv_transpose2d as 4 convolutions by sub-kernels (one per output phase),
    interleaved by the DMA: stride 2, dilation 1, a kernel of at least 2, constant weights
    and bias, phase convolutions within the CONV unit's limits."""
    from xnpu.dialects import fixed
    from xnpu.dialects.shapes import ints, shape_of

    strides, dilations = ints(op.strides), ints(op.dilations)
    if tuple(strides) != (2, 2):
        return f"transposed convolution stride {strides[0]}x{strides[1]}: the phase pattern is stride 2x2"
    if any(d != 1 for d in dilations):
        return "a dilated transposed convolution has no phase pattern"
    if not isinstance(op.weight.owner, fixed.ConstantOp):
        return "transposed convolution weights must be constants"
    if op.bias is not None and not isinstance(op.bias.owner, fixed.ConstantOp):
        return "transposed convolution biases must be constants"
    axes = transpose_axes(op)
    if axes[0] is None or axes[1] is None:
        return f"kernel {'x'.join(map(str, shape_of(op.weight)[2:]))} is smaller than the stride: a phase has no tap"
    x, w, y = shape_of(op.input), shape_of(op.weight), shape_of(op.result)
    group = op.group.value.data
    depthwise = group > 1 and group == x[1] == y[1]
    for rows in axes[0]:
        for cols in axes[1]:
            problem = conv_problem(target, kernel=(rows.taps, cols.taps), strides=(1, 1), dilations=(1, 1),
                                   pads=(rows.pads[0], cols.pads[0], rows.pads[1], cols.pads[1]),
                                   in_channels=w[0] // group, depthwise=depthwise)
            if problem:
                return f"phase convolution: {problem}"
    return interleave_problem(target, y[1], y[2:], strides)
