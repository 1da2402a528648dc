"""Float semantics of the `nn` ops, as plain numpy functions.

This is the one definition of what each float op computes. The `nn` interpreter calls it,
the constant folder calls it, and the lower levels reuse the window/patch helpers here
(`pad_nchw`, `pad_nhwc`, `conv_gemms_nhwc`) for their integer versions. All functions take and return
NCHW float32 arrays with a leading batch dimension.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

import numpy as np
from numpy.lib.stride_tricks import sliding_window_view


def pad_nchw(x: np.ndarray, pads: Sequence[int], value: float = 0.0) -> np.ndarray:
    """Pad H and W by ONNX-ordered pads [top, left, bottom, right]. An NHWC map seen as NCHW (a
    transposed view, as the simulator's pooling passes it) stays channels last in memory:
    np.pad's C-ordered copy of it transposed every byte (~1/10 of resnet18_like's simulated
    image in its one max pool)."""
    top, left, bottom, right = pads
    if not any(pads):
        return x
    if x.ndim != 4 or x.strides[1] >= x.strides[3]:
        return np.pad(x, ((0, 0), (0, 0), (top, bottom), (left, right)), constant_values=value)
    n, c, h, w = x.shape
    padded = np.full((n, h + top + bottom, w + left + right, c), value, dtype=x.dtype).transpose(0, 3, 1, 2)
    padded[:, :, top : top + h, left : left + w] = x
    return padded


def sliding_windows(a: np.ndarray, spans: Sequence[int], axes: Sequence[int]) -> np.ndarray:
    """`sliding_window_view(a, spans, axis=axes)`, the window axes last, made directly where `a`
    is C-contiguous: numpy's function is ~40-80 us a call, and a simulated segnet_like image
    gathers ~270 convolutions' windows (the view is read only)."""
    shape = list(a.shape)
    for axis, span in zip(axes, spans):
        shape[axis] -= span - 1
    if not a.flags.c_contiguous or a.size == 0 or min(shape, default=0) < 0:
        return sliding_window_view(a, tuple(spans), axis=tuple(axes))
    windows = np.ndarray((*shape, *spans), a.dtype, a, 0, (*a.strides, *(a.strides[axis] for axis in axes)))
    windows.flags.writeable = False
    return windows


def window_view(
    x: np.ndarray, kernel: Sequence[int], strides: Sequence[int], dilations: Sequence[int], out_hw: Sequence[int]
) -> np.ndarray:
    """View of an already padded NCHW array as N x C x OH x OW x KH x KW windows (no copy)."""
    kh, kw = kernel
    dh, dw = dilations
    sh, sw = strides
    span_h, span_w = dh * (kh - 1) + 1, dw * (kw - 1) + 1
    windows = sliding_windows(x, (span_h, span_w), (2, 3))
    windows = windows[:, :, :: sh, :: sw, :: dh, :: dw]
    return windows[:, :, : out_hw[0], : out_hw[1]]


def conv_output_hw(
    hw: Sequence[int], kernel: Sequence[int], strides: Sequence[int], pads: Sequence[int], dilations: Sequence[int]
) -> tuple[int, int]:
    """Output height and width of a convolution over `hw` with ONNX-ordered pads."""
    return tuple(  # type: ignore[return-value]
        (hw[a] + pads[a] + pads[a + 2] - (dilations[a] * (kernel[a] - 1) + 1)) // strides[a] + 1 for a in range(2)
    )


_WEIGHT_MATRICES: dict[tuple, tuple[np.ndarray, np.ndarray]] = {}
_WEIGHT_MATRIX_CACHE_SIZE = 512


def _weight_rows(weight: np.ndarray, outputs: tuple[int, int], rows: tuple[int, int], dtype) -> np.ndarray:
    """Output channels [outputs) and kernel rows [rows) of an OIHW weight as a (taps*I) x O
    matrix, rows ordered (kh, kw, i).

    Building it copies the weight, which for a ResNet is 47 MB per inference; read-only arrays
    (the interpreters' decoded constants) cannot change, so their matrices are kept.
    """
    key = (id(weight), outputs, rows, np.dtype(dtype).char)
    cached = _WEIGHT_MATRICES.get(key)
    if cached is not None and cached[0] is weight:
        return cached[1]
    part = weight[outputs[0] : outputs[1], :, rows[0] : rows[1]]
    matrix = np.ascontiguousarray(part.transpose(0, 2, 3, 1).reshape(outputs[1] - outputs[0], -1).T, dtype=dtype)
    if not weight.flags.writeable:
        if len(_WEIGHT_MATRICES) >= _WEIGHT_MATRIX_CACHE_SIZE:
            del _WEIGHT_MATRICES[next(iter(_WEIGHT_MATRICES))]
        _WEIGHT_MATRICES[key] = (weight, matrix)
    return matrix


def pad_nhwc(x: np.ndarray, pads: Sequence[int], dtype) -> np.ndarray:
    """An N x H x W x C map as `dtype`, zero padded by ONNX-ordered pads [top, left, bottom, right]."""
    n, h, w, c = x.shape
    top, left, bottom, right = pads
    # only the border is zeroed: np.zeros and then the map would write the map's bytes twice
    # (a 1x1 convolution's whole input, which has no border)
    padded = np.empty((n, h + top + bottom, w + left + right, c), dtype=dtype)
    padded[:, :top] = 0
    padded[:, top + h :] = 0
    padded[:, top : top + h, :left] = 0
    padded[:, top : top + h, left + w :] = 0
    padded[:, top : top + h, left : left + w] = x
    return padded


def conv_gemms_nhwc(
    padded: np.ndarray,
    matrix,
    kernel: Sequence[int],
    strides: Sequence[int],
    dilations: Sequence[int],
    out_channels: int,
    exact: bool = False,
) -> np.ndarray:
    """A dense convolution of a zero-padded N x H x W x C map as GEMMs: N x OH x OW x O.

    `matrix((first, last))` gives the weight rows of kernel rows [first, last) as a
    (taps * C) x O matrix, rows ordered (kh, kw, c), in the dtype of `padded`. A 1x1 kernel is
    one GEMM on the map itself; with vertical stride 1 the horizontal windows are gathered
    once and each kernel row is one GEMM on a slice of them (no copy per kernel row, the
    samples' rows in one GEMM); otherwise one GEMM on the full windows (im2col). With `exact`
    (the sums are integers float32 holds exactly, R13: any order of the additions gives them),
    samples of few output rows take the im2col GEMM too, where the rows between samples
    would be over a quarter of the row-wise GEMMs' (a thin tile of several samples: ~3x
    faster), which leaves float results as they are.
    """
    n, hp, wp, c = padded.shape
    kh, kw = kernel
    (sh, sw), (dh, dw) = strides, dilations
    oh = (hp - (dh * (kh - 1) + 1)) // sh + 1
    ow = (wp - (dw * (kw - 1) + 1)) // sw + 1
    o = out_channels
    if kh == 1 and kw == 1:
        cols = padded[:, : sh * (oh - 1) + 1 : sh, : sw * (ow - 1) + 1 : sw].reshape(-1, c)
        return (cols @ matrix((0, 1))).reshape(n, oh, ow, o)
    span_w = dw * (kw - 1) + 1
    if sh == 1 and not (exact and 4 * ((n - 1) * hp + oh) > 5 * n * oh):
        windows = sliding_windows(padded, (span_w,), (2,))[:, :, : sw * (ow - 1) + 1 : sw, :, ::dw]
        cols = np.ascontiguousarray(windows.transpose(0, 1, 2, 4, 3)).reshape(n * hp, ow, kw * c)
        rows = (n - 1) * hp + oh  # one GEMM per kernel row covers every sample (rows between are unused)
        out = np.empty((n * hp, ow, o), dtype=padded.dtype)
        for i in range(kh):
            lhs = cols[i * dh : i * dh + rows].reshape(rows * ow, kw * c)
            if i == 0:
                np.matmul(lhs, matrix((0, 1)), out=out[:rows].reshape(rows * ow, o))
            else:
                out[:rows] += (lhs @ matrix((i, i + 1))).reshape(rows, ow, o)
        return out.reshape(n, hp, ow, o)[:, :oh]
    span_h = dh * (kh - 1) + 1
    windows = sliding_windows(padded, (span_h, span_w), (1, 2))
    windows = windows[:, : sh * (oh - 1) + 1 : sh, : sw * (ow - 1) + 1 : sw, :, ::dh, ::dw]
    cols = np.ascontiguousarray(windows.transpose(0, 1, 2, 4, 5, 3)).reshape(n * oh * ow, kh * kw * c)
    return (cols @ matrix((0, kh))).reshape(n, oh, ow, o)


def _depthwise_taps_nhwc(padded: np.ndarray, taps: np.ndarray, strides, dilations) -> np.ndarray:
    """sum over the KH x KW taps of padded-window * taps[i, j] (per channel): N x OH x OW x C."""
    kh, kw, _ = taps.shape
    (sh, sw), (dh, dw) = strides, dilations
    oh, ow = conv_output_hw(padded.shape[1:3], (kh, kw), strides, (0, 0, 0, 0), dilations)
    out, product = None, None
    for i in range(kh):
        for j in range(kw):
            top, left = i * dh, j * dw
            tap = padded[:, top : top + sh * (oh - 1) + 1 : sh, left : left + sw * (ow - 1) + 1 : sw]
            if out is None:
                out, product = tap * taps[i, j], np.empty((padded.shape[0], oh, ow, taps.shape[2]), padded.dtype)
            else:
                out += np.multiply(tap, taps[i, j], out=product)
    return out


def conv2d_accumulate(
    x: np.ndarray,
    weight: np.ndarray,
    strides: Sequence[int],
    pads: Sequence[int],
    dilations: Sequence[int],
    group: int,
    dtype: type = np.float32,
) -> np.ndarray:
    """sum over (c, kh, kw) of x * weight, per output channel, in `dtype` (no bias); NCHW in
    and out (the result a view of N x OH x OW x O memory: the next convolution's gather wants
    exactly that order)."""
    n, c = x.shape[:2]
    out_channels, c_per_group, kh, kw = weight.shape
    if c_per_group == 1 and out_channels == group and group > 1:
        # depthwise: one input channel per output channel, a multiply-add per kernel tap on the
        # NHWC map (an einsum over the 6-D window view copied the windows: 5x slower)
        padded = pad_nhwc(x.transpose(0, 2, 3, 1), pads, dtype)
        taps = weight[:, 0].transpose(1, 2, 0).astype(dtype)
        return _depthwise_taps_nhwc(padded, taps, strides, dilations).transpose(0, 3, 1, 2)
    padded = pad_nhwc(x.transpose(0, 2, 3, 1), pads, dtype)
    out_per_group = out_channels // group
    results = []
    for g in range(group):
        outputs = (g * out_per_group, (g + 1) * out_per_group)
        group_map = padded if group == 1 else padded[..., g * c_per_group : (g + 1) * c_per_group]
        out = conv_gemms_nhwc(group_map, lambda rows: _weight_rows(weight, outputs, rows, dtype), (kh, kw), strides,
                              dilations, out_per_group)
        results.append(out.transpose(0, 3, 1, 2))
    return results[0] if group == 1 else np.concatenate(results, axis=1)


def conv2d(
    x: np.ndarray,
    weight: np.ndarray,
    bias: np.ndarray | None,
    strides: Sequence[int],
    pads: Sequence[int],
    dilations: Sequence[int],
    group: int,
) -> np.ndarray:
    out = conv2d_accumulate(x, weight, strides, pads, dilations, group, np.float32)
    if bias is not None:
        out += bias.reshape(1, -1, 1, 1)  # in place: the sums are a fresh array
    # kept in the GEMM's NHWC memory order: the next convolution's gather wants exactly that
    return out.astype(np.float32, copy=False)


def zero_insert(x: np.ndarray, strides: Sequence[int]) -> np.ndarray:
    """NCHW x with strides - 1 zeros between neighbouring pixels: (H - 1) * sh + 1 by (W - 1) * sw + 1."""
    sh, sw = strides
    if (sh, sw) == (1, 1):
        return x
    n, c, h, w = x.shape
    out = np.zeros((n, c, (h - 1) * sh + 1, (w - 1) * sw + 1), dtype=x.dtype)
    out[:, :, ::sh, ::sw] = x
    return out


def conv_transpose_as_conv(
    weight: np.ndarray, pads: Sequence[int], dilations: Sequence[int], output_padding: Sequence[int], group: int
) -> tuple[np.ndarray, tuple[int, int, int, int]]:
    """A transposed convolution as a stride-1 convolution of the zero-inserted input.

    Returns the OIHW weight of that convolution (each group's C x O block transposed and the
    kernel flipped) and its [top, left, bottom, right] pads, negative where the transposed
    convolution's pads cut more than the kernel's reach (the input is cropped there).
    """
    c, o_per_group, kh, kw = weight.shape
    c_per_group = c // group
    blocks = [
        weight[g * c_per_group : (g + 1) * c_per_group].transpose(1, 0, 2, 3)[:, :, ::-1, ::-1]
        for g in range(group)
    ]
    conv_weight = np.ascontiguousarray(np.concatenate(blocks, axis=0))
    reach = (dilations[0] * (kh - 1), dilations[1] * (kw - 1))
    conv_pads = (
        reach[0] - pads[0],
        reach[1] - pads[1],
        reach[0] - pads[2] + output_padding[0],
        reach[1] - pads[3] + output_padding[1],
    )
    return conv_weight, conv_pads


def conv_transpose_output_channels(weight_shape: Sequence[int], group: int) -> np.ndarray:
    """The output channel fed by each (c, j) slice of a C x O/group x KH x KW ConvTranspose weight (C x O/group)."""
    c, o_per_group = weight_shape[:2]
    return (np.arange(c)[:, None] // (c // group)) * o_per_group + np.arange(o_per_group)[None, :]


def pad_or_crop_nchw(x: np.ndarray, pads: Sequence[int]) -> np.ndarray:
    """Zero-pad H and W by [top, left, bottom, right]; a negative amount crops that side instead."""
    top, left, bottom, right = pads
    x = x[:, :, max(-top, 0) : x.shape[2] - max(-bottom, 0), max(-left, 0) : x.shape[3] - max(-right, 0)]
    return pad_nchw(x, (max(top, 0), max(left, 0), max(bottom, 0), max(right, 0)))


def conv_transpose2d(
    x: np.ndarray,
    weight: np.ndarray,
    bias: np.ndarray | None,
    strides: Sequence[int],
    pads: Sequence[int],
    dilations: Sequence[int],
    output_padding: Sequence[int],
    group: int,
) -> np.ndarray:
    """ONNX ConvTranspose: a convolution of the zero-inserted input with the flipped kernel."""
    conv_weight, conv_pads = conv_transpose_as_conv(weight, pads, dilations, output_padding, group)
    padded = pad_or_crop_nchw(zero_insert(x, strides), conv_pads)
    return conv2d(padded, conv_weight, bias, (1, 1), (0, 0, 0, 0), dilations, group)


def gemm(
    a: np.ndarray, b: np.ndarray, c: np.ndarray | None, alpha: float, beta: float, trans_a: bool, trans_b: bool
) -> np.ndarray:
    a = a.T if trans_a else a
    b = b.T if trans_b else b
    out = (a @ b) * np.float32(alpha)
    if c is not None:
        out = out + np.float32(beta) * c
    return out.astype(np.float32, copy=False)


def matmul(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    return np.matmul(a, b).astype(np.float32, copy=False)


def add(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    return np.add(a, b, dtype=np.float32)


def sub(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    return np.subtract(a, b, dtype=np.float32)


def mul(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    return np.multiply(a, b, dtype=np.float32)


def div(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    with np.errstate(divide="ignore", invalid="ignore"):
        return np.divide(a, b, dtype=np.float32)


def relu(x: np.ndarray) -> np.ndarray:
    return np.maximum(x, np.float32(0))


def clip(x: np.ndarray, low: float, high: float) -> np.ndarray:
    return np.clip(x, np.float32(low), np.float32(high)).astype(np.float32, copy=False)


def sigmoid(x: np.ndarray) -> np.ndarray:
    # the two-branch form avoids overflow in exp for large |x|
    x64 = x.astype(np.float64)
    out = np.where(x64 >= 0, 1.0 / (1.0 + np.exp(-np.abs(x64))), np.exp(-np.abs(x64)) / (1.0 + np.exp(-np.abs(x64))))
    return out.astype(np.float32)


def tanh(x: np.ndarray) -> np.ndarray:
    return np.tanh(x).astype(np.float32, copy=False)


def hard_sigmoid(x: np.ndarray, alpha: float, beta: float) -> np.ndarray:
    return np.clip(np.float32(alpha) * x + np.float32(beta), 0, 1).astype(np.float32)


def leaky_relu(x: np.ndarray, alpha: float) -> np.ndarray:
    return np.where(x >= 0, x, np.float32(alpha) * x).astype(np.float32, copy=False)


def hard_swish(x: np.ndarray) -> np.ndarray:
    return (x * hard_sigmoid(x, 1.0 / 6.0, 0.5)).astype(np.float32)


_ERF = np.frompyfunc(math.erf, 1, 1)  # numpy has no erf; math.erf in float64


def gelu(x: np.ndarray) -> np.ndarray:
    """x * Phi(x) = x / 2 * (1 + erf(x / sqrt(2))), computed in float64, as ONNX Gelu (approximate none)."""
    x64 = np.asarray(x, np.float64)
    return (0.5 * x64 * (1.0 + _ERF(x64 / math.sqrt(2.0)).astype(np.float64))).astype(np.float32)


def silu(x: np.ndarray) -> np.ndarray:
    """x * sigmoid(x) (swish with beta 1)."""
    return (np.asarray(x, np.float64) * sigmoid(np.asarray(x, np.float32)).astype(np.float64)).astype(np.float32)


def mean_square(x: np.ndarray) -> np.ndarray:
    """The mean of x * x over the last axis, kept (a LayerNorm's variance of its deviations,
    expand-layer-norm), summed in float64."""
    x64 = np.asarray(x, np.float64)
    return (x64 * x64).mean(axis=-1, keepdims=True).astype(np.float32)


def reciprocal_sqrt(x: np.ndarray, epsilon: float) -> np.ndarray:
    """1 / sqrt(x + epsilon) for epsilon > 0, x clipped at 0 (a variance: an int8 code below 0 cannot
    stand for one); a LayerNorm's reciprocal deviation (expand-layer-norm)."""
    x64 = np.maximum(np.asarray(x, np.float64), 0.0) + float(epsilon)
    return (1.0 / np.sqrt(x64)).astype(np.float32)


def softmax(x: np.ndarray, axis: int) -> np.ndarray:
    shifted = x - x.max(axis=axis, keepdims=True)
    e = np.exp(shifted.astype(np.float64))
    return (e / e.sum(axis=axis, keepdims=True)).astype(np.float32)


def layer_norm(x: np.ndarray, scale: np.ndarray, bias: np.ndarray, axis: int, epsilon: float) -> np.ndarray:
    """ONNX LayerNormalization: mean and biased variance over the axes from `axis` to the last,
    in float64, then scale and bias (broadcast) in float32."""
    axes = tuple(range(axis % x.ndim, x.ndim))
    x64 = np.asarray(x, np.float64)
    centred = x64 - x64.mean(axis=axes, keepdims=True)
    variance = (centred * centred).mean(axis=axes, keepdims=True)
    normalized = (centred / np.sqrt(variance + np.float64(np.float32(epsilon)))).astype(np.float32)
    return (normalized * scale + bias).astype(np.float32, copy=False)


def batch_norm(
    x: np.ndarray, scale: np.ndarray, bias: np.ndarray, mean: np.ndarray, var: np.ndarray, epsilon: float
) -> np.ndarray:
    shape = (1, -1) + (1,) * (x.ndim - 2)
    inv = (scale / np.sqrt(var + np.float32(epsilon))).astype(np.float32)
    return ((x - mean.reshape(shape)) * inv.reshape(shape) + bias.reshape(shape)).astype(np.float32)


def _pool_padded(x, kernel, strides, pads, dilations, out_hw, pad_value) -> np.ndarray:
    """x padded by the declared pads, and further right/bottom so ceil-mode windows exist."""
    h, w = x.shape[2:]
    need_h = (out_hw[0] - 1) * strides[0] + dilations[0] * (kernel[0] - 1) + 1
    need_w = (out_hw[1] - 1) * strides[1] + dilations[1] * (kernel[1] - 1) + 1
    bottom = max(pads[2], need_h - h - pads[0])
    right = max(pads[3], need_w - w - pads[1])
    return pad_nchw(x, (pads[0], pads[1], bottom, right), pad_value)


def pool_windows(
    x: np.ndarray,
    kernel: Sequence[int],
    strides: Sequence[int],
    pads: Sequence[int],
    dilations: Sequence[int],
    out_hw: Sequence[int],
    pad_value: float,
) -> np.ndarray:
    """Windows for pooling (N x C x OH x OW x KH x KW), ceil-mode windows included."""
    padded = _pool_padded(x, kernel, strides, pads, dilations, out_hw, pad_value)
    return window_view(padded, kernel, strides, dilations, out_hw)


def max_pool(
    x: np.ndarray,
    kernel: Sequence[int],
    strides: Sequence[int],
    pads: Sequence[int],
    dilations: Sequence[int],
    out_hw: Sequence[int],
) -> np.ndarray:
    """Max over each window; padding never wins. Shared by the float and integer levels."""
    fill = -np.inf if np.issubdtype(x.dtype, np.floating) else np.iinfo(x.dtype).min
    padded = _pool_padded(x, kernel, strides, pads, dilations, out_hw, fill)
    # one strided slice per kernel tap: a reduction over the 6-D window view is 10x slower
    out = None
    for i in range(kernel[0]):
        for j in range(kernel[1]):
            top, left = i * dilations[0], j * dilations[1]
            tap = padded[:, :, top : top + (out_hw[0] - 1) * strides[0] + 1 : strides[0],
                         left : left + (out_hw[1] - 1) * strides[1] + 1 : strides[1]]
            out = tap.copy(order="K") if out is None else np.maximum(out, tap, out=out)  # x's memory order
    return out


def average_pool_counts(
    hw: Sequence[int], kernel: Sequence[int], strides: Sequence[int], pads: Sequence[int], out_hw: Sequence[int],
    count_include_pad: bool,
) -> np.ndarray:
    """The divisor of every output position: OH x OW."""
    ones = np.ones((1, 1, *hw), dtype=np.int64)
    if count_include_pad:
        # padding counts, but the extra ceil-mode area beyond the declared pads does not
        ones = pad_nchw(ones, pads, 1)
        pads = (0, 0, 0, 0)
    counts = pool_windows(ones, kernel, strides, pads, (1, 1), out_hw, 0).sum(axis=(4, 5))
    return counts[0, 0]


def average_pool(
    x: np.ndarray,
    kernel: Sequence[int],
    strides: Sequence[int],
    pads: Sequence[int],
    out_hw: Sequence[int],
    count_include_pad: bool,
) -> np.ndarray:
    windows = pool_windows(x.astype(np.float64), kernel, strides, pads, (1, 1), out_hw, 0.0)
    sums = windows.sum(axis=(4, 5))
    counts = average_pool_counts(x.shape[2:], kernel, strides, pads, out_hw, count_include_pad)
    return (sums / counts).astype(np.float32)


def global_average_pool(x: np.ndarray) -> np.ndarray:
    axes = tuple(range(2, x.ndim))
    return x.astype(np.float64).mean(axis=axes, keepdims=True).astype(np.float32)


def reshape(x: np.ndarray, shape: Sequence[int]) -> np.ndarray:
    return x.reshape(shape)


def flatten(x: np.ndarray, axis: int) -> np.ndarray:
    return x.reshape(math.prod(x.shape[:axis]), -1)


def transpose(x: np.ndarray, perm: Sequence[int]) -> np.ndarray:
    return np.ascontiguousarray(np.transpose(x, perm))



def resize_source_coordinates(in_size: int, out_size: int, coordinate_mode: str) -> np.ndarray:
    """Where each output pixel of an integer upsampling lies in the input (ONNX Resize's
    coordinate_transformation_mode), as exact float64 values."""
    out = np.arange(out_size, dtype=np.float64)
    factor = out_size / in_size
    if coordinate_mode == "asymmetric":
        return out / factor
    if coordinate_mode == "half_pixel":
        return (out + 0.5) / factor - 0.5
    if coordinate_mode == "align_corners":
        return out * (in_size - 1) / (out_size - 1) if out_size > 1 else np.zeros(out_size)
    raise ValueError(f"unknown coordinate_transformation_mode '{coordinate_mode}'")


def nearest_source_indices(in_size: int, out_size: int, coordinate_mode: str, nearest_mode: str) -> np.ndarray:
    """The input pixel each output pixel copies in a nearest resize (ONNX nearest_mode, clamped to the input)."""
    x = resize_source_coordinates(in_size, out_size, coordinate_mode)
    if nearest_mode == "floor":
        index = np.floor(x)
    elif nearest_mode == "ceil":
        index = np.ceil(x)
    elif nearest_mode == "round_prefer_floor":
        index = np.where(x - np.floor(x) == 0.5, np.floor(x), np.round(x))
    elif nearest_mode == "round_prefer_ceil":
        index = np.where(x - np.floor(x) == 0.5, np.ceil(x), np.round(x))
    else:
        raise ValueError(f"unknown nearest_mode '{nearest_mode}'")
    return np.clip(index, 0, in_size - 1).astype(np.int64)


def linear_source_taps(in_size: int, out_size: int, coordinate_mode: str) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """For each output pixel of a linear resize: its two input pixels and the weight of the second."""
    x = np.clip(resize_source_coordinates(in_size, out_size, coordinate_mode), 0, in_size - 1)
    first = np.floor(x).astype(np.int64)
    second = np.minimum(first + 1, in_size - 1)
    return first, second, x - first


def resize(
    x: np.ndarray, out_hw: Sequence[int], mode: str, coordinate_mode: str, nearest_mode: str | None
) -> np.ndarray:
    """ONNX Resize of H and W (nearest or linear) to `out_hw`."""
    (h, w), (oh, ow) = x.shape[2:], out_hw
    if mode == "nearest":
        rows = nearest_source_indices(h, oh, coordinate_mode, nearest_mode)
        cols = nearest_source_indices(w, ow, coordinate_mode, nearest_mode)
        return np.ascontiguousarray(x[:, :, rows[:, None], cols[None, :]])
    if mode != "linear":
        raise ValueError(f"unknown resize mode '{mode}'")
    out = x.astype(np.float64)
    for axis, (size, out_size) in ((2, (h, oh)), (3, (w, ow))):
        first, second, weight = linear_source_taps(size, out_size, coordinate_mode)
        shape = [1, 1, 1, 1]
        shape[axis] = out_size
        weight = weight.reshape(shape)
        out = np.take(out, first, axis=axis) * (1 - weight) + np.take(out, second, axis=axis) * weight
    return out.astype(np.float32)


def concat(xs: Sequence[np.ndarray], axis: int) -> np.ndarray:
    return np.concatenate(xs, axis=axis)
