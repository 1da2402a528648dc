"""Host fallback: ops a target cannot run are placed on the host, run between accelerator
segments inside the same binary, bit-identical to the fixed level."""

from __future__ import annotations

import struct
import zlib

import numpy as np
import onnx
import pytest
from onnx import TensorProto, helper, numpy_helper

import xnpu
from xnpu.ir.context import make_context
from xnpu.dialects import npu
from xnpu.core.errors import XnpuError
from xnpu.ir.io import parse_ir, print_ir
from xnpu.lowering.fixed_to_npu import LowerFixedToNpuPass
from xnpu.lowering.nn_to_fixed import FoldQuantizePairsPass, LowerNNToFixedPass
from xnpu.driver.pipeline import below_npu, lower_to_isa
from xnpu.lowering.legalize import LegalizePass
from xnpu.backend.binary import FORMAT_VERSION, Binary
from xnpu.backend.emit import disassemble, emit_binary
from xnpu.backend.simulator import run_binary
from xnpu.tools import xnpu_compile

from models import ROOT

TARGETS = ("xnpu_default", "xnpu_lite")
IMAGENET = ROOT / ".." / "shared" / "bench" / "imagenet_like"


def _model(kernel: int, softmax: bool) -> onnx.ModelProto:
    """conv (kernel x kernel) -> relu -> global pool -> flatten -> gemm [-> softmax]."""
    rng = np.random.default_rng(11)

    def weight(name, *shape):
        return numpy_helper.from_array((rng.standard_normal(shape) * 0.3).astype(np.float32), name)

    nodes = [
        helper.make_node("Conv", ["x", "w", "b"], ["c"], name="conv", kernel_shape=[kernel, kernel],
                         pads=[kernel // 2] * 4),
        helper.make_node("Relu", ["c"], ["r"], name="relu"),
        helper.make_node("GlobalAveragePool", ["r"], ["p"], name="pool"),
        helper.make_node("Flatten", ["p"], ["f"], name="flatten"),
        helper.make_node("Gemm", ["f", "wf", "bf"], ["logits"], name="fc", transB=1),
    ]
    output = "logits"
    if softmax:
        nodes.append(helper.make_node("Softmax", ["logits"], ["probs"], name="softmax", axis=1))
        output = "probs"
    graph = helper.make_graph(
        nodes, "host", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 3, 12, 12])],
        [helper.make_tensor_value_info(output, TensorProto.FLOAT, [1, 5])],
        [weight("w", 8, 3, kernel, kernel), weight("b", 8), weight("wf", 5, 8), weight("bf", 5)],
    )
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)])


def _data(count: int, seed: int = 5) -> np.ndarray:
    return np.random.default_rng(seed).standard_normal((count, 3, 12, 12)).astype(np.float32)


def _compiled(model, target: str, **options):
    return xnpu.compile(model, _data(16), target=target, progress=False, **options)


@pytest.mark.parametrize("target", TARGETS)
def test_a_softmax_head_runs_on_the_host_bit_identical_to_the_fixed_level(target):
    model = _model(3, softmax=True)
    fixed = xnpu.compile(model, _data(16), stop_at="fixed", progress=False)
    binary = _compiled(model, target)
    x = _data(4, seed=9)
    expected = xnpu.run(fixed, x)["probs"]
    got = run_binary(binary, x)["probs"]
    assert got.dtype == np.float32 and np.array_equal(got, expected)
    assert np.array_equal(xnpu.run(binary, x)["probs"], expected)  # the API runs binaries too
    np.testing.assert_allclose(got.sum(axis=1), 1.0, rtol=1e-6)  # float probabilities, not int8 codes
    assert [t.dtype for t in binary.outputs()] == ["float32"]
    placement = xnpu.placement_of(binary)
    assert [(op.op, op.nodes) for op in placement.host] == [("nn.softmax", ("softmax",))]
    assert "no fixed-point lowering" in placement.host[0].reason
    assert "conv" in placement.accelerator and "softmax" not in placement.accelerator
    assert placement.runs_on(("softmax",)) == "host" and placement.runs_on(("conv",)) == "accelerator"


def test_a_kernel_the_lite_unit_lacks_runs_on_the_host_and_both_targets_agree():
    model = _model(9, softmax=False)
    fixed = xnpu.compile(model, _data(16), stop_at="fixed", progress=False)
    x = _data(3, seed=4)
    expected = xnpu.run(fixed, x)["logits"]
    outputs = {}
    for target in TARGETS:
        binary = _compiled(model, target)
        outputs[target] = run_binary(binary, x)["logits"]
        assert np.array_equal(outputs[target], expected)
        host = xnpu.placement_of(binary).host
        if target == "xnpu_lite":
            assert ("fixed.conv2d", ("conv",), "kernel 9x9 is outside [1, 7]") in [(h.op, h.nodes, h.reason) for h in host]
        else:
            assert host == []
    assert np.array_equal(outputs["xnpu_default"], outputs["xnpu_lite"])


def test_without_host_fallback_the_op_is_one_error():
    with pytest.raises(XnpuError, match=r"softmax has no fixed-point lowering"):
        _compiled(_model(3, softmax=True), "xnpu_default", host_fallback=False)
    with pytest.raises(XnpuError, match=r"^'fixed.conv2d' at loc\(\"conv\"\): kernel 9x9 is outside \[1, 7\] \(target xnpu_lite\)$"):
        _compiled(_model(9, softmax=False), "xnpu_lite", host_fallback=False)


def test_the_host_section_round_trips_in_a_version_4_binary():
    binary = _compiled(_model(9, softmax=True), "xnpu_lite")
    data = binary.to_bytes()
    assert struct.unpack_from("<H", data, 4)[0] == FORMAT_VERSION
    again = Binary.from_bytes(data)
    assert again == binary and again.to_bytes() == data
    text = disassemble(again)
    assert "isa.host_segment 1" in text and "isa.sync {halt = 0, token = 1}" in text
    assert emit_binary(parse_ir(text)).to_bytes() == data  # disassemble -> assemble: the same bytes
    plain = _compiled(_model(3, softmax=False), "xnpu_default").to_bytes()
    assert struct.unpack_from("<H", plain, 4)[0] == FORMAT_VERSION  # with or without host segments


def _with_checksum(data: bytearray) -> bytes:
    struct.pack_into("<I", data, 8, zlib.crc32(bytes(data[12:])))
    return bytes(data)


def _host_section(data: bytes) -> tuple[int, int]:
    count = struct.unpack_from("<I", data, 20)[0]
    for index in range(count):
        kind, offset, size, _ = struct.unpack_from("<IIII", data, 32 + 16 * index)
        if kind == 7:
            return offset, size
    raise AssertionError("no host section")


def test_a_corrupt_host_section_is_one_clean_error():
    binary = _compiled(_model(3, softmax=True), "xnpu_default")
    data = binary.to_bytes()
    offset, size = _host_section(data)
    truncated = bytearray(data)
    struct.pack_into("<I", truncated, offset + 8, 3)  # three inputs declared, one stored
    with pytest.raises(XnpuError, match=r"^binary: host-segments section ends inside host segment 0 input"):
        Binary.from_bytes(_with_checksum(truncated))
    older = bytearray(data)
    struct.pack_into("<H", older, 4, 3)
    with pytest.raises(XnpuError, match=r"format version 3 is a strictly in-order program"):
        Binary.from_bytes(_with_checksum(older))
    binary.host_segments[0].body = binary.host_segments[0].body.replace("nn.softmax", "nn.softmix")
    broken = Binary.from_bytes(binary.to_bytes())
    with pytest.raises(XnpuError, match=r"^binary: host segment 1: body:\d+:\d+: error: .*nn.softmix") as error:
        run_binary(broken, _data(1))
    assert "\n" not in str(error.value)


SEPARATED = """func.func @main(%x: tensor<1x4xf32> {nn.name = "x", nn.scale = 0.05 : f32}) -> (tensor<1x4xf32> {nn.name = "y"}) {
  %s = nn.softmax %x {axis = 1 : i64, nn.scale = 0.0078 : f32} : tensor<1x4xf32> -> tensor<1x4xf32> loc("softmax")
  %r = nn.relu %s {nn.scale = 0.0078 : f32} : tensor<1x4xf32> -> tensor<1x4xf32> loc("relu")
  %d = nn.div %r, %s {nn.scale = 0.01 : f32} : (tensor<1x4xf32>, tensor<1x4xf32>) -> tensor<1x4xf32> loc("div")
  func.return %d : tensor<1x4xf32>
}"""


def test_host_ops_with_the_accelerator_between_them_are_two_segments():
    """softmax -> relu (accelerator) -> div(relu, softmax): one segment would need the
    accelerator in its middle, so the host runs two, and the npu level equals the fixed one."""
    module = parse_ir(SEPARATED)
    for step in (LowerNNToFixedPass(), FoldQuantizePairsPass()):
        step.apply(make_context(), module)
    fixed = parse_ir(print_ir(module))
    LowerFixedToNpuPass(target="xnpu_default").apply(make_context(), module)
    hosts = [op for op in module.walk() if isinstance(op, npu.HostOp)]
    assert [[o.name for o in h.placed_ops()] for h in hosts] == [["nn.softmax"], ["nn.div"]]
    x = np.array([[0.3, -1.0, 2.0, 0.1], [1.0, 1.0, -2.0, 0.0]], np.float32)
    npu_level = xnpu.run(module, x)["y"]
    assert np.array_equal(npu_level, xnpu.run(fixed, x)["y"])
    for step in below_npu("xnpu_default"):
        step.apply(make_context(), module)
    assert np.array_equal(run_binary(emit_binary(module), x)["y"], npu_level)


def test_xnpu_compile_prints_the_placement_and_no_host_fallback_fails_in_one_line(tmp_path, capsys):
    model = tmp_path / "m.onnx"
    onnx.save(_model(3, softmax=True), model)
    np.save(tmp_path / "calib.npy", _data(8))
    base = [str(model), "--calibration", str(tmp_path / "calib.npy")]
    assert xnpu_compile.main([*base, "-o", str(tmp_path / "m.xnb")]) == 0
    err = capsys.readouterr().err
    assert "placement on xnpu_default: " in err and "1 on the host (1 op in 1 segment)" in err
    assert "host segment 1: nn.softmax at 'softmax': 'nn.softmax' has no fixed-point lowering" in err
    assert xnpu_compile.main([*base, "-q", "-o", str(tmp_path / "q.xnb")]) == 0
    assert capsys.readouterr().err == ""
    assert xnpu_compile.main([*base, "--no-host-fallback", "-o", str(tmp_path / "n.xnb")]) == 1
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and err.startswith("xnpu-compile: error: ") and "softmax" in err
    assert not (tmp_path / "n.xnb").exists()


@pytest.mark.skipif(not IMAGENET.is_dir(), reason="../shared/bench/imagenet_like not found")
def test_mobilenetv3_like_compiles_for_both_targets_with_its_softmax_on_the_host():
    images = np.load(IMAGENET / "images_u8.npy")
    mean = np.array([0.485, 0.456, 0.406]).reshape(1, 3, 1, 1)
    std = np.array([0.229, 0.224, 0.225]).reshape(1, 3, 1, 1)
    x = ((images / 255.0 - mean) / std).astype(np.float32)
    model = IMAGENET / "mobilenetv3_like.onnx"
    # calibrated once on two images (exactness does not depend on how many): the fixed level
    # lowered for each target is the compile below it (bench/targets.py checks every bench
    # model on both targets with its full calibration)
    with pytest.warns(xnpu.core.errors.XnpuNote):  # the dynamic batch becomes 1
        fixed = xnpu.compile(model, x[:2], stop_at="fixed", progress=False)
    expected = xnpu.run(fixed, x[32:34])["probs"]
    for target in TARGETS:
        module = fixed.clone()
        LegalizePass(target=target).apply(make_context(), module)
        binary = emit_binary(lower_to_isa(module, target))
        assert [(op.op, op.nodes) for op in xnpu.placement_of(binary).host] == [("nn.softmax", ("softmax",))]
        assert np.array_equal(run_binary(binary, x[32:34])["probs"], expected)


def test_the_compile_report_says_where_each_layer_runs(tmp_path):
    import json

    model = tmp_path / "m.onnx"
    onnx.save(_model(9, softmax=False), model)
    np.save(tmp_path / "calib.npy", _data(8))
    report = tmp_path / "report"
    assert xnpu_compile.main([str(model), "--calibration", str(tmp_path / "calib.npy"), "--target", "xnpu_lite", "-q",
                              "--report", str(report), "-o", str(tmp_path / "m.xnb")]) == 0
    layers = {layer["name"]: layer["runs_on"] for layer in json.loads((report / "report.json").read_text())["layers"]}
    assert layers["conv"] == "host" and layers["fc"] == "accelerator"
    text = (report / "report.txt").read_text().splitlines()
    assert any(line.startswith("layer") and "runs on" in line for line in text)
    assert [line.split()[2] for line in text if line.startswith("conv ")] == ["host"]
    assert "host" in (report / "report.html").read_text()


def test_every_node_a_fusion_absorbs_is_placed_with_the_op_that_replaces_it():
    """A hard-swish spelled Add-Clip-Mul-Div becomes one table: the placement (and the cycles
    per layer) names all four nodes, not the last one only."""
    rng = np.random.default_rng(0)
    weight = numpy_helper.from_array(rng.standard_normal((4, 3, 3, 3)).astype(np.float32), "w")
    constants = [numpy_helper.from_array(np.array(v, np.float32), n) for n, v in (("three", 3), ("zero", 0), ("six", 6))]
    nodes = [helper.make_node("Conv", ["x", "w"], ["c"], name="conv", pads=[1, 1, 1, 1]),
             helper.make_node("Add", ["c", "three"], ["a"], name="add3"),
             helper.make_node("Clip", ["a", "zero", "six"], ["r"], name="relu6"),
             helper.make_node("Mul", ["c", "r"], ["m"], name="mul_x"),
             helper.make_node("Div", ["m", "six"], ["y"], name="div6")]
    graph = helper.make_graph(nodes, "g", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 3, 8, 8])],
                              [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, 4, 8, 8])], [weight, *constants])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    binary = xnpu.compile(model, rng.standard_normal((8, 3, 8, 8)).astype(np.float32), progress=False)
    assert xnpu.placement_of(binary).accelerator == ["conv", "add3", "relu6", "mul_x", "div6"]
