"""The loops of the integer semantics that numpy cannot run at memory speed, compiled by numba.

Only `convolution.compiled_loops` imports this module (lazily: numba costs ~0.3 s to import, paid by the
processes that run a convolution or an ELTWISE at an integer level). Each kernel is the rule its
fixed_point caller cites, written as the loop the rule describes; they are the one
implementation of that arithmetic, not a faster copy of a numpy one.

numba compiles a kernel once per argument types and caches the machine code on disk
(xnpu.core.jit.jit), so later processes load it. No fastmath: every float operation is
IEEE, in the order written, as numpy would do it.
"""

from __future__ import annotations

import numpy as np

from xnpu.core.jit import jit


@jit
def depthwise_sums(x, weight, sh, sw, dh, dw, pad_top, pad_left, sums):
    """R13 for a depthwise convolution: sums[n, i, j, c] = sum over the taps (u, v) inside the
    input of x[n, i*sh + u*dh - pad_top, j*sw + v*dw - pad_left, c] * weight[u, v, c].

    Taps in the zero padding add nothing and are skipped. `sums` (N x OH x OW x C) is an
    integer array wide enough for every sum (the caller chooses int32 or int64 from the
    operands' bound); products are formed in that width.
    """
    n, h, w, c = x.shape
    kh, kw, _ = weight.shape
    _, oh, ow, _ = sums.shape
    for b in range(n):
        for i in range(oh):
            for j in range(ow):
                row = sums[b, i, j]
                row[:] = 0
                for u in range(kh):
                    y = i * sh + u * dh - pad_top
                    if y < 0 or y >= h:
                        continue
                    for v in range(kw):
                        z = j * sw + v * dw - pad_left
                        if z < 0 or z >= w:
                            continue
                        for k in range(c):
                            row[k] += x[b, y, z, k] * weight[u, v, k]
    return sums


@jit
def table_lookup(q, table, out):
    """R15 for int8 codes through an `int8_lookup_table`: out[...] = table[byte of q], q and
    `out` N x H x W x C (any strides; `out` may be `q`, each element read before it is written).
    numpy's take first widens the int8 indices to intp: ~8 ns an element against ~1 here."""
    n, h, w, c = q.shape
    for b in range(n):
        for i in range(h):
            for j in range(w):
                for k in range(c):
                    out[b, i, j, k] = table[np.uint8(q[b, i, j, k])]
    return out


@jit
def requantize(acc, factor, constant, bias, low, high, out):
    """R13's bias, R9's rescale and R8's clamp of integer-valued sums, channels last:
    out[..., k] = clip(floor(a * factor[k] + constant[k]), low, high), where a = acc[..., k],
    or, when `bias` is not empty, a = clip(acc[..., k] + bias[k], -(2^31 - 1), 2^31 - 1)
    (the int32 saturation of R13). Every step is exact in float64 (fixed_point.rescale_float
    gives the argument), so this is R6 on integers. `acc` and `out` are N x H x W x C;
    `factor` and `constant` have C entries."""
    n, h, w, c = acc.shape
    limit = 2147483647.0
    with_bias = bias.size > 0
    for b in range(n):
        for i in range(h):
            for j in range(w):
                for k in range(c):
                    a = np.float64(acc[b, i, j, k])
                    if with_bias:
                        a = min(max(a + bias[k], -limit), limit)
                    r = np.floor(a * factor[k] + constant[k])
                    out[b, i, j, k] = min(max(r, low), high)
    return out


@jit
def eltwise(a, b, multiply, a_factor, a_rounding, b_factor, b_rounding, sign, wide_limit, pre_scale, narrow_limit,
            factor, rounding, low, high, out):
    """ELTWISE on two flat integer arrays of one size. With `multiply`: R12, a * b saturated to
    +-narrow_limit (int16). Otherwise add/sub: R6 of each input (floor(x * M * 2^-shift +
    rounding), exact for |x| <= 2^31), their sum or difference (`sign` -1) saturated to
    +-wide_limit (R10, int24), with `pre_scale` > 0 the truncating R7 shift
    floor(w * pre_scale) saturated to +-narrow_limit (seed 000's int16 stage). Then R9 to
    [low, high]. Every value is an integer below 2^46 held exactly in float64, as in
    fixed_point.rescale_float."""
    for k in range(a.size):
        if multiply:
            wide = min(max(np.float64(a[k]) * np.float64(b[k]), -narrow_limit), narrow_limit)
        else:
            left = np.floor(np.float64(a[k]) * a_factor + a_rounding)
            right = np.floor(np.float64(b[k]) * b_factor + b_rounding)
            wide = min(max(left + sign * right, -wide_limit), wide_limit)
            if pre_scale > 0.0:
                wide = min(max(np.floor(wide * pre_scale), -narrow_limit), narrow_limit)
        y = np.floor(wide * factor + rounding)
        out[k] = min(max(y, low), high)
    return out
