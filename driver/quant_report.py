"""Per-layer quantization error: where in the network does int8 lose accuracy?

A layer is an nn op of the float graph that has a location (its ONNX node). The lowering
keeps that location on every fixed op the nn op becomes, and the last of them whose result
is an integer tensor holds the layer's int8 output, with the layer's output scale as its
`scale` property. Both modules run on the same samples, together op by op: a layer's float
output is compared with its int8 output as soon as both exist, then dropped; running sums
make the statistics, so memory grows neither with the layers nor with the samples:

    cosine      sum(f * d) / sqrt(sum(f^2) * sum(d^2))    f float, d = q * scale dequantized
    SQNR (dB)   10 * log10(sum(f^2) / sum((f - d)^2))
    max error   max |f - d| / scale                       in units of the scale (LSB)
    saturated   fraction of f outside [-qmax * scale, qmax * scale] (+ half a step)

The statistics pool all elements of all samples. The error of a layer includes the error
it inherits from the layers before it, so the place where quality drops is the first bad
layer along a path, not necessarily the worst one; the graph pictures (`report.html`, which
any browser opens, drawn by driver/report_html.py; `report.dot` for Graphviz; edges from
the float graph's def-use) show both.

A conv or gemm feeding only a relu takes the relu's scale in the lowering (refine_scales),
so its int8 output cannot hold negative values below -qmax * scale; those values are
discarded by the relu anyway, but they count as saturation and error of the conv layer.
"""

from __future__ import annotations

import csv
import io
import json
import math
import shutil
import subprocess
import sys
from collections.abc import Mapping
from dataclasses import asdict, dataclass, field
from pathlib import Path

import numpy as np
from xdsl.dialects.builtin import FusedLoc, IntegerType, ModuleOp, NameLoc, TensorType, UnknownLoc
from xdsl.ir import Attribute, BlockArgument, Operation, SSAValue
from xdsl.printer import Printer

from xnpu.core.errors import XnpuError, printable
from xnpu.core.files import write_directory_atomically
from xnpu.dialects import fixed, nn
from xnpu.driver.layer_stats import (
    INPUT_PREFIX,
    ROOFLINE_COLUMNS,
    LayerRoofline,
    LayerStats,
    db_text,
    roofline_cells,
    sqnr_colour,
    worst_layer,
)
from xnpu.driver.pipeline import float_cleanup
from xnpu.driver.report_html import report_html
from xnpu.interpreters.function import (
    BATCH_MEMORY_BYTES,
    CompiledFunction,
    batches,
    bind_inputs,
    default_batch,
    entry_function,
    signature,
    value_names,
)

REPORT_FILES = ("report.txt", "report.csv", "report.json", "report.html", "report.dot", "report.svg")


# --------------------------------------------------------------------------------------
# Matching layers of the two modules
# --------------------------------------------------------------------------------------


def location_name(location: Attribute) -> str:
    """`conv1` for loc("conv1"), `conv1+bn1` for a fused location (a folded pair)."""
    if isinstance(location, NameLoc):
        return location.desc.data
    if isinstance(location, FusedLoc):
        return "+".join(location_name(part) for part in location.locations.data)
    stream = io.StringIO()
    Printer(stream=stream).print_attribute(location)
    return stream.getvalue()


def _is_layer(op: Operation) -> bool:
    """An nn op computing a float activation (a host op's int64 or bool values are no layer)."""
    return (op.dialect_name() == "nn" and not isinstance(op, nn.ConstantOp) and not isinstance(op.location, UnknownLoc)
            and bool(op.results) and nn.is_float(op.results[0]))


def _integer_result(op: Operation) -> bool:
    """A fixed op's int8 codes (not an nn.onnx op's int64 values)."""
    if op.dialect_name() != "fixed" or len(op.results) != 1:
        return False
    type_ = op.results[0].type
    return isinstance(type_, TensorType) and isinstance(type_.get_element_type(), IntegerType)


@dataclass
class _Layer:
    location: Attribute
    name: str
    float_op: Operation
    fixed_op: Operation | None = None
    inputs: list[str] = field(default_factory=list)


def _producers(value: SSAValue, own: Attribute, layer_of: Mapping[Attribute, _Layer]) -> list[str]:
    """The layers (or graph inputs) `value` comes from, looking through ops that are no layer."""
    if isinstance(value, BlockArgument):
        return [INPUT_PREFIX + _argument_name(value)]
    owner = value.owner
    if isinstance(owner, nn.ConstantOp):
        return []
    layer = layer_of.get(owner.location) if _is_layer(owner) else None
    if layer is not None and owner.location != own:
        return [layer.name]
    found: list[str] = []
    for operand in owner.operands:
        found += [p for p in _producers(operand, own, layer_of) if p not in found]
    return found


def _argument_name(argument: BlockArgument) -> str:
    function = argument.block.parent_op()
    return value_names(function.arg_attrs, len(argument.block.args), "input")[argument.index]


def match_layers(float_module: ModuleOp, fixed_module: ModuleOp) -> tuple[list[_Layer], list[str]]:
    """Layers of the float graph in program order, each with its fixed output op; and the names
    of layers the fixed module has no integer output for."""
    layers: dict[Attribute, _Layer] = {}
    float_ops: dict[Attribute, list[Operation]] = {}
    for op in entry_function(float_module).walk():
        if not _is_layer(op):
            continue
        float_ops.setdefault(op.location, []).append(op)
        layer = layers.pop(op.location, None) or _Layer(op.location, location_name(op.location), op)
        layer.float_op = op  # the last op of a location holds its output
        layers[op.location] = layer  # re-inserted: program order of the last op
    for location, ops in float_ops.items():
        for op in ops:
            for operand in op.operands:
                for producer in _producers(operand, location, layers):
                    if producer not in layers[location].inputs:
                        layers[location].inputs.append(producer)
    for op in entry_function(fixed_module).walk():
        layer = layers.get(op.location)
        if layer is not None and _integer_result(op):
            layer.fixed_op = op
    matched = [layer for layer in layers.values() if layer.fixed_op is not None]
    unmatched = [layer.name for layer in layers.values() if layer.fixed_op is None]
    by_name = {layer.name: layer for layer in layers.values()}

    def through(name: str, seen: set[str]) -> list[str]:
        """A layer's input as the report draws it: a layer with no integer output (a float op
        the host runs) stands for the inputs it reads."""
        layer = by_name.get(name)
        if layer is None or layer.fixed_op is not None or name in seen:
            return [name] if name not in seen else []
        seen.add(name)
        found: list[str] = []
        for producer in layer.inputs:
            found += [p for p in through(producer, seen) if p not in found]
        return found

    for layer in matched:
        inputs: list[str] = []
        for producer in layer.inputs:
            inputs += [p for p in through(producer, set()) if p not in inputs]
        layer.inputs = inputs
    return matched, unmatched


# --------------------------------------------------------------------------------------
# Running both modules and accumulating the statistics
# --------------------------------------------------------------------------------------


def _compare_in_step(float_steps, fixed_steps, float_layers: Mapping[Operation, str],
                     fixed_layers: Mapping[Operation, str], accumulators: Mapping[str, _Accumulator], samples: int) -> None:
    """Run the float and the fixed graph (CompiledFunction.stepwise) together: the fixed run
    goes on until it computes a layer's int8 output, the float run until it has computed the
    same layer's float output, and the pair goes into the layer's statistics at once. With
    the layers in the same order in both graphs, no layer's float output outlives its
    comparison: the report holds one layer of each side, beside what each run keeps alive."""
    pending: dict[str, np.ndarray] = {}
    compared = 0
    for op, results in fixed_steps:
        name = fixed_layers.get(op)
        if name is None:
            continue
        while name not in pending:
            step = next(float_steps, None)
            if step is None:
                raise XnpuError(f"layer '{name}': the float graph ended before computing it")
            float_op, float_results = step
            float_name = float_layers.get(float_op)
            if float_name is not None:
                pending[float_name] = np.asarray(float_results[0])
        try:
            accumulators[name].update(pending.pop(name), np.asarray(results[0]), samples)
        except XnpuError as error:
            raise XnpuError(f"layer '{name}': {error}") from None
        compared += 1
        if compared == len(fixed_layers):
            break  # what follows the last layer (the graph's outputs) is not compared
    float_steps.close()
    fixed_steps.close()


class _Accumulator:
    def __init__(self, scale: np.ndarray, bits: int):
        self.scale = scale
        self.qmax = 2 ** (bits - 1) - 1
        self.ff = self.dd = self.fd = self.ee = 0.0
        self.max_error = 0.0
        self.saturated = 0
        self.count = 0
        self.samples = 0

    def _broadcast_scale(self, shape: tuple[int, ...]) -> np.ndarray:
        if self.scale.size == 1:
            return self.scale.reshape(())
        channel_shape = [1] * len(shape)
        channel_shape[1] = self.scale.size  # per-channel scales are along the channel axis
        return self.scale.reshape(channel_shape)

    def update(self, reference: np.ndarray, codes: np.ndarray, samples: int = 1) -> None:
        if reference.shape != codes.shape:
            raise XnpuError(f"float shape {list(reference.shape)} and integer shape {list(codes.shape)} differ")
        # Element-wise in float32 (its rounding, ~1e-7 of a value, is far below an int8 step's
        # ~1e-2) and sums in float64: this is the report's own cost, most of it once (4x fewer
        # bytes moved than float64 copies and BLAS dot products). One C-ordered copy each: the
        # interpreters' values are often transposed views.
        scale = self._broadcast_scale(codes.shape).astype(np.float32)
        f = np.ascontiguousarray(reference, dtype=np.float32)
        d = np.multiply(codes, scale, dtype=np.float32, order="C")
        error = np.subtract(f, d)
        flat_f, flat_d, flat_error = f.ravel(), d.ravel(), error.ravel()
        self.ff += float(np.einsum("i,i->", flat_f, flat_f, dtype=np.float64))
        self.dd += float(np.einsum("i,i->", flat_d, flat_d, dtype=np.float64))
        self.fd += float(np.einsum("i,i->", flat_f, flat_d, dtype=np.float64))
        self.ee += float(np.einsum("i,i->", flat_error, flat_error, dtype=np.float64))
        np.abs(error, out=error)
        if error.size:
            self.max_error = max(self.max_error, float(np.max(error / scale) if scale.size > 1 else error.max() / scale))
        magnitude = np.abs(f, out=error)  # f may be the caller's own array: never written
        self.saturated += int(np.count_nonzero(magnitude > (self.qmax + 0.5) * scale))
        self.count += f.size
        self.samples += samples

    def cosine(self) -> float:
        if self.ff == 0.0 and self.dd == 0.0:
            return 1.0
        if self.ff == 0.0 or self.dd == 0.0:
            return 0.0
        return self.fd / math.sqrt(self.ff * self.dd)

    def sqnr_db(self) -> float:
        if self.ee == 0.0:
            return math.inf
        if self.ff == 0.0:
            return -math.inf
        return 10.0 * math.log10(self.ff / self.ee)


# The two runs go on together (_compare_in_step), each with its own values alive: the samples per
# run are as many as fit this much memory for both, as calibration's float run alone has.
REPORT_MEMORY_BYTES = BATCH_MEMORY_BYTES
# By default the report runs on the first eighth of the calibration samples. Calibration runs the
# float graph over every sample (twice when they do not fit one batch), the report the float graph
# and the fixed one (about 1.5 times as costly) once over its samples: an eighth keeps it near a
# fifth of the compile time, and a layer's statistics still pool thousands of values or more
# (docs/reliability.md).
REPORT_SHARE = 8


def _scale_of(op: Operation, name: str) -> np.ndarray:
    scale = fixed.scale_values(op.properties.get("scale"))
    if scale is None:
        raise XnpuError(f"layer '{name}': its integer output ({op.name}) carries no scale to dequantize with")
    return np.asarray(scale, dtype=np.float64)


def layer_report(
    float_module: ModuleOp,
    fixed_module: ModuleOp,
    data: np.ndarray | Mapping[str, np.ndarray],
    samples: int | None = None,
    progress: bool | None = None,
    share: int = 1,
) -> list[LayerStats]:
    """Per-layer error of `fixed_module` against `float_module` on the samples in `data`.

    `float_module` is the nn module before quantization (`xnpu.quantize` changes its
    argument in place: quantize a clone); it is not changed here. The float-level cleanup
    the quantizer starts with (batch norm folding, no-op removal) is applied to a copy so
    the locations of the two modules match. `samples` limits the run to the first N; without
    it the report runs on the first 1/`share` of them (the tools: REPORT_SHARE).
    """
    from tqdm import tqdm

    float_module = float_cleanup(float_module.clone())
    layers, _ = match_layers(float_module, fixed_module)
    if not layers:
        raise XnpuError("no layer of the float graph has a located integer output in the fixed module")
    input_specs, _ = signature(float_module)
    bound = bind_inputs(input_specs, data)
    fixed_bound = bind_inputs(signature(fixed_module)[0], data)
    count = bound.samples
    if samples is not None and samples < 1:
        raise XnpuError(f"the number of report samples must be >= 1, got {samples}")
    count = min(count, samples if samples is not None else max(1, -(-count // share)))
    if count == 0:
        raise XnpuError("the report data holds no samples")
    accumulators = {
        layer.name: _Accumulator(_scale_of(layer.fixed_op, layer.name), fixed.width_of(layer.fixed_op.results[0]))
        for layer in layers
    }
    float_layers = {layer.float_op: layer.name for layer in layers}
    fixed_layers = {layer.fixed_op: layer.name for layer in layers}
    float_run, fixed_run = CompiledFunction(float_module), CompiledFunction(fixed_module)
    several = count > 1 or fixed_bound.samples > 1
    # both modules keep samples apart along axis 0: run as many at once as both allow, with
    # both runs' live values within the memory one run has in calibration
    each_run = REPORT_MEMORY_BYTES // 2
    size = min(default_batch(float_run, each_run), default_batch(fixed_run, each_run)) if several else 1

    def samples_of(inputs, start: int, stop: int) -> tuple[np.ndarray, ...]:
        return tuple(np.ascontiguousarray(a) for a in inputs.take(start, stop))

    show = sys.stderr.isatty() if progress is None else progress
    with tqdm(total=count, desc="report", unit="sample", file=sys.stderr, disable=not show, leave=False) as bar:
        for start, stop in batches(count, size):
            _compare_in_step(float_run.stepwise(samples_of(bound, start, stop)),
                             fixed_run.stepwise(samples_of(fixed_bound, start, stop)),
                             float_layers, fixed_layers, accumulators, stop - start)
            bar.update(stop - start)
    stats = []
    for layer in layers:
        accumulator = accumulators[layer.name]
        scale = accumulator.scale
        stats.append(
            LayerStats(
                name=layer.name,
                op=layer.float_op.name.removeprefix("nn."),
                scale=float(scale[0]) if scale.size == 1 else [float(s) for s in scale],
                bits=fixed.width_of(layer.fixed_op.results[0]),
                samples=accumulator.samples,
                elements=accumulator.count // max(accumulator.samples, 1),
                cosine=accumulator.cosine(),
                sqnr_db=accumulator.sqnr_db(),
                max_error_lsb=accumulator.max_error,
                saturated=accumulator.saturated / accumulator.count if accumulator.count else 0.0,
                inputs=list(layer.inputs),
            )
        )
    return stats


# --------------------------------------------------------------------------------------
# Writers
# --------------------------------------------------------------------------------------


def _number(value: float) -> float | str:
    """JSON has no infinities: they are written as the strings "inf" / "-inf"."""
    if math.isinf(value):
        return "inf" if value > 0 else "-inf"
    return value





TEXT_COLUMNS = ("layer", "op", "runs on", "scale", "cosine", "SQNR dB", "max err LSB", "saturated %")
def attach_roofline(stats: list[LayerStats], by_layer: Mapping[str, int], compute: Mapping[str, int],
                    dma: Mapping[str, int], ddr_bytes: Mapping[str, int], compulsory: Mapping[str, int]) -> list[str]:
    """Give each report layer the roofline of the program's layers (RunStats' per-layer maps,
    keyed by ONNX node names joined with " + ") that name it; a fused program layer (a conv and
    its relu) counts for the first report layer it names. Returns the program layers no report
    layer names."""
    owner: dict[str, LayerStats] = {}
    for layer in stats:
        for name in layer.name.split("+"):
            owner.setdefault(name.strip(), layer)
    unmatched = []
    for key in sorted(set(by_layer) | set(compute) | set(dma) | set(ddr_bytes)):
        layer = next((owner[n] for n in key.split(" + ") if n in owner), None)
        if layer is None:
            unmatched.append(key)
            continue
        r = layer.roofline = layer.roofline or LayerRoofline()
        r.cycles += by_layer.get(key, 0)
        r.compute += compute.get(key, 0)
        r.dma += dma.get(key, 0)
        r.ddr_bytes += ddr_bytes.get(key, 0)
        r.compulsory_bytes += compulsory.get(key, 0)
    return unmatched


def report_text(stats: list[LayerStats], title: str = "", notes: list[str] = ()) -> str:
    worst = worst_layer(stats)
    columns = TEXT_COLUMNS + (ROOFLINE_COLUMNS if any(s.roofline for s in stats) else ())
    rows = [
        (
            printable(s.name),
            s.op,
            s.runs_on,
            s.scale_text,
            f"{s.cosine:.6f}",
            db_text(s.sqnr_db),
            f"{s.max_error_lsb:.2f}",
            f"{100.0 * s.saturated:.3f}",
        ) + (roofline_cells(s.roofline) if len(columns) > len(TEXT_COLUMNS) else ())
        for s in stats
    ]
    widths = [max(len(columns[i]), *(len(row[i]) for row in rows)) for i in range(len(columns))]
    numeric = set(range(3, len(columns)))

    def line(cells, mark: str = "") -> str:
        parts = [cell.rjust(widths[i]) if i in numeric else cell.ljust(widths[i]) for i, cell in enumerate(cells)]
        return ("  ".join(parts) + mark).rstrip()

    out = []
    if title:
        out.append(title)
    samples = stats[0].samples if stats else 0
    out.append(f"{len(stats)} layers, {samples} samples; SQNR and cosine of the dequantized int8 output vs float")
    out.append("")
    out.append(line(columns))
    out.append(line(["-" * w for w in widths]))
    for s, row in zip(stats, rows):
        out.append(line(row, "  <- worst" if s is worst else ""))
    out.append("")
    if worst is not None:
        out.append(f"worst layer: {printable(worst.name)} ({worst.op}), SQNR {db_text(worst.sqnr_db)} dB, cosine {worst.cosine:.6f}")
    out.extend(notes)
    return "\n".join(out) + "\n"


# OWASP's advice against CSV injection: a cell a spreadsheet would take for a formula (one that
# starts with =, +, -, @, a tab or a carriage return) starts with ' instead, and cells holding
# the separator or a quote are quoted (the csv module does that). Only cells from the model's
# names are text; the numbers are written as numbers.
_FORMULA_START = ("=", "+", "-", "@", "\t", "\r")


def csv_text_cell(text: str) -> str:
    return "'" + text if text.startswith(_FORMULA_START) else text


CSV_FIELDS = ("name", "op", "runs_on", "scale", "bits", "samples", "elements", "cosine", "sqnr_db", "max_error_lsb", "saturated",
              "inputs", "worst", "cycles", "compute_cycles", "dma_cycles", "roofline_ratio", "ddr_bytes", "compulsory_bytes")


def report_csv(stats: list[LayerStats]) -> str:
    worst = worst_layer(stats)
    stream = io.StringIO()
    writer = csv.writer(stream, lineterminator="\n")
    writer.writerow(CSV_FIELDS)
    for s in stats:
        scale = " ".join(repr(v) for v in s.scale) if isinstance(s.scale, list) else repr(s.scale)
        writer.writerow([csv_text_cell(s.name), s.op, s.runs_on, scale, s.bits, s.samples, s.elements, repr(s.cosine), db_text(s.sqnr_db)
                         if not math.isfinite(s.sqnr_db) else repr(s.sqnr_db), repr(s.max_error_lsb),
                         repr(s.saturated), csv_text_cell(" ".join(s.inputs)), int(s is worst),
                         *(() if s.roofline is None else (s.roofline.cycles, s.roofline.compute, s.roofline.dma,
                                                         f"{s.roofline.ratio:.4f}", s.roofline.ddr_bytes,
                                                         s.roofline.compulsory_bytes))])
    return stream.getvalue()


def report_json(stats: list[LayerStats]) -> str:
    worst = worst_layer(stats)
    layers = []
    for s in stats:
        entry = asdict(s)
        entry["sqnr_db"] = _number(s.sqnr_db)
        if s.roofline is not None:
            entry["roofline"]["ratio"] = s.roofline.ratio
        layers.append(entry)
    document = {
        "samples": stats[0].samples if stats else 0,
        "worst": None if worst is None else worst.name,
        "layers": layers,
    }
    return json.dumps(document, indent=2, allow_nan=False) + "\n"


def _dot_string(text: str) -> str:
    return '"' + text.replace("\\", "\\\\").replace('"', '\\"').replace("\n", "\\n") + '"'


def report_dot(stats: list[LayerStats], title: str = "quantization error") -> str:
    worst = worst_layer(stats)
    lines = [
        "digraph quant_report {",
        f"  label={_dot_string(title + ' (fill: SQNR, green >= 40 dB, red <= 10 dB)')};",
        "  labelloc=t;",
        "  node [shape=box, style=\"rounded,filled\", fontname=\"Helvetica\", fontsize=10];",
        "  edge [color=\"#555555\"];",
    ]
    graph_inputs = []
    for s in stats:
        for producer in s.inputs:
            if producer.startswith(INPUT_PREFIX) and producer not in graph_inputs:
                graph_inputs.append(producer)
    for name in graph_inputs:
        lines.append(f"  {_dot_string(name)} [label={_dot_string(name.removeprefix(INPUT_PREFIX))}, "
                     "shape=ellipse, style=filled, fillcolor=\"#dddddd\"];")
    for s in stats:
        label = f"{s.name}\n{s.op}\nSQNR {db_text(s.sqnr_db)} dB\ncos {s.cosine:.5f}"
        extra = ", penwidth=3, color=\"#b00000\"" if s is worst else ""
        lines.append(f"  {_dot_string(s.name)} [label={_dot_string(label)}, fillcolor=\"{sqnr_colour(s.sqnr_db)}\"{extra}];")
    for s in stats:
        for producer in s.inputs:
            lines.append(f"  {_dot_string(producer)} -> {_dot_string(s.name)};")
    lines.append("}")
    return "\n".join(lines) + "\n"


def render_svg(dot_text: str) -> tuple[bytes | None, str | None]:
    """SVG bytes from Graphviz's `dot`, or None and the reason it could not run."""
    binary = shutil.which("dot")
    if binary is None:
        return None, "report.svg not written: Graphviz 'dot' is not installed (render report.dot elsewhere)"
    try:
        done = subprocess.run([binary, "-Tsvg"], input=dot_text.encode(), capture_output=True, timeout=120)
    except (OSError, subprocess.TimeoutExpired) as error:
        return None, f"report.svg not written: dot failed ({error})"
    if done.returncode != 0:
        reason = done.stderr.decode(errors="replace").strip().splitlines()
        return None, f"report.svg not written: dot failed ({reason[0] if reason else done.returncode})"
    return done.stdout, None


def write_report(stats: list[LayerStats], directory: str | Path, title: str = "", notes: list[str] = ()) -> list[Path]:
    """Write report.{txt,csv,json,html,dot} (and .svg where Graphviz is installed) into `directory`,
    as a whole or not at all: an earlier report there is replaced, never mixed with this one."""
    dot_text = report_dot(stats, title or "quantization error")
    svg, svg_note = render_svg(dot_text)
    notes = list(notes) + ([svg_note] if svg_note else [])
    outputs = {
        "report.csv": report_csv(stats),
        "report.json": report_json(stats),
        "report.html": report_html(stats, title or "quantization error", list(notes)),
        "report.dot": dot_text,
    }
    if svg is not None:
        outputs["report.svg"] = svg
    outputs["report.txt"] = report_text(stats, title, notes)
    return write_directory_atomically(directory, outputs, owned=REPORT_FILES)
