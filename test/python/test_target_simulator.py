"""The reference simulator against docs/isa.md: hand-assembled programs, one per instruction class.

Every expected value is computed by `xnpu.semantics.fixed_point` directly on the same integers
the program moves through memory; memory images are laid out here by hand from the layout
rules of docs/isa.md section 1, so the simulator's own address arithmetic is checked too.
"""

from __future__ import annotations

import re
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from xnpu.backend.binary import Binary, IoTensor
from xnpu.backend.isa_dependencies import insert_dependencies
from xnpu.backend.simulator import Machine, run_binary, simulate
from xnpu.core.errors import XnpuError
from xnpu.semantics import convolution, windows
from xnpu.semantics import fixed_point as fp
from xnpu.target.cost import instruction_cycles, program_cycles
from xnpu.target.description import TARGET_DIR, load_target, parse_target
from xnpu.target.encoding import Instruction, make_instruction

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover
    import tomli as tomllib

DEFAULT = load_target("xnpu_default")  # A = 16
LITE = load_target("xnpu_lite")  # A = 8, no clamp, no mul
RECORD = np.dtype([("multiplier", "<u2"), ("shift", "i1"), ("zero", "u1")])
KIB = 1024


def target_with(**memory) -> object:
    """xnpu_default with other [memory] values (alignment, SRAM size)."""
    document = tomllib.loads((TARGET_DIR / "xnpu_default.toml").read_text())
    document["memory"].update(memory)
    return parse_target(document, "test")


def machine(target=DEFAULT, ddr=1 << 20) -> Machine:
    return Machine(target, ddr_size=ddr)


def rng_codes(rng, shape, low=-127, high=127) -> np.ndarray:
    return rng.integers(low, high + 1, size=shape).astype(np.int8)


def put_map(m: Machine, address: int, x: np.ndarray) -> None:
    """An H x W x C int8 map, channel padded to the target alignment with zeros."""
    h, w, c = x.shape
    cp = m.target.align(c)
    padded = np.zeros((h, w, cp), np.int8)
    padded[:, :, :c] = x
    m.sram[address : address + padded.size] = padded.reshape(-1).view(np.uint8)


def get_map(m: Machine, address: int, h: int, w: int, c: int, pads_zero: bool = True) -> np.ndarray:
    cp = m.target.align(c)
    padded = m.sram[address : address + h * w * cp].view(np.int8).reshape(h, w, cp)
    if pads_zero:
        assert not padded[:, :, c:].any(), "pad lanes must be written as 0"
    return padded[:, :, :c].astype(np.int64)


def put_bytes(m: Machine, address: int, array: np.ndarray) -> None:
    raw = np.ascontiguousarray(array).reshape(-1).view(np.uint8)
    m.sram[address : address + raw.size] = raw


def records(multipliers, shifts) -> np.ndarray:
    multipliers, shifts = np.atleast_1d(multipliers), np.atleast_1d(shifts)
    out = np.zeros(multipliers.size, RECORD)
    out["multiplier"], out["shift"] = multipliers, shifts
    return out


def nchw(x_hwc: np.ndarray) -> np.ndarray:
    return x_hwc.transpose(2, 0, 1)[None].astype(np.int64)


def hwc(y_nchw: np.ndarray) -> np.ndarray:
    return y_nchw[0].transpose(1, 2, 0)


def conv_fields(**fields) -> dict:
    base = dict(stride_h=1, stride_w=1, dilation_h=1, dilation_w=1, kernel_h=1, kernel_w=1)
    base.update(fields)
    return base


# --------------------------------------------------------------------------------------
# CONV: dense 3x3 stride 2 padded, depthwise, 1x1, gemm
# --------------------------------------------------------------------------------------


def test_conv_3x3_stride2_padded_per_channel_bias_relu():
    rng = np.random.default_rng(1)
    h, w, c, o = 11, 9, 5, 20  # neither channel count a multiple of A = 16
    x, weight = rng_codes(rng, (h, w, c)), rng_codes(rng, (o, 3, 3, c))
    bias = rng.integers(-20000, 20000, o).astype(np.int32)
    mult, shift = rng.integers(1 << 14, 1 << 15, o), rng.integers(12, 18, o)
    m = machine()
    put_map(m, 0, x)
    ohwi = np.zeros((32, 3, 3, 16), np.int8)
    ohwi[:o, :, :, :c] = weight
    put_bytes(m, 0x4000, ohwi)
    put_bytes(m, 0x8000, bias.astype("<i4"))
    put_bytes(m, 0x8100, records(mult, shift))
    conv = make_instruction("CONV", **conv_fields(
        relu=1, per_channel=1, bias=1, in_addr=0, weight_addr=0x4000, bias_addr=0x8000, rescale_addr=0x8100,
        out_addr=0x10000, in_h=h, in_w=w, in_c=c, out_c=o, kernel_h=3, kernel_w=3, stride_h=2, stride_w=2,
        pad_top=1, pad_left=1, pad_bottom=1, pad_right=1))
    m.execute([conv])
    acc = convolution.conv2d_int(nchw(x), weight.transpose(0, 3, 1, 2), bias, (2, 2), (1, 1, 1, 1), (1, 1), 1)
    expected = fp.clamp(fp.rescale(acc, mult, shift, 8, axis=1), 0, 127)
    got = get_map(m, 0x10000, 6, 5, o)
    assert np.array_equal(got, hwc(expected))
    assert 0 < np.count_nonzero(got) < got.size  # relu and the rescale both did something


def test_conv_asymmetric_pads_and_dilation_one_record():
    rng = np.random.default_rng(2)
    h, w, c, o = 8, 10, 16, 3
    x, weight = rng_codes(rng, (h, w, c)), rng_codes(rng, (o, 3, 2, c))
    m = machine()
    put_map(m, 0, x)
    ohwi = np.zeros((16, 3, 2, 16), np.int8)
    ohwi[:o] = weight
    put_bytes(m, 0x4000, ohwi)
    put_bytes(m, 0x8000, records(18000, 16))
    conv = make_instruction("CONV", **conv_fields(
        in_addr=0, weight_addr=0x4000, rescale_addr=0x8000, out_addr=0x10000, in_h=h, in_w=w, in_c=c, out_c=o,
        kernel_h=3, kernel_w=2, dilation_h=2, dilation_w=3, pad_top=2, pad_left=0, pad_bottom=1, pad_right=3))
    m.execute([conv])
    acc = convolution.conv2d_int(nchw(x), weight.transpose(0, 3, 1, 2), None, (1, 1), (2, 0, 1, 3), (2, 3), 1)
    oh, ow = acc.shape[2:]
    assert np.array_equal(get_map(m, 0x10000, oh, ow, o), hwc(fp.rescale(acc, 18000, 16, 8)))


def test_depthwise_conv():
    rng = np.random.default_rng(3)
    h, w, c = 9, 9, 24  # Cp = 32: the weight rows 24..31 are padding
    x, weight = rng_codes(rng, (h, w, c)), rng_codes(rng, (c, 3, 3))
    bias = rng.integers(-3000, 3000, c).astype(np.int32)
    mult, shift = rng.integers(1 << 14, 1 << 15, c), rng.integers(10, 14, c)
    m = machine()
    put_map(m, 0, x)
    dw = np.zeros((32, 3, 3), np.int8)
    dw[:c] = weight
    put_bytes(m, 0x4000, dw)
    put_bytes(m, 0x5000, bias.astype("<i4"))
    put_bytes(m, 0x5100, records(mult, shift))
    conv = make_instruction("CONV", **conv_fields(
        depthwise=1, per_channel=1, bias=1, in_addr=0, weight_addr=0x4000, bias_addr=0x5000, rescale_addr=0x5100,
        out_addr=0x10000, in_h=h, in_w=w, in_c=c, out_c=c, kernel_h=3, kernel_w=3, stride_h=2, stride_w=1,
        pad_top=1, pad_left=1, pad_bottom=1, pad_right=1))
    m.execute([conv])
    acc = convolution.conv2d_int(nchw(x), weight[:, None], bias, (2, 1), (1, 1, 1, 1), (1, 1), c)
    expected = fp.rescale(acc, mult, shift, 8, axis=1)
    assert np.array_equal(get_map(m, 0x10000, 5, 9, c), hwc(expected))


def test_pointwise_conv():
    rng = np.random.default_rng(4)
    h, w, c, o = 7, 6, 40, 33
    x, weight = rng_codes(rng, (h, w, c)), rng_codes(rng, (o, 1, 1, c))
    m = machine()
    put_map(m, 0, x)
    ohwi = np.zeros((48, 1, 1, 48), np.int8)
    ohwi[:o, :, :, :c] = weight
    put_bytes(m, 0x4000, ohwi)
    put_bytes(m, 0x8000, records(25000, 19))
    conv = make_instruction("CONV", **conv_fields(
        in_addr=0, weight_addr=0x4000, rescale_addr=0x8000, out_addr=0x10000, in_h=h, in_w=w, in_c=c, out_c=o))
    m.execute([conv])
    acc = convolution.conv2d_int(nchw(x), weight.transpose(0, 3, 1, 2), None, (1, 1), (0, 0, 0, 0), (1, 1), 1)
    assert np.array_equal(get_map(m, 0x10000, h, w, o), hwc(fp.rescale(acc, 25000, 19, 8)))


def test_gemm_is_a_1x1_conv_over_a_row():
    rng = np.random.default_rng(5)
    n, k, cols = 3, 50, 10  # A (3 x 50) @ B (50 x 10) + bias
    a, b = rng_codes(rng, (n, k)), rng_codes(rng, (k, cols))
    bias = rng.integers(-5000, 5000, cols).astype(np.int32)
    m = machine()
    put_map(m, 0, a[None])  # in_h = 1, in_w = N, in_c = K
    ohwi = np.zeros((16, 1, 1, 64), np.int8)
    ohwi[:cols, 0, 0, :k] = b.T
    put_bytes(m, 0x4000, ohwi)
    put_bytes(m, 0x5000, bias.astype("<i4"))
    put_bytes(m, 0x5100, records(30000, 18))
    conv = make_instruction("CONV", **conv_fields(
        bias=1, in_addr=0, weight_addr=0x4000, bias_addr=0x5000, rescale_addr=0x5100, out_addr=0x10000,
        in_h=1, in_w=n, in_c=k, out_c=cols))
    m.execute([conv])
    expected = fp.rescale(convolution.gemm_int(a, b, bias), 30000, 18, 8)
    assert np.array_equal(get_map(m, 0x10000, 1, n, cols)[0], expected)


# --------------------------------------------------------------------------------------
# ELTWISE
# --------------------------------------------------------------------------------------


B_ADDR, OUT_ADDR = 0x20000, 0x40000


def eltwise(op: int, broadcast: int = 0, **fields) -> Instruction:
    return make_instruction("ELTWISE", op=op, b_broadcast=broadcast, a_addr=0, b_addr=B_ADDR, out_addr=OUT_ADDR, **fields)


@pytest.mark.parametrize("variant", ["two_stage", "direct"])
@pytest.mark.parametrize("subtract", [False, True])
def test_eltwise_add_and_sub_follow_the_add_plan(variant, subtract):
    rng = np.random.default_rng(6)
    h, w, c = 40, 40, 19  # enough values that a rounded (instead of floored) pre_shift shows
    a, b = rng_codes(rng, (h, w, c)), rng_codes(rng, (h, w, c))
    plan = fp.add_plan(0.02, 0.013, 0.011 if variant == "two_stage" else 0.03, variant, subtract)
    assert (plan.pre_shift > 0) == (variant == "two_stage")
    m = machine()
    put_map(m, 0, a)
    put_map(m, B_ADDR, b)
    instruction = eltwise(
        1 if subtract else 0, stage16=int(variant == "two_stage"), pre_shift=plan.pre_shift,
        a_multiplier=plan.lhs_multiplier, a_shift=plan.lhs_shift, b_multiplier=plan.rhs_multiplier,
        b_shift=plan.rhs_shift, out_multiplier=plan.multiplier, out_shift=plan.shift, h=h, w=w, c=c)
    m.execute([instruction])
    assert np.array_equal(get_map(m, OUT_ADDR, h, w, c), fp.add_with_plan(a, b, plan))


def test_eltwise_two_stage_pre_shift_floors():
    # unit input and output factors expose the int16 stage: y = floor((a + b) / 4), not rounded
    a = np.arange(-127, 128, dtype=np.int8).reshape(1, 15, 17)
    b = np.full_like(a, 3)
    m = machine()
    put_map(m, 0, a)
    put_map(m, B_ADDR, b)
    m.execute([eltwise(0, h=1, w=15, c=17, stage16=1, pre_shift=2, a_multiplier=16384, a_shift=14,
                       b_multiplier=16384, b_shift=14, out_multiplier=16384, out_shift=14)])
    assert np.array_equal(get_map(m, OUT_ADDR, 1, 15, 17), np.floor((a.astype(np.int64) + 3) / 4))


def test_eltwise_add_in_place_with_relu():
    rng = np.random.default_rng(7)
    a, b = rng_codes(rng, (4, 4, 8)), rng_codes(rng, (4, 4, 8))
    plan = fp.add_plan(0.02, 0.02, 0.03, "direct")
    m = machine()
    put_map(m, 0, a)
    put_map(m, 0x4000, b)
    instruction = make_instruction(
        "ELTWISE", op=0, relu=1, a_addr=0, b_addr=0x4000, out_addr=0, h=4, w=4, c=8,
        a_multiplier=plan.lhs_multiplier, a_shift=plan.lhs_shift, b_multiplier=plan.rhs_multiplier,
        b_shift=plan.rhs_shift, out_multiplier=plan.multiplier, out_shift=plan.shift)
    m.execute([instruction])
    assert np.array_equal(get_map(m, 0, 4, 4, 8), fp.clamp(fp.add_with_plan(a, b, plan), 0, 127))


def test_eltwise_mul_channel_and_scalar_broadcast():
    rng = np.random.default_rng(8)
    h, w, c = 6, 5, 21
    a, scale_per_channel = rng_codes(rng, (h, w, c)), rng_codes(rng, (1, 1, c))
    plan = fp.mul_plan(0.05, 0.01, 0.02)
    m = machine()
    put_map(m, 0, a)
    put_map(m, B_ADDR, scale_per_channel)
    m.execute([eltwise(2, 1, h=h, w=w, c=c, out_multiplier=plan.multiplier, out_shift=plan.shift)])
    expected = fp.rescale(fp.mul_widening(a, scale_per_channel, 16), plan.multiplier, plan.shift, 8)
    assert np.array_equal(get_map(m, OUT_ADDR, h, w, c), expected)

    m.sram[B_ADDR] = np.int8(-93).view(np.uint8)  # a scalar b is one byte
    m.execute([eltwise(2, 2, h=h, w=w, c=c, out_multiplier=plan.multiplier, out_shift=plan.shift)])
    expected = fp.rescale(fp.mul_widening(a, -93, 16), plan.multiplier, plan.shift, 8)
    assert np.array_equal(get_map(m, OUT_ADDR, h, w, c), expected)


def test_eltwise_mul_with_input_rescales_is_rejected():
    m = machine()
    with pytest.raises(XnpuError, match=r"^instruction 0 \(ELTWISE\): .*mul"):
        m.execute([eltwise(2, 0, h=1, w=1, c=1, a_multiplier=16384, out_multiplier=16384, out_shift=15)])


# --------------------------------------------------------------------------------------
# POOL, TABLE, CLAMP
# --------------------------------------------------------------------------------------


def pool(kind: int, **fields) -> Instruction:
    return make_instruction("POOL", kind=kind, in_addr=0, out_addr=0x8000, **fields)


def test_max_pool_3x3_stride2_padding_never_wins():
    rng = np.random.default_rng(9)
    x = rng_codes(rng, (9, 10, 20), -127, -100)  # all negative: a zero pad would win if it counted
    m = machine()
    put_map(m, 0, x)
    m.execute([pool(0, in_h=9, in_w=10, c=20, out_h=5, out_w=5, kernel_h=3, kernel_w=3, stride_h=2, stride_w=2,
                    pad_top=1, pad_left=1, pad_bottom=1, pad_right=1)])
    expected = windows.max_pool_int(nchw(x), (3, 3), (2, 2), (1, 1, 1, 1), (1, 1), (5, 5))
    got = get_map(m, 0x8000, 5, 5, 20)
    assert np.array_equal(got, hwc(expected)) and got.max() < 0


def test_avg_pool_per_position_records_and_ceil_mode():
    rng = np.random.default_rng(10)
    h, w, c = 7, 7, 12
    x = rng_codes(rng, (h, w, c))
    kernel, strides, pads, out_hw = (3, 3), (2, 2), (1, 1, 0, 0), (4, 4)  # last windows overhang: ceil mode
    counts = windows.avg_pool_counts((h, w), kernel, strides, pads, out_hw, count_include_pad=False)
    mult, shift = windows.avg_pool_multipliers(counts, 0.04, 0.03)
    assert np.size(mult) == 16
    m = machine()
    put_map(m, 0, x)
    put_bytes(m, 0x4000, records(mult, shift))
    m.execute([pool(1, per_position=1, rescale_addr=0x4000, in_h=h, in_w=w, c=c, out_h=4, out_w=4,
                    kernel_h=3, kernel_w=3, stride_h=2, stride_w=2, pad_top=1, pad_left=1)])
    expected = windows.avg_pool_int(nchw(x), kernel, strides, pads, out_hw, mult, shift)
    assert np.array_equal(get_map(m, 0x8000, 4, 4, c), hwc(expected))


def test_avg_pool_immediate_pair_and_global_avg():
    rng = np.random.default_rng(11)
    x = rng_codes(rng, (6, 6, 40))
    m = machine()
    put_map(m, 0, x)
    m.execute([pool(1, in_h=6, in_w=6, c=40, out_h=3, out_w=3, kernel_h=2, kernel_w=2, stride_h=2, stride_w=2,
                    out_multiplier=16384, out_shift=16)])
    expected = windows.avg_pool_int(nchw(x), (2, 2), (2, 2), (0, 0, 0, 0), (3, 3), 16384, 16)
    assert np.array_equal(get_map(m, 0x8000, 3, 3, 40), hwc(expected))

    mult, shift = fp.multiplier_from_scale(0.04 / (36 * 0.01))
    m.execute([pool(2, in_h=6, in_w=6, c=40, out_h=1, out_w=1, out_multiplier=mult, out_shift=shift)])
    expected = fp.rescale(windows.global_avg_pool_sum_int(nchw(x)), mult, shift, 8)
    assert np.array_equal(get_map(m, 0x8000, 1, 1, 40), hwc(expected))


@pytest.mark.parametrize("out_addr", [0, 0x8000, 32 * 3])
def test_table_lookup_in_place_apart_and_overlapping(out_addr):
    """In place and apart, the lookup writes element by element; an output that overlaps the
    input in part still sees every input code as it was before the instruction."""
    rng = np.random.default_rng(15)
    x = rng_codes(rng, (5, 3, 18))
    table = fp.build_table(np.tanh, 0.05, 1 / 127).astype(np.int8)
    m = machine()
    put_map(m, 0, x)
    put_bytes(m, 0x4000, table)
    m.execute([make_instruction("TABLE", in_addr=0, out_addr=out_addr, table_addr=0x4000, h=5, w=3, c=18)])
    assert np.array_equal(get_map(m, out_addr, 5, 3, 18), fp.table_lookup(x, table))


def test_clamp():
    rng = np.random.default_rng(13)
    x = rng_codes(rng, (4, 9, 30))
    m = machine()
    put_map(m, 0, x)
    m.execute([make_instruction("CLAMP", in_addr=0, out_addr=0x8000, h=4, w=9, c=30, min=-5, max=60)])
    assert np.array_equal(get_map(m, 0x8000, 4, 9, 30), fp.clamp(x, -5, 60))


# --------------------------------------------------------------------------------------
# DMA layouts
# --------------------------------------------------------------------------------------


def test_nchw_to_padded_nhwc_and_back():
    rng = np.random.default_rng(14)
    c, h, w = 5, 4, 3  # A = 16: 11 pad lanes per pixel
    x = rng_codes(rng, (c, h, w))
    m = machine()
    m.sram[:] = 0xAA  # pad lanes must be written, not inherited
    m.write_ddr(0x100, x)
    load = make_instruction("LOAD", layout=2, sram_addr=0x40, ddr_addr=0x100, d0=c, d1=h, d2=w)
    store = make_instruction("STORE", layout=2, sram_addr=0x40, ddr_addr=0x800, d0=c, d1=h, d2=w)
    m.execute([load, store])
    sram = m.sram[0x40 : 0x40 + h * w * 16].view(np.int8).reshape(h, w, 16)
    assert np.array_equal(sram[:, :, :c], x.transpose(1, 2, 0)) and not sram[:, :, c:].any()
    assert m.sram[0x40 + h * w * 16] == 0xAA  # and nothing past the map
    assert m.read_ddr(0x800, x.size) == x.tobytes()
    assert m.read_ddr(0x800 + x.size, 4) == bytes(4)  # STORE writes only unpadded elements


def test_nhwc_tile_and_concat_strides():
    rng = np.random.default_rng(15)
    full = rng_codes(rng, (6, 8, 10))  # a 6 x 8 x 10 map in DDR
    m = machine()
    m.write_ddr(0, full)
    # the 3 x 4 tile at (2, 3): row stride of the full map, pixel stride of its channels
    tile = make_instruction("LOAD", layout=1, sram_addr=0, ddr_addr=(2 * 8 + 3) * 10, d0=3, d1=4, d2=10,
                            ddr_row_stride=8 * 10, ddr_pixel_stride=10, sram_row_stride=4 * 16 + 16)
    # store the tile as channels [10, 20) of a 3 x 4 x 20 concat, then the original as [0, 10)
    upper = make_instruction("STORE", layout=1, sram_addr=0, ddr_addr=4096 + 10, d0=3, d1=4, d2=10,
                             ddr_row_stride=4 * 20, ddr_pixel_stride=20, sram_row_stride=4 * 16 + 16)
    m.execute([tile, upper])
    sram = m.sram[: 3 * 80].view(np.int8).reshape(3, 80)[:, :64].reshape(3, 4, 16)
    assert np.array_equal(sram[:, :, :10], full[2:5, 3:7])
    assert not m.sram[64:80].any()  # the gap a longer row stride leaves is not touched
    concat = np.frombuffer(m.read_ddr(4096, 3 * 4 * 20), np.int8).reshape(3, 4, 20)
    assert np.array_equal(concat[:, :, 10:], full[2:5, 3:7]) and not concat[:, :, :10].any()


def test_kernel_layouts_are_padded_and_load_only():
    rng = np.random.default_rng(16)
    ohwi, dw = rng_codes(rng, (3, 2, 2, 5)), rng_codes(rng, (20, 3, 3))
    m = machine()
    m.sram[:] = 0x55
    m.write_ddr(0, ohwi)
    m.write_ddr(256, dw)
    m.execute([
        make_instruction("LOAD", layout=3, sram_addr=0, ddr_addr=0, d0=3, d1=2, d2=2, d3=5),
        make_instruction("LOAD", layout=4, sram_addr=0x1000, ddr_addr=256, d0=20, d1=3, d2=3),
    ])
    padded = m.sram[: 16 * 4 * 16].view(np.int8).reshape(16, 2, 2, 16)
    assert np.array_equal(padded[:3, :, :, :5], ohwi)
    assert not padded[3:].any() and not padded[:, :, :, 5:].any()
    rows = m.sram[0x1000 : 0x1000 + 32 * 9].view(np.int8).reshape(32, 3, 3)
    assert np.array_equal(rows[:20], dw) and not rows[20:].any()
    with pytest.raises(XnpuError, match=r"^instruction 0 \(STORE\): .*LOAD-only"):
        m.execute([Instruction("STORE", dict(make_instruction("STORE").fields, layout=3, d0=1, d1=1, d2=1, d3=1))])


def test_raw_int32_load():
    values = np.array([-2, 70000, -(1 << 31), (1 << 31) - 1, 5], "<i4")
    m = machine()
    m.write_ddr(64, values)
    m.execute([make_instruction("LOAD", layout=0, elem_log2=2, sram_addr=0x20, ddr_addr=64, d0=1, d1=5)])
    assert np.array_equal(m.sram[0x20 : 0x20 + 20].view("<i4"), values)


TARGETS_BY_ALIGNMENT = {a: target_with(channel_alignment=a, sram_bytes=64 * KIB) for a in (1, 4, 8, 16, 32)}


@settings(max_examples=60, deadline=None)
@given(
    c=st.integers(1, 40), h=st.integers(1, 6), w=st.integers(1, 6),
    alignment=st.sampled_from([1, 4, 8, 16, 32]), elem_log2=st.integers(0, 2),
    row_gap=st.integers(0, 3), seed=st.integers(0, 2**32 - 1),
)
def test_dma_layout_round_trips(c, h, w, alignment, elem_log2, row_gap, seed):
    """NCHW -> padded NHWC (optionally with a longer SRAM row) -> NHWC and NCHW, any shape and alignment."""
    target = TARGETS_BY_ALIGNMENT[alignment]
    e = 1 << elem_log2
    cp = -(-c // alignment) * alignment
    dtype = np.dtype(f"<i{e}")
    x = np.random.default_rng(seed).integers(np.iinfo(dtype).min, np.iinfo(dtype).max, (c, h, w), endpoint=True).astype(dtype)
    srs = (w * cp + row_gap * alignment) * e if row_gap else 0
    m = Machine(target, ddr_size=64 * KIB)
    m.sram[:] = 0x77
    m.write_ddr(0, x)
    dims = dict(elem_log2=elem_log2, sram_row_stride=srs)
    m.execute([
        make_instruction("LOAD", layout=2, sram_addr=32, ddr_addr=0, d0=c, d1=h, d2=w, **dims),
        make_instruction("STORE", layout=1, sram_addr=32, ddr_addr=16 * KIB, d0=h, d1=w, d2=c, **dims),
        make_instruction("STORE", layout=2, sram_addr=32, ddr_addr=32 * KIB, d0=c, d1=h, d2=w, **dims),
    ])
    row = srs or w * cp * e
    image = np.stack([m.sram[32 + r * row : 32 + r * row + w * cp * e] for r in range(h)]).view(dtype).reshape(h, w, cp)
    assert np.array_equal(image[:, :, :c], x.transpose(1, 2, 0))
    assert not image[:, :, c:].any()
    assert np.frombuffer(m.read_ddr(16 * KIB, x.nbytes), dtype).reshape(h, w, c).tolist() == x.transpose(1, 2, 0).tolist()
    assert m.read_ddr(32 * KIB, x.nbytes) == x.tobytes()



# --------------------------------------------------------------------------------------
# A whole program: cycles, provenance, trace, halt, and the host side
# --------------------------------------------------------------------------------------


def small_network(rng) -> tuple[Binary, dict]:
    """LOAD input NCHW, conv 3x3 + relu, global avg pool, STORE: the weights come from the constants."""
    c, o, h, w = 3, 8, 10, 10
    weight = rng_codes(rng, (o, 3, 3, c))
    bias = rng.integers(-500, 500, o).astype("<i4")
    mult, shift = rng.integers(1 << 14, 1 << 15, o), rng.integers(13, 16, o)
    constants = bytearray(512)
    constants[0 : weight.size] = weight.tobytes()  # OHWI unpadded
    constants[256 : 256 + 4 * o] = bias.tobytes()
    constants[320 : 320 + 4 * o] = records(mult, shift).tobytes()
    gap_m, gap_s = fp.multiplier_from_scale(1 / 100)
    program = [
        make_instruction("LOAD", layout=2, sram_addr=0, ddr_addr=4096, d0=c, d1=h, d2=w),
        make_instruction("LOAD", layout=3, sram_addr=0x2000, ddr_addr=0, d0=o, d1=3, d2=3, d3=c),
        make_instruction("LOAD", layout=0, elem_log2=2, sram_addr=0x3000, ddr_addr=256, d0=1, d1=o),
        make_instruction("LOAD", layout=0, sram_addr=0x3100, ddr_addr=320, d0=1, d1=4 * o),
        make_instruction("CONV", **conv_fields(
            relu=1, bias=1, per_channel=1, in_addr=0, weight_addr=0x2000, bias_addr=0x3000, rescale_addr=0x3100,
            out_addr=0x4000, in_h=h, in_w=w, in_c=c, out_c=o, kernel_h=3, kernel_w=3,
            pad_top=1, pad_left=1, pad_bottom=1, pad_right=1)),
        make_instruction("POOL", kind=2, in_addr=0x4000, out_addr=0x8000, in_h=h, in_w=w, c=o, out_h=1, out_w=1,
                         out_multiplier=gap_m, out_shift=gap_s),
        make_instruction("STORE", layout=0, sram_addr=0x8000, ddr_addr=8192, d0=1, d1=o),
        make_instruction("SYNC", halt=1, token=7),
    ]
    program = insert_dependencies(program, DEFAULT.memory.channel_alignment)  # the CONV waits for its LOADs
    binary = Binary(
        target_id=DEFAULT.id, instructions=program, constants=bytes(constants),
        io=[IoTensor("image", "input", (1, c, h, w), "int8", 0.02, 0, 4096, "NCHW"),
            IoTensor("features", "output", (1, o), "int8", 0.05, 0, 8192, "RAW")],
        provenance={1: ("conv1",), 2: ("conv1",), 3: ("conv1",), 4: ("conv1", "relu1"), 5: ("gap",)},
    )

    def reference(q):
        acc = convolution.conv2d_int(q, weight.transpose(0, 3, 1, 2), bias, (1, 1), (1, 1, 1, 1), (1, 1), 1)
        y = fp.clamp(fp.rescale(acc, mult, shift, 8, axis=1), 0, 127)
        return fp.rescale(windows.global_avg_pool_sum_int(y), gap_m, gap_s, 8).reshape(1, o)

    return binary, reference


def test_program_outputs_cycles_provenance_and_trace():
    rng = np.random.default_rng(17)
    binary, reference = small_network(rng)
    q = rng_codes(rng, (1, 3, 10, 10)).astype(np.int64)
    events = []
    outputs, stats = Machine(DEFAULT, ddr_size=16 * KIB).run(binary, {"image": q}, trace=events.append)
    assert np.array_equal(outputs["features"], reference(q))
    assert stats.cycles == program_cycles(binary.instructions, DEFAULT)
    per_instruction = [instruction_cycles(i, DEFAULT) for i in binary.instructions]
    assert [e.cycles for e in events] == per_instruction and [e.index for e in events] == list(range(8))
    assert events[4].mnemonic == "CONV" and events[4].provenance == ("conv1", "relu1")
    assert stats.by_class["LOAD"] == sum(per_instruction[:4])
    assert stats.by_class["CONV"] == per_instruction[4]
    assert stats.by_layer == {
        "(no provenance)": per_instruction[0] + per_instruction[6] + per_instruction[7],
        "conv1": sum(per_instruction[1:4]),
        "conv1 + relu1": per_instruction[4],
        "gap": per_instruction[5],
    }
    assert stats.tokens == [7]


def test_run_binary_quantizes_runs_samples_and_dequantizes():
    rng = np.random.default_rng(18)
    binary, reference = small_network(rng)
    binary = Binary.from_bytes(binary.to_bytes())  # through the container, as a file would be
    x = rng.normal(0, 1.2, (4, 3, 10, 10)).astype(np.float32)  # 4 samples of a batch-1 model
    result = simulate(binary, {"image": x})
    for n in range(4):
        codes = reference(fp.quantize(x[n : n + 1], 0.02))
        assert np.array_equal(result.codes["features"][n : n + 1], codes)
    assert np.array_equal(result.outputs["features"], fp.dequantize(result.codes["features"], 0.05))
    assert result.outputs["features"].dtype == np.float32
    assert result.stats.cycles == 4 * program_cycles(binary.instructions, DEFAULT)
    assert np.array_equal(run_binary(binary, x[:1])["features"], result.outputs["features"][:1])
    with pytest.raises(XnpuError, match="input 'image' has shape"):
        run_binary(binary, x[:, :2])


def test_halt_stops_the_program():
    m = machine()
    put_map(m, 0, np.full((1, 1, 4), 9, np.int8))
    stats = m.execute([
        make_instruction("SYNC", halt=1, token=3),
        make_instruction("CLAMP", in_addr=0, out_addr=0, h=1, w=1, c=4, min=0, max=1),
    ])
    assert stats.instructions == 1 and stats.tokens == [3]
    assert get_map(m, 0, 1, 1, 4).tolist() == [[[9, 9, 9, 9]]]


# --------------------------------------------------------------------------------------
# Errors name the instruction
# --------------------------------------------------------------------------------------


def test_out_of_bounds_sram_is_an_error_naming_the_instruction():
    m = machine()
    end = DEFAULT.memory.sram_bytes - 16  # starts inside SRAM, the 4x4x16 map runs past its end
    program = [make_instruction("SYNC"), make_instruction("SYNC"),
               make_instruction("CLAMP", in_addr=end, out_addr=0, h=4, w=4, c=16, min=0, max=1)]
    with pytest.raises(XnpuError, match=r"^instruction 2 \(CLAMP\): SRAM bytes \[\d+, \d+\) are outside the 1048576-byte SRAM$"):
        m.execute(program)


@pytest.mark.parametrize(
    "instruction, pattern",
    [
        (make_instruction("LOAD", layout=0, ddr_addr=(1 << 20) - 4, d0=1, d1=8), r"DDR bytes .* outside"),
        (Instruction("LOAD", dict(make_instruction("LOAD").fields, layout=9)), r"unknown DMA layout 9"),
        (make_instruction("LOAD", layout=0, d0=1, d1=1, d2=3), r"d2 must be 0 in layout RAW"),
        (make_instruction("LOAD", layout=1, d0=2, d1=2, d2=16, sram_row_stride=16), r"rows would overlap"),
        (make_instruction("CONV", **conv_fields(in_addr=0, out_addr=64, in_h=4, in_w=4, in_c=3, out_c=3)),
         r"input .* and output .* overlap"),
        (make_instruction("CONV", **conv_fields(in_h=2, in_w=2, in_c=1, out_c=1, kernel_h=3, kernel_w=3, out_addr=4096)),
         r"leaves no output"),
        (make_instruction("POOL", kind=0, in_h=2, in_w=2, c=1, out_h=3, out_w=1, kernel_h=1, kernel_w=1,
                          stride_h=2, stride_w=1, out_addr=4096), r"entirely in the padding"),
        (make_instruction("CONV", **conv_fields(in_h=1, in_w=1, in_c=1, out_c=1, out_addr=4096, rescale_addr=512)),
         r"nonzero byte 3|multiplier"),
    ],
)
def test_invalid_programs_are_one_line_errors(instruction, pattern):
    m = machine()
    m.sram[512:516] = [0, 1, 3, 1]  # a record with a bad multiplier and a nonzero pad byte
    with pytest.raises(XnpuError) as caught:
        m.execute([make_instruction("SYNC"), instruction])
    message = str(caught.value)
    assert "\n" not in message
    assert re.match(rf"^instruction 1 \({instruction.op}\): ", message), message
    assert re.search(pattern, message), message


def test_missing_units_of_the_lite_target():
    m = machine(LITE)
    with pytest.raises(XnpuError, match=r"^instruction 0 \(CLAMP\): .*no clamp unit"):
        m.execute([make_instruction("CLAMP", h=1, w=1, c=1)])
    with pytest.raises(XnpuError, match=r"^instruction 0 \(ELTWISE\): .*mul is not supported"):
        m.execute([make_instruction("ELTWISE", op=2, h=1, w=1, c=1, out_addr=64)])


def test_binary_for_another_target_is_refused():
    binary, _ = small_network(np.random.default_rng(19))
    with pytest.raises(XnpuError, match="built for target id 1"):
        Machine(LITE, ddr_size=16 * KIB).run(binary, {"image": np.zeros((1, 3, 10, 10), np.int64)})


# --------------------------------------------------------------------------------------
# Speed: the conv is one vectorized call
# --------------------------------------------------------------------------------------


def conv_cost(target, h, w, c, o, k, stride) -> tuple[int, float]:
    """(Python calls, CPU seconds) of executing one CONV of the given sizes.

    Calls are counted with a profile hook: a per-pixel or per-channel Python loop shows as a
    count that grows with the map, whatever the machine's load. CPU time, unlike wall-clock
    time, is not stretched by other jobs on the machine."""
    rng = np.random.default_rng(20)
    m = Machine(target, ddr_size=KIB)
    put_map(m, 0, rng_codes(rng, (h, w, c)))
    in_bytes = h * w * target.align(c)
    weights = np.zeros((target.align(o), k, k, target.align(c)), np.int8)
    put_bytes(m, in_bytes, weights)
    rescale = in_bytes + weights.size
    put_bytes(m, rescale, records(16384, 20))
    conv = make_instruction("CONV", **conv_fields(
        in_addr=0, weight_addr=in_bytes, rescale_addr=rescale, out_addr=rescale + 64, in_h=h, in_w=w, in_c=c,
        out_c=o, kernel_h=k, kernel_w=k, stride_h=stride, stride_w=stride,
        pad_top=k // 2, pad_left=k // 2, pad_bottom=k // 2, pad_right=k // 2))
    calls = 0

    def count(frame, event, arg):
        nonlocal calls
        calls += event in ("call", "c_call")

    start = time.process_time()
    sys.setprofile(count)
    try:
        m.execute([conv])
    finally:
        sys.setprofile(None)
    return calls, time.process_time() - start


def test_conv_is_vectorized_on_resnet_layers():
    big = target_with(sram_bytes=16 * 1024 * KIB)
    conv_cost(DEFAULT, 8, 8, 64, 64, 3, 1)  # first use: imports and compiled kernels load
    small_calls, _ = conv_cost(DEFAULT, 8, 8, 64, 64, 3, 1)
    layer_calls, layer_seconds = conv_cost(DEFAULT, 56, 56, 64, 64, 3, 1)
    stem_calls, stem_seconds = conv_cost(big, 224, 224, 3, 64, 7, 2)  # the ResNet stem on a 224 x 224 image
    # 49 times the pixels and the same Python work: the arithmetic runs in whole-array calls
    assert layer_calls <= small_calls + 50
    assert stem_calls <= small_calls + 50
    assert layer_seconds < 1.0 and stem_seconds < 1.0  # ~0.04 s each


# --------------------------------------------------------------------------------------
# xnpu-run on a .xnb file
# --------------------------------------------------------------------------------------


def xnpu_run(*args) -> subprocess.CompletedProcess:
    script = Path(sys.executable).parent / "xnpu-run"
    command = [str(script)] if script.exists() else [sys.executable, "-m", "xnpu.tools.xnpu_run"]
    return subprocess.run([*command, *map(str, args)], capture_output=True, text=True, timeout=120)


def in_process_runner(capsys):
    from xnpu.tools.xnpu_run import main

    def run(*args) -> subprocess.CompletedProcess:
        returncode = main([str(arg) for arg in args])
        captured = capsys.readouterr()
        return subprocess.CompletedProcess(args, returncode, captured.out, captured.err)

    return run


def test_xnpu_run_binary_profile_and_trace(tmp_path, capsys):
    from xnpu.tools.xnpu_run import main

    rng = np.random.default_rng(21)
    binary, reference = small_network(rng)
    (tmp_path / "net.xnb").write_bytes(binary.to_bytes())
    x = rng.normal(0, 1, (2, 3, 10, 10)).astype(np.float32)
    np.save(tmp_path / "x.npy", x)
    assert main([str(tmp_path / "net.xnb"), "--input", str(tmp_path / "x.npy"), "--profile", "--trace",
                 "-o", str(tmp_path / "out.npz")]) == 0
    out = capsys.readouterr().out
    assert len(re.findall(r"^\s+\d+\s+CONV\s+\d+ cycles\s+\d+\.\.\d+\s+conv1, relu1$", out, re.M)) == 2  # one per sample
    assert re.search(r"^features: 2x8 float32", out, re.M)
    # cycles, share, compute, no DMA, x max, no DDR bytes moved, none compulsory
    assert re.search(r"^conv1 \+ relu1\s+\d+\s+[\d.]+%\s+\d+\s+0\s+[\d.]+\s+0\s+0$", out, re.M)
    total = 2 * program_cycles(binary.instructions, DEFAULT)
    assert f"total: {total} cycles in 16 instructions" in out
    saved = np.load(tmp_path / "out.npz")["features"]
    codes = np.concatenate([reference(fp.quantize(x[n : n + 1], 0.02)) for n in range(2)])
    assert np.array_equal(saved, fp.dequantize(codes, 0.05))


def test_xnpu_run_corrupt_binary_is_one_line(tmp_path, capsys):
    in_process = in_process_runner(capsys)
    binary, _ = small_network(np.random.default_rng(22))
    data = bytearray(binary.to_bytes())
    (tmp_path / "truncated.xnb").write_bytes(bytes(data[:-5]))
    data[200] ^= 0x40
    (tmp_path / "flipped.xnb").write_bytes(bytes(data))
    np.save(tmp_path / "x.npy", np.zeros((1, 3, 10, 10), np.float32))
    # one real process (the exit status and stderr a user sees), the other case in-process
    cases = (("truncated", "truncated", in_process), ("flipped", "checksum mismatch", xnpu_run))
    for name, reason, run in cases:
        result = run(tmp_path / f"{name}.xnb", "--input", tmp_path / "x.npy")
        assert result.returncode == 1 and "Traceback" not in result.stderr
        lines = result.stderr.splitlines()
        assert len(lines) == 1 and re.fullmatch(rf"xnpu-run: error: .*{name}\.xnb: binary: {reason}.*", lines[0]), lines
        assert result.stdout == ""


def test_xnpu_run_profile_needs_a_binary(tmp_path, capsys):
    from xnpu.tools.xnpu_run import main

    (tmp_path / "m.mlir").write_text(
        'func.func @main(%x: tensor<2xf32>) -> tensor<2xf32> {\n  func.return %x : tensor<2xf32>\n}\n')
    np.save(tmp_path / "x.npy", np.zeros(2, np.float32))
    assert main([str(tmp_path / "m.mlir"), "--input", str(tmp_path / "x.npy"), "--profile"]) == 1
    assert "need a compiled program, .xnb or isa IR" in capsys.readouterr().err


# --------------------------------------------------------------------------------------
# The same network as fixed IR: the simulator and the fixed interpreter agree bit for bit
# --------------------------------------------------------------------------------------


def small_network_ir(binary: Binary) -> str:
    """small_network's program written as the fixed-level module a compiler would lower from."""
    constants = binary.constants
    o, c = 8, 3
    weight_oihw = np.frombuffer(constants[: o * 9 * c], np.int8).reshape(o, 3, 3, c).transpose(0, 3, 1, 2)
    bias = np.frombuffer(constants[256 : 256 + 4 * o], "<i4")
    rec = np.frombuffer(constants[320 : 320 + 4 * o], RECORD)
    pool = binary.instructions[5]
    ints = lambda values: ", ".join(str(int(v)) for v in values)  # noqa: E731
    return f"""\
func.func @main(%x: tensor<1x3x10x10xf32> {{nn.name = "image"}}) -> (tensor<1x8xf32> {{nn.name = "features"}}) {{
  %q = fixed.quantize %x {{scale = 0.02 : f64}} : tensor<1x3x10x10xf32> -> tensor<1x3x10x10xi8>
  %w = fixed.constant dense<"0x{np.ascontiguousarray(weight_oihw).tobytes().hex().upper()}"> : tensor<8x3x3x3xi8>
  %b = fixed.constant dense<[{ints(bias)}]> : tensor<8xi32>
  %acc = fixed.conv2d %q, %w, %b {{strides = array<i64: 1, 1>, pads = array<i64: 1, 1, 1, 1>, dilations = array<i64: 1, 1>, group = 1 : i64}} : (tensor<1x3x10x10xi8>, tensor<8x3x3x3xi8>, tensor<8xi32>) -> tensor<1x8x10x10xi32>
  %y = fixed.rescale %acc {{multiplier = array<i64: {ints(rec["multiplier"])}>, shift = array<i64: {ints(rec["shift"])}>, axis = 1 : i64}} : tensor<1x8x10x10xi32> -> tensor<1x8x10x10xi8>
  %r = fixed.clamp %y {{min = 0 : i64, max = 127 : i64}} : tensor<1x8x10x10xi8> -> tensor<1x8x10x10xi8>
  %s = fixed.global_avg_pool %r : tensor<1x8x10x10xi8> -> tensor<1x8x1x1xi32>
  %g = fixed.rescale %s {{multiplier = array<i64: {pool["out_multiplier"]}>, shift = array<i64: {pool["out_shift"]}>}} : tensor<1x8x1x1xi32> -> tensor<1x8x1x1xi8>
  %f = fixed.flatten %g {{axis = 1 : i64}} : tensor<1x8x1x1xi8> -> tensor<1x8xi8>
  %d = fixed.dequantize %f {{scale = 0.05 : f64}} : tensor<1x8xi8> -> tensor<1x8xf32>
  func.return %d : tensor<1x8xf32>
}}
"""


def test_binary_agrees_with_the_fixed_interpreter():
    import xnpu
    from xnpu.ir.io import parse_ir

    rng = np.random.default_rng(23)
    binary, _ = small_network(rng)
    module = parse_ir(small_network_ir(binary))
    x = rng.normal(0, 1.5, (3, 3, 10, 10)).astype(np.float32)
    expected = xnpu.run(module, {"image": x})["features"]
    got = run_binary(binary, {"image": x})["features"]
    assert got.dtype == expected.dtype == np.float32
    assert np.array_equal(got, expected)
    assert np.count_nonzero(got) > 3


# --------------------------------------------------------------------------------------
# A binary loaded once: constants and prepared weights are reused only while they hold
# --------------------------------------------------------------------------------------


def test_a_machine_reuses_a_binarys_constants_only_while_ddr_holds_them():
    rng = np.random.default_rng(31)
    binary, reference = small_network(rng)
    m = Machine(DEFAULT, ddr_size=16 * KIB)
    q = rng_codes(rng, (1, 3, 10, 10)).astype(np.int64)
    first, _ = m.run(binary, {"image": q})
    again, _ = m.run(binary, {"image": q})
    assert np.array_equal(first["features"], reference(q)) and np.array_equal(again["features"], first["features"])
    # the conv's weights are prepared once; a write into the constant image drops them
    assert m._prepared
    flipped = bytearray(binary.constants)
    flipped[:27] = (-np.frombuffer(bytes(flipped[:27]), np.int8)).astype(np.int8).tobytes()  # output channel 0
    m.write_ddr(0, bytes(flipped))
    assert not m._prepared
    m.reset_sram()
    m.write_tensor(binary.inputs()[0], q)
    m.execute(binary.instructions)  # the program again, on the rewritten weights
    changed = m.read_tensor(binary.outputs()[0])
    fresh = Machine(DEFAULT, ddr_size=16 * KIB)
    expected, _ = fresh.run(Binary(binary.target_id, binary.instructions, bytes(flipped), binary.io,
                                   provenance=binary.provenance), {"image": q})
    assert np.array_equal(changed, expected["features"])
    assert not np.array_equal(changed, first["features"])


def test_sram_shows_every_load_even_those_not_yet_read():
    rng = np.random.default_rng(32)
    binary, _ = small_network(rng)
    q = rng_codes(rng, (1, 3, 10, 10)).astype(np.int64)
    lazy = Machine(DEFAULT, ddr_size=16 * KIB)
    lazy.run(binary, {"image": q})
    eager = Machine(DEFAULT, ddr_size=16 * KIB)
    eager.load_constants(binary.constants)
    eager.write_tensor(binary.inputs()[0], q)
    eager.execute(binary.instructions)  # a list of instructions: every LOAD copies at once
    assert np.array_equal(lazy.sram, eager.sram)
