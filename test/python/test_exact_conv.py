"""R13: the float32 GEMM path of the integer convolution is exact, chunked or not."""

import numpy as np
import pytest
from test_fixed_point import _conv_reference  # the direct-loop definition of R13

from xnpu.semantics import convolution, fixed_point, float_ops


@pytest.mark.parametrize(
    "channels,kernel,group,out_channels",
    [(8, 3, 1, 4), (200, 3, 1, 3), (129, 3, 1, 2), (6, 3, 6, 6), (300, 2, 3, 3), (1100, 1, 1, 2)],
)
def test_float32_and_float64_paths_equal_the_definition(channels, kernel, group, out_channels):
    rng = np.random.default_rng(channels)
    # the extreme codes make partial sums as large as the contract allows
    x = rng.choice([-128, 127, -127, 0, 5], size=(1, channels, 5, 5))
    w = rng.choice([-128, 127, -127, 1], size=(out_channels, channels // group, kernel, kernel))
    expected = _conv_reference(x, w, np.zeros(out_channels, np.int64), 1, 1, group)
    for dtype in (np.float32, np.float64):
        got = convolution.conv2d_accumulate_exact(x, w, (1, 1), (1, 1, 1, 1), (1, 1), group, dtype)
        np.testing.assert_array_equal(got, expected)


@pytest.mark.parametrize("pads", [(0, 0, 0, 0), (1, 1, 1, 1), (2, 0, 1, 3), (0, 2, 0, 0)])
def test_padding_zeroes_only_the_border_of_a_strided_map(pads):
    """pad_nhwc writes the border's zeros and the map once each, from a view with a sample stride."""
    memory = np.random.default_rng(1).integers(-128, 128, (3, 200), dtype=np.int8)
    x = memory[:, 10:130].reshape(3, 4, 5, 6)
    top, left, bottom, right = pads
    expected = np.pad(x.astype(np.float32), ((0, 0), (top, bottom), (left, right), (0, 0)))
    np.testing.assert_array_equal(float_ops.pad_nhwc(x, pads, np.float32), expected)


@pytest.mark.parametrize("samples,height", [(6, 3), (6, 12), (1, 3)])
def test_several_samples_of_thin_and_tall_maps_equal_the_definition(samples, height):
    """Samples of few output rows take one im2col GEMM, of many the row-wise GEMMs over every
    sample's rows (float_ops.conv_gemms_nhwc): the same sums either way."""
    rng = np.random.default_rng(height)
    x = rng.choice([-128, 127, -127, 0, 5], size=(samples, 16, height, 9))
    w = rng.choice([-128, 127, -127, 1], size=(8, 16, 3, 3))
    expected = _conv_reference(x, w, np.zeros(8, np.int64), 1, 0, 1)
    got = convolution.conv2d_accumulate_exact(x, w, (1, 1), (0, 0, 0, 0), (1, 1), 1)
    np.testing.assert_array_equal(got, expected)


def test_a_single_float32_gemm_would_round_where_chunks_do_not():
    """The chunking is needed: one float32 sum of 2048 maximal products is not exact."""
    x = np.full((1, 2048, 1, 1), 127)
    w = np.full((1, 2048, 1, 1), 127)
    w[0, 0, 0, 0] = 2  # an odd total above 2^24 cannot be represented in float32
    exact = int((x * w).sum())
    assert exact > 2**24 and float(np.float32(exact)) != exact
    got = convolution.conv2d_accumulate_exact(x, w, (1, 1), (0, 0, 0, 0), (1, 1), 1, np.float32)
    assert int(got.reshape(-1)[0]) == exact


def test_chunks_keep_every_partial_sum_below_2_to_the_24():
    rng = np.random.default_rng(5)
    w = rng.integers(-127, 128, (6, 3, 3, 700))  # OHWI
    weights = convolution.ExactWeights(w)
    max_abs = rng.integers(0, 129, 700).astype(np.float64)
    chunks = weights.channel_chunks(max_abs)
    assert len(chunks) > 1 and chunks[0][0] == 0 and chunks[-1][1] == 700
    assert all(a[1] == b[0] for a, b in zip(chunks, chunks[1:]))
    bound = max_abs[:, None] * np.abs(w).sum(axis=(1, 2)).T  # C x O
    for start, stop in chunks:
        assert bound[start:stop].sum(axis=0).max() < 2**24
        if stop < 700:  # and each chunk is as long as the bound allows
            assert bound[start : stop + 1].sum(axis=0).max() >= 2**24
    # small inputs need no chunking at all
    assert weights.channel_chunks(np.ones(700)) == [(0, 700)]
    # a 32 x 32 kernel of extreme codes cannot be proven exact in float32 even per channel
    huge = convolution.ExactWeights(np.full((1, 32, 32, 2), -128))
    assert huge.channel_chunks(np.full(2, 128.0)) is None


def test_a_conv_whose_float32_sums_cannot_be_proven_exact_uses_float64():
    x = np.full((1, 1, 33, 32), -128)
    w = np.full((1, 1, 33, 32), -128)
    x[0, 0, 0, 0] = w[0, 0, 0, 0] = -127  # an odd total above 2^24: float32 would round it
    expected = _conv_reference(x, w, np.zeros(1, np.int64), 1, 0, 1)
    total = int(expected.reshape(-1)[0])
    assert total > 2**24 and float(np.float32(total)) != total
    got = convolution.conv2d_accumulate_exact(x, w, (1, 1), (0, 0, 0, 0), (1, 1), 1)
    assert np.array_equal(got, expected)


@pytest.mark.parametrize("shift", [-16, -3, 0, 1, 7, 31, 46, 52, 53, 62])
def test_rescale_in_float64_equals_the_int64_definition(shift):
    rng = np.random.default_rng(shift + 20)
    x = np.concatenate([rng.integers(-(2**31), 2**31, 2000), [2**31, -(2**31), 0, 1, -1, 2**31 - 1]])
    m = np.array([0, fixed_point.MULTIPLIER_MIN, fixed_point.MULTIPLIER_MAX, 23170])
    for multiplier in m:
        exact = fixed_point.shift_arithmetic(x * multiplier, shift, rounding=True)  # R6 in int64
        got = fixed_point.rescale_float(x, multiplier, shift, -np.inf, np.inf)
        assert np.array_equal(got.astype(np.int64), exact)
        # ties round half up: x * M * 2^-shift exactly k + 1/2
        assert np.array_equal(fixed_point.apply_multiplier(x.astype(np.int32, casting="unsafe"), multiplier, shift),
                              fixed_point.shift_arithmetic(x.astype(np.int32, casting="unsafe").astype(np.int64) * multiplier,
                                                           shift, rounding=True))


def test_requantization_saturates_the_accumulator_when_the_bias_can_reach_int32():
    acc = np.array([[1000.0, -1000.0, 5.0]])
    bias = np.array([2**31 - 10, -(2**31) + 10, 7])
    multiplier, shift = np.array([16384, 16384, 16384]), np.array([20, 20, 15])
    requantize = convolution.requantization(bias, 1, multiplier, shift, -127, 127)
    assert requantize.bias is not None  # 2^14 + |bias| exceeds int32: the slow, saturating path
    expected = fixed_point.rescale(fixed_point.saturate(acc.astype(np.int64) + bias, 32), multiplier, shift, 8, axis=1)
    assert np.array_equal(requantize(acc), expected)
    folded = convolution.requantization(np.array([3, -4, 7]), 9, multiplier, shift, 0, 127)
    assert folded.bias is None
    expected = fixed_point.clamp(fixed_point.rescale(acc.astype(np.int64) + [3, -4, 7], multiplier, shift, 8, axis=1), 0, 127)
    assert np.array_equal(folded(acc), expected)


@pytest.mark.parametrize("low", [0, -127])
def test_requantization_into_int8_equals_its_float_result(low):
    rng = np.random.default_rng(9)
    acc = rng.integers(-(2**20), 2**20, (6, 5, 4)).astype(np.float32)
    multiplier, shift = rng.integers(2**14, 2**15, 4), rng.integers(10, 24, 4)
    requantize = convolution.requantization(rng.integers(-999, 999, 4), 64, multiplier, shift, low, 127)
    out = np.full(acc.shape, 99, np.int8)
    assert requantize(acc, out=out) is out
    assert np.array_equal(out, requantize(acc).astype(np.int8))


@pytest.mark.parametrize("stride,pads,dilation", [(1, (1, 1, 1, 1), 1), (2, (1, 0, 0, 1), 1), (1, (2, 2, 2, 2), 2)])
def test_onnxruntime_kernels_equal_the_definition(stride, pads, dilation, monkeypatch):
    """Kept weights of large convolutions take onnxruntime's kernels (conv_kernels): the same
    integers, padding and all, as the definition; the model they run is valid ONNX."""
    import onnx

    from xnpu.semantics import conv_kernels

    monkeypatch.setattr(conv_kernels, "MIN_PRODUCTS", 0)
    monkeypatch.setattr(conv_kernels, "MIN_PIXELS", 0)
    rng = np.random.default_rng(stride + dilation)
    # 144 channels of extreme codes: partial sums up to 144 * 9 * 128 * 127 < 2^24, one float32 chunk
    x = rng.choice([-128, 127, -127, 0, 5], size=(3, 144, 9, 8)).astype(np.int8)
    w = rng.choice([-128, 127, -127, 1], size=(5, 144, 3, 3)).astype(np.int8)
    kept = convolution.ExactWeights(w.transpose(0, 2, 3, 1), kept=True)
    got = convolution.conv_sums_nhwc(x.transpose(0, 2, 3, 1), kept, (stride, stride), pads, (dilation, dilation))
    assert kept.sessions  # the kernels ran
    top, left, bottom, right = pads
    padded = np.pad(x.astype(np.int64), ((0, 0), (0, 0), (top, bottom), (left, right)))
    expected = _conv_reference(padded, _dilated(w, dilation), np.zeros(5, np.int64), stride, 0, 1)
    np.testing.assert_array_equal(got.transpose(0, 3, 1, 2), expected)
    model = conv_kernels.conv_model(w.astype(np.float32), (stride, stride), pads, (dilation, dilation))
    onnx.checker.check_model(onnx.load_from_string(model))


def _dilated(w, dilation):
    """The kernel with dilation - 1 zero taps between its taps (the same sums)."""
    o, c, kh, kw = w.shape
    out = np.zeros((o, c, dilation * (kh - 1) + 1, dilation * (kw - 1) + 1), dtype=w.dtype)
    out[:, :, ::dilation, ::dilation] = w
    return out


@pytest.mark.parametrize("stride,channels,codes", [(1, 24, (-128, 127, 3)), (2, 24, (-128, 127, 3)),
                                                   (1, 2000, (-128, 127))])
def test_a_large_1x1_convolution_in_blocks_equals_it_whole(stride, channels, codes, monkeypatch):
    """A 1x1 convolution over more than POINTWISE_BLOCKED_BYTES runs block by block (rows of one
    sample, a ragged last block, a map with a sample stride and an output with one): the same
    integers as its sums requantized whole; float32 sums it cannot prove exact (2000 channels of
    extreme codes) stay whole, in chunks."""
    monkeypatch.setattr(convolution, "POINTWISE_BLOCKED_BYTES", 1 << 12)
    monkeypatch.setattr(convolution, "POINTWISE_BLOCK_BYTES", 1 << 10)
    rng = np.random.default_rng(channels + stride)
    memory = rng.choice(np.array(codes, np.int8), size=(3, 2 * 9 * 7 * channels))
    x = memory[:, 5 : 5 + 9 * 7 * channels].reshape(3, 9, 7, channels)
    weights = convolution.ExactWeights(rng.choice([-128, 127, -127, 1], size=(10, 1, 1, channels)), kept=True)
    requant = convolution.requantization(rng.integers(-999, 999, 10), channels, rng.integers(2**14, 2**15, 10),
                                         rng.integers(12, 24, 10), -127, 127)
    strides = (stride, stride)
    whole = requant(convolution.conv_sums_nhwc(x, weights, strides, (0, 0, 0, 0), (1, 1)))
    calls = []
    monkeypatch.setattr(convolution, "_pointwise_in_blocks",
                        lambda *args, blocks=convolution._pointwise_in_blocks: calls.append(1) or blocks(*args))
    out_memory = np.zeros((3, 2 * whole[0].size), np.int8)
    out = out_memory[:, 3 : 3 + whole[0].size].reshape(whole.shape)
    got = convolution.conv_requantized_nhwc(x, weights, requant, strides, (0, 0, 0, 0), (1, 1), out=out)
    assert got is out and np.array_equal(out, whole)
    assert len(calls) == (0 if channels == 2000 else 1)
    reference = _conv_reference(x.transpose(0, 3, 1, 2).astype(np.int64), weights.weight.transpose(0, 3, 1, 2),
                                np.zeros(10, np.int64), stride, 0, 1)  # R13's definition, int64
    assert np.array_equal(out, requant(reference.transpose(0, 2, 3, 1).astype(np.float64)))


@pytest.mark.parametrize("parts", [(5,), (2, 3), (1, 1, 3)])
def test_requantized_parts_on_the_kernels_are_the_definition_sample_by_sample(parts, monkeypatch):
    """On onnxruntime's kernels a convolution is computed and requantized sample by sample
    (conv_requantized_parts), each part of its output channels through its own requantization
    into its own output (strided views): R13's definition, requantized, for every sample."""
    from xnpu.semantics import conv_kernels

    monkeypatch.setattr(conv_kernels, "MIN_PRODUCTS", 0)
    monkeypatch.setattr(conv_kernels, "MIN_PIXELS", 0)
    rng = np.random.default_rng(len(parts))
    x = rng.choice([-128, 127, -127, 0, 5], size=(4, 9, 8, 32)).astype(np.int8)
    weights = convolution.ExactWeights(rng.choice([-128, 127, -127, 1], size=(5, 3, 3, 32)).astype(np.int8), kept=True)
    requants = [convolution.requantization(rng.integers(-999, 999, o), 288, rng.integers(2**14, 2**15, o),
                                           rng.integers(14, 24, o), -127, 127) for o in parts]
    memory = np.zeros((4, 2 * 5 * 5 * 4 * 8), np.int8)  # outputs 5 x 4 pixels, 8 bytes apart
    outs, start = [], 0
    for o in parts:
        outs.append(np.ndarray((4, 5, 4, o), np.int8, memory, start, (memory.shape[1], 4 * 8, 8, 1)))
        start += o
    convolution.conv_requantized_parts(x, weights, requants, outs, (2, 2), (1, 0, 1, 1), (1, 1))
    assert weights.sessions  # the kernels ran
    padded = np.pad(x.transpose(0, 3, 1, 2).astype(np.int64), ((0, 0), (0, 0), (1, 1), (0, 1)))
    sums = _conv_reference(padded, weights.weight.transpose(0, 3, 1, 2), np.zeros(5, np.int64), 2, 0, 1)
    sums = sums.transpose(0, 2, 3, 1).astype(np.float64)
    start = 0
    for requant, out in zip(requants, outs):
        assert np.array_equal(out, requant(sums[..., start : start + out.shape[-1]]))
        start += out.shape[-1]
    if len(parts) == 1:
        whole = convolution.conv_requantized_nhwc(x, weights, requants[0], (2, 2), (1, 0, 1, 1), (1, 1))
        assert np.array_equal(whole, outs[0])


@pytest.mark.parametrize("dtype", [np.int8, np.uint8, np.int16, np.int32])
def test_the_exactness_bound_sums_magnitudes_without_overflow(dtype):
    """channel_l1 (R13's bound) of the extreme codes of each weight dtype: |-128| in int16 for
    8-bit weights, int64 otherwise."""
    info = np.iinfo(dtype)
    w = np.full((2, 3, 3, 4), info.min, dtype)
    w[1] = info.max
    prepared = convolution.ExactWeights(w)
    expected = np.abs(w.astype(np.float64)).sum(axis=(1, 2)).T
    assert prepared.channel_l1.dtype == np.float64 and np.array_equal(prepared.channel_l1, expected)
    assert prepared.largest_l1 == 4 * 9 * max(abs(float(info.min)), float(info.max))
