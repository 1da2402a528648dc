"""compress-weights: seed 003's log-domain codebook, per layer, on calibrated float weights.

For each convolution / gemm weight (docs/compression.md):

    y = ln|w|,  q = round(y / l),  log_dict = 2^(b-1) sampling points chosen among the q,
    id = argmin_j (q - log_dict[j])^2  (+ 2^(b-1) when w < 0),
    quant_dict[j] = exp(l * log_dict[j]),  quant_dict[j + 2^(b-1)] = -quant_dict[j].

`method` chooses the sampling points: "seed003" keeps the largest 2^(b-1) distinct q (the
seed's rule: sort descending, keep the first), "frequency" the 2^(b-1) most frequent q, and
"kmeans" replaces the log domain by Deep Compression's weight sharing (2^b centroids from
Lloyd iterations with linear initialisation). Exact zeros have no logarithm: a layer that
has any reserves dictionary entry 0 for the value 0 (the zero rule, docs/compression.md).

The step l is the seed's one free parameter. Given, it is used for every layer; by default
it is fitted per layer (`fit_step`): the seed keeps the LARGEST 2^(b-1) quantized logs, so a
fixed l covers magnitudes max|w| * e^(-l * 2^(b-1)) and up only (at b = 4 and l = 0.125
everything below 0.37 max|w| is inflated), and the step that makes the kept points cover
the layer is the one with the smallest weight error. Layers under `min_elements` weights
(default 1000) stay int8; a compressed layer whose stored weights are still far from the
float ones (relative RMS error over LARGE_ERROR) is reported with a CompressionWarning.

The pass runs at the nn level, after calibration and before lower-nn-to-fixed, because
the codebook is a property of the float weights: at the fixed level they are already int8
codes times per-channel scales and the log-domain selection would see rounding noise. It
replaces each compressed weight by its codebook values and gives the layer ONE weight scale
(`nn.weight_scales`, max |quant_dict| / 127), so that lower-nn-to-fixed turns the 2^b float
entries into 2^b int8 codes and every int8 weight of the layer is one of them. The layer op
carries the marker `nn.codebook_bits` / `nn.codebook` (the int8 dictionary); lower-nn-to-fixed
moves it onto the weight's `fixed.constant`, npu-allocate records where the weights lie
in the constant image, and the emitter stores them as section kind 6 (b-bit ids + dictionary).
"""

from __future__ import annotations

import warnings
from dataclasses import dataclass

import numpy as np
from xdsl.context import Context
from xdsl.dialects.builtin import DenseArrayBase, IntegerAttr, ModuleOp, f32, i8, i64
from xdsl.ir import Operation
from xdsl.passes import ModulePass

from xnpu.core.errors import XnpuError
from xnpu.dialects import nn
from xnpu.ir.io import describe_op
from xnpu.ir.locations import location_names
from xnpu.semantics import fixed_point

METHODS = ("seed003", "frequency", "kmeans")
MAX_BITS = 8
CODEBOOK_BITS_ATTR = "nn.codebook_bits"
CODEBOOK_ATTR = "nn.codebook"  # the int8 dictionary, 2^b entries
WEIGHT_SCALES_ATTR = "nn.weight_scales"
INT8_MAX = 127
KMEANS_ITERATIONS = 30
# Layers smaller than this stay int8 unless told otherwise: they hold few of a network's
# weights, and they are the ones a 2^b-entry codebook hurts most (the stem sees the raw
# input, the classifier writes the logits, squeeze-excitation layers scale whole channels).
DEFAULT_MIN_ELEMENTS = 1000
# The steps `fit_step` tries (a log-spaced grid), and how many weights of a large layer it
# measures the error on (evenly strided, so the fit stays fast on ImageNet-sized layers; the
# layer's largest weights join the codebook's input, because seed 003 keeps the largest logs).
STEP_CANDIDATES = tuple(float(s) for s in np.exp(np.linspace(np.log(0.02), np.log(3.0), 48)))
FIT_SAMPLE = 1 << 16
FIT_LARGEST = 1 << 10
# A compressed layer whose stored weights are off by more than this (RMS error / RMS weight)
# gets a warning naming it: at b = 4 the fitted step stays under 0.18 on every bench layer,
# at b = 3 half the layers exceed it, and seed 003 at l = 0.125, b = 4 gives 0.27 to 1.8.
LARGE_ERROR = 0.2


class CompressionWarning(UserWarning):
    """A layer that compress-weights stored with a large weight error (one line, names the layer)."""


@dataclass(frozen=True)
class Codebook:
    """ids (one per weight, in the weights' order) into `dictionary` (2^bits float values)."""

    bits: int
    ids: np.ndarray  # uint8, same shape as the weights
    dictionary: np.ndarray  # float64, 2^bits entries

    def decode(self) -> np.ndarray:
        return self.dictionary[self.ids]


def _check(bits: int, step: float | None, method: str) -> None:
    if not isinstance(bits, int) or not 1 <= bits <= MAX_BITS:
        raise XnpuError(f"compress-weights: bits must be 1..{MAX_BITS}, got {bits!r}")
    if step is not None and not (np.isfinite(step) and step > 0):
        raise XnpuError(f"compress-weights: step must be positive, got {step!r}")
    if method not in METHODS:
        raise XnpuError(f"compress-weights: unknown method '{method}' (methods: {', '.join(METHODS)})")


def log_points(q: np.ndarray, count: int, method: str) -> np.ndarray:
    """The sampling points among the quantized logs `q`, in descending order (at most `count`)."""
    values, frequency = np.unique(q, return_counts=True)
    if method == "seed003":
        chosen = values[::-1][:count]
    else:  # the most frequent; among equally frequent ones the larger log first
        order = np.lexsort((-values, -frequency))
        chosen = np.sort(values[order[:count]])[::-1]
    return chosen.astype(np.int64)


def log_codebook(weights: np.ndarray, bits: int = 8, step: float = 0.125, method: str = "seed003") -> Codebook:
    """Seed 003's codebook of `weights` (method "seed003" or "frequency"), with the zero rule."""
    _check(bits, step, method)
    w = np.asarray(weights, dtype=np.float64)
    half = 1 << (bits - 1)
    nonzero = w != 0
    has_zero = not nonzero.all()
    first = 1 if has_zero else 0  # the zero rule: entry 0 (and its mirror) decodes to 0
    with np.errstate(divide="ignore"):
        q = np.round(np.log(np.abs(w[nonzero])) / step).astype(np.int64)
    points = log_points(q, half - first, method)
    positive = np.zeros(half)
    ids = np.zeros(w.shape, dtype=np.uint8)
    if points.size:
        # Unused positions repeat the smallest kept point: argmin picks the first of equals,
        # so no id ever names them, and the dictionary stays 2^b entries long.
        padded = np.concatenate([points, np.full(half - first - points.size, points[-1])])
        positive[first:] = np.exp(step * padded)
        # argmin over the distinct q only (a few hundred), then per weight
        distinct, inverse = np.unique(q, return_inverse=True)
        nearest = np.argmin((distinct[:, None] - points[None, :]) ** 2, axis=1)[inverse.reshape(-1)] + first
        ids[nonzero] = nearest + np.where(w[nonzero] < 0, half, 0)
    return Codebook(bits, ids, np.concatenate([positive, -positive]))


def kmeans_codebook(weights: np.ndarray, bits: int = 8, iterations: int = KMEANS_ITERATIONS) -> Codebook:
    """Deep Compression weight sharing: 2^b centroids, linear initialisation, Lloyd iterations.

    The zero rule holds here too: with exact zeros, entry 0 is the value 0 and the other
    2^b - 1 centroids cluster the nonzero weights.
    """
    _check(bits, 1.0, "kmeans")
    w = np.asarray(weights, dtype=np.float64)
    size = 1 << bits
    nonzero = w != 0
    first = 0 if nonzero.all() else 1
    values = np.sort(w[nonzero])
    dictionary = np.zeros(size)
    ids = np.zeros(w.shape, dtype=np.uint8)
    if values.size:
        centroids = np.linspace(values[0], values[-1], size - first)
        for _ in range(iterations):
            cuts = np.searchsorted(values, (centroids[1:] + centroids[:-1]) / 2)
            sums = np.add.reduceat(values, np.minimum(np.concatenate([[0], cuts]), values.size - 1))
            counts = np.diff(np.concatenate([[0], cuts, [values.size]]))
            updated = np.where(counts > 0, sums / np.maximum(counts, 1), centroids)
            if np.array_equal(updated, centroids):
                break
            centroids = updated
        dictionary[first:] = centroids
        bounds = (centroids[1:] + centroids[:-1]) / 2
        ids[nonzero] = np.searchsorted(bounds, w[nonzero]) + first
    return Codebook(bits, ids, dictionary)


def codebook(weights: np.ndarray, bits: int = 8, step: float | None = 0.125, method: str = "seed003") -> Codebook:
    """The codebook of one layer's weights by `method` (seed003, frequency or kmeans); a log
    method with `step` None fits the step to the layer (`fit_step`)."""
    _check(bits, step, method)
    if method == "kmeans":
        return kmeans_codebook(weights, bits)
    if step is None:
        step = fit_step(weights, bits, method)
    return log_codebook(weights, bits, step, method)


def fit_step(weights: np.ndarray, bits: int, method: str = "seed003") -> float:
    """The log-domain step for one layer: of STEP_CANDIDATES, the one whose codebook stores
    the layer's weights (as int8 entries of the per-tensor scale) with the smallest squared error."""
    w = np.asarray(weights, dtype=np.float64).reshape(-1)
    measured = w
    if w.size > FIT_SAMPLE:
        measured = w[:: -(-w.size // FIT_SAMPLE)]
        w = np.concatenate([measured, w[np.argpartition(np.abs(w), -FIT_LARGEST)[-FIT_LARGEST:]]])
    errors = []
    for step in STEP_CANDIDATES:
        stored = stored_weights(log_codebook(w, bits, step, method))[: measured.size]
        errors.append(float(np.sum((stored - measured) ** 2)))
    return STEP_CANDIDATES[int(np.argmin(errors))]


def stored_weights(book: Codebook) -> np.ndarray:
    """The weights as the hardware holds them: each id's int8 dictionary entry times the layer's scale."""
    scale = per_tensor_scale(book.dictionary)
    return int8_dictionary(book.dictionary, scale).astype(np.float64)[book.ids] * float(np.float32(scale))


def weight_error(weights: np.ndarray, book: Codebook) -> float:
    """RMS(stored - w) / RMS(w): how far the stored weights are from the float ones (0 for an all-zero layer)."""
    w = np.asarray(weights, dtype=np.float64)
    norm = float(np.sqrt(np.sum(w**2)))
    return float(np.sqrt(np.sum((stored_weights(book) - w) ** 2))) / norm if norm > 0 else 0.0


def per_tensor_scale(dictionary: np.ndarray) -> float:
    """The layer's one weight scale, as the f32 `nn.weight_scales` holds it: max |entry| / 127 (1.0 if all zero)."""
    peak = float(np.max(np.abs(np.asarray(dictionary, dtype=np.float32)))) if np.size(dictionary) else 0.0
    return float(np.float32(peak / INT8_MAX)) if peak > 0 else 1.0


def int8_dictionary(dictionary: np.ndarray, scale: float) -> np.ndarray:
    """Each entry quantized exactly as lower-nn-to-fixed quantizes the (f32) weights: R4 at 8 bits."""

    entries = np.asarray(dictionary, dtype=np.float32).astype(np.float64)
    return fixed_point.quantize(entries / float(np.float32(scale)), 1.0, 8).astype(np.int8)


def layer_names(op: Operation) -> tuple[str, ...]:
    return location_names(op.location)


def _names(text: str) -> frozenset[str]:
    return frozenset(name.strip() for name in text.split(",") if name.strip())


@dataclass(frozen=True)
class CompressWeightsPass(ModulePass):
    """Replace conv/gemm weights by seed 003's codebook values and mark them (docs/compression.md).

    Runs on a calibrated nn module. `include` / `exclude` are comma-separated layer (ONNX
    node) names; with `include` only those layers are compressed. Layers with fewer than
    `min_elements` weights stay uncompressed (their dictionary would cost more than it saves).
    """

    name = "compress-weights"

    bits: int = 8
    step: float | None = None  # None: fitted per layer
    method: str = "seed003"
    min_elements: int = DEFAULT_MIN_ELEMENTS
    include: str = ""
    exclude: str = ""

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        compress_module(op, self.bits, self.step, self.method, self.min_elements, _names(self.include), _names(self.exclude))


def _weight_of(op: Operation) -> nn.ConstantOp | None:
    value = op.weight if isinstance(op, nn.Conv2dOp) else op.b
    owner = value.owner
    return owner if isinstance(owner, nn.ConstantOp) else None


def compress_module(
    module: ModuleOp,
    bits: int = 8,
    step: float | None = None,
    method: str = "seed003",
    min_elements: int = DEFAULT_MIN_ELEMENTS,
    include: frozenset[str] = frozenset(),
    exclude: frozenset[str] = frozenset(),
) -> list[str]:
    """Compress every eligible layer of `module` in place; returns the names of the compressed layers.

    `step` None fits seed 003's step to each layer. A layer stored with a weight error over
    LARGE_ERROR is reported by a CompressionWarning (the compile goes on: the user chose `bits`).
    """
    _check(bits, step, method)
    if min_elements < 0:
        raise XnpuError(f"compress-weights: min-elements must be at least 0, got {min_elements}")
    compressed = []
    for op in list(module.walk()):
        if not isinstance(op, (nn.Conv2dOp, nn.GemmOp)):
            continue
        names = layer_names(op)
        if include and not include.intersection(names):
            continue
        if exclude.intersection(names):
            continue
        weight_op = _weight_of(op)
        if weight_op is None:
            continue
        if isinstance(op, nn.GemmOp) and op.alpha.value.data != 1.0:
            continue  # lower-nn-to-fixed scales B by alpha; the codebook would no longer be the int8 set
        weights = weight_op.to_numpy()
        if weights.size < max(min_elements, 1):
            continue
        book = codebook(weights, bits, step, method)
        error = weight_error(weights, book)
        name = ", ".join(names) or op.name
        if error > LARGE_ERROR:
            warnings.warn(CompressionWarning(
                f"compress-weights: layer '{name}' is stored with a {100 * error:.0f}% weight error (RMS) at "
                f"{bits} bits; exclude it from compression or use more bits"
            ), stacklevel=2)
        scale = per_tensor_scale(book.dictionary)
        replacement = nn.ConstantOp(book.decode().astype(np.float32))
        replacement.location = weight_op.location
        weight_op.parent_block().insert_op_before(replacement, weight_op)
        op.operands[list(op.operands).index(weight_op.results[0])] = replacement.results[0]
        if not weight_op.results[0].uses:
            weight_op.detach()
            weight_op.erase()
        op.attributes[WEIGHT_SCALES_ATTR] = DenseArrayBase.from_list(f32, [scale])
        op.attributes[CODEBOOK_BITS_ATTR] = IntegerAttr(bits, i64)
        op.attributes[CODEBOOK_ATTR] = DenseArrayBase.from_list(i8, [int(v) for v in int8_dictionary(book.dictionary, scale)])
        compressed.append(name)
    return compressed


FIXED_CODEBOOK_BITS_ATTR = "fixed.codebook_bits"
FIXED_CODEBOOK_ATTR = "fixed.codebook"


def carry_codebook(layer: Operation, weight: Operation) -> None:
    """lower-nn-to-fixed: move a layer's codebook marker onto its int8 weight constant.

    Every int8 weight must be a dictionary entry; it is not when the layer's weight scale
    changed after compress-weights (calibrate run again, per channel), and then the layer
    cannot be stored as ids.
    """
    bits = layer.attributes.get(CODEBOOK_BITS_ATTR)
    dictionary = layer.attributes.get(CODEBOOK_ATTR)
    if bits is None or dictionary is None:
        return
    entries = np.asarray(dictionary.get_values(), dtype=np.int64)
    codes = weight.to_numpy()
    if entries.size != 1 << bits.value.data or not np.isin(codes, entries).all():

        raise XnpuError(f"{describe_op(layer)}: its int8 weights are not its codebook; run compress-weights after calibrate")
    weight.attributes[FIXED_CODEBOOK_BITS_ATTR] = bits
    weight.attributes[FIXED_CODEBOOK_ATTR] = dictionary


def codebook_of(weight: Operation) -> tuple[int, np.ndarray] | None:
    """(bits, int8 dictionary) of a marked fixed weight constant, or None."""
    bits = weight.attributes.get(FIXED_CODEBOOK_BITS_ATTR)
    dictionary = weight.attributes.get(FIXED_CODEBOOK_ATTR)
    if bits is None or dictionary is None:
        return None
    return bits.value.data, np.asarray(dictionary.get_values(), dtype=np.int8)
