"""The simulator's CPU per image in one process, against onnxruntime float32's, on one core each.

    .venv/bin/python bench/simulator_per_image.py [--models segnet_like ...] [--images 9] [--rounds 5]

Each model is compiled (its 32 calibration images) and its binary run by `simulate` on
`--images` evaluation images in one call (the samples run through each step together), after a
first call that creates what a process creates once; onnxruntime float32 (one intra-op thread)
runs the same images one at a time. Both sides' CPU time (time.process_time) per image, the
best of `--rounds` alternating rounds. OpenBLAS runs one thread (set before numpy loads), so
neither side uses the second core. Unlike `xnpu-run` on 9 images minus 1 as processes
(bench/accelerator.py --sides process), no process start-up enters the figure: it is the
steadier measure of issue 21's simulator goal.
"""

from __future__ import annotations

import argparse
import os
import sys
import time
import warnings
from pathlib import Path

os.environ["OPENBLAS_NUM_THREADS"] = "1"  # before numpy loads OpenBLAS

import numpy as np  # noqa: E402

sys.path.insert(0, str(Path(__file__).resolve().parent))
from common import IMAGENET_LIKE, bench_models, ort_session  # noqa: E402

import xnpu  # noqa: E402
from xnpu.backend.simulator import simulate  # noqa: E402


def per_image(model, images: int, rounds: int) -> tuple[float, float]:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # the note on the dynamic batch dimension, imported as 1
        binary = xnpu.compile(model.path, model.calibration, progress=False)
    samples = np.ascontiguousarray(model.evaluation[:images], dtype=np.float32)
    session = ort_session(model.path, threads=1)
    name = session.get_inputs()[0].name
    simulate(binary, samples)
    session.run(None, {name: samples[:1]})
    best_xnpu = best_ort = float("inf")
    for _ in range(rounds):
        start = time.process_time()
        simulate(binary, samples)
        best_xnpu = min(best_xnpu, (time.process_time() - start) / images)
        start = time.process_time()
        for k in range(images):
            session.run(None, {name: samples[k : k + 1]})
        best_ort = min(best_ort, (time.process_time() - start) / images)
    return best_xnpu, best_ort


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--models", nargs="+", default=list(IMAGENET_LIKE), choices=list(IMAGENET_LIKE))
    parser.add_argument("--images", type=int, default=9)
    parser.add_argument("--rounds", type=int, default=5)
    args = parser.parse_args()
    print(f"load average {os.getloadavg()[0]:.2f}; CPU ms per image, best of {args.rounds}, {args.images} images a call")
    print("| model | simulator | onnxruntime float32 | ratio |")
    print("|---|---|---|---|")
    for model in bench_models(args.models):
        xnpu_s, ort_s = per_image(model, args.images, args.rounds)
        print(f"| {model.name} | {xnpu_s * 1e3:.1f} | {ort_s * 1e3:.1f} | {xnpu_s / ort_s:.2f}x |", flush=True)


if __name__ == "__main__":
    main()
