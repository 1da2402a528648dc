"""Lowering `nn` -> `fixed`: a calibrated float graph becomes integer arithmetic.

Every nn op is rewritten, on its own, into an island `fixed.quantize` (each float input,
at that value's scale) -> integer ops -> `fixed.dequantize` (at the op's output scale).
`fold-quantize-pairs` then removes each dequantize -> quantize pair between two islands
(or turns it into one `fixed.rescale` where the scales differ), so a whole network is
integer from its input quantize to its output dequantize.

Most islands are PDL patterns, the `*.mlir` files of this directory (add, sub, mul, the
clamps, tables, pools, data movement, and the compile-time quantize of a constant): the
pattern says which fixed ops replace the float op, and the native rewrites of `natives.py`
compute their numbers. The rest stay the Python patterns below, where a pattern would
only wrap Python: conv/gemm/matmul (per-channel weights, int32 biases, codebooks), batch
norm and division by a constant (float algebra before lowering), concat (any number of
inputs). docs/extending.md walks through the split and how to add a lowering.

Scales come from calibration (`nn.scale`, `nn.weight_scales`; see transforms/calibrate.py), and
with `nn.input_mean` a weighted op's bias takes out the mean error of its int8 weights
(weight_error_bias).
Before rewriting, `refine_scales` moves scales where that saves a rounding: an op that
does not change the range of its input (max pool, reshape, flatten, transpose) keeps its
input's scale, and a rescaling producer (conv, gemm, add, ...) feeding only a relu/clip
takes the activation's scale, so the activation becomes a bare clamp.

The integer parameters (multipliers, shifts, int32 biases, tables) are computed from the
scales with the functions of `xnpu.semantics.fixed_point`; docs/fixed-point.md says what
each one means (rule numbers in comments).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import numpy as np
from xdsl.context import Context
from xdsl.dialects import func
from xdsl.dialects.builtin import DenseArrayBase, FloatAttr, ModuleOp, StringAttr
from xdsl.ir import BlockArgument, Operation, SSAValue
from xdsl.passes import ModulePass
from xdsl.pattern_rewriter import (
    GreedyRewritePatternApplier,
    PatternRewriter,
    PatternRewriteWalker,
    RewritePattern,
    op_type_rewrite_pattern,
)
from xdsl.transforms.dead_code_elimination import dce

from xnpu.core.errors import XnpuError
from xnpu.dialects import fixed, nn
from xnpu.ir.io import describe_op
from xnpu.lowering.nn_to_fixed import natives  # noqa: F401  (registers the pattern files' natives)
from xnpu.lowering.nn_to_fixed.scales import (
    DATA_BITS,
    INPUT_MEAN_ATTR,
    SCALE_ATTR,
    WEIGHT_SCALES_ATTR,
    refine_scales,
    scale_of,
    symmetric_scale,
)
from xnpu.pdl.driver import PatternSet
from xnpu.pdl.patterns import Pattern, PatternContext, load_natives, load_patterns, split_paths
from xnpu.semantics import fixed_point, float_ops
from xnpu.transforms.compress_weights import carry_codebook

# --------------------------------------------------------------------------------------
# Building blocks shared by the patterns
# --------------------------------------------------------------------------------------


FLOAT_REASON = "nn.float_reason"  # why lower-nn-to-fixed left an op float (for the host)


class Unlowerable(XnpuError):
    """An nn op a lowering pattern cannot rewrite to integers, and why: with host fallback the
    op stays float for the host (the reason goes with it as `nn.float_reason`), else it is the error."""

    def __init__(self, op: Operation, reason: str):
        super().__init__(f"{describe_op(op)}: {reason}")
        self.reason = reason


class OrStayFloat(RewritePattern):
    """`pattern`, except that an op it cannot lower stays float with its reason (host fallback)."""

    def __init__(self, pattern: RewritePattern):
        self.pattern = pattern

    def match_and_rewrite(self, op: Operation, rewriter: PatternRewriter):
        if FLOAT_REASON in op.attributes:
            return
        try:
            self.pattern.match_and_rewrite(op, rewriter)
        except Unlowerable as error:
            op.attributes[FLOAT_REASON] = StringAttr(error.reason)


class Island:
    """The ops one nn op becomes; `int_input` quantizes, `finish` dequantizes the result."""

    def __init__(self, source: Operation):
        self.source = source
        self.ops: list[Operation] = []

    def add(self, op: Operation) -> Operation:
        op.location = self.source.location
        self.ops.append(op)
        return op

    def int_input(self, value: SSAValue, scale: float) -> SSAValue:
        """`value` quantized at `scale` (a constant's quantize is folded by @quantize_constant)."""
        return self.add(fixed.QuantizeOp(value, scale, DATA_BITS)).results[0]

    def rescale(self, value: SSAValue, factor, bits: int = DATA_BITS, axis: int | None = None, scale=None) -> SSAValue:
        multiplier, shift = fixed_point.multiplier_from_scale(factor)
        return self.add(fixed.RescaleOp(value, multiplier, shift, bits, axis, scale=scale)).results[0]

    def to_scale(self, value: SSAValue, s_from: float, s_to: float) -> SSAValue:
        """`value` (int8 at s_from) at s_to: itself when the scales agree, else one rescale."""
        return value if s_from == s_to else self.rescale(value, s_from / s_to, scale=s_to)

    def finish(self, rewriter: PatternRewriter, value: SSAValue, scale: float) -> None:
        self.add(fixed.DequantizeOp(value, scale))
        rewriter.replace(self.source, self.ops, [self.ops[-1].results[0]])


def quantize_weights(weights: np.ndarray, scales: np.ndarray, axis: int | None) -> np.ndarray:
    """Symmetric int8 weights, one scale per slice along `axis` (or one for all); with
    `axis` None, `scales` already broadcasts against the weights."""
    if axis is not None:
        shape = [1] * weights.ndim
        if scales.size > 1:
            shape[axis] = scales.size
        scales = scales.reshape(shape)
    return fixed_point.quantize(weights.astype(np.float64) / scales, 1.0, DATA_BITS)


def weight_scales(op: Operation, weights: np.ndarray, axis: int) -> np.ndarray:
    """Calibration's `nn.weight_scales`, or per-channel max|w| / 127 when absent."""
    attr = op.attributes.get(WEIGHT_SCALES_ATTR)
    if isinstance(attr, DenseArrayBase):
        scales = np.asarray(attr.get_values(), dtype=np.float64)
    else:
        moved = np.moveaxis(weights, axis, 0).reshape(weights.shape[axis], -1)
        scales = np.asarray([symmetric_scale(row) for row in moved])
    return np.where(scales > 0, scales, 1.0)


def weight_constant(op: Operation, codes: np.ndarray) -> fixed.ConstantOp:
    """The int8 weight constant; a compress-weights layer's codebook marker moves onto it."""

    constant = fixed.ConstantOp(codes, DATA_BITS)
    carry_codebook(op, constant)
    return constant


def _constant(value: SSAValue | None, op: Operation, role: str) -> np.ndarray | None:
    if value is None:
        return None
    if not isinstance(value.owner, nn.ConstantOp):
        raise Unlowerable(op, f"the {role} must be a constant to lower to fixed point")
    return value.owner.to_numpy()


def weight_error_bias(op: Operation, weights: np.ndarray, rounded: np.ndarray, group: int = 1,
                      trans_b: bool = True) -> np.ndarray | None:
    """What the int8 weights (`rounded`: their codes times their scales) add to each output channel
    on average, against the float `weights`: their difference times calibration's `nn.input_mean`
    (transforms/calibrate.py input_mean_attr), summed per output channel. A conv's weights are
    O x C/group x KH x KW, a dense op's K x N (N x K with `trans_b`). None without the attribute,
    or where it does not fit the weights (a pass changed the op after calibration)."""
    attr = op.attributes.get(INPUT_MEAN_ATTR)
    if not isinstance(attr, DenseArrayBase):
        return None
    mean = np.asarray(attr.get_values(), dtype=np.float64)
    error = rounded.astype(np.float64) - weights.astype(np.float64)
    if error.ndim == 4:
        outputs, per_group, kh, kw = error.shape
        if mean.size != group * per_group * kh * kw or outputs % group:
            return None
        return np.einsum("gocij,gcij->go", error.reshape(group, outputs // group, per_group, kh, kw),
                         mean.reshape(group, per_group, kh, kw)).reshape(outputs)
    rows = error if trans_b else error.T  # N x K
    return rows @ mean if mean.size == rows.shape[1] else None


def _bias_codes(bias: np.ndarray | None, channels: int, accumulator_scales: np.ndarray,
                correction: np.ndarray | None = None) -> np.ndarray:
    """R13: the int32 bias at scale s_x * s_w[c], less `correction` (weight_error_bias)."""
    values = np.zeros(channels) if bias is None else bias.astype(np.float64).reshape(-1)
    if correction is not None:
        values = values - correction
    codes = np.floor(np.abs(values / accumulator_scales) + 0.5) * np.sign(values)
    return np.clip(codes, -(2**31 - 1), 2**31 - 1).astype(np.int64)


# --------------------------------------------------------------------------------------
# Python patterns: the lowerings a PDL pattern would only wrap
# --------------------------------------------------------------------------------------


def lower_convolution(op: nn.ConvolutionOp, rewriter: PatternRewriter, codes: np.ndarray, s_w: np.ndarray,
                      make: Callable[[SSAValue, SSAValue, SSAValue], Operation],
                      correction: np.ndarray | None = None) -> None:
    """R13 / R18: quantized input and int8 weight `codes`, the int32 bias at s_x * s_w[o] (less
    `correction`), the convolution `make(x, w, bias)` builds, its per-channel rescale to int8."""
    island = Island(op)
    s_x, s_y = scale_of(op.input), scale_of(op.result)
    channels = nn.shape_of(op.result)[1]
    x = island.int_input(op.input, s_x)
    w = island.add(weight_constant(op, codes)).results[0]
    accumulator = s_x * np.broadcast_to(s_w, (channels,))
    b = island.add(fixed.ConstantOp(_bias_codes(_constant(op.bias, op, "bias"), channels, accumulator, correction),
                                    32))
    conv = island.add(make(x, w, b.results[0]))
    y = island.rescale(conv.results[0], accumulator / s_y, axis=1, scale=s_y)
    island.finish(rewriter, y, s_y)


class LowerConv2d(RewritePattern):
    """R13: int8 conv, int32 accumulate and bias, per-channel rescale to int8."""

    @op_type_rewrite_pattern
    def match_and_rewrite(self, op: nn.Conv2dOp, rewriter: PatternRewriter):
        weights = _constant(op.weight, op, "weight")
        s_w = weight_scales(op, weights, 0)
        codes = quantize_weights(weights, s_w, 0)
        group = op.group.value.data
        correction = weight_error_bias(op, weights, codes * np.broadcast_to(s_w, (codes.shape[0],))[:, None, None, None],
                                       group)
        lower_convolution(op, rewriter, codes, s_w, lambda x, w, b: fixed.Conv2dOp(
            x, w, b, nn.ints(op.strides), nn.ints(op.pads), nn.ints(op.dilations), group), correction)


class LowerConvTranspose2d(RewritePattern):
    """R18: int8 transposed conv, int32 accumulate and bias, per-channel rescale to int8. The
    weights are quantized per output channel, which in ONNX's C x O/group x KH x KW layout is
    the slice (c, j) of group c // (C/group): scales come from the convolution form's O rows."""

    @op_type_rewrite_pattern
    def match_and_rewrite(self, op: nn.ConvTranspose2dOp, rewriter: PatternRewriter):
        weights = _constant(op.weight, op, "weight")
        group = op.group.value.data
        by_output, _ = float_ops.conv_transpose_as_conv(weights, (0, 0, 0, 0), (1, 1), (0, 0), group)
        s_w = np.broadcast_to(weight_scales(op, by_output, 0), (by_output.shape[0],))
        grid = s_w[float_ops.conv_transpose_output_channels(weights.shape, group)][:, :, None, None]
        lower_convolution(op, rewriter, quantize_weights(weights, grid, None), s_w, lambda x, w, b: fixed.ConvTranspose2dOp(
            x, w, b, nn.ints(op.strides), nn.ints(op.pads), nn.ints(op.dilations), nn.ints(op.output_padding), group))


class LowerBatchNorm(RewritePattern):
    """A batch norm left unfolded is a depthwise 1x1 convolution: w = g / sqrt(v + eps)."""

    @op_type_rewrite_pattern
    def match_and_rewrite(self, op: nn.BatchNormOp, rewriter: PatternRewriter):
        gamma, beta, mean, var = (_constant(v, op, r) for v, r in
                                  ((op.scale, "scale"), (op.bias, "bias"), (op.mean, "mean"), (op.var, "var")))
        factor = gamma / np.sqrt(var + op.epsilon.value.data)
        channels = factor.size
        weight = rewriter_constant(factor.reshape(channels, 1, 1, 1))
        bias = rewriter_constant((beta - mean * factor).astype(np.float32))
        conv = nn.Conv2dOp(op.input, weight.results[0], bias.results[0], group=channels)
        conv.location = op.location
        conv.attributes[SCALE_ATTR] = FloatAttr(scale_of(op.result), nn.f32)
        rewriter.replace(op, [weight, bias, conv])


def rewriter_constant(array: np.ndarray) -> nn.ConstantOp:
    return nn.ConstantOp(np.ascontiguousarray(array, dtype=np.float32))


class LowerGemm(RewritePattern):
    """R13: A (activation) x B (constant weights, alpha folded in) + beta*C as int32 bias."""

    @op_type_rewrite_pattern
    def match_and_rewrite(self, op: nn.GemmOp, rewriter: PatternRewriter):
        if op.trans_a.value.data:
            raise Unlowerable(op, "a transposed activation (transA=1) cannot be lowered")
        weights = _constant(op.b, op, "B operand") * np.float32(op.alpha.value.data)
        trans_b = bool(op.trans_b.value.data)
        out_axis = 0 if trans_b else 1
        c = _constant(op.c, op, "C operand")
        n = weights.shape[out_axis]
        if c is not None:
            c = np.broadcast_to(c * np.float32(op.beta.value.data), (nn.shape_of(op.result)[0], n))
            if not (c == c[:1]).all():
                raise Unlowerable(op, "a C operand that varies along M cannot be an int32 bias")
            c = c[0]
        lower_dense(op, rewriter, op.a, weights, c, trans_b)


def lower_dense(op: Operation, rewriter: PatternRewriter, a: SSAValue, weights, bias, trans_b: bool) -> None:
    island = Island(op)
    out_axis = 0 if trans_b else 1
    s_a, s_y = scale_of(a), scale_of(op.results[0])
    s_w = weight_scales(op, weights, out_axis)
    n = weights.shape[out_axis]
    q_a = island.int_input(a, s_a)
    a_shape, y_shape = nn.shape_of(a), nn.shape_of(op.results[0])
    if len(a_shape) > 2:  # [..., M, K] tokens: the rows of one M' x K matrix, and back
        q_a = island.add(fixed.ReshapeOp(q_a, (int(np.prod(a_shape[:-1])), a_shape[-1]), scale=s_a)).results[0]
    codes = quantize_weights(weights, s_w, out_axis)
    w = island.add(weight_constant(op, codes)).results[0]
    accumulator = s_a * np.broadcast_to(s_w, (n,))
    per_output = [1, 1]
    per_output[out_axis] = n
    correction = weight_error_bias(op, weights, codes * np.broadcast_to(s_w, (n,)).reshape(per_output), trans_b=trans_b)
    b = island.add(fixed.ConstantOp(_bias_codes(bias, n, accumulator, correction), 32)).results[0]
    gemm = island.add(fixed.GemmOp(q_a, w, b, trans_b))
    y = island.rescale(gemm.results[0], accumulator / s_y, axis=1, scale=s_y)
    if len(y_shape) > 2:
        y = island.add(fixed.ReshapeOp(y, y_shape, scale=s_y)).results[0]
    island.finish(rewriter, y, s_y)


class LowerMatMul(RewritePattern):
    """An activation times a constant matrix is a gemm without bias ([..., M, K] tokens: of
    their rows as one matrix)."""

    @op_type_rewrite_pattern
    def match_and_rewrite(self, op: nn.MatMulOp, rewriter: PatternRewriter):
        if len(nn.shape_of(op.lhs)) < 2 or len(nn.shape_of(op.rhs)) != 2:
            raise Unlowerable(op, "only a matmul by a constant matrix lowers to fixed point")
        lower_dense(op, rewriter, op.lhs, _constant(op.rhs, op, "right operand"), None, False)


class LowerMeanSquare(RewritePattern):
    """R19: the sum of the squared codes over the last axis, exact: two tables give each
    square's base-127 digits, two gemms by constant columns (127s, 1s) sum them in int32, each
    sum is rescaled to the output's scale and the two are added (R11)."""

    @op_type_rewrite_pattern
    def match_and_rewrite(self, op: nn.MeanSquareOp, rewriter: PatternRewriter):
        island = Island(op)
        s_x, s_y = scale_of(op.input), scale_of(op.result)
        shape = nn.shape_of(op.input)
        channels = shape[-1]
        q = island.int_input(op.input, s_x)
        if len(shape) != 2:  # the rows of one M x C matrix, and back
            q = island.add(fixed.ReshapeOp(q, (int(np.prod(shape[:-1])), channels), scale=s_x)).results[0]
        parts = []
        for table, weight in zip(fixed_point.square_digit_tables(), (fixed_point.SQUARE_BASE, 1)):
            digits = island.add(fixed.TableOp(q, table)).results[0]
            w = island.add(fixed.ConstantOp(np.full((channels, 1), weight, np.int64), DATA_BITS)).results[0]
            b = island.add(fixed.ConstantOp(np.zeros(1, np.int64), 32)).results[0]
            sums = island.add(fixed.GemmOp(digits, w, b)).results[0]
            parts.append(island.rescale(sums, s_x * s_x / channels / s_y, axis=1, scale=s_y))
        plan = fixed_point.add_plan(s_y, s_y, s_y, "direct")
        total = island.add(fixed.AddOp(*parts, plan.lhs_multiplier, plan.lhs_shift, plan.rhs_multiplier,
                                       plan.rhs_shift, scale=plan.base_scale)).results[0]
        y = island.add(fixed.RescaleOp(total, plan.multiplier, plan.shift, DATA_BITS, None, scale=s_y)).results[0]
        if len(shape) != 2:
            y = island.add(fixed.ReshapeOp(y, nn.shape_of(op.result), scale=s_y)).results[0]
        island.finish(rewriter, y, s_y)


class LowerDivByConstant(RewritePattern):
    """x / c with a constant c is x * (1 / c)."""

    @op_type_rewrite_pattern
    def match_and_rewrite(self, op: nn.DivOp, rewriter: PatternRewriter):
        if not isinstance(op.rhs.owner, nn.ConstantOp):
            return  # a division by a tensor has no integer form: it stays float (keep_on_host)
        divisor = _constant(op.rhs, op, "divisor")
        if np.any(divisor == 0):
            raise Unlowerable(op, "division by a constant containing zero")
        reciprocal = rewriter_constant(1.0 / divisor)
        mul = nn.MulOp(op.lhs, reciprocal.results[0], op.result.type)
        mul.location = op.location
        mul.attributes[SCALE_ATTR] = FloatAttr(scale_of(op.result), nn.f32)
        rewriter.replace(op, [reciprocal, mul])


class LowerConcat(RewritePattern):
    """Inputs are brought to the output's scale (one rescale each where they differ), then joined."""

    @op_type_rewrite_pattern
    def match_and_rewrite(self, op: nn.ConcatOp, rewriter: PatternRewriter):
        island = Island(op)
        s_y = scale_of(op.result)
        parts = []
        for value in op.inputs:
            s_x = scale_of(value)
            x = island.int_input(value, s_x)
            parts.append(island.to_scale(x, s_x, s_y))
        y = island.add(fixed.ConcatOp(parts, op.axis.value.data, scale=s_y)).results[0]
        island.finish(rewriter, y, s_y)


class RejectUnlowerable(RewritePattern):
    """Without host fallback, ops with no integer form get one clear error instead of a float op."""

    def match_and_rewrite(self, op: Operation, rewriter: PatternRewriter):
        if isinstance(op, nn.OnnxOp):
            raise XnpuError(f"{describe_op(op)}: {op.reason.data}; it runs only on the host, through onnxruntime")
        if isinstance(op, nn.SoftmaxOp):
            raise XnpuError(
                f"{describe_op(op)}: softmax has no fixed-point lowering; remove it from the graph "
                "(argmax and top-k are unchanged by it) or run the model at the float level"
            )
        if isinstance(op, nn.DivOp) and not isinstance(op.rhs.owner, nn.ConstantOp):
            raise XnpuError(f"{describe_op(op)}: division by a tensor has no fixed-point lowering")
        if isinstance(op, nn.ClipOp) and op.has_operand_bounds:
            raise XnpuError(
                f"{describe_op(op)}: clip with a bound computed at run time has no fixed-point lowering; "
                "make min and max constants (initializers) to quantize it"
            )


def keep_on_host(function: func.FuncOp) -> None:
    """The nn ops no lowering matched stay float ops, for the host to run (docs/npu.md,
    "Placement"). A float operand computed by the integer graph enters through the
    `fixed.dequantize` its island ends with; one a host op computed, or a program input only
    host ops read, stays float (a float program input or output, a tensor between host ops:
    nothing is rounded to int8 the accelerator never sees); a program input that the
    accelerator reads too is read by the host as the accelerator sees it, through
    `fixed.quantize` -> `fixed.dequantize` at its scale. A result leaves as it is: an island
    that reads it quantizes it, the return returns it in float (a softmax head keeps full
    precision). Values that are not float (a host op's int64 or bool tensors) pass as they
    are, and float constants stay float constants."""
    host = [op for op in function.walk() if op.dialect_name() == "nn" and not isinstance(op, nn.ConstantOp)]
    on_host = set(host)
    for op in host:
        for index, value in enumerate(op.operands):
            if isinstance(value.owner, nn.ConstantOp) or not nn.is_float(value) or value.owner in on_host:
                continue
            if isinstance(value, BlockArgument) and all(use.operation in on_host for use in value.uses):
                continue
            if isinstance(value.owner, fixed.DequantizeOp):
                continue  # the island's own conversion
            scale = scale_of(value)
            quantize = fixed.QuantizeOp(value, scale, DATA_BITS)
            dequantize = fixed.DequantizeOp(quantize.result, scale)
            quantize.location = dequantize.location = op.location
            block = op.parent_block()
            assert block is not None
            block.insert_ops_before([quantize, dequantize], op)
            op.operands[index] = dequantize.result


# element-wise and data-movement ops: as cheap on the host as on the accelerator
CHEAP_ON_HOST = (nn.BinaryOp, nn.UnaryOp, nn.ClipOp, nn.ReshapeOp, nn.FlattenOp, nn.TransposeOp, nn.ConcatOp)
BETWEEN_HOST_OPS = "host ops compute its operands and only host ops or the outputs read it: it computes in float"


def stay_float_between_host_ops(function: func.FuncOp) -> None:
    """Mark (`nn.float_reason`) the element-wise and data-movement ops whose float operands
    all come from ONNX nodes the host runs (or from ops so marked, or constants) and whose
    results only such ops or the program's return read: on the accelerator they would round to
    int8 tensors that only the host uses or the program returns, for two hand-offs more.
    silero_vad's STFT magnitude sqrt(re^2 + im^2) is Pow, Pow, Add, Sqrt (its squares span
    10^4: 8 bits of them lose the quiet bins), and its LSTM state leaves through a Concat and
    an Add, to come back as the next chunk's input (int8 there, its error would accumulate
    from chunk to chunk). The largest such set: start from every candidate, drop any whose
    operand or use is not host, until none drops."""
    candidates = {op for op in function.walk() if isinstance(op, CHEAP_ON_HOST)}

    def host(op: Operation | None) -> bool:
        return isinstance(op, nn.OnnxOp | func.ReturnOp) or op in candidates

    def keeps(op: Operation) -> bool:
        operands = [v for v in op.operands if nn.is_float(v) and not isinstance(v.owner, nn.ConstantOp)]
        uses = [use.operation for result in op.results for use in result.uses]
        return (bool(operands) and bool(uses) and all(host(v.owner) for v in operands)
                and all(host(user) for user in uses))

    changed = True
    while changed:
        dropped = {op for op in candidates if not keeps(op)}
        candidates -= dropped
        changed = bool(dropped)
    for op in candidates:
        op.attributes[FLOAT_REASON] = StringAttr(BETWEEN_HOST_OPS)


def python_patterns() -> list[RewritePattern]:
    """The lowerings that stay Python (docs/extending.md says why), beside the pattern files."""
    return [
        LowerBatchNorm(),
        LowerDivByConstant(),
        LowerConv2d(),
        LowerConvTranspose2d(),
        LowerGemm(),
        LowerMatMul(),
        LowerMeanSquare(),
        LowerConcat(),
    ]


# --------------------------------------------------------------------------------------
# Removing the dequantize -> quantize pairs between islands
# --------------------------------------------------------------------------------------


class FoldDequantizeQuantize(RewritePattern):
    """quantize(dequantize(q, s1), s2) is q when s1 == s2, else one rescale by s1 / s2."""

    @op_type_rewrite_pattern
    def match_and_rewrite(self, op: fixed.QuantizeOp, rewriter: PatternRewriter):
        source = op.input.owner
        if not isinstance(source, fixed.DequantizeOp) or source.axis is not None:
            return
        s_in = float(fixed.scale_values(source.scale)[0])
        s_out = op.scale.value.data
        bits = fixed.width_of(op.result)
        if s_in == s_out and source.input.type == op.result.type:
            rewriter.replace(op, [], [source.input])
            return
        multiplier, shift = fixed_point.multiplier_from_scale(s_in / s_out)
        rescale = fixed.RescaleOp(source.input, multiplier, shift, bits, scale=s_out)
        rescale.location = op.location
        rewriter.replace(op, [rescale])


class EraseUnusedDequantize(RewritePattern):
    @op_type_rewrite_pattern
    def match_and_rewrite(self, op: fixed.DequantizeOp, rewriter: PatternRewriter):
        if not op.result.uses:
            rewriter.erase_op(op)


PATTERN_DIR = Path(__file__).resolve().parent
VARIANTS = ("two_stage", "direct")


def nn_to_fixed_patterns(extra=()) -> list[Pattern]:
    """The shipped `nn -> fixed` pattern files and those in `extra` (files or directories)."""
    return load_patterns([PATTERN_DIR, *extra])


def _functions(module: ModuleOp) -> list[func.FuncOp]:
    return [op for op in module.ops if isinstance(op, func.FuncOp)]


def _reject_unlowered(module: ModuleOp) -> None:
    """A float op no pattern matched is one clear error, not a float op in the fixed module."""
    for op in module.walk():
        if op.dialect_name() == "nn" and not isinstance(op, nn.ConstantOp):
            raise XnpuError(f"{describe_op(op)}: no nn -> fixed lowering matches this op")


@dataclass(frozen=True)
class LowerNNToFixedPass(ModulePass):
    """Lower a calibrated nn graph to fixed-point islands (quantize -> integer ops -> dequantize).

    `variant` picks seed 000's requantization of an add: `two_stage` (int24 -> int16 -> int8)
    or `direct` (int24 -> int8). `patterns` and `natives` add pattern files (or directories)
    and Python files of native functions, comma-separated (docs/extending.md).
    With `host_fallback` (the default) an op no lowering matches stays a float op for the
    host to run (keep_on_host); without it, it is an error.
    """

    name = "lower-nn-to-fixed"
    variant: str = "two_stage"
    patterns: str = ""
    natives: str = ""
    host_fallback: bool = True

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        if self.variant not in VARIANTS:
            raise XnpuError(f"lower-nn-to-fixed: variant must be 'two_stage' or 'direct', got '{self.variant}'")
        for path in split_paths(self.natives):
            load_natives(path)
        patterns = nn_to_fixed_patterns(split_paths(self.patterns))
        for function in _functions(op):
            refine_scales(function)
            if self.host_fallback:
                stay_float_between_host_ops(function)
        if not self.host_fallback:
            PatternRewriteWalker(RejectUnlowerable(), apply_recursively=False).rewrite_module(op)
        declarative = PatternSet(patterns, PatternContext(options={"variant": self.variant}))
        if self.host_fallback:
            rewrites = [OrStayFloat(p) for p in (declarative, *python_patterns())]
        else:
            rewrites = [declarative, *python_patterns()]
        PatternRewriteWalker(GreedyRewritePatternApplier(rewrites)).rewrite_module(op)
        if self.host_fallback:
            for function in _functions(op):
                keep_on_host(function)
        else:
            _reject_unlowered(op)
        dce(op)  # the float constants the quantize_constant pattern replaced
        op.attributes["fixed.add_variant"] = StringAttr(self.variant)


@dataclass(frozen=True)
class FoldQuantizePairsPass(ModulePass):
    """Remove dequantize -> quantize between integer ops, so the graph is integer end to end."""

    name = "fold-quantize-pairs"

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        PatternRewriteWalker(
            GreedyRewritePatternApplier([FoldDequantizeQuantize(), EraseUnusedDequantize()])
        ).rewrite_module(op)
        from xdsl.transforms.common_subexpression_elimination import cse

        cse(op)
