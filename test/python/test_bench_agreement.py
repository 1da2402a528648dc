"""Every benchmark model, imported and run by xnpu's float interpreter, agrees with onnxruntime."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

import xnpu

ort = pytest.importorskip("onnxruntime")

SHARED_BENCH = Path(__file__).resolve().parents[2] / ".." / "shared" / "bench"
IMAGENET_MEAN = np.array([0.485, 0.456, 0.406], dtype=np.float32).reshape(1, 3, 1, 1)
IMAGENET_STD = np.array([0.229, 0.224, 0.225], dtype=np.float32).reshape(1, 3, 1, 1)

# (model, path under bench/, samples): the ImageNet-size ones are heavy, so two images each
MODELS = [
    ("digits_plain", "digits/digits_plain.onnx", 20),
    ("digits_resnet", "digits/digits_resnet.onnx", 20),
    ("digits_se", "digits/digits_se.onnx", 20),
    ("resnet18_like", "imagenet_like/resnet18_like.onnx", 2),
    ("mobilenetv2_like", "imagenet_like/mobilenetv2_like.onnx", 2),
]


def samples(path: str, count: int) -> np.ndarray:
    if path.startswith("digits/"):
        return np.load(SHARED_BENCH / "digits" / "test_x.npy")[:count].astype(np.float32)
    # evaluation images (32..63), normalized as the models expect
    raw = np.load(SHARED_BENCH / "imagenet_like" / "images_u8.npy", mmap_mode="r")[32 : 32 + count]
    return ((raw.astype(np.float32) / 255.0 - IMAGENET_MEAN) / IMAGENET_STD).astype(np.float32)


@pytest.mark.parametrize("name,path,count", MODELS, ids=[m[0] for m in MODELS])
def test_float_interpreter_matches_onnxruntime(name, path, count):
    model_path = SHARED_BENCH / path
    if not model_path.exists():
        pytest.skip(f"benchmark model not found at {model_path} (expected ../shared/bench)")
    x = samples(path, count)
    module = xnpu.import_onnx(model_path)
    ours = xnpu.run(module, x)
    (output_name,) = ours
    options = ort.SessionOptions()
    options.intra_op_num_threads = 2
    session = ort.InferenceSession(str(model_path), options, providers=["CPUExecutionProvider"])
    input_name = session.get_inputs()[0].name
    reference = np.concatenate([session.run(None, {input_name: x[i : i + 1]})[0] for i in range(count)])
    scale = float(np.abs(reference).max())
    deviation = float(np.abs(ours[output_name] - reference).max()) / scale
    print(f"{name}: {count} samples, max |xnpu - onnxruntime| / max|ref| = {deviation:.3g}")
    assert ours[output_name].shape == reference.shape
    np.testing.assert_allclose(ours[output_name], reference, rtol=1e-4, atol=1e-4 * scale)
