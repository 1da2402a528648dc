"""The compiled loops (semantics/fixed_point_loops.c, transforms/calibrate_loops.c) against a
plain numpy statement of each rule, on small random inputs of every element type the callers
pass (and the others the loops accept), strided views and aliasing included; and arguments
that do not fit raise TypeError or ValueError instead of reaching a loop."""

from __future__ import annotations

import numpy as np
import pytest

from xnpu.semantics import fixed_point_loops as loops
from xnpu.transforms import calibrate_loops

INTEGERS = [np.int8, np.uint8, np.int16, np.uint16, np.int32, np.uint32, np.int64, np.uint64]
NUMERIC = [*INTEGERS, np.float32, np.float64]
RNG = np.random.default_rng(21)


def small(dtype, shape, limit=100):
    """Random values of `dtype` that every loop's arithmetic holds exactly."""
    low = 0 if np.dtype(dtype).kind == "u" else -limit
    return RNG.integers(low, limit, shape).astype(dtype)


def strided(array: np.ndarray) -> np.ndarray:
    """The same values as a view with gaps along every axis (every second element)."""
    wide = np.zeros(tuple(2 * n for n in array.shape), dtype=array.dtype)
    view = wide[tuple(slice(None, None, 2) for _ in array.shape)]
    view[...] = array
    return view


def depthwise_reference(x, weight, strides, pads, dilations, out_hw):
    n, h, w, c = x.shape
    kh, kw, _ = weight.shape
    sums = np.zeros((n, *out_hw, c), dtype=np.int64)
    for u in range(kh):
        for v in range(kw):
            for i in range(out_hw[0]):
                for j in range(out_hw[1]):
                    y, z = i * strides[0] + u * dilations[0] - pads[0], j * strides[1] + v * dilations[1] - pads[1]
                    if 0 <= y < h and 0 <= z < w:
                        sums[:, i, j] += x[:, y, z].astype(np.int64) * weight[u, v].astype(np.int64)
    return sums


@pytest.mark.parametrize("x_type", INTEGERS)
@pytest.mark.parametrize("sums_type", [np.int32, np.int64])
def test_depthwise_sums_are_the_taps_inside_the_input(x_type, sums_type):
    x = small(x_type, (2, 6, 7, 5))
    weight = small(np.int8, (3, 2, 5))
    for view, strides, pads, dilations in ((x, (1, 1), (1, 0), (1, 1)), (strided(x), (2, 1), (0, 1), (1, 2)),
                                           (x.transpose(0, 2, 1, 3), (1, 2), (2, 2), (2, 1))):
        out_hw = ((view.shape[1] + 2 * pads[0] - dilations[0] * 2 - 1) // strides[0] + 1,
                  (view.shape[2] + 2 * pads[1] - dilations[1] - 1) // strides[1] + 1)
        sums = np.full((2, *out_hw, 5), 99, dtype=sums_type)
        result = loops.depthwise_sums(view, weight, *strides, *dilations, *pads, sums)
        assert result is sums
        assert np.array_equal(sums, depthwise_reference(view, weight, strides, pads, dilations, out_hw))


def test_depthwise_weights_of_any_integer_type_and_strides():
    x = small(np.int16, (1, 5, 5, 4))
    weight = small(np.int8, (3, 3, 4))
    expected = depthwise_reference(x, weight, (1, 1), (1, 1), (1, 1), (5, 5))
    for same in (weight.astype(np.int64), strided(weight.astype(np.int32)), weight.astype(np.int16)):
        sums = loops.depthwise_sums(x, same, 1, 1, 1, 1, 1, 1, np.empty((1, 5, 5, 4), dtype=np.int32))
        assert np.array_equal(sums, expected)


def test_table_lookup_reads_each_code_as_a_byte_also_in_place_and_strided():
    table = small(np.int8, 256, 128)
    q = small(np.int8, (2, 3, 4, 9), 128)
    expected = table[q.view(np.uint8)]
    out = np.empty_like(q)
    assert loops.table_lookup(q, table, out) is out and np.array_equal(out, expected)
    view = strided(q)
    assert np.array_equal(loops.table_lookup(view, table, strided(np.zeros_like(q))), expected)
    in_place = q.copy()
    loops.table_lookup(in_place, table, in_place)
    assert np.array_equal(in_place, expected)
    transposed = q.copy().transpose(0, 2, 1, 3)
    loops.table_lookup(transposed, table, transposed)  # `out` is `q`, a view of any strides
    assert np.array_equal(transposed, expected.transpose(0, 2, 1, 3))


def requantize_reference(acc, factor, constant, bias, low, high):
    a = acc.astype(np.float64)
    if bias.size:
        a = np.clip(a + bias, -(2.0**31 - 1), 2.0**31 - 1)
    return np.clip(np.floor(a * factor + constant), low, high)


@pytest.mark.parametrize("acc_type", NUMERIC)
@pytest.mark.parametrize("out_type", INTEGERS)
def test_requantize_is_rescale_and_clamp_per_channel(acc_type, out_type):
    c = 6
    acc = small(acc_type, (2, 3, 4, c), 120)
    factor = RNG.uniform(0.05, 2.0, c)
    constant = RNG.uniform(-3.0, 3.0, c)
    bias = RNG.integers(-50, 50, c).astype(np.float64)
    low, high = (0.0, 100.0) if np.dtype(out_type).kind == "u" else (-100.0, 100.0)
    for with_bias in (np.zeros(0), bias):
        expected = requantize_reference(acc, factor, constant, with_bias, low, high)
        out = np.empty(acc.shape, dtype=out_type)
        assert loops.requantize(acc, factor, constant, with_bias, low, high, out) is out
        assert np.array_equal(out, expected)
        out = strided(np.zeros(acc.shape, dtype=out_type))
        loops.requantize(strided(acc), factor, constant, with_bias, low, high, out)
        assert np.array_equal(out, expected)


def test_requantize_saturates_the_biased_sum_to_int32():
    acc = np.array([2**31 - 10, -(2**31) + 10, 5, -5], dtype=np.int64).reshape(1, 1, 1, 4)
    bias = np.array([100.0, -100.0, 0.0, 0.0])
    factor, constant = np.full(4, 2.0**-24), np.full(4, 0.5)
    out = np.empty(acc.shape, dtype=np.int32)
    loops.requantize(acc, factor, constant, bias, -(2.0**31), 2.0**31 - 1, out)
    assert np.array_equal(out, requantize_reference(acc, factor, constant, bias, -(2.0**31), 2.0**31 - 1))
    assert out[0, 0, 0, 0] == 128  # floor((2^31 - 1) * 2^-24 + 0.5), not of 2^31 + 90


def eltwise_reference(a, b, multiply, a_factor, a_rounding, b_factor, b_rounding, sign, wide_limit, pre_scale,
                      narrow_limit, factor, rounding, low, high):
    a, b = a.astype(np.float64), b.astype(np.float64)
    if multiply:
        wide = np.clip(a * b, -narrow_limit, narrow_limit)
    else:
        left, right = np.floor(a * a_factor + a_rounding), np.floor(b * b_factor + b_rounding)
        wide = np.clip(left + sign * right, -wide_limit, wide_limit)
        if pre_scale > 0.0:
            wide = np.clip(np.floor(wide * pre_scale), -narrow_limit, narrow_limit)
    return np.clip(np.floor(wide * factor + rounding), low, high)


ELTWISE_CASES = {
    "add": (False, 0.75, 0.5, 1.25, 0.5, 1.0, 2.0**23 - 1, 0.0, 2.0**15 - 1, 0.125, 0.5, -128.0, 127.0),
    "sub two-stage": (False, 3.5, 0.5, 2.25, 0.0, -1.0, 2.0**23 - 1, 0.25, 2.0**15 - 1, 0.5, 0.5, 0.0, 127.0),
    "mul": (True, 0.0, 0.0, 0.0, 0.0, 1.0, 2.0**23 - 1, 0.0, 2.0**15 - 1, 2.0**-6, 0.5, -128.0, 127.0),
}


@pytest.mark.parametrize("case", sorted(ELTWISE_CASES))
@pytest.mark.parametrize("a_type", NUMERIC)
@pytest.mark.parametrize("b_type", [np.int8, np.int32, np.float64])
def test_eltwise_is_its_rule_on_float64_values(case, a_type, b_type):
    factors = ELTWISE_CASES[case]
    size = 1500  # more than one of the loop's chunks
    a, b = small(a_type, size, 120), small(b_type, size, 120)
    expected = eltwise_reference(a, b, *factors)
    out = np.empty(size, dtype=np.int8)
    assert loops.eltwise(a, b, *factors, out) is out
    assert np.array_equal(out, expected)
    wide = np.empty(size, dtype=np.int64)  # views of any strides, any integer output
    loops.eltwise(a[::-1], strided(b), *factors, wide[::-1])
    assert np.array_equal(wide[::-1], eltwise_reference(a[::-1], b, *factors))


def histogram_arguments(values, bins, low, high, magnitudes, clip):
    as_values = values.dtype.type
    edges = np.linspace(low, high, bins + 1, dtype=values.dtype)
    clip_low, clip_high = (-np.inf, np.inf) if clip is None else clip
    return (as_values(low), as_values(high), bins / (high - low), edges, magnitudes, as_values(clip_low),
            as_values(clip_high))


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("magnitudes", [False, True])
@pytest.mark.parametrize("clip", [None, (-0.5, 1.0)])
def test_histograms_count_what_numpy_counts(dtype, magnitudes, clip):
    values = RNG.normal(0, 1, (4, 3, 50)).astype(dtype)
    values[0, 0, :3] = [np.nan, np.inf, -np.inf]
    low, high, bins = (0.0, 1.5, 40) if magnitudes else (-1.5, 1.5, 33)
    arguments = histogram_arguments(values, bins, low, high, magnitudes, clip)

    def numpy_counts(x):
        x = x if clip is None else np.clip(x, dtype(clip[0]), dtype(clip[1]))
        return np.histogram(np.abs(x) if magnitudes else x, bins=bins, range=(low, high))[0]

    flat = values.ravel()
    counts = np.zeros(bins, dtype=np.int64)
    assert calibrate_loops.uniform_histogram(flat, *arguments, counts) is counts
    assert np.array_equal(counts, numpy_counts(flat))
    assert np.array_equal(calibrate_loops.uniform_histogram(flat[::3], *arguments, np.zeros(bins, dtype=np.int64)),
                          numpy_counts(flat[::3]))
    per_channel = np.zeros((3, bins), dtype=np.int64)
    for view in (values, strided(values), values.transpose(2, 1, 0)[:4].transpose(2, 1, 0)):
        per_channel[...] = 0
        calibrate_loops.channel_histograms(view, *arguments, per_channel)
        assert np.array_equal(per_channel, [numpy_counts(view[:, c]) for c in range(3)])


def test_the_loops_release_the_gil_and_count_alike_on_threads():
    from concurrent.futures import ThreadPoolExecutor

    values = RNG.normal(0, 1, 1 << 16).astype(np.float32)
    arguments = histogram_arguments(values, 64, -2.0, 2.0, False, None)
    with ThreadPoolExecutor(4) as pool:
        parts = list(pool.map(lambda part: calibrate_loops.uniform_histogram(part, *arguments,
                                                                             np.zeros(64, dtype=np.int64)),
                              np.array_split(values, 4)))
    assert np.array_equal(sum(parts), np.histogram(values, bins=64, range=(-2.0, 2.0))[0])


def quantize_reference(x, scale, limit):
    """R4's numpy steps: x / scale in float64, saturated, rounded half away from zero, NaN to 0."""
    v = np.clip(x.astype(np.float64) / scale, -limit, limit)
    return np.where(np.isnan(v), 0.0, np.copysign(np.floor(np.abs(v) + 0.5), v))


@pytest.mark.parametrize("x_type", NUMERIC)
@pytest.mark.parametrize("out_type", [np.int8, np.int16, np.int32, np.int64])
def test_quantize_is_r4_element_by_element(x_type, out_type):
    limit = float(np.iinfo(out_type).max if out_type != np.int64 else 2**31 - 1)
    scale = 0.37
    if np.dtype(x_type).kind == "f":
        edges = (np.arange(-300, 300) + 0.5) * scale  # exactly half a step beside a level, in float64
        x = np.concatenate([edges, RNG.standard_normal(700) * 1e3, [np.nan, np.inf, -np.inf, -0.0, 1e30, -1e30]])
        x = x.astype(x_type)
    else:
        x = small(x_type, (1300,), limit=120)
    expected = quantize_reference(x, scale, limit)
    out = np.full(x.shape, 77, out_type)
    assert loops.quantize(x, scale, limit, out) is out
    assert np.array_equal(out, expected.astype(out_type))
    gapped = np.zeros(2 * x.size, out_type)[::2]
    loops.quantize(strided(x), scale, limit, gapped)
    assert np.array_equal(gapped, expected.astype(out_type))


def quantize_call(**changes):
    arguments = dict(x=np.zeros(5, np.float32), scale=0.5, limit=127.0, out=np.zeros(5, np.int8))
    arguments.update(changes)
    return lambda: loops.quantize(*arguments.values())


def depthwise_call(**changes):
    arguments = dict(x=np.zeros((1, 4, 4, 3), np.int8), weight=np.zeros((3, 3, 3), np.int8), sh=1, sw=1, dh=1, dw=1,
                     pad_top=1, pad_left=1, sums=np.zeros((1, 4, 4, 3), np.int32))
    arguments.update(changes)
    return lambda: loops.depthwise_sums(*arguments.values())


def requantize_call(**changes):
    arguments = dict(acc=np.zeros((1, 2, 2, 3), np.int32), factor=np.ones(3), constant=np.zeros(3), bias=np.zeros(0),
                     low=-128.0, high=127.0, out=np.zeros((1, 2, 2, 3), np.int8))
    arguments.update(changes)
    return lambda: loops.requantize(*arguments.values())


def eltwise_call(**changes):
    arguments = dict(a=np.zeros(5, np.int8), b=np.zeros(5, np.int8), factors=ELTWISE_CASES["add"][:-2],
                     low=-128.0, high=127.0, out=np.zeros(5, np.int8))
    arguments.update(changes)
    return lambda: loops.eltwise(arguments["a"], arguments["b"], *arguments["factors"], arguments["low"],
                                 arguments["high"], arguments["out"])


def histogram_call(loop=calibrate_loops.uniform_histogram, values=np.zeros(8, np.float32), **changes):
    arguments = dict(zip(("first", "last", "bins_per_unit", "edges", "magnitudes", "clip_low", "clip_high"),
                         histogram_arguments(np.zeros(1, np.float32), 4, 0.0, 1.0, False, None)))
    arguments["counts"] = np.zeros(4, np.int64) if loop is calibrate_loops.uniform_histogram else np.zeros((1, 4), np.int64)
    arguments.update(changes)
    return lambda: loop(values, *arguments.values())


BAD_ARGUMENTS = {
    "depthwise x not an array": (TypeError, depthwise_call(x=[[1]])),
    "depthwise x float": (TypeError, depthwise_call(x=np.zeros((1, 4, 4, 3), np.float32))),
    "depthwise x 3 axes": (ValueError, depthwise_call(x=np.zeros((4, 4, 3), np.int8))),
    "depthwise channels disagree": (ValueError, depthwise_call(weight=np.zeros((3, 3, 4), np.int8))),
    "depthwise batch disagrees": (ValueError, depthwise_call(sums=np.zeros((2, 4, 4, 3), np.int32))),
    "depthwise sums int16": (TypeError, depthwise_call(sums=np.zeros((1, 4, 4, 3), np.int16))),
    "depthwise sums read-only": (ValueError, depthwise_call(sums=np.broadcast_to(np.zeros(3, np.int32), (1, 4, 4, 3)))),
    "depthwise stride not an integer": (TypeError, depthwise_call(sh=1.5)),
    "depthwise stride huge": (ValueError, depthwise_call(sw=2**40)),
    "depthwise too few arguments": (TypeError, lambda: loops.depthwise_sums(np.zeros((1, 1, 1, 1), np.int8))),
    "table too short": (ValueError, lambda: loops.table_lookup(np.zeros((1, 1, 1, 4), np.int8), np.zeros(255, np.int8),
                                                             np.zeros((1, 1, 1, 4), np.int8))),
    "table not int8": (TypeError, lambda: loops.table_lookup(np.zeros((1, 1, 1, 4), np.int8), np.zeros(256, np.int16),
                                                           np.zeros((1, 1, 1, 4), np.int8))),
    "table gapped": (ValueError, lambda: loops.table_lookup(np.zeros((1, 1, 1, 4), np.int8), np.zeros(512, np.int8)[::2],
                                                          np.zeros((1, 1, 1, 4), np.int8))),
    "table out smaller": (ValueError, lambda: loops.table_lookup(np.zeros((1, 1, 2, 4), np.int8), np.zeros(256, np.int8),
                                                               np.zeros((1, 1, 1, 4), np.int8))),
    "table q big-endian": (TypeError, lambda: loops.table_lookup(np.zeros((1, 1, 1, 4), ">i2"), np.zeros(256, np.int8),
                                                               np.zeros((1, 1, 1, 4), np.int8))),
    "requantize factor short": (ValueError, requantize_call(factor=np.ones(2))),
    "requantize factor float32": (TypeError, requantize_call(factor=np.ones(3, np.float32))),
    "requantize bias short": (ValueError, requantize_call(bias=np.ones(2))),
    "requantize constant gapped": (ValueError, requantize_call(constant=np.zeros(6)[::2])),
    "requantize out float": (TypeError, requantize_call(out=np.zeros((1, 2, 2, 3), np.float32))),
    "requantize out other shape": (ValueError, requantize_call(out=np.zeros((1, 2, 3, 3), np.int8))),
    "requantize bounds beyond int8": (ValueError, requantize_call(high=128.0)),
    "requantize bound nan": (ValueError, requantize_call(low=float("nan"))),
    "requantize acc complex": (TypeError, requantize_call(acc=np.zeros((1, 2, 2, 3), np.complex64))),
    "requantize low not a number": (TypeError, requantize_call(low="low")),
    "eltwise sizes differ": (ValueError, eltwise_call(b=np.zeros(4, np.int8))),
    "eltwise out shorter": (ValueError, eltwise_call(out=np.zeros(4, np.int8))),
    "eltwise out 2 axes": (ValueError, eltwise_call(out=np.zeros((5, 1), np.int8))),
    "eltwise bounds beyond uint8": (ValueError, eltwise_call(out=np.zeros(5, np.uint8))),
    "eltwise out bool": (TypeError, eltwise_call(out=np.zeros(5, bool))),
    "quantize sizes differ": (ValueError, quantize_call(out=np.zeros(4, np.int8))),
    "quantize out float": (TypeError, quantize_call(out=np.zeros(5, np.float64))),
    "quantize limit beyond int8": (ValueError, quantize_call(limit=128.0)),
    "quantize scale zero": (ValueError, quantize_call(scale=0.0)),
    "quantize scale nan": (ValueError, quantize_call(scale=float("nan"))),
    "quantize x 2 axes": (ValueError, quantize_call(x=np.zeros((5, 1), np.float32))),
    "quantize x float16": (TypeError, quantize_call(x=np.zeros(5, np.float16))),
    "histogram values int": (TypeError, histogram_call(values=np.zeros(8, np.int32))),
    "histogram values float16": (TypeError, histogram_call(values=np.zeros(8, np.float16))),
    "histogram edges short": (ValueError, histogram_call(edges=np.zeros(4, np.float32))),
    "histogram edges float64": (TypeError, histogram_call(edges=np.zeros(5, np.float64))),
    "histogram no bins": (ValueError, histogram_call(counts=np.zeros(0, np.int64), edges=np.zeros(1, np.float32))),
    "histogram counts int32": (TypeError, histogram_call(counts=np.zeros(4, np.int32))),
    "histogram counts gapped": (ValueError, histogram_call(counts=np.zeros(8, np.int64)[::2])),
    "channel counts rows": (ValueError, histogram_call(calibrate_loops.channel_histograms, np.zeros((1, 2, 8), np.float32))),
    "channel values 2 axes": (ValueError, histogram_call(calibrate_loops.channel_histograms, np.zeros((2, 8), np.float32))),
}


@pytest.mark.parametrize("case", sorted(BAD_ARGUMENTS))
def test_bad_arguments_raise_instead_of_reaching_a_loop(case):
    error, call = BAD_ARGUMENTS[case]
    with pytest.raises(error):
        call()


@pytest.mark.parametrize("empty_axis", range(4))
def test_arrays_with_an_empty_axis_leave_nothing_to_do(empty_axis):
    shape = [2, 3, 4, 5]
    shape[empty_axis] = 0
    x = np.zeros(shape, np.int8)
    sums = np.full(shape, 7, np.int32)
    loops.depthwise_sums(x, np.ones((3, 3, shape[3]), np.int8), 1, 1, 1, 1, 1, 1, sums)
    assert sums.size == 0 or not sums.any()
    out = np.zeros(shape, np.int8)
    channels = shape[3]
    loops.requantize(x.astype(np.int32), np.ones(channels), np.zeros(channels), np.zeros(0), -128.0, 127.0, out)
    loops.table_lookup(x, np.arange(256).astype(np.int8), out)
    assert np.array_equal(out, np.zeros(shape, np.int8))
    counts = np.zeros((shape[1], 8), np.int64)
    calibrate_loops.channel_histograms(np.zeros(shape[:3], np.float32), *histogram_arguments(
        np.zeros(1, np.float32), 8, 0.0, 1.0, False, None), counts)
    assert counts.sum() == shape[0] * shape[1] * shape[2]
