"""The simulator's CPU per image in one process, against onnxruntime float32's, on one core each.

    .venv/bin/python bench/simulator_per_image.py [--models segnet_like ...] [--images 9] [--rounds 5] [--workers 1]

Each model is compiled (its 32 calibration images) and its binary run by `simulate` on
`--images` evaluation images in one call (the samples run through each step together), after a
first call that creates what a process creates once; onnxruntime float32 (one intra-op thread)
runs the same images one at a time. Both sides' CPU time (time.process_time) per image, the
best of `--rounds` alternating rounds. OpenBLAS runs one thread (set before numpy loads), and
`simulate` one worker, so neither side uses the second core. Unlike `xnpu-run` on 9 images
minus 1 as processes (bench/accelerator.py --sides process), no process start-up enters the
figure: it is the steadier measure of issue 21's simulator goal.

`--workers N` (N > 1) measures both sides on N cores instead: `simulate` shares the images
among N worker processes, onnxruntime runs N intra-op threads, and the figures are wall time
per image (the CPU of the simulator's workers, children included, is printed beside it); on a
machine that others keep busy, these figures say more about the load than about either side.
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


def _cpu_with_children() -> float:
    times = os.times()
    return times.user + times.system + times.children_user + times.children_system


def per_image(model, images: int, rounds: int, workers: int) -> tuple[float, float, float]:
    """(simulator, onnxruntime float32, the simulator's CPU with its workers') seconds per image."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # the note on the dynamic batch dimension, imported as 1
        binary = xnpu.compile(model.path, model.calibration, progress=False)
    samples = np.ascontiguousarray(model.evaluation[:images], dtype=np.float32)
    session = ort_session(model.path, threads=workers)
    name = session.get_inputs()[0].name
    simulate(binary, samples, workers=workers)
    session.run(None, {name: samples[:1]})
    clock = time.process_time if workers == 1 else time.perf_counter
    best_xnpu = best_ort = best_cpu = float("inf")
    for _ in range(rounds):
        start, cpu = clock(), _cpu_with_children()
        simulate(binary, samples, workers=workers)
        best_xnpu = min(best_xnpu, (clock() - start) / images)
        best_cpu = min(best_cpu, (_cpu_with_children() - cpu) / images)
        start = clock()
        for k in range(images):
            session.run(None, {name: samples[k : k + 1]})
        best_ort = min(best_ort, (clock() - start) / images)
    return best_xnpu, best_ort, best_cpu


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--models", nargs="+", default=list(IMAGENET_LIKE), choices=list(IMAGENET_LIKE))
    parser.add_argument("--images", type=int, default=9)
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--workers", type=int, default=1,
                        help="cores for each side: simulate's worker processes, onnxruntime's threads (default 1)")
    args = parser.parse_args()
    if args.workers == 1:
        print(f"load average {os.getloadavg()[0]:.2f}; CPU ms per image, best of {args.rounds}, "
              f"{args.images} images a call")
        print("| model | simulator | onnxruntime float32 | ratio |")
        print("|---|---|---|---|")
    else:
        print(f"load average {os.getloadavg()[0]:.2f}; wall ms per image on {args.workers} cores, "
              f"best of {args.rounds}, {args.images} images a call")
        print("| model | simulator | onnxruntime float32 | ratio | simulator CPU, workers included |")
        print("|---|---|---|---|---|")
    for model in bench_models(args.models):
        xnpu_s, ort_s, cpu_s = per_image(model, args.images, args.rounds, args.workers)
        row = f"| {model.name} | {xnpu_s * 1e3:.1f} | {ort_s * 1e3:.1f} | {xnpu_s / ort_s:.2f}x |"
        print(row if args.workers == 1 else f"{row} {cpu_s * 1e3:.1f} |", flush=True)


if __name__ == "__main__":
    main()
