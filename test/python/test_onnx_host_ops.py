"""ONNX nodes the front end does not model run through onnxruntime at every level.

A node with no nn equivalent (control flow with subgraphs, LSTM, TopK, ...) is imported as an
nn.onnx op holding the node as a small ONNX model. It runs on onnxruntime at the float level
(so calibration sees it), as a float op at the fixed level, in npu and isa host segments, and
in the binary (section kind 8, format version 5), bit-identical to the fixed level on both
targets. Values that are not float (an int64 sample rate, a bool condition) pass between host
ops and the program's edges as they are.
"""

from __future__ import annotations

import struct
import zlib

import numpy as np
import onnx
import onnxruntime as ort
import pytest
from onnx import TensorProto, helper, numpy_helper

import xnpu
from xnpu.backend.binary import ONNX_FORMAT_VERSION, Binary
from xnpu.backend.emit import disassemble, emit_binary
from xnpu.core.errors import XnpuError, XnpuNote, XnpuWarning
from xnpu.dialects import nn
from xnpu.ir.io import parse_ir

TARGETS = ("xnpu_default", "xnpu_lite")
HIDDEN = 8
SHAPES = {"x": (1, 64), "state": (2, 1, HIDDEN)}


def _vad_like() -> onnx.ModelProto:
    """A small voice detector as silero_vad is built: a strided 1-D convolution, an LSTM whose
    state is an input/output pair, a linear head, and the int64 sample rate folded into the
    new state as `Cast(sr * 0)`."""
    rng = np.random.default_rng(5)

    def weight(name, *shape, scale=0.4):
        return numpy_helper.from_array((rng.standard_normal(shape) * scale).astype(np.float32), name)

    def ints(name, values):
        return numpy_helper.from_array(np.array(values, np.int64), name)

    initializers = [
        weight("wc", HIDDEN, 1, 4), weight("bc", HIDDEN), weight("W", 1, 4 * HIDDEN, HIDDEN),
        weight("R", 1, 4 * HIDDEN, HIDDEN), weight("B", 1, 8 * HIDDEN, scale=0.1), weight("wh", 1, HIDDEN),
        weight("bh", 1), ints("axis1", [1]), ints("axis0", [0]), ints("i0", 0), ints("i1", 1),
        ints("zero", 0), ints("flat", [1, HIDDEN]),
    ]
    nodes = [
        helper.make_node("Unsqueeze", ["x", "axis1"], ["x3"], name="unsqueeze"),
        helper.make_node("Conv", ["x3", "wc", "bc"], ["c"], name="conv", kernel_shape=[4], strides=[2]),
        helper.make_node("Relu", ["c"], ["r"], name="relu"),
        helper.make_node("Transpose", ["r"], ["seq"], name="to_sequence", perm=[2, 0, 1]),
        helper.make_node("Gather", ["state", "i0"], ["h"], name="h0", axis=0),
        helper.make_node("Gather", ["state", "i1"], ["cs"], name="c0", axis=0),
        helper.make_node("Unsqueeze", ["h", "axis0"], ["h3"], name="h3"),
        helper.make_node("Unsqueeze", ["cs", "axis0"], ["c3"], name="c3"),
        helper.make_node("LSTM", ["seq", "W", "R", "B", "", "h3", "c3"], ["", "yh", "yc"], name="lstm",
                         hidden_size=HIDDEN),
        helper.make_node("Concat", ["yh", "yc"], ["both"], name="concat", axis=0),
        helper.make_node("Mul", ["sr", "zero"], ["sr0"], name="sr_times_0"),
        helper.make_node("Cast", ["sr0"], ["sr0f"], name="cast", to=TensorProto.FLOAT),
        helper.make_node("Add", ["both", "sr0f"], ["stateN"], name="new_state"),
        helper.make_node("Reshape", ["yh", "flat"], ["feature"], name="flatten"),
        helper.make_node("Gemm", ["feature", "wh", "bh"], ["logit"], name="head", transB=1),
        helper.make_node("Sigmoid", ["logit"], ["output"], name="probability"),
    ]
    graph = helper.make_graph(
        nodes, "vad_like",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 64]),
         helper.make_tensor_value_info("state", TensorProto.FLOAT, [2, 1, HIDDEN]),
         helper.make_tensor_value_info("sr", TensorProto.INT64, [])],
        [helper.make_tensor_value_info("output", TensorProto.FLOAT, [1, 1]),
         helper.make_tensor_value_info("stateN", TensorProto.FLOAT, [2, 1, HIDDEN])],
        initializers,
    )
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 15)])


SR = np.array(16000, np.int64)


def _calibration(count: int = 12) -> dict[str, np.ndarray]:
    """(input, state, sr) triples: N inputs and states along a new leading axis, one sample rate for all."""
    rng = np.random.default_rng(8)
    return {"x": rng.standard_normal((count, 1, 64)).astype(np.float32),
            "state": (rng.standard_normal((count, 2, 1, HIDDEN)) * 0.3).astype(np.float32), "sr": SR}


def _stream(model, steps: int = 4) -> list[dict[str, np.ndarray]]:
    """Each step's outputs, the state carried from step to step as silero's wrapper does."""
    xs = np.random.default_rng(9).standard_normal((steps, 1, 64)).astype(np.float32)
    state, outputs = np.zeros((2, 1, HIDDEN), np.float32), []
    for x in xs:
        result = xnpu.run(model, {"x": x, "state": state, "sr": SR})
        outputs.append(result)
        state = result["stateN"]
    return outputs


@pytest.fixture(scope="module")
def fixed_module():
    return xnpu.compile(_vad_like(), _calibration(), stop_at="fixed", progress=False)


@pytest.fixture(scope="module", params=TARGETS)
def binary(request):
    return xnpu.compile(_vad_like(), _calibration(), target=request.param, progress=False)


def test_unmodelled_nodes_are_onnx_host_ops_that_run_like_onnxruntime():
    model = _vad_like()
    module = xnpu.import_onnx(model)
    host = {op.op_type.data: op for op in module.walk() if isinstance(op, nn.OnnxOp)}
    assert set(host) == {"Gather", "LSTM", "Mul", "Cast"}
    assert host["LSTM"].reason.data == "ONNX op 'LSTM' has no nn equivalent"
    assert [str(r.type) for r in host["Mul"].results] == ["tensor<si64>"]
    assert "nn.conv2d" in [op.name for op in module.walk()]  # the 1-D convolution is an nn op
    session = ort.InferenceSession(model.SerializeToString(), providers=["CPUExecutionProvider"])
    state = np.zeros((2, 1, HIDDEN), np.float32)
    for x in np.random.default_rng(1).standard_normal((3, 1, 64)).astype(np.float32):
        ours = xnpu.run(module, {"x": x, "state": state, "sr": SR})
        reference = dict(zip(["output", "stateN"], session.run(None, {"x": x, "state": state, "sr": SR})))
        for name in reference:
            np.testing.assert_allclose(ours[name], reference[name], rtol=1e-5, atol=1e-6)
        state = reference["stateN"]


def test_the_binary_runs_its_host_segments_bit_identical_to_the_fixed_level(fixed_module, binary):
    for expected, got in zip(_stream(fixed_module), _stream(binary)):
        for name in ("output", "stateN"):
            assert got[name].dtype == expected[name].dtype and np.array_equal(got[name], expected[name]), name
    io = {(t.name, t.direction): t.dtype for t in binary.io}
    # the state and the sample rate only the host reads enter as they are; the output is a host result
    assert io[("sr", "input")] == "int64" and io[("state", "input")] == "float32" and io[("x", "input")] == "int8"
    placement = xnpu.placement_of(binary)
    lstm = [op for op in placement.host if op.nodes == ("lstm",)]
    assert [(op.op, op.reason) for op in lstm] == [("nn.onnx LSTM", "ONNX op 'LSTM' has no nn equivalent")]
    assert "conv" in placement.accelerator and "lstm" in placement.host_nodes
    assert placement.summary().startswith(f"placement on {placement.target}: {len(placement.accelerator)} ONNX nodes "
                                          f"on the accelerator, {len(placement.host_nodes)} on the host (")


def test_the_onnx_models_section_round_trips_as_format_version_5(binary):
    data = binary.to_bytes()
    assert struct.unpack_from("<H", data, 4)[0] == ONNX_FORMAT_VERSION
    assert len(binary.onnx_models) == 5  # one per node: the two Gathers, the LSTM, the Mul and the Cast
    again = Binary.from_bytes(data)
    assert again == binary and again.to_bytes() == data
    text = disassemble(again)
    assert '#nn.onnx_model<"' in text  # the isa text holds the models themselves
    assert emit_binary(parse_ir(text)).to_bytes() == data  # disassemble -> assemble: the same bytes


def _with_checksum(data: bytearray) -> bytes:
    struct.pack_into("<I", data, 8, zlib.crc32(bytes(data[12:])))
    return bytes(data)


def _section(data: bytes, wanted: int) -> tuple[int, int]:
    for index in range(struct.unpack_from("<I", data, 20)[0]):
        kind, offset, size, _ = struct.unpack_from("<IIII", data, 32 + 16 * index)
        if kind == wanted:
            return offset, size
    raise AssertionError(f"no section of kind {wanted}")


def test_a_damaged_onnx_models_section_is_one_clean_error(binary):
    data = binary.to_bytes()
    offset, size = _section(data, 8)
    longer = bytearray(data)
    struct.pack_into("<I", longer, offset + 4, size)  # model 0 claims the whole section
    with pytest.raises(XnpuError, match=r"^binary: onnx-models section ends inside ONNX model 0"):
        Binary.from_bytes(_with_checksum(longer))
    older = bytearray(data)
    struct.pack_into("<H", older, 4, 4)
    with pytest.raises(XnpuError, match=r"kind 8 \(onnx models\) is reserved and not valid in format version 4"):
        Binary.from_bytes(_with_checksum(older))
    wrong_model = bytearray(data)
    struct.pack_into("<I", wrong_model, offset, 0)  # no models, but the segments name them
    wrong_model[offset + 4:offset + size] = bytes(size - 4)
    with pytest.raises(XnpuError):
        Binary.from_bytes(_with_checksum(wrong_model))


def test_without_host_fallback_a_host_op_is_one_error():
    with pytest.raises(XnpuError) as error:
        xnpu.compile(_vad_like(), _calibration(), host_fallback=False, progress=False)
    assert str(error.value) == ("'nn.onnx' at loc(\"h0\"): ONNX op 'Gather' has no nn equivalent; "
                                "it runs only on the host, through onnxruntime")


def test_a_model_with_nothing_for_the_accelerator_compiles_with_a_warning():
    graph = helper.make_graph(
        [helper.make_node("TopK", ["x", "k"], ["values", "indices"], name="top3")], "top3",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 10])],
        [helper.make_tensor_value_info("values", TensorProto.FLOAT, [1, 3]),
         helper.make_tensor_value_info("indices", TensorProto.INT64, [1, 3])],
        [numpy_helper.from_array(np.array([3], np.int64), "k")],
    )
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)])
    x = np.random.default_rng(2).standard_normal((4, 1, 10)).astype(np.float32)
    with pytest.warns(XnpuWarning, match="nothing in the model runs on the accelerator of xnpu_lite"):
        binary = xnpu.compile(model, x, target="xnpu_lite", progress=False)
    session = ort.InferenceSession(model.SerializeToString(), providers=["CPUExecutionProvider"])
    got = xnpu.run(binary, x)  # samples along a new leading axis come back the same way
    for index, sample in enumerate(x):
        values, indices = session.run(None, {"x": sample})
        assert np.array_equal(got["values"][index], values) and np.array_equal(got["indices"][index], indices)
    assert got["indices"].dtype == np.int64


def test_neighbouring_host_ops_run_as_one_segment_between_accelerator_layers():
    rng = np.random.default_rng(3)
    weights = [numpy_helper.from_array((rng.standard_normal(shape) * 0.3).astype(np.float32), name)
               for name, shape in (("w1", (4, 3, 3, 3)), ("w2", (4, 4, 1, 1)))]
    graph = helper.make_graph(
        [helper.make_node("Conv", ["x", "w1"], ["c"], name="conv1", pads=[1, 1, 1, 1]),
         helper.make_node("Sin", ["c"], ["s"], name="sin"), helper.make_node("Cos", ["s"], ["t"], name="cos"),
         helper.make_node("Conv", ["t", "w2"], ["y"], name="conv2")],
        "sin_cos", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 3, 8, 8])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, 4, 8, 8])], weights)
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    x = rng.standard_normal((4, 1, 3, 8, 8)).astype(np.float32)
    fixed_module = xnpu.compile(model, x, stop_at="fixed", progress=False)
    binary = xnpu.compile(model, x, target="xnpu_default", progress=False)
    placement = xnpu.placement_of(binary)
    assert placement.accelerator == ["conv1", "conv2"] and placement.host_nodes == ["sin", "cos"]
    assert placement.segments == 1
    assert np.array_equal(xnpu.run(binary, x[0])["y"], xnpu.run(fixed_module, x[0])["y"])


def test_an_if_reading_outer_values_takes_them_as_explicit_inputs():
    then_graph = helper.make_graph([helper.make_node("Mul", ["x", "two"], ["t"])], "then", [],
                                   [helper.make_tensor_value_info("t", TensorProto.FLOAT, [1, 3])])
    else_graph = helper.make_graph([helper.make_node("Neg", ["x"], ["e"])], "else", [],
                                   [helper.make_tensor_value_info("e", TensorProto.FLOAT, [1, 3])])
    graph = helper.make_graph(
        [helper.make_node("If", ["c"], ["y"], name="choose", then_branch=then_graph, else_branch=else_graph)],
        "if", [helper.make_tensor_value_info("c", TensorProto.BOOL, []),
               helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 3])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, 3])],
        [numpy_helper.from_array(np.array(2.0, np.float32), "two")],
    )
    module = xnpu.import_onnx(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)]))
    (op,) = [op for op in module.walk() if isinstance(op, nn.OnnxOp)]
    inner = onnx.load_from_string(op.model_bytes())
    assert [i.name for i in inner.graph.input] == ["c", "x"]  # x: read by the branches, from the outer graph
    assert [t.name for t in inner.graph.initializer] == ["two"]
    x = np.array([[1.0, -2.0, 3.0]], np.float32)
    assert xnpu.run(module, {"c": np.array(True), "x": x})["y"].tolist() == [[2.0, -4.0, 6.0]]
    assert xnpu.run(module, {"c": np.array(False), "x": x})["y"].tolist() == [[-1.0, 2.0, -3.0]]


def test_an_if_decided_by_static_shapes_becomes_its_branch():
    branch = lambda name, op: helper.make_graph(  # noqa: E731
        [helper.make_node(op, ["x"], [name])], name, [], [helper.make_tensor_value_info(name, TensorProto.FLOAT, [1, 3])])
    graph = helper.make_graph(
        [helper.make_node("Shape", ["x"], ["s"]), helper.make_node("Gather", ["s", "zero"], ["n"], axis=0),
         helper.make_node("Equal", ["n", "one"], ["is_one"]),
         helper.make_node("If", ["is_one"], ["y"], name="batch_check", then_branch=branch("t", "Relu"),
                          else_branch=branch("e", "Sigmoid"))],
        "decided", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 3])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, 3])],
        [numpy_helper.from_array(np.array(0, np.int64), "zero"), numpy_helper.from_array(np.array(1, np.int64), "one")],
    )
    module = xnpu.import_onnx(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)]))
    assert [op.name for op in module.walk() if op.name.startswith("nn.")] == ["nn.relu"]


def test_input_shape_on_a_static_input_says_it_overrides_it():
    graph = helper.make_graph([helper.make_node("Relu", ["x"], ["y"])], "g",
                              [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 4])],
                              [helper.make_tensor_value_info("y", TensorProto.FLOAT, None)])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    with pytest.warns(XnpuNote, match=r"--input-shape x=1,8 overrides the static shape \[1, 4\] of graph input 'x'"):
        module = xnpu.import_onnx(model, input_shapes={"x": (1, 8)})
    assert "tensor<1x8xf32>" in xnpu.print_ir(module)


def test_the_layer_report_leaves_host_ops_out_and_draws_through_them(fixed_module):
    from xnpu.driver.pipeline import float_cleanup
    from xnpu.driver.quant_report import layer_report, match_layers

    float_module = xnpu.import_onnx(_vad_like())
    stats = layer_report(float_module, fixed_module, _calibration(4), progress=False)
    names = [layer.name for layer in stats]
    assert "head" in names and "lstm" not in names and "sr_times_0" not in names  # int8 layers only
    layers, unmatched = match_layers(float_cleanup(float_module.clone()), fixed_module)
    assert {"lstm", "h0", "c0", "h3", "c3"} <= set(unmatched)  # h3, c3: float reshapes between host ops
    inputs = {layer.name: layer.inputs for layer in layers}
    assert inputs["flatten"] == ["to_sequence", "input:state"]  # the LSTM's inputs stand for it


def test_compile_with_report_takes_an_input_shared_by_every_sample(tmp_path):
    """xnpu-compile --report simulates the first calibration sample; an input given once for
    every sample (the sample rate, a 0-d array) ended in an IndexError traceback there."""
    import subprocess
    import sys

    onnx.save(_vad_like(), str(tmp_path / "vad.onnx"))
    np.savez(tmp_path / "calib.npz", **_calibration(8))
    result = subprocess.run([sys.executable, "-m", "xnpu.tools.xnpu_compile", "vad.onnx", "-c", "calib.npz", "-q",
                             "--report", "report", "-o", "vad.xnb"], capture_output=True, text=True, cwd=tmp_path,
                            timeout=300)
    assert result.returncode == 0 and result.stderr == "", result.stderr
    assert Binary.from_bytes((tmp_path / "vad.xnb").read_bytes()).host_segments
    assert "cycles" in (tmp_path / "report" / "report.txt").read_text()


def test_the_placement_summary_prints_each_host_op_on_one_escaped_line():
    from xnpu.driver.placement import HostPlacement, Placement

    # a custom domain's op type, a node name and a reason that would end the line or recolour the terminal
    hostile = HostPlacement(1, "nn.onnx Evil\x1b[31m", ("node\nsegment 9: injected",), "reason\u202eesrever")
    lines = Placement("xnpu_default", ["conv"], [hostile], 1).summary().splitlines()
    assert len(lines) == 2 and all(line.isprintable() for line in lines)
    assert lines[1] == ("  host segment 1: nn.onnx Evil\\1B[31m at 'node\\nsegment 9: injected': "
                        "reason\\E2\\80\\AEesrever")
