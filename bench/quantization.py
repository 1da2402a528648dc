"""Int8 quality of xnpu's quantizer beside onnxruntime's quantize_static, on the bench models.

    .venv/bin/python bench/quantization.py                  # every model, full evaluation sets
    .venv/bin/python bench/quantization.py --quick          # 100 digits / 8 images
    .venv/bin/python bench/quantization.py --models digits_plain digits_se

For every model, on the same calibration data (digits: calib_x, 200 samples; imagenet_like:
images 0-31) and evaluated on the same inputs (digits: test_x, 500; imagenet_like: images
32-63), against onnxruntime's float32 run of the ONNX model (the reference):

    float       xnpu.run on the nn module (it matches onnxruntime's float run to ~1e-6)
    xnpu        xnpu.quantize with its defaults (nothing but the calibration data), the same
                with bias correction, then minmax with weights per tensor (adds two_stage)
                and per channel with adds direct
    onnxruntime quantize_static, QDQ, MinMax, symmetric int8 activations and weights
                (ActivationSymmetric, WeightSymmetric), per_channel False / True; each model
                run twice: "QDQ in float" (graph optimizations off, the quantized model's exact
                arithmetic) and "int8 kernels" (the default session, onnxruntime's fused int8
                kernels, which on x86 without VNNI saturate 16-bit pair sums and lose accuracy);
                a model with a dynamic batch dimension (mobilenetv3_like) is quantized as a copy
                with the batch fixed to 1 (common.static_batch)

Columns: top-1 accuracy (digits only: the imagenet_like weights are random), top-1
agreement and cosine (mean, min over samples) of the one output (logits; mobilenetv3_like's
Softmax `probs`) against the reference; for segnet_like's probability map `prob`, cosine and
the IoU of `prob > 0.5` (iou_mean: per image, averaged; iou_pooled: intersections over
unions summed over the images) instead of top-1 agreement; the time of
the quantize call (xnpu: calibration + lowering; onnxruntime: quantize_static, which
calibrates too), its ratio to onnxruntime's with the same weight granularity (per-tensor or
per-channel) in the same run, and the peak RSS of the process that quantized: each quantize
call runs in a fresh process, xnpu's and onnxruntime's alike. The table is printed and
written to bench/results/quantization.md.
"""

from __future__ import annotations

import argparse
import inspect
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
    run_conditions,
    table,
)

import xnpu  # noqa: E402

RESULTS = Path(__file__).resolve().parent / "results" / "quantization.md"
QUICK_DIGITS = 100
QUICK_IMAGES = 8
XNPU_CONFIGS = (  # (label, xnpu.quantize options): the defaults first, whatever they are
    ("defaults", {}),
    ("defaults with bias correction", {"bias_correction": True}),
    ("minmax, per-tensor, two_stage", {"method": "minmax", "per_channel": False, "variant": "two_stage"}),
    ("minmax, per-channel, direct", {"method": "minmax", "per_channel": True, "variant": "direct"}),
)
ORT_CONFIGS = (("per-tensor", False), ("per-channel", True))
COLUMNS = ["model", "engine", "config", "accuracy", "top1_agree", "cos_mean", "cos_min", "iou_mean", "iou_pooled",
           "quantize_s", "x ort", "quantize_MB"]


def only_output(outputs: dict[str, np.ndarray]) -> np.ndarray:
    (logits,) = outputs.values()
    return logits


def per_channel_of(options: dict) -> bool:
    """Whether these xnpu.quantize options quantize weights per channel (its default if not given)."""
    from xnpu.driver.pipeline import quantize

    return options.get("per_channel", inspect.signature(quantize).parameters["per_channel"].default)


def xnpu_quantize_and_run(path: str, calibration: np.ndarray, evaluation: np.ndarray,
                          options: dict) -> tuple[float, np.ndarray]:
    """In a fresh process: the quantize call's time (imports done first), then the int8 logits."""
    import_packages("xnpu.frontend", "xnpu.transforms", "xnpu.lowering")  # the libraries, not the work

    module = xnpu.import_onnx(path)
    start = time.perf_counter()
    fixed = xnpu.quantize(module, calibration, progress=False, **options)
    elapsed = time.perf_counter() - start
    return elapsed, only_output(xnpu.run(fixed, evaluation))


def xnpu_rows(model, reference: np.ndarray, evaluation: np.ndarray, ort_seconds: dict[bool, float]) -> list[dict]:
    rows = []
    for label, options in XNPU_CONFIGS:
        measured = measure_in_child(xnpu_quantize_and_run, str(model.path), model.calibration, evaluation, options)
        elapsed, logits = measured.result
        rows.append(row(model, "xnpu", label, reference, logits, elapsed,
                        elapsed / ort_seconds[per_channel_of(options)], measured.peak_rss_mb))
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
        **agreement(reference, logits, model.output),
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
    started = time.perf_counter()
    models = bench_models(args.models, digits_eval=QUICK_DIGITS if args.quick else None)
    rows: list[dict] = []
    with tempfile.TemporaryDirectory(prefix="xnpu-bench-") as workdir:
        for model in models:
            evaluation = model.evaluation
            if args.quick and model.labels is None:
                evaluation = evaluation[:QUICK_IMAGES]
            print(f"{model.name}: {len(model.calibration)} calibration, {len(evaluation)} evaluation samples",
                  file=sys.stderr)
            reference = ort_run_each(ort_session(model.path), evaluation)
            rows.append(row(model, "onnxruntime", "float32", reference, reference, None))
            start = time.perf_counter()
            rows.append(row(model, "float", "xnpu.run", reference,
                            only_output(xnpu.run(xnpu.import_onnx(model.path), evaluation)), None))
            print(f"  float: {time.perf_counter() - start:.1f} s", file=sys.stderr)
            ort, ort_seconds = ort_rows(model, reference, evaluation, Path(workdir))
            rows += ort
            rows += xnpu_rows(model, reference, evaluation, ort_seconds)
    text = table(rows, COLUMNS)
    evaluated = ", ".join(
        f"{m.name} {len(m.evaluation) if not (args.quick and m.labels is None) else QUICK_IMAGES}" for m in models
    )
    command = " ".join(["bench/quantization.py", *(sys.argv[1:] if argv is None else argv)])
    document = (
        "# Int8 quantization: xnpu beside onnxruntime quantize_static\n\n"
        f"Regenerate with `.venv/bin/python {command}` (this file; {run_conditions(started)}).\n"
        "Agreement, cosine and IoU are against onnxruntime's float32 run of the ONNX model (row 'onnxruntime "
        "float32'); accuracy only where the model has real labels. segnet_like: IoU of the masks `prob > 0.5`, "
        "iou_mean per image then averaged, iou_pooled over all images' pixels at once.\n"
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
