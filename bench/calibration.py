"""Calibration benchmark: xnpu's calibrate against onnxruntime's calibrators, per bench model.

For every model and method: the time xnpu takes to calibrate (import excluded) and onnxruntime's
time for the same data, and how far xnpu's thresholds (scale * 127) are from onnxruntime's
symmetric ones (max(|low|, |high|)), per tensor, matched by ONNX node name.

    .venv/bin/python bench/calibration.py                       # digits (200 samples), resnet18_like (32)
    .venv/bin/python bench/calibration.py --models digits_plain --methods entropy --exact-range off
"""

from __future__ import annotations

import argparse
import contextlib
import io
import sys
import tempfile
import time
from pathlib import Path

import numpy as np
import onnx

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from bench.common import ArrayReader, bench_models, table  # noqa: E402

import xnpu  # noqa: E402
from xdsl.dialects.builtin import NameLoc  # noqa: E402
from xnpu.transforms.calibrate import calibrate  # noqa: E402

ORT_METHODS = {
    "minmax": ("MinMax", {"symmetric": True}),
    "percentile": ("Percentile", {"num_bins": 2048, "percentile": 99.99, "symmetric": True}),
    "entropy": ("Entropy", {"num_bins": 2048, "num_quantized_bins": 128}),
}


def xnpu_thresholds(path: Path, data: np.ndarray, method: str, exact_range: bool | None) -> tuple[dict[str, float], float]:
    module = xnpu.import_onnx(path)
    start = time.perf_counter()
    calibrate(module, data, method=method, exact_range=exact_range)
    seconds = time.perf_counter() - start
    outputs = {node.name: node.output[0] for node in onnx.load(path, load_external_data=False).graph.node}
    function = next(iter(module.ops))
    thresholds = {}
    for argument, attrs in zip(function.body.blocks.first.args, function.arg_attrs.data):
        thresholds[attrs.data["nn.name"].data] = attrs.data["nn.scale"].value.data * 127
    for op in function.walk():
        if "nn.scale" in op.attributes and isinstance(op.location, NameLoc):
            thresholds[outputs[op.location.desc.data]] = op.attributes["nn.scale"].value.data * 127
    return thresholds, seconds


def ort_thresholds(path: Path, data: np.ndarray, method: str) -> tuple[dict[str, float], float]:
    from onnxruntime.quantization.calibrate import CalibrationMethod, create_calibrator

    name, extra = ORT_METHODS[method]
    with tempfile.TemporaryDirectory() as tmp, contextlib.redirect_stdout(io.StringIO()):
        start = time.perf_counter()
        calibrator = create_calibrator(
            path, augmented_model_path=str(Path(tmp) / "augmented.onnx"),
            calibrate_method=getattr(CalibrationMethod, name), extra_options=extra,
        )
        calibrator.collect_data(ArrayReader("input", data))
        ranges = calibrator.compute_data()
        seconds = time.perf_counter() - start
    return {k: float(np.max(np.abs(np.asarray(r.range_value, np.float64)))) for k, r in ranges.items()}, seconds


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--models", nargs="*", default=["digits_plain", "digits_resnet", "digits_se", "resnet18_like"])
    parser.add_argument("--methods", nargs="*", default=["minmax", "percentile", "entropy"])
    parser.add_argument(
        "--exact-range", choices=["auto", "on", "off"], default="auto",
        help="histograms over each tensor's exact range (two runs); auto: for entropy only",
    )
    parser.add_argument("--no-ort", action="store_true", help="time xnpu only")
    args = parser.parse_args()
    rows = []
    for model in bench_models(args.models):
        methods = args.methods if model.name.startswith("digits") else [m for m in args.methods if m != "percentile"]
        for method in methods:
            exact_range = {"auto": None, "on": True, "off": False}[args.exact_range]
            ours, ours_seconds = xnpu_thresholds(model.path, model.calibration, method, exact_range)
            row = {"model": model.name, "method": method, "samples": len(model.calibration), "xnpu s": ours_seconds}
            if not args.no_ort:
                theirs, their_seconds = ort_thresholds(model.path, model.calibration, method)
                common = sorted(set(ours) & set(theirs))
                rel = np.array([abs(ours[k] - theirs[k]) / theirs[k] for k in common if theirs[k] > 0])
                row.update({
                    "ort s": their_seconds, "tensors": len(common),
                    "median rel": float(np.median(rel)), "max rel": float(rel.max()),
                    "within 2%": f"{int((rel <= 0.02).sum())}/{len(rel)}",
                })
            rows.append(row)
            print(row, file=sys.stderr, flush=True)
    columns = ["model", "method", "samples", "xnpu s", "ort s", "tensors", "median rel", "max rel", "within 2%"]
    print(table(rows, columns))


if __name__ == "__main__":
    main()
