"""The native constraints and rewrites of the fixed -> npu patterns.

Constraints ask the target (through target/legality.py, the one definition of the units'
limits) and check what PDL cannot say (a value's width, its number of uses, a broadcast);
rewrites compute what the selected unit needs (a dense kernel for a dilation the unit
lacks, a table for a clamp or a requantization) or set a unit's epilogue.
"""

from __future__ import annotations

import numpy as np
from xdsl.dialects.builtin import StringAttr, UnitAttr
from xdsl.ir import Attribute, Operation, SSAValue
from xdsl.rewriter import InsertPoint

import xnpu.lowering.common_natives  # noqa: F401  (single_use, is_i8)
from xnpu.dialects import fixed, npu
from xnpu.dialects.shapes import i64_array, i64_attr, ints, shape_of
from xnpu.dialects.traits import unit_form
from xnpu.ir.locations import fused_location
from xnpu.pdl.patterns import PatternContext, native_constraint, native_rewrite
from xnpu.semantics import fixed_point, float_ops
from xnpu.target import cost, legality
from xnpu.target.phases import transpose_phase_kernel

UNIT_OPS = (npu.ConvOp, npu.EltwiseOp, npu.PoolOp)


def pending(op: Operation) -> bool:
    """A fixed op a unit pattern may still take together with its consumer (its UnitForm
    says so): a clamp or table after it waits until that is decided."""
    form = unit_form(op)
    return form is not None and form.selected_with_consumer and npu.HOST_REASON not in op.attributes


def _problem(ctx: PatternContext, op: Operation, **options) -> str | None:
    """The op's own answer (its UnitForm, dialects/fixed.py) on the pass's target."""
    form = unit_form(op)
    assert form is not None, f"{op.name} has no UnitForm"
    return form.problem(op, _target(ctx), **options)


def _uses(value: SSAValue) -> int:
    return len(list(value.uses))


def _target(ctx: PatternContext):
    assert ctx.target is not None, "fixed -> npu patterns need a target"
    return ctx.target


# --------------------------------------------------------------------------------------
# Constraints
# --------------------------------------------------------------------------------------


@native_constraint()
def rescaled_to_i8(ctx: PatternContext, producer: Operation, rescale: Operation) -> bool:
    """`rescale` is the only user of `producer`'s wide result and brings it to int8, with one
    pair or one per channel along axis 1 (what a unit's output stage does)."""
    assert isinstance(rescale, fixed.RescaleOp)
    if _uses(producer.results[0]) != 1 or fixed.width_of(rescale.result) != 8:
        return False
    return len(ints(rescale.multiplier)) == 1 or rescale.channel_axis() == 1


@native_constraint()
def one_pair(ctx: PatternContext, rescale: Operation) -> bool:
    return len(ints(rescale.multiplier)) == 1  # type: ignore[attr-defined]


@native_constraint()
def int16_stage(ctx: PatternContext, shift: Operation) -> bool:
    """seed 000's two-stage add: a truncating right shift by 0..15 into int16 (ELTWISE's pre-shift)."""
    assert isinstance(shift, fixed.ShiftOp)
    return (not shift.rounding.value.data and 0 <= shift.shift.value.data <= 15
            and fixed.width_of(shift.result) == 16 and _uses(shift.input) == 1)


@native_constraint()
def conv_fits(ctx: PatternContext, conv: Operation) -> bool:
    """The CONV unit takes this convolution (kernel, stride, dilation, pads, channels, depthwise)
    and its kernels are constants or an activation read as DW kernels (seed 002)."""
    return _problem(ctx, conv, dense_dilation=False) is None


@native_constraint()
def dilation_beyond_unit(ctx: PatternContext, conv: Operation) -> bool:
    """A dilation the CONV unit lacks, on constant kernels that fit densely (zeros between the taps)."""
    assert isinstance(conv, fixed.Conv2dOp)
    dilations = ints(conv.dilations)
    target = _target(ctx)
    return (max(dilations) > target.conv.max_dilation and isinstance(conv.weight.owner, fixed.ConstantOp)
            and legality.dense_dilated_kernel(target, shape_of(conv.weight)[2:], dilations) is not None)


@native_constraint()
def kernel_folds_into_hops(ctx: PatternContext, conv: Operation) -> bool:
    """A 1-D kernel beyond the CONV unit, on constants, that is a multiple of its stride: the
    convolution of the input's hops by the folded kernel fits (legality.hop_folded_kernel)."""
    assert isinstance(conv, fixed.Conv2dOp)
    return (isinstance(conv.weight.owner, fixed.ConstantOp) and _problem(ctx, conv, dense_dilation=False) is not None
            and _hops(conv) is not None and _problem(ctx, conv) is None)


def _hops(conv: fixed.Conv2dOp) -> tuple[int, int] | None:
    return legality.hop_folded_kernel(shape_of(conv.input), shape_of(conv.weight)[2:], ints(conv.strides),
                                      ints(conv.dilations), ints(conv.pads), conv.group.value.data)


@native_rewrite()
def hop_views(ctx: PatternContext, conv: Operation):
    """The types of a 1-D signal [1, 1, 1, L] read as hops: L/S x S rows, their transpose S x L/S
    (perm 0, 2, 1), that as the map [1, S, 1, L/S]; the perm."""
    assert isinstance(conv, fixed.Conv2dOp)
    hop, _ = _hops(conv)  # type: ignore[misc]
    frames = shape_of(conv.input)[3] // hop
    return (fixed.int_tensor(8, (1, frames, hop)), fixed.int_tensor(8, (1, hop, frames)),
            fixed.int_tensor(8, (1, hop, 1, frames)), i64_array((0, 2, 1)))


@native_rewrite()
def hop_folded_conv(ctx: PatternContext, conv: Operation):
    """The folded kernels w'[o, s, 0, j] = w[o, 0, 0, j S + s] (a constant), stride 1, no pads."""
    assert isinstance(conv, fixed.Conv2dOp)
    hop, taps = _hops(conv)  # type: ignore[misc]
    weights = conv.weight.owner.to_numpy()  # type: ignore[union-attr]
    folded = weights.reshape(weights.shape[0], taps, hop).transpose(0, 2, 1)[:, :, None, :]
    return _constant(ctx, np.ascontiguousarray(folded), 8, conv.weight.owner), i64_array([1, 1]), i64_array([0, 0, 0, 0])


@native_constraint()
def fully_connected_fits(ctx: PatternContext, gemm: Operation) -> bool:
    return _problem(ctx, gemm) is None


@native_constraint()
def eltwise_fits(ctx: PatternContext, op: Operation) -> bool:
    return _problem(ctx, op) is None


@native_constraint()
def full_shape_first(ctx: PatternContext, lhs: SSAValue, op: Operation) -> bool:
    """The ELTWISE unit reads its first operand whole: it has the result's shape."""
    return shape_of(lhs) == shape_of(op.results[0])


@native_constraint()
def pool_fits(ctx: PatternContext, pool: Operation) -> bool:
    return _problem(ctx, pool) is None


@native_constraint()
def has_unit(ctx: PatternContext, unit: Attribute) -> bool:
    """`"clamp"` or `"table"`: the target has that unit."""
    assert isinstance(unit, StringAttr)
    return legality.unit_problem(_target(ctx), unit.data) is None


@native_constraint()
def is_saturation(ctx: PatternContext, clamp: Operation) -> bool:
    """A clamp to the range every unit saturates to anyway (R3): nothing to do on int8."""
    assert isinstance(clamp, fixed.ClampOp)
    return fixed.width_of(clamp.input) == 8 and legality.clamp_is_saturation(_target(ctx), *clamp.bounds())


@native_constraint()
def is_relu(ctx: PatternContext, clamp: Operation) -> bool:
    assert isinstance(clamp, fixed.ClampOp)
    return legality.clamp_is_relu(_target(ctx), *clamp.bounds())


def epilogue_units(producer: Operation) -> list[Operation]:
    """The unit ops whose output stages run an epilogue of `producer`'s result: the unit
    itself, or every phase unit of an interleave (an element-wise epilogue commutes with the
    moves that interleave the phases), each read once by it."""
    if not isinstance(producer, npu.InterleaveOp):
        return [producer]
    phases = [value.owner for value in producer.inputs]
    return phases if len({id(op) for op in phases}) == len(phases) else []


@native_constraint()
def flags_relu(ctx: PatternContext, producer: Operation) -> bool:
    """A CONV or ELTWISE (or an interleave of their phases) whose only user this is and whose
    output stage is still free."""
    units = epilogue_units(producer)
    return (takes_epilogue(ctx, producer)
            and all(isinstance(unit, (npu.ConvOp, npu.EltwiseOp)) and unit.relu is None for unit in units))


@native_constraint()
def takes_epilogue(ctx: PatternContext, producer: Operation) -> bool:
    """A unit op (or an interleave of unit phases) whose only user this is, with no clamp or
    table after it yet."""
    units = epilogue_units(producer)
    return bool(units) and _uses(producer.results[0]) == 1 and all(
        isinstance(unit, UNIT_OPS) and _uses(unit.results[0]) == 1 and unit.clamp is None and unit.table is None
        for unit in units)


@native_constraint()
def move_fits(ctx: PatternContext, op: Operation) -> bool:
    """The DMA has a pattern for this data movement (a transpose that is a view of its input's
    bytes, a channel concatenation): the op's own answer (its UnitForm)."""
    return _problem(ctx, op) is None


def _blocks(op: Operation) -> tuple[int, int, int] | None:
    """(A, B, C) of a transpose swapping two blocks of axes ahead of a kept one, when it is no view."""
    in_shape, perm = shape_of(op.operands[0]), ints(op.perm)  # type: ignore[attr-defined]
    return None if legality.transpose_is_view(in_shape, perm) else legality.transpose_blocks(in_shape, perm)


@native_constraint()
def swaps_axis_blocks(ctx: PatternContext, op: Operation) -> bool:
    """A transpose that is no view of its input's bytes but swaps two blocks of its axes."""
    blocks = _blocks(op)
    return blocks is not None and blocks[2] == 1


@native_constraint()
def swaps_axis_blocks_ahead(ctx: PatternContext, op: Operation) -> bool:
    """A transpose that swaps two blocks of axes ahead of a block it keeps last (attention
    heads), within the DMA's strides."""
    blocks = _blocks(op)
    return blocks is not None and blocks[2] > 1 and _problem(ctx, op) is None


@native_rewrite()
def axis_block_map(ctx: PatternContext, op: Operation):
    """The map [1, A, 1, B] of a block-swapping transpose's input, the map of its NHWC order
    [1, 1, B, A] (whose row-major bytes are the result's) and that order's perm."""
    a, b, _ = _blocks(op)  # type: ignore[misc]
    return fixed.int_tensor(8, (1, a, 1, b)), fixed.int_tensor(8, (1, 1, b, a)), i64_array((0, 2, 3, 1))


@native_rewrite()
def axis_block_rows(ctx: PatternContext, op: Operation):
    """A transpose swapping blocks A and B ahead of C, as DMA moves of the NHWC map with A rows
    of B pixels of C channels: the row-major map [1, A, B, C] and its NHWC view [1, C, A, B]
    (perm 0, 3, 1, 2), the interleave of its A rows as phases (row a from offset (a, 0) into
    columns a, a + A, ...) into [1, C, 1, B A], and that map's row-major view [1, 1, B A, C]
    (perm 0, 2, 3, 1)."""
    a, b, c = _blocks(op)  # type: ignore[misc]
    return (fixed.int_tensor(8, (1, a, b, c)), i64_array((0, 3, 1, 2)), fixed.int_tensor(8, (1, c, a, b)),
            i64_array((1, a)), i64_array([v for row in range(a) for v in (row, 0)]), fixed.int_tensor(8, (1, c, 1, b * a)),
            i64_array((0, 2, 3, 1)), fixed.int_tensor(8, (1, 1, b * a, c)))


@native_rewrite()
def block_rows(ctx: PatternContext, op: Operation, rows: SSAValue):
    """The A phases of axis_block_rows: each the whole map, read from its own row."""
    return [rows] * _blocks(op)[0]  # type: ignore[index]


@native_constraint()
def input_selected(ctx: PatternContext, value: SSAValue) -> bool:
    """`value` does not come from a fixed op a unit pattern may still consume (one placed on the
    host will not be: lower-fixed-to-npu's host fallback marks it)."""
    return not (isinstance(value.owner, Operation) and pending(value.owner))


# --------------------------------------------------------------------------------------
# Rewrites
# --------------------------------------------------------------------------------------


def _constant(ctx: PatternContext, values: np.ndarray, bits: int, like: Operation | None = None) -> SSAValue:
    """A new fixed.constant before the root; a compressed layer's codebook marker moves with it."""
    constant = fixed.ConstantOp(values, bits)
    if like is not None:
        constant.attributes.update({k: v for k, v in like.attributes.items() if k.startswith("fixed.codebook")})
    constant.location = ctx.root.location  # type: ignore[union-attr]
    ctx.rewriter.insert(constant, InsertPoint.before(ctx.root))  # type: ignore[union-attr]
    return constant.result


@native_rewrite()
def dense_dilated_conv(ctx: PatternContext, conv: Operation):
    """(weights, dilations) of the dilation-1 kernel with zeros between the taps: exact, as zero
    taps add nothing to R13's sum."""
    assert isinstance(conv, fixed.Conv2dOp)
    weights = conv.weight.owner.to_numpy()  # type: ignore[union-attr]
    dilations = ints(conv.dilations)
    extent = legality.dense_dilated_kernel(_target(ctx), weights.shape[2:], dilations)
    assert extent is not None
    dense = np.zeros((*weights.shape[:2], *extent), dtype=weights.dtype)
    dense[:, :, :: dilations[0], :: dilations[1]] = weights
    return _constant(ctx, dense, 8, conv.weight.owner), i64_array([1, 1])


@native_rewrite()
def fully_connected_weights(ctx: PatternContext, gemm: Operation):
    """The gemm's weights as M x K (transposed once when B is K x M) and its bias as one
    int32 per output column (a range: empty without one)."""
    assert isinstance(gemm, fixed.GemmOp)
    b_op = gemm.b.owner
    weight = gemm.b if gemm.trans_b.value.data else _constant(ctx, b_op.to_numpy().T, 8, b_op)  # type: ignore[union-attr]
    if gemm.bias is None:
        return weight, []
    columns = shape_of(gemm.result)[1]
    bias = gemm.bias.owner.to_numpy()  # type: ignore[union-attr]
    if shape_of(gemm.bias) == (columns,):
        return weight, [gemm.bias]
    return weight, [_constant(ctx, np.broadcast_to(bias.reshape(-1), (columns,)), 32)]


@native_rewrite()
def eltwise_operands(ctx: PatternContext, op: Operation):
    """(lhs, rhs, op name, lhs/rhs multipliers and shifts) with the full-shape operand first:
    an add of a broadcast first operand swaps its operands and their rescales."""
    assert isinstance(op, fixed.WideningAddOp)
    lm, ls, rm, rs = (i64_attr(v) for v in op.params())
    lhs, rhs = op.lhs, op.rhs
    if shape_of(lhs) != shape_of(op.result):
        lhs, rhs, lm, ls, rm, rs = rhs, lhs, rm, rs, lm, ls
    return lhs, rhs, StringAttr(op.name.split(".")[1]), lm, ls, rm, rs


@native_rewrite()
def single_pair(ctx: PatternContext, rescale: Operation):
    """The one (multiplier, shift) of a rescale as the scalar attributes ELTWISE takes."""
    return tuple(i64_attr(ints(rescale.properties[name])[0]) for name in ("multiplier", "shift"))


@native_rewrite()
def requantize_table(ctx: PatternContext, rescale: Operation):
    """R9 on every int8 code: an int8 -> int8 rescale is exact as a 256-entry table."""
    m, s = ints(rescale.multiplier), ints(rescale.shift)  # type: ignore[attr-defined]
    codes = np.arange(-fixed_point.TABLE_OFFSET, fixed_point.TABLE_SIZE - fixed_point.TABLE_OFFSET)
    return npu.table_attr(fixed_point.rescale(codes, m[0], s[0], 8))


def clamp_table(low: int, high: int) -> np.ndarray:
    """R8 as a table; the entry for -128 (never produced, R2) is kept inside [-127, 127]."""
    table = np.clip(np.arange(-fixed_point.TABLE_OFFSET, fixed_point.TABLE_SIZE - fixed_point.TABLE_OFFSET), low, high)
    table[0] = max(min(-fixed_point.qmax(8), high), low)
    return table


@native_rewrite("clamp_table")
def clamp_table_rewrite(ctx: PatternContext, clamp: Operation):
    assert isinstance(clamp, fixed.ClampOp)
    return npu.table_attr(clamp_table(*clamp.bounds()))


def _with(ctx: PatternContext, op: Operation, **properties: Attribute) -> Operation:
    """A new `op` (not in the IR: the pattern's `pdl.replace` inserts it) that also computes the
    pattern's root: the given properties set, its location naming both ONNX nodes."""
    new = type(op).create(operands=list(op.operands), result_types=[r.type for r in op.results],
                          properties={**op.properties, **properties}, attributes=dict(op.attributes))
    new.location = fused_location(op, ctx.root)  # type: ignore[arg-type]
    return new


def _with_epilogue(ctx: PatternContext, producer: Operation, **epilogue: Attribute) -> Operation:
    """The producer rebuilt with the epilogue in its output stage: a unit, or an interleave of
    new phase units (an element-wise epilogue commutes with the moves that interleave them)."""
    units = epilogue_units(producer)
    if units == [producer]:
        return _with(ctx, producer, **epilogue)
    phases = [_with(ctx, unit, **epilogue).results[0] for unit in units]
    interleave = type(producer).create(operands=phases, result_types=[r.type for r in producer.results],
                                       properties=dict(producer.properties), attributes=dict(producer.attributes))
    interleave.location = producer.location
    return interleave


@native_rewrite()
def naming_the_root(ctx: PatternContext, producer: Operation):
    """A clamp that is the saturation its producer applies anyway: the producer, its location
    also naming the clamp's ONNX node, so profiles still attribute it."""
    return _with(ctx, producer)


@native_constraint()
def names_nodes(ctx: PatternContext, producer: Operation) -> bool:
    """An op whose location a profile reads (not a program input's quantize), and that a
    native can rebuild (no body: a host segment names its own ops)."""
    return not isinstance(producer, fixed.QuantizeOp) and not producer.regions


@native_rewrite()
def with_relu(ctx: PatternContext, producer: Operation):
    """The unit (each phase unit) with its relu flag: the clamp to [0, smax]."""
    return _with_epilogue(ctx, producer, relu=UnitAttr())


@native_rewrite()
def with_clamp(ctx: PatternContext, producer: Operation, clamp: Operation):
    """The unit (each phase unit) with a clamp of its result in SRAM: a CLAMP where the target
    has the unit, else the clamp's exact TABLE."""
    assert isinstance(clamp, fixed.ClampOp)
    if legality.unit_problem(_target(ctx), "clamp") is None:
        return _with_epilogue(ctx, producer, clamp=i64_array(clamp.bounds()))
    return _with_epilogue(ctx, producer, table=npu.table_attr(clamp_table(*clamp.bounds())))


@native_rewrite()
def with_table(ctx: PatternContext, producer: Operation, table: Operation):
    """The unit (each phase unit) with the table as its epilogue."""
    assert isinstance(table, fixed.TableOp)
    return _with_epilogue(ctx, producer, table=npu.table_attr(table.entries()))


@native_constraint()
def clamp_or_table_unit(ctx: PatternContext, clamp: Operation) -> bool:
    """A unit's result can be clamped in SRAM: by a CLAMP, or exactly by a TABLE."""
    target = _target(ctx)
    return legality.unit_problem(target, "clamp") is None or legality.unit_problem(target, "table") is None


@native_constraint()
def widening_add(ctx: PatternContext, op: Operation) -> bool:
    """fixed.add or fixed.sub: R10's adder."""
    return isinstance(op, fixed.WideningAddOp)


# --------------------------------------------------------------------------------------
# Upsampling: phases (target/phases.py) computed by units and interleaved by the DMA
# --------------------------------------------------------------------------------------


@native_constraint()
def resize_fits(ctx: PatternContext, op: Operation) -> bool:
    """A nearest resize as DMA moves, or a linear one as phase convolutions, on this target."""
    return _problem(ctx, op) is None


@native_constraint()
def replicates(ctx: PatternContext, op: Operation) -> bool:
    """Every output phase is the input itself (no edge pad): pixel replication."""
    return all(axis is not None and axis.replicates for axis in op.phase_axes())


@native_constraint()
def conv_transpose_fits(ctx: PatternContext, op: Operation) -> bool:
    return _problem(ctx, op) is None


@native_rewrite()
def edge_pad(ctx: PatternContext, op: Operation):
    """The edge pad (top, left, bottom, right) that turns the phases' clamps into reads, and
    the padded map's type."""
    rows, cols = op.phase_axes()
    pads = (rows.pad[0], cols.pad[0], rows.pad[1], cols.pad[1])
    n, c, h, w = shape_of(op.operands[0])
    return i64_array(pads), fixed.int_tensor(8, (n, c, h + pads[0] + pads[2], w + pads[1] + pads[3]))


@native_rewrite()
def nearest_phases(ctx: PatternContext, op: Operation, source: SSAValue):
    """A nearest resize's phases are all `source` (the input or its edge pad), read from their offsets."""
    rows, cols = op.phase_axes()
    return [source] * (rows.factor * cols.factor)


@native_rewrite()
def phase_interleave(ctx: PatternContext, op: Operation):
    """(factors, offsets) of the interleave of a resize's or a transposed convolution's phases."""
    if isinstance(op, fixed.ConvTranspose2dOp):
        rows, cols = op.phase_axes()
        factors = ints(op.strides)
        row_offsets, col_offsets = [p.offset for p in rows], [p.offset for p in cols]
    else:
        row_axis, col_axis = op.phase_axes()
        factors = (row_axis.factor, col_axis.factor)
        row_offsets, col_offsets = row_axis.offsets(), col_axis.offsets()
    offsets = [v for top in row_offsets for left in col_offsets for v in (top, left)]
    return i64_array(factors), i64_array(offsets)


def _phase_index(attr: Attribute) -> int:
    return attr.value.data  # type: ignore[attr-defined]


@native_rewrite()
def linear_phase(ctx: PatternContext, op: Operation, row_phase: Attribute, col_phase: Attribute):
    """R17 phase (a, b) of a linear resize: the depthwise 2x2 kernel outer(row weights, column
    weights), the same for every channel, over the edge-padded input (valid: no zero pad);
    its group and its result type. The sums are the fixed op's, so its rescale applies as it is."""
    assert isinstance(op, fixed.ResizeLinearOp)
    rows, cols = op.phase_axes()
    kernel = np.outer(rows.phases[_phase_index(row_phase)].weights, cols.phases[_phase_index(col_phase)].weights)
    n, c, h, w = shape_of(op.input)
    weight = _constant(ctx, np.broadcast_to(kernel, (c, 1, *kernel.shape)), 8)
    padded = (h + sum(rows.pad), w + sum(cols.pad))
    out_hw = tuple(size - taps + 1 for size, taps in zip(padded, kernel.shape))
    return weight, i64_attr(c), fixed.int_tensor(8, (n, c, *out_hw))


@native_rewrite()
def conv_transpose_phase(ctx: PatternContext, op: Operation, row_phase: Attribute, col_phase: Attribute):
    """R18 phase (a, b) of a transposed convolution: the sub-kernel of its convolution form
    (transposed per group, flipped) with the phase's taps, its zero pads and result type. The
    sums are the fixed op's without the inserted zeros' products, so its rescale applies as it is."""
    assert isinstance(op, fixed.ConvTranspose2dOp)

    rows, cols = (axis[_phase_index(p)] for axis, p in zip(op.phase_axes(), (row_phase, col_phase)))
    weights = op.weight.owner.to_numpy()  # type: ignore[union-attr]
    conv_weight, _ = float_ops.conv_transpose_as_conv(weights, (0, 0, 0, 0), (1, 1), (0, 0), op.group.value.data)
    kernel = transpose_phase_kernel(conv_weight, rows, cols, ints(op.strides))
    pads = (rows.pads[0], cols.pads[0], rows.pads[1], cols.pads[1])
    n, _, h, w = shape_of(op.input)
    out_hw = (h + rows.pads[0] + rows.pads[1] - rows.taps + 1, w + cols.pads[0] + cols.pads[1] - cols.taps + 1)
    return (_constant(ctx, kernel, 8, op.weight.owner), i64_array(pads),
            fixed.int_tensor(8, (n, conv_weight.shape[0], *out_hw)))


def _per_channel_constant(x: SSAValue, c: SSAValue) -> bool:
    xs, cs = shape_of(x), shape_of(c)
    return len(xs) == 4 and xs[0] == 1 and (int(np.prod(cs)) == 1 or cs == (1, xs[1], 1, 1))


@native_constraint()
def conv_cheaper_than_eltwise(ctx: PatternContext, mul: Operation, x: SSAValue) -> bool:
    """x * c (c one value or one per channel of an NCHW map) as a depthwise 1x1 CONV costs fewer
    cycles than the ELTWISE mul on this target (or the ELTWISE unit has no mul): the compute
    instruction and the constant's loads, by target/cost.py's formulas."""
    (c,) = [v for v in mul.operands if v is not x]
    target = _target(ctx)
    if not _per_channel_constant(x, c) or shape_of(mul.results[0]) != shape_of(x):
        return False
    if legality.conv_problem(target, kernel=(1, 1), strides=(1, 1), dilations=(1, 1), pads=(0, 0, 0, 0),
                             in_channels=1, depthwise=True):
        return False
    if legality.eltwise_problem(target, "mul"):
        return True
    _, channels, h, w = shape_of(x)
    return cost.depthwise_scale_cycles(target, h, w, channels) < cost.eltwise_scale_cycles(target, h, w, channels)


@native_rewrite()
def channel_kernels(ctx: PatternContext, x: SSAValue, c: SSAValue):
    """The constant as C depthwise 1x1 kernels (one value broadcast to every channel), and the
    conv's strides, pads, dilations and group."""
    channels = shape_of(x)[1]
    codes = c.owner.to_numpy().reshape(-1)  # type: ignore[union-attr]
    kernels = np.broadcast_to(codes, (channels,)).reshape(channels, 1, 1, 1)
    return (_constant(ctx, kernels, 8, c.owner), i64_array([1, 1]), i64_array([0, 0, 0, 0]), i64_array([1, 1]),
            i64_attr(channels))


@native_rewrite()
def reshaped_constant(ctx: PatternContext, c: SSAValue, result_type: Attribute):
    """The constant's codes in the reshape's result shape."""
    codes = c.owner.to_numpy()  # type: ignore[union-attr]
    return _constant(ctx, codes.reshape(shape_of(result_type)), fixed.width_of(c), c.owner)
