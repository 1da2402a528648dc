"""Where onnxruntime's asymmetric int8 gains on PP-OCRv6_rec_small, and what unsigned storage
would give xnpu's own scales.

    .venv/bin/python bench/activation_symmetry.py [--variants sym asym ...]

onnxruntime's quantize_static as ../shared/realmodels/README.md's "+ prep" anchors (opset 13,
quant_pre_process, QDQ, per-channel int8 weights, MinMax on the 32 calib lines), run with graph
optimisations off, line agreement and output cosine against float32 on the 200 eval lines.
Activations are symmetric except on one class of tensors (TensorQuantOverrides):

- sym, asym: the two anchors;
- asym-layernorm-inputs: the LayerNorms' inputs (the residual stream: the input of a ReduceMean
  whose mean a Sub takes);
- asym-non-negative: the tensors whose minimum on 16 calib lines is >= 0;
- asym-one-sided-signed: the signed tensors with |min| < 0.35 max;
- xnpu-sym: xnpu's calibrated thresholds (default mse) on every tensor xnpu measures that names
  an ONNX tensor, symmetric; onnxruntime's MinMax on the rest;
- xnpu-unsigned: the same, with the non-negative ones stored unsigned (scale threshold / 255,
  zero point -128: [0, threshold] in 255 steps instead of 127);
- xnpu-int16-layernorm-inputs, xnpu-int16-residual: xnpu-sym with the LayerNorms' inputs, or
  every Add output that another Add or a LayerNorm reads (the residual stream), in int16
  (onnxruntime raises the model to opset 21 for it).

This is onnxruntime's arithmetic (float between the quantized tensors, LayerNorms in float),
not xnpu's integer forms: it says which tensors' steps matter, not what xnpu reaches.
docs/quantization.md has the figures.
"""

from __future__ import annotations

import argparse
import os
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

REALMODELS = Path(__file__).resolve().parents[1].parent / "shared" / "realmodels"
ONE_SIDED = 0.35  # |min| / max (or max / |min|) below this: one side of the range nearly unused
VARIANTS = ("sym", "asym", "asym-layernorm-inputs", "asym-non-negative", "asym-one-sided-signed",
            "xnpu-sym", "xnpu-unsigned", "xnpu-int16-layernorm-inputs", "xnpu-int16-residual")


def pack_modules():
    if not REALMODELS.is_dir():
        raise SystemExit(f"real models not found at {REALMODELS} (expected ../shared/realmodels)")
    sys.path[:0] = [str(REALMODELS), str(REALMODELS / "gen")]
    import anchors

    return anchors


def ranges(anchors, model_path: str, feeds: list[dict]) -> dict[str, tuple[float, float]]:
    """(min, max) of every float tensor of the model over `feeds`."""
    import onnx

    model = onnx.load(model_path)
    present = {output.name for output in model.graph.output}
    for node in model.graph.node:
        for name in node.output:
            if name and name not in present:
                model.graph.output.append(onnx.ValueInfoProto(name=name))
    with tempfile.TemporaryDirectory() as folder:
        path = os.path.join(folder, "all_outputs.onnx")
        onnx.save(model, path)
        session = anchors.session(path, optimize=False)
    names = [output.name for output in session.get_outputs()]
    low: dict[str, float] = {}
    high: dict[str, float] = {}
    for feed in feeds:
        for name, value in zip(names, session.run(None, feed)):
            if value.dtype == np.float32 and value.size:
                low[name] = min(low.get(name, 0.0), float(value.min()))
                high[name] = max(high.get(name, 0.0), float(value.max()))
    return {name: (low[name], high[name]) for name in low}


def layernorm_inputs(model_path: str) -> set[str]:
    import onnx

    graph = onnx.load(model_path).graph
    consumers: dict[str, list] = {}
    for node in graph.node:
        for name in node.input:
            consumers.setdefault(name, []).append(node)
    return {node.input[0] for node in graph.node if node.op_type == "ReduceMean"
            and any(user.op_type == "Sub" for user in consumers.get(node.output[0], []))}


def residual_stream(model_path: str) -> set[str]:
    """Every Add output that another Add or a LayerNorm (a ReduceMean feeding a Sub) reads."""
    import onnx

    graph = onnx.load(model_path).graph
    readers: dict[str, set[str]] = {}
    for node in graph.node:
        for name in node.input:
            readers.setdefault(name, set()).add(node.op_type)
    norms = layernorm_inputs(model_path)
    return {node.output[0] for node in graph.node if node.op_type == "Add"
            and ("Add" in readers.get(node.output[0], set()) or node.output[0] in norms)}


def xnpu_thresholds(model_path: str, calibration: np.ndarray) -> dict[str, float]:
    """xnpu's calibrated threshold (127 x scale) of each ONNX tensor that an nn op's value holds
    whole (calibrate_onnx.named_tensors: the tensors calibration reads from onnxruntime)."""
    import xnpu
    from xnpu.ir.onnx_origin import origin_of
    from xnpu.transforms.calibrate import SCALE_ATTR
    from xnpu.transforms.calibrate_onnx import held_channels, named_tensors

    found: dict[str, float] = {}

    class Calibrated(Exception):
        pass

    def after_pass(name, module):
        if name != "calibrate":
            return
        for value, tensor in named_tensors(module, origin_of(module))[0].items():
            owner = value.owner
            # a value of a split op holds some channels of its tensor, with a scale of their own
            if SCALE_ATTR in owner.attributes and held_channels(value) is None:
                found[tensor] = 127 * owner.attributes[SCALE_ATTR].value.data
        raise Calibrated

    try:
        xnpu.compile(model_path, calibration, stop_at="fixed", after_pass=after_pass, progress=False,
                     input_shapes={"x": (1, 3, 48, 320)})
    except Calibrated:
        pass
    return found


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--variants", nargs="+", choices=VARIANTS, default=list(VARIANTS))
    args = parser.parse_args()
    anchors = pack_modules()
    import onnxruntime as ort
    from onnxruntime.quantization import CalibrationMethod, QuantFormat, QuantType, quantize_static

    ort.set_default_logger_severity(3)
    task = anchors.Rec()
    shipped = str(REALMODELS / anchors.MODELS["rec"])
    reference = task.run(anchors.session(shipped))
    with tempfile.TemporaryDirectory() as folder:
        prepared = os.path.join(folder, "prepared.onnx")
        anchors.prepare(shipped, prepared)
        value_ranges = ranges(anchors, prepared, task.calib[:16])

        def share(name):
            low, high = -value_ranges[name][0], value_ranges[name][1]
            return min(low, high) / max(low, high, 1e-12)

        non_negative = {name for name, (low, _) in value_ranges.items() if low >= 0}
        one_sided_signed = {name for name in value_ranges if share(name) < ONE_SIDED} - non_negative
        thresholds: dict[str, float] = {}
        if any(variant.startswith("xnpu") for variant in args.variants):
            thresholds = {name: t for name, t in xnpu_thresholds(shipped, task.cx).items()
                          if name in value_ranges and t > 0}

        def asymmetric(names):
            return {name: [{"symmetric": False}] for name in names}

        def xnpu_scales(unsigned=False, int16=()):
            overrides = {}
            for name, threshold in thresholds.items():
                wide = unsigned and name in non_negative
                overrides[name] = [{"scale": np.array(threshold / (255 if wide else 127), dtype=np.float32),
                                    "zero_point": np.array(-128 if wide else 0, dtype=np.int8)}]
            for name in int16:  # onnxruntime's MinMax range, symmetric, in 16 bits
                overrides[name] = [{"quant_type": QuantType.QInt16, "symmetric": True}]
            return overrides

        plans = {"sym": (True, {}), "asym": (False, {}),
                 "asym-layernorm-inputs": (True, asymmetric(layernorm_inputs(prepared))),
                 "asym-non-negative": (True, asymmetric(non_negative)),
                 "asym-one-sided-signed": (True, asymmetric(one_sided_signed)),
                 "xnpu-sym": (True, xnpu_scales()) if thresholds else None,
                 "xnpu-unsigned": (True, xnpu_scales(unsigned=True)) if thresholds else None,
                 "xnpu-int16-layernorm-inputs": (True, xnpu_scales(int16=layernorm_inputs(prepared)))
                 if thresholds else None,
                 "xnpu-int16-residual": (True, xnpu_scales(int16=residual_stream(prepared))) if thresholds else None}
        print(f"tensors: {len(value_ranges)}; non-negative {len(non_negative)}, one-sided signed "
              f"{len(one_sided_signed)}; xnpu thresholds named {len(thresholds)} "
              f"({len(non_negative & set(thresholds))} non-negative)")
        print("| variant | overridden tensors | line agreement | output cosine (min) | s |\n|---|---|---|---|---|")
        for variant in args.variants:
            symmetric, overrides = plans[variant]
            started = time.perf_counter()
            quantized = os.path.join(folder, f"{variant}.onnx")
            quantize_static(prepared, quantized, anchors.Feeds(task.calib), quant_format=QuantFormat.QDQ,
                            per_channel=True, calibrate_method=CalibrationMethod.MinMax,
                            activation_type=QuantType.QInt8, weight_type=QuantType.QInt8,
                            extra_options={"ActivationSymmetric": symmetric, "TensorQuantOverrides": overrides})
            score = task.score(task.run(anchors.session(quantized, optimize=False)), reference)
            print(f"| {variant} | {len(overrides)} | {score['line_agree_fp32']:.3f} | {score['cos_mean']:.4f} "
                  f"({score['cos_min']:.3f}) | {time.perf_counter() - started:.0f} |", flush=True)


if __name__ == "__main__":
    main()
