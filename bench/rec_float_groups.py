"""Where PP-OCRv6_rec_small's int8 error enters, in xnpu's own arithmetic: one group of ops at a
time computed in float, the rest of the fixed level unchanged.

    .venv/bin/python bench/rec_float_groups.py [--groups none backbone layernorms ...]

The model is calibrated once as bench/realmodels.py compiles it (the default method on the 32
calib lines, calibration on onnxruntime). For each group its nn ops get `nn.float_reason` before
lower-nn-to-fixed, which then leaves them float for the host as host fallback does: inside the
group nothing is rounded (its weights are float too, unless `-int8-weights`: the weights'
per-channel int8 codes, dequantized), and a tensor at its edge is rounded only where an integer op
reads it, at its calibrated step. A group that is one table (a SiLU, a GELU) therefore changes
nothing: a TABLE already is the float function of its int8 input, rounded at its output step.
Scored on the 200 eval lines against onnxruntime float32 as bench/realmodels.py scores rec (line
agreement, output cosine), with the share of the 40 CTC frames of every line whose argmax is
float32's and the eval lines that differ from float32's. docs/quantization.md has the figures.
"""

from __future__ import annotations

import argparse
import sys
import time
import warnings
from collections.abc import Callable
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
from common import cosine_rows, ort_session  # noqa: E402

REALMODELS = Path(__file__).resolve().parents[1].parent / "shared" / "realmodels"
MODEL = REALMODELS / "models" / "PP-OCRv6_rec_small.onnx"
CHUNK = 20  # eval lines per run of the fixed level


def node_names(op) -> list[str]:
    """The ONNX nodes an nn op was made from (one, or a fused location's several)."""
    from xnpu.driver.quant_report import location_name

    return location_name(op.location).split("+")


def between(first: str, last: str) -> Callable[[list], set]:
    """The ops from the one made from ONNX node `first` to the one made from `last`, in order."""
    def select(ops):
        start = next(i for i, op in enumerate(ops) if first in node_names(op))
        end = next(i for i, op in enumerate(ops) if last in node_names(op))
        return set(ops[start:end + 1])
    return select


def named(*nodes: str) -> Callable[[list], set]:
    return lambda ops: {op for op in ops if set(node_names(op)) & set(nodes)}


def blocks_where(test: Callable) -> Callable[[list], set]:
    """The ops passing `test` among the backbone's after its stem (its blocks, to the pool)."""
    return lambda ops: {op for op in between("Conv.3", "AveragePool.0")(ops) if test(op)}


def _depthwise(op) -> bool:
    from xnpu.dialects import nn

    return isinstance(op, nn.Conv2dOp) and op.group.value.data > 1


def _squeeze_excitation(op) -> bool:
    """The gate of a block (pool, two 1x1 convs, hard_sigmoid: [.., 1, 1] results) and the Mul applying it."""
    from xnpu.dialects import nn

    if isinstance(op, nn.MulOp):
        return any(isinstance(v.owner, nn.HardSigmoidOp) for v in op.operands)
    return not isinstance(op, nn.ConstantOp) and nn.shape_of(op.results[0])[-2:] == (1, 1)


def _other_conv(op) -> bool:
    from xnpu.dialects import nn

    return isinstance(op, nn.Conv2dOp) and not _depthwise(op) and not _squeeze_excitation(op)


def _residual_add(op) -> bool:
    from xnpu.dialects import nn

    return isinstance(op, nn.AddOp) and not any(isinstance(v.owner, nn.ConstantOp) for v in op.operands)


def _layer_norm(op) -> bool:
    """An op of expand-layer-norm's form: fused from the LayerNorm's nodes, a ReduceMean first."""
    names = node_names(op)
    return len(names) > 1 and names[0].startswith("ReduceMean")


QKV = ("MatMul.0", "Add.162", "MatMul.6", "Add.184")  # the q, k, v projection and its bias
PROJECTION = ("MatMul.3", "Add.166", "MatMul.9", "Add.188")  # reads the context
MLP = ("MatMul.4", "Add.174", "Sigmoid.6", "MatMul.5", "Add.176", "MatMul.10", "Add.196", "Sigmoid.8", "MatMul.11",
       "Add.198")
GROUPS: dict[str, Callable[[list], set]] = {
    "none": lambda ops: set(),
    "backbone": between("Conv.0", "AveragePool.0"),
    "stem": between("Conv.0", "Concat.0"),
    "stage1": between("Conv.3", "Add.42"),
    "stage2": between("Conv.16", "Add.122"),
    "stage3": between("Conv.43", "AveragePool.0"),
    "blocks-depthwise": blocks_where(_depthwise),
    "blocks-other-convs": blocks_where(_other_conv),
    "blocks-squeeze-excitation": blocks_where(_squeeze_excitation),
    "blocks-residual-adds": blocks_where(_residual_add),
    "neck": lambda ops: set(ops) - between("Conv.0", "AveragePool.0")(ops),
    "neck-convs": between("Conv.54", "Add.156"),
    "layernorms": lambda ops: {op for op in ops if _layer_norm(op)},
    "attention": named(*QKV, *PROJECTION),
    "mlp": named(*MLP),
    "mlp-silu": named("Sigmoid.6", "Sigmoid.8"),
    "residual-adds": named("Add.168", "Add.178", "Add.190", "Add.200", "Add.206"),
    "head": named("MatMul.12", "Add.208"),
    "bias-adds": named("Add.162", "Add.166", "Add.174", "Add.176", "Add.184", "Add.188", "Add.196", "Add.198",
                       "Add.208"),
}
INT8_WEIGHTS = "-int8-weights"  # suffix: the group's convolutions keep their int8 weights


def calibrated_module(calibration: np.ndarray):
    """The nn module as calibration leaves it, on the way to the default's fixed level."""
    import xnpu

    kept = {}

    class Calibrated(Exception):
        pass

    def after_pass(name, module):
        if name == "calibrate":
            kept["module"] = module.clone()
            raise Calibrated

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        try:
            xnpu.compile(MODEL, calibration, stop_at="fixed", input_shapes={"x": (1, 3, 48, 320)}, progress=False,
                         after_pass=after_pass)
        except Calibrated:
            pass
    return kept["module"]


def keep_int8_weights(ops) -> None:
    """Each float convolution's weights replaced by their per-channel int8 codes times their scales."""
    from xnpu.dialects import nn
    from xnpu.lowering.nn_to_fixed import quantize_weights, weight_scales

    for op in ops:
        if isinstance(op, nn.Conv2dOp) and isinstance(op.weight.owner, nn.ConstantOp):
            weights = op.weight.owner.to_numpy()
            scales = weight_scales(op, weights, 0)
            codes = quantize_weights(weights, scales, 0).astype(np.float64)
            constant = nn.ConstantOp((codes * scales.reshape(-1, 1, 1, 1)).astype(np.float32))
            constant.location = op.location
            op.parent_block().insert_op_before(constant, op)
            op.operands[1] = constant.result


def fixed_level(calibrated, group: str):
    """The fixed level with `group`'s ops left float; how many ops that is."""
    from xdsl.dialects.builtin import StringAttr

    from xnpu.dialects import nn
    from xnpu.ir.context import make_context
    from xnpu.lowering.nn_to_fixed import FLOAT_REASON, FoldQuantizePairsPass, LowerNNToFixedPass

    module = calibrated.clone()
    ops = [op for op in module.walk() if op.dialect_name() == "nn" and not isinstance(op, nn.ConstantOp)]
    chosen = GROUPS[group.removesuffix(INT8_WEIGHTS)](ops)
    for op in chosen:
        op.attributes[FLOAT_REASON] = StringAttr(f"float for bench/rec_float_groups.py's group {group}")
    if group.endswith(INT8_WEIGHTS):
        keep_int8_weights(chosen)
    LowerNNToFixedPass().apply(make_context(), module)
    FoldQuantizePairsPass().apply(make_context(), module)
    return module, len(chosen)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    choices = [*GROUPS, *(name + INT8_WEIGHTS for name in GROUPS)]
    parser.add_argument("--groups", nargs="+", choices=choices, default=list(GROUPS))
    args = parser.parse_args()
    if not REALMODELS.is_dir():
        raise SystemExit(f"real models not found at {REALMODELS} (expected ../shared/realmodels)")
    sys.path.insert(0, str(REALMODELS))
    import metrics

    import xnpu

    characters = metrics.rec_characters(str(REALMODELS / "models" / "PP-OCRv6_rec_small.dict.txt"))
    inputs, _ = metrics.load_split(str(REALMODELS), "rec", "eval")
    session = ort_session(MODEL, threads=2)
    reference_lines, reference_frames, reference_rows = [], [], []
    for x in inputs:
        probs = session.run(None, {"x": x[None]})[0]
        reference_lines.append(metrics.ctc_greedy_decode(probs, characters)[0][0])
        reference_frames.append(probs[0].argmax(-1))
        reference_rows.append(probs[0])  # 3 MB a line
    calibrated = calibrated_module(metrics.load_split(str(REALMODELS), "rec", "calib")[0])
    print("| group | float ops | line agreement | output cosine (min) | frames | lines differing | s |\n"
          "|---|---|---|---|---|---|---|")
    for group in args.groups:
        started = time.process_time()
        module, count = fixed_level(calibrated, group)
        lines, cosines, frames = [], [], []
        for start in range(0, len(inputs), CHUNK):
            probs = next(iter(xnpu.run(module, {"x": inputs[start:start + CHUNK]}).values()))
            lines += [metrics.ctc_greedy_decode(p[None], characters)[0][0] for p in probs]
            cosines += list(cosine_rows(np.stack(reference_rows[start:start + len(probs)]), probs))
            frames += [float((p.argmax(-1) == f).mean()) for p, f in zip(probs, reference_frames[start:])]
        differ = [i for i, (a, b) in enumerate(zip(lines, reference_lines)) if a != b]
        print(f"| {group} | {count} | {1 - len(differ) / len(lines):.3f} | {np.mean(cosines):.4f} "
              f"({np.min(cosines):.3f}) | {np.mean(frames):.5f} | {' '.join(map(str, differ))} | "
              f"{time.process_time() - started:.0f} |", flush=True)


if __name__ == "__main__":
    main()
