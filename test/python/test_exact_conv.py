"""R13: the float32 GEMM path of the integer convolution is exact, chunked or not."""

import numpy as np
import pytest

from test_fixed_point import _conv_reference  # the direct-loop definition of R13

from xnpu.semantics import fixed_point


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
        got = fixed_point.conv2d_accumulate_exact(x, w, (1, 1), (1, 1, 1, 1), (1, 1), group, dtype)
        np.testing.assert_array_equal(got, expected)


def test_a_single_float32_gemm_would_round_where_chunks_do_not():
    """The chunking is needed: one float32 sum of 2048 maximal products is not exact."""
    x = np.full((1, 2048, 1, 1), 127)
    w = np.full((1, 2048, 1, 1), 127)
    w[0, 0, 0, 0] = 2  # an odd total above 2^24 cannot be represented in float32
    exact = int((x * w).sum())
    assert exact > 2**24 and float(np.float32(exact)) != exact
    got = fixed_point.conv2d_accumulate_exact(x, w, (1, 1), (0, 0, 0, 0), (1, 1), 1, np.float32)
    assert int(got.reshape(-1)[0]) == exact
