"""Builds the bundled example: a tiny CNN in the style of the digits models, and its data.

    python examples/make_example.py        # rewrites tiny_cnn.onnx, tiny_input.npy, tiny_calib.npy

Everything is seeded, so the files are reproducible. The network covers the ops the int8
pipeline cares about: Conv, Relu, MaxPool, Clip (ReLU6), a residual Add, GlobalAveragePool,
Flatten and Gemm. Its weights are random, so its logits are numbers to compare, not classes.
"""

from pathlib import Path

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

HERE = Path(__file__).resolve().parent
SEED = 20240601


def conv_weight(rng: np.random.Generator, out_ch: int, in_ch: int, k: int) -> np.ndarray:
    # He initialization keeps activations in a realistic range through the Relus
    return (rng.standard_normal((out_ch, in_ch, k, k)) * np.sqrt(2.0 / (in_ch * k * k))).astype(np.float32)


def build_model(rng: np.random.Generator) -> onnx.ModelProto:
    weights = {
        "conv1.w": conv_weight(rng, 8, 1, 3),
        "conv1.b": (rng.standard_normal(8) * 0.1).astype(np.float32),
        "conv2.w": conv_weight(rng, 8, 8, 3),
        "conv2.b": (rng.standard_normal(8) * 0.1).astype(np.float32),
        "conv3.w": conv_weight(rng, 16, 8, 3),
        "conv3.b": (rng.standard_normal(16) * 0.1).astype(np.float32),
        "fc.w": (rng.standard_normal((10, 16)) * np.sqrt(1.0 / 16)).astype(np.float32),
        "fc.b": (rng.standard_normal(10) * 0.1).astype(np.float32),
        "relu6.min": np.array(0.0, dtype=np.float32),
        "relu6.max": np.array(6.0, dtype=np.float32),
    }
    nodes = [
        helper.make_node("Conv", ["input", "conv1.w", "conv1.b"], ["c1"], name="conv1", kernel_shape=[3, 3], pads=[1, 1, 1, 1]),
        helper.make_node("Relu", ["c1"], ["r1"], name="relu1"),
        helper.make_node("MaxPool", ["r1"], ["p1"], name="pool1", kernel_shape=[2, 2], strides=[2, 2]),
        helper.make_node("Conv", ["p1", "conv2.w", "conv2.b"], ["c2"], name="conv2", kernel_shape=[3, 3], pads=[1, 1, 1, 1]),
        helper.make_node("Clip", ["c2", "relu6.min", "relu6.max"], ["r2"], name="relu6"),
        helper.make_node("Add", ["p1", "r2"], ["s2"], name="residual"),
        helper.make_node("Conv", ["s2", "conv3.w", "conv3.b"], ["c3"], name="conv3", kernel_shape=[3, 3], strides=[2, 2], pads=[1, 1, 1, 1]),
        helper.make_node("Relu", ["c3"], ["r3"], name="relu3"),
        helper.make_node("GlobalAveragePool", ["r3"], ["g"], name="pool2"),
        helper.make_node("Flatten", ["g"], ["f"], name="flatten", axis=1),
        helper.make_node("Gemm", ["f", "fc.w", "fc.b"], ["logits"], name="fc", transB=1),
    ]
    graph = helper.make_graph(
        nodes,
        "tiny_cnn",
        [helper.make_tensor_value_info("input", TensorProto.FLOAT, [1, 1, 16, 16])],
        [helper.make_tensor_value_info("logits", TensorProto.FLOAT, [1, 10])],
        [numpy_helper.from_array(array, name) for name, array in weights.items()],
    )
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)], producer_name="xnpu-example")
    model.ir_version = 8
    onnx.checker.check_model(model, full_check=True)
    return model


def make_images(rng: np.random.Generator, count: int) -> np.ndarray:
    """Smooth random blobs in [0, 1], shaped like the digits inputs (N x 1 x 16 x 16)."""
    yy, xx = np.mgrid[0:16, 0:16].astype(np.float32)
    images = np.zeros((count, 1, 16, 16), dtype=np.float32)
    for image in images:
        for _ in range(3):
            cy, cx = rng.uniform(2, 14, size=2)
            radius = rng.uniform(1.5, 4.0)
            image[0] += np.exp(-((yy - cy) ** 2 + (xx - cx) ** 2) / (2 * radius**2))
    return np.clip(images, 0.0, 1.0).astype(np.float32)


def main() -> None:
    rng = np.random.default_rng(SEED)
    onnx.save(build_model(rng), HERE / "tiny_cnn.onnx")
    np.save(HERE / "tiny_input.npy", make_images(rng, 4))
    np.save(HERE / "tiny_calib.npy", make_images(rng, 32))
    print(f"wrote {HERE / 'tiny_cnn.onnx'}, tiny_input.npy (4 samples), tiny_calib.npy (32 samples)")


if __name__ == "__main__":
    main()
