"""Int8 quality of xnpu's quantizer beside onnxruntime's quantize_static, on the bench models.

    .venv/bin/python bench/quantization.py                  # every model, full evaluation sets
    .venv/bin/python bench/quantization.py --quick          # 100 digits / 8 images
    .venv/bin/python bench/quantization.py --models digits_plain digits_se

For every model, on the same calibration data (digits: calib_x, 200 samples; imagenet_like:
images 0-31) and evaluated on the same inputs (digits: test_x, 500; imagenet_like: images
32-63):

    float       xnpu.run on the nn module (it matches onnxruntime's float run to ~1e-6)
    xnpu        xnpu.quantize, minmax, weights per channel / per tensor, adds two_stage / direct
    onnxruntime quantize_static, QDQ, MinMax, symmetric int8 activations and weights
                (ActivationSymmetric, WeightSymmetric), per_channel False / True; each model
                run twice: "QDQ in float" (graph optimizations off, the quantized model's exact
                arithmetic) and "int8 kernels" (the default session, onnxruntime's fused int8
                kernels, which on x86 without VNNI saturate 16-bit pair sums and lose accuracy)

Columns: top-1 accuracy (digits only: the imagenet_like weights are random), top-1
agreement and logits cosine (mean, min over samples) against the float logits, the time of
the quantize call (xnpu: calibration + lowering; onnxruntime: quantize_static, which
calibrates too), its ratio to onnxruntime's with the same weight granularity (per-tensor or
per-channel) in the same run, and the peak RSS of the process that quantized: each quantize
call runs in a fresh process, xnpu's and onnxruntime's alike. The table is printed and
written to bench/results/quantization.md.
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
    accuracy,
    agreement,
    bench_models,
    import_packages,
    measure_in_child,
    ort_quantize,
    ort_run_each,
    ort_session,
    table,
)

import xnpu  # noqa: E402

RESULTS = Path(__file__).resolve().parent / "results" / "quantization.md"
QUICK_DIGITS = 100
QUICK_IMAGES = 8
XNPU_CONFIGS = (  # (label, per_channel, variant)
    ("per-channel, two_stage", True, "two_stage"),
    ("per-tensor, two_stage", False, "two_stage"),
    ("per-channel, direct", True, "direct"),
)
ORT_CONFIGS = (("per-tensor", False), ("per-channel", True))
COLUMNS = ["model", "engine", "config", "accuracy", "top1_agree", "cos_mean", "cos_min", "quantize_s",
           "x ort", "quantize_MB"]


def only_output(outputs: dict[str, np.ndarray]) -> np.ndarray:
    (logits,) = outputs.values()
    return logits


def xnpu_quantize_and_run(path: str, calibration: np.ndarray, evaluation: np.ndarray, per_channel: bool,
                          variant: str) -> tuple[float, np.ndarray]:
    """In a fresh process: the quantize call's time (imports done first), then the int8 logits."""
    import_packages("xnpu.frontend", "xnpu.transforms", "xnpu.lowering")  # the libraries, not the work

    module = xnpu.import_onnx(path)
    start = time.perf_counter()
    fixed = xnpu.quantize(module, calibration, method="minmax", per_channel=per_channel, variant=variant,
                          progress=False)
    elapsed = time.perf_counter() - start
    return elapsed, only_output(xnpu.run(fixed, evaluation))


def xnpu_rows(model, reference: np.ndarray, evaluation: np.ndarray, ort_seconds: dict[bool, float]) -> list[dict]:
    rows = []
    for label, per_channel, variant in XNPU_CONFIGS:
        measured = measure_in_child(xnpu_quantize_and_run, str(model.path), model.calibration, evaluation,
                                    per_channel, variant)
        elapsed, logits = measured.result
        rows.append(row(model, "xnpu", f"minmax, {label}", reference, logits, elapsed,
                        elapsed / ort_seconds[per_channel], measured.peak_rss_mb))
        print(f"  xnpu {label}: {rows[-1]['cos_mean']:.5f} ({elapsed:.2f} s)", file=sys.stderr)
    return rows


def ort_rows(model, reference: np.ndarray, evaluation: np.ndarray, workdir: Path) -> tuple[list[dict], dict[bool, float]]:
    input_name = ort_session(model.path).get_inputs()[0].name
    rows, seconds = [], {}
    for label, per_channel in ORT_CONFIGS:
        output = workdir / f"{model.name}.{label}.int8.onnx"
        measured = measure_in_child(ort_quantize, str(model.path), model.calibration, str(output), per_channel,
                                    input_name)
        elapsed = seconds[per_channel] = measured.result
        # "QDQ in float": graph optimizations off, so quantize/dequantize pairs run in float and
        # every product and sum is exact, as in xnpu's integer interpreter; the default session
        # fuses them into int8 kernels that, on x86 CPUs without VNNI (AVX2's VPMADDUBSW sums
        # pairs of u8 x s8 products into int16 with saturation), can lose accuracy of their own
        for session, kind in ((ort_session(output, optimize=False), "QDQ in float"),
                              (ort_session(output), "int8 kernels")):
            logits = ort_run_each(session, evaluation)
            rows.append(row(model, "onnxruntime", f"minmax, {label}, {kind}", reference, logits, elapsed, 1.0,
                            measured.peak_rss_mb))
            print(f"  onnxruntime {label}, {kind}: {rows[-1]['cos_mean']:.5f} ({elapsed:.2f} s)", file=sys.stderr)
    return rows, seconds


def row(model, engine: str, config: str, reference: np.ndarray, logits: np.ndarray, seconds: float | None,
        ratio: float | None = None, rss_mb: float | None = None) -> dict:
    labels = None if model.labels is None else model.labels[: len(logits)]
    return {
        "model": model.name,
        "engine": engine,
        "config": config,
        "accuracy": accuracy(logits, labels),
        **agreement(reference, logits),
        "quantize_s": seconds,
        "x ort": ratio,
        "quantize_MB": rss_mb,
    }


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--models", nargs="+", help="model names (default: all)")
    parser.add_argument("--quick", action="store_true",
                        help=f"evaluate on {QUICK_DIGITS} digits / {QUICK_IMAGES} images instead of 500 / 32")
    parser.add_argument("--output", type=Path, default=RESULTS, help="markdown file for the table")
    args = parser.parse_args(argv)
    models = bench_models(args.models, digits_eval=QUICK_DIGITS if args.quick else None)
    rows: list[dict] = []
    with tempfile.TemporaryDirectory(prefix="xnpu-bench-") as workdir:
        for model in models:
            evaluation = model.evaluation
            if args.quick and model.labels is None:
                evaluation = evaluation[:QUICK_IMAGES]
            print(f"{model.name}: {len(model.calibration)} calibration, {len(evaluation)} evaluation samples",
                  file=sys.stderr)
            start = time.perf_counter()
            reference = only_output(xnpu.run(xnpu.import_onnx(model.path), evaluation))
            print(f"  float: {time.perf_counter() - start:.1f} s", file=sys.stderr)
            float_row = row(model, "float", "xnpu.run", reference, reference, None)
            rows.append(float_row)
            ort, ort_seconds = ort_rows(model, reference, evaluation, Path(workdir))
            rows += ort
            rows += xnpu_rows(model, reference, evaluation, ort_seconds)
    text = table(rows, COLUMNS)
    evaluated = ", ".join(
        f"{m.name} {len(m.evaluation) if not (args.quick and m.labels is None) else QUICK_IMAGES}" for m in models
    )
    document = (
        "# Int8 quantization: xnpu beside onnxruntime quantize_static\n\n"
        "Produced by `bench/quantization.py" + (" --quick" if args.quick else "") + "`. Agreement and cosine are "
        "against the float logits (xnpu.run on the nn module); accuracy only where the model has real labels.\n"
        "onnxruntime 'QDQ in float': graph optimizations off (exact QDQ arithmetic); 'int8 kernels': the default "
        "session (fused int8 kernels; on x86 without VNNI they saturate 16-bit pair sums).\n"
        "quantize_s: the quantize call alone (libraries loaded first), in a fresh process per call; 'x ort': its "
        "ratio to onnxruntime's quantize_static with the same weight granularity in this run; quantize_MB: that "
        "process's peak RSS.\n"
        f"Evaluation samples: {evaluated}. Calibration: digits calib_x (200), imagenet_like images 0-31.\n\n"
        + text + "\n"
    )
    print(text)
    args.output.parent.mkdir(parents=True, exist_ok=True)
    args.output.write_text(document)
    return 0


if __name__ == "__main__":
    sys.exit(main())
