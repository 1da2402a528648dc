"""The memories of the simulated machine: DDR and SRAM as flat byte arrays, bounds-checked views.

`MachineMemory` holds the two memories of docs/isa.md section 1 and the views the units read
and write through. Constants a LOAD brings from the binary's constant image are copied lazily
(only when SRAM is read there), so weights the conv unit has prepared once per binary are never
copied again (`_sram_constants`, `_materialize`, `_prepared`).
"""

from __future__ import annotations

import bisect

import numpy as np

from xnpu.backend.binary import Binary
from xnpu.core.budget import check_tensor
from xnpu.core.errors import XnpuError
from xnpu.semantics import fixed_point as fp
from xnpu.target.description import TargetDescription, load_target

# docs/isa.md section 1: a rescale record is uint16 M, int8 shift, one zero byte.
RESCALE_RECORD = np.dtype([("multiplier", "<u2"), ("shift", "i1"), ("zero", "u1")])


def strided_extent(shape: tuple[int, ...], strides: tuple[int, ...]) -> int:
    """Bytes spanned by a view of uint8 elements with non-negative byte strides."""
    if any(n == 0 for n in shape):
        return 0
    return 1 + sum((n - 1) * s for n, s in zip(shape, strides))


class ConstantRegions:
    """The disjoint SRAM regions LOADs filled from the constant image: start -> [end, the
    LOAD's fields, its copy while not yet done], found by bisection over the sorted starts (a
    run holds a few hundred, and every SRAM access asks which it touches)."""

    def __init__(self) -> None:
        self.starts: list[int] = []
        self.entries: dict[int, list] = {}

    def __bool__(self) -> bool:
        return bool(self.entries)

    def clear(self) -> None:
        self.starts.clear()
        self.entries.clear()

    def add(self, start: int, entry: list) -> None:
        """A region that overlaps none held (the caller forgot those first)."""
        if start not in self.entries:
            bisect.insort(self.starts, start)
        self.entries[start] = entry

    def pop(self, start: int) -> list:
        del self.starts[bisect.bisect_left(self.starts, start)]
        return self.entries.pop(start)

    def overlapping(self, address: int, end: int) -> list[int]:
        """The starts of the regions that overlap [address, end)."""
        starts = self.starts
        k = bisect.bisect_right(starts, address) - 1
        if k < 0 or self.entries[starts[k]][0] <= address:
            k += 1
        found = []
        while k < len(starts) and starts[k] < end:
            found.append(starts[k])
            k += 1
        return found

    def containing(self, address: int, size: int) -> tuple[int, list] | None:
        """(start, entry) of the region that holds all of [address, address + size), or None."""
        k = bisect.bisect_right(self.starts, address) - 1
        if k < 0:
            return None
        start = self.starts[k]
        entry = self.entries[start]
        return (start, entry) if address + size <= entry[0] else None


class MachineMemory:
    """DDR and SRAM as bytearray-backed uint8 arrays, and the views units and DMA use."""

    # per instruction of the running binary (its Plan.decoded): what the instruction's fields alone give
    _decoded: dict[object, object] | None = None

    def __init__(self, target: TargetDescription | str, ddr_size: int | None = None):
        self.target = load_target(target) if isinstance(target, str) else target
        limit = self.target.memory.ddr_bytes
        ddr_size = limit if ddr_size is None else ddr_size
        if not 0 <= ddr_size <= limit:
            raise XnpuError(f"simulator DDR of {ddr_size} bytes: target {self.target.name} has {limit}")
        check_tensor((ddr_size,), 1, f"the simulator's DDR for target {self.target.name}")
        self.ddr = np.frombuffer(bytearray(ddr_size), dtype=np.uint8)
        self._sram_array = np.frombuffer(bytearray(self.target.memory.sram_bytes), dtype=np.uint8)
        self.align = self.target.align
        # Constants loaded once per binary: which binary's constant image DDR holds unchanged
        # (None once anything else wrote there), the SRAM regions a LOAD filled from that image
        # (start -> [end, the LOAD's fields, its copy while not yet done]), and what the conv
        # unit prepared from them. A LOAD of constants copies only when the bytes are read
        # (`_span`), so weights that the conv unit has prepared are never copied again.
        self._image: tuple[int, int] | None = None  # (id of the binary, image length)
        self._image_owner: Binary | None = None
        self._sram_constants = ConstantRegions()
        self._views_only = False
        self._prepared: dict[tuple, object] = {}
        # the maps' views, checked on first use (SRAM's array never moves): units read and write
        # through them; mobilenetv3_like's ~700 instructions an image made them anew each time
        self._map_views: dict[tuple, tuple[int, np.ndarray]] = {}
        self._output_views: dict[tuple, tuple] = {}

    @property
    def sram(self) -> np.ndarray:
        """The SRAM bytes, every LOAD done."""
        self._materialize(0, self._sram_array.size)
        return self._sram_array

    def reset_sram(self) -> None:
        """SRAM keeps nothing between runs; the simulator defines its contents as zeros."""
        self._sram_constants.clear()
        self._sram_array[:] = 0

    def write_ddr(self, address: int, data) -> None:
        raw = np.frombuffer(bytes(data), dtype=np.uint8) if not isinstance(data, np.ndarray) else (
            np.ascontiguousarray(data).reshape(-1).view(np.uint8)
        )
        target = self._span(self.ddr, "DDR", address, raw.size)
        self._before_ddr_write(address, raw.size)
        target[:] = raw

    def _before_ddr_write(self, address: int, size: int) -> None:
        """DDR [address, address + size) is about to change: if that touches the constant image,
        the pending LOADs from it are done now and nothing derived from it is kept."""
        if self._image is not None and size and address < self._image[1]:
            self._materialize(0, self._sram_array.size)
            self._image = None
            self._image_owner = None
            self._prepared.clear()

    def read_ddr(self, address: int, size: int) -> bytes:
        return self._span(self.ddr, "DDR", address, size).tobytes()

    def load_constants(self, constants: bytes) -> None:
        """docs/binary-format.md: the constant image is copied to DDR address 0."""
        if len(constants) > self.ddr.size:
            raise XnpuError(f"the {len(constants)}-byte constant image does not fit the {self.ddr.size}-byte DDR")
        self._before_ddr_write(0, len(constants))
        self.ddr[: len(constants)] = np.frombuffer(constants, dtype=np.uint8)


    # ----------------------------------------------------------------------------------
    # Memory views (bounds-checked before any view is made)
    # ----------------------------------------------------------------------------------

    def _span(self, memory: np.ndarray, name: str, address: int, size: int) -> np.ndarray:
        if address < 0 or size < 0 or address + size > memory.size:
            raise XnpuError(f"{name} bytes [{address}, {address + size}) are outside the {memory.size}-byte {name}")
        if self._sram_constants and memory is self._sram_array and not self._views_only:
            self._materialize(address, size)
        return memory[address : address + size]

    def _strided(self, memory: np.ndarray, name: str, address: int, shape: tuple[int, ...], strides: tuple[int, ...]) -> np.ndarray:
        extent = strided_extent(shape, strides)
        base = self._span(memory, name, address, extent)
        if extent == 0:
            return np.zeros(shape, dtype=np.uint8)
        return np.ndarray(shape, np.uint8, base, 0, strides)

    def _materialize(self, address: int, size: int) -> None:
        """Do the pending constant LOADs that overlap SRAM [address, address + size)."""
        entries = self._sram_constants.entries
        for start in self._sram_constants.overlapping(address, address + size):
            entry = entries[start]
            copy = entry[2]
            if copy is not None:
                entry[2] = None
                copy()

    def _feature_map(self, address: int, h: int, w: int, c: int) -> np.ndarray:
        """The H x W x C int8 view of a padded NHWC map in SRAM (docs/isa.md section 1)."""
        key = (address, h, w, c)
        kept = self._map_views.get(key)
        if kept is not None:
            if self._sram_constants and not self._views_only:
                self._materialize(address, kept[0])
            return kept[1]
        cp = self.align(c)
        size = h * w * cp
        view = self._span(self._sram_array, "SRAM", address, size).view(np.int8).reshape(h, w, cp)[:, :, :c]
        self._map_views[key] = (size, view)
        return view

    def _write_feature_map(self, address: int, values: np.ndarray) -> None:
        """Store an H x W x C result (already saturated to int8); pad lanes are written as 0."""
        h, w, c = values.shape
        self._output_map(address, h, w, c)[...] = values

    def _output_map(self, address: int, h: int, w: int, c: int, pixel_stride: int = 0) -> np.ndarray:
        """The H x W x C int8 view a unit writes its result through, its pad lanes already 0;
        pixels `pixel_stride` bytes apart (0: dense, the padded channel count)."""
        key = (address, h, w, c, pixel_stride)
        kept = self._output_views.get(key)
        if kept is None:
            kept = self._output_views[key] = self._new_output_views(address, h, w, c, pixel_stride)
        extent, data, pad = kept
        self._sram_written(address, extent)
        if pad is not None:
            pad[...] = 0
        return data

    def _new_output_views(self, address: int, h: int, w: int, c: int, pixel_stride: int) -> tuple:
        """(bytes spanned, the H x W x C int8 view, its pad lanes or None) of an output map,
        bounds checked; what SRAM held there is settled by the writer (_output_map)."""
        cp = self.align(c)
        stride = pixel_stride or cp
        if stride < cp:
            raise XnpuError(f"out_pixel_stride {stride} is smaller than the {cp} padded channels of a pixel")
        extent = strided_extent((h, w, cp), (w * stride, stride, 1))
        self._span(self._sram_array, "SRAM", address, 0)  # bounds first
        if address + extent > self._sram_array.size:
            self._span(self._sram_array, "SRAM", address, extent)
        base = self._sram_array[address : address + extent].view(np.int8)
        padded = base.reshape(h, w, cp) if stride == cp else np.ndarray((h, w, cp), np.int8, base, 0, (w * stride, stride, 1))
        return extent, padded[:, :, :c], padded[:, :, c:] if cp != c else None

    def _sram_written(self, address: int, size: int) -> None:
        """SRAM [address, address + size) is about to be written: forget which constants it held
        (a pending LOAD that the write covers only in part is done first)."""
        if self._sram_constants:
            end = address + size
            for start in self._sram_constants.overlapping(address, end):
                entry = self._sram_constants.pop(start)
                if entry[2] is not None and not (address <= start and entry[0] <= end):
                    entry[2]()

    def _map_bytes(self, h: int, w: int, c: int) -> int:
        return h * w * self.align(c)

    def _rescale_records(self, address: int, count: int) -> tuple[np.ndarray, np.ndarray]:
        raw = self._span(self._sram_array, "SRAM", address, count * RESCALE_RECORD.itemsize)
        records = raw.view(RESCALE_RECORD)
        if np.any(records["zero"]):
            raise XnpuError(f"a rescale record at SRAM {address} has a nonzero byte 3")
        multiplier = records["multiplier"].astype(np.int64)
        shift = records["shift"].astype(np.int64)
        fp.check_multiplier(multiplier, shift)
        return multiplier, shift
