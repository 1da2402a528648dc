"""The integer contract (docs/fixed-point.md) checked rule by rule against
xnpu.semantics.fixed_point. Test names carry the rule they check (r5_..., "R5" in docstrings)."""

from __future__ import annotations

import math
import re
from fractions import Fraction
from pathlib import Path

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from xnpu.core.errors import XnpuError
from xnpu.semantics import convolution, float_ops, units, windows
from xnpu.semantics import fixed_point as fp

REPO = Path(__file__).resolve().parents[2]
CONTRACT = REPO / "docs" / "fixed-point.md"

SEED_LHS = np.array([0.5348, 0.1911, 0.0784])
SEED_RHS = np.array([0.3846, 0.7731, 0.0100])
S_L = SEED_LHS.max() / 127
S_R = SEED_RHS.max() / 127

PROPERTY = settings(max_examples=60, deadline=None)


def round_half_away(values: np.ndarray) -> np.ndarray:
    return np.sign(values) * np.floor(np.abs(values) + 0.5)


# --------------------------------------------------------------------------------------
# Every rule of the contract is cited by a test
# --------------------------------------------------------------------------------------


def test_every_rule_of_the_contract_is_cited_by_a_test():
    """The rule list is parsed from docs/fixed-point.md; each rule must appear in a test
    name or docstring of this file or test_fixed_dialect.py."""
    rules = re.findall(r"^### (R\d+)\b", CONTRACT.read_text(), flags=re.MULTILINE)
    assert rules == [f"R{i}" for i in range(1, len(rules) + 1)], "rules must be numbered R1, R2, ... in order"
    assert len(rules) >= 16
    cited: set[str] = set()
    for name in ("test_fixed_point.py", "test_fixed_dialect.py"):
        text = (Path(__file__).parent / name).read_text()
        for test_name in re.findall(r"def (test_\w+)", text):
            cited |= {f"R{part[1:]}" for part in test_name.split("_") if re.fullmatch(r"r\d+", part)}
        for docstring in re.findall(r'"""(.*?)"""', text, flags=re.DOTALL):
            cited |= set(re.findall(r"\bR\d+\b", docstring))
    missing = [rule for rule in rules if rule not in cited]
    assert not missing, f"rules cited by no test: {missing}"


@pytest.mark.parametrize("module", [fp, convolution, windows, units], ids=lambda m: m.__name__.rsplit(".", 1)[1])
def test_every_semantics_function_cites_a_rule(module):
    """Each public function of the semantics package names the contract rule it implements."""
    import inspect

    rules = set(re.findall(r"^### (R\d+)\b", CONTRACT.read_text(), flags=re.MULTILINE))
    for name, function in inspect.getmembers(module, inspect.isfunction):
        if name.startswith("_") or function.__module__ != module.__name__ or name == "multiplier_value":
            continue
        cited = set(re.findall(r"\bR\d+\b", function.__doc__ or ""))
        assert cited, f"{module.__name__}.{name} cites no rule"
        assert cited <= rules, f"{module.__name__}.{name} cites unknown rules {cited - rules}"


# --------------------------------------------------------------------------------------
# R1-R4: widths, ranges, saturation, quantize
# --------------------------------------------------------------------------------------


def test_r1_storage_dtypes():
    assert [fp.storage_dtype(b) for b in fp.WIDTHS] == [np.int8, np.int16, np.int32, np.int32]
    assert fp.WIDTHS == (8, 16, 24, 32)


def test_r2_r3_saturation_is_symmetric():
    x = np.array([-(1 << 40), -129, -128, -127, 0, 127, 128, 1 << 40])
    assert fp.saturate(x, 8).tolist() == [-127, -127, -127, -127, 0, 127, 127, 127]
    assert fp.qmax(16) == 32767 and fp.qmax(24) == 8388607 and fp.qmax(32) == 2147483647
    assert fp.storage_range(8) == (-128, 127)
    assert fp.saturate(np.array([-40000, 40000]), 16).tolist() == [-32767, 32767]
    assert fp.saturate(np.array([-(1 << 30)]), 24).tolist() == [-8388607]


def test_r4_quantize_rounds_half_away_from_zero():
    s = 0.5
    x = np.array([0.25, -0.25, 0.75, -0.75, 1.25, -1.25, 0.2, -0.2])
    # x / s = 0.5, -0.5, 1.5, -1.5, 2.5, -2.5: ties go away from zero (numpy's round would give 0, 2, 2)
    assert fp.quantize(x, s).tolist() == [1, -1, 2, -2, 3, -3, 0, 0]
    assert fp.quantize(np.array([1000.0, -1000.0, np.nan, np.inf, -np.inf]), 1.0).tolist() == [127, -127, 0, 127, -127]
    assert fp.quantize(np.array([1e9]), 1.0, bits=16).tolist() == [32767]


def test_r4_quantize_rejects_bad_scales():
    for scale in (0.0, -1.0, math.inf, math.nan):
        with pytest.raises(XnpuError, match="scale"):
            fp.quantize(np.zeros(2), scale)


def test_r4_dequantize_is_float32_product():
    out = fp.dequantize(np.array([127, -3]), 0.25)
    assert out.dtype == np.float32 and out.tolist() == [31.75, -0.75]
    per_channel = fp.dequantize(np.ones((1, 2, 2)), [1.0, 2.0], axis=1)
    assert per_channel.tolist() == [[[1.0, 1.0], [2.0, 2.0]]]


@pytest.mark.parametrize("scale,bits", [(0.0078740157186985016, 8), (0.1, 8), (3.3e-5, 16)])
def test_r4_quantize_thresholds_are_the_first_float32_of_each_level(scale, bits):
    """R4 as a step function of float32 x: level k starts exactly at thresholds[k - 1]."""
    thresholds = fp.quantize_thresholds(scale, bits)
    levels = np.arange(1, fp.qmax(bits) + 1)
    assert thresholds.dtype == np.float32 and thresholds.size == fp.qmax(bits)
    assert np.array_equal(fp.quantize(thresholds, scale, bits), levels)
    below = np.nextafter(thresholds, np.float32(0))
    assert np.array_equal(fp.quantize(below, scale, bits), levels - 1)
    # (k - 1/2) * s is where the level starts, up to float32 spacing
    assert np.allclose(thresholds, (levels - 0.5) * scale, rtol=1e-6, atol=0)


@PROPERTY
@given(st.lists(st.floats(-1e3, 1e3, allow_nan=False), min_size=1, max_size=20), st.floats(1e-3, 10.0))
def test_r4_quantize_is_odd_and_within_half_a_step(values, scale):
    x = np.array(values)
    q = fp.quantize(x, scale)
    assert (fp.quantize(-x, scale) == -q).all()
    inside = np.abs(x / scale) <= 127
    assert (np.abs(q[inside] - x[inside] / scale) <= 0.5 + 1e-9).all()
    assert np.abs(q).max() <= 127


# --------------------------------------------------------------------------------------
# R5, R6: multipliers
# --------------------------------------------------------------------------------------


def test_r5_multiplier_examples():
    assert fp.multiplier_from_scale(1.0) == (16384, 14)
    assert fp.multiplier_from_scale(0.75) == (24576, 15)
    assert fp.multiplier_from_scale(2.0**15) == (16384, -1)
    # m * 2^15 rounds up to 2^15: the carry renormalizes to 2^14 with e + 1
    assert fp.multiplier_from_scale(1.0 - 2.0**-20) == (16384, 14)
    assert fp.multiplier_from_scale(0.0) == (0, 0)
    assert fp.multiplier_from_scale(2.0**-60) == (0, 0)
    assert fp.multiplier_from_scale(2.0**-47) == (16384, 61)


def test_r5_multiplier_range_errors():
    with pytest.raises(XnpuError, match="too large"):
        fp.multiplier_from_scale(2.0**31)
    assert fp.multiplier_from_scale(2.0**30) == (16384, -16)
    with pytest.raises(XnpuError, match="too large"):
        fp.multiplier_from_scale(2.0**31 - 2.0**10)  # M rounds up to 2^15: the carry makes shift -17
    with pytest.raises(XnpuError, match="finite"):
        fp.multiplier_from_scale(-1.0)
    with pytest.raises(XnpuError, match="multiplier"):
        fp.check_multiplier(100, 3)
    with pytest.raises(XnpuError, match="shift"):
        fp.check_multiplier(16384, 63)


def test_r5_multiplier_is_vectorized_for_per_channel_scales():
    r = np.array([1.0, 0.75, 0.0, 2.0**-3])
    m, s = fp.multiplier_from_scale(r)
    assert m.tolist() == [16384, 24576, 0, 16384] and s.tolist() == [14, 15, 0, 17]
    assert [fp.multiplier_from_scale(v) for v in r] == list(zip(m.tolist(), s.tolist()))


@PROPERTY
@given(st.floats(-40.0, 15.99))
def test_r5_multiplier_reconstructs_r_within_2_pow_minus_15(log2_r):
    r = 2.0**log2_r
    m, s = fp.multiplier_from_scale(r)
    assert fp.MULTIPLIER_MIN <= m < 2**15
    assert fp.SHIFT_MIN <= s <= fp.SHIFT_MAX
    assert abs(Fraction(m, 1) / Fraction(2) ** s - Fraction(r)) / Fraction(r) <= Fraction(1, 2**15)


def test_r6_apply_rounds_half_up():
    # x * 0.5 for x = 5, -5, 3, -3: 2.5 -> 3, -2.5 -> -2, 1.5 -> 2, -1.5 -> -1
    assert fp.apply_multiplier(np.array([5, -5, 3, -3]), 16384, 15).tolist() == [3, -2, 2, -1]
    assert fp.apply_multiplier(np.array([3, -3]), 16384, -2).tolist() == [3 * 16384 * 4, -3 * 16384 * 4]
    assert fp.apply_multiplier(np.array([7]), 0, 0).tolist() == [0]


def test_r6_per_channel_multipliers_follow_the_axis():
    x = np.arange(12).reshape(1, 3, 2, 2)
    m, s = [16384, 16384, 16384], [14, 15, 13]  # x1, x0.5, x2
    out = fp.apply_multiplier(x, m, s, axis=1)
    expected = np.floor(x * np.array([1.0, 0.5, 2.0]).reshape(1, 3, 1, 1) + 0.5)
    assert (out == expected).all()


def test_r6_int64_is_enough_at_the_extremes():
    """R6: |x| <= 2^31, M < 2^15, shift in [-16, 62] never overflows int64."""
    x = np.array([-(2**31), 2**31 - 1])
    top = fp.apply_multiplier(x, 2**15 - 1, -16)
    assert top.tolist() == [-(2**31) * (2**15 - 1) * 2**16, (2**31 - 1) * (2**15 - 1) * 2**16]
    assert fp.apply_multiplier(x, 2**15 - 1, 62).tolist() == [0, 0]


@PROPERTY
@given(
    st.lists(st.integers(-(2**31), 2**31 - 1), min_size=1, max_size=8),
    st.one_of(st.just(0), st.integers(fp.MULTIPLIER_MIN, fp.MULTIPLIER_MAX)),
    st.integers(fp.SHIFT_MIN, fp.SHIFT_MAX),
)
def test_r6_apply_equals_exact_rational_rounding_half_up(xs, multiplier, shift):
    out = fp.apply_multiplier(np.array(xs), multiplier, shift)
    for x, got in zip(xs, out.tolist()):
        exact = Fraction(x * multiplier) / Fraction(2) ** shift
        assert got == math.floor(exact + Fraction(1, 2))


# --------------------------------------------------------------------------------------
# R7-R10
# --------------------------------------------------------------------------------------


def test_r7_shift_floor_and_rounding():
    x = np.array([-3, -2, 3, 5])
    assert fp.shift_arithmetic(x, 1).tolist() == [-2, -1, 1, 2]  # floor
    assert fp.shift_arithmetic(x, 1, rounding=True).tolist() == [-1, -1, 2, 3]  # half up
    assert fp.shift_right_rounding(x, 1).tolist() == [-1, -1, 2, 3]
    assert fp.shift_arithmetic(x, -2).tolist() == [-12, -8, 12, 20]
    assert fp.shift_arithmetic(x, 0, rounding=True).tolist() == x.tolist()


def test_r8_clamp():
    assert fp.clamp(np.array([-100, 0, 50, 100]), 0, 60).tolist() == [0, 0, 50, 60]
    with pytest.raises(XnpuError, match="reversed"):
        fp.clamp(np.array([1]), 2, 1)


def test_r9_rescale_saturates_to_the_output_width():
    assert fp.rescale(np.array([1000, -1000, 100]), 16384, 14, 8).tolist() == [127, -127, 100]
    assert fp.rescale(np.array([[300], [300]]), [16384, 16384], [14, 16], 8, axis=0).tolist() == [[127], [75]]


def test_r10_widening_add_broadcasts_subtracts_and_saturates():
    a, b = np.array([[1], [2]]), np.array([10, 20, 30])
    out = fp.add_widening(a, b, 16384, 14, 16384, 15)  # a + b / 2
    assert out.tolist() == [[6, 11, 16], [7, 12, 17]]
    out = fp.add_widening(a, b, 16384, 14, 16384, 14, subtract=True)
    assert out.tolist() == [[-9, -19, -29], [-8, -18, -28]]
    assert fp.add_widening(np.array([127]), np.array([127]), 16384, 14, 16384, 14, out_bits=8).tolist() == [127]


# --------------------------------------------------------------------------------------
# R11, R12: seed 000
# --------------------------------------------------------------------------------------


def test_r11_seed000_add_two_stage_every_intermediate():
    s_out = (SEED_LHS + SEED_RHS).max() / 127
    q_l, q_r = fp.quantize(SEED_LHS, S_L), fp.quantize(SEED_RHS, S_R)
    assert q_l.tolist() == [127, 45, 19] and q_r.tolist() == [63, 127, 2]
    plan = fp.add_plan(S_L, S_R, s_out, "two_stage")
    assert (plan.lhs_multiplier, plan.lhs_shift) == (22668, 0)
    assert (plan.rhs_multiplier, plan.rhs_shift) == (16384, -1)  # exactly 2^15
    assert plan.pre_shift == 8 and (plan.multiplier, plan.shift) == (26274, 22)
    trace: dict = {}
    q_out = fp.seed000_add(q_l, S_L, q_r, S_R, s_out, "two_stage", trace)
    assert trace["i24"].tolist() == [4943220, 5181596, 496228]
    assert trace["i16"].tolist() == [19309, 20240, 1938]
    assert q_out.tolist() == [121, 127, 12]
    np.testing.assert_allclose(fp.dequantize(q_out, s_out), [0.91864724, 0.96419999, 0.09110551], atol=1e-7)


def test_r11_seed000_add_direct():
    s_out = (SEED_LHS + SEED_RHS).max() / 127
    q_l, q_r = fp.quantize(SEED_LHS, S_L), fp.quantize(SEED_RHS, S_R)
    plan = fp.add_plan(S_L, S_R, s_out, "direct")
    assert (plan.multiplier, plan.shift, plan.pre_shift) == (26274, 30, 0)
    q_out = fp.seed000_add(q_l, S_L, q_r, S_R, s_out, "direct")
    assert q_out.tolist() == [121, 127, 12]
    np.testing.assert_allclose(fp.dequantize(q_out, s_out), [0.91864724, 0.96419999, 0.09110551], atol=1e-7)


def test_r11_int24_sum_never_saturates():
    """R11: |i24| <= 2 * 127 * 2^15 for every pair of scales, even equal ones."""
    for s_l, s_r in ((1.0, 1.0), (1.0, 1.0 - 1e-12), (0.3, 0.7)):
        plan = fp.add_plan(s_l, s_r, 1.0)
        trace: dict = {}
        fp.add_with_plan(np.array([127, -127]), np.array([127, -127]), plan, trace)
        assert np.abs(trace["i24"]).max() <= 2 * 127 * 2**15 < fp.qmax(24)


def test_r11_add_plan_rejects_bad_input():
    with pytest.raises(XnpuError, match="variant"):
        fp.add_plan(1.0, 1.0, 1.0, "three_stage")
    with pytest.raises(XnpuError, match="scale"):
        fp.add_plan(0.0, 1.0, 1.0)


def test_r12_seed000_mul_every_intermediate():
    s_out = (SEED_LHS * SEED_RHS).max() / 127
    q_l, q_r = fp.quantize(SEED_LHS, S_L), fp.quantize(SEED_RHS, S_R)
    plan = fp.mul_plan(S_L, S_R, s_out)
    assert (plan.multiplier, plan.shift) == (16597, 20)
    trace: dict = {}
    q_out = fp.seed000_mul(q_l, S_L, q_r, S_R, s_out, trace)
    assert trace["i16"].tolist() == [8001, 5715, 38]
    assert q_out.tolist() == [127, 90, 1]
    np.testing.assert_allclose(fp.dequantize(q_out, s_out), [0.20568408, 0.14576037, 0.00161956], atol=1e-7)


def test_r12_product_of_int8_fits_int16():
    assert fp.mul_widening(np.array([-128, 127]), np.array([-128, -127])).tolist() == [16384, -16129]


int8_arrays = st.integers(1, 3).flatmap(
    lambda rank: st.lists(st.integers(1, 4), min_size=rank, max_size=rank)
).flatmap(
    lambda shape: st.tuples(
        st.lists(st.integers(-127, 127), min_size=math.prod(shape), max_size=math.prod(shape)),
        st.lists(st.integers(-127, 127), min_size=math.prod(shape), max_size=math.prod(shape)),
        st.just(tuple(shape)),
    )
)
log_scales = st.floats(-12.0, 0.0).map(lambda e: 2.0**e)


@PROPERTY
@given(int8_arrays, log_scales, log_scales, st.floats(0.25, 4.0), st.sampled_from(["two_stage", "direct"]))
def test_r11_add_is_within_one_unit_of_the_rounded_float_sum(data, s_l, s_r, out_factor, variant):
    lhs, rhs, shape = data
    q_l, q_r = np.array(lhs).reshape(shape), np.array(rhs).reshape(shape)
    s_out = max(s_l, s_r) * out_factor
    out = fp.seed000_add(q_l, s_l, q_r, s_r, s_out, variant)
    exact = np.clip(round_half_away((q_l * s_l + q_r * s_r) / s_out), -127, 127)
    assert out.shape == shape
    assert np.abs(out - exact).max() <= 1
    direct = fp.seed000_add(q_l, s_l, q_r, s_r, s_out, "direct")
    assert np.abs(out - direct).max() <= 1


@PROPERTY
@given(int8_arrays, log_scales, log_scales, st.floats(-3.0, 3.0))
def test_r12_mul_is_within_one_unit_of_the_rounded_float_product(data, s_l, s_r, log_out):
    lhs, rhs, shape = data
    q_l, q_r = np.array(lhs).reshape(shape), np.array(rhs).reshape(shape)
    s_out = s_l * s_r * 127 * 2.0**log_out
    out = fp.seed000_mul(q_l, s_l, q_r, s_r, s_out)
    exact = np.clip(round_half_away(q_l * s_l * q_r * s_r / s_out), -127, 127)
    assert np.abs(out - exact).max() <= 1


# --------------------------------------------------------------------------------------
# R13-R16
# --------------------------------------------------------------------------------------


def _conv_reference(x, w, bias, stride, pad, group):
    n, c, h, width = x.shape
    o, cg, kh, kw = w.shape
    xp = np.pad(x, ((0, 0), (0, 0), (pad, pad), (pad, pad)))
    oh = (h + 2 * pad - kh) // stride + 1
    ow = (width + 2 * pad - kw) // stride + 1
    out = np.zeros((n, o, oh, ow), dtype=np.int64)
    per_group = o // group
    for oc in range(o):
        g = oc // per_group
        for y in range(oh):
            for xx in range(ow):
                patch = xp[:, g * cg : (g + 1) * cg, y * stride : y * stride + kh, xx * stride : xx * stride + kw]
                out[:, oc, y, xx] = (patch * w[oc]).reshape(n, -1).sum(axis=1)
    return out + bias.reshape(1, -1, 1, 1)


@pytest.mark.parametrize("group", [1, 2, 4])
def test_r13_conv2d_int_is_exact(group):
    rng = np.random.default_rng(group)
    x = rng.integers(-127, 128, size=(2, 4, 6, 5))
    w = rng.integers(-127, 128, size=(4, 4 // group, 3, 3))
    bias = rng.integers(-(2**20), 2**20, size=4)
    out = convolution.conv2d_int(x, w, bias, (2, 2), (1, 1, 1, 1), (1, 1), group)
    assert out.dtype == np.int64
    assert (out == _conv_reference(x, w, bias, 2, 1, group)).all()


def test_r13_accumulator_bound_at_the_largest_reduction():
    """R13: K = 131071 products of 127 * 127 (and of -128 * -128) sum exactly."""
    k = fp.MAX_REDUCTION
    a = np.full((1, k), -128)
    out = convolution.gemm_int(a, np.full((k, 1), -128), None)
    assert out.tolist() == [[k * 16384]] and k * 16384 < 2**31 - 1
    with pytest.raises(XnpuError, match="reduction length"):
        convolution.gemm_int(np.ones((1, k + 1)), np.ones((k + 1, 1)), None)


def test_r13_gemm_int_with_bias_and_trans_b():
    rng = np.random.default_rng(3)
    a, b = rng.integers(-127, 128, (3, 7)), rng.integers(-127, 128, (5, 7))
    bias = rng.integers(-1000, 1000, (5,))
    assert (convolution.gemm_int(a, b, bias, trans_b=True) == a @ b.T + bias).all()
    assert convolution.gemm_int(np.array([[1]]), np.array([[1]]), np.array([2**31 + 5])).tolist() == [[2**31 - 1]]


def test_r14_max_pool_padding_never_wins():
    x = np.full((1, 1, 2, 2), -100)
    out = windows.max_pool_int(x, (3, 3), (1, 1), (1, 1, 1, 1), (1, 1), (2, 2))
    assert out.tolist() == [[[[-100, -100], [-100, -100]]]]


@pytest.mark.parametrize("pads,strides", [((1, 1, 1, 1), (2, 2)), ((0, 1, 2, 0), (1, 2)), ((0, 0, 0, 0), (2, 1))])
def test_r14_max_pool_of_a_channels_last_map_equals_it_channels_first(pads, strides):
    """The simulator pools an NHWC map seen as NCHW (a transposed view, padded channels last):
    the same maxima as the C-ordered NCHW copy, padding never winning."""
    nhwc = np.random.default_rng(4).integers(-128, 128, (2, 7, 6, 5), dtype=np.int8)
    view = nhwc.transpose(0, 3, 1, 2)
    out_hw = ((7 + pads[0] + pads[2] - 3) // strides[0] + 1, (6 + pads[1] + pads[3] - 3) // strides[1] + 1)
    got = windows.max_pool_int(view, (3, 3), strides, pads, (1, 1), out_hw)
    expected = windows.max_pool_int(np.ascontiguousarray(view), (3, 3), strides, pads, (1, 1), out_hw)
    assert got.dtype == expected.dtype and np.array_equal(got, expected)
    padded = float_ops.pad_nchw(view, pads, -7)
    assert np.array_equal(padded, np.pad(view, ((0, 0), (0, 0), pads[0::2], pads[1::2]), constant_values=-7))


def test_r14_avg_pool_per_position_counts():
    x = np.arange(16).reshape(1, 1, 4, 4) - 8
    kernel, strides, pads, out_hw = (3, 3), (1, 1), (1, 1, 1, 1), (4, 4)
    counts = windows.avg_pool_counts((4, 4), kernel, strides, pads, out_hw, count_include_pad=False)
    assert counts.tolist() == [[4, 6, 6, 4], [6, 9, 9, 6], [6, 9, 9, 6], [4, 6, 6, 4]]
    s_in, s_out = 0.1, 0.05
    m, s = windows.avg_pool_multipliers(counts, s_in, s_out)
    assert m.shape == (16,)
    out = windows.avg_pool_int(x, kernel, strides, pads, out_hw, m, s, 8)
    sums = windows.avg_pool_sum_int(x, kernel, strides, pads, out_hw)
    exact = np.floor(sums * s_in / (counts * s_out) + 0.5)
    assert np.abs(out - exact).max() <= 1
    uniform = windows.avg_pool_counts((4, 4), kernel, strides, pads, out_hw, count_include_pad=True)
    m1, _ = windows.avg_pool_multipliers(uniform, s_in, s_out)
    assert m1.shape == (1,)


def test_r14_global_avg_pool_sum():
    x = np.arange(24).reshape(1, 2, 3, 4)
    assert windows.global_avg_pool_sum_int(x).reshape(-1).tolist() == [66, 210]


@pytest.mark.parametrize("dtype", [np.int8, np.uint8])
def test_r14_global_avg_pool_sum_of_8_bit_codes(dtype):
    """8-bit codes summed in int32 (an NHWC map seen as NCHW, and at the extremes of the range)
    are the int64 sums; beyond INT32_SUM_POSITIONS the sums are int64 from the start."""
    info = np.iinfo(dtype)
    rng = np.random.default_rng(3)
    nhwc = rng.integers(info.min, info.max + 1, (3, 9, 7, 24)).astype(dtype)[..., :20]
    extremes = np.full((2, 3, 64, 64), info.min, dtype), np.full((2, 3, 64, 64), info.max, dtype)
    for x in (nhwc.transpose(0, 3, 1, 2), *extremes):
        expected = x.astype(np.int64).sum(axis=(2, 3), keepdims=True)
        found = windows.global_avg_pool_sum_int(x)
        assert found.dtype == np.int64 and found.shape == expected.shape
        np.testing.assert_array_equal(found, expected)
    # one position more than int32 holds for 255s: int64 from the start
    positions = windows.INT32_SUM_POSITIONS + 1
    big = np.full((1, 1, 1, positions), info.max if dtype == np.uint8 else info.min, dtype)
    assert windows.global_avg_pool_sum_int(big).item() == positions * int(big[0, 0, 0, 0])


def test_r15_table_lookup_indexes_q_plus_128():
    table = np.arange(256) - 128
    table[0] = -127
    q = np.array([-127, 0, 5, 127])
    assert fp.table_lookup(q, table).tolist() == [-127, 0, 5, 127]
    built = fp.build_table(np.tanh, 4.0 / 127, 1.0 / 127)
    assert built.shape == (256,) and built[128] == 0 and built[255] == 127 and built.min() >= -127
    with pytest.raises(XnpuError, match="256"):
        fp.table_lookup(q, np.zeros(10))


def test_r19_square_digits_recompose_every_square_exactly():
    """R19: q^2 = 127 * high + low for every code of the symmetric range, both digits table
    entries (R15: in [0, 127]); the gemm sums of the digits give the sum of squares exactly."""
    high, low = fp.square_digit_tables()
    codes = np.arange(-127, 128)
    assert (fp.SQUARE_BASE * fp.table_lookup(codes, high) + fp.table_lookup(codes, low) == codes * codes).all()
    assert high.min() >= 0 and high.max() == 127 and low.min() >= 0 and low.max() <= 126 and high[0] == low[0] == 0
    rows = np.random.default_rng(0).integers(-127, 128, (5, 120))
    sums = (fp.SQUARE_BASE * fp.table_lookup(rows, high).sum(axis=1) + fp.table_lookup(rows, low).sum(axis=1))
    assert sums.tolist() == (rows * rows).sum(axis=1).tolist()


def test_r16_data_movement_keeps_values():
    x = np.arange(6).reshape(2, 3)
    assert fp.transpose(x, (1, 0)).tolist() == x.T.tolist()
    assert fp.reshape(x, (3, 2)).tolist() == [[0, 1], [2, 3], [4, 5]]
    assert fp.concat([x, x], 1).shape == (2, 6)


NEAREST_CASES = [(mode, nearest) for mode in ("asymmetric", "half_pixel", "align_corners")
                 for nearest in ("floor", "ceil", "round_prefer_floor", "round_prefer_ceil")]


@pytest.mark.parametrize("coordinates,nearest", NEAREST_CASES)
def test_r16_resize_nearest_moves_the_codes_the_float_level_reads(coordinates, nearest):
    """R16: the nearest resize of int8 codes is the float resize of the same values, exactly."""
    from xnpu.semantics import float_ops

    x = np.random.default_rng(5).integers(-127, 128, (1, 2, 3, 5))
    rows = float_ops.nearest_source_indices(3, 12, coordinates, nearest)
    cols = float_ops.nearest_source_indices(5, 10, coordinates, nearest)
    out = fp.resize_nearest(x, rows, cols)
    assert (out == float_ops.resize(x.astype(np.float32), (12, 10), "nearest", coordinates, nearest)).all()


def test_r16_pad_edge_and_interleave():
    """R16: an edge pad copies the border; an interleave of f_h * f_w phases, from offsets."""
    x = np.arange(6).reshape(1, 1, 2, 3)
    assert fp.pad_edge(x, (1, 0, 0, 2))[0, 0].tolist() == [[0, 1, 2, 2, 2], [0, 1, 2, 2, 2], [3, 4, 5, 5, 5]]
    phases = [x, x + 10, x + 20, x + 30]
    out = fp.interleave(phases, (2, 2), [0] * 8, (4, 6))
    assert out[0, 0, :2].tolist() == [[0, 10, 1, 11, 2, 12], [20, 30, 21, 31, 22, 32]]
    # a phase larger than its share is read from its offset on; odd sizes give short phases
    wide = fp.pad_edge(x, (1, 1, 1, 1))
    out = fp.interleave([wide, x, x, x], (2, 2), [1, 1, 0, 0, 0, 0, 0, 0], (3, 5))
    assert out[0, 0, 0, ::2].tolist() == [0, 1, 2] and out[0, 0, 2, 1::2].tolist() == [3, 4]


def test_r17_linear_taps_half_pixel_x2():
    """R17: half_pixel x2 weighs neighbours 3 and 1 over D = 4; the edges read one pixel (4, 0)."""
    sources, weights, denominator = windows.linear_resize_taps(3, 6, "half_pixel")
    assert denominator == 4
    assert sources.tolist() == [[0, 1], [0, 1], [0, 1], [1, 2], [1, 2], [2, 2]]
    assert weights.tolist() == [[4, 0], [3, 1], [1, 3], [3, 1], [1, 3], [4, 0]]


@pytest.mark.parametrize("coordinates", ["half_pixel", "align_corners"])
@pytest.mark.parametrize("size", [1, 2, 5, 9])
def test_r17_linear_taps_are_the_exact_onnx_coordinates(coordinates, size):
    """R17: weight[1] / D is the fraction of ONNX's clamped source coordinate, exactly (Fraction)."""
    out_size = 2 * size
    sources, weights, denominator = windows.linear_resize_taps(size, out_size, coordinates)
    assert (weights.sum(axis=1) == denominator).all()
    for o in range(out_size):
        if coordinates == "half_pixel":
            c = Fraction(2 * o + 1, 4) - Fraction(1, 2)
        else:
            c = Fraction(o * (size - 1), out_size - 1) if out_size > 1 else Fraction(0)
        c = min(max(c, Fraction(0)), Fraction(size - 1))
        first = math.floor(c)
        assert sources[o].tolist() == [first, min(first + 1, size - 1)]
        assert Fraction(int(weights[o, 1]), denominator) == c - first


@pytest.mark.parametrize("coordinates", ["half_pixel", "align_corners"])
def test_r17_linear_sum_is_exact_and_matches_float(coordinates):
    """R17: the int64 sum over Dy * Dx is the float level's bilinear value of the same codes;
    at the extreme codes it stays inside int32."""
    from xnpu.semantics import float_ops

    x = np.random.default_rng(6).integers(-127, 128, (2, 3, 7, 4))
    (rows, row_w, dy), (cols, col_w, dx) = (windows.linear_resize_taps(n, 2 * n, coordinates) for n in (7, 4))
    sums = windows.resize_linear_sum(x, rows, row_w, cols, col_w)
    reference = float_ops.resize(x.astype(np.float32), (14, 8), "linear", coordinates, None)
    assert np.abs(sums / (dy * dx) - reference).max() < 1e-4
    extreme = windows.resize_linear_sum(np.full((1, 1, 7, 4), -128), rows, row_w, cols, col_w)
    assert (extreme == -128 * dy * dx).all() and 128 * dy * dx <= fp.MAX_RESIZE_DENOMINATOR * 128 < 2**31


def _conv_transpose_reference(x, w, bias, stride, pad, output_padding, group):
    """ONNX ConvTranspose by its definition: every input pixel scatters its kernel."""
    n, c, h, width = x.shape
    _, o_per_group, kh, kw = w.shape
    oh = (h - 1) * stride + kh - 2 * pad + output_padding
    ow = (width - 1) * stride + kw - 2 * pad + output_padding
    full = np.zeros((n, o_per_group * group, (h - 1) * stride + kh + output_padding, (width - 1) * stride + kw + output_padding), np.int64)
    c_per_group = c // group
    for ci in range(c):
        g = ci // c_per_group
        for j in range(o_per_group):
            for y in range(h):
                for xx in range(width):
                    full[:, g * o_per_group + j, y * stride : y * stride + kh, xx * stride : xx * stride + kw] += (
                        x[:, ci, y, xx][:, None, None] * w[ci, j])
    return full[:, :, pad : pad + oh, pad : pad + ow] + bias.reshape(1, -1, 1, 1)


@pytest.mark.parametrize("kernel,stride,pad,output_padding,group", [
    (2, 2, 0, 0, 1), (3, 2, 1, 1, 1), (4, 2, 1, 0, 1), (3, 2, 0, 0, 2), (4, 2, 1, 0, 4), (3, 3, 1, 2, 1), (3, 1, 1, 0, 1),
])
def test_r18_conv_transpose2d_int_is_exact(kernel, stride, pad, output_padding, group):
    """R18: the zero-inserted, flipped-kernel convolution is ONNX's scatter definition exactly."""
    rng = np.random.default_rng(kernel * 10 + stride)
    x = rng.integers(-127, 128, (2, 4, 5, 3))
    w = rng.integers(-127, 128, (4, 8 // group if group < 4 else 1, kernel, kernel))
    bias = rng.integers(-(2**20), 2**20, w.shape[1] * group)
    out = convolution.conv_transpose2d_int(x, w, bias, (stride, stride), (pad,) * 4, (1, 1), (output_padding,) * 2, group)
    assert out.dtype == np.int64
    assert (out == _conv_transpose_reference(x, w, bias, stride, pad, output_padding, group)).all()


def test_quantize_divides_float32_inputs_in_float64():
    """R4 is computed in float64: float32 values just beside a level's edge must not round
    the way a float32 division would."""
    scale = 0.01
    edges = ((np.arange(-127, 128) + 0.5) * scale).astype(np.float32)
    x = np.concatenate([np.nextafter(edges, np.float32(-np.inf)), edges, np.nextafter(edges, np.float32(np.inf))])
    v = np.clip(x.astype(np.float64) / scale, -127, 127)
    expected = (np.sign(v) * np.floor(np.abs(v) + 0.5)).astype(np.int64)
    assert np.array_equal(fp.quantize(x, scale), expected)
    float32_division = np.minimum(np.floor(np.abs(x / np.float32(scale)) + np.float32(0.5)), 127)
    assert not np.array_equal(np.abs(expected), float32_division.astype(np.int64))  # the case is real


MULTIPLIERS = st.one_of(st.just(0), st.integers(fp.MULTIPLIER_MIN, fp.MULTIPLIER_MAX))


@PROPERTY
@given(st.sampled_from(["add", "sub", "mul"]), MULTIPLIERS, st.integers(-8, 20), MULTIPLIERS, st.integers(-8, 20),
       st.integers(fp.MULTIPLIER_MIN, fp.MULTIPLIER_MAX), st.integers(0, 40),
       st.one_of(st.none(), st.integers(0, 12)), st.booleans(), st.sampled_from([(4, 3, 5), (1, 1, 5), (1, 1, 1)]),
       st.integers(0, 2**32 - 1))
def test_eltwise_unit_is_r10_r7_r9_and_the_relu_flag_composed(op, am, ash, bm, bsh, m, sh, pre, relu, b_shape, seed):
    """The ELTWISE unit's one loop equals the rules it fuses, applied one after another
    (b broadcast per channel or as a scalar as the unit allows; mul takes no input rescales)."""
    rng = np.random.default_rng(seed)
    a = rng.integers(-128, 128, (4, 3, 5)).astype(np.int8)
    b = rng.integers(-128, 128, b_shape).astype(np.int8)
    if op == "mul":
        wide = fp.mul_widening(a, b, 16)
        rescales = {}
    else:
        wide = fp.add_widening(a, b, am, ash, bm, bsh, 24, subtract=op == "sub")
        if pre is not None:
            wide = fp.saturate(fp.shift_arithmetic(wide, pre, rounding=False), 16)
        rescales = dict(a_multiplier=am, a_shift=ash, b_multiplier=bm, b_shift=bsh, pre_shift=pre)
    expected = fp.rescale(wide, m, sh, 8)
    expected = units.relu(expected) if relu else expected
    got = units.eltwise_unit(op, a, b, m, sh, relu_flag=relu, **rescales)
    assert got.shape == expected.shape and np.array_equal(got, expected)


def test_quantize_of_a_large_array_is_the_rule_element_by_element():
    """Arrays over QUANTIZE_BLOCK elements are quantized block by block: every element is still
    R4 of itself (level edges, NaN, infinities, a block boundary inside a row)."""
    scale = 0.01
    edges = ((np.arange(-127, 128) + 0.5) * scale).astype(np.float32)
    values = np.concatenate([np.nextafter(edges, np.float32(-np.inf)), edges, [np.nan, np.inf, -np.inf, 0.0, 5.0]])
    x = np.resize(values, (3, 5, fp.QUANTIZE_BLOCK // 7 + 3)).astype(np.float32)
    v = np.clip(x.astype(np.float64) / scale, -127, 127)
    expected = np.nan_to_num(np.sign(v) * np.floor(np.abs(v) + 0.5)).astype(np.int64)
    q = fp.quantize(x, scale)
    assert x.size > fp.QUANTIZE_BLOCK and q.shape == x.shape and q.dtype == np.int64
    assert np.array_equal(q, expected)
    assert np.array_equal(q[1, 2], fp.quantize(x[1, 2], scale))  # one row, quantized whole
    assert fp.quantize(np.float32(0.03), scale) == 3 and np.ndim(fp.quantize(0.03, scale)) == 0  # a scalar stays one
