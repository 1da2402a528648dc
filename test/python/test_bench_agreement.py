"""Every benchmark model, imported and run by xnpu's float interpreter, agrees with onnxruntime."""

from __future__ import annotations

import warnings
from collections import Counter
from pathlib import Path

import numpy as np
import pytest

import xnpu
from xnpu.core.errors import XnpuNote
from xnpu.driver.pipeline import float_cleanup

pytestmark = pytest.mark.float_sums  # results went through float sums: `make blas-variance` reruns them

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
    ("mobilenetv3_like", "imagenet_like/mobilenetv3_like.onnx", 4),
    ("segnet_like", "imagenet_like/segnet_like.onnx", 4),
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
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", XnpuNote)  # mobilenetv3_like's dynamic batch is imported as 1
        module = xnpu.import_onnx(model_path)
    assert_matches_onnxruntime(name, module, model_path, x)


def assert_matches_onnxruntime(name: str, module, model_path: Path, x: np.ndarray) -> None:
    ours = xnpu.run(module, x)
    (output_name,) = ours
    options = ort.SessionOptions()
    options.intra_op_num_threads = 2
    session = ort.InferenceSession(str(model_path), options, providers=["CPUExecutionProvider"])
    input_name = session.get_inputs()[0].name
    reference = np.concatenate([session.run(None, {input_name: x[i : i + 1]})[0] for i in range(len(x))])
    scale = float(np.abs(reference).max())
    deviation = float(np.abs(ours[output_name] - reference).max()) / scale
    print(f"{name}: {len(x)} samples, max |xnpu - onnxruntime| / max|ref| = {deviation:.3g}")
    assert ours[output_name].shape == reference.shape
    np.testing.assert_allclose(ours[output_name], reference, rtol=1e-4, atol=1e-4 * scale)


# the ops each exporter-style model becomes: after import, and after float_cleanup
# (batch norms folded into convs, the hard-swish spellings fused)
IMPORTED_OPS = {
    "mobilenetv3_like": (
        {"nn.conv2d": 52, "nn.batch_norm": 34, "nn.mul": 21, "nn.relu": 14, "nn.hard_sigmoid": 14, "nn.add": 14,
         "nn.global_average_pool": 10, "nn.hard_swish": 7, "nn.clip": 7, "nn.div": 7, "nn.reshape": 1,
         "nn.matmul": 1, "nn.gemm": 1, "nn.softmax": 1},
        {"nn.conv2d": 52, "nn.hard_swish": 19, "nn.relu": 14, "nn.global_average_pool": 10, "nn.hard_sigmoid": 9,
         "nn.mul": 9, "nn.add": 7, "nn.reshape": 1, "nn.matmul": 1, "nn.gemm": 1, "nn.softmax": 1},
    ),
    "segnet_like": (
        {"nn.conv2d": 8, "nn.batch_norm": 8, "nn.relu": 7, "nn.resize": 2, "nn.concat": 2, "nn.conv_transpose2d": 1,
         "nn.add": 1, "nn.sigmoid": 1},
        {"nn.conv2d": 8, "nn.relu": 7, "nn.resize": 2, "nn.concat": 2, "nn.conv_transpose2d": 1, "nn.add": 1,
         "nn.sigmoid": 1},
    ),
}


@pytest.mark.parametrize("name", IMPORTED_OPS)
def test_exporter_style_models_import_and_clean_up_to_the_expected_ops(name):
    model_path = SHARED_BENCH / "imagenet_like" / f"{name}.onnx"
    if not model_path.exists():
        pytest.skip(f"benchmark model not found at {model_path} (expected ../shared/bench)")
    if name == "mobilenetv3_like":
        with pytest.warns(XnpuNote, match="dynamic batch dimension"):
            module = xnpu.import_onnx(model_path)
    else:
        module = xnpu.import_onnx(model_path)
    imported, cleaned = IMPORTED_OPS[name]
    assert op_counts(module) == imported
    float_cleanup(module)
    assert op_counts(module) == cleaned
    # the cleaned-up float graph still computes what onnxruntime does
    assert_matches_onnxruntime(f"{name} after float_cleanup", module, model_path,
                               samples(f"imagenet_like/{name}.onnx", 2))


def op_counts(module) -> dict[str, int]:
    return dict(Counter(op.name for op in module.walk() if op.name.startswith("nn.") and op.name != "nn.constant"))
