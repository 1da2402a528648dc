"""report.html: the per-layer quantization report as one page a browser opens with nothing else
installed (no script, no network, no Graphviz).

Three parts, all drawn here: the layer graph as SVG, each layer filled with the colour of its
SQNR (layer_stats.sqnr_colour: green >= 40 dB, red <= 10 dB), laid out in layers (a node's
row is the longest path from a graph input, rows ordered by the barycentre of their
neighbours to cut crossings); a bar chart of SQNR per layer (SVG); and the table, with the
column "runs on" (where placement puts the layer: the accelerator unless told otherwise).
Every node, bar and row carries `data-layer` with the layer's name, so the page can be
checked against report.json by a program as well as by eye.
"""

from __future__ import annotations

import math
from html import escape

from xnpu.driver.layer_stats import (
    INPUT_PREFIX,
    ROOFLINE_COLUMNS,
    LayerStats,
    db_text,
    roofline_cells,
    sqnr_colour,
    worst_layer,
)

NODE_WIDTH, NODE_HEIGHT, NODE_GAP, ROW_GAP, MARGIN = 168, 52, 24, 44, 20
PLACEHOLDER_WIDTH = 12  # the slot an edge takes in a row it passes through
BAR_ROW, BAR_LABEL, BAR_WIDTH = 18, 230, 420
BARYCENTRE_SWEEPS = 4


def _short(text: str, limit: int) -> str:
    return text if len(text) <= limit else text[: limit - 1] + "\u2026"


Point = tuple[float, float]


def _topological(nodes: list[str], parents: dict[str, list[str]]) -> list[str]:
    """`nodes` with every node after its parents where it was not already (layers named alike,
    ' ' for two ONNX nodes, were drawn in an order that put a consumer first: a KeyError); the
    nodes of a cycle such names make come last, in their order."""
    placed: set[str] = set()
    order: list[str] = []
    waiting = list(nodes)
    while waiting:
        ready = [n for n in waiting if all(p in placed or p == n for p in parents[n])]
        if not ready:  # a cycle
            ready = waiting
        for node in ready:
            placed.add(node)
            order.append(node)
        waiting = [n for n in waiting if n not in placed]
    return order


def layered_layout(nodes: list[str], edges: list[tuple[str, str]]) -> tuple[dict[str, Point], dict[tuple[str, str], list[Point]]]:
    """Top-left corner of every node, and for every edge that skips rows the points it passes
    through. A node's row is the longest path from a source (nodes come in a topological
    order); an edge over several rows gets a narrow placeholder in each row between, so it is
    routed beside the nodes instead of through them; each row is ordered by the mean position
    of its neighbours, sweeping down and up."""
    parents: dict[str, list[str]] = {n: [] for n in nodes}
    for source, target in edges:
        parents[target].append(source)
    rank: dict[str, int] = {}
    for node in _topological(nodes, parents):
        rank[node] = 1 + max((rank[p] for p in parents[node] if p in rank), default=-1)
    predecessors: dict[str, list[str]] = {n: [] for n in nodes}
    successors: dict[str, list[str]] = {n: [] for n in nodes}
    chains: dict[tuple[str, str], list[tuple[str, int]]] = {}
    for source, target in edges:
        chain = [((source, target, r), r) for r in range(rank[source] + 1, rank[target])]
        chains[(source, target)] = chain
        for placeholder, r in chain:
            rank[placeholder] = r
            predecessors[placeholder], successors[placeholder] = [], []
        path = [source, *(p for p, _ in chain), target]
        for upper, lower in zip(path, path[1:]):
            predecessors[lower].append(upper)
            successors[upper].append(lower)
    rows: list[list[str]] = [[] for _ in range(max(rank.values(), default=-1) + 1)]
    for node in rank:
        rows[rank[node]].append(node)
    position = {node: float(i) for row in rows for i, node in enumerate(row)}

    def reorder(row: list[str], neighbours: dict[str, list[str]]) -> None:
        def key(node: str) -> float:
            around = neighbours[node]
            return sum(position[n] for n in around) / len(around) if around else position[node]

        row.sort(key=key)
        for i, node in enumerate(row):
            position[node] = float(i)

    for sweep in range(BARYCENTRE_SWEEPS):
        down = sweep % 2 == 0
        for row in rows[1:] if down else reversed(rows[:-1]):
            reorder(row, predecessors if down else successors)

    def width(node) -> float:
        return PLACEHOLDER_WIDTH if isinstance(node, tuple) else NODE_WIDTH

    extents = [sum(width(n) for n in row) + NODE_GAP * (len(row) - 1) for row in rows]
    total = max(extents, default=0.0)
    corners: dict[str, Point] = {}
    for r, row in enumerate(rows):
        x = MARGIN + (total - extents[r]) / 2
        for node in row:
            corners[node] = (x, MARGIN + r * (NODE_HEIGHT + ROW_GAP))
            x += width(node) + NODE_GAP
    routes = {edge: [(corners[p][0] + PLACEHOLDER_WIDTH / 2, corners[p][1]) for p, _ in chain]
              for edge, chain in chains.items()}
    return {node: corners[node] for node in nodes}, routes


def _edge_path(start: Point, waypoints: list[Point], end: Point) -> str:
    """A smooth path from a node's bottom through the placeholders (top points) to a node's top."""
    bend = ROW_GAP / 2 + 10
    (x, y), d = start, [f"M{start[0]:.1f},{start[1]:.1f}"]
    for wx, wy in [*waypoints, end]:
        d.append(f"C{x:.1f},{y + bend:.1f} {wx:.1f},{wy - bend:.1f} {wx:.1f},{wy:.1f}")
        x, y = wx, wy
        if (wx, wy) != end:
            y = wy + NODE_HEIGHT
            d.append(f"L{x:.1f},{y:.1f}")
    return " ".join(d)


def graph_svg(stats: list[LayerStats]) -> str:
    """The layer graph, each layer filled by its SQNR colour; the worst layer outlined."""
    worst = worst_layer(stats)
    inputs = [p for s in stats for p in s.inputs if p.startswith(INPUT_PREFIX)]
    nodes = list(dict.fromkeys(inputs)) + [s.name for s in stats]
    edges = [(p, s.name) for s in stats for p in s.inputs]
    corners, routes = layered_layout(nodes, edges)
    width = max((x for x, _ in corners.values()), default=0) + NODE_WIDTH + MARGIN
    width = max([width, *(x + MARGIN for points in routes.values() for x, _ in points)])
    height = max((y for _, y in corners.values()), default=0) + NODE_HEIGHT + MARGIN
    parts = [
        f'<svg xmlns="http://www.w3.org/2000/svg" class="graph" width="{width:.0f}" height="{height:.0f}" '
        f'viewBox="0 0 {width:.0f} {height:.0f}" font-family="sans-serif" font-size="11">',
        '<defs><marker id="arrow" viewBox="0 0 8 8" refX="8" refY="4" markerWidth="7" markerHeight="7" '
        'orient="auto"><path d="M0,0 L8,4 L0,8 z" fill="#555"/></marker></defs>',
    ]
    for source, target in edges:
        (x1, y1), (x2, y2) = corners[source], corners[target]
        d = _edge_path((x1 + NODE_WIDTH / 2, y1 + NODE_HEIGHT), routes[(source, target)], (x2 + NODE_WIDTH / 2, y2))
        parts.append(f'<path class="edge" data-from="{escape(source)}" data-to="{escape(target)}" fill="none" '
                     f'stroke="#555" marker-end="url(#arrow)" d="{d}"/>')
    for name in dict.fromkeys(inputs):
        x, y = corners[name]
        parts.append(
            f'<g class="input" data-input="{escape(name.removeprefix(INPUT_PREFIX))}"><ellipse cx="{x + NODE_WIDTH / 2:.1f}" '
            f'cy="{y + NODE_HEIGHT / 2:.1f}" rx="{NODE_WIDTH / 2:.1f}" ry="{NODE_HEIGHT / 2:.1f}" fill="#dddddd" stroke="#888"/>'
            f'<text x="{x + NODE_WIDTH / 2:.1f}" y="{y + NODE_HEIGHT / 2 + 4:.1f}" text-anchor="middle">'
            f'{escape(_short(name.removeprefix(INPUT_PREFIX), 26))}</text></g>'
        )
    for s in stats:
        x, y = corners[s.name]
        outline = 'stroke="#b00000" stroke-width="3"' if s is worst else 'stroke="#666" stroke-width="1"'
        tooltip = (f"{s.name} ({s.op}, runs on {s.runs_on})\nSQNR {db_text(s.sqnr_db)} dB, cosine {s.cosine:.6f}\n"
                   f"scale {s.scale_text}, max error {s.max_error_lsb:.2f} LSB, saturated {100 * s.saturated:.3f} %")
        lines = [_short(s.name, 26), f"{s.op} \u00b7 {s.runs_on}", f"SQNR {db_text(s.sqnr_db)} dB"]
        text = "".join(
            f'<tspan x="{x + NODE_WIDTH / 2:.1f}" dy="{14 if i else 0}">{escape(line)}</tspan>' for i, line in enumerate(lines)
        )
        parts.append(
            f'<g class="layer" data-layer="{escape(s.name)}"><title>{escape(tooltip)}</title>'
            f'<rect x="{x:.1f}" y="{y:.1f}" width="{NODE_WIDTH}" height="{NODE_HEIGHT}" rx="8" '
            f'fill="{sqnr_colour(s.sqnr_db)}" {outline}/>'
            f'<text x="{x + NODE_WIDTH / 2:.1f}" y="{y + 15:.1f}" text-anchor="middle">{text}</text></g>'
        )
    parts.append("</svg>")
    return "\n".join(parts)


def sqnr_chart_svg(stats: list[LayerStats]) -> str:
    """One horizontal bar per layer, length SQNR (an infinite SQNR is a full bar), the colour of
    the graph; dashed lines at the red and green limits."""
    finite = [s.sqnr_db for s in stats if math.isfinite(s.sqnr_db)]
    top = max([50.0, *finite])
    scale = BAR_WIDTH / top
    height = MARGIN * 2 + BAR_ROW * len(stats) + 16
    width = BAR_LABEL + BAR_WIDTH + 80
    parts = [
        f'<svg xmlns="http://www.w3.org/2000/svg" class="sqnr-chart" width="{width}" height="{height}" '
        f'viewBox="0 0 {width} {height}" font-family="sans-serif" font-size="11" data-db-per-pixel="{1 / scale!r}">'
    ]
    for limit in (10.0, 40.0):
        x = BAR_LABEL + limit * scale
        parts.append(f'<line x1="{x:.1f}" y1="{MARGIN - 4}" x2="{x:.1f}" y2="{height - 14}" stroke="#999" stroke-dasharray="4 3"/>'
                     f'<text x="{x:.1f}" y="{height - 2}" text-anchor="middle">{limit:.0f} dB</text>')
    for i, s in enumerate(stats):
        y = MARGIN + i * BAR_ROW
        value = s.sqnr_db if math.isfinite(s.sqnr_db) else (top if s.sqnr_db > 0 else 0.0)
        length = max(value, 0.0) * scale
        parts.append(
            f'<g class="bar-row" data-layer="{escape(s.name)}"><title>{escape(f"{s.name}: SQNR {db_text(s.sqnr_db)} dB")}</title>'
            f'<text x="{BAR_LABEL - 6}" y="{y + 12}" text-anchor="end">{escape(_short(s.name, 34))}</text>'
            f'<rect class="bar" x="{BAR_LABEL}" y="{y + 2}" width="{length:.2f}" height="{BAR_ROW - 4}" '
            f'fill="{sqnr_colour(s.sqnr_db)}" stroke="#666" stroke-width="0.5"/>'
            f'<text x="{BAR_LABEL + length + 4:.1f}" y="{y + 12}">{db_text(s.sqnr_db)}</text></g>'
        )
    parts.append("</svg>")
    return "\n".join(parts)


TABLE_COLUMNS = ("layer", "op", "runs on", "scale", "bits", "cosine", "SQNR dB", "max err LSB", "saturated %")


def layer_table(stats: list[LayerStats]) -> str:
    worst = worst_layer(stats)
    roofline = any(s.roofline for s in stats)
    columns = TABLE_COLUMNS + (ROOFLINE_COLUMNS if roofline else ())
    head = "".join(f"<th>{escape(c)}</th>" for c in columns)
    rows = []
    for s in stats:
        cells = (s.name, s.op, s.runs_on, s.scale_text, str(s.bits), f"{s.cosine:.6f}", db_text(s.sqnr_db),
                 f"{s.max_error_lsb:.2f}", f"{100.0 * s.saturated:.3f}")
        if roofline:
            cells += roofline_cells(s.roofline)
        swatch = f'<td style="background:{sqnr_colour(s.sqnr_db)}">'
        row = "".join((swatch if column == "SQNR dB" else "<td>") + escape(cell) + "</td>"
                      for column, cell in zip(columns, cells))
        marked = ' class="worst"' if s is worst else ""
        rows.append(f'<tr data-layer="{escape(s.name)}"{marked}>{row}</tr>')
    return f'<table class="layers"><thead><tr>{head}</tr></thead><tbody>\n' + "\n".join(rows) + "\n</tbody></table>"


STYLE = """
body { font-family: sans-serif; margin: 1.5em; color: #222; }
h1 { font-size: 1.3em; } h2 { font-size: 1.1em; margin-top: 1.6em; }
.scroll { overflow: auto; max-height: 80vh; border: 1px solid #ddd; }
table.layers { border-collapse: collapse; font-size: 0.9em; }
table.layers th, table.layers td { border: 1px solid #ccc; padding: 2px 8px; text-align: right; }
table.layers td:nth-child(-n+3), table.layers th:nth-child(-n+3) { text-align: left; }
tr.worst { font-weight: bold; outline: 2px solid #b00000; }
.legend span { display: inline-block; padding: 0 0.6em; margin-right: 0.3em; border: 1px solid #999; }
"""


def report_html(stats: list[LayerStats], title: str = "quantization error", notes: list[str] = ()) -> str:
    worst = worst_layer(stats)
    samples = stats[0].samples if stats else 0
    summary = f"{len(stats)} layers, {samples} samples; SQNR and cosine of the dequantized int8 output against float."
    if worst is not None:
        summary += f" Worst layer: {worst.name} ({worst.op}), SQNR {db_text(worst.sqnr_db)} dB."
    legend = "".join(f'<span style="background:{sqnr_colour(db)}">{label}</span>'
                     for db, label in ((40.0, "&ge; 40 dB"), (30.0, "30 dB"), (20.0, "20 dB"), (10.0, "&le; 10 dB")))
    note_items = "".join(f"<li>{escape(note)}</li>" for note in notes)
    return (
        "<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">"
        f"<title>{escape(title)}</title><style>{STYLE}</style></head><body>\n"
        f"<h1>{escape(title)}</h1>\n<p>{escape(summary)}</p>\n"
        f'<p class="legend">fill: {legend}</p>\n{f"<ul>{note_items}</ul>" if notes else ""}\n'
        f'<h2>Graph</h2>\n<div class="scroll">\n{graph_svg(stats)}\n</div>\n'
        f"<h2>SQNR per layer</h2>\n{sqnr_chart_svg(stats)}\n"
        f"<h2>Layers</h2>\n{layer_table(stats)}\n</body></html>\n"
    )
