"""R13: the exact integer sums of convolutions and gemms (docs/fixed-point.md), as float32 GEMMs
whose exactness each call proves from its operands, and their requantization (R9 with the bias)."""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass, field

import numpy as np

from xnpu.core.errors import XnpuError
from xnpu.semantics import conv_kernels, fixed_point_loops, float_ops
from xnpu.semantics.fixed_point import (
    DATA_BITS,
    MAX_REDUCTION,
    int64_array,
    qmax,
    rescale_factors,
    saturate,
    storage_dtype,
)

# R13: a float32 sum of integer products is exact while every partial sum stays within
# 2^24, whatever order BLAS adds in. A call proves it from its operands: for output
# channel o, every partial sum is at most sum_c max|x[..., c]| * sum_taps |w[o, c]|; input
# channels are split into chunks whose bound stays below FLOAT32_EXACT_LIMIT (most calls
# need one), and the chunk sums are added in float64. float32 GEMMs are about twice as
# fast as float64 ones on CPUs.
FLOAT32_EXACT_LIMIT = float(1 << 24)


def _max_abs(x: np.ndarray) -> float:
    return max(float(x.max()), -float(x.min()))


def _type_max_abs(x: np.ndarray) -> float:
    """The largest |value| x's dtype can hold: a bound that reads no data (inf for floats)."""
    bound = _TYPE_MAX_ABS.get(x.dtype)
    if bound is None:
        info = np.iinfo(x.dtype) if x.dtype.kind in "iu" else None
        bound = _TYPE_MAX_ABS[x.dtype] = math.inf if info is None else float(max(info.max, -int(info.min)))
    return bound


_TYPE_MAX_ABS: dict[np.dtype, float] = {}  # np.iinfo is ~5 us a call, twice per convolution


def channel_max_abs(x: np.ndarray) -> np.ndarray:
    """R13: max|x| per channel of an N... x C integer array (the last axis), as float64: the input of the exactness bound."""
    flat = x.reshape(-1, x.shape[-1])
    if flat.shape[0] == 0:
        return np.zeros(x.shape[-1])
    high = flat.max(axis=0).astype(np.float64)
    low = flat.min(axis=0).astype(np.float64)
    return np.maximum(high, -low)


class ExactWeights:
    """A conv or gemm weight prepared once for exact float32 GEMMs (R13).

    `ohwi` is the integer weight as O x KH x KW x C (a gemm's B as N x 1 x 1 x K). Keeps
    channel_l1[c, o] = sum over taps |w[o, :, :, c]| for the exactness bound, and builds
    each float matrix a call needs (rows (kh, kw, c) of one tap row or all, columns o) once.
    """

    def __init__(self, ohwi, kept: bool = False) -> None:
        """`kept`: the weight serves many calls, so large convolutions may run on kernels that
        prepare it once (conv_kernels: onnxruntime sessions, kept here)."""
        weight = np.asarray(ohwi)
        if weight.dtype.kind not in "iu":
            weight = int64_array(weight)
        self.shape = weight.shape
        self.weight = weight
        # |w| of int8 weights in int16 (|-128| fits), summed in int64: a quarter of the bytes of
        # widening every weight to int64 (resnet18_like's 11M weights: ~40 ms of a one-image run)
        magnitude = weight.astype(np.int16 if weight.dtype.itemsize == 1 else np.int64)
        np.abs(magnitude, out=magnitude)
        self.channel_l1 = magnitude.sum(axis=(1, 2), dtype=np.int64).T.astype(np.float64)
        self.largest_l1 = float(self.channel_l1.sum(axis=0).max(initial=0.0))  # max over o of sum |w[o]|
        self._matrices: dict[tuple, np.ndarray] = {}
        self.kept = kept
        self.sessions: dict[tuple, object] = {}  # conv_kernels' sessions, per window geometry

    def matrix(self, rows: tuple[int, int], channels: tuple[int, int], dtype) -> np.ndarray:
        """(taps of kernel rows [rows) x channels [channels)) x O, rows ordered (kh, kw, c)."""
        key = (rows, channels, np.dtype(dtype).char)
        matrix = self._matrices.get(key)
        if matrix is None:
            part = self.weight[:, rows[0] : rows[1], :, channels[0] : channels[1]]
            matrix = np.ascontiguousarray(part.reshape(self.shape[0], -1).T, dtype=dtype)
            self._matrices[key] = matrix
        return matrix

    def channel_chunks(self, max_abs: np.ndarray) -> list[tuple[int, int]] | None:
        """Input-channel ranges whose float32 sums are provably exact for inputs bounded by
        `max_abs` (per channel); None when one channel alone could exceed the limit."""
        channels = self.shape[3]
        contribution = max_abs[:, None] * self.channel_l1
        if channels == 0 or contribution.sum(axis=0).max(initial=0.0) < FLOAT32_EXACT_LIMIT:
            return [(0, channels)]
        cumulative = np.cumsum(contribution, axis=0)
        chunks, start, base = [], 0, np.zeros(self.shape[0])
        while start < channels:
            reach = (cumulative[start:] - base).max(axis=1)  # non-decreasing in the chunk's end
            count = int(np.searchsorted(reach, FLOAT32_EXACT_LIMIT, side="left"))
            if count == 0:
                return None
            chunks.append((start, start + count))
            base = cumulative[start + count - 1]
            start += count
        return chunks


def stacked_weights(parts: Sequence[ExactWeights]) -> ExactWeights:
    """One ExactWeights of the parts' output channels in order (their O x KH x KW x C weights
    stacked along O), kept like them: its sums are the parts' sums side by side, since each
    output channel is its own (R13 bounds each channel's partial sums apart)."""
    return ExactWeights(np.concatenate([part.weight for part in parts]), kept=all(part.kept for part in parts))


def conv_sums_nhwc(x, weights: ExactWeights, strides, pads, dilations) -> np.ndarray:
    """R13: the exact sums of a dense convolution (no bias), N x OH x OW x O, as float32 (one
    provably exact chunk) or float64 integers.

    `x` is an N x H x W x C integer map (any integer dtype, or a strided view of one). The
    GEMMs read the padded input in place where they can: a 1x1 kernel is one GEMM on the
    map itself; with vertical stride 1 each kernel row is one GEMM on a slice of the
    horizontally gathered windows; otherwise one im2col GEMM (float_ops.conv_gemms_nhwc).
    """
    x = np.asarray(x)
    o, kh, kw, c = weights.shape
    chunks = _exact_chunks(x, weights)
    dtype = np.float32 if chunks is not None else np.float64
    if _on_kernels(x, weights, strides, pads, dilations, chunks):
        return conv_kernels.conv_sums(x, weights.weight.transpose(0, 3, 1, 2), weights.sessions, strides, pads,
                                      dilations)
    padded = float_ops.pad_nhwc(x, pads, dtype)
    total = None
    for channels in chunks or [(0, c)]:
        part = _conv_gemms(padded[..., channels[0] : channels[1]], weights, channels, strides, dilations, dtype)
        if total is None:
            total = part
        else:
            total = total.astype(np.float64) if total.dtype != np.float64 else total
            total += part
    return total


def _on_kernels(x: np.ndarray, weights: ExactWeights, strides, pads, dilations, chunks=None) -> bool:
    """Whether the sums of `x` with the kept `weights` come from onnxruntime's kernels
    (conv_kernels.takes, for the whole call), with one exact float32 chunk (`chunks`, when
    already known)."""
    o, kh, kw, c = weights.shape
    products = _products(x.shape, weights.shape, strides, pads, dilations)
    if not (weights.kept and conv_kernels.takes(kh * kw, products, x.shape[1] * x.shape[2])):
        return False
    return (_exact_chunks(x, weights) if chunks is None else chunks) == [(0, c)]


def _exact_chunks(x: np.ndarray, weights: ExactWeights) -> list[tuple[int, int]] | None:
    """R13's proof for the map `x`: input-channel ranges whose float32 sums are exact (most
    calls: one, every channel), or None (float64 sums)."""
    bound = weights.largest_l1
    # the dtype's range settles most calls on int8 maps without reading them
    if x.size and _type_max_abs(x) * bound >= FLOAT32_EXACT_LIMIT and _max_abs(x) * bound >= FLOAT32_EXACT_LIMIT:
        # the whole-tensor bound does not settle it: bound per input channel, chunk if needed
        return weights.channel_chunks(channel_max_abs(x))
    return [(0, weights.shape[3])]


# A 1x1 convolution whose float32 input and sums would fill more than POINTWISE_BLOCKED_BYTES
# runs in blocks of image rows of about POINTWISE_BLOCK_BYTES of them: each block's conversion,
# GEMM and requantization then work in the cache, not in memory (9 images' 1x1 convolutions of
# mobilenetv2_like at 56x56 and 112x112: 15-35% less CPU, the whole model ~6% with blocks of 2
# MB against ~3% with 1 MB; below ~8 MB the whole GEMM is as fast, and blocks of 128-256 KB
# were slower than it: each GEMM call packs the weights again)
POINTWISE_BLOCKED_BYTES = 1 << 23
POINTWISE_BLOCK_BYTES = 1 << 21


def conv_requantized_nhwc(x, weights: ExactWeights, requant: Requantization, strides, pads, dilations,
                          out: np.ndarray | None = None) -> np.ndarray:
    """A dense convolution's exact sums (`conv_sums_nhwc`) through `requant` (R13's bias, R9,
    R8): N x OH x OW x O integers, written into `out` when given. A large 1x1 convolution with
    exact float32 sums does it block by block (each output pixel is its own dot product, so
    the blocks' results are the whole one's)."""
    x = np.asarray(x)
    o, kh, kw, c = weights.shape
    if kh == kw == 1 and not any(pads):
        pixels = x[:, :: strides[0], :: strides[1]]
        if pixels.size // max(c, 1) * (c + o) * 4 >= POINTWISE_BLOCKED_BYTES and _exact_chunks(pixels, weights) == [(0, c)]:
            return _pointwise_in_blocks(pixels, weights, requant, out)
    if out is None:
        oh, ow = float_ops.conv_output_hw(x.shape[1:3], (kh, kw), strides, pads, dilations)
        out = np.empty((x.shape[0], max(oh, 0), max(ow, 0), o), dtype=storage_dtype(DATA_BITS))
    conv_requantized_parts(x, weights, [requant], [out], strides, pads, dilations)
    return out


def conv_requantized_parts(x, weights: ExactWeights, requants: Sequence[Requantization], outs: Sequence[np.ndarray],
                           strides, pads, dilations) -> None:
    """R13's exact sums of a dense convolution (`conv_sums_nhwc`), each part of its output
    channels in order through its own requantization (R13's bias, R9, R8) into its own output
    (integer N x OH x OW x O_k arrays, their O_k adding up to the weights' O). On onnxruntime's
    kernels it goes sample by
    sample: a sample's float32 input, the kernel's buffers and its sums then stay in the cache
    between the conversion, the kernel and the requantization (9 samples at once went through
    memory: resnet18_like 28.2 -> 26.8, segnet_like 13.0 -> 12.4 ms an image; 2 at a time gained
    little). Each sample's sums are its own, so the results are the whole call's."""
    x = np.asarray(x)
    if _on_kernels(x, weights, strides, pads, dilations):
        oihw = weights.weight.transpose(0, 3, 1, 2)
        for sample in range(x.shape[0]):
            sums = conv_kernels.conv_sums(x[sample : sample + 1], oihw, weights.sessions, strides, pads, dilations)
            _requantize_parts(sums, requants, [out[sample : sample + 1] for out in outs])
        return
    _requantize_parts(conv_sums_nhwc(x, weights, strides, pads, dilations), requants, outs)


def _requantize_parts(sums: np.ndarray, requants: Sequence[Requantization], outs: Sequence[np.ndarray]) -> None:
    start = 0
    for requant, out in zip(requants, outs):
        count = out.shape[-1]
        requant(sums[..., start : start + count], out=out)
        start += count


def _pointwise_in_blocks(x: np.ndarray, weights: ExactWeights, requant: Requantization,
                         out: np.ndarray | None) -> np.ndarray:
    """`conv_requantized_nhwc` of a 1x1 kernel with exact float32 sums, a few image rows of one
    sample at a time, through buffers reused by every block."""
    n, h, w, c = x.shape
    o = weights.shape[0]
    if out is None:
        out = np.empty((n, h, w, o), dtype=storage_dtype(DATA_BITS))
    matrix = weights.matrix((0, 1), (0, c), np.float32)  # the matrix conv_sums_nhwc's GEMM takes
    rows = max(1, POINTWISE_BLOCK_BYTES // (4 * (c + o) * w))
    inputs = np.empty((rows, w, c), np.float32)
    sums = np.empty((rows * w, o), np.float32)
    for sample in range(n):
        for top in range(0, h, rows):
            count = min(rows, h - top)
            block = inputs[:count]
            block[...] = x[sample, top : top + count]
            np.matmul(block.reshape(count * w, c), matrix, out=sums[: count * w])
            requant(sums[: count * w].reshape(1, count, w, o), out=out[sample : sample + 1, top : top + count])
    return out


def _products(x_shape, weight_shape, strides, pads, dilations) -> int:
    """N x OH x OW x O x KH x KW x C: the products a dense convolution forms."""
    o, kh, kw, c = weight_shape
    oh, ow = float_ops.conv_output_hw(x_shape[1:3], (kh, kw), strides, pads, dilations)
    return x_shape[0] * oh * ow * o * kh * kw * c


def _conv_gemms(padded, weights: ExactWeights, channels, strides, dilations, dtype) -> np.ndarray:
    _, kh, kw, _ = weights.shape
    return float_ops.conv_gemms_nhwc(
        padded, lambda rows: weights.matrix(rows, channels, dtype), (kh, kw), strides, dilations, weights.shape[0],
        exact=True,
    )


def depthwise_sums_nhwc(x, weight_hwc, strides, pads, dilations) -> np.ndarray:
    """R13 for a depthwise convolution (no bias): N x OH x OW x C exact integer sums.

    One loop over the output (fixed_point_loops.depthwise_sums), accumulating in int32 when
    max|x| * sum_taps |w| < 2^31 for every channel (always, for int8 operands and kernels up
    to 362x362), else in int64.
    """
    x = _integer_array(x)
    weight = np.ascontiguousarray(_integer_array(weight_hwc))  # channels adjacent: the loop runs along them
    kh, kw, c = weight.shape
    taps_l1 = np.abs(weight.astype(np.int64)).sum(axis=(0, 1))
    largest_l1 = float(taps_l1.max(initial=0))
    fits = _type_max_abs(x) * largest_l1 <= qmax(32) or (channel_max_abs(x) * taps_l1).max(initial=0.0) <= qmax(32)
    dtype = np.int32 if fits else np.int64
    (sh, sw), (dh, dw) = strides, dilations
    oh, ow = float_ops.conv_output_hw(x.shape[1:3], (kh, kw), strides, pads, dilations)
    sums = np.empty((x.shape[0], oh, ow, c), dtype=dtype)
    return fixed_point_loops.depthwise_sums(x, weight, sh, sw, dh, dw, pads[0], pads[1], sums)


def _integer_array(x) -> np.ndarray:
    x = np.asarray(x)
    return x if x.dtype.kind in "iu" else x.astype(np.int64)


_PREPARED: dict[tuple[int, str], tuple[np.ndarray, ExactWeights]] = {}
_PREPARED_CACHE_SIZE = 512
_TO_OHWI = {
    "OIHW": lambda w: w.transpose(0, 2, 3, 1),
    "KN": lambda w: w.T[:, None, None, :],  # a gemm's B
    "NK": lambda w: w[:, None, None, :],  # a gemm's B with trans_b
}


def prepared_weights(weight: np.ndarray, layout: str = "OIHW") -> ExactWeights:
    """R13: ExactWeights of an OIHW conv weight (or a gemm's B, layout "KN", or "NK" with trans_b),
    kept for read-only arrays (the interpreters' decoded constants), which cannot change."""
    key = (id(weight), layout)
    cached = _PREPARED.get(key)
    if cached is not None and cached[0] is weight:
        return cached[1]
    prepared = ExactWeights(_TO_OHWI[layout](np.asarray(weight)))
    if isinstance(weight, np.ndarray) and not weight.flags.writeable:
        if len(_PREPARED) >= _PREPARED_CACHE_SIZE:
            del _PREPARED[next(iter(_PREPARED))]
        _PREPARED[key] = (weight, prepared)
    return prepared


def conv2d_accumulate_exact(x, weight, strides, pads, dilations, group: int, dtype=np.float32) -> np.ndarray:
    """R13: the exact int64 sums of an NCHW convolution with an OIHW weight (no bias).

    Dense and grouped convolutions are GEMMs (`conv_sums_nhwc`, per group), which prove their
    float32 sums exact per call (dtype=float64 forces float64 GEMMs, exact for any
    contract-sized reduction); depthwise ones are an integer loop (`depthwise_sums_nhwc`).
    """
    x, weight = np.asarray(x), np.asarray(weight)
    strides, pads, dilations = tuple(strides), tuple(pads), tuple(dilations)
    nhwc = x.transpose(0, 2, 3, 1)
    out_channels, c_per_group = weight.shape[:2]
    if group > 1 and c_per_group == 1 and out_channels == group:
        weight_hwc = weight[:, 0].transpose(1, 2, 0)
        return depthwise_sums_nhwc(nhwc, weight_hwc, strides, pads, dilations).astype(np.int64).transpose(0, 3, 1, 2)
    per_group = out_channels // group
    parts = []
    for g in range(group):
        group_weight = weight if group == 1 else weight[g * per_group : (g + 1) * per_group]
        prepared = prepared_weights(group_weight) if group == 1 else ExactWeights(group_weight.transpose(0, 2, 3, 1))
        group_x = nhwc if group == 1 else nhwc[..., g * c_per_group : (g + 1) * c_per_group]
        if dtype == np.float64:
            sums = _conv_gemms(float_ops.pad_nhwc(group_x, pads, np.float64), prepared, (0, c_per_group), strides,
                               dilations, np.float64)
        else:
            sums = conv_sums_nhwc(group_x, prepared, strides, pads, dilations)
        parts.append(sums.astype(np.int64))
    total = parts[0] if group == 1 else np.concatenate(parts, axis=3)
    return total.transpose(0, 3, 1, 2)


@dataclass(frozen=True)
class Requantization:
    """R13 then R9 (and R8's clamp) of conv/gemm sums, with the per-channel constants of R6
    computed once: clip(rescale(saturate(acc + bias, 32), M, shift, 8), low, high), channels
    along the last axis of `acc`. Built by `requantization`."""

    factor: np.ndarray  # M * 2^-shift (float64, exact)
    constant: np.ndarray  # R6's rounding term, plus bias * factor when the bias is folded in
    bias: np.ndarray | None  # kept apart when the int32 saturation could act
    low: int
    high: int
    _per_channel: dict = field(default_factory=dict, compare=False, repr=False)  # channels -> the loop's arrays

    def __call__(self, acc, out: np.ndarray | None = None) -> np.ndarray:
        """The result of integer-valued sums (any numeric dtype, at most 4 axes, channels
        last), exact by the argument of `rescale_float` term by term
        (fixed_point_loops.requantize), written into the integer array `out` (its dtype must
        hold [low, high]; int8 when not given) and returned."""
        acc = np.asarray(acc)
        channels = acc.shape[-1]
        if out is None:
            out = np.empty(acc.shape, dtype=storage_dtype(DATA_BITS))
        leading = (None,) * (4 - acc.ndim)  # the loop's N x H x W x C, as views
        arrays = self._per_channel.get(channels)
        if arrays is None:
            def per_channel(values) -> np.ndarray:
                return np.ascontiguousarray(np.broadcast_to(values, (channels,)), dtype=np.float64)

            bias = _NO_BIAS if self.bias is None else per_channel(self.bias)
            arrays = self._per_channel[channels] = (per_channel(self.factor), per_channel(self.constant), bias)
        factor, constant, bias = arrays
        fixed_point_loops.requantize(acc[leading], factor, constant, bias, float(self.low), float(self.high), out[leading])
        return out


_NO_BIAS = np.zeros(0, dtype=np.float64)


def requantization(bias, reduction: int, multiplier, shift, low: int, high: int) -> Requantization:
    """R13/R9: the Requantization of sums over a reduction of length `reduction` of int8
    operands (|acc| <= reduction * 2^14), per-channel (or one) bias, M and shift.

    When |acc| + max|bias| stays within int32 the saturation cannot act and the bias joins
    R6's constant term: (acc + bias) * f + 1/2 = acc * f + (bias * f + 1/2), exact as in
    `rescale_float` because (acc + bias) * M < 2^46.
    """
    factor, rounding = rescale_factors(multiplier, shift, -1, 1)
    if bias is None:
        return Requantization(factor, rounding, None, low, high)
    bias = int64_array(bias).reshape(-1)
    largest_bias = int(np.abs(bias).max()) if bias.size else 0
    if reduction * (1 << 14) + largest_bias <= qmax(32):
        return Requantization(factor, bias.astype(np.float64) * factor + rounding, None, low, high)
    return Requantization(factor, rounding, bias.astype(np.float64), low, high)


def conv2d_int(
    x, weight, bias, strides: Sequence[int], pads: Sequence[int], dilations: Sequence[int], group: int,
    out_bits: int = 32,
) -> np.ndarray:
    """R13: int8 x int8 convolution with an int32 bias, accumulated exactly, saturated to out_bits.

    NCHW input, OIHW weight; zero padding (the zero point is 0, R4). The reduction length
    K = C/group * KH * KW must be at most MAX_REDUCTION; then |sum| < 2^31, and the sums
    (`conv2d_accumulate_exact`) are exact.
    """
    x, weight = np.asarray(x), np.asarray(weight)
    reduction = weight.shape[1] * weight.shape[2] * weight.shape[3]
    if reduction > MAX_REDUCTION:
        raise XnpuError(f"conv2d reduction length {reduction} exceeds {MAX_REDUCTION}; the int32 accumulator could overflow")
    acc = conv2d_accumulate_exact(x, weight, strides, pads, dilations, group)
    if bias is not None:
        acc = acc + int64_array(bias).reshape(1, -1, 1, 1)
    return saturate(acc, out_bits)


def conv_transpose2d_int(
    x, weight, bias, strides: Sequence[int], pads: Sequence[int], dilations: Sequence[int],
    output_padding: Sequence[int], group: int, out_bits: int = 32,
) -> np.ndarray:
    """R18: int8 transposed convolution with an int32 bias, accumulated exactly.

    The stride-1 convolution (R13) of the zero-inserted input, padded (or cropped) by
    dilation * (k - 1) - pad (+ output_padding at the end), with each group's C x O block
    transposed and its kernel flipped (`float_ops.conv_transpose_as_conv`): every output is
    a sum of at most C/group * KH * KW products (the inserted zeros add exact zeros), so
    R13's bound and its exactness hold as they are. NCHW input, C x O/group x KH x KW weight.
    """
    conv_weight, conv_pads = float_ops.conv_transpose_as_conv(int64_array(weight), pads, dilations, output_padding, group)
    padded = float_ops.pad_or_crop_nchw(float_ops.zero_insert(int64_array(x), strides), conv_pads)
    return conv2d_int(padded, conv_weight, bias, (1, 1), (0, 0, 0, 0), dilations, group, out_bits)


def gemm_sums(a, weights: ExactWeights) -> np.ndarray:
    """R13: the exact sums of A (M x K integers) @ B, B prepared as N x 1 x 1 x K: M x N float."""
    a = np.asarray(a)
    return conv_sums_nhwc(a.reshape(a.shape[0], 1, 1, a.shape[1]), weights, (1, 1), (0, 0, 0, 0), (1, 1)).reshape(
        a.shape[0], weights.shape[0]
    )


def gemm_int(a, b, bias, trans_b: bool = False, out_bits: int = 32) -> np.ndarray:
    """R13: A (M x K) @ op(B) (K x N) + bias (broadcast to M x N), exact, saturated to out_bits."""
    a, b = np.asarray(a), np.asarray(b)
    if a.shape[1] > MAX_REDUCTION:
        raise XnpuError(f"gemm reduction length {a.shape[1]} exceeds {MAX_REDUCTION}; the int32 accumulator could overflow")
    weights = prepared_weights(b, "NK" if trans_b else "KN")
    acc = gemm_sums(a, weights).astype(np.int64)
    if bias is not None:
        acc = acc + int64_array(bias)
    return saturate(acc, out_bits)
