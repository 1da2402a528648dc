"""ONNX backend node conformance of the front end, the float semantics and the host ops.

    python -m xnpu.tools.conformance_report            # rewrites docs/conformance.md
    python -m xnpu.tools.conformance_report --check    # exit 1 if it is out of date

The onnx wheel does not ship the backend test data but ships its generators:
`onnx.backend.test.case.node.collect_testcases()` rebuilds every node test case (model plus
input/expected output arrays) offline. Every case is run by onnxruntime first (the CPU
runtime a node the front end does not model runs on); each case onnxruntime runs is
imported and run with `xnpu.run` on every data set; the outcome is one of

- passed: the outputs match the expected ones,
- as onnxruntime: they match onnxruntime's, which differ from the expected ones (the node
  runs on onnxruntime, which computes it so),
- unsupported: the importer refused it with an XnpuError (its message is the reason),
- wrong: it imported but computed a different answer (a bug; the test fails on these),
- crashed: anything other than an XnpuError was raised (also a bug),
- not run by onnxruntime: onnxruntime cannot load or run the case (its message says why).
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
from xnpu.core.errors import XnpuError, first_line
from xnpu.core.files import write_atomically
from xnpu.frontend.onnx_import import SUPPORTED_OPS, import_onnx

DOC_PATH = Path(__file__).resolve().parents[1] / "docs" / "conformance.md"
RTOL = 1e-4
ATOL = 1e-5


STATUSES = ("passed", "as onnxruntime", "unsupported", "wrong", "crashed", "not run by onnxruntime")


@dataclass(frozen=True)
class Outcome:
    name: str
    status: str  # one of STATUSES
    detail: str = ""


@dataclass
class Report:
    onnx_version: str
    total_cases: int
    outcomes: list[Outcome] = field(default_factory=list)

    def by_status(self, status: str) -> list[Outcome]:
        return [o for o in self.outcomes if o.status == status]

    def summary(self) -> str:
        counts = {s: len(self.by_status(s)) for s in STATUSES}
        run = len(self.outcomes) - counts["not run by onnxruntime"]
        return (
            f"{counts['passed']} passed, {counts['as onnxruntime']} as onnxruntime, {counts['unsupported']} unsupported, "
            f"{counts['wrong']} wrong, {counts['crashed']} crashed, of {run} cases onnxruntime runs "
            f"({counts['not run by onnxruntime']} more it does not; {self.total_cases} node cases in onnx {self.onnx_version})"
        )


def collect_cases():
    """All ONNX backend node test cases (built by the generators in the onnx wheel)."""
    from onnx.backend.test.case import base
    from onnx.backend.test.case.node import collect_testcases
    from onnx.reference.ops import op_pool_common

    # the generators print numpy warnings while they build their expected outputs
    with warnings.catch_warnings(), contextlib.redirect_stdout(io.StringIO()), \
            _replaced(op_pool_common, "pool", _windows_at_once(op_pool_common.pool)), \
            _replaced(base, "process_snippet", _no_snippet):
        warnings.simplefilter("ignore")
        with np.errstate(all="ignore"):
            return collect_testcases()


@contextlib.contextmanager
def _replaced(module, name: str, value):
    original = getattr(module, name)
    setattr(module, name, value)
    try:
        yield
    finally:
        setattr(module, name, original)


def _no_snippet(op_name: str, name: str, export) -> tuple[str, str]:
    # the generators' source text, for onnx's operator documentation: 1.5 s of tokenizing the report never reads
    return name, ""


def _windows_at_once(reference_pool):
    """onnx's reference pooling, which builds each output value's window in a Python loop (its
    three 32x32x32 cases of AveragePool, MaxPool and LpPool took ~8 s of the report's ~25), as
    one strided view of the windows reduced at once where nothing is padded or dilated and no
    value is NaN; any other call is the reference's own. The same values up to float32's
    summation order (1 ulp), far inside the report's tolerance."""

    def pool(padded, x_shape, kernel, strides, out_shape, pooling_type, pads_required=None, pads=None,
             dilations=None, count_include_pad=0, p=1):
        spatial = len(x_shape) - 2
        strides = list(strides or [1] * spatial)
        counts = [(size - k) // s + 1 for size, k, s in zip(x_shape[2:], kernel, strides)]
        if (pads_required is not None or pads is not None or dilations is not None
                or pooling_type not in ("AVG", "MAX", "LPPOOL") or tuple(padded.shape) != tuple(x_shape)
                or list(out_shape) != counts or np.isnan(padded).any()):
            return reference_pool(padded, x_shape, kernel, strides, out_shape, pooling_type, pads_required, pads,
                                  dilations, count_include_pad, p)
        windows = np.lib.stride_tricks.sliding_window_view(padded, tuple(kernel), axis=tuple(range(2, 2 + spatial)))
        windows = windows[(slice(None), slice(None), *(slice(None, None, s) for s in strides))]
        within = tuple(range(-spatial, 0))
        if pooling_type == "AVG":
            y = windows.mean(axis=within)
        elif pooling_type == "MAX":
            y = windows.max(axis=within)
        else:
            y = (np.abs(windows) ** p).sum(axis=within) ** (1.0 / p)
        return y.astype(padded.dtype)

    return pool


# Inputs the importer needs as constants (they are parameters of the layer, not data: a
# reduction's axes decide its output's rank); the backend cases feed some of them as graph
# inputs, so the report freezes them to initializers with the case's own values before
# importing. (Clip's bounds may stay inputs: nn.clip takes them as operands.)
PARAMETER_INPUTS = {"Reshape": (1,), "Squeeze": (1,), "Unsqueeze": (1,), "Dropout": (1, 2), "Resize": (1, 2, 3),
                    **{f"Reduce{kind}": (1,) for kind in ("Sum", "Mean", "Max", "Min", "Prod", "L1", "L2", "LogSum",
                                                          "LogSumExp", "SumSquare")}}


def freeze_parameters(case, inputs) -> tuple[onnx.ModelProto, list[np.ndarray], list[str]]:
    """The case's model with parameter inputs turned into initializers (values of `inputs`,
    one data set's); the remaining inputs."""
    model = onnx.ModelProto()
    model.CopyFrom(case.model)
    graph = model.graph
    parameter_names = {
        node.input[i]
        for node in graph.node
        for i in PARAMETER_INPUTS.get(node.op_type, ())
        if i < len(node.input) and node.input[i]
    }
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


def onnxruntime_outputs(model: onnx.ModelProto, inputs) -> list:
    """What onnxruntime computes for the case (its default session, the CPU provider)."""
    import onnxruntime

    options = onnxruntime.SessionOptions()
    options.log_severity_level = 4  # its log lines about the cases' models are not the report's
    # one thread, as xnpu's own host sessions (semantics/onnx_runtime.py): a case's tensors are
    # tiny, and a session's thread pool cost more to start than its run (~1,900 sessions)
    options.intra_op_num_threads = 1
    options.inter_op_num_threads = 1
    session = onnxruntime.InferenceSession(model.SerializeToString(), options, providers=["CPUExecutionProvider"])
    names = [i.name for i in session.get_inputs()]
    return session.run(None, dict(zip(names, inputs)))


# float16 results are compared at half precision's own resolution (its epsilon is 2^-10)
HALF_TOLERANCE = 1e-3


def _close(ours, reference, rtol: float, atol: float) -> bool:
    if isinstance(reference, list) or isinstance(ours, list):  # sequences
        return (isinstance(reference, list) and isinstance(ours, list) and len(ours) == len(reference)
                and all(_close(a, b, rtol, atol) for a, b in zip(ours, reference)))
    if reference is None or ours is None:  # an empty optional
        return reference is None and ours is None
    ours, reference = np.asarray(ours), np.asarray(reference)
    if ours.shape != reference.shape:
        return False
    if reference.dtype == np.float16:
        rtol, atol = max(rtol, HALF_TOLERANCE), max(atol, HALF_TOLERANCE)
    if reference.dtype.kind in "fc" or ours.dtype.kind in "fc":
        return bool(np.allclose(ours.astype(reference.dtype) if reference.dtype.kind in "fc" else ours, reference,
                                rtol=rtol, atol=atol, equal_nan=True))
    return bool(np.array_equal(ours, reference))


def _difference(ours, reference) -> str:
    if isinstance(reference, list) or reference is None or isinstance(ours, list) or ours is None:
        return "differs"
    ours, reference = np.asarray(ours), np.asarray(reference)
    if ours.shape != reference.shape:
        return f"has shape {list(ours.shape)}, expected {list(reference.shape)}"
    if reference.dtype.kind in "fcb" and reference.size:
        return f"differs by up to {np.abs(ours.astype(np.float64) - reference.astype(np.float64)).max():.3g}"
    return "differs"


def run_case(case) -> Outcome:
    notes: list[str] = []
    as_onnxruntime: list[str] = []
    for inputs, expected in case.data_sets:
        inputs, expected = [_array(value) for value in inputs], [_array(value) for value in expected]
        try:
            reference = onnxruntime_outputs(case.model, inputs)
        except Exception as error:  # onnxruntime raises its own pybind types
            return Outcome(case.name, "not run by onnxruntime", first_line(error))
        model, kept, frozen = freeze_parameters(case, inputs)
        if frozen:
            notes.append(f"parameter inputs {', '.join(frozen)} frozen to constants")
        initializers = {t.name for t in model.graph.initializer}
        graph_inputs = [i for i in model.graph.input if i.name not in initializers]
        shapes = {i.name: np.shape(a) for i, a in zip(graph_inputs, kept)
                  if isinstance(a, np.ndarray | np.generic) and not _static(i)}
        try:
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")  # notes (a batch of 1 chosen), not outcomes
                module = import_onnx(model, input_shapes=shapes)
        except XnpuError as error:
            return Outcome(case.name, "unsupported", str(error))
        except Exception as error:  # a bug in the importer: report it, do not hide it
            return Outcome(case.name, "crashed", f"import raised {type(error).__name__}: {error}".splitlines()[0])
        try:
            with np.errstate(all="ignore"):
                outputs = xnpu.run(module, {i.name: a for i, a in zip(graph_inputs, kept)})
        except XnpuError as error:
            return Outcome(case.name, "wrong", f"run refused it: {error}")
        except Exception as error:
            return Outcome(case.name, "crashed", f"run raised {type(error).__name__}: {error}".splitlines()[0])
        for value_info, wanted, runtime in zip(model.graph.output, expected, reference):
            ours = outputs[value_info.name]
            if _close(ours, wanted, RTOL, ATOL):
                continue
            # some generators round their expected values; their declared tolerance says by how much
            if _close(ours, wanted, case.rtol, case.atol):
                notes.append(f"within the case's own tolerance rtol {case.rtol:g} (off by "
                             f"{np.abs(np.asarray(ours, np.float64) - np.asarray(wanted, np.float64)).max():.3g})")
                continue
            if _close(ours, runtime, RTOL, ATOL):
                as_onnxruntime.append(f"output '{value_info.name}': onnxruntime's {_difference(runtime, wanted)}")
                continue
            return Outcome(case.name, "wrong", f"output '{value_info.name}' {_difference(ours, wanted)}")
    if as_onnxruntime:
        return Outcome(case.name, "as onnxruntime", "; ".join(dict.fromkeys(as_onnxruntime)))
    return Outcome(case.name, "passed", "; ".join(dict.fromkeys(notes)))


def _array(value):
    """A case input as onnxruntime and xnpu take it: numpy scalars and TensorProtos as arrays."""
    if isinstance(value, onnx.TensorProto):
        return onnx.numpy_helper.to_array(value)
    return np.asarray(value) if isinstance(value, np.generic) else value


def _static(value_info: onnx.ValueInfoProto) -> bool:
    tensor = value_info.type.tensor_type
    return tensor.HasField("shape") and all(d.HasField("dim_value") for d in tensor.shape.dim)


def build_report(cases=None) -> Report:
    cases = collect_cases() if cases is None else cases
    report = Report(onnx.__version__, len(cases))
    for case in sorted(cases, key=lambda c: c.name):
        report.outcomes.append(run_case(case))
    return report


def markdown(report: Report) -> str:
    lines = [
        "# ONNX backend node conformance",
        "",
        "Generated by `python -m xnpu.tools.conformance_report` (checked by",
        "`test/python/test_conformance.py`); do not edit by hand.",
        "",
        f"Cases are rebuilt offline from the generators in onnx {report.onnx_version}. Each case is run by",
        "onnxruntime first; every case it runs is imported, run with `xnpu.run` (the float level) on",
        f"each of its data sets and compared to the expected outputs (rtol {RTOL:g}, atol {ATOL:g}).",
        "",
        f"Ops the `nn` dialect models: {', '.join(sorted(SUPPORTED_OPS))}. Every other node is",
        "imported as an `nn.onnx` op that onnxruntime runs ([onnx-import.md](onnx-import.md)); where",
        "onnxruntime's answer differs from the expected one, xnpu's is onnxruntime's (\"as onnxruntime\").",
        "",
        f"**{report.summary()}.**",
        "",
    ]
    sections = [
        ("wrong", "Wrong answers (bugs)"),
        ("crashed", "Crashes (bugs)"),
        ("unsupported", "Unsupported"),
        ("as onnxruntime", "As onnxruntime (its outputs differ from the expected ones)"),
        ("passed", "Passed"),
        ("not run by onnxruntime", "Not run by onnxruntime"),
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
