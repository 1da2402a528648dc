"""onnxruntime's side of bench/accelerator.py's process comparison: what a user of onnxruntime
runs, as a process of its own (imports, model load and the work, like `xnpu-compile` and
`xnpu-run` on xnpu's side).

    python bench/ort_process.py quantize MODEL.onnx CALIBRATION.npy OUT.onnx
    python bench/ort_process.py run MODEL.onnx SAMPLES.npy OUT.npz

quantize: quantize_static (QDQ, MinMax, per-channel, symmetric int8 activations and weights)
calibrated on every sample of CALIBRATION.npy (batch 1 each; MODEL's batch must be static).
run: onnxruntime float32 (2 threads), every sample of SAMPLES.npy one at a time, the outputs
saved (as `xnpu-run -o` saves them).
"""

from __future__ import annotations

import sys
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
from common import ort_quantize_static, ort_run_each, ort_session  # noqa: E402


def main(argv: list[str]) -> None:
    command, model, samples, out = argv
    x = np.load(samples)
    if command == "quantize":
        ort_quantize_static(model, x, out)
    elif command == "run":
        np.savez(out, output=ort_run_each(ort_session(model), x))
    else:
        raise SystemExit(f"ort_process.py: error: unknown command '{command}' (quantize, run)")


if __name__ == "__main__":
    main(sys.argv[1:])
