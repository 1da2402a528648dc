"""Compile time and interpreter latency against onnxruntime, on the same model and images.

    .venv/bin/python bench/accelerator.py [--model resnet18_like] [--target xnpu_default] [--runs 3] | tee bench/results/accelerator.md

One run measures, side by side:
- compile: `xnpu.compile` (ONNX -> calibration on the 32 calibration images -> fixed ->
  isa -> binary) vs onnxruntime `quantize_static` (QDQ, MinMax, per-channel, symmetric int8)
  on the same images;
- latency of one 224x224 inference: the xnpu binary on the bit-exact simulator vs
  onnxruntime float32 and onnxruntime's int8 model (2 threads each);
- bit-exactness of the binary against the fixed IR, and the agreement of both with float;
- per convolution layer: whether the float32 GEMM path is exact (K * 127^2 < 2^24) and how
  long one exact int8 convolution takes in float32 (chunked K) vs float64 GEMM.
"""

from __future__ import annotations

import argparse
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
from common import (  # noqa: E402
    agreement,
    bench_models,
    best_time,
    ort_quantize,
    ort_session,
    table,
)

import xnpu  # noqa: E402
from xnpu.pipeline import lower_to_isa  # noqa: E402
from xnpu.target.emit import emit_binary  # noqa: E402
from xnpu.dialects import fixed  # noqa: E402
from xnpu.semantics import fixed_point  # noqa: E402


def conv_gemm_paths(module, runs: int) -> list[dict]:
    """For each fixed.conv2d: exact float32 path or not, and both GEMM times on random int8 data."""
    rows = []
    rng = np.random.default_rng(0)
    for op in module.walk():
        if not isinstance(op, fixed.Conv2dOp):
            continue
        x_shape = fixed.shape_of(op.input)
        w_shape = fixed.shape_of(op.weight)
        group = op.group.value.data
        reduction = w_shape[1] * w_shape[2] * w_shape[3]
        x = rng.integers(-127, 128, x_shape)
        w = rng.integers(-127, 128, w_shape)
        args = (fixed.ints(op.strides), fixed.ints(op.pads), fixed.ints(op.dilations), group)
        t64 = best_time(lambda: fixed_point.conv2d_accumulate_exact(x, w, *args, dtype=np.float64), runs)
        t32 = best_time(lambda: fixed_point.conv2d_accumulate_exact(x, w, *args, dtype=np.float32), runs)
        same = np.array_equal(
            fixed_point.conv2d_accumulate_exact(x, w, *args, dtype=np.float64),
            fixed_point.conv2d_accumulate_exact(x, w, *args, dtype=np.float32),
        )
        rows.append({
            "layer": str(op.location).replace("loc(", "").rstrip(")")[:40],
            "K": reduction,
            "f32 exact unchunked": reduction * 127 * 127 < 2**24,
            "f64 ms": t64 * 1e3,
            "f32 ms": t32 * 1e3,
            "same result": same,
        })
    return rows


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--model", default="resnet18_like")
    parser.add_argument("--target", default="xnpu_default")
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--eval", type=int, default=4, help="evaluation images for the agreement check")
    args = parser.parse_args()
    (model,) = bench_models([args.model])
    x = model.evaluation[: args.eval]

    with tempfile.TemporaryDirectory() as tmp:
        ort_int8_path = Path(tmp) / "int8.onnx"
        ort_quantize_s = ort_quantize(model.path, model.calibration, ort_int8_path)

        start = time.perf_counter()
        fixed_module = xnpu.compile(model.path, model.calibration, target=args.target, stop_at="fixed")
        quantize_s = time.perf_counter() - start
        start = time.perf_counter()
        binary = emit_binary(lower_to_isa(fixed_module.clone(), args.target))
        lower_s = time.perf_counter() - start
        compile_s = quantize_s + lower_s

        from xnpu.target.simulator import run_binary

        fp32 = ort_session(model.path)
        int8 = ort_session(ort_int8_path)
        one = x[:1]
        ort_fp32_s = best_time(lambda: fp32.run(None, {"input": one}), args.runs * 3)
        ort_int8_s = best_time(lambda: int8.run(None, {"input": one}), args.runs * 3)
        xnpu_s = best_time(lambda: run_binary(binary, {"input": one}), args.runs)

        reference = np.concatenate([fp32.run(None, {"input": x[i : i + 1]})[0] for i in range(len(x))])
        fixed_out = xnpu.run(fixed_module, x)
        name = next(iter(fixed_out))
        binary_out = run_binary(binary, {"input": x})[name]
        bit_exact = np.array_equal(binary_out, fixed_out[name])
        ort_int8_out = np.concatenate([int8.run(None, {"input": x[i : i + 1]})[0] for i in range(len(x))])

    print(f"# {model.name} on {args.target}\n")
    print(table(
        [
            {"step": "quantize (calibrate + lower to fixed)", "xnpu s": quantize_s},
            {"step": "fixed -> isa -> binary", "xnpu s": lower_s},
            {"step": "total compile", "xnpu s": compile_s, "onnxruntime s": ort_quantize_s,
             "ratio xnpu/ort": compile_s / ort_quantize_s},
        ],
        ["step", "xnpu s", "onnxruntime s", "ratio xnpu/ort"],
    ))
    print()
    print(table(
        [
            {"engine": "xnpu binary on the simulator (bit-exact)", "ms": xnpu_s * 1e3, "x fp32": xnpu_s / ort_fp32_s},
            {"engine": "onnxruntime float32", "ms": ort_fp32_s * 1e3, "x fp32": 1.0},
            {"engine": "onnxruntime int8 (QDQ)", "ms": ort_int8_s * 1e3, "x fp32": ort_int8_s / ort_fp32_s},
        ],
        ["engine", "ms", "x fp32"],
    ))
    print()
    print(f"binary == fixed IR on {len(x)} images: {bit_exact}")
    print(table(
        [
            {"model": "xnpu int8", **agreement(reference, binary_out)},
            {"model": "onnxruntime int8", **agreement(reference, ort_int8_out)},
        ],
        ["model", "top1_agree", "cos_mean", "cos_min"],
    ))
    print(f"binary: {len(binary.to_bytes()) / 1e6:.2f} MB, {len(binary.instructions)} instructions\n")
    rows = conv_gemm_paths(fixed_module, args.runs)
    print(table(rows, ["layer", "K", "f32 exact unchunked", "f64 ms", "f32 ms", "same result"]))
    print(f"\nconvolutions: float64 {sum(r['f64 ms'] for r in rows):.1f} ms, "
          f"float32 (chunked K) {sum(r['f32 ms'] for r in rows):.1f} ms")


if __name__ == "__main__":
    main()
