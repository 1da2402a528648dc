"""The cost model of docs/isa.md section 5, on hand-computed cases."""

from xnpu.target.cost import conv_output_hw, instruction_cycles, program_cycles
from xnpu.target.description import load_target
from xnpu.target.encoding import make_instruction

DEFAULT = load_target("xnpu_default")  # A = 16, overhead 8, 16 B/cycle DMA + 64, 16 lanes
LITE = load_target("xnpu_lite")  # A = 8, overhead 8, 8 B/cycle DMA + 96, 8 lanes


def conv(**fields):
    base = dict(kernel_h=3, kernel_w=3, stride_h=1, stride_w=1, dilation_h=1, dilation_w=1,
                pad_top=1, pad_left=1, pad_bottom=1, pad_right=1, in_h=8, in_w=8, in_c=20, out_c=40)
    base.update(fields)
    return make_instruction("CONV", **base)


def test_conv_output_size_matches_the_onnx_formula():
    assert conv_output_hw(conv()) == (8, 8)
    assert conv_output_hw(conv(stride_h=2, stride_w=2)) == (4, 4)
    assert conv_output_hw(conv(dilation_h=2, dilation_w=3, pad_top=0, pad_left=0, pad_bottom=0, pad_right=0)) == (4, 2)


def test_conv_cycles_count_mac_blocks():
    # 8*8 outputs * 9 taps * ceil(20/16)=2 * ceil(40/16)=3 blocks
    assert instruction_cycles(conv(), DEFAULT) == 8 + 64 * 9 * 2 * 3
    # depthwise uses one row of the array: no output-channel factor
    assert instruction_cycles(conv(depthwise=1, out_c=20), DEFAULT) == 8 + 64 * 9 * 2
    # the lite array is 8 x 8: ceil(20/8)=3, ceil(40/8)=5
    assert instruction_cycles(conv(), LITE) == 8 + 64 * 9 * 3 * 5


def test_dma_cycles_count_padded_sram_bytes():
    load = make_instruction("LOAD", layout=1, d0=16, d1=16, d2=3)  # 16x16x3 -> 16x16x16 in SRAM
    assert instruction_cycles(load, DEFAULT) == 8 + 64 + 16 * 16 * 16 // 16
    kernel = make_instruction("LOAD", layout=3, d0=10, d1=3, d2=3, d3=3)  # OHWI 16x3x3x16
    assert instruction_cycles(kernel, DEFAULT) == 8 + 64 + 16 * 9 * 16 // 16
    bias = make_instruction("LOAD", layout=0, elem_log2=2, d0=1, d1=10)  # 40 bytes
    assert instruction_cycles(bias, DEFAULT) == 8 + 64 + 3


def test_vector_and_pool_cycles():
    add = make_instruction("ELTWISE", h=4, w=4, c=20)
    assert instruction_cycles(add, DEFAULT) == 8 + 4 * 4 * 32 // 16
    pool = make_instruction("POOL", kind=0, in_h=8, in_w=8, c=20, out_h=4, out_w=4, kernel_h=2, kernel_w=2, stride_h=2, stride_w=2)
    assert instruction_cycles(pool, DEFAULT) == 8 + 16 * 4 * 2
    gap = make_instruction("POOL", kind=2, in_h=7, in_w=7, c=64, out_h=1, out_w=1)
    assert instruction_cycles(gap, DEFAULT) == 8 + 49 * 4
    sync = make_instruction("SYNC", halt=1)
    assert program_cycles([add, sync], DEFAULT) == (8 + 32) + (8 + 16)
