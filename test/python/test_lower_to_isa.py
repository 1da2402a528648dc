"""fixed -> npu -> isa -> binary (`xnpu.driver.pipeline.lower_to_isa`: lower-fixed-to-npu, then
npu-assign-layout, npu-tile, npu-allocate, lower-npu-to-isa), the tools, and bit-exactness.

The central property: a compiled program run on the reference simulator
(`xnpu.backend.simulator.run_binary`) gives EXACTLY the outputs of the fixed module it was
compiled from (`xnpu.run`), for every model and every target, tiled or not; and the
programs of the npu lit cases compute what their npu modules compute.
"""

from __future__ import annotations

import functools
import subprocess
import time
from pathlib import Path

import numpy as np
import onnx
import pytest
from onnx import TensorProto, helper, numpy_helper

import xnpu
from xnpu.ir.context import make_context
from xnpu.dialects import isa
from xnpu.core.errors import XnpuError
from xnpu.ir.io import parse_ir, print_ir
from xnpu.driver.pipeline import compile as compile_model
from xnpu.driver.pipeline import below_npu, lower_to_isa
from xnpu.backend.binary import Binary
from xnpu.target.description import list_targets, load_target
from xnpu.backend.emit import disassemble, emit_binary
from models import EXAMPLES, ROOT, fixed_text, model_and_data, random_conv_parameters, zoo_model

DATA = Path(__file__).resolve().parent / "data"
SMALL_TARGET = str(DATA / "xnpu_test_16k.toml")
DIGITS_MODELS = ("digits_plain", "digits_resnet", "digits_se")

try:
    from xnpu.backend.simulator import run_binary
except ImportError:  # pragma: no cover - the simulator is written by another engineer
    run_binary = None

needs_simulator = pytest.mark.skipif(
    run_binary is None, reason="backend/simulator.py (run_binary) is absent: bit-exactness cannot be checked"
)


@functools.lru_cache(maxsize=None)
def compiled(name: str, target: str = "xnpu_default") -> tuple[Binary, int]:
    """(binary, activation bytes) of a model; the fixed module is parsed fresh each time."""
    module = lower_to_isa(parse_ir(fixed_text(name)), target)
    return emit_binary(module), module.attributes["isa.activation_bytes"].value.data


def fixed_outputs(name: str, x: np.ndarray) -> dict[str, np.ndarray]:
    return xnpu.run(parse_ir(fixed_text(name)), x)


# --------------------------------------------------------------------------------------
# What the lowering produces
# --------------------------------------------------------------------------------------


def test_tiny_cnn_fuses_what_the_isa_allows():
    binary, peak = compiled("tiny_cnn")
    ops = [i.op for i in binary.instructions]

    def layers_of(mnemonic: str) -> dict[tuple[str, ...], list]:
        """Each layer's instructions of one kind (a layer may run in several tiles)."""
        found: dict[tuple[str, ...], list] = {}
        for index, i in enumerate(binary.instructions):
            if i.op == mnemonic:
                found.setdefault(binary.provenance[index], []).append(i)
        return found

    # 3 convs + the gemm are CONV layers; residual add (+shift +rescale) one ELTWISE layer; two POOL layers
    convs, adds, pools = layers_of("CONV"), layers_of("ELTWISE"), layers_of("POOL")
    assert (len(convs), len(adds), len(pools)) == (4, 1, 2)
    assert "CLAMP" not in ops and ops[-1] == "SYNC" and binary.instructions[-1]["halt"] == 1
    # relu1, relu6 (refined to relu), relu3; fc none: one flag per layer, on each of its tiles
    assert [{i["relu"] for i in tiles} for tiles in convs.values()] == [{1}, {1}, {1}, {0}]
    assert next(iter(convs)) == ("conv1", "relu1")
    add = next(iter(adds.values()))[0]
    assert (add["stage16"], add["pre_shift"], add["a_multiplier"], add["a_shift"]) == (1, 8, 16384, -1)
    assert [{i["kind"] for i in tiles} for tiles in pools.values()] == [{0}, {2}]  # max, global_avg
    (inp,), (out,) = binary.inputs(), binary.outputs()
    assert (inp.name, inp.shape, inp.layout, out.name, out.shape, out.layout) == (
        "input", (1, 1, 16, 16), "NCHW", "logits", (1, 10), "RAW")
    assert inp.ddr_addr >= len(binary.constants) and out.ddr_addr >= len(binary.constants)
    assert 0 < peak < 16 * 16 * 8 * 3


def test_every_instruction_is_valid_for_its_target():
    for target in ("xnpu_default", SMALL_TARGET):
        binary, _ = compiled("tiny_cnn", target)
        binary.check_target(load_target(target))


def test_ddr_is_reused_between_layers():
    # digits_resnet's activations add up to far more than what is live at any one time
    binary, peak = compiled("digits_resnet")
    module = parse_ir(fixed_text("digits_resnet"))
    total = sum(
        int(np.prod(op.results[0].type.get_shape())) for op in module.walk()
        if op.results and op.name in ("fixed.clamp", "fixed.rescale", "fixed.max_pool", "fixed.table")
        and op.results[0].type.get_element_type().width.data == 8
    )
    assert peak < total / 2, (peak, total)


def test_binary_round_trips_byte_identical():
    binary, _ = compiled("tiny_cnn")
    data = binary.to_bytes()
    again = Binary.from_bytes(data)
    assert again.to_bytes() == data
    text = disassemble(again)
    assert "// [0] conv1, relu1" in text
    assert emit_binary(parse_ir(text)).to_bytes() == data  # the disassembly assembles to the same bytes


def test_op_and_instruction_convert_both_ways():
    binary, _ = compiled("tiny_cnn")
    for instruction in binary.instructions:
        op = isa.op_from_instruction(instruction)
        assert isa.instruction_of(op).fields == instruction.fields
        assert op.name == "isa." + instruction.op.lower()


# --------------------------------------------------------------------------------------
# Verifier and lowering errors
# --------------------------------------------------------------------------------------


def test_isa_builder_rejects_fields_out_of_range():
    with pytest.raises(XnpuError, match=r"CONV.stride_h = 8 does not fit its 3-bit unsigned field"):
        isa.make_op("CONV", stride_h=8)
    with pytest.raises(XnpuError, match="POOL has no field 'relu'"):
        isa.make_op("POOL", relu=1)


def test_isa_verifier_checks_extents_against_the_module_target():
    text = (
        'builtin.module attributes {isa.target = "%s"} {\n'
        "  isa.load {layout = NHWC, elem_log2 = 0, sram_addr = 0, ddr_addr = 0, d0 = 64, d1 = 64, d2 = 8, d3 = 0, "
        "ddr_row_stride = 0, ddr_pixel_stride = 0, sram_row_stride = 0}\n}\n"
    )
    parse_ir(text % "xnpu_default")  # 64 x 64 x 16 padded bytes fit 1 MiB
    with pytest.raises(XnpuError, match=r"LOAD.sram_addr: bytes \[0, 65536\) leave the 16384-byte SRAM of xnpu_test_16k"):
        parse_ir(text % SMALL_TARGET)


def conv_model(kernel: int, name: str = "big_kernel", dilation: int = 1) -> onnx.ModelProto:
    rng = np.random.default_rng(0)
    w = numpy_helper.from_array(rng.standard_normal((4, 1, kernel, kernel)).astype(np.float32), "w")
    node = helper.make_node("Conv", ["x", "w"], ["y"], name=name, kernel_shape=[kernel, kernel], dilations=[dilation] * 2)
    out = 12 - dilation * (kernel - 1)
    graph = helper.make_graph(
        [node], "g", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 1, 12, 12])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, 4, out, out])], [w],
    )
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])


def test_unsupported_op_is_one_line_naming_node_and_target():
    calibration = np.random.default_rng(1).standard_normal((2, 1, 1, 12, 12)).astype(np.float32).reshape(2, 1, 12, 12)
    with pytest.raises(XnpuError) as error:
        compile_model(conv_model(9), calibration, target="xnpu_lite", progress=False, host_fallback=False)
    message = str(error.value)
    assert "\n" not in message
    assert 'loc("big_kernel")' in message and "xnpu_lite" in message and "kernel 9x9" in message
    compile_model(conv_model(7), calibration, target="xnpu_lite", progress=False)  # within the limit


@needs_simulator
def test_dilation_beyond_the_target_becomes_a_zero_filled_kernel():
    x = np.random.default_rng(2).standard_normal((3, 1, 12, 12)).astype(np.float32)
    text = print_ir(xnpu.quantize(xnpu.import_onnx(conv_model(3, "dilated", dilation=2)), x, progress=False))
    binary = emit_binary(lower_to_isa(parse_ir(text), "xnpu_lite"))  # xnpu_lite: max_dilation 1
    convs = {(i["kernel_h"], i["kernel_w"], i["dilation_h"], i["dilation_w"]) for i in binary.instructions if i.op == "CONV"}
    assert convs == {(5, 5, 1, 1)}  # every tile
    expected = xnpu.run(parse_ir(text), x)
    assert np.array_equal(expected["y"], run_binary(binary, x, load_target("xnpu_lite"))["y"])


def test_missing_unit_is_reported():
    # compile() legalizes the mul for xnpu_lite first (seed 002); lowering it unlegalized must fail
    path, calibration, _ = model_and_data("digits_se")
    fixed_module = compile_model(path, calibration[:4], stop_at="fixed", progress=False)
    with pytest.raises(XnpuError, match=r"/se1/Mul.*element-wise mul is not supported.*xnpu_lite"):
        lower_to_isa(fixed_module, "xnpu_lite", host_fallback=False)


def test_compile_runs_exactly_the_steps_of_quantize():
    path, calibration, _ = model_and_data("tiny_cnn")
    steps = []
    module = compile_model(path, calibration, stop_at="fixed", progress=False,
                           after_pass=lambda name, _: steps.append(name))
    assert print_ir(module) == fixed_text("tiny_cnn")
    assert steps == ["import-onnx", "fold-batch-norm", "remove-noop", "fuse-activations", "expand-layer-norm", "calibrate",
                     "lower-nn-to-fixed", "fold-quantize-pairs"]


# --------------------------------------------------------------------------------------
# Bit-exactness against the fixed level
# --------------------------------------------------------------------------------------


def assert_exact(binary: Binary, name: str, target: str, x: np.ndarray) -> dict[str, np.ndarray]:
    expected = fixed_outputs(name, x)
    actual = run_binary(binary, x, load_target(target))
    assert expected.keys() == actual.keys()
    for key in expected:
        assert np.array_equal(expected[key], actual[key]), (name, target, key, np.abs(expected[key] - actual[key]).max())
    return actual


@needs_simulator
@pytest.mark.parametrize("name", ("tiny_cnn", *DIGITS_MODELS))
def test_binary_is_bit_exact_with_fixed_on_default_target(name):
    _, _, x = model_and_data(name)
    binary, _ = compiled(name)
    assert_exact(binary, name, "xnpu_default", x)


@needs_simulator
@pytest.mark.parametrize("name", ("tiny_cnn", *DIGITS_MODELS))
def test_small_sram_forces_tiling_with_identical_outputs(name):
    _, _, x = model_and_data(name)
    untiled, _ = compiled(name)
    tiled, _ = compiled(name, SMALL_TARGET)
    if name != "tiny_cnn":  # tiny_cnn fits 16 KiB whole
        assert len(tiled.instructions) > len(untiled.instructions)
    small = load_target(SMALL_TARGET)
    for instruction in tiled.instructions:
        for field, start, size in isa.sram_regions(instruction, small.memory.channel_alignment):
            assert start + size <= small.memory.sram_bytes, (instruction, field)
    a = run_binary(untiled, x, load_target("xnpu_default"))
    b = assert_exact(tiled, name, SMALL_TARGET, x)
    for key in a:
        assert np.array_equal(a[key], b[key])


def test_weights_too_big_for_sram_are_split_by_output_channels():
    # /l3/c2/Conv has 64 x 64 x 3 x 3 = 36 KiB of weights: more than the 16 KiB SRAM
    binary, _ = compiled("digits_resnet", SMALL_TARGET)
    weight_loads = [i["d0"] for index, i in enumerate(binary.instructions)
                    if i.op == "LOAD" and i["layout"] == 3 and binary.provenance.get(index, ())[:1] == ("/l3/c2/Conv",)]
    assert len(weight_loads) > 1 and sum(weight_loads) == 64  # each chunk's weights loaded once


def small_target(tmp_path, sram_bytes: int, alignment: int) -> str:
    text = (DATA / "xnpu_test_16k.toml").read_text()
    text = text.replace("sram_bytes = 16384", f"sram_bytes = {sram_bytes}").replace("id = 901", "id = 902")
    text = text.replace('name = "xnpu_test_16k"', 'name = "xnpu_test_tiny"').replace("max_channels = 4096", "max_channels = 256")
    text = text.replace("channel_alignment = 16", f"channel_alignment = {alignment}")
    path = tmp_path / "xnpu_test_tiny.toml"
    path.write_text(text)
    return str(path)


@needs_simulator
def test_extreme_tiling_on_an_8k_sram(tmp_path):
    target = small_target(tmp_path, 8192, 8)
    _, _, x = model_and_data("digits_resnet")
    module = lower_to_isa(parse_ir(fixed_text("digits_resnet")), target)
    assert_exact(emit_binary(module), "digits_resnet", target, x[:2])


def test_a_layer_no_tiling_fits_names_its_node(tmp_path):
    # 16 output channels (the smallest chunk at alignment 16) x 3 x 3 x 32 inputs > 4 KiB
    target = small_target(tmp_path, 4096, 16)
    with pytest.raises(XnpuError, match=r"^/l2/c2/Conv: no tiling of this convolution fits the 4096-byte SRAM of xnpu_test_tiny"):
        lower_to_isa(parse_ir(fixed_text("digits_resnet")), target)


# A small model covering what the bench models do not: a 3-channel NCHW input larger than a
# small SRAM (per-channel DMA reordering), depthwise and grouped convolutions, average pool
# with per-position divisors, ceil-mode max pool, sigmoid (TABLE), channel concat with a
# rescale (TABLE), a clip that is not a relu (CLAMP, or a TABLE without a clamp unit), a
# multi-channel 4-D output (NHWC -> NCHW for the host) and a second output through a gemm.


@needs_simulator
@pytest.mark.parametrize("target", ("xnpu_default", "xnpu_lite", SMALL_TARGET))
def test_zoo_model_is_bit_exact_on_every_target(target):
    rng = np.random.default_rng(3)
    calibration = rng.standard_normal((4, 3, 40, 40)).astype(np.float32)
    x = rng.standard_normal((2, 3, 40, 40)).astype(np.float32)
    fixed_module = xnpu.quantize(xnpu.import_onnx(zoo_model()), calibration, progress=False)
    text = print_ir(fixed_module)
    expected = xnpu.run(parse_ir(text), x)
    module = lower_to_isa(parse_ir(text), target)
    binary = emit_binary(module)
    ops = [i.op for i in binary.instructions]
    assert "TABLE" in ops and any(i.op == "CONV" and i["depthwise"] for i in binary.instructions)
    assert any(i.op == "POOL" and i["per_position"] for i in binary.instructions)
    assert ("CLAMP" in ops) == load_target(target).has_clamp
    actual = run_binary(binary, x, load_target(target))
    for key in expected:
        assert np.array_equal(expected[key], actual[key]), (target, key)


def transpose_model() -> onnx.ModelProto:
    rng = np.random.default_rng(0)
    w = numpy_helper.from_array(rng.standard_normal((4, 3, 3, 3)).astype(np.float32), "w")
    nodes = [
        helper.make_node("Transpose", ["x"], ["t"], name="to_nhwc", perm=[0, 2, 3, 1]),
        helper.make_node("Transpose", ["t"], ["u"], name="to_nchw", perm=[0, 3, 1, 2]),
        helper.make_node("Conv", ["u", "w"], ["y"], name="conv", kernel_shape=[3, 3], pads=[1, 1, 1, 1]),
        helper.make_node("Transpose", ["y"], ["z"], name="out_nhwc", perm=[0, 2, 3, 1]),
    ]
    graph = helper.make_graph(
        nodes, "transposes", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 3, 6, 7])],
        [helper.make_tensor_value_info("z", TensorProto.FLOAT, [1, 6, 7, 4]),
         helper.make_tensor_value_info("t", TensorProto.FLOAT, [1, 6, 7, 3])], [w],
    )
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])


@needs_simulator
def test_transposes_between_nchw_and_nhwc_are_dma_views():
    x = np.random.default_rng(4).standard_normal((2, 3, 6, 7)).astype(np.float32)
    text = print_ir(xnpu.quantize(xnpu.import_onnx(transpose_model()), x, progress=False))
    assert text.count("fixed.transpose") == 3 and "fixed.clamp" not in text
    binary = emit_binary(lower_to_isa(parse_ir(text), "xnpu_default"))
    # one NCHW -> NHWC copy of the input; `t` (the input in NHWC order) is a view of that
    # copy, its transpose back a view again (read by the conv), and `z` a view of the conv's map
    copies = [i for i in binary.instructions if i.op == "LOAD" and i["layout"] == 2]
    assert len(copies) == 1 and not any(i["layout"] == 2 for i in binary.instructions if i.op == "STORE")
    expected = xnpu.run(parse_ir(text), x)
    actual = run_binary(binary, x, load_target("xnpu_default"))
    for key in expected:
        assert np.array_equal(expected[key], actual[key]), key


def reshape_model() -> onnx.ModelProto:
    rng = np.random.default_rng(0)
    init = [
        numpy_helper.from_array(rng.standard_normal((4, 2, 3, 3)).astype(np.float32), "w"),
        numpy_helper.from_array(rng.standard_normal((5, 256)).astype(np.float32), "w2"),
        numpy_helper.from_array(np.array([1, 2, 8, 8], np.int64), "to_map"),
        numpy_helper.from_array(np.array([1, 256], np.int64), "to_vector"),
    ]
    nodes = [
        helper.make_node("Reshape", ["x", "to_map"], ["r"], name="reshape"),
        helper.make_node("Conv", ["r", "w"], ["y"], name="conv", kernel_shape=[3, 3], pads=[1, 1, 1, 1]),
        helper.make_node("Reshape", ["y", "to_vector"], ["f"], name="flatten"),
        helper.make_node("Gemm", ["f", "w2"], ["z"], name="fc", transB=1),
    ]
    graph = helper.make_graph(
        nodes, "reshapes", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 8, 4, 4])],
        [helper.make_tensor_value_info("z", TensorProto.FLOAT, [1, 5]),
         helper.make_tensor_value_info("r", TensorProto.FLOAT, [1, 2, 8, 8])], init,
    )
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])


@needs_simulator
@pytest.mark.parametrize("target", ("xnpu_default", SMALL_TARGET))
def test_reshapes_keep_row_major_order_through_dma(target):
    # 8x4x4 -> 2x8x8 (NCHW order to NHWC by DMA), 4x8x8 -> 256 (NHWC to NCHW order by DMA)
    x = np.random.default_rng(6).standard_normal((2, 8, 4, 4)).astype(np.float32)
    text = print_ir(xnpu.quantize(xnpu.import_onnx(reshape_model()), x, progress=False))
    assert text.count("fixed.reshape") == 2
    expected = xnpu.run(parse_ir(text), x)
    actual = run_binary(emit_binary(lower_to_isa(parse_ir(text), target)), x, load_target(target))
    for key in expected:
        assert np.array_equal(expected[key], actual[key]), key


# --------------------------------------------------------------------------------------
# Tools
# --------------------------------------------------------------------------------------


def tool(name: str, *args: str) -> subprocess.CompletedProcess:
    from test_tools import forked_tool  # a process of its own without an interpreter's start

    return forked_tool(name, *args, timeout=300)


def test_xnpu_compile_writes_a_binary_that_objdump_reads(tmp_path):
    out = tmp_path / "tiny.xnb"
    result = tool("xnpu-compile", str(EXAMPLES / "tiny_cnn.onnx"), "--calibration", str(EXAMPLES / "tiny_calib.npy"),
                  "-o", str(out), "--print-ir-after-all")
    assert result.returncode == 0, result.stderr
    for step in ("calibrate", "legalize", "lower-fixed-to-npu", "npu-assign-layout", "npu-tile", "npu-allocate",
                 "lower-npu-to-isa", "isa-insert-dependencies"):
        assert f"IR Dump After {step}" in result.stderr, step
    assert out.read_bytes() == compiled("tiny_cnn")[0].to_bytes()
    dump = tool("xnpu-objdump", str(out), "--no-constants")
    assert dump.returncode == 0 and "// [0] conv1, relu1" in dump.stdout and "isa.conv {" in dump.stdout


def test_xnpu_compile_levels_and_targets(tmp_path):
    listed = tool("xnpu-compile", "--list-targets")
    assert listed.returncode == 0 and listed.stdout.split() == list_targets() and "xnpu_default" in listed.stdout
    text = tool("xnpu-compile", str(EXAMPLES / "tiny_cnn.onnx"), "-c", str(EXAMPLES / "tiny_calib.npy"), "--emit=isa",
                "--target", SMALL_TARGET)
    assert text.returncode == 0, text.stderr
    module = parse_ir(text.stdout)
    assert module.attributes[isa.TARGET_ATTRIBUTE].data == SMALL_TARGET
    nn_text = tool("xnpu-compile", str(EXAMPLES / "tiny_cnn.onnx"), "--emit=nn")
    assert nn_text.returncode == 0 and "nn.conv2d" in nn_text.stdout


def test_xnpu_compile_errors_are_one_line_and_leave_no_file(tmp_path):
    out = tmp_path / "x.xnb"
    cases = [
        (["--calibration", str(EXAMPLES / "tiny_calib.npy"), "--target", "nope"], "unknown target 'nope'"),
        ([], "needs --calibration"),
        (["--calibration", str(tmp_path / "missing.npy")], "cannot read"),
    ]
    for extra, message in cases:
        result = tool("xnpu-compile", str(EXAMPLES / "tiny_cnn.onnx"), "-o", str(out), *extra)
        assert result.returncode == 1
        assert result.stderr.count("\n") == 1 and result.stderr.startswith("xnpu-compile: error:") and message in result.stderr
        assert not out.exists()


def test_xnpu_translate_assembles_and_disassembles(tmp_path):
    binary, _ = compiled("tiny_cnn")
    xnb = tmp_path / "a.xnb"
    xnb.write_bytes(binary.to_bytes())
    text = tool("xnpu-translate", "--disassemble", str(xnb), "-o", str(tmp_path / "a.mlir"))
    assert text.returncode == 0, text.stderr
    again = tool("xnpu-translate", "--emit-binary", str(tmp_path / "a.mlir"), "-o", str(tmp_path / "b.xnb"))
    assert again.returncode == 0, again.stderr
    assert (tmp_path / "b.xnb").read_bytes() == binary.to_bytes()
    (tmp_path / "bad.xnb").write_bytes(b"XNPU" + bytes(40))
    bad = tool("xnpu-objdump", str(tmp_path / "bad.xnb"))
    assert bad.returncode == 1 and bad.stderr.startswith("xnpu-objdump: error:") and bad.stderr.count("\n") == 1


# --------------------------------------------------------------------------------------
# The lit cases' programs compute what their npu modules compute
# --------------------------------------------------------------------------------------

LIT_CASES = ROOT / "test" / "filecheck" / "lowering" / "npu_to_isa"


def lit_modules():
    for path in sorted(LIT_CASES.glob("*.mlir")):
        for index, chunk in enumerate(path.read_text().split("// -----")):
            yield pytest.param(chunk, id=f"{path.stem}-{index}")


@needs_simulator
@pytest.mark.parametrize("text", list(lit_modules()))
@pytest.mark.parametrize("target", ("xnpu_default", SMALL_TARGET))
def test_lit_case_programs_are_bit_exact(text, target):
    module = parse_ir(text)
    specs, _ = xnpu.signature(module)
    rng = np.random.default_rng(5)
    inputs = {s.name: (rng.standard_normal((3, *s.shape[1:])) * 2).astype(np.float32) for s in specs}
    expected = xnpu.run(module, inputs)
    program = parse_ir(text)
    for step in below_npu(target):
        step.apply(make_context(), program)
    actual = run_binary(emit_binary(program), inputs, load_target(target))
    for key in expected:
        assert np.array_equal(expected[key], actual[key]), key


# --------------------------------------------------------------------------------------
# A full-size network: resnet18_like on xnpu_default (tiled where the 1 MiB SRAM is short)
# --------------------------------------------------------------------------------------

IMAGENET = ROOT / ".." / "shared" / "bench" / "imagenet_like"
LOWER_BOUND_S = 30.0  # CPU seconds (not wall-clock, which a busy machine stretches) to lower and emit resnet18_like; about 1 s


@needs_simulator
def test_resnet18_compiles_tiled_and_bit_exact_for_the_default_target():
    if not (IMAGENET / "resnet18_like.onnx").exists():
        pytest.skip(f"benchmark model not found at {IMAGENET} (expected ../shared/bench/imagenet_like)")
    images = np.load(IMAGENET / "images_u8.npy", mmap_mode="r")[[0, 40]]
    mean = np.array([0.485, 0.456, 0.406]).reshape(1, 3, 1, 1)
    std = np.array([0.229, 0.224, 0.225]).reshape(1, 3, 1, 1)
    x = ((images / 255.0 - mean) / std).astype(np.float32)
    module = xnpu.quantize(xnpu.import_onnx(IMAGENET / "resnet18_like.onnx"), x[:1], progress=False)
    expected = xnpu.run(module, x[1:])
    start = time.process_time()
    binary = emit_binary(lower_to_isa(module, "xnpu_default"))
    assert time.process_time() - start < LOWER_BOUND_S
    # the 512-channel 3x3 convs carry 2.25 MiB of weights each: split by output channels
    weight_loads = [i["d0"] for index, i in enumerate(binary.instructions)
                    if i.op == "LOAD" and i["layout"] == 3 and binary.provenance.get(index, ())[:1] == ("/layers/layers.7/conv2/Conv",)]
    assert len(weight_loads) > 1 and sum(weight_loads) == 512
    actual = run_binary(binary, x[1:], load_target("xnpu_default"))
    assert np.array_equal(expected["logits"], actual["logits"])


# --------------------------------------------------------------------------------------
# Random conv (+ relu + pool) layers, tiled on small SRAMs
# --------------------------------------------------------------------------------------


def random_layer_model(seed: int) -> tuple[onnx.ModelProto, tuple[int, int, int]]:
    """A conv with random kernel/stride/dilation/padding/groups, a relu and maybe a pool."""
    rng = np.random.default_rng(seed)
    c, h, w, k, s, d, pads, group, out_c = random_conv_parameters(rng)
    extent = d * (k - 1) + 1
    oh = (h + pads[0] + pads[2] - extent) // s + 1
    ow = (w + pads[1] + pads[3] - extent) // s + 1
    init = [numpy_helper.from_array((rng.standard_normal((out_c, c // group, k, k)) * 0.4).astype(np.float32), "w"),
            numpy_helper.from_array((rng.standard_normal(out_c) * 0.1).astype(np.float32), "b")]
    nodes = [helper.make_node("Conv", ["x", "w", "b"], ["y"], name="conv", kernel_shape=[k, k], strides=[s, s],
                              dilations=[d, d], pads=pads, group=group),
             helper.make_node("Relu", ["y"], ["out"], name="relu")]
    pool_k, pool_s = int(rng.integers(1, 4)), int(rng.integers(1, 3))
    if oh >= pool_k and ow >= pool_k:
        nodes[-1].output[0] = "r"
        if rng.random() < 0.5:
            nodes.append(helper.make_node("MaxPool", ["r"], ["out"], name="pool", kernel_shape=[pool_k] * 2, strides=[pool_s] * 2))
        else:
            nodes.append(helper.make_node("AveragePool", ["r"], ["out"], name="pool", kernel_shape=[pool_k] * 2,
                                          strides=[pool_s] * 2, pads=[pool_k // 2] * 4, count_include_pad=int(rng.integers(0, 2))))
    graph = helper.make_graph(nodes, "layer", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, c, h, w])],
                              [helper.make_tensor_value_info("out", TensorProto.FLOAT, None)], init)
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)]), (c, h, w)


@needs_simulator
@pytest.mark.parametrize("seed", range(8))
def test_random_layers_are_bit_exact_when_tiled(seed, tmp_path):
    model, (c, h, w) = random_layer_model(seed)
    x = np.random.default_rng(seed + 1000).standard_normal((2, c, h, w)).astype(np.float32)
    text = print_ir(xnpu.quantize(xnpu.import_onnx(model), x, progress=False))
    expected = xnpu.run(parse_ir(text), x)
    for target in (SMALL_TARGET, small_target(tmp_path, 8192, 8)):
        binary = emit_binary(lower_to_isa(parse_ir(text), target))
        actual = run_binary(binary, x, load_target(target))
        assert np.array_equal(expected["out"], actual["out"]), target
