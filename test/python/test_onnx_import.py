"""The ONNX front end: every op it maps, what it removes, locations, and its error paths."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import onnx
import pytest
from onnx import TensorProto, helper, numpy_helper

import xnpu
from xnpu.dialects import nn
from xnpu.core.errors import XnpuError, XnpuNote

ort = pytest.importorskip("onnxruntime")

# Tests marked float_sums compare values computed through float sums (against onnxruntime or
# recorded figures): `make blas-variance` reruns them. The import's structure, its errors and the
# command line compute nothing a BLAS kernel orders, so they run once.

RNG = np.random.default_rng(7)


def make_model(nodes, inputs, outputs, initializers=None, opset=17, output_shapes=None):
    """A model from helper nodes; `inputs` maps name -> shape, `outputs` lists names."""
    initializers = initializers or {}
    output_shapes = output_shapes or {}
    graph = helper.make_graph(
        nodes,
        "test",
        [helper.make_tensor_value_info(n, TensorProto.FLOAT, s) for n, s in inputs.items()],
        [helper.make_tensor_value_info(n, TensorProto.FLOAT, output_shapes.get(n)) for n in outputs],
        [numpy_helper.from_array(np.asarray(a), n) for n, a in initializers.items()],
    )
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", opset)])
    model.ir_version = 8
    return model


def random_inputs(model):
    initializers = {t.name for t in model.graph.initializer}
    return {
        i.name: RNG.standard_normal([d.dim_value for d in i.type.tensor_type.shape.dim]).astype(np.float32)
        for i in model.graph.input
        if i.name not in initializers
    }


def op_names(module):
    return [op.name for op in module.walk() if op.name.startswith("nn.")]


def check_against_onnxruntime(model, expect_ops):
    """Import, check the nn ops produced, run both and compare."""
    module = xnpu.import_onnx(model)
    assert [n for n in op_names(module) if n != "nn.constant"] == expect_ops
    inputs = random_inputs(model)
    ours = xnpu.run(module, inputs)
    session = ort.InferenceSession(model.SerializeToString(), providers=["CPUExecutionProvider"])
    reference = session.run(None, inputs)
    for output, ref in zip(model.graph.output, reference):
        np.testing.assert_allclose(ours[output.name], ref, rtol=1e-5, atol=1e-5)
    return module


def w(*shape):
    return RNG.standard_normal(shape).astype(np.float32)


# (id, nodes, inputs, initializers, expected nn ops, opset)
OP_CASES = [
    ("conv_bias_pads_strides", [helper.make_node("Conv", ["x", "w", "b"], ["y"], pads=[1, 0, 2, 1], strides=[2, 1])],
     {"x": [1, 3, 9, 8]}, {"w": w(4, 3, 3, 3), "b": w(4)}, ["nn.conv2d"], 17),
    ("conv_no_bias_dilations", [helper.make_node("Conv", ["x", "w"], ["y"], dilations=[2, 2], kernel_shape=[3, 3])],
     {"x": [1, 2, 9, 9]}, {"w": w(3, 2, 3, 3)}, ["nn.conv2d"], 17),
    ("conv_group", [helper.make_node("Conv", ["x", "w", "b"], ["y"], group=2, pads=[1, 1, 1, 1])],
     {"x": [1, 4, 6, 6]}, {"w": w(6, 2, 3, 3), "b": w(6)}, ["nn.conv2d"], 17),
    ("conv_depthwise", [helper.make_node("Conv", ["x", "w"], ["y"], group=4, pads=[1, 1, 1, 1])],
     {"x": [1, 4, 6, 6]}, {"w": w(4, 1, 3, 3)}, ["nn.conv2d"], 17),
    ("conv_same_upper", [helper.make_node("Conv", ["x", "w"], ["y"], auto_pad="SAME_UPPER", strides=[2, 2])],
     {"x": [1, 2, 8, 7]}, {"w": w(3, 2, 4, 4)}, ["nn.conv2d"], 17),
    ("conv_same_lower", [helper.make_node("Conv", ["x", "w"], ["y"], auto_pad="SAME_LOWER", strides=[2, 2])],
     {"x": [1, 2, 8, 7]}, {"w": w(3, 2, 4, 4)}, ["nn.conv2d"], 17),
    ("conv_valid", [helper.make_node("Conv", ["x", "w"], ["y"], auto_pad="VALID", strides=[2, 2])],
     {"x": [1, 2, 8, 7]}, {"w": w(3, 2, 3, 3)}, ["nn.conv2d"], 11),
    ("gemm_all_attributes", [helper.make_node("Gemm", ["a", "b", "c"], ["y"], alpha=0.5, beta=2.0, transA=1, transB=1)],
     {"a": [5, 3]}, {"b": w(4, 5), "c": w(1, 4)}, ["nn.gemm"], 17),
    ("gemm_no_c", [helper.make_node("Gemm", ["a", "b"], ["y"])], {"a": [2, 3], "b": [3, 4]}, {}, ["nn.gemm"], 11),
    ("matmul", [helper.make_node("MatMul", ["a", "b"], ["y"])], {"a": [2, 3, 4]}, {"b": w(4, 5)}, ["nn.matmul"], 17),
    ("add_broadcast", [helper.make_node("Add", ["x", "c"], ["y"])], {"x": [1, 3, 4, 4]}, {"c": w(3, 1, 1)}, ["nn.add"], 17),
    ("sub_constant_lhs", [helper.make_node("Sub", ["c", "x"], ["y"])], {"x": [2, 3]}, {"c": w(3)}, ["nn.sub"], 17),
    ("mul_two_inputs", [helper.make_node("Mul", ["x", "z"], ["y"])], {"x": [1, 4, 3, 3], "z": [1, 4, 1, 1]}, {}, ["nn.mul"], 17),
    ("div_scalar", [helper.make_node("Div", ["x", "c"], ["y"])], {"x": [2, 3]}, {"c": np.float32(4.0)}, ["nn.div"], 17),
    ("relu", [helper.make_node("Relu", ["x"], ["y"])], {"x": [2, 5]}, {}, ["nn.relu"], 17),
    ("sigmoid", [helper.make_node("Sigmoid", ["x"], ["y"])], {"x": [2, 5]}, {}, ["nn.sigmoid"], 17),
    ("hard_sigmoid_default", [helper.make_node("HardSigmoid", ["x"], ["y"])], {"x": [2, 5]}, {}, ["nn.hard_sigmoid"], 17),
    ("hard_sigmoid_custom", [helper.make_node("HardSigmoid", ["x"], ["y"], alpha=0.3, beta=0.4)], {"x": [2, 5]}, {}, ["nn.hard_sigmoid"], 17),
    ("hard_swish", [helper.make_node("HardSwish", ["x"], ["y"])], {"x": [2, 5]}, {}, ["nn.hard_swish"], 17),
    ("tanh", [helper.make_node("Tanh", ["x"], ["y"])], {"x": [2, 5]}, {}, ["nn.tanh"], 17),
    ("clip_both", [helper.make_node("Clip", ["x", "lo", "hi"], ["y"])], {"x": [2, 5]},
     {"lo": np.float32(-0.5), "hi": np.float32(0.7)}, ["nn.clip"], 13),
    ("clip_max_only", [helper.make_node("Clip", ["x", "", "hi"], ["y"])], {"x": [2, 5]}, {"hi": np.float32(0.2)}, ["nn.clip"], 11),
    ("clip_open", [helper.make_node("Clip", ["x"], ["y"])], {"x": [2, 5]}, {}, ["nn.clip"], 17),
    ("clip_min_is_graph_input", [helper.make_node("Clip", ["x", "lo"], ["y"])], {"x": [2, 5], "lo": []}, {}, ["nn.clip"], 13),
    ("clip_bounds_are_graph_inputs", [helper.make_node("Clip", ["x", "lo", "hi"], ["y"])], {"x": [3, 4], "lo": [], "hi": []},
     {}, ["nn.clip"], 13),
    # (not Relu: onnxruntime's Relu+Clip fusion wrongly fires on a Relu feeding the bound)
    ("clip_computed_max_and_constant_min", [helper.make_node("Sigmoid", ["m"], ["hi"]), helper.make_node("Clip", ["x", "lo", "hi"], ["y"])],
     {"x": [2, 5], "m": []}, {"lo": np.float32(-0.25)}, ["nn.sigmoid", "nn.clip"], 13),
    ("conv_transpose_stride2_k2_bias", [helper.make_node("ConvTranspose", ["x", "w", "b"], ["y"], strides=[2, 2])],
     {"x": [1, 3, 5, 4]}, {"w": w(3, 4, 2, 2), "b": w(4)}, ["nn.conv_transpose2d"], 13),
    ("conv_transpose_k3_pads_output_padding", [helper.make_node("ConvTranspose", ["x", "w", "b"], ["y"], strides=[2, 2],
                                                                pads=[1, 1, 1, 1], output_padding=[1, 1])],
     {"x": [1, 3, 5, 5]}, {"w": w(3, 2, 3, 3), "b": w(2)}, ["nn.conv_transpose2d"], 17),
    ("conv_transpose_k4_pad1", [helper.make_node("ConvTranspose", ["x", "w"], ["y"], strides=[2, 2], pads=[1, 1, 1, 1])],
     {"x": [1, 2, 4, 6]}, {"w": w(2, 3, 4, 4)}, ["nn.conv_transpose2d"], 17),
    ("conv_transpose_depthwise", [helper.make_node("ConvTranspose", ["x", "w", "b"], ["y"], strides=[2, 2], group=4,
                                                   pads=[1, 1, 1, 1], output_padding=[1, 1])],
     {"x": [1, 4, 5, 5]}, {"w": w(4, 1, 3, 3), "b": w(4)}, ["nn.conv_transpose2d"], 17),
    ("conv_transpose_groups_dilations", [helper.make_node("ConvTranspose", ["x", "w"], ["y"], strides=[3, 2], group=2,
                                                          dilations=[2, 1], pads=[0, 1, 2, 0])],
     {"x": [1, 4, 3, 4]}, {"w": w(4, 3, 3, 2)}, ["nn.conv_transpose2d"], 17),
    ("conv_transpose_same_lower", [helper.make_node("ConvTranspose", ["x", "w"], ["y"], strides=[2, 2], auto_pad="SAME_LOWER")],
     {"x": [1, 2, 4, 5]}, {"w": w(2, 2, 3, 3)}, ["nn.conv_transpose2d"], 17),
    ("conv_transpose_output_shape", [helper.make_node("ConvTranspose", ["x", "w"], ["y"], strides=[2, 2], output_shape=[9, 10])],
     {"x": [1, 2, 5, 5]}, {"w": w(2, 3, 3, 3)}, ["nn.conv_transpose2d"], 17),
    ("max_pool_pads_ceil", [helper.make_node("MaxPool", ["x"], ["y"], kernel_shape=[3, 3], strides=[2, 2], pads=[1, 1, 1, 1], ceil_mode=1)],
     {"x": [1, 2, 8, 8]}, {}, ["nn.max_pool"], 17),
    ("max_pool_dilations", [helper.make_node("MaxPool", ["x"], ["y"], kernel_shape=[2, 2], dilations=[2, 2])],
     {"x": [1, 2, 7, 7]}, {}, ["nn.max_pool"], 17),
    ("max_pool_same_upper", [helper.make_node("MaxPool", ["x"], ["y"], kernel_shape=[3, 3], strides=[2, 2], auto_pad="SAME_UPPER")],
     {"x": [1, 2, 7, 8]}, {}, ["nn.max_pool"], 17),
    ("average_pool_count_pad", [helper.make_node("AveragePool", ["x"], ["y"], kernel_shape=[3, 3], pads=[1, 1, 1, 1], count_include_pad=1)],
     {"x": [1, 2, 6, 6]}, {}, ["nn.average_pool"], 17),
    ("average_pool_exclude_pad_ceil", [helper.make_node("AveragePool", ["x"], ["y"], kernel_shape=[3, 3], strides=[2, 2], pads=[1, 1, 1, 1], ceil_mode=1)],
     {"x": [1, 2, 8, 8]}, {}, ["nn.average_pool"], 17),
    ("average_pool_same_lower", [helper.make_node("AveragePool", ["x"], ["y"], kernel_shape=[2, 2], auto_pad="SAME_LOWER")],
     {"x": [1, 2, 5, 5]}, {}, ["nn.average_pool"], 17),
    ("global_average_pool", [helper.make_node("GlobalAveragePool", ["x"], ["y"])], {"x": [1, 3, 5, 4]}, {}, ["nn.global_average_pool"], 17),
    ("reduce_mean_spatial", [helper.make_node("ReduceMean", ["x"], ["y"], axes=[-2, 3])], {"x": [1, 3, 5, 4]}, {},
     ["nn.global_average_pool"], 11),
    ("reduce_mean_axes_input", [helper.make_node("ReduceMean", ["x", "axes"], ["y"])], {"x": [1, 3, 5, 4]},
     {"axes": np.array([2, 3], dtype=np.int64)}, ["nn.global_average_pool"], 18),
    ("batch_norm", [helper.make_node("BatchNormalization", ["x", "s", "b", "m", "v"], ["y"], epsilon=1e-3)],
     {"x": [1, 3, 4, 4]}, {"s": w(3), "b": w(3), "m": w(3), "v": np.abs(w(3)) + 0.1}, ["nn.batch_norm"], 15),
    ("reshape_zero_and_minus_one", [helper.make_node("Reshape", ["x", "shape"], ["y"])], {"x": [2, 3, 4]},
     {"shape": np.array([0, -1], dtype=np.int64)}, ["nn.reshape"], 17),
    ("flatten_negative_axis", [helper.make_node("Flatten", ["x"], ["y"], axis=-2)], {"x": [2, 3, 4, 5]}, {}, ["nn.flatten"], 17),
    ("transpose_default_perm", [helper.make_node("Transpose", ["x"], ["y"])], {"x": [2, 3, 4]}, {}, ["nn.transpose"], 17),
    ("transpose_perm", [helper.make_node("Transpose", ["x"], ["y"], perm=[0, 2, 3, 1])], {"x": [1, 2, 3, 4]}, {}, ["nn.transpose"], 17),
    ("concat_with_constant", [helper.make_node("Concat", ["x", "c", "z"], ["y"], axis=1)], {"x": [1, 2, 3], "z": [1, 1, 3]},
     {"c": w(1, 4, 3)}, ["nn.concat"], 17),
    ("softmax_opset13_axis", [helper.make_node("Softmax", ["x"], ["y"], axis=1)], {"x": [2, 3, 4]}, {}, ["nn.softmax"], 13),
    ("softmax_opset11_coerced", [helper.make_node("Softmax", ["x"], ["y"], axis=1)], {"x": [2, 3, 4]}, {},
     ["nn.flatten", "nn.softmax", "nn.reshape"], 11),
    ("softmax_opset11_last_axis", [helper.make_node("Softmax", ["x"], ["y"], axis=-1)], {"x": [2, 3, 4]}, {}, ["nn.softmax"], 11),
    ("squeeze_axes_input", [helper.make_node("Squeeze", ["x", "axes"], ["y"])], {"x": [1, 3, 1, 4]},
     {"axes": np.array([0, -2], dtype=np.int64)}, ["nn.reshape"], 17),
    ("squeeze_opset11_attribute", [helper.make_node("Squeeze", ["x"], ["y"], axes=[2])], {"x": [1, 3, 1, 4]}, {}, ["nn.reshape"], 11),
    ("unsqueeze", [helper.make_node("Unsqueeze", ["x", "axes"], ["y"])], {"x": [3, 4]},
     {"axes": np.array([0, 3], dtype=np.int64)}, ["nn.reshape"], 17),
]


@pytest.mark.parametrize("case", OP_CASES, ids=[c[0] for c in OP_CASES])
@pytest.mark.float_sums
def test_op_imports_and_matches_onnxruntime(case):
    _, nodes, inputs, initializers, expect_ops, opset = case
    check_against_onnxruntime(make_model(nodes, inputs, ["y"], initializers, opset), expect_ops)


def test_auto_pad_becomes_explicit_pads():
    model = make_model(
        [helper.make_node("Conv", ["x", "w"], ["y"], auto_pad="SAME_LOWER", strides=[2, 2])],
        {"x": [1, 1, 8, 7]}, ["y"], {"w": w(1, 1, 4, 4)},
    )
    conv = next(op for op in xnpu.import_onnx(model).walk() if isinstance(op, nn.Conv2dOp))
    # H: out 4, needs 3*2+4-8 = 2 -> 1/1; W: out 4, needs 3*2+4-7 = 3 -> lower gets the extra: 2/1
    assert nn.ints(conv.pads) == (1, 2, 1, 1)


def test_hard_sigmoid_defaults_and_clip_bounds_in_ir():
    model = make_model(
        [helper.make_node("HardSigmoid", ["x"], ["h"]), helper.make_node("Clip", ["h", "", "hi"], ["y"])],
        {"x": [2, 2]}, ["y"], {"hi": np.float32(0.75)},
    )
    module = xnpu.import_onnx(model)
    hard_sigmoid = next(op for op in module.walk() if isinstance(op, nn.HardSigmoidOp))
    clip = next(op for op in module.walk() if isinstance(op, nn.ClipOp))
    assert hard_sigmoid.alpha.value.data == pytest.approx(0.2)
    assert hard_sigmoid.beta.value.data == pytest.approx(0.5)
    assert clip.min is None and clip.max.value.data == 0.75
    # the scalar bound is an attribute, not a constant op
    assert "nn.constant" not in op_names(module)


def test_unnamed_nodes_get_op_type_and_index_locations():
    model = make_model(
        [helper.make_node("Relu", ["x"], ["a"]), helper.make_node("Sigmoid", ["a"], ["y"], name="named")],
        {"x": [1, 4]}, ["y"],
    )
    text = xnpu.print_ir(xnpu.import_onnx(model))
    assert 'nn.relu %x : tensor<1x4xf32> -> tensor<1x4xf32> loc("Relu_0")' in text
    assert 'loc("named")' in text


@pytest.mark.float_sums
def test_constant_identity_and_dropout_are_removed():
    value = numpy_helper.from_array(np.array([1.0, 2.0, 3.0], dtype=np.float32), "v")
    model = make_model(
        [
            helper.make_node("Constant", [], ["c"], value=value, name="const"),
            helper.make_node("Identity", ["x"], ["i"], name="ident"),
            helper.make_node("Dropout", ["i"], ["d"], name="drop"),
            helper.make_node("Add", ["d", "c"], ["y"], name="add"),
        ],
        {"x": [2, 3]}, ["y"], opset=13,
    )
    module = xnpu.import_onnx(model)
    assert op_names(module) == ["nn.constant", "nn.add"]
    text = xnpu.print_ir(module)
    assert 'loc("ident")' not in text and 'loc("drop")' not in text
    # the folded Constant keeps its node's name as the constant's location
    assert 'dense<[1.000000e+00, 2.000000e+00, 3.000000e+00]> : tensor<3xf32> loc("const")' in text
    x = RNG.standard_normal((2, 3)).astype(np.float32)
    np.testing.assert_array_equal(xnpu.run(module, x)["y"], x + np.float32([1, 2, 3]))


@pytest.mark.float_sums
def test_identity_output_of_graph_input_is_forwarded():
    model = make_model([helper.make_node("Identity", ["x"], ["y"])], {"x": [2]}, ["y"])
    module = xnpu.import_onnx(model)
    assert op_names(module) == []
    np.testing.assert_array_equal(xnpu.run(module, np.float32([1, 2]))["y"], [1, 2])


def test_node_names_are_locations_and_io_names_are_attributes():
    model = make_model(
        [
            helper.make_node("Conv", ["input", "w"], ["c"], name="conv1", pads=[1, 1, 1, 1]),
            helper.make_node("Relu", ["c"], ["r"], name="relu1"),
            helper.make_node("Flatten", ["r"], ["logits"], name="flat"),
        ],
        {"input": [1, 1, 4, 4]}, ["logits"], {"w": w(2, 1, 3, 3)},
    )
    module = xnpu.import_onnx(model)
    text = xnpu.print_ir(module)
    for name in ("conv1", "relu1", "flat", "w"):
        assert f'loc("{name}")' in text
    assert '{nn.name = "input"}' in text and '{nn.name = "logits"}' in text
    inputs, outputs = xnpu.signature(module)
    assert [s.name for s in inputs] == ["input"] and [s.name for s in outputs] == ["logits"]
    # locations survive a round trip through text
    again = xnpu.parse_ir(text)
    assert xnpu.print_ir(again) == text


def test_initializer_listed_as_graph_input_is_not_a_function_input():
    model = make_model([helper.make_node("Add", ["x", "b"], ["y"])], {"x": [2], "b": [2]}, ["y"], {"b": w(2)})
    inputs, _ = xnpu.signature(xnpu.import_onnx(model))
    assert [s.name for s in inputs] == ["x"]


def test_import_from_path_and_model_proto_agree(tmp_path):
    model = make_model([helper.make_node("Relu", ["x"], ["y"], name="r")], {"x": [3]}, ["y"])
    path = tmp_path / "m.onnx"
    onnx.save(model, path)
    assert xnpu.print_ir(xnpu.import_onnx(path)) == xnpu.print_ir(xnpu.import_onnx(model))
    assert xnpu.print_ir(xnpu.import_onnx(str(path))) == xnpu.print_ir(xnpu.import_onnx(model))


# --------------------------------------------------------------------------------------
# Errors: one line, naming the node and the op


def import_error(model_or_path) -> str:
    with pytest.raises(XnpuError) as info:
        xnpu.import_onnx(model_or_path)
    message = str(info.value)
    assert "\n" not in message
    return message


def host_op(model) -> nn.OnnxOp:
    """The one nn.onnx op a model imports to (a node the nn dialect cannot express)."""
    ops = [op for op in xnpu.import_onnx(model).walk() if isinstance(op, nn.OnnxOp)]
    assert len(ops) == 1
    return ops[0]


@pytest.mark.float_sums
def test_an_op_the_nn_dialect_lacks_is_kept_for_onnxruntime_named_by_its_node():
    model = make_model(
        [helper.make_node("Relu", ["x"], ["a"]), helper.make_node("Erf", ["a"], ["y"], name="act")],
        {"x": [2]}, ["y"],
    )
    module = check_against_onnxruntime(model, ["nn.relu", "nn.onnx"])
    op = next(op for op in module.walk() if isinstance(op, nn.OnnxOp))
    assert (op.op_type.data, op.reason.data, str(op.location)) == ("Erf", "ONNX op 'Erf' has no nn equivalent", 'loc("act")')


def test_an_unnamed_node_kept_for_onnxruntime_uses_a_synthesized_name():
    model = make_model([helper.make_node("Relu", ["x"], ["a"]), helper.make_node("Erf", ["a"], ["y"])], {"x": [2]}, ["y"])
    assert str(host_op(model).location) == 'loc("Erf_1")'


@pytest.mark.parametrize("node, reason", [
    (helper.make_node("MaxPool", ["x"], ["y"], name="pool", kernel_shape=[2, 2], storage_order=1),
     "ONNX MaxPool: unsupported attribute value storage_order=1 (column-major indices)"),
    (helper.make_node("MaxPool", ["x"], ["y", "idx"], name="pool", kernel_shape=[2, 2]),
     "ONNX MaxPool: the Indices output is not supported"),
    (helper.make_node("ReduceMean", ["x"], ["y"], name="mean", axes=[1]),
     "ONNX ReduceMean: only the mean over axes [2, 3] of an NCHW map, keeping them, is a global average pool "
     "(axes [1] of rank 4)"),
])
@pytest.mark.float_sums
def test_a_known_op_in_a_form_its_nn_op_lacks_is_kept_for_onnxruntime_with_the_reason(node, reason):
    model = make_model([node], {"x": [1, 1, 4, 4]}, ["y"])
    check_against_onnxruntime(model, ["nn.onnx"])
    assert host_op(model).reason.data == reason


def test_a_node_onnxruntime_cannot_load_is_one_error_naming_it():
    model = make_model([helper.make_node("Frobnicate", ["x"], ["y"], name="f")], {"x": [2]}, ["y"], output_shapes={"y": [2]})
    message = import_error(model)
    assert message.startswith("ONNX node 'f' (Frobnicate): onnxruntime cannot load it: ")


def test_unknown_attribute_is_rejected():
    model = make_model([helper.make_node("Conv", ["x", "w"], ["y"], name="c", foo=3)], {"x": [1, 1, 3, 3]}, ["y"],
                       {"w": w(1, 1, 1, 1)})
    # strict ONNX shape inference may reject it first; either way the error is one line
    message = import_error(model)
    assert "foo" in message or "shape inference" in message


@pytest.mark.float_sums
def test_a_reshape_to_a_shape_the_model_computes_is_kept_for_onnxruntime():
    model = make_model(
        [helper.make_node("Reshape", ["x", "s"], ["y"], name="rs")], {"x": [2, 3]}, ["y"], output_shapes={"y": [6]},
    )
    model.graph.input.append(helper.make_tensor_value_info("s", TensorProto.INT64, [1]))
    module = xnpu.import_onnx(model)
    op = host_op(model)
    assert "shape 's' must be a constant" in op.reason.data and str(op.inputs[1].type) == "tensor<1xsi64>"
    np.testing.assert_array_equal(xnpu.run(module, {"x": np.ones((2, 3), np.float32), "s": np.array([6])})["y"], np.ones(6))


def test_dynamic_input_shape_names_the_tensor_and_the_flag():
    model = make_model([helper.make_node("Relu", ["x"], ["y"], name="r")], {"x": [1, "C"]}, ["y"])
    message = import_error(model)
    assert "graph input 'x'" in message and "dynamic shape [1, C]" in message
    assert "--input-shape x=1,<C>" in message


@pytest.mark.float_sums
def test_values_of_other_element_types_pass_between_host_ops_and_the_program_edges():
    graph = helper.make_graph(
        [helper.make_node("Relu", ["x"], ["y"], name="r")], "g",
        [helper.make_tensor_value_info("x", TensorProto.INT32, [2])],
        [helper.make_tensor_value_info("y", TensorProto.INT32, [2])],
    )
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    module = xnpu.import_onnx(model)
    assert str(host_op(model).results[0].type) == "tensor<2xsi32>"
    out = xnpu.run(module, {"x": np.array([-3, 4], np.int32)})["y"]
    assert out.dtype == np.int32 and out.tolist() == [0, 4]


@pytest.mark.float_sums
def test_a_data_dependent_output_shape_is_dynamic():
    model = make_model([helper.make_node("NonZero", ["x"], ["y"], name="nz")], {"x": [2, 3]}, ["y"])
    model.graph.output[0].type.tensor_type.elem_type = TensorProto.INT64
    module = xnpu.import_onnx(model)
    assert str(host_op(model).results[0].type) == "tensor<2x?xsi64>"
    x = np.array([[0, 1, 0], [2, 0, 3]], np.float32)
    np.testing.assert_array_equal(xnpu.run(module, x)["y"], np.array(np.nonzero(x)))


def test_opsets_before_11_are_upgraded_with_a_note():
    model = make_model([helper.make_node("Relu", ["x"], ["y"])], {"x": [2]}, ["y"], opset=9)
    with pytest.warns(XnpuNote, match=r"ONNX opset 9 is upgraded to opset 11 with onnx's version converter"):
        module = xnpu.import_onnx(model)
    assert op_names(module) == ["nn.relu"]


def test_missing_file(tmp_path):
    message = import_error(tmp_path / "absent.onnx")
    assert "absent.onnx: cannot read: No such file" in message


def test_not_an_onnx_file(tmp_path):
    path = tmp_path / "text.onnx"
    path.write_text("this is not a protobuf\n" * 10)
    message = import_error(path)
    assert "text.onnx" in message and "not an ONNX model" in message


def test_empty_file_is_not_an_onnx_model(tmp_path):
    path = tmp_path / "empty.onnx"
    path.write_bytes(b"")
    assert "not an ONNX model" in import_error(path)


# --------------------------------------------------------------------------------------
# xnpu-translate


def translate(*args, cwd):
    from test_tools import forked_tool  # a process of its own without an interpreter's start

    return forked_tool("xnpu-translate", *args, cwd=cwd)


def test_cli_imports_to_file_and_stdout(tmp_path):
    model = make_model([helper.make_node("Relu", ["x"], ["y"], name="act")], {"x": [1, 3]}, ["y"])
    onnx.save(model, tmp_path / "m.onnx")
    result = translate("--import-onnx", "m.onnx", "-o", "m.mlir", cwd=tmp_path)
    assert result.returncode == 0, result.stderr
    assert result.stdout == "" and result.stderr == ""
    text = (tmp_path / "m.mlir").read_text()
    assert 'nn.relu' in text and 'loc("act")' in text
    stdout = translate("--import-onnx", "m.onnx", cwd=tmp_path)
    assert stdout.returncode == 0 and stdout.stdout == text


@pytest.mark.parametrize("kind", ["unsupported_op", "missing_file", "not_onnx"])
def test_cli_error_is_one_line_and_writes_nothing(tmp_path, kind):
    if kind == "unsupported_op":
        onnx.save(make_model([helper.make_node("Frobnicate", ["x"], ["y"], name="t")], {"x": [2]}, ["y"],
                             output_shapes={"y": [2]}), tmp_path / "in.onnx")
    elif kind == "not_onnx":
        (tmp_path / "in.onnx").write_bytes(b"\x00\xff garbage \x13\x37" * 20)
    result = translate("--import-onnx", "in.onnx", "-o", "out.mlir", cwd=tmp_path)
    assert result.returncode == 1
    lines = result.stderr.splitlines()
    assert len(lines) == 1 and lines[0].startswith("xnpu-translate: error: ")
    assert "Traceback" not in result.stderr
    assert not (tmp_path / "out.mlir").exists()
    assert [p.name for p in tmp_path.iterdir() if p.name.startswith(".out.mlir")] == []
    if kind == "unsupported_op":
        assert "ONNX node 't' (Frobnicate): onnxruntime cannot load it" in lines[0]


def test_cli_needs_exactly_one_mode(tmp_path):
    result = translate("in.onnx", cwd=tmp_path)
    assert result.returncode != 0 and "--import-onnx" in result.stderr


@pytest.mark.float_sums
def test_bundled_example_imports():
    example = Path(__file__).resolve().parents[2] / "examples" / "tiny_cnn.onnx"
    module = xnpu.import_onnx(example)
    x = np.load(example.with_name("tiny_input.npy"))
    session = ort.InferenceSession(str(example), providers=["CPUExecutionProvider"])
    reference = np.concatenate([session.run(None, {"input": s[None]})[0] for s in x])
    np.testing.assert_allclose(xnpu.run(module, x)["logits"], reference, rtol=1e-5, atol=1e-5)


# --------------------------------------------------------------------------------------
# Resize: every coordinate transformation and rounding ONNX defines, against onnxruntime


def resize_model(attrs, factors=None, sizes=None, x_shape=(1, 2, 3, 4), opset=13, axes=None):
    """Resize by `factors` (as scales) or to `sizes`, in the input layout of `opset` (11 needs roi and scales)."""
    rank_values = len(axes) if axes is not None else 4
    scales = None if factors is None else np.array(
        factors if axes is not None else [1, 1, *factors], np.float32)
    initializers = {"roi": np.zeros(0, np.float32)}
    inputs = ["x", "roi"]
    if scales is not None:
        initializers["scales"] = scales
        inputs.append("scales")
    else:
        if opset < 13:
            initializers["scales"] = np.zeros(0, np.float32)
            inputs.append("scales")
        else:
            inputs.append("")
        initializers["sizes"] = np.array(sizes if axes is not None else [*x_shape[:2], *sizes], np.int64)
        inputs.append("sizes")
    assert rank_values == (scales.size if scales is not None else initializers["sizes"].size)
    if axes is not None:
        attrs = {**attrs, "axes": axes}
    node = helper.make_node("Resize", inputs, ["y"], name="up", **attrs)
    return make_model([node], {"x": list(x_shape)}, ["y"], initializers, opset)


def assert_matches_onnxruntime(model, expect_ops):
    module = xnpu.import_onnx(model)
    assert [n for n in op_names(module) if n != "nn.constant"] == expect_ops
    inputs = random_inputs(model)
    session = ort.InferenceSession(model.SerializeToString(), providers=["CPUExecutionProvider"])
    reference = session.run(None, inputs)[0]
    ours = xnpu.run(module, inputs)["y"]
    assert ours.shape == reference.shape
    np.testing.assert_allclose(ours, reference, rtol=0, atol=1e-4 * np.abs(reference).max())
    return module


NEAREST_COORDINATES = ["asymmetric", "half_pixel", "pytorch_half_pixel", "align_corners"]
NEAREST_MODES = ["floor", "ceil", "round_prefer_floor", "round_prefer_ceil"]


@pytest.mark.parametrize("factors", [(2, 2), (4, 4), (8, 8), (2, 3)], ids=lambda f: "x".join(map(str, f)))
@pytest.mark.parametrize("coordinates", NEAREST_COORDINATES)
@pytest.mark.parametrize("nearest_mode", NEAREST_MODES)
@pytest.mark.float_sums
def test_resize_nearest_integer_factors_match_onnxruntime(factors, coordinates, nearest_mode):
    attrs = {"mode": "nearest", "coordinate_transformation_mode": coordinates, "nearest_mode": nearest_mode}
    assert_matches_onnxruntime(resize_model(attrs, factors=factors), ["nn.resize"])


@pytest.mark.parametrize("coordinates", ["half_pixel", "pytorch_half_pixel", "align_corners"])
@pytest.mark.parametrize("factors", [(2, 2), (1, 2)], ids=lambda f: "x".join(map(str, f)))
@pytest.mark.float_sums
def test_resize_linear_x2_matches_onnxruntime(coordinates, factors):
    attrs = {"mode": "linear", "coordinate_transformation_mode": coordinates}
    assert_matches_onnxruntime(resize_model(attrs, factors=factors, x_shape=(1, 3, 5, 6)), ["nn.resize"])


@pytest.mark.parametrize("opset", [11, 13, 19])
@pytest.mark.float_sums
def test_resize_sizes_and_opset_input_layouts(opset):
    attrs = {"mode": "nearest", "coordinate_transformation_mode": "asymmetric", "nearest_mode": "floor"}
    module = assert_matches_onnxruntime(resize_model(attrs, sizes=[6, 16], opset=opset), ["nn.resize"])
    resize = next(op for op in module.walk() if isinstance(op, nn.ResizeOp))
    assert resize.factors == (2, 4)


@pytest.mark.float_sums
def test_resize_axes_and_defaults():
    # opset 19 axes: scales for H and W only; the defaults are half_pixel and round_prefer_floor
    module = assert_matches_onnxruntime(resize_model({}, factors=[3, 2], opset=19, axes=[2, 3]), ["nn.resize"])
    resize = next(op for op in module.walk() if isinstance(op, nn.ResizeOp))
    assert (resize.mode.data, resize.coordinate_transformation_mode.data, resize.nearest_mode.data) == (
        "nearest", "half_pixel", "round_prefer_floor")


def test_resize_pytorch_half_pixel_is_imported_as_half_pixel():
    model = resize_model({"mode": "linear", "coordinate_transformation_mode": "pytorch_half_pixel"}, factors=(2, 2))
    resize = next(op for op in xnpu.import_onnx(model).walk() if isinstance(op, nn.ResizeOp))
    assert resize.coordinate_transformation_mode.data == "half_pixel" and resize.nearest_mode is None


@pytest.mark.parametrize(
    "attrs, factors, sizes, expected",
    [
        ({"mode": "cubic"}, (2, 2), None, "unsupported attribute value mode=cubic"),
        ({"mode": "linear"}, (4, 4), None, "linear resizing by [4, 4]: only factors 1 and 2"),
        ({"mode": "nearest"}, (1.5, 2), None, "scales [1.0, 1.0, 1.5, 2.0]: only upsampling by integer factors"),
        ({"mode": "nearest"}, None, [7, 8], "[1, 2, 3, 4] -> [1, 2, 7, 8] is not an upsampling by integer factors"),
        ({"mode": "nearest"}, (1, 1), None, None),
        ({"mode": "linear", "coordinate_transformation_mode": "asymmetric"}, (2, 2), None,
         "unsupported attribute value coordinate_transformation_mode=asymmetric for mode linear"),
        ({"mode": "linear", "antialias": 1}, (2, 2), None, "unsupported attribute value antialias=1"),
    ],
)
@pytest.mark.float_sums
def test_resize_outside_the_supported_forms_is_kept_for_onnxruntime_with_the_reason(attrs, factors, sizes, expected):
    model = resize_model(attrs, factors=factors, sizes=sizes, opset=19)
    if expected is None:  # a factor of 1 is an identity resize, and fine
        assert_matches_onnxruntime(model, ["nn.resize"])
        return
    assert_matches_onnxruntime(model, ["nn.onnx"])
    reason = host_op(model).reason.data
    assert reason.startswith("ONNX Resize: ") and expected in reason


def test_resize_by_scales_the_model_takes_as_an_input_is_kept_for_onnxruntime():
    model = resize_model({"mode": "nearest"}, factors=(2, 2))
    model.graph.initializer.pop()  # scales becomes a graph input
    model.graph.input.append(helper.make_tensor_value_info("scales", TensorProto.FLOAT, [4]))
    assert "scales 'scales' must be a constant" in host_op(model).reason.data


@pytest.mark.parametrize("factor", [2, 3, 4, 8])
def test_nearest_modes_that_are_pixel_replication(factor):
    """docs/onnx-import.md: asymmetric + floor and half_pixel + round_prefer_* copy input i // k at any
    factor k; asymmetric + round_prefer_floor only at x2; align_corners does not."""
    from xnpu.semantics.float_ops import nearest_source_indices

    replication = np.arange(5 * factor) // factor
    for coordinates, rounding in [("asymmetric", "floor"), ("half_pixel", "round_prefer_floor"),
                                  ("half_pixel", "round_prefer_ceil")]:
        np.testing.assert_array_equal(nearest_source_indices(5, 5 * factor, coordinates, rounding), replication)
    asymmetric_round = nearest_source_indices(5, 5 * factor, "asymmetric", "round_prefer_floor")
    assert np.array_equal(asymmetric_round, replication) == (factor == 2)
    assert not np.array_equal(nearest_source_indices(5, 5 * factor, "align_corners", "floor"), replication)


@pytest.mark.parametrize("opset", [11, 13])
@pytest.mark.parametrize("shape, axis", [((3, 5), a) for a in (-2, -1, 0, 1)] + [((2, 3, 4, 5), a) for a in (-1, 0, 1, 2, 3)])
@pytest.mark.float_sums
def test_softmax_any_axis_of_matrices_and_nchw_in_both_semantics(shape, axis, opset):
    """Opset 13 normalizes along `axis`; before, over all dimensions from `axis` on."""
    model = make_model([helper.make_node("Softmax", ["x"], ["y"], axis=axis)], {"x": list(shape)}, ["y"], opset=opset)
    coerced = opset < 13 and axis % len(shape) != len(shape) - 1
    check_against_onnxruntime(model, ["nn.flatten", "nn.softmax", "nn.reshape"] if coerced else ["nn.softmax"])
