"""Compile time, simulator latency and memory against onnxruntime, on the same models and data.

    .venv/bin/python bench/accelerator.py [--models resnet18_like mobilenetv2_like] [--rounds 3]

One run measures, side by side, for every model (default: all seven bench models), and writes
bench/results/accelerator.md (--output):
- compile: `xnpu.compile` (ONNX -> calibration -> fixed -> isa -> binary; digits: the 200
  calibration samples, imagenet_like: the 32 calibration images) vs onnxruntime
  `quantize_static` (QDQ, MinMax, per-channel, symmetric int8) on the same samples;
- latency of one sample: the binary on the bit-exact simulator vs onnxruntime float32 and
  onnxruntime's int8 model (2 threads each); the simulator also with one OpenBLAS thread
  (OPENBLAS_NUM_THREADS=1): on a machine whose cores other processes keep busy, OpenBLAS's
  waiting threads spin against the main one and two threads are several times slower;
- the peak RSS of each step's process: every step runs in a fresh process, xnpu's and
  onnxruntime's alike, and the rounds alternate between them (best time of the rounds);
- that the binary is bit-identical to the fixed IR, on evaluation samples;
- where the simulator's time goes, per instruction class (wall time of one sample);
- process against process (what users run, imports and start-up included): the
  `xnpu-compile` process against a Python process calling onnxruntime's quantize_static on
  the same samples (bench/ort_process.py: per-channel, symmetric activations, the model's
  batch fixed to 1 beforehand), and per image `xnpu-run` of 9 samples minus `xnpu-run` of 1,
  divided by 8, against the same for an onnxruntime float32 process; what a one-sample
  process costs beyond its sample; wall and CPU time (user + sys) and peak RSS of each
  process (--sides process runs only these). `xnpu-run` of 9 shares the samples among a
  worker process per core where they pay for it (backend/simulator.py `workers_worth`), as
  onnxruntime's kernels share an image among its threads: its CPU time includes its workers',
  its peak RSS is the largest of its processes' (a worker shares the parent's pages until it
  writes them), not their sum.
Ratios are xnpu / onnxruntime; a ratio below 1 means xnpu is faster.
"""

from __future__ import annotations

import argparse
import collections
import os
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
from common import (  # noqa: E402
    bench_models,
    best_time,
    import_packages,
    interleaved_best,
    measure_in_child,
    ort_quantize,
    ort_session,
    run_conditions,
    run_process,
    static_batch,
    table,
)

ALL_MODELS = ["digits_plain", "digits_resnet", "digits_se", "resnet18_like", "mobilenetv2_like", "mobilenetv3_like",
              "segnet_like"]
RESULTS = Path(__file__).resolve().parent / "results" / "accelerator.md"


# Each step imports its libraries before its clock starts (as a user's process has them
# loaded once), and returns (seconds, result).


def ort_quantize_step(model_path: str, calibration: np.ndarray, out: str) -> tuple[float, None]:
    return ort_quantize(model_path, calibration, out), None


def xnpu_compile(model_path: str, calibration: np.ndarray, target: str) -> tuple[float, bytes]:
    import xnpu

    import_packages("xnpu.frontend", "xnpu.transforms", "xnpu.lowering", "xnpu.target")  # the libraries, not the work
    start = time.perf_counter()
    binary = xnpu.compile(model_path, calibration, target=target, progress=False).to_bytes()
    return time.perf_counter() - start, binary


def _ort_inference(model_path: str, x: np.ndarray):
    session = ort_session(model_path)
    session.run(None, {"input": x})  # first run outside the clock
    return lambda: session.run(None, {"input": x})


def _xnpu_inference(binary_path: str, x: np.ndarray):
    from xnpu.backend.binary import Binary
    from xnpu.backend.simulator import run_binary

    binary = Binary.from_bytes(Path(binary_path).read_bytes())
    run_binary(binary, {"input": x})  # the first run loads the constants and prepares the weights
    return lambda: run_binary(binary, {"input": x})


def ort_latency(model_path: str, x: np.ndarray, repeat: int) -> tuple[float, None]:
    return best_time(_ort_inference(model_path, x), repeat), None


def xnpu_latency(binary_path: str, x: np.ndarray, repeat: int) -> tuple[float, None]:
    return best_time(_xnpu_inference(binary_path, x), repeat), None


def simulator_profile(binary, x: np.ndarray, runs: int) -> dict[str, tuple[int, float]]:
    """Wall time of one sample per instruction class: {mnemonic: (count, best seconds)}."""
    from xnpu.backend.simulator import machine_for, run_binary

    machine = machine_for(binary)
    run_binary(binary, {"input": x})
    units = dict(machine._units)
    best: dict[str, float] = {}
    counts: collections.Counter = collections.Counter()
    try:
        for _ in range(runs):
            spent: collections.Counter = collections.Counter()
            counts.clear()
            for name, unit in units.items():
                def timed(instruction, unit=unit, name=name):
                    start = time.perf_counter()
                    unit(instruction)
                    spent[name] += time.perf_counter() - start
                    counts[name] += 1
                machine._units[name] = timed
            start = time.perf_counter()
            run_binary(binary, {"input": x})
            spent["(total run_binary)"] = time.perf_counter() - start
            for name, seconds in spent.items():
                best[name] = min(best.get(name, float("inf")), seconds)
    finally:
        machine._units.update(units)
    return {name: (counts.get(name, 1), seconds) for name, seconds in best.items()}


def bench_model(model, target: str, rounds: int, runs: int, eval_count: int, workdir: Path) -> tuple[dict, str]:
    import xnpu
    from xnpu.driver.pipeline import lower_to_isa
    from xnpu.backend.emit import emit_binary
    from xnpu.backend.simulator import run_binary

    ort_int8 = str(workdir / f"{model.name}.int8.onnx")
    compiled = interleaved_best({
        "xnpu": lambda: _timed(measure_in_child(xnpu_compile, str(model.path), model.calibration, target)),
        "ort": lambda: _timed(measure_in_child(ort_quantize_step, str(model.path), model.calibration, ort_int8)),
    }, rounds)
    binary_path = workdir / f"{model.name}.xnb"
    binary_path.write_bytes(compiled["xnpu"].result)
    one = model.evaluation[:1]
    latency = interleaved_best({
        "xnpu": lambda: _timed(measure_in_child(xnpu_latency, str(binary_path), one, runs)),
        "xnpu 1t": lambda: _timed(measure_in_child(xnpu_latency, str(binary_path), one, runs,
                                                   env={"OPENBLAS_NUM_THREADS": "1"})),
        "fp32": lambda: _timed(measure_in_child(ort_latency, str(model.path), one, runs * 3)),
        "int8": lambda: _timed(measure_in_child(ort_latency, ort_int8, one, runs * 3)),
    }, rounds)

    fixed_module = xnpu.compile(model.path, model.calibration, target=target, stop_at="fixed", progress=False)
    binary = emit_binary(lower_to_isa(fixed_module.clone(), target))
    x = model.evaluation[:eval_count]
    fixed_out = xnpu.run(fixed_module, x)
    binary_out = run_binary(binary, {"input": x})
    bit_exact = all(np.array_equal(binary_out[name], fixed_out[name]) for name in fixed_out)
    profile = simulator_profile(binary, one, runs)

    row = {
        "model": model.name,
        "calib": len(model.calibration),
        "compile s": compiled["xnpu"].seconds,
        "ort quantize s": compiled["ort"].seconds,
        "compile ratio": compiled["xnpu"].seconds / compiled["ort"].seconds,
        "compile MB": compiled["xnpu"].peak_rss_mb,
        "ort quantize MB": compiled["ort"].peak_rss_mb,
        "sim ms": latency["xnpu"].seconds * 1e3,
        "ort fp32 ms": latency["fp32"].seconds * 1e3,
        "sim/fp32": latency["xnpu"].seconds / latency["fp32"].seconds,
        "sim 1 BLAS thread ms": latency["xnpu 1t"].seconds * 1e3,
        "sim 1t/fp32": latency["xnpu 1t"].seconds / latency["fp32"].seconds,
        "ort int8 ms": latency["int8"].seconds * 1e3,
        "sim MB": latency["xnpu"].peak_rss_mb,
        "ort fp32 MB": latency["fp32"].peak_rss_mb,
        f"bit-exact ({len(x)})": bit_exact,
    }
    total = profile.pop("(total run_binary)")[1]
    lines = [f"{model.name}: one sample on the simulator, {total * 1e3:.1f} ms (best of {runs})", "",
             "| instruction | count | ms | share |", "|---|---|---|---|"]
    for name, (count, seconds) in sorted(profile.items(), key=lambda item: -item[1][1]):
        lines.append(f"| {name} | {count} | {seconds * 1e3:.2f} | {100 * seconds / total:.1f}% |")
    lines.append(f"| (outside the units: quantize, io, dispatch) | | {(total - sum(s for _, s in profile.values())) * 1e3:.2f} | |")
    return row, "\n".join(lines)


BIN = Path(sys.executable).parent
ORT_PROCESS = Path(__file__).resolve().parent / "ort_process.py"


def process_comparison(model, target: str, rounds: int, workdir: Path) -> dict:
    """The tools as processes, both sides alternating, the best wall time of `rounds` each."""
    calibration, one, nine = (workdir / f"{model.name}.{name}.npy" for name in ("calibration", "one", "nine"))
    np.save(calibration, model.calibration)
    np.save(one, model.evaluation[:1])
    np.save(nine, model.evaluation[:9])
    binary = workdir / f"{model.name}.process.xnb"
    ort_model = static_batch(model.path, workdir)
    compiled = interleaved_best({
        "xnpu": lambda: run_process([str(BIN / "xnpu-compile"), str(model.path), "-c", str(calibration),
                                     "-t", target, "-q", "-o", str(binary)]),
        "ort": lambda: run_process([sys.executable, str(ORT_PROCESS), "quantize", str(ort_model), str(calibration),
                                    str(workdir / f"{model.name}.process.int8.onnx")]),
    }, rounds)
    out = str(workdir / "outputs.npz")
    one_thread = {"OPENBLAS_NUM_THREADS": "1"}  # on a busy machine OpenBLAS's waiting thread spins
    runs = interleaved_best({
        f"{side} {count}": (lambda side=side, samples=samples: run_process(
            [str(BIN / "xnpu-run"), str(binary), "-i", str(samples), "-o", out] if side.startswith("xnpu") else
            [sys.executable, str(ORT_PROCESS), "run", str(ort_model), str(samples), out],
            one_thread if side == "xnpu 1t" else None))
        for count, samples in ((1, one), (9, nine)) for side in ("xnpu", "ort", "xnpu 1t")
    }, rounds)
    per_image = {side: (runs[f"{side} 9"].seconds - runs[f"{side} 1"].seconds) / 8
                 for side in ("xnpu", "ort", "xnpu 1t")}
    return {
        "model": model.name,
        "calib": len(model.calibration),
        "xnpu-compile s": compiled["xnpu"].seconds,
        "ort quantize s": compiled["ort"].seconds,
        "compile ratio": compiled["xnpu"].seconds / compiled["ort"].seconds,
        "compile CPU s": compiled["xnpu"].result,
        "ort CPU s": compiled["ort"].result,
        "compile MB": compiled["xnpu"].peak_rss_mb,
        "ort quantize MB": compiled["ort"].peak_rss_mb,
        "xnpu-run ms/image": per_image["xnpu"] * 1e3,
        "ort fp32 ms/image": per_image["ort"] * 1e3,
        "run ratio": per_image["xnpu"] / per_image["ort"],
        "xnpu-run CPU ms/image": (runs["xnpu 9"].result - runs["xnpu 1"].result) / 8 * 1e3,
        "ort CPU ms/image": (runs["ort 9"].result - runs["ort 1"].result) / 8 * 1e3,
        "xnpu-run 1 BLAS thread ms/image": per_image["xnpu 1t"] * 1e3,
        "1t ratio": per_image["xnpu 1t"] / per_image["ort"],
        "xnpu-run 1 image s": runs["xnpu 1"].seconds,
        "beyond the image s": runs["xnpu 1"].seconds - per_image["xnpu"],
        "beyond, 1 BLAS thread s": runs["xnpu 1t 1"].seconds - per_image["xnpu 1t"],
        "ort 1 image s": runs["ort 1"].seconds,
        "ort beyond s": runs["ort 1"].seconds - per_image["ort"],
        "xnpu-run MB (9)": runs["xnpu 9"].peak_rss_mb,
        "ort fp32 MB (9)": runs["ort 9"].peak_rss_mb,
    }


def _timed(measured):
    """The step's own clock (its imports and set-up excluded), the child's RSS and result."""
    seconds, result = measured.result
    return type(measured)(seconds, measured.peak_rss_mb, result)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--models", nargs="+", default=ALL_MODELS, choices=ALL_MODELS)
    parser.add_argument("--target", default="xnpu_default")
    parser.add_argument("--rounds", type=int, default=3, help="alternating rounds per comparison (best is kept)")
    parser.add_argument("--runs", type=int, default=5, help="inferences per latency measurement (best is kept)")
    parser.add_argument("--eval", type=int, default=8, help="evaluation samples for the bit-exactness check")
    parser.add_argument("--output", type=Path, default=RESULTS, help="markdown file for the tables")
    parser.add_argument("--sides", choices=("both", "process", "in-process"), default="both",
                        help="the tools as processes, the in-process steps, or both (default)")
    args = parser.parse_args()
    started = time.perf_counter()
    rows, profiles, process_rows = [], [], []
    with tempfile.TemporaryDirectory(prefix="xnpu-bench-") as tmp:
        for model in bench_models(args.models):
            print(f"{model.name} ...", file=sys.stderr)
            if args.sides != "in-process":
                process_rows.append(process_comparison(model, args.target, args.rounds, Path(tmp)))
            if args.sides != "process":
                row, profile = bench_model(model, args.target, args.rounds, args.runs, args.eval, Path(tmp))
                rows.append(row)
                profiles.append(profile)
    command = " ".join(["bench/accelerator.py", *sys.argv[1:]])
    bytecode = (" PYTHONDONTWRITEBYTECODE is set: every process compiles the Python modules it imports again."
                if os.environ.get("PYTHONDONTWRITEBYTECODE") else "")
    document = (
        f"# xnpu beside onnxruntime on {args.target} ({args.rounds} alternating rounds, best kept)\n\n"
        f"Regenerate with `.venv/bin/python {command}` (this file; {run_conditions(started)}).\n\n"
    )
    if process_rows:
        document += (
            "## Process against process\n\n"
            "What users run, each a process of its own, imports and start-up included: `xnpu-compile MODEL -c "
            "CALIBRATION.npy` against a Python process calling onnxruntime's quantize_static on the same samples "
            "(bench/ort_process.py: MinMax, per-channel, symmetric int8; the model's batch fixed to 1 beforehand); "
            "per image, `xnpu-run BINARY -i 9 samples` minus `xnpu-run` of 1 sample, over 8, against the same for "
            "an onnxruntime float32 process (2 threads), and `xnpu-run` with OPENBLAS_NUM_THREADS=1 (1t); 'beyond "
            "the image' is a one-sample process's time minus one image's. Seconds are wall time (the best round), CPU is user + sys of the process's threads, MB "
            f"its peak RSS.{bytecode}\n\n" + table(process_rows, list(process_rows[0])) + "\n\n")
    if rows:
        columns = list(rows[0])
        columns[-1:] = [c for c in rows[0] if c.startswith("bit-exact")]
        document += (
            "## In process\n\n"
            "Compile: xnpu.compile (calibrate, quantize, lower, emit) vs onnxruntime quantize_static (per-channel "
            "MinMax; a dynamic batch fixed to 1), same samples, libraries imported before the clock. Latency: one "
            "sample; the simulator is bit-exact (its host segments, e.g. mobilenetv3_like's Softmax, run in float "
            "on the host). MB: peak RSS of the process that did the step.\n\n"
            + table(rows, columns) + "\n\n" + "\n\n".join(profiles) + "\n"
        )
    print(document)
    args.output.parent.mkdir(parents=True, exist_ok=True)
    args.output.write_text(document)


if __name__ == "__main__":
    main()
