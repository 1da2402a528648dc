"""The DDR form of codebook-compressed weights, which a decoding LOAD reads (docs/isa.md,
"Decoding LOADs"; docs/compression.md).

A decoding LOAD (`codebook_bits` = b > 0, layout OHWI or DW) reads `d0` rows of b-bit ids,
one row per output channel: row r holds the row's `R` ids (OHWI: `KH*KW*I`, DW: `KH*KW`) in
`ceil(R*b/8)` bytes from `ddr_addr + r * ceil(R*b/8)`, id k at bits `[k*b, k*b + b)` of the
row (bit `k` of a row is bit `k % 8` of its byte `k // 8`, least significant first), the
unused high bits of a row's last byte zero. Every row starts on a byte, so a LOAD of output
channels `[o0, o0 + n)` starts at `ddr_addr + o0 * ceil(R*b/8)` whatever b is. Id j decodes to
the int8 at DDR `dictionary_addr + j`.
"""

from __future__ import annotations

import numpy as np

from xnpu.core.errors import XnpuError
from xnpu.target.encoding import DMA_LAYOUTS, Instruction

MAX_CODEBOOK_BITS = 8
DECODING_LAYOUTS = (DMA_LAYOUTS["OHWI"], DMA_LAYOUTS["DW"])


def row_bytes(elements: int, bits: int) -> int:
    """Bytes of one row of `elements` ids of `bits` bits."""
    return -(-elements * bits // 8)


def pack_rows(ids: np.ndarray, bits: int) -> bytes:
    """Ids (rows x elements per row) as rows of packed b-bit ids, each row starting on a byte."""
    ids = np.asarray(ids, dtype=np.int64)
    if ids.ndim != 2:
        raise XnpuError(f"codebook ids must be rows x elements, got shape {list(ids.shape)}")
    if ids.size and (ids.min() < 0 or ids.max() >= 1 << bits):
        raise XnpuError(f"a codebook id does not fit {bits} bits")
    rows, elements = ids.shape
    stream = ((ids[:, :, None] >> np.arange(bits)) & 1).astype(np.uint8).reshape(rows, elements * bits)
    return np.packbits(stream, axis=1, bitorder="little").tobytes()


def unpack_rows(packed: np.ndarray, bits: int, elements: int) -> np.ndarray:
    """The inverse of pack_rows: a (rows x row_bytes) uint8 array -> (rows x elements) ids."""
    stream = np.unpackbits(np.asarray(packed, dtype=np.uint8), axis=1, bitorder="little")[:, : elements * bits]
    weights = (1 << np.arange(bits)).astype(np.int64)
    return stream.reshape(len(stream), elements, bits) @ weights


def decoding_rows(i: Instruction) -> tuple[int, int]:
    """(rows, ids per row) of a decoding LOAD."""
    if i["layout"] == DMA_LAYOUTS["OHWI"]:
        return i["d0"], i["d1"] * i["d2"] * i["d3"]
    return i["d0"], i["d1"] * i["d2"]


def ids_bytes(i: Instruction) -> int:
    """The DDR bytes of a decoding LOAD's id rows (its dictionary not counted)."""
    rows, elements = decoding_rows(i)
    return rows * row_bytes(elements, i["codebook_bits"])


def codebook_problem(i: Instruction) -> str | None:
    """Why the codebook fields of a DMA instruction are invalid, or None (docs/isa.md)."""
    bits = i.fields.get("codebook_bits", 0)
    if not bits:
        return "dictionary_addr must be 0 when codebook_bits is 0" if i.fields.get("dictionary_addr", 0) else None
    if bits > MAX_CODEBOOK_BITS:
        return f"codebook_bits {bits} is not 0..{MAX_CODEBOOK_BITS}"
    if i.op != "LOAD" or i["layout"] not in DECODING_LAYOUTS or i["elem_log2"]:
        return "only a LOAD of int8 weights in layout OHWI or DW decodes codebook ids"
    return None


def compressed_weights(instructions) -> dict[int, tuple[int, int, int]]:
    """Dictionary address -> (bits, weights, id bytes) of the compressed weights a program's
    decoding LOADs read, each LOADed range counted once (a layer's weights, by its dictionary)."""
    ranges: dict[tuple[int, int], tuple[int, int, int]] = {}
    for i in instructions:
        if i.op == "LOAD" and i.fields.get("codebook_bits", 0):
            rows, elements = decoding_rows(i)
            ranges[i["dictionary_addr"], i["ddr_addr"]] = (i["codebook_bits"], rows * elements, ids_bytes(i))
    layers: dict[int, tuple[int, int, int]] = {}
    for (dictionary, _), (bits, weights, size) in sorted(ranges.items()):
        _, total, stored = layers.get(dictionary, (bits, 0, 0))
        layers[dictionary] = (bits, total + weights, stored + size)
    return layers
