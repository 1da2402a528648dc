"""The compile, process against process: `xnpu-compile` with calibration's float graph on
onnxruntime (the default) and on the float interpreter (`--calibration-runtime interpreter`)
against a Python process calling onnxruntime's quantize_static on the same samples
(bench/ort_process.py), alternating, the best of `--rounds` each; wall and CPU seconds (user +
sys of all the process's threads) and peak RSS. bench/accelerator.py --sides process measures
the simulator beside it.

    .venv/bin/python bench/compile_process.py [--models resnet18_like ...] [--rounds 2]
"""

from __future__ import annotations

import argparse
import os
import sys
import tempfile
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
from common import bench_models, interleaved_best, run_process, static_batch  # noqa: E402

BIN = Path(sys.executable).parent
ORT_PROCESS = Path(__file__).resolve().parent / "ort_process.py"
MODELS = ["digits_resnet", "resnet18_like", "mobilenetv2_like", "mobilenetv3_like", "segnet_like"]


def compare(model, rounds: int, workdir: Path) -> str:
    calibration = workdir / f"{model.name}.calibration.npy"
    np.save(calibration, model.calibration)
    ort_model = static_batch(model.path, workdir)

    def compile_with(runtime: str):
        return lambda: run_process([str(BIN / "xnpu-compile"), str(model.path), "-c", str(calibration), "-q",
                                    "--calibration-runtime", runtime, "-o", str(workdir / f"{model.name}.xnb")])

    best = interleaved_best({
        "onnxruntime": compile_with("onnxruntime"),
        "interpreter": compile_with("interpreter"),
        "ort": lambda: run_process([sys.executable, str(ORT_PROCESS), "quantize", str(ort_model), str(calibration),
                                    str(workdir / f"{model.name}.int8.onnx")]),
    }, rounds)
    ort = best["ort"]
    cells = [f"{model.name} ({len(model.calibration)})"]
    for side in ("interpreter", "onnxruntime"):
        measured = best[side]
        cells.append(f"{measured.seconds:.2f} ({measured.result:.2f}) / {measured.seconds / ort.seconds:.2f}x "
                     f"({measured.result / ort.result:.2f}x) / {measured.peak_rss_mb:.0f} MB")
    cells.append(f"{ort.seconds:.2f} ({ort.result:.2f}) / {ort.peak_rss_mb:.0f} MB")
    return "| " + " | ".join(cells) + " |"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--models", nargs="+", default=MODELS, choices=MODELS)
    parser.add_argument("--rounds", type=int, default=2, help="alternating rounds (best is kept)")
    args = parser.parse_args()
    print(f"load average before: {', '.join(f'{x:.1f}' for x in os.getloadavg())}")
    print("| model (samples) | xnpu-compile, interpreter: s (CPU) / ratio / RSS "
          "| xnpu-compile, onnxruntime: s (CPU) / ratio / RSS | quantize_static s (CPU) / RSS |")
    print("|---|---|---|---|")
    with tempfile.TemporaryDirectory() as workdir:
        for model in bench_models(args.models):
            print(compare(model, args.rounds, Path(workdir)), flush=True)
    print(f"load average after: {', '.join(f'{x:.1f}' for x in os.getloadavg())}")


if __name__ == "__main__":
    main()
