"""The passes below the npu level on npu modules built here: npu-assign-layout,
npu-keep-on-chip, npu-tile, npu-prefetch-weights, npu-plan-sram, npu-allocate,
lower-npu-to-isa, isa-schedule, isa-insert-dependencies.

The central properties: the program the passes emit computes exactly what the npu module
computes (its interpreter, xnpu.run), tiled or not, kept on chip or not, reordered and run on
two queues; and every SRAM byte an instruction touches lies in a slot of its layer's working
set that npu-plan-sram laid out from the same `working_set` function npu-tile fitted, or in
the home of a result kept on chip that the layer reads or writes.
"""

from __future__ import annotations

import numpy as np
import pytest
from models import random_conv_parameters
from test_lower_to_isa import SMALL_TARGET, small_target
from xdsl.dialects import func
from xdsl.dialects.builtin import ArrayAttr, DictionaryAttr, ModuleOp, NameLoc, NoneAttr, StringAttr, TensorType, f32
from xdsl.ir import Block, Region

import xnpu
from xnpu.backend.emit import emit_binary
from xnpu.backend.isa_dependencies import IsaInsertDependenciesPass
from xnpu.backend.isa_schedule import IsaSchedulePass
from xnpu.backend.npu_allocate import NpuAllocatePass
from xnpu.backend.npu_annotations import SINGLE_BUFFERED, SRAM, TILE, get_ints, get_slots, layers
from xnpu.backend.npu_assign_layout import NpuAssignLayoutPass
from xnpu.backend.npu_keep_on_chip import NpuKeepOnChipPass
from xnpu.backend.npu_plan_sram import NpuPlanSramPass
from xnpu.backend.npu_prefetch_weights import NpuPrefetchWeightsPass
from xnpu.backend.npu_residency import Residency, home_of, map_bytes, on_chip
from xnpu.backend.npu_tile import NpuTilePass
from xnpu.backend.npu_tiling import CONSTANTS, Tiling, choose_tiling, constant_parts, most_rows, working_set
from xnpu.backend.npu_to_isa import Emitter, LowerNpuToIsaPass
from xnpu.backend.simulator import run_binary
from xnpu.core.errors import XnpuError
from xnpu.dialects import fixed, isa, npu
from xnpu.dialects.shapes import shape_of
from xnpu.interpreters.function import entry_function
from xnpu.ir.context import make_context
from xnpu.ir.io import parse_ir, print_ir, verify_module
from xnpu.semantics import convolution, windows
from xnpu.semantics import fixed_point as fp
from xnpu.target.description import load_target

BELOW_NPU = (NpuAssignLayoutPass, NpuKeepOnChipPass, NpuTilePass, NpuPrefetchWeightsPass, NpuPlanSramPass,
             NpuAllocatePass)


def annotate(module: ModuleOp, target: str) -> ModuleOp:
    """The annotating passes, verified after each."""
    for step in BELOW_NPU:
        step(target=target).apply(make_context(), module)
        verify_module(module)
    return module


def emit(module: ModuleOp) -> ModuleOp:
    LowerNpuToIsaPass().apply(make_context(), module)
    IsaSchedulePass().apply(make_context(), module)
    IsaInsertDependenciesPass().apply(make_context(), module)
    verify_module(module)
    return module


# --------------------------------------------------------------------------------------
# npu modules built in Python
# --------------------------------------------------------------------------------------


class ModuleBuilder:
    """An npu module for `target`: float inputs quantized, ops appended in order, outputs dequantized."""

    def __init__(self, target: str, **inputs: tuple[int, ...]):
        self.target = target
        self.input_names = list(inputs)
        self.input_types = [TensorType(f32, shape) for shape in inputs.values()]
        self.block = Block(arg_types=self.input_types)
        self.ops: list = []

    def input(self, name: str, scale: float = 0.05):
        return self.add(fixed.QuantizeOp(self.block.args[self.input_names.index(name)], scale))

    def constant(self, values, bits: int = 8):
        return self.add(fixed.ConstantOp(np.asarray(values), bits))

    def add(self, op, name: str | None = None):
        if name is not None:
            op.location = NameLoc(StringAttr(name), NoneAttr())
        self.ops.append(op)
        return op.results[0] if op.results else None

    def module(self, **outputs) -> ModuleOp:
        results = [self.add(fixed.DequantizeOp(value, 0.05)) for value in outputs.values()]
        self.add(func.ReturnOp(*results))
        self.block.add_ops(self.ops)
        main = func.FuncOp("main", (self.input_types, [r.type for r in results]), Region(self.block),
                           arg_attrs=ArrayAttr([DictionaryAttr({"nn.name": StringAttr(n)}) for n in self.input_names]),
                           res_attrs=ArrayAttr([DictionaryAttr({"nn.name": StringAttr(n)}) for n in outputs]))
        module = ModuleOp([main])
        module.attributes[npu.TARGET_ATTRIBUTE] = StringAttr(self.target)
        verify_module(module)
        return module


def pairs_for(accumulator: np.ndarray, axis_size: int | None = None) -> tuple[list[int], list[int]]:
    """(multiplier, shift) pairs bringing |accumulator| to about 100 (per channel of axis 1)."""
    if axis_size is None:
        peak = [max(1, int(np.abs(accumulator).max()))]
    else:
        peak = [max(1, int(np.abs(accumulator[:, c]).max())) for c in range(axis_size)]
    m, s = fp.multiplier_from_scale(100.0 / np.asarray(peak, dtype=np.float64))
    return [int(v) for v in np.reshape(m, -1)], [int(v) for v in np.reshape(s, -1)]


def random_npu_module(seed: int, target: str) -> tuple[ModuleOp, np.ndarray]:
    """A conv with random kernel/stride/dilation/padding/groups (relu, clamp or table), maybe
    a pool (max, or average with per-position rescales; maybe a relu the POOL has no flag
    for) and an element-wise add or mul of the map and itself or a constant (full, per
    channel or one value); and float inputs."""
    rng = np.random.default_rng(seed)
    c, h, w, k, s, d, pads, group, out_c = random_conv_parameters(rng)
    x = rng.standard_normal((3, c, h, w)).astype(np.float32)
    b = ModuleBuilder(target, x=(1, c, h, w))
    weights = rng.integers(-127, 128, (out_c, c // group, k, k))
    bias = rng.integers(-2000, 2000, out_c)
    accumulator = convolution.conv2d_int(fp.quantize(x[:1], 0.05), weights, bias, (s, s), pads, (d, d), group)
    m, sh = pairs_for(accumulator, out_c if rng.random() < 0.5 else None)
    epilogue = [{"relu": True}, {"clamp": (-50, 90)}, {"table": np.clip(np.arange(-128, 128) // 2 + 7, -127, 127)}][
        int(rng.integers(0, 3))]
    last = b.add(npu.ConvOp(b.input("x"), b.constant(weights), b.constant(bias, 32), m, sh, strides=(s, s), pads=pads,
                            dilations=(d, d), group=group, **epilogue), "conv")
    oh, ow = shape_of(last)[2:]
    pool_k, pool_s = int(rng.integers(1, 4)), int(rng.integers(1, 3))
    if oh >= pool_k and ow >= pool_k:
        kernel, strides, pool_pads = (pool_k, pool_k), (pool_s, pool_s), [pool_k // 2] * 4
        relu = {"relu": True} if rng.random() < 0.3 else {}
        if rng.random() < 0.5:
            pool = npu.PoolOp("max", last, kernel=kernel, strides=strides, pads=[0, 0, 0, 0], **relu)
        else:
            probe = npu.PoolOp("avg", last, [16384], [14], kernel=kernel, strides=strides, pads=pool_pads)
            counts = windows.avg_pool_counts((oh, ow), kernel, strides, pool_pads, shape_of(probe.result)[2:], False)
            pm, ps = windows.avg_pool_multipliers(counts, 1.0, 1.0)
            pool = npu.PoolOp("avg", last, np.reshape(pm, -1), np.reshape(ps, -1), kernel=kernel, strides=strides,
                              pads=pool_pads, **relu)
        last = b.add(pool, "pool")
    shape = shape_of(last)
    other = [last, b.constant(rng.integers(-127, 128, shape)), b.constant(rng.integers(-127, 128, (1, shape[1], 1, 1))),
             b.constant([[[[42]]]])][int(rng.integers(0, 4))]
    if rng.random() < 0.5:
        last = b.add(npu.EltwiseOp("add", last, other, 16384, 15, inputs=(16384, 14, 20000, 14), pre_shift=1, relu=True),
                     "add")
    else:
        last = b.add(npu.EltwiseOp("mul", last, other, 16384, 20), "mul")
    return b.module(out=last), x


def seed002_mul_module(target: str) -> tuple[ModuleOp, dict[str, np.ndarray]]:
    """Seed 002's element-wise mul as a depthwise conv: a conv's NHWC map flattened to
    1 x CHW x 1 x 1 (a row-major view: copied to NCHW first), the gate reshaped to CHW kernels
    (a view of the input's bytes), and the product reshaped back (read by the pool as it is)."""
    rng = np.random.default_rng(11)
    b = ModuleBuilder(target, x=(1, 3, 6, 5), gate=(1, 4, 6, 5))
    y = b.add(npu.ConvOp(b.input("x"), b.constant(rng.integers(-127, 128, (4, 3, 3, 3))), None, [16384], [18],
                         pads=(1, 1, 1, 1)), "conv")
    flat = b.add(npu.ReshapeOp(y, (1, 120, 1, 1)), "mul")
    kernels = b.add(npu.ReshapeOp(b.input("gate"), (120, 1, 1, 1)), "mul")
    product = b.add(npu.ConvOp(flat, kernels, None, [16384], [14], group=120), "mul")
    back = b.add(npu.ReshapeOp(product, (1, 4, 6, 5)), "mul")
    pooled = b.add(npu.PoolOp("max", back, kernel=(2, 2), strides=(2, 2), pads=(0, 0, 0, 0)), "pool")
    inputs = {"x": rng.standard_normal((2, 3, 6, 5)).astype(np.float32),
              "gate": rng.standard_normal((2, 4, 6, 5)).astype(np.float32)}
    return b.module(out=pooled, product=back), inputs


def buffers_of(op) -> list[tuple[int, int]]:
    """(address, bytes) of every slot of the layer's buffers as npu-plan-sram laid them out
    (a constants slot as its parts), and of the on-chip results it reads and writes."""
    target = load_target(SMALL_TARGET)
    tile = get_ints(op, TILE, "npu-tile")
    buffers = working_set(op, tile, target, residency=Residency.of(op, target), double=SINGLE_BUFFERED not in op.attributes)
    sizes = {b.name: b.size for b in buffers}
    if CONSTANTS in sizes:
        sizes.update(constant_parts(op, tile[2], target))
    regions = [(address, sizes[name]) for name, slots in get_slots(op, SRAM, "npu-plan-sram").items() for address in slots]
    for value in (*op.operands, *op.results):
        if on_chip(value):
            regions.append((home_of(value), map_bytes(value, target)))
    return regions


# --------------------------------------------------------------------------------------
# Tests
# --------------------------------------------------------------------------------------


def test_most_rows_is_the_largest_fitting_count():
    assert most_rows(100, lambda rows: rows * 7 <= 300) == 42
    assert most_rows(10, lambda rows: True) == 10
    assert most_rows(10, lambda rows: False) == 0


def test_choose_tiling_prefers_whole_rows_and_reports_nothing_fitting():
    def need(t: Tiling) -> int:
        return t.rows * t.cols * t.chunk

    whole = choose_tiling(8, 8, [16, 8], 10_000, need, lambda t: 1.0, split_columns=True)
    assert whole == Tiling(8, 8, 16)
    assert choose_tiling(8, 8, [16], 10, need, lambda t: 1.0, split_columns=True) is None


@pytest.mark.parametrize("target", ("xnpu_default", "xnpu_lite", SMALL_TARGET))
def test_seed002_activation_kernels_read_views_of_row_major_bytes(target):
    module, inputs = seed002_mul_module(target)
    expected = xnpu.run(module, inputs)
    annotated = annotate(module, target)
    relayouts = [op.layout.data for op in entry_function(annotated).body.block.ops if isinstance(op, npu.RelayoutOp)]
    assert relayouts == ["NCHW", "NCHW"]  # the flatten; the pool out (units read x and the product as they are)
    actual = run_binary(emit_binary(emit(annotated)), inputs, load_target(target))
    for name in expected:
        assert np.array_equal(expected[name], actual[name]), name


@pytest.mark.parametrize("seed", range(10))
def test_random_npu_layers_are_bit_exact_when_tiled(seed, tmp_path):
    for target in (SMALL_TARGET, small_target(tmp_path, 8192, 8)):
        module, x = random_npu_module(seed, target)
        expected = xnpu.run(module, x)
        binary = emit_binary(emit(annotate(module, target)))
        actual = run_binary(binary, x, load_target(target))
        assert np.array_equal(expected["out"], actual["out"]), (seed, target)


@pytest.mark.parametrize("seed", range(10))
def test_every_sram_byte_an_instruction_touches_is_in_its_layer_working_set(seed):
    module, _ = random_npu_module(seed, SMALL_TARGET)
    target = load_target(SMALL_TARGET)
    emitter = Emitter(target)
    kinds = set()
    for op in layers(entry_function(annotate(module, SMALL_TARGET))):
        buffers = buffers_of(op)
        first = len(emitter.program.ops)
        emitter.layer(op)
        for instruction in emitter.program.ops[first:]:
            for field, start, size in isa.sram_regions(instruction.instruction(), target.memory.channel_alignment):
                if size:
                    assert any(offset <= start and start + size <= offset + length for offset, length in buffers), (
                        op.name, instruction.name, field, start, size, buffers)
            kinds.add(instruction.name)
    assert {"isa.load", "isa.conv", "isa.store"} <= kinds


def test_passes_read_the_target_from_the_module_and_emit_names_it():
    module, _ = random_npu_module(0, SMALL_TARGET)
    for step in BELOW_NPU:
        step().apply(make_context(), module)
    layer_count = len(layers(entry_function(module)))
    assert layer_count >= 2  # the input's relayout and the conv at least
    program = emit(module)
    assert program.attributes[isa.TARGET_ATTRIBUTE].data == SMALL_TARGET
    assert not any(key.startswith("npu.") for key in program.attributes)
    assert program.attributes["isa.layers"].value.data == layer_count


def test_a_module_naming_no_target_is_one_error():
    module, _ = random_npu_module(0, SMALL_TARGET)
    del module.attributes[npu.TARGET_ATTRIBUTE]
    with pytest.raises(XnpuError, match=r"npu-tile: the module names no target"):
        NpuTilePass().apply(make_context(), module)


def test_annotated_npu_module_prints_parses_and_still_runs():
    module, x = random_npu_module(3, SMALL_TARGET)
    expected = xnpu.run(module, x)
    text = print_ir(annotate(module, SMALL_TARGET))
    assert "npu.tile = array<i64:" in text and "npu.sram = {" in text and "npu.ddr = " in text
    again = parse_ir(text)
    assert np.array_equal(xnpu.run(again, x)["out"], expected["out"])
    assert print_ir(again) == text


def test_random_layers_exercise_tiling():
    """At least some of the random layers above are cut into several tiles on 16 KiB."""
    tiled = 0
    for seed in range(10):
        module, _ = random_npu_module(seed, SMALL_TARGET)
        names = [op.name for op in isa.program_ops(emit(annotate(module, SMALL_TARGET)))]
        tiled += names.count("isa.conv") > 1 or names.count("isa.pool") > 1
    assert tiled >= 4


# --------------------------------------------------------------------------------------
# xnpu-run on every level below fixed: npu IR (annotated or not), isa IR, the binary
# --------------------------------------------------------------------------------------


def test_xnpu_run_runs_npu_and_isa_ir_like_the_binary(tmp_path, capsys, monkeypatch):
    from test_tools import tool_in_process

    from xnpu.tools.xnpu_run import main

    module, x = random_npu_module(0, "xnpu_default")  # a shipped target: the binary names it by id
    np.save(tmp_path / "x.npy", x)
    (tmp_path / "model.npu.mlir").write_text(print_ir(module))
    annotated = annotate(module, "xnpu_default")
    (tmp_path / "annotated.npu.mlir").write_text(print_ir(annotated))
    program = emit(annotated)
    (tmp_path / "model.isa.mlir").write_text(print_ir(program))
    (tmp_path / "model.xnb").write_bytes(emit_binary(program).to_bytes())
    outputs = {}
    for name in ("model.npu.mlir", "annotated.npu.mlir", "model.isa.mlir", "model.xnb"):
        result = tool_in_process(main, name, "-i", "x.npy", "-o", f"{name}.npz", cwd=tmp_path, capsys=capsys,
                                 monkeypatch=monkeypatch)
        assert result.returncode == 0, result.stderr
        with np.load(tmp_path / f"{name}.npz") as saved:
            outputs[name] = saved["out"]
    for name, values in outputs.items():
        assert np.array_equal(values, outputs["model.xnb"]), name
    profiled = tool_in_process(main, "model.isa.mlir", "-i", "x.npy", "--profile", cwd=tmp_path, capsys=capsys,
                               monkeypatch=monkeypatch)
    assert profiled.returncode == 0 and "cycles" in profiled.stdout and "conv" in profiled.stdout
    interpreted = tool_in_process(main, "model.npu.mlir", "-i", "x.npy", "--profile", cwd=tmp_path, capsys=capsys,
                                  monkeypatch=monkeypatch)
    assert interpreted.returncode == 1 and "need a compiled program, .xnb or isa IR" in interpreted.stderr


def test_xnpu_run_runs_isa_ir_for_a_target_file(tmp_path, capsys, monkeypatch):
    from test_tools import tool_in_process

    from xnpu.tools.xnpu_run import main

    module, x = random_npu_module(7, SMALL_TARGET)  # 100 CONV tiles on 16 KiB
    expected = xnpu.run(module, x)
    np.save(tmp_path / "x.npy", x)
    (tmp_path / "model.mlir").write_text(print_ir(emit(annotate(module, SMALL_TARGET))))
    result = tool_in_process(main, "model.mlir", "-i", "x.npy", "-o", "out.npz", cwd=tmp_path, capsys=capsys,
                             monkeypatch=monkeypatch)
    assert result.returncode == 0, result.stderr
    with np.load(tmp_path / "out.npz") as saved:
        assert np.array_equal(saved["out"], expected["out"])


@pytest.mark.parametrize("target, unit", (("xnpu_default", "isa.clamp"), ("xnpu_lite", "isa.table")))
def test_a_relu_after_pooling_is_a_clamp_or_an_exact_table(target, unit):
    b = ModuleBuilder(target, x=(1, 3, 8, 8))
    pooled = b.add(npu.PoolOp("max", b.input("x"), kernel=(2, 2), strides=(2, 2), pads=(0, 0, 0, 0), relu=True), "pool")
    module = b.module(out=pooled)
    x = np.random.default_rng(2).standard_normal((2, 3, 8, 8)).astype(np.float32)
    expected = xnpu.run(module, x)
    program = emit(annotate(module, target))
    assert unit in [op.name for op in isa.program_ops(program)]
    actual = run_binary(emit_binary(program), x, load_target(target))
    assert np.array_equal(expected["out"], actual["out"]) and (expected["out"] >= 0).all()
