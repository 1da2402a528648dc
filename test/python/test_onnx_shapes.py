"""Static shapes at import: --input-shape / input_shapes, the dynamic batch default, and shape
computations folded away (onnx's ReferenceEvaluator), checked against onnxruntime."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import onnx
import pytest
from onnx import TensorProto, helper, numpy_helper

import xnpu
from xnpu.dialects import nn
from xnpu.core.errors import XnpuError, XnpuNote
from xnpu.frontend.input_shapes import parse_input_shapes

ort = pytest.importorskip("onnxruntime")

RNG = np.random.default_rng(11)


def model_of(nodes, inputs, outputs, initializers=None, opset=13):
    """`inputs` and `outputs` map name -> shape (dims may be names); initializers by name."""
    graph = helper.make_graph(
        nodes,
        "shapes",
        [helper.make_tensor_value_info(n, TensorProto.FLOAT, s) for n, s in inputs.items()],
        [helper.make_tensor_value_info(n, TensorProto.FLOAT, s) for n, s in outputs.items()],
        [numpy_helper.from_array(np.asarray(a), n) for n, a in (initializers or {}).items()],
    )
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", opset)])
    model.ir_version = 8
    return model


def onnxruntime_outputs(model, inputs):
    session = ort.InferenceSession(model.SerializeToString(), providers=["CPUExecutionProvider"])
    return dict(zip([o.name for o in session.get_outputs()], session.run(None, inputs)))


def nn_ops(module):
    return [op.name for op in module.walk() if op.name.startswith("nn.") and op.name != "nn.constant"]


def import_error(model, **options) -> str:
    with pytest.raises(XnpuError) as info:
        xnpu.import_onnx(model, **options)
    assert "\n" not in str(info.value)
    return str(info.value)


def conv_relu(input_dims, opset=13):
    """Conv 3 -> 4 (3x3, pad 1) + Relu on an input with the given (possibly symbolic) dims."""
    weight = RNG.standard_normal((4, 3, 3, 3)).astype(np.float32) * 0.3
    return model_of(
        [helper.make_node("Conv", ["input", "w"], ["c"], name="conv", pads=[1, 1, 1, 1]),
         helper.make_node("Relu", ["c"], ["y"], name="relu")],
        {"input": input_dims}, {"y": None}, {"w": weight}, opset,
    )


# --------------------------------------------------------------------------------------
# Input shapes


def test_dynamic_batch_defaults_to_one_with_a_note():
    model = conv_relu(["N", 3, 8, 8])
    with pytest.warns(XnpuNote, match=r"graph input 'input' has a dynamic batch dimension \[N, 3, 8, 8\]: "
                                      r"importing it with batch 1 \(--input-shape input=\.\.\. chooses another shape\)"):
        module = xnpu.import_onnx(model)
    (spec,), _ = xnpu.signature(module)
    assert spec.shape == (1, 3, 8, 8)
    x = RNG.standard_normal((3, 3, 8, 8)).astype(np.float32)  # three samples, run one by one
    np.testing.assert_allclose(xnpu.run(module, x)["y"], onnxruntime_outputs(model, {"input": x})["y"],
                               rtol=1e-5, atol=1e-5)


def test_input_shapes_choose_the_batch_and_the_image_size():
    model = conv_relu(["N", 3, "H", "W"])
    module = xnpu.import_onnx(model, input_shapes={"input": (2, 3, 10, 6)})
    (spec,), (out,) = xnpu.signature(module)
    assert spec.shape == (2, 3, 10, 6) and out.shape == (2, 4, 10, 6)
    x = RNG.standard_normal((2, 3, 10, 6)).astype(np.float32)
    np.testing.assert_allclose(xnpu.run(module, x)["y"], onnxruntime_outputs(model, {"input": x})["y"],
                               rtol=1e-5, atol=1e-5)


def test_static_model_is_unchanged_by_matching_input_shapes():
    model = conv_relu([1, 3, 8, 8])
    assert xnpu.print_ir(xnpu.import_onnx(model, input_shapes={"input": [1, 3, 8, 8]})) == xnpu.print_ir(
        xnpu.import_onnx(model))


@pytest.mark.parametrize(
    "dims, shapes, expected",
    [
        (["N", 3, "H", "W"], None,
         "graph input 'input' has a dynamic shape [N, 3, H, W]; give it with --input-shape input=1,3,<H>,<W>"),
        ([1, 3, "H", 8], None, "graph input 'input' has a dynamic shape [1, 3, H, 8]; give it with --input-shape input=1,3,<H>,8"),
        (["N", 3, 8, 8], {"image": (1, 3, 8, 8)}, "--input-shape names 'image', which is not a graph input (inputs: input)"),
        (["N", 3, 8, 8], {"input": (1, 3, 8)},
         "--input-shape input=1,3,8 has rank 3, but graph input 'input' has rank 4 [N, 3, 8, 8]"),
        (["N", 3, 8, 8], {"input": (1, 3, 0, 8)}, "--input-shape input: dimensions must be positive, got [1, 3, 0, 8]"),
    ],
)
def test_input_shape_errors_are_one_line_naming_input_and_flag(dims, shapes, expected):
    assert import_error(conv_relu(dims), input_shapes=shapes) == expected


def test_unknown_rank_needs_the_flag():
    model = conv_relu([1, 3, 8, 8])
    model.graph.input[0].type.tensor_type.ClearField("shape")
    assert import_error(model) == (
        "graph input 'input' has an unknown rank; give its shape with --input-shape input=d0,d1,...")
    module = xnpu.import_onnx(model, input_shapes={"input": (1, 3, 5, 5)})
    assert xnpu.signature(module)[0][0].shape == (1, 3, 5, 5)


@pytest.mark.parametrize(
    "texts, expected",
    [
        (["input=1,3,224,224", "mask=1,1"], {"input": (1, 3, 224, 224), "mask": (1, 1)}),
        (["a=b=2,3"], {"a=b": (2, 3)}),  # the last '=' separates name and dims
    ],
)
def test_input_shape_flags_parse(texts, expected):
    assert parse_input_shapes(texts) == expected


@pytest.mark.parametrize(
    "texts, expected",
    [
        (["input"], "--input-shape expects NAME=d0,d1,... with positive integer dimensions, got 'input'"),
        (["input=1,x"], "--input-shape expects NAME=d0,d1,... with positive integer dimensions, got 'input=1,x'"),
        (["=1,2"], "--input-shape expects NAME=d0,d1,... with positive integer dimensions, got '=1,2'"),
        (["input=1,-2"], "--input-shape expects NAME=d0,d1,... with positive integer dimensions, got 'input=1,-2'"),
        (["a=1", "a=2"], "--input-shape gives the shape of 'a' twice"),
    ],
)
def test_malformed_input_shape_flags(texts, expected):
    with pytest.raises(XnpuError) as info:
        parse_input_shapes(texts)
    assert str(info.value) == expected


# --------------------------------------------------------------------------------------
# Shape computations folded away


def ints(name, values):
    return numpy_helper.from_array(np.asarray(values, dtype=np.int64), name)


def shape_zoo():
    """x [N, 3, H, W] upsampled to sizes computed from its shape, and flattened by a computed
    target: Shape, Size, Gather, Unsqueeze, Squeeze, Concat, Cast, Slice, ConstantOfShape, Range,
    Expand, int64 and float arithmetic on shape data, Identity."""
    nodes = [
        helper.make_node("Shape", ["x"], ["s"], name="shape"),
        helper.make_node("Gather", ["s", "zero"], ["n"], name="batch", axis=0),
        helper.make_node("Unsqueeze", ["n", "zero_axis"], ["n1"], name="n1"),
        helper.make_node("Expand", ["n1", "one_shape"], ["n_expanded"], name="expand"),
        helper.make_node("Slice", ["s", "two", "four"], ["hw"], name="hw"),
        helper.make_node("Cast", ["hw"], ["hw_float"], name="to_float", to=TensorProto.FLOAT),
        helper.make_node("Mul", ["hw_float", "two_float"], ["hw2_float"], name="double"),
        helper.make_node("Cast", ["hw2_float"], ["hw2"], name="to_int", to=TensorProto.INT64),
        helper.make_node("Slice", ["s", "one", "two"], ["c"], name="channels"),
        helper.make_node("Concat", ["n_expanded", "c", "hw2"], ["sizes"], name="sizes", axis=0),
        helper.make_node("Resize", ["x", "", "", "sizes"], ["up"], name="up", mode="nearest"),
        helper.make_node("Size", ["x"], ["total"], name="size"),
        helper.make_node("Div", ["total", "n"], ["per_sample"], name="per_sample"),
        helper.make_node("Squeeze", ["c", "zero_axis"], ["c_scalar"], name="squeeze"),
        helper.make_node("Range", ["zero", "c_scalar", "one_scalar"], ["r"], name="range"),
        helper.make_node("Shape", ["r"], ["r_shape"], name="r_shape"),
        helper.make_node("ConstantOfShape", ["r_shape"], ["ones"], name="ones",
                         value=numpy_helper.from_array(np.array([1], np.int64))),
        helper.make_node("Sub", ["per_sample", "ones"], ["per_sample_minus_one"], name="sub"),
        helper.make_node("Add", ["per_sample_minus_one", "ones"], ["per_sample_again"], name="add"),
        helper.make_node("Gather", ["per_sample_again", "zero"], ["per"], name="first", axis=0),
        helper.make_node("Unsqueeze", ["per", "zero_axis"], ["per1"], name="per1"),
        helper.make_node("Concat", ["n1", "per1"], ["flat_shape"], name="flat_shape", axis=0),
        helper.make_node("Identity", ["flat_shape"], ["flat_shape_id"], name="identity"),
        helper.make_node("Reshape", ["x", "flat_shape_id"], ["flat"], name="flatten"),
    ]
    initializers = {
        "zero": np.array(0, np.int64), "zero_axis": np.array([0], np.int64), "one": np.array([1], np.int64),
        "two": np.array([2], np.int64), "four": np.array([4], np.int64), "one_scalar": np.array(1, np.int64),
        "one_shape": np.array([1], np.int64), "two_float": np.array(2.0, np.float32),
    }
    return model_of(nodes, {"x": ["N", 3, "H", "W"]}, {"up": None, "flat": None}, initializers)


def test_shape_computations_fold_into_constants():
    model = shape_zoo()
    module = xnpu.import_onnx(model, input_shapes={"x": (2, 3, 4, 5)})
    assert nn_ops(module) == ["nn.resize", "nn.reshape"]
    resize = next(op for op in module.walk() if isinstance(op, nn.ResizeOp))
    assert nn.shape_of(resize.result) == (2, 3, 8, 10)
    _, outputs = xnpu.signature(module)
    assert [o.shape for o in outputs] == [(2, 3, 8, 10), (2, 60)]
    x = RNG.standard_normal((2, 3, 4, 5)).astype(np.float32)
    reference = onnxruntime_outputs(model, {"x": x})
    ours = xnpu.run(module, x)
    for name in ("up", "flat"):
        np.testing.assert_array_equal(ours[name], reference[name])


def test_folded_nodes_leave_no_trace_in_the_ir():
    text = xnpu.print_ir(xnpu.import_onnx(shape_zoo(), input_shapes={"x": (1, 3, 2, 2)}))
    for node in ("shape", "batch", "sizes", "range", "ones", "flat_shape"):
        assert f'loc("{node}")' not in text
    assert 'loc("up")' in text and 'loc("flatten")' in text


def test_paddle_style_flatten_of_a_dynamic_batch():
    """Shape -> Cast -> Slice -> Concat -> Reshape, as paddle2onnx writes a flatten."""
    nodes = [
        helper.make_node("GlobalAveragePool", ["x"], ["pooled"], name="gap"),
        helper.make_node("Shape", ["pooled"], ["s"], name="shape"),
        helper.make_node("Cast", ["s"], ["s32"], name="cast", to=TensorProto.INT32),
        helper.make_node("Slice", ["s32", "start", "end"], ["batch"], name="slice"),
        helper.make_node("Cast", ["batch"], ["batch64"], name="cast_back", to=TensorProto.INT64),
        helper.make_node("Concat", ["batch64", "minus_one"], ["target"], name="concat", axis=0),
        helper.make_node("Reshape", ["pooled", "target"], ["y"], name="flatten"),
    ]
    initializers = {"start": np.array([0], np.int32), "end": np.array([1], np.int32),
                    "minus_one": np.array([-1], np.int64)}
    model = model_of(nodes, {"x": ["N", 8, 4, 4]}, {"y": ["N", 8]}, initializers)
    with pytest.warns(XnpuNote):
        module = xnpu.import_onnx(model)
    assert nn_ops(module) == ["nn.global_average_pool", "nn.reshape"]
    x = RNG.standard_normal((1, 8, 4, 4)).astype(np.float32)
    # a mean of 16 values of about 1 in float32, summed in another order than onnxruntime's: a
    # few units in the last place of the largest term (an average near 0 differed by 1.2e-8)
    np.testing.assert_allclose(xnpu.run(module, x)["y"], onnxruntime_outputs(model, {"x": x})["y"], rtol=1e-6,
                               atol=16 * np.finfo(np.float32).eps * np.abs(x).max())


def test_shape_op_on_float_weights_only_is_folded():
    # Unsqueeze of a float initializer is a constant, not an op
    nodes = [helper.make_node("Unsqueeze", ["b", "axes"], ["b4"], name="unsqueeze"),
             helper.make_node("Add", ["x", "b4"], ["y"], name="add")]
    model = model_of(nodes, {"x": [1, 3, 2, 2]}, {"y": None},
                     {"b": np.float32([1, 2, 3]), "axes": np.array([0, 2, 3], np.int64)})
    module = xnpu.import_onnx(model)
    assert nn_ops(module) == ["nn.add"]
    x = RNG.standard_normal((1, 3, 2, 2)).astype(np.float32)
    np.testing.assert_array_equal(xnpu.run(module, x)["y"], onnxruntime_outputs(model, {"x": x})["y"])


def test_float_arithmetic_on_weights_stays_a_float_op():
    nodes = [helper.make_node("Mul", ["a", "b"], ["ab"], name="weights"),
             helper.make_node("Add", ["x", "ab"], ["y"], name="add")]
    model = model_of(nodes, {"x": [2]}, {"y": None}, {"a": np.float32([1, 2]), "b": np.float32([3, 4])})
    assert nn_ops(xnpu.import_onnx(model)) == ["nn.mul", "nn.add"]


def test_a_shape_op_on_data_that_is_left_is_kept_for_onnxruntime():
    nodes = [helper.make_node("Gather", ["x", "index"], ["y"], name="pick", axis=1)]
    model = model_of(nodes, {"x": [2, 3]}, {"y": None}, {"index": np.array([0, 2], np.int64)})
    module = xnpu.import_onnx(model)
    (op,) = [op for op in module.walk() if op.name == "nn.onnx"]
    assert op.reason.data == "ONNX op 'Gather' has no nn equivalent"
    x = np.arange(6, dtype=np.float32).reshape(2, 3)
    np.testing.assert_array_equal(xnpu.run(module, x)["y"], x[:, [0, 2]])


# --------------------------------------------------------------------------------------
# The tools


def tool(name, *args, cwd):
    from test_tools import forked_tool  # a process of its own without an interpreter's start

    return forked_tool(name, *args, cwd=cwd, timeout=300)


@pytest.fixture
def dynamic_hw(tmp_path):
    """A conv + relu model with dynamic batch, height and width, and calibration images of 12 x 10."""
    onnx.save(conv_relu(["N", 3, "H", "W"]), tmp_path / "dyn.onnx")
    np.save(tmp_path / "calib.npy", RNG.standard_normal((4, 3, 12, 10)).astype(np.float32))
    return tmp_path


def test_compile_with_dynamic_height_and_width_needs_the_flag(dynamic_hw):
    failed = tool("xnpu-compile", "dyn.onnx", "--calibration", "calib.npy", "-o", "dyn.xnb", cwd=dynamic_hw)
    assert failed.returncode == 1 and failed.stdout == ""
    assert failed.stderr.splitlines() == [
        "xnpu-compile: error: graph input 'input' has a dynamic shape [N, 3, H, W]; "
        "give it with --input-shape input=1,3,<H>,<W>"
    ]
    assert not (dynamic_hw / "dyn.xnb").exists()

    done = tool("xnpu-compile", "dyn.onnx", "--input-shape", "input=1,3,12,10", "--calibration", "calib.npy",
                "-o", "dyn.xnb", cwd=dynamic_hw)
    assert done.returncode == 0, done.stderr
    assert done.stderr == ""
    from xnpu.backend.simulator import BinaryModel

    binary = BinaryModel.from_file(dynamic_hw / "dyn.xnb")
    x = np.load(dynamic_hw / "calib.npy")
    fixed = xnpu.quantize(str(dynamic_hw / "dyn.onnx"), x, input_shapes={"input": (1, 3, 12, 10)}, progress=False)
    np.testing.assert_array_equal(binary(x)["y"], xnpu.run(fixed, x)["y"])  # bit-exact with the fixed level


def test_translate_and_quantize_take_the_flag(dynamic_hw):
    translated = tool("xnpu-translate", "--import-onnx", "dyn.onnx", "--input-shape", "input=1,3,12,10",
                      "-o", "dyn.mlir", cwd=dynamic_hw)
    assert translated.returncode == 0 and translated.stderr == ""
    assert "tensor<1x3x12x10xf32>" in (dynamic_hw / "dyn.mlir").read_text()
    quantized = tool("xnpu-quantize", "dyn.onnx", "--input-shape", "input=1,3,12,10", "--calibration", "calib.npy",
                     "-o", "dyn.fixed.mlir", cwd=dynamic_hw)
    assert quantized.returncode == 0, quantized.stderr
    assert "fixed.conv2d" in (dynamic_hw / "dyn.fixed.mlir").read_text()
    wrong = tool("xnpu-quantize", "dyn.mlir", "--input-shape", "input=1,3,12,10", "--calibration", "calib.npy",
                 "-o", "again.mlir", cwd=dynamic_hw)
    assert wrong.stderr.splitlines() == [
        "xnpu-quantize: error: --input-shape applies to ONNX models only (IR has static shapes)"]


def test_dynamic_batch_note_is_one_line_on_stderr(tmp_path):
    onnx.save(conv_relu(["N", 3, 6, 6]), tmp_path / "batch.onnx")
    result = tool("xnpu-translate", "--import-onnx", "batch.onnx", "-o", "batch.mlir", cwd=tmp_path)
    assert result.returncode == 0
    assert result.stderr.splitlines() == [
        "xnpu-translate: note: graph input 'input' has a dynamic batch dimension [N, 3, 6, 6]: importing it with "
        "batch 1 (--input-shape input=... chooses another shape)"
    ]
    assert "tensor<1x3x6x6xf32>" in (tmp_path / "batch.mlir").read_text()


def test_shape_inference_without_weight_data_infers_what_onnx_infers_and_keeps_the_weights():
    from xnpu.frontend.onnx_shapes import infer_shapes

    weight = np.random.default_rng(3).normal(size=(32, 16, 3, 3)).astype(np.float32)
    model = model_of(
        [helper.make_node("Conv", ["x", "w"], ["y"], pads=[1, 1, 1, 1]),
         helper.make_node("Reshape", ["y", "target"], ["z"])],
        {"x": [1, 16, 8, 8]}, {"z": None}, {"w": weight, "target": np.array([1, -1], dtype=np.int64)},
    )
    before = model.SerializeToString()
    expected = onnx.shape_inference.infer_shapes(model, data_prop=True)
    got = infer_shapes(model, data_prop=True)
    assert list(got.graph.value_info) == list(expected.graph.value_info)
    assert [o.type for o in got.graph.output] == [o.type for o in expected.graph.output]
    assert [d.dim_value for d in got.graph.output[0].type.tensor_type.shape.dim] == [1, 32 * 8 * 8]
    assert np.array_equal(numpy_helper.to_array(got.graph.initializer[0]), weight)
    assert model.SerializeToString() == before
