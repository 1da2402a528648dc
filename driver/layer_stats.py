"""One layer's quantization error, as the per-layer report measures it (driver/quant_report.py)
and every format of the report shows it (text, CSV, JSON, report.html, Graphviz)."""

from __future__ import annotations

import colorsys
import math
from dataclasses import dataclass, field

GOOD_SQNR_DB = 40.0  # green at and above
BAD_SQNR_DB = 10.0  # red at and below
INPUT_PREFIX = "input:"  # graph inputs in LayerStats.inputs, apart from layer names


@dataclass
class LayerRoofline:
    """A layer's roofline in one sample of the compiled program (backend/roofline.py): its share
    of the makespan, its EXEC and DMA busy cycles, the DDR bytes its DMA moves and the
    compulsory bytes among them."""

    cycles: int = 0
    compute: int = 0
    dma: int = 0
    ddr_bytes: int = 0
    compulsory_bytes: int = 0

    @property
    def ratio(self) -> float:
        bound = max(self.compute, self.dma)
        return self.cycles / bound if bound else 0.0


ROOFLINE_COLUMNS = ("cycles", "compute", "dma", "x max", "DDR bytes", "compulsory")


def roofline_cells(roofline: LayerRoofline | None) -> tuple[str, ...]:
    """A layer's ROOFLINE_COLUMNS as text ("-" where the layer has none)."""
    r = roofline
    if r is None:
        return ("-",) * len(ROOFLINE_COLUMNS)
    return (f"{r.cycles:,}", f"{r.compute:,}", f"{r.dma:,}", f"{r.ratio:.2f}", f"{r.ddr_bytes:,}",
            f"{r.compulsory_bytes:,}")


@dataclass
class LayerStats:
    name: str  # the location: ONNX node name(s)
    op: str  # the float op, without the dialect prefix
    scale: float | list[float]  # the int8 output's scale (one per channel where per-channel)
    bits: int  # width of the integer output
    samples: int
    elements: int  # per sample
    cosine: float
    sqnr_db: float
    max_error_lsb: float
    saturated: float  # fraction of float values beyond the int range
    inputs: list[str] = field(default_factory=list)  # producer layers (or INPUT_PREFIX + graph input)
    runs_on: str = "accelerator"  # where placement puts the layer: "accelerator" or "host"
    roofline: LayerRoofline | None = None  # when the report ran the compiled program

    @property
    def scale_text(self) -> str:
        if isinstance(self.scale, list):
            return f"{min(self.scale):.4g}..{max(self.scale):.4g}" if len(self.scale) > 1 else f"{self.scale[0]:.4g}"
        return f"{self.scale:.4g}"


def worst_layer(stats: list[LayerStats]) -> LayerStats | None:
    """The layer with the lowest SQNR (the lowest cosine among equals); the earliest on ties."""
    candidates = [s for s in stats if not math.isnan(s.sqnr_db)]
    if not candidates:
        return None
    return min(candidates, key=lambda s: (s.sqnr_db, s.cosine))


def db_text(value: float) -> str:
    return f"{value:.2f}" if math.isfinite(value) else ("inf" if value > 0 else "-inf")


def sqnr_colour(sqnr_db: float) -> str:
    """Green at >= GOOD_SQNR_DB through yellow to red at <= BAD_SQNR_DB, as #rrggbb."""
    if math.isnan(sqnr_db):
        return "#cccccc"
    position = min(max((sqnr_db - BAD_SQNR_DB) / (GOOD_SQNR_DB - BAD_SQNR_DB), 0.0), 1.0)
    red, green, blue = colorsys.hsv_to_rgb(position / 3.0, 0.55, 1.0)  # hue 0 (red) .. 1/3 (green)
    return "#{:02x}{:02x}{:02x}".format(round(red * 255), round(green * 255), round(blue * 255))
