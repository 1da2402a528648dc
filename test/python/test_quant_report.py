"""The per-layer quantization error report (driver/quant_report.py) and xnpu-quantize."""

from __future__ import annotations

import csv
import json
import math
import re
import shutil
import subprocess
from html.parser import HTMLParser
from pathlib import Path
from xml.etree import ElementTree

import numpy as np
import onnx
import pytest
from xdsl.dialects.builtin import DenseArrayBase, FloatAttr, f32, i64

import xnpu
from xnpu.dialects import fixed
from xnpu.driver.layer_stats import LayerStats, sqnr_colour, worst_layer
from xnpu.driver.pipeline import float_cleanup
from xnpu.driver.quant_report import layer_report, location_name, report_dot, write_report
from xnpu.driver.report_html import NODE_WIDTH, layered_layout  # noqa: E402
from xnpu.ir.context import make_context
from xnpu.lowering.nn_to_fixed import FoldQuantizePairsPass, LowerNNToFixedPass
from xnpu.transforms.calibrate import calibrate

# Tests marked float_sums compare statistics or scales computed through float sums: `make
# blas-variance` reruns them. The command line's files and errors and the layout compute none.

SVG = "{http://www.w3.org/2000/svg}"
EXAMPLES = Path(__file__).resolve().parents[2] / "examples"
MODEL = EXAMPLES / "tiny_cnn.onnx"
CALIBRATION = EXAMPLES / "tiny_calib.npy"


@pytest.fixture(scope="module")
def calib() -> np.ndarray:
    return np.load(CALIBRATION)


@pytest.fixture(scope="module")
def float_module():
    return xnpu.import_onnx(MODEL)


@pytest.fixture(scope="module")
def fixed_module(float_module, calib):
    return xnpu.quantize(float_module.clone(), calib, progress=False)


@pytest.fixture(scope="module")
def stats(float_module, fixed_module, calib) -> list[LayerStats]:
    return layer_report(float_module, fixed_module, calib, progress=False)


def by_name(stats: list[LayerStats]) -> dict[str, LayerStats]:
    return {s.name: s for s in stats}


@pytest.mark.float_sums
def test_every_onnx_node_is_a_layer_in_program_order(stats):
    nodes = [node.name for node in onnx.load(MODEL).graph.node]
    assert [s.name for s in stats] == nodes
    assert [s.op for s in stats][:3] == ["conv2d", "relu", "max_pool"]


@pytest.mark.float_sums
def test_layer_statistics_are_close_but_not_exact(stats, calib):
    for s in stats:
        assert s.samples == len(calib)
        assert 0.9 < s.cosine <= 1.0, s
        assert math.isfinite(s.sqnr_db) and s.sqnr_db > 0, s
        assert s.max_error_lsb > 0, s  # float activations are never all exactly on the int8 grid
        assert 0.0 <= s.saturated < 0.01
        assert isinstance(s.scale, float) and s.scale > 0


@pytest.mark.float_sums
def test_output_layer_matches_the_model_outputs(stats, float_module, fixed_module, calib):
    """The last layer is the model output: its pooled cosine and SQNR follow from xnpu.run."""
    reference = xnpu.run(float_module, calib)["logits"].astype(np.float64)
    quantized = xnpu.run(fixed_module, calib)["logits"].astype(np.float64)
    cosine = np.sum(reference * quantized) / math.sqrt(np.sum(reference**2) * np.sum(quantized**2))
    sqnr = 10 * math.log10(np.sum(reference**2) / np.sum((reference - quantized) ** 2))
    fc = by_name(stats)["fc"]
    assert fc.cosine == pytest.approx(cosine, abs=1e-9)
    # xnpu.run dequantizes to float32, the report in float64: ~1e-7 relative on each value
    assert fc.sqnr_db == pytest.approx(sqnr, abs=1e-4)
    assert fc.elements == 10


@pytest.mark.parametrize("beside", [False, True])
@pytest.mark.float_sums
def test_a_report_that_fails_while_it_is_moved_in_leaves_the_earlier_one(stats, tmp_path, monkeypatch, beside):
    """The last step of writing a report (the rename of the new directory, or of one of its
    files into a directory that holds other files too) fails: the earlier report is intact."""
    import xnpu.core.files as files

    directory = tmp_path / "report"
    write_report(stats[:2], directory, title="earlier")
    if beside:
        (directory / "model.xnb").write_bytes(b"not a report file")
    before = {p.name: p.read_bytes() for p in directory.iterdir()}
    calls = []

    def failing(operation):
        def wrapped(source, destination):
            calls.append(destination)
            # the new directory renamed over the earlier one (moved aside first), or the third file
            onto_report = Path(destination).resolve() == directory.resolve()
            if (onto_report and calls.count(destination) == 1) or (beside and len(calls) == 3):
                raise OSError(28, "No space left on device")
            return operation(source, destination)
        return wrapped

    monkeypatch.setattr(files.os, "rename", failing(files.os.rename))
    monkeypatch.setattr(files.os, "replace", failing(files.os.replace))
    if not beside:
        with pytest.raises(xnpu.XnpuError, match="No space left on device"):
            write_report(stats, directory, title="later")
        assert {p.name: p.read_bytes() for p in directory.iterdir()} == before
        assert sorted(p.name for p in tmp_path.iterdir()) == ["report"]  # no staging directory left
    else:  # files renamed in one by one: the failure is one line, the staging directory goes
        with pytest.raises(xnpu.XnpuError, match="No space left on device"):
            write_report(stats, directory, title="later")
        assert not [p for p in directory.iterdir() if p.name.startswith(".")]


@pytest.mark.float_sums
def test_edges_follow_the_float_graph(stats):
    inputs = {s.name: s.inputs for s in stats}
    assert inputs["conv1"] == ["input:input"]
    assert sorted(inputs["residual"]) == ["pool1", "relu6"]
    assert inputs["fc"] == ["flatten"]


@pytest.mark.float_sums
def test_report_files_exist_and_parse(stats, tmp_path):
    written = write_report(stats, tmp_path / "report", title="tiny")
    directory = tmp_path / "report"
    for name in ("report.txt", "report.csv", "report.json", "report.html", "report.dot"):
        assert (directory / name) in written and (directory / name).stat().st_size > 0
    assert (directory / "report.svg").exists() == (shutil.which("dot") is not None)
    worst = worst_layer(stats)

    with open(directory / "report.csv", newline="") as handle:
        rows = list(csv.DictReader(handle))
    assert [r["name"] for r in rows] == [s.name for s in stats]
    assert [r["name"] for r in rows if r["worst"] == "1"] == [worst.name]
    assert float(rows[0]["sqnr_db"]) == pytest.approx(stats[0].sqnr_db)

    document = json.loads((directory / "report.json").read_text())
    assert document["worst"] == worst.name
    assert document["samples"] == stats[0].samples
    assert [layer["name"] for layer in document["layers"]] == [s.name for s in stats]
    assert document["layers"][-1]["cosine"] == pytest.approx(stats[-1].cosine)

    text = (directory / "report.txt").read_text()
    marked = [line for line in text.splitlines() if line.endswith("<- worst")]
    assert len(marked) == 1 and marked[0].startswith(worst.name + " ")
    assert all(s.name in text for s in stats)
    if shutil.which("dot") is None:
        assert "report.svg not written" in text


@pytest.mark.float_sums
def test_dot_graph_colours_and_edges(stats):
    dot = report_dot(stats)
    assert dot.startswith("digraph") and dot.rstrip().endswith("}")
    for s in stats:
        assert f'"{s.name}" [label="{s.name}\\n{s.op}' in dot
    assert '"pool1" -> "residual";' in dot and '"relu6" -> "residual";' in dot
    assert sqnr_colour(45.0) == sqnr_colour(40.0) != sqnr_colour(25.0) != sqnr_colour(10.0) == sqnr_colour(3.0)
    red, green = (int(sqnr_colour(5.0)[i : i + 2], 16) for i in (1, 3))
    assert red > green  # low SQNR is red
    red, green = (int(sqnr_colour(50.0)[i : i + 2], 16) for i in (1, 3))
    assert green > red


class _HtmlParts(HTMLParser):
    """The table rows (data-layer, cell texts) and the raw text of every <svg> of a page."""

    def __init__(self, page: str):
        super().__init__()
        self.rows: dict[str, list[str]] = {}
        self.worst_rows: list[str] = []
        self.tags: list[str] = []
        self._row: str | None = None
        self._cell: list[str] | None = None
        super().feed(page)
        self.svgs = [ElementTree.fromstring(m) for m in re.findall(r"<svg.*?</svg>", page, flags=re.S)]

    def handle_starttag(self, tag, attrs):
        attrs = dict(attrs)
        self.tags.append(tag)
        if tag == "tr" and "data-layer" in attrs:
            self._row = attrs["data-layer"]
            self.rows[self._row] = []
            if attrs.get("class") == "worst":
                self.worst_rows.append(self._row)
        elif tag == "td" and self._row is not None:
            self._cell = []

    def handle_data(self, data):
        if self._cell is not None:
            self._cell.append(data)

    def handle_endtag(self, tag):
        if tag == "td" and self._cell is not None:
            self.rows[self._row].append("".join(self._cell))
            self._cell = None
        elif tag == "tr":
            self._row = None


def _json_db(value) -> float:
    return float(value)  # "inf" / "-inf" strings parse too


@pytest.mark.float_sums
def test_html_report_draws_every_layer_in_its_colour_as_report_json(stats, tmp_path):
    write_report(stats, tmp_path, title="tiny")
    document = json.loads((tmp_path / "report.json").read_text())
    page = (tmp_path / "report.html").read_text()
    parts = _HtmlParts(page)
    layers = document["layers"]
    names = [layer["name"] for layer in layers]
    colour = {layer["name"]: sqnr_colour(_json_db(layer["sqnr_db"])) for layer in layers}
    assert len({*colour.values()}) > 1  # the tiny model's layers differ in quality

    # self-contained: no script, stylesheet link, image or any address but the SVG namespace
    assert not {"script", "link", "img", "iframe"} & set(parts.tags)
    assert re.findall(r"https?://[^\s\"']+", page) == ["http://www.w3.org/2000/svg"] * 2

    graph, chart = parts.svgs
    nodes = graph.findall(f"{SVG}g[@class='layer']")
    assert [g.get("data-layer") for g in nodes] == names
    for g in nodes:
        rect = g.find(f"{SVG}rect")
        assert rect.get("fill") == colour[g.get("data-layer")]
        assert (rect.get("stroke") == "#b00000") == (g.get("data-layer") == document["worst"])
        assert g.get("data-layer") in g.find(f"{SVG}title").text
    edges = {(e.get("data-from"), e.get("data-to")) for e in graph.findall(f"{SVG}path[@class='edge']")}
    assert edges == {(p, layer["name"]) for layer in layers for p in layer["inputs"]}
    inputs = [g.get("data-input") for g in graph.findall(f"{SVG}g[@class='input']")]
    assert inputs == ["input"]

    db_per_pixel = float(chart.get("data-db-per-pixel"))
    bars = chart.findall(f"{SVG}g[@class='bar-row']")
    assert [g.get("data-layer") for g in bars] == names
    for g, layer in zip(bars, layers):
        bar = g.find(f"{SVG}rect[@class='bar']")
        assert bar.get("fill") == colour[layer["name"]]
        if math.isfinite(_json_db(layer["sqnr_db"])):
            assert float(bar.get("width")) * db_per_pixel == pytest.approx(max(layer["sqnr_db"], 0.0), abs=0.02)

    assert list(parts.rows) == names and parts.worst_rows == [document["worst"]]
    for layer in layers:
        name, op, runs_on, _, bits, cosine, sqnr, max_error, saturated = parts.rows[layer["name"]]
        assert (name, op, runs_on, int(bits)) == (layer["name"], layer["op"], layer["runs_on"], layer["bits"])
        assert runs_on == "accelerator"
        assert float(cosine) == pytest.approx(layer["cosine"], abs=5e-7)
        assert _json_db(sqnr) == pytest.approx(_json_db(layer["sqnr_db"]), abs=0.005)
        assert float(max_error) == pytest.approx(layer["max_error_lsb"], abs=0.005)
        assert float(saturated) == pytest.approx(100 * layer["saturated"], abs=5e-4)


def test_graph_layout_puts_producers_above_and_never_overlaps():
    nodes = ["input:x", "a", "b", "c", "d", "e"]
    edges = [("input:x", "a"), ("a", "b"), ("a", "c"), ("b", "d"), ("c", "d"), ("a", "e"), ("d", "e")]
    corners, routes = layered_layout(nodes, edges)
    for source, target in edges:
        assert corners[source][1] < corners[target][1]
    assert corners["b"][1] == corners["c"][1]  # siblings share a row
    assert corners["e"][1] > corners["d"][1]  # the longest path decides the row
    boxes = sorted(corners.values())
    for (x1, y1), (x2, y2) in zip(boxes, boxes[1:]):
        assert y1 != y2 or x2 - x1 >= NODE_WIDTH
    # a -> e skips the rows of b/c and d: it passes beside them, not through them
    assert [y for _, y in routes[("a", "e")]] == [corners["b"][1], corners["d"][1]]
    for (x, y), row_nodes in zip(routes[("a", "e")], (("b", "c"), ("d",))):
        assert all(not corners[n][0] <= x <= corners[n][0] + NODE_WIDTH for n in row_nodes)
    assert routes[("a", "b")] == []


def last_rescale(module, name: str) -> fixed.RescaleOp:
    found = [op for op in module.walk() if isinstance(op, fixed.RescaleOp) and location_name(op.location) == name]
    return found[-1]


@pytest.mark.float_sums
def test_damaged_output_rescale_is_the_worst_layer(float_module, calib, stats):
    damaged = xnpu.quantize(float_module.clone(), calib, progress=False)
    rescale = last_rescale(damaged, "fc")
    rescale.multiplier = DenseArrayBase.from_list(i64, [m // 2 for m in rescale.multiplier.get_values()])
    report = layer_report(float_module, damaged, calib, progress=False)
    assert worst_layer(report).name == "fc"
    assert by_name(report)["fc"].sqnr_db < 10 < min(s.sqnr_db for s in report if s.name != "fc")
    for before, after in zip(stats[:-1], report[:-1]):  # the layers before are untouched
        assert after.sqnr_db == before.sqnr_db and after.cosine == before.cosine


def lower_with_scale_factor(float_module, calib, layer: str, factor: float):
    module = float_cleanup(float_module.clone())
    calibrate(module, calib, progress=False)
    (op,) = [op for op in module.walk() if op.dialect_name() == "nn" and location_name(op.location) == layer]
    op.attributes["nn.scale"] = FloatAttr(op.attributes["nn.scale"].value.data * factor, f32)
    ctx = make_context()
    LowerNNToFixedPass().apply(ctx, module)
    FoldQuantizePairsPass().apply(ctx, module)
    return module


@pytest.mark.parametrize("layer", ["residual", "pool2"])
@pytest.mark.float_sums
def test_saturated_layer_is_where_the_error_starts(float_module, calib, stats, layer):
    """A too-small scale saturates one layer: it drops far below every layer before it, and the
    layers before it read the same numbers as without the damage."""
    damaged = lower_with_scale_factor(float_module, calib, layer, 0.1)
    report = layer_report(float_module, damaged, calib, progress=False)
    position = [s.name for s in report].index(layer)
    hit = report[position]
    assert hit.saturated > 0.2 and hit.sqnr_db < 10
    assert worst_layer(report[: position + 1]).name == layer
    for before, after in zip(stats[:position], report[:position]):
        assert after.sqnr_db == before.sqnr_db
    first_bad = next(s for s in report if s.sqnr_db < 20)
    assert first_bad.name == layer


@pytest.mark.float_sums
def test_report_sample_limit_and_errors(float_module, fixed_module, calib):
    assert layer_report(float_module, fixed_module, calib, samples=3)[0].samples == 3
    with pytest.raises(xnpu.XnpuError, match="must be >= 1"):
        layer_report(float_module, fixed_module, calib, samples=0)
    with pytest.raises(xnpu.XnpuError, match="shape"):
        layer_report(float_module, fixed_module, calib[:, :, :8])


def quantize_tool(*args, cwd: Path) -> subprocess.CompletedProcess:
    from test_tools import forked_tool  # a process of its own without an interpreter's start

    return forked_tool("xnpu-quantize", *args, cwd=cwd)


def test_cli_quantizes_and_writes_the_report(tmp_path):
    result = quantize_tool(MODEL, "--calibration", CALIBRATION, "--per-tensor", "-o", "tiny.fixed.mlir",
                           "--report", "rep", "--report-samples", "4", cwd=tmp_path)
    assert result.returncode == 0, result.stderr
    module = xnpu.load_ir(tmp_path / "tiny.fixed.mlir")
    assert any(op.name == "fixed.conv2d" for op in module.walk())
    assert not any(op.dialect_name() == "nn" for op in module.walk())
    document = json.loads((tmp_path / "rep" / "report.json").read_text())
    assert document["samples"] == 4 and len(document["layers"]) == 11
    assert "worst layer:" in result.stdout and "per-tensor" in result.stdout


def test_cli_errors_are_one_line_and_leave_no_output(tmp_path):
    result = quantize_tool(MODEL, "--calibration", tmp_path / "missing.npy", "-o", "out.mlir", cwd=tmp_path)
    assert result.returncode == 1
    assert result.stderr.strip().count("\n") == 0
    assert result.stderr.startswith("xnpu-quantize: error: ") and "not found" in result.stderr
    assert not (tmp_path / "out.mlir").exists()

    result = quantize_tool(MODEL, "--calibration", CALIBRATION, "-o", "out.mlir", "--report-samples", "2",
                           cwd=tmp_path)
    assert result.returncode == 1 and "needs --report" in result.stderr
    assert not (tmp_path / "out.mlir").exists()

    (tmp_path / "model.txt").write_text("x")
    result = quantize_tool(tmp_path / "model.txt", "--calibration", CALIBRATION, "-o", "out.mlir", cwd=tmp_path)
    assert result.returncode == 1 and "unknown model file type" in result.stderr
    assert "Traceback" not in result.stderr


@pytest.mark.float_sums
def test_cli_depthwise_weights_changes_the_scale_only_depthwise_convs_read(tmp_path):
    """A pointwise conv whose channels differ 60-fold in range, read by a depthwise conv whose
    kernels are the inverse: --depthwise-weights on (and here auto, the default) gives the
    pointwise output a finer step."""
    from onnx import TensorProto, helper, numpy_helper

    rng = np.random.default_rng(4)
    ranges = np.array([30.0, 0.5, 0.5, 0.5], np.float32)
    pointwise = (np.eye(4) * ranges[:, None]).astype(np.float32)[:, :, None, None]
    depthwise = (rng.standard_normal((4, 1, 3, 3)) / ranges[:, None, None, None]).astype(np.float32)
    graph = helper.make_graph(
        [helper.make_node("Conv", ["x", "pw"], ["p"], name="pointwise"),
         helper.make_node("Conv", ["p", "dw"], ["y"], name="depthwise", group=4, pads=[1, 1, 1, 1])],
        "pw_dw", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 4, 8, 8])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, 4, 8, 8])],
        [numpy_helper.from_array(pointwise, "pw"), numpy_helper.from_array(depthwise, "dw")])
    onnx.save(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)]), tmp_path / "pw_dw.onnx")
    np.save(tmp_path / "calib.npy", rng.standard_normal((8, 1, 4, 8, 8)).astype(np.float32))

    def pointwise_scale(*options: str) -> float:
        result = quantize_tool("pw_dw.onnx", "--calibration", "calib.npy", "-o", "out.mlir", *options, cwd=tmp_path)
        assert result.returncode == 0, result.stderr
        module = xnpu.load_ir(tmp_path / "out.mlir")
        conv = next(op for op in module.walk() if op.name == "fixed.conv2d" and location_name(op.location) == "pointwise")
        rescale = next(use.operation for use in conv.results[0].uses)
        return float(rescale.scale.value.data)

    weighted = pointwise_scale("--depthwise-weights", "on")
    assert weighted < 0.8 * pointwise_scale("--depthwise-weights", "off")
    # auto takes the weighting here: it halves the error after the depthwise conv (DEPTHWISE_GAIN)
    assert pointwise_scale() == weighted
