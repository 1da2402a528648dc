"""The same models compiled for every shipped target: bit-identical outputs, cycles side by side.

    .venv/bin/python bench/targets.py [--models digits_se,mobilenetv2_like] [--samples N]

Each bench model is quantized once (one fixed module), then legalized and compiled for every
target in target/*.toml (xnpu_default, xnpu_lite, ...). xnpu_lite has no clamp unit and no
element-wise mul; `legalize` rewrites its clamps as three saturating bias-adds (seed 001,
method 2) and its muls as depthwise convs (seed 002); what no unit runs goes to host
segments. All of it is exact, so every binary must produce outputs identical to the fixed
level's and to each other's on every sample: the benchmark asserts it. Per model and
target: the simulator's cycle estimates (Machine.run statistics, one sample, also per
provenance layer), the binary's instructions and size, and the placement
(xnpu.placement_of), written to bench/results/targets.md.
"""

from __future__ import annotations

import argparse
import collections
import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))

from common import bench_models, run_conditions  # noqa: E402

import xnpu  # noqa: E402
from xnpu.core.errors import XnpuError  # noqa: E402
from xnpu.lowering.legalize import legalize_patterns  # noqa: E402
from xnpu.pdl.driver import apply_patterns  # noqa: E402
from xnpu.pdl.patterns import PatternContext
from xnpu.driver.pipeline import lower_to_isa  # noqa: E402
from xnpu.target.description import list_targets, load_target  # noqa: E402
from xnpu.backend.emit import emit_binary  # noqa: E402
from xnpu.backend.simulator import simulate  # noqa: E402

RESULTS = Path(__file__).resolve().parent / "results" / "targets.md"
TARGETS = tuple(list_targets())  # every shipped target; the first (xnpu_default) is the ratios' base
DEFAULT_MODELS = ("digits_plain", "digits_resnet", "digits_se", "mobilenetv2_like", "mobilenetv3_like", "segnet_like")


def compile_for_targets(fixed_module, targets=TARGETS) -> dict[str, tuple]:
    """{target: (binary or the one-line error, legalize patterns fired)} from one fixed module."""
    compiled = {}
    for target in targets:
        module = fixed_module.clone()
        fired = apply_patterns(module, legalize_patterns(), PatternContext(load_target(target), {"clamp_method": "auto"}))
        module.verify()
        try:
            compiled[Path(target).stem] = (emit_binary(lower_to_isa(module, str(target))), fired)
        except XnpuError as error:  # an op no pattern legalizes (reported, not hidden)
            compiled[Path(target).stem] = (str(error), fired)
    return compiled


def compare(model, samples: int) -> dict:
    fixed_module = xnpu.compile(str(model.path), model.calibration, stop_at="fixed", progress=False)
    compiled = compile_for_targets(fixed_module)
    data = model.evaluation[:samples]
    built = [t for t in TARGETS if not isinstance(compiled[t][0], str)]
    errors = {t: compiled[t][0] for t in TARGETS if t not in built}
    binaries = {t: compiled[t][0] for t in built}
    runs = {target: simulate(binaries[target], data) for target in built}
    one = {target: simulate(binaries[target], data[:1]) for target in built}
    reference = xnpu.run(fixed_module, data)
    identical = all(np.array_equal(runs[t].outputs[name], runs[built[0]].outputs[name]) for t in built for name in reference)
    exact = all(np.array_equal(runs[t].outputs[name], reference[name]) for t in built for name in reference)
    return dict(name=model.name, samples=len(data), identical=identical, exact=exact, errors=errors,
                fired={t: compiled[t][1] for t in TARGETS},
                instructions={t: collections.Counter(i.op for i in binaries[t].instructions) for t in built},
                size={t: len(binaries[t].to_bytes()) for t in built},
                placement={t: xnpu.placement_of(binaries[t]) for t in built},
                layers={t: one[t].stats.by_layer if t in one else {} for t in TARGETS},
                stats={t: one[t].stats for t in built},
                cycles={t: one[t].stats.cycles if t in one else None for t in TARGETS})


def per_target_rows(r: dict) -> list[str]:
    """One table row per target of one model: what it compiled to, where it runs, its cycles."""
    rows = []
    for target in TARGETS:
        fired = r["fired"][target]
        patterns = ", ".join(f"{name} x{fired.count(name)}" for name in dict.fromkeys(fired)) or "-"
        if target in r["errors"]:
            rows.append(f"| {r['name']} | {target} | does not compile | - | - | - | - | {patterns} |")
            continue
        counts = r["instructions"][target]
        mix = ", ".join(f"{op} {n}" for op, n in counts.most_common())
        placement = r["placement"][target]
        host = ", ".join(f"{op.op} ({', '.join(op.nodes) or '-'})" for op in placement.host) or "-"
        ratio = r["cycles"][target] / r["cycles"][TARGETS[0]] if r["cycles"].get(TARGETS[0]) else None
        rows.append(f"| {r['name']} | {target} | {r['cycles'][target]:,}"
                    f"{f' ({ratio:.2f}x)' if ratio is not None and target != TARGETS[0] else ''} | "
                    f"{sum(counts.values()):,} ({mix}) | {r['size'][target]:,} | {len(placement.accelerator)} | "
                    f"{len(placement.host)} in {placement.segments} segment(s): {host} | {patterns} |")
    return rows


def markdown(results: list[dict], header: str) -> str:
    others = f"The other targets ({', '.join(TARGETS[1:])}) differ from {TARGETS[0]}"
    lines = [f"# One fixed module, every shipped target: {', '.join(TARGETS)}", "", header, "",
             "Each model is quantized once; `legalize{target}` then rewrites what a target lacks",
             "(xnpu_lite: clamp by seed 001 method 2, three saturating bias-adds; mul by seed 002, a",
             "depthwise conv with activation kernels), and what no unit runs is placed on the host",
             "(host segments inside the binary). Cycles are the simulator's estimates for one sample",
             "(Machine.run statistics, host segments not counted); instructions are the binary's",
             "(static count, by mnemonic); bytes the whole .xnb; accelerator: the ONNX nodes the",
             "accelerator runs (xnpu.placement_of; ONNX nodes folded away, such as a constant shape",
             "computation, are on neither side); host: the ops the host runs.",
             f"{others} in SRAM, DMA width and clock too, so their cycles differ everywhere.", ""]
    lines += ["| model | samples | outputs identical across targets | = fixed level (every target) |",
              "|---|---|---|---|"]
    for r in results:
        compared = "yes" if r["identical"] else "NO"
        if len(r["errors"]) >= len(TARGETS) - 1:
            compared = "- (one target only)"
        lines.append(f"| {r['name']} | {r['samples']} | {compared} | {'yes' if r['exact'] else 'NO'} |")
    lines += ["", f"| model | target | cycles (x {TARGETS[0]}) | instructions | binary bytes | "
                  "ONNX nodes on the accelerator | ops on the host | legalize patterns fired |",
              "|---|---|---|---|---|---|---|---|"]
    for r in results:
        lines += per_target_rows(r)
    lines += ["", "## Roofline (one sample)", "",
              "The program's cycles against max(EXEC busy, DMA busy), the least any schedule of its instructions",
              "takes (1.00: the busier queue never waits), and the DDR bytes its DMA moves against the compulsory",
              "ones (every constant it loads once, its inputs, its outputs; backend/roofline.py).", "",
              "| model | target | cycles | EXEC busy | DMA busy | cycles / max | bound | DDR bytes moved | compulsory | moved / compulsory |",
              "|---|---|---|---|---|---|---|---|---|---|"]
    for r in results:
        for target, stats in r["stats"].items():
            bound = "DMA" if stats.dma_cycles > stats.compute_cycles else "compute"
            moved, compulsory = stats.total_ddr_bytes, stats.total_compulsory_bytes
            lines.append(f"| {r['name']} | {target} | {stats.cycles:,} | {stats.compute_cycles:,} | {stats.dma_cycles:,} | "
                         f"{stats.roofline_ratio:.3f} | {bound} | {moved:,} | {compulsory:,} | "
                         f"{moved / compulsory if compulsory else 0:.2f} |")
    for r in results:
        for target, error in r["errors"].items():
            why = (" No exact legalization exists: splitting a conv's input channels needs int32 partial sums, "
                   "which no unit writes (CONV writes int8).") if "input channels" in error else ""
            lines += ["", f"{r['name']} does not compile for {target}: `{error}`.{why}"]
    for r in results:
        lines += ["", f"## {r['name']}: cycles per layer (one sample)", "",
                  "| layer | " + " | ".join(TARGETS) + " | " + " | ".join(f"{t} / {TARGETS[0]}" for t in TARGETS[1:])
                  + " |", "|---|" + "---|" * (2 * len(TARGETS) - 1)]
        layers = r["layers"]
        names = set().union(*(layers[t] for t in TARGETS))
        base = layers[TARGETS[0]]
        # by cycles, then by name: layers of equal cycles keep one order from run to run
        for layer in sorted(names, key=lambda k: (-sum(layers[t].get(k, 0) for t in TARGETS), k)):
            ratios = [f"{layers[t].get(layer, 0) / base[layer]:.2f}" if base.get(layer) else "-" for t in TARGETS[1:]]
            lines.append(f"| {layer} | " + " | ".join(f"{layers[t].get(layer, 0):,}" for t in TARGETS) + " | "
                         + " | ".join(ratios) + " |")
        lines += roofline_per_layer(r)
    return "\n".join(lines) + "\n"


def roofline_per_layer(r: dict) -> list[str]:
    """Per layer and target: EXEC and DMA busy cycles, its share of the makespan over the larger
    (below 1 where other layers' computation hid its DMA), DDR bytes moved and compulsory."""
    targets = list(r["stats"])
    lines = ["", f"## {r['name']}: roofline per layer (one sample)", "",
             "| layer | " + " | ".join(f"{t}: EXEC / DMA busy | x max | DDR moved / compulsory" for t in targets) + " |",
             "|---|" + "---|---|---|" * len(targets)]
    first = r["stats"][targets[0]]
    names = set().union(*(s.by_layer for s in r["stats"].values()))
    for layer in sorted(names, key=lambda k: (-first.by_layer.get(k, 0), k)):
        cells = []
        for t in targets:
            s = r["stats"][t]
            cells.append(f"{s.compute.get(layer, 0):,} / {s.dma.get(layer, 0):,} | {s.layer_ratio(layer):.2f} | "
                         f"{s.ddr_bytes.get(layer, 0):,} / {s.compulsory_bytes.get(layer, 0):,}")
        lines.append(f"| {layer} | " + " | ".join(cells) + " |")
    return lines


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--models", default=",".join(DEFAULT_MODELS))
    parser.add_argument("--samples", type=int, default=20, help="evaluation samples per digits model (imagenet: 2)")
    args = parser.parse_args(argv)
    started = time.perf_counter()
    names = args.models.split(",")
    results = []
    for model in bench_models(names):
        start = time.perf_counter()
        samples = args.samples if model.name.startswith("digits") else 2
        result = compare(model, samples)
        results.append(result)
        print(f"{model.name}: identical={result['identical']} exact={result['exact']} "
              f"cycles {result['cycles']} errors {result['errors']} ({time.perf_counter() - start:.1f}s)", flush=True)
    from xnpu.core.files import write_atomically

    command = " ".join(["bench/targets.py", *(sys.argv[1:] if argv is None else argv)])
    write_atomically(RESULTS, markdown(results, f"Regenerate with `.venv/bin/python {command}` (this file; "
                                                f"{run_conditions(started)})."))
    print(f"wrote {RESULTS}")
    if not all(r["identical"] and r["exact"] and not r["errors"] for r in results):
        print("error: the targets' outputs differ where the seeds promise exactness", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
