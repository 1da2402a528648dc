"""xnpu's int8 model on a CPU through IREE, beside onnxruntime float32 and int8, in one run.

    .venv/bin/python bench/iree_cpu.py [--models resnet18_like,mobilenetv2_like] [--runs 30] | tee bench/results/iree_cpu.md

segnet_like (resize, transposed convolution) and mobilenetv3_like (its softmax kept float for the
host, exported as TOSA float ops) are in the default list here; the other benchmarks take them
only when named.

Per model, on the same calibration and evaluation images:
- xnpu quantizes the model (calibration images, per-channel weights, two-stage adds), exports the
  fixed level as TOSA (`xnpu-compile --emit=tosa`, docs/tosa.md) and IREE compiles it for this
  CPU (`iree-compile --iree-input-type=tosa`, llvm-cpu, host features);
- onnxruntime runs the float32 model and its own int8 model (`quantize_static`, QDQ, symmetric
  int8, per-channel MinMax, on the same calibration images);
- latency of one batch-1 inference, best of `--runs`, 2 threads for both runtimes; IREE with
  its default options and with data tiling + microkernels (FAST_FLAGS);
- IREE's outputs against xnpu's fixed level (bit for bit; where a float op kept for the host
  ends the model, the largest |difference|) and both int8 models against float32
  (onnxruntime's also with graph optimizations off: exact QDQ arithmetic, not its int8 kernels).
"""

from __future__ import annotations

import argparse
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
from common import agreement, bench_models, best_time, ort_quantize, ort_session, table  # noqa: E402

import xnpu  # noqa: E402
from xnpu.driver.tosa_export import IreeProgram, to_tosa  # noqa: E402

THREADS = 2
# iree-compile options that speed int8 convolutions up on x86 (data tiling into microkernels);
# the results stay bit-exact (checked below)
FAST_FLAGS = ("--iree-opt-data-tiling=true", "--iree-llvmcpu-enable-ukernels=all")


def measure(model, runs: int, evaluation: int) -> tuple[list[dict], dict]:
    x = model.evaluation[:evaluation]
    one = x[:1]
    start = time.perf_counter()
    fixed_module = xnpu.compile(model.path, model.calibration, stop_at="fixed", progress=False)
    quantize_s = time.perf_counter() - start
    start = time.perf_counter()
    text = to_tosa(fixed_module.clone())
    export_s = time.perf_counter() - start
    start = time.perf_counter()
    program = IreeProgram(text)
    iree_compile_s = time.perf_counter() - start
    fast = IreeProgram(text, flags=FAST_FLAGS)

    with tempfile.TemporaryDirectory() as tmp:
        ort_int8_path = Path(tmp) / "int8.onnx"
        ort_quantize_s = ort_quantize(model.path, model.calibration, ort_int8_path)
        fp32 = ort_session(model.path, THREADS)
        int8 = ort_session(ort_int8_path, THREADS)
        program(one), fast(one)  # first calls: IREE loads its executables
        iree_s = best_time(lambda: program(one), runs)
        fast_s = best_time(lambda: fast(one), runs)
        fp32_s = best_time(lambda: fp32.run(None, {"input": one}), runs)
        int8_s = best_time(lambda: int8.run(None, {"input": one}), runs)
        reference = np.concatenate([fp32.run(None, {"input": x[i : i + 1]})[0] for i in range(len(x))])
        ort_int8_out = np.concatenate([int8.run(None, {"input": x[i : i + 1]})[0] for i in range(len(x))])
        exact = ort_session(ort_int8_path, THREADS, optimize=False)
        ort_exact_out = np.concatenate([exact.run(None, {"input": x[i : i + 1]})[0] for i in range(len(x))])

    iree_out = np.concatenate([program(x[i : i + 1])[0] for i in range(len(x))])
    fast_out = np.concatenate([fast(x[i : i + 1])[0] for i in range(len(x))])
    (fixed_out,) = xnpu.run(fixed_module, x).values()
    exact = np.array_equal(iree_out, fixed_out) and np.array_equal(fast_out, fixed_out)
    difference = max(np.abs(iree_out - fixed_out).max(), np.abs(fast_out - fixed_out).max())
    latency = [
        {"model": model.name, "engine": "IREE int8 (xnpu's fixed level as TOSA)", "ms": iree_s * 1e3,
         "x ort fp32": iree_s / fp32_s},
        {"model": model.name, "engine": "IREE int8, data tiling + microkernels", "ms": fast_s * 1e3,
         "x ort fp32": fast_s / fp32_s},
        {"model": model.name, "engine": "onnxruntime float32", "ms": fp32_s * 1e3, "x ort fp32": 1.0},
        {"model": model.name, "engine": "onnxruntime int8 (QDQ)", "ms": int8_s * 1e3, "x ort fp32": int8_s / fp32_s},
    ]
    summary = {
        "model": model.name,
        "IREE == fixed": f"{1 if exact else f'0, max |diff| {difference:.1e}'} ({len(x)} images, both builds)",
        "xnpu quantize s": quantize_s,
        "TOSA export s": export_s,
        "iree-compile s": iree_compile_s,
        "ort quantize s": ort_quantize_s,
        "xnpu int8 cos": agreement(reference, iree_out)["cos_mean"],
        "ort int8 cos": agreement(reference, ort_int8_out)["cos_mean"],
        "ort int8 exact QDQ cos": agreement(reference, ort_exact_out)["cos_mean"],
    }
    return latency, summary


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--models", default="digits_plain,digits_resnet,digits_se,resnet18_like,mobilenetv2_like,"
                                              "segnet_like,mobilenetv3_like")
    parser.add_argument("--runs", type=int, default=30, help="latency: best of this many inferences")
    parser.add_argument("--eval", type=int, default=8, help="evaluation images for the exactness and agreement checks")
    args = parser.parse_args()

    import iree.runtime

    iree.runtime.flags.parse_flags(f"--task_topology_max_group_count={THREADS}")
    latency, summaries = [], []
    for model in bench_models(args.models.split(",")):
        rows, summary = measure(model, args.runs, args.eval)
        latency += rows
        summaries.append(summary)
    print(f"# int8 on the CPU: IREE beside onnxruntime ({THREADS} threads, batch 1, best of {args.runs})\n")
    print(table(latency, ["model", "engine", "ms", "x ort fp32"]))
    print()
    print(table(summaries, ["model", "IREE == fixed", "xnpu quantize s", "TOSA export s", "iree-compile s",
                            "ort quantize s", "xnpu int8 cos", "ort int8 cos", "ort int8 exact QDQ cos"]))
    print("\ncos: mean cosine of the int8 logits against onnxruntime float32 on the evaluation images. 'ort int8' "
          "is onnxruntime's optimized int8 kernels (whose latency is above), 'exact QDQ' the same model with graph "
          "optimizations off (QDQ arithmetic as written); where they differ, the kernels lose accuracy on this CPU.")


if __name__ == "__main__":
    main()
