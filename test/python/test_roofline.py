"""The roofline of a run (backend/roofline.py): cycles against the busier queue, DDR bytes
moved against the compulsory ones, per layer and per program, in the profile and the report."""

from __future__ import annotations

import csv
import io
from pathlib import Path

import numpy as np
import pytest

from xnpu.backend.roofline import compulsory_ranges, ddr_traffic, ratio
from xnpu.backend.simulator import Machine, format_profile, planned_stats, simulate
from xnpu.driver.pipeline import compile as compile_model
from xnpu.target.encoding import make_instruction

EXAMPLES = Path(__file__).resolve().parents[2] / "examples"


def raw(op: str, sram: int, ddr: int, size: int):
    return make_instruction(op, layout=0, sram_addr=sram, ddr_addr=ddr, d0=1, d1=size)


def test_a_constant_loaded_twice_is_compulsory_once():
    program = [
        raw("LOAD", 0, 0, 100),  # constants [0, 100)
        raw("LOAD", 256, 50, 100),  # constants [50, 100) again, then [100, 150)
        raw("LOAD", 512, 1000, 40),  # the input
        raw("STORE", 0, 2000, 30),  # the output
        raw("STORE", 0, 3000, 30),  # scratch: moved, not compulsory
        raw("LOAD", 0, 3000, 30),  # and loaded back
    ]
    layers = ["a", "b", "b", "c", "c", "c"]
    ranges = compulsory_ranges(150, inputs=[(1000, 40)], outputs=[(2000, 30)])
    moved, first = ddr_traffic(program, layers, 16, ranges)
    assert moved == {"a": 100, "b": 140, "c": 90}
    assert first == {"a": 100, "b": 90, "c": 30}  # b: 50 new constant bytes and the 40 input bytes


def test_ratio_is_the_makespan_over_the_busier_queue():
    assert ratio(150, 100, 60) == 1.5 and ratio(100, 40, 100) == 1.0 and ratio(0, 0, 0) == 0.0


def test_a_run_reports_its_roofline_per_layer_and_in_total():
    calibration = np.load(EXAMPLES / "tiny_calib.npy")
    binary = compile_model(EXAMPLES / "tiny_cnn.onnx", calibration)
    x = np.load(EXAMPLES / "tiny_input.npy")[:1]
    stats = simulate(binary, x).stats
    assert stats.roofline_ratio == stats.cycles / max(stats.compute_cycles, stats.dma_cycles)
    assert 1.0 <= stats.roofline_ratio <= 2.0
    dma = [i for i in binary.instructions if i.op in ("LOAD", "STORE")]
    assert stats.total_ddr_bytes == sum(i["d0"] * i["d1"] * max(i["d2"], 1) * max(i["d3"], 1) << i["elem_log2"]
                                        for i in dma if i["layout"] != 0) + sum(
        i["d0"] * i["d1"] << i["elem_log2"] for i in dma if i["layout"] == 0)
    inputs = sum(int(np.prod(t.shape)) for t in binary.inputs())
    outputs = sum(int(np.prod(t.shape)) for t in binary.outputs())
    # every input and output byte once, and no more constant bytes than the image holds
    assert inputs + outputs < stats.total_compulsory_bytes <= len(binary.constants) + inputs + outputs
    assert stats.total_compulsory_bytes <= stats.total_ddr_bytes
    assert set(stats.compulsory_bytes) <= set(stats.ddr_bytes) <= set(stats.by_layer)
    text = format_profile(stats)
    header = text.splitlines()[0].split()
    assert header == ["layer", "cycles", "share", "compute", "dma", "x", "max", "ddr", "bytes", "compulsory"]
    assert (f"roofline: {stats.cycles} cycles = {stats.roofline_ratio:.3f} x max(EXEC busy {stats.compute_cycles}, "
            f"DMA busy {stats.dma_cycles})") in text
    assert f"DDR bytes moved: {stats.total_ddr_bytes} = " in text


def test_two_samples_count_twice():
    binary = compile_model(EXAMPLES / "tiny_cnn.onnx", np.load(EXAMPLES / "tiny_calib.npy"))
    x = np.load(EXAMPLES / "tiny_input.npy")[:2]
    one, two = simulate(binary, x[:1]).stats, simulate(binary, x).stats
    assert two.total_ddr_bytes == 2 * one.total_ddr_bytes and two.total_compulsory_bytes == 2 * one.total_compulsory_bytes
    assert two.roofline_ratio == pytest.approx(one.roofline_ratio)


@pytest.mark.parametrize("target", ["xnpu_default", "xnpu_lite"])
def test_the_plan_alone_gives_a_runs_statistics(target):
    """xnpu-compile --report takes the roofline from the plan, without running the binary."""
    binary = compile_model(EXAMPLES / "tiny_cnn.onnx", np.load(EXAMPLES / "tiny_calib.npy"), target=target)
    ran = simulate(binary, np.load(EXAMPLES / "tiny_input.npy")[:1]).stats
    planned = planned_stats(binary)
    assert planned.cycles == ran.cycles > 0 and planned.instructions == ran.instructions
    assert planned.by_layer == ran.by_layer and planned.by_class == ran.by_class
    assert (planned.compute, planned.dma) == (ran.compute, ran.dma)
    assert (planned.ddr_bytes, planned.compulsory_bytes) == (ran.ddr_bytes, ran.compulsory_bytes)


def test_raw_programs_have_no_compulsory_bytes():
    _, stats = Machine("xnpu_default", ddr_size=4096).run([raw("LOAD", 0, 0, 64), make_instruction("SYNC", halt=1)])
    assert stats.total_ddr_bytes == 64 and stats.total_compulsory_bytes == 0


def test_the_compile_report_has_the_roofline_of_every_accelerator_layer(tmp_path):
    from xnpu.tools.xnpu_compile import main

    args = [str(EXAMPLES / "tiny_cnn.onnx"), "-c", str(EXAMPLES / "tiny_calib.npy"), "-o", str(tmp_path / "m.xnb"),
            "--report", str(tmp_path), "--report-samples", "2"]
    assert main(args) == 0
    rows = list(csv.DictReader(io.StringIO((tmp_path / "report.csv").read_text())))
    convs = [row for row in rows if row["op"] in ("conv2d", "gemm")]
    assert convs and all(int(row["compute_cycles"]) > 0 and int(row["ddr_bytes"]) > 0 for row in convs)
    for row in convs:
        bound = max(int(row["compute_cycles"]), int(row["dma_cycles"]))
        assert float(row["roofline_ratio"]) == pytest.approx(int(row["cycles"]) / bound, abs=1e-4)
    text = (tmp_path / "report.txt").read_text()
    assert "x max" in text.splitlines()[3] and "one sample of the binary: roofline: " in text
    assert "<th>x max</th>" in (tmp_path / "report.html").read_text()
