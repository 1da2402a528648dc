"""ONNX backend node conformance of the front end and the float semantics.

    python -m xnpu.tools.conformance_report            # rewrites docs/conformance.md
    python -m xnpu.tools.conformance_report --check    # exit 1 if it is out of date

The onnx wheel does not ship the backend test data but ships its generators:
`onnx.backend.test.case.node.collect_testcases()` rebuilds every node test case (model plus
input/expected output arrays) offline. Every case whose ops are all ones the importer
handles is imported and run with `xnpu.run`; the outcome is one of

- passed: the outputs match the expected ones,
- unsupported: the importer refused it with an XnpuError (its message is the reason),
- wrong: it imported but computed a different answer (a bug; the test fails on these),
- crashed: anything other than an XnpuError was raised (also a bug).
"""

from __future__ import annotations

import argparse
import contextlib
import io
import sys
import warnings
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import onnx

import xnpu
from xnpu.core.errors import XnpuError
from xnpu.core.files import write_atomically
from xnpu.frontend.onnx_import import SUPPORTED_OPS, import_onnx

DOC_PATH = Path(__file__).resolve().parents[1] / "docs" / "conformance.md"
RTOL = 1e-4
ATOL = 1e-5


@dataclass(frozen=True)
class Outcome:
    name: str
    status: str  # passed | unsupported | wrong | crashed
    detail: str = ""


@dataclass
class Report:
    onnx_version: str
    total_cases: int
    outcomes: list[Outcome] = field(default_factory=list)

    def by_status(self, status: str) -> list[Outcome]:
        return [o for o in self.outcomes if o.status == status]

    def summary(self) -> str:
        counts = {s: len(self.by_status(s)) for s in ("passed", "unsupported", "wrong", "crashed")}
        return (
            f"{counts['passed']} passed, {counts['unsupported']} unsupported, "
            f"{counts['wrong']} wrong, {counts['crashed']} crashed, of {len(self.outcomes)} tried "
            f"({self.total_cases} node cases in onnx {self.onnx_version})"
        )


def collect_cases():
    """All ONNX backend node test cases (built by the generators in the onnx wheel)."""
    from onnx.backend.test.case.node import collect_testcases

    # the generators print numpy warnings while they build their expected outputs
    with warnings.catch_warnings(), contextlib.redirect_stdout(io.StringIO()):
        warnings.simplefilter("ignore")
        with np.errstate(all="ignore"):
            return collect_testcases()


def is_candidate(model: onnx.ModelProto, supported: frozenset[str]) -> bool:
    nodes = model.graph.node
    return bool(nodes) and all(n.domain in ("", "ai.onnx") and n.op_type in supported for n in nodes)


# Inputs the importer needs as constants (they are parameters of the layer, not data); the
# backend cases feed some of them as graph inputs, so the report freezes them to initializers
# with the case's own values before importing. (Clip's bounds may stay inputs: nn.clip takes
# them as operands.)
PARAMETER_INPUTS = {"Reshape": (1,), "Squeeze": (1,), "Unsqueeze": (1,), "Dropout": (1, 2), "Resize": (1, 2, 3)}


def freeze_parameters(case) -> tuple[onnx.ModelProto, list[np.ndarray], list[str]]:
    """The case's model with parameter inputs turned into initializers; the remaining inputs."""
    model = onnx.ModelProto()
    model.CopyFrom(case.model)
    graph = model.graph
    parameter_names = {
        node.input[i]
        for node in graph.node
        for i in PARAMETER_INPUTS.get(node.op_type, ())
        if i < len(node.input) and node.input[i]
    }
    inputs, _ = case.data_sets[0]
    initializers = {t.name for t in graph.initializer}
    graph_inputs = [i for i in graph.input if i.name not in initializers]
    kept, kept_arrays, frozen = [], [], []
    for value_info, array in zip(graph_inputs, inputs):
        if value_info.name in parameter_names and isinstance(array, (np.ndarray, np.generic)):
            graph.initializer.append(onnx.numpy_helper.from_array(np.asarray(array), value_info.name))
            frozen.append(value_info.name)
        else:
            kept.append(value_info)
            kept_arrays.append(array)
    if frozen:
        del graph.input[:]
        graph.input.extend(kept)
    return model, kept_arrays, frozen


def run_case(case) -> Outcome:
    if len(case.data_sets) != 1:
        return Outcome(case.name, "unsupported", f"{len(case.data_sets)} data sets (the report handles one)")
    model, inputs, frozen = freeze_parameters(case)
    note = f"parameter inputs {', '.join(frozen)} frozen to constants" if frozen else ""
    try:
        module = import_onnx(model)
    except XnpuError as error:
        return Outcome(case.name, "unsupported", str(error))
    except Exception as error:  # a bug in the importer: report it, do not hide it
        return Outcome(case.name, "crashed", f"import raised {type(error).__name__}: {error}".splitlines()[0])
    initializers = {t.name for t in model.graph.initializer}
    input_names = [i.name for i in model.graph.input if i.name not in initializers]
    output_names = [o.name for o in model.graph.output]
    _, expected = case.data_sets[0]
    try:
        with np.errstate(all="ignore"):
            outputs = xnpu.run(module, dict(zip(input_names, inputs)))
    except Exception as error:
        return Outcome(case.name, "crashed", f"run raised {type(error).__name__}: {error}".splitlines()[0])
    for name, reference in zip(output_names, expected):
        ours, reference = outputs[name], np.asarray(reference)
        if ours.shape != reference.shape:
            return Outcome(case.name, "wrong", f"output '{name}' has shape {list(ours.shape)}, expected {list(reference.shape)}")
        if np.allclose(ours, reference, rtol=RTOL, atol=ATOL, equal_nan=True):
            continue
        diff = np.abs(ours.astype(np.float64) - reference).max()
        # some generators round their expected values; their declared tolerance says by how much
        if np.allclose(ours, reference, rtol=case.rtol, atol=case.atol, equal_nan=True):
            note = "; ".join(filter(None, [note, f"within the case's own tolerance rtol {case.rtol:g} (off by {diff:.3g})"]))
            continue
        return Outcome(case.name, "wrong", f"output '{name}' differs by up to {diff:.3g}")
    return Outcome(case.name, "passed", note)


def build_report(cases=None) -> Report:
    cases = collect_cases() if cases is None else cases
    report = Report(onnx.__version__, len(cases))
    for case in sorted(cases, key=lambda c: c.name):
        if is_candidate(case.model, SUPPORTED_OPS):
            report.outcomes.append(run_case(case))
    return report


def markdown(report: Report) -> str:
    lines = [
        "# ONNX backend node conformance",
        "",
        "Generated by `python -m xnpu.tools.conformance_report` (checked by",
        "`test/python/test_conformance.py`); do not edit by hand.",
        "",
        f"Cases are rebuilt offline from the generators in onnx {report.onnx_version}; every case whose",
        "ops are all handled by the importer is imported, run with `xnpu.run` and compared to the",
        f"expected outputs (rtol {RTOL:g}, atol {ATOL:g}).",
        "",
        f"Importer ops: {', '.join(sorted(SUPPORTED_OPS))}.",
        "",
        f"**{report.summary()}.**",
        "",
    ]
    sections = [
        ("wrong", "Wrong answers (bugs)"),
        ("crashed", "Crashes (bugs)"),
        ("passed", "Passed"),
        ("unsupported", "Unsupported"),
    ]
    for status, title in sections:
        outcomes = report.by_status(status)
        if not outcomes:
            continue
        lines += [f"## {title} ({len(outcomes)})", ""]
        if status == "passed":
            lines += [f"- `{o.name}`" + (f" ({o.detail})" if o.detail else "") for o in outcomes]
        else:
            lines += ["| case | reason |", "|---|---|"]
            lines += [f"| `{o.name}` | {o.detail.replace('|', '/')} |" for o in outcomes]
        lines.append("")
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="conformance_report", description=__doc__.splitlines()[0])
    parser.add_argument("--check", action="store_true", help="only check that the document is up to date")
    parser.add_argument("-o", "--output", type=Path, default=DOC_PATH)
    args = parser.parse_args(argv)
    report = build_report()
    text = markdown(report)
    print(report.summary())
    if args.check:
        current = args.output.read_text() if args.output.exists() else ""
        if current != text:
            print(f"{args.output} is out of date; rerun without --check", file=sys.stderr)
            return 1
        return 0

    write_atomically(args.output, text)
    return 0


if __name__ == "__main__":
    sys.exit(main())
