"""The cost model of docs/isa.md section 5: cycles per instruction from target parameters.

The formulas are the table in the doc, one function per row. A program's cycles are not their
sum: the DMA and EXEC queues run concurrently (docs/isa.md section 3), so a program takes the
makespan of its schedule under the queue model (`xnpu.target.queues.schedule`).
"""

from __future__ import annotations

from collections.abc import Iterable

from xnpu.core.errors import XnpuError
from xnpu.target.codebook import ids_bytes
from xnpu.target.description import TargetDescription
from xnpu.target.encoding import DMA_LAYOUTS, ELTWISE_OPS, POOL_KINDS, Instruction, make_instruction
from xnpu.target.footprints import conv_output_hw
from xnpu.target.queues import schedule

__all__ = ["conv_output_hw", "dma_sram_bytes", "dma_ddr_bytes", "dma_cycle_bytes", "instruction_cycles", "conv_cycles",
           "program_cycles"]


def _ceil_div(a: int, b: int) -> int:
    return -(-a // b)


def dma_sram_bytes(i: Instruction, target: TargetDescription) -> int:
    """Bytes a LOAD writes to / a STORE reads from SRAM (the padded size)."""
    element = 1 << i["elem_log2"]
    d0, d1, d2, d3 = i["d0"], i["d1"], i["d2"], i["d3"]
    layout = i["layout"]
    if layout == DMA_LAYOUTS["RAW"]:
        return d0 * d1 * element
    if layout == DMA_LAYOUTS["NHWC"]:
        return d0 * d1 * target.align(d2) * element
    if layout == DMA_LAYOUTS["NCHW"]:
        return d1 * d2 * target.align(d0) * element
    if layout == DMA_LAYOUTS["OHWI"]:
        return target.align(d0) * d1 * d2 * target.align(d3) * element
    if layout == DMA_LAYOUTS["DW"]:
        return target.align(d0) * d1 * d2 * element
    raise XnpuError(f"DMA layout {layout} has no cost")


def dma_ddr_bytes(i: Instruction) -> int:
    """Bytes a DMA moves on its DDR side: the unpadded elements, or a decoding LOAD's packed
    id rows and its dictionary."""
    bits = i.fields.get("codebook_bits", 0)
    if bits:
        return ids_bytes(i) + (1 << bits)
    element = 1 << i["elem_log2"]
    d0, d1, d2, d3 = i["d0"], i["d1"], i["d2"], i["d3"]
    layout = i["layout"]
    if layout == DMA_LAYOUTS["RAW"]:
        return d0 * d1 * element
    if layout == DMA_LAYOUTS["OHWI"]:
        return d0 * d1 * d2 * d3 * element
    return d0 * d1 * d2 * element  # NHWC, NCHW, DW: three dimensions


def dma_cycle_bytes(i: Instruction, target: TargetDescription) -> int:
    """The bytes a DMA's cycles count (docs/isa.md section 5): the SRAM side (padded), or what
    a decoding LOAD reads from DDR (the packed ids and the dictionary)."""
    return dma_ddr_bytes(i) if i.fields.get("codebook_bits", 0) else dma_sram_bytes(i, target)


def instruction_cycles(i: Instruction, target: TargetDescription) -> int:
    cost = target.cost
    overhead = cost.instruction_overhead_cycles
    if i.op == "SYNC":
        return overhead + cost.sync_cycles
    if i.op in ("LOAD", "STORE"):
        return overhead + cost.dma_latency_cycles + _ceil_div(dma_cycle_bytes(i, target), cost.dma_bytes_per_cycle)
    if i.op == "CONV":
        return conv_cycles(target, conv_output_hw(i), (i["kernel_h"], i["kernel_w"]), i["in_c"], i["out_c"],
                           bool(i["depthwise"]))
    if i.op in ("ELTWISE", "TABLE", "CLAMP"):
        return overhead + _ceil_div(i["h"] * i["w"] * target.align(i["c"]), cost.vector_lanes)
    if i.op == "POOL":
        vectors = _ceil_div(target.align(i["c"]), cost.vector_lanes)
        if i["kind"] == POOL_KINDS["global_avg"]:
            return overhead + i["in_h"] * i["in_w"] * vectors
        return overhead + i["out_h"] * i["out_w"] * i["kernel_h"] * i["kernel_w"] * vectors
    raise XnpuError(f"instruction {i.op} has no cost")


def conv_cycles(target: TargetDescription, out_hw, kernel, in_channels: int, out_channels: int, depthwise: bool) -> int:
    """One CONV: overhead + OH*OW*KH*KW * ceil(in_c/A) (* ceil(out_c/A) when dense) MAC blocks."""
    a = target.memory.channel_alignment
    blocks = out_hw[0] * out_hw[1] * kernel[0] * kernel[1] * _ceil_div(in_channels, a)
    if not depthwise:
        blocks *= _ceil_div(out_channels, a)
    return target.cost.instruction_overhead_cycles + blocks * target.cost.mac_block_cycles


def program_cycles(instructions: Iterable[Instruction], target: TargetDescription) -> int:
    """The makespan of the program under the queue model (up to its first SYNC halt=1)."""
    program = list(instructions)
    return schedule(program, [instruction_cycles(i, target) for i in program]).cycles


def depthwise_scale_cycles(target: TargetDescription, h: int, w: int, channels: int) -> int:
    """An H x W x C map times one value per channel on the CONV unit: the depthwise 1x1 CONV and
    the loads of its C kernels and its rescale record (the map's own DMA is the same either way)."""

    conv = make_instruction("CONV", depthwise=1, in_h=h, in_w=w, in_c=channels, out_c=channels, kernel_h=1, kernel_w=1,
                            stride_h=1, stride_w=1, dilation_h=1, dilation_w=1)
    kernels = make_instruction("LOAD", layout=DMA_LAYOUTS["DW"], d0=channels, d1=1, d2=1)
    record = make_instruction("LOAD", layout=DMA_LAYOUTS["RAW"], d0=1, d1=4)
    return sum(instruction_cycles(i, target) for i in (conv, kernels, record))


def eltwise_scale_cycles(target: TargetDescription, h: int, w: int, channels: int) -> int:
    """The same on the ELTWISE unit: the mul and the load of the C per-channel values."""

    mul = make_instruction("ELTWISE", op=ELTWISE_OPS["mul"], h=h, w=w, c=channels)
    values = make_instruction("LOAD", layout=DMA_LAYOUTS["NHWC"], d0=1, d1=1, d2=channels)
    return sum(instruction_cycles(i, target) for i in (mul, values))
