"""Small ONNX models the lowering tests share, built with onnx.helper."""

from __future__ import annotations

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper


def zoo_model() -> onnx.ModelProto:
    """One of each unit's harder cases: depthwise and grouped convs, average pooling per output
    position (count_include_pad=0), ceil-mode max pooling, a table, a concat, a clip, a gemm."""
    rng = np.random.default_rng(7)

    def weight(name, *shape):
        return numpy_helper.from_array((rng.standard_normal(shape) * 0.3).astype(np.float32), name)

    init = [
        weight("wa", 8, 3, 3, 3), weight("ba", 8), weight("wd", 8, 1, 3, 3), weight("wg", 16, 4, 1, 1),
        weight("wf", 5, 16), weight("bf", 5),
        numpy_helper.from_array(np.array(0.0, np.float32), "lo"), numpy_helper.from_array(np.array(0.4, np.float32), "hi"),
    ]
    nodes = [
        helper.make_node("Conv", ["x", "wa", "ba"], ["a"], name="conv_a", kernel_shape=[3, 3], pads=[1, 1, 1, 1]),
        helper.make_node("Relu", ["a"], ["ar"], name="relu_a"),
        helper.make_node("Conv", ["ar", "wd"], ["d"], name="dw", kernel_shape=[3, 3], pads=[1, 1, 1, 1], group=8),
        helper.make_node("AveragePool", ["d"], ["ap"], name="avg", kernel_shape=[3, 3], strides=[2, 2],
                         pads=[1, 1, 1, 1], count_include_pad=0),
        helper.make_node("MaxPool", ["ar"], ["mp"], name="max", kernel_shape=[3, 3], strides=[2, 2], ceil_mode=1),
        helper.make_node("Sigmoid", ["mp"], ["sg"], name="sigmoid"),
        helper.make_node("Concat", ["ap", "sg"], ["cat"], name="concat", axis=1),
        helper.make_node("Clip", ["cat", "lo", "hi"], ["cl"], name="clip"),
        helper.make_node("Conv", ["cl", "wg"], ["y"], name="grouped", kernel_shape=[1, 1], group=4),
        helper.make_node("GlobalAveragePool", ["y"], ["gp"], name="gap"),
        helper.make_node("Flatten", ["gp"], ["fl"], name="flatten"),
        helper.make_node("Gemm", ["fl", "wf", "bf"], ["z"], name="fc", transB=1),
    ]
    graph = helper.make_graph(
        nodes, "zoo", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 3, 40, 40])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, 16, 20, 20]),
         helper.make_tensor_value_info("z", TensorProto.FLOAT, [1, 5])], init,
    )
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
