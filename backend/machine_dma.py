"""The DMA engine of the simulated machine: LOAD and STORE as numpy views over the two memories.

The views follow the DMA layout table of docs/isa.md section 2; both sides of a transfer have
the same logical shape (after the leading sample axis of backend/machine_memory.py), so a
transfer is one numpy assignment for every sample. Within a binary's run the views
of each DMA instruction are built once (`_Transfer`), since its fields and the memories do not
change.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import numpy as np

from xnpu.backend.machine_memory import MachineMemory, strided_extent
from xnpu.core.errors import XnpuError
from xnpu.target.codebook import decoding_rows, row_bytes, unpack_rows
from xnpu.target.encoding import DEPENDENCY_NAMES, DMA_LAYOUTS, Instruction
from xnpu.target.footprints import dma_ddr_extent


@dataclass(frozen=True)
class Transfer:
    """One DMA instruction's views (bytes with a leading sample and a trailing element axis) and
    spans; a decoding LOAD's DDR side is its decode (the int8 weights its ids name, the same
    for every sample)."""

    instruction: Instruction
    ddr: np.ndarray | Callable[[], np.ndarray]
    sram: np.ndarray
    padded: np.ndarray | None  # the whole padded SRAM region where it has pad lanes beside the data, or None
    sram_start: int
    sram_size: int
    ddr_start: int
    ddr_end: int
    fields: tuple
    planes: tuple = ()  # an NCHW LOAD of few channels: (SRAM, DDR) views of each channel, copied apart

    def copy_in(self) -> None:
        if self.padded is not None:
            self.padded[...] = 0  # every padded lane the LOAD covers is defined: zero, then the data
        if self.planes:
            for sram, ddr in self.planes:
                sram[...] = ddr
            return
        self.sram[...] = self.ddr() if callable(self.ddr) else self.ddr


# An NCHW LOAD of at most this many channels copies channel by channel: each plane's rows then
# run along DDR's rows, where one copy of the whole NHWC view steps across the planes at every
# pixel (9 images of mobilenetv3_like's stem band, 3 x 2 x 224 into 16 lanes: 12.7 -> 5.6 us)
PLANE_COPY_CHANNELS = 4


class DmaUnit(MachineMemory):
    """LOAD and STORE (docs/isa.md, format DMA); a part of the Machine."""

    def _dma(self, i: Instruction, loading: bool) -> tuple[np.ndarray | Callable, np.ndarray, np.ndarray | None]:
        """(DDR view, SRAM data view, whole padded SRAM view or None), all as bytes with a trailing element axis.

        The views follow the DMA layout table of docs/isa.md; both sides have the same
        logical shape, so a transfer is one numpy assignment. A decoding LOAD's DDR side is
        a function giving its decoded weights (`_decoding`).
        """
        layout, e = i["layout"], 1 << i["elem_log2"]
        d0, d1, d2, d3 = i["d0"], i["d1"], i["d2"], i["d3"]
        rs, ps, srs = i["ddr_row_stride"], i["ddr_pixel_stride"], i["sram_row_stride"]
        ddr_addr, sram_addr = i["ddr_addr"], i["sram_addr"]

        def unused(*names: str) -> None:
            for name in names:
                if i[name]:
                    raise XnpuError(f"{name} must be 0 in layout {_layout_name(layout)}")

        if layout == DMA_LAYOUTS["RAW"]:
            unused("d2", "d3", "ddr_row_stride", "ddr_pixel_stride", "sram_row_stride")
            n = d0 * d1
            ddr = self._strided(self._ddr_rows, "DDR", ddr_addr, (n, e), (e, 1))
            sram = self._strided(self._sram_rows, "SRAM", sram_addr, (n, e), (e, 1))
            return ddr, sram, None
        if layout in (DMA_LAYOUTS["NHWC"], DMA_LAYOUTS["NCHW"]):
            if layout == DMA_LAYOUTS["NHWC"]:
                unused("d3")
                h, w, c = d0, d1, d2
                rs, ps = rs or w * c * e, ps or c * e
                if not loading:
                    _no_overlap("DDR", h, w, c * e, rs, ps)
                ddr = self._strided(self._ddr_rows, "DDR", ddr_addr, (h, w, c, e), (rs, ps, e, 1))
            else:  # NCHW: rows `ddr_row_stride` apart, channel planes `ddr_pixel_stride` apart
                unused("d3")
                c, h, w = d0, d1, d2
                rs = rs or w * e
                ps = ps or h * rs
                if not loading:
                    _no_overlap("DDR", c, h, w * e, ps, rs)
                ddr = self._strided(self._ddr_rows, "DDR", ddr_addr, (c, h, w, e), (ps, rs, e, 1)).transpose(0, 2, 3, 1, 4)
            cp = self.align(c)
            srs = srs or w * cp * e
            if loading:
                _no_overlap("SRAM", h, w, cp * e, srs, cp * e)
            padded = self._strided(self._sram_rows, "SRAM", sram_addr, (h, w, cp, e), (srs, cp * e, e, 1))
            return ddr, padded[:, :, :, :c], padded
        if layout == DMA_LAYOUTS["OHWI"]:
            unused("ddr_row_stride", "ddr_pixel_stride", "sram_row_stride")
            o, kh, kw, ci = d0, d1, d2, d3
            op, ip = self.align(o), self.align(ci)
            if i["codebook_bits"]:
                return self._decoding(i, (o, kh, kw, ci, e)), *self._kernel_sram(sram_addr, (op, kh, kw, ip, e), (o, kh, kw, ci))
            ddr = self._strided(self._ddr_rows, "DDR", ddr_addr, (o, kh, kw, ci, e), (kh * kw * ci * e, kw * ci * e, ci * e, e, 1))
            padded = self._strided(self._sram_rows, "SRAM", sram_addr, (op, kh, kw, ip, e), (kh * kw * ip * e, kw * ip * e, ip * e, e, 1))
            return ddr, padded[:, :o, :, :, :ci], padded
        if layout == DMA_LAYOUTS["DW"]:
            unused("d3", "ddr_row_stride", "ddr_pixel_stride", "sram_row_stride")
            c, kh, kw = d0, d1, d2
            strides = (kh * kw * e, kw * e, e, 1)
            if i["codebook_bits"]:
                return self._decoding(i, (c, kh, kw, e)), *self._kernel_sram(sram_addr, (self.align(c), kh, kw, e), (c,))
            ddr = self._strided(self._ddr_rows, "DDR", ddr_addr, (c, kh, kw, e), strides)
            padded = self._strided(self._sram_rows, "SRAM", sram_addr, (self.align(c), kh, kw, e), strides)
            return ddr, padded[:, :c], padded
        raise XnpuError(f"unknown DMA layout {layout}")

    def _kernel_sram(self, sram_addr: int, shape: tuple[int, ...], data: tuple[int, ...]) -> tuple[np.ndarray, np.ndarray]:
        """(data view, padded view) of a dense kernel in SRAM: `shape` padded, `data` its leading unpadded extents."""
        strides = tuple(int(np.prod(shape[k + 1 :], dtype=np.int64)) for k in range(len(shape)))
        padded = self._strided(self._sram_rows, "SRAM", sram_addr, shape, strides)
        return padded[(slice(None), *(slice(0, n) for n in data))], padded

    def _decoding(self, i: Instruction, shape: tuple[int, ...]) -> Callable[[], np.ndarray]:
        """A decoding LOAD's DDR side (docs/isa.md, "Decoding LOADs"): its rows of packed ids
        and its dictionary, decoded when the LOAD copies (the bytes are checked now). They are
        read in the first sample's DDR: a run of several samples decodes only from the constant
        image (`batch_blocker` in backend/simulator.py)."""
        bits = i["codebook_bits"]
        rows, elements = decoding_rows(i)
        width = row_bytes(elements, bits)
        packed = self._strided(self._ddr_rows, "DDR", i["ddr_addr"], (rows, width), (width, 1))[0]
        dictionary = self._strided(self._ddr_rows, "DDR", i["dictionary_addr"], (1 << bits,), (1,))[0]
        return lambda: dictionary[unpack_rows(packed, bits, elements)].reshape(shape)

    def _transfer(self, i: Instruction, loading: bool) -> Transfer:
        """A DMA's views and spans. Within a binary's runs they are built once per instruction
        (its fields and the memories do not change); the checks of `_dma` ran then."""
        return self._decode(i, lambda i: self._new_transfer(i, loading))

    def _new_transfer(self, i: Instruction, loading: bool) -> Transfer:
        self._views_only = True  # the views; what they read or overwrite is settled by the caller
        try:
            ddr, sram, padded = self._dma(i, loading)
        finally:
            self._views_only = False
        region = padded if padded is not None else sram
        ddr_start = i["ddr_addr"]
        ddr_end = ddr_start + dma_ddr_extent(i)
        # a padded region without pad lanes is the data itself: the copy defines every byte
        lanes = padded if padded is not None and padded.shape != sram.shape else None
        planes = ()
        if loading and i["layout"] == DMA_LAYOUTS["NCHW"] and not callable(ddr) and sram.shape[3] <= PLANE_COPY_CHANNELS:
            planes = tuple((sram[:, :, :, k], ddr[:, :, :, k]) for k in range(sram.shape[3]))
        return Transfer(i, ddr, sram, lanes, i["sram_addr"], strided_extent(region.shape[1:], region.strides[1:]),
                        ddr_start, ddr_end, _data_fields(i), planes)

    def _load(self, i: Instruction) -> None:
        t = self._transfer(i, loading=True)
        self._sram_written(t.sram_start, t.sram_size)
        if self._image is not None and t.ddr_end <= self._image[1] and t.sram_size:
            # constants: copied when SRAM is read there; a unit may reuse what it derived from them
            self._sram_constants.add(t.sram_start, [t.sram_start + t.sram_size, t.fields, t.copy_in])
        else:
            t.copy_in()

    def _store(self, i: Instruction) -> None:
        if i["layout"] in (DMA_LAYOUTS["OHWI"], DMA_LAYOUTS["DW"]):
            raise XnpuError(f"layout {_layout_name(i['layout'])} is LOAD-only")
        t = self._transfer(i, loading=False)
        if self._sram_constants.entries:
            self._materialize(t.sram_start, t.sram_size)
        self._before_ddr_write(t.ddr_start, t.ddr_end - t.ddr_start)
        t.ddr[...] = t.sram  # only the unpadded elements reach DDR


def _no_overlap(memory: str, h: int, w: int, pixel_bytes: int, row_stride: int, pixel_stride: int) -> None:
    """The written side of a DMA must not write one byte twice (strides at least the dense ones)."""
    if w > 1 and pixel_stride < pixel_bytes:
        raise XnpuError(f"{memory} pixel stride {pixel_stride} is smaller than a {pixel_bytes}-byte pixel: pixels would overlap")
    if h > 1 and row_stride < (w - 1) * pixel_stride + pixel_bytes:
        raise XnpuError(f"{memory} row stride {row_stride} is smaller than a row: rows would overlap")


def _layout_name(layout: int) -> str:
    return {v: k for k, v in DMA_LAYOUTS.items()}.get(layout, str(layout))


def _data_fields(i: Instruction) -> tuple:
    """What a LOAD moves, without its dependency fields (two LOADs of the same bytes are one origin)."""
    return tuple(value for name, value in i.fields.items() if name not in DEPENDENCY_NAMES)
