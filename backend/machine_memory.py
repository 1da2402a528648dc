"""The memories of the simulated machine: DDR and SRAM as flat byte arrays, bounds-checked views.

`MachineMemory` holds the two memories of docs/isa.md section 1 and the views the units read
and write through. Constants a LOAD brings from the binary's constant image are copied lazily
(only when SRAM is read there), so weights the conv unit has prepared once per binary are never
copied again (`_sram_constants`, `_materialize`, `_prepared`).

The machine runs `samples` copies of a program at once, one per sample (`set_samples`): each
memory is one row per sample, and every view has a leading sample axis, so an instruction is
one numpy operation over all the samples. The constant image is DDR's first row only: a view
that lies inside it reads that row for every sample (its sample stride is 0); the rest of DDR
(inputs, outputs, intermediates) and SRAM are the samples' own. A run of several samples is
a run of one program on each, so what the program reads as parameters (weights, bias,
records, tables) must be the same for all of them: `_shared` checks that where the constant
image does not already say so, and raises `SamplesDiffer` otherwise.
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
    run holds a few hundred, and every SRAM access asks which it touches). The machine asks
    whether any is held through `entries` (a run asks ~1000 times; `bool()` is a call each)."""

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


class SamplesDiffer(Exception):
    """The samples running together read different parameters: run them one at a time."""


class MachineMemory:
    """DDR and SRAM as uint8 arrays of one row per sample, and the views units and DMA use."""

    # per instruction of the running binary (its Plan.decoded): what the instruction's fields alone give
    _decoded: dict[object, object] | None = None

    def __init__(self, target: TargetDescription | str, ddr_size: int | None = None):
        self.target = load_target(target) if isinstance(target, str) else target
        limit = self.target.memory.ddr_bytes
        ddr_size = limit if ddr_size is None else ddr_size
        if not 0 <= ddr_size <= limit:
            raise XnpuError(f"simulator DDR of {ddr_size} bytes: target {self.target.name} has {limit}")
        check_tensor((ddr_size,), 1, f"the simulator's DDR for target {self.target.name}")
        self.samples = 1
        # np.zeros: the pages of a row are only allocated where the row is written (the image's
        # rows beyond the first never are)
        self._ddr_rows = np.zeros((1, ddr_size), dtype=np.uint8)
        self._sram_rows = np.zeros((1, self.target.memory.sram_bytes), dtype=np.uint8)
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
        """The first sample's SRAM bytes, every LOAD done."""
        self._materialize(0, self._sram_rows.shape[1])
        return self._sram_rows[0]

    @property
    def ddr(self) -> np.ndarray:
        """The first sample's DDR bytes (the constant image is there)."""
        return self._ddr_rows[0]

    def set_samples(self, samples: int) -> None:
        """Make the memories `samples` rows: SRAM and DDR beyond the constant image are each
        sample's own; the first row keeps what DDR held (the constant image)."""
        if samples == self.samples:
            return
        ddr = np.zeros((samples, self._ddr_rows.shape[1]), dtype=np.uint8)
        ddr[0] = self._ddr_rows[0]
        self._ddr_rows = ddr
        self._sram_rows = np.zeros((samples, self._sram_rows.shape[1]), dtype=np.uint8)
        self._sram_constants.clear()
        self.samples = samples
        self._map_views.clear()
        self._output_views.clear()
        self._memories_moved()

    def _memories_moved(self) -> None:
        """The views made of the memories before are stale (the machine forgets its own)."""

    def reset_sram(self) -> None:
        """SRAM keeps nothing between runs; the simulator defines its contents as zeros."""
        self._sram_constants.clear()
        self._sram_rows[:] = 0

    def write_ddr(self, address: int, data) -> None:
        """Bytes into DDR at `address`, the same for every sample."""
        raw = np.frombuffer(bytes(data), dtype=np.uint8) if not isinstance(data, np.ndarray) else (
            np.ascontiguousarray(data).reshape(-1).view(np.uint8)
        )
        self.write_ddr_rows(address, raw[None])

    def write_ddr_rows(self, address: int, rows: np.ndarray) -> None:
        """One row of bytes per sample (or one for all) into DDR at `address`."""
        target = self._span(self._ddr_rows, "DDR", address, rows.shape[1])
        self._before_ddr_write(address, rows.shape[1])
        target[...] = rows

    def _before_ddr_write(self, address: int, size: int) -> None:
        """DDR [address, address + size) is about to change: if that touches the constant image,
        the pending LOADs from it are done now and nothing derived from it is kept."""
        if self._image is not None and size and address < self._image[1]:
            self._materialize(0, self._sram_rows.shape[1])
            self._image = None
            self._image_owner = None
            self._prepared.clear()

    def read_ddr(self, address: int, size: int) -> bytes:
        """The first sample's DDR bytes at `address`."""
        return self._span(self._ddr_rows, "DDR", address, size)[0].tobytes()

    def read_ddr_rows(self, address: int, size: int) -> np.ndarray:
        """Each sample's DDR bytes at `address`: samples x size."""
        return self._span(self._ddr_rows, "DDR", address, size)

    def load_constants(self, constants: bytes) -> None:
        """docs/binary-format.md: the constant image is copied to DDR address 0 (of the first
        sample's row: the other samples read it there)."""
        size = self._ddr_rows.shape[1]
        if len(constants) > size:
            raise XnpuError(f"the {len(constants)}-byte constant image does not fit the {size}-byte DDR")
        self._before_ddr_write(0, len(constants))
        self._ddr_rows[0, : len(constants)] = np.frombuffer(constants, dtype=np.uint8)


    # ----------------------------------------------------------------------------------
    # Memory views (bounds-checked before any view is made)
    # ----------------------------------------------------------------------------------

    def _span(self, memory: np.ndarray, name: str, address: int, size: int) -> np.ndarray:
        """Bytes [address, address + size) of every sample's row of `memory`: samples x size."""
        length = memory.shape[1]
        if address < 0 or size < 0 or address + size > length:
            raise XnpuError(f"{name} bytes [{address}, {address + size}) are outside the {length}-byte {name}")
        if self._sram_constants.entries and memory is self._sram_rows and not self._views_only:
            self._materialize(address, size)
        return memory[:, address : address + size]

    def _strided(self, memory: np.ndarray, name: str, address: int, shape: tuple[int, ...], strides: tuple[int, ...]) -> np.ndarray:
        """A samples x `shape` view of `memory`'s rows at `address`, `strides` apart within a
        row; every sample reads the first row where the view lies in the constant image."""
        extent = strided_extent(shape, strides)
        self._span(memory, name, address, extent)
        if extent == 0:
            return np.zeros((memory.shape[0], *shape), dtype=np.uint8)
        row = memory.shape[1]
        if memory is self._ddr_rows and self._image is not None and address + extent <= self._image[1]:
            row = 0
        return np.ndarray((memory.shape[0], *shape), np.uint8, memory, address, (row, *strides))

    def _shared(self, values: np.ndarray, address: int, size: int) -> np.ndarray:
        """The first sample's `values` (samples x ...) read from SRAM [address, address + size)
        as a parameter of an instruction: the same for every sample where the constant image
        says so, or they are compared; SamplesDiffer where they differ."""
        if values.shape[0] > 1 and self._sram_constants.containing(address, size) is None:
            if not (values[1:] == values[:1]).all():
                raise SamplesDiffer()
        return values[0]

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
            if self._sram_constants.entries and not self._views_only:
                self._materialize(address, kept[0])
            return kept[1]
        cp = self.align(c)
        size = h * w * cp
        view = self._span(self._sram_rows, "SRAM", address, size).view(np.int8).reshape(-1, h, w, cp)[..., :c]
        self._map_views[key] = (size, view)
        return view

    def _decode(self, i, build):
        """`build(i)`: what instruction `i`'s fields alone give (its checks, views, parameters),
        once per binary's plan (`_decoded`, forgotten when the memories move); built on every
        call where no plan runs (a failed check then raises at the instruction's turn)."""
        decoded = self._decoded
        if decoded is None:
            return build(i)
        kept = decoded.get(id(i))
        if kept is None or kept[0] is not i:
            kept = decoded[id(i)] = (i, build(i))
        return kept[1]

    def _reading(self, address: int, size: int) -> None:
        """SRAM [address, address + size) is about to be read through a view made before: the
        pending constant LOADs there are done first."""
        if self._sram_constants.entries:
            self._materialize(address, size)

    def _write_feature_map(self, address: int, values: np.ndarray) -> None:
        """Store samples x H x W x C results (already saturated to int8); pad lanes are written as 0."""
        _, h, w, c = values.shape
        self._output_map(address, h, w, c)[...] = values

    def _output_map(self, address: int, h: int, w: int, c: int, pixel_stride: int = 0) -> np.ndarray:
        """The samples x H x W x C int8 view a unit writes its result through, its pad lanes
        already 0; pixels `pixel_stride` bytes apart (0: dense, the padded channel count)."""
        return self._writing(self._output_region(address, h, w, c, pixel_stride))

    def _output_region(self, address: int, h: int, w: int, c: int, pixel_stride: int = 0) -> tuple:
        """An output map's views (`_new_output_views`), made once; `_writing` writes through them."""
        key = (address, h, w, c, pixel_stride)
        kept = self._output_views.get(key)
        if kept is None:
            kept = self._output_views[key] = (address, *self._new_output_views(address, h, w, c, pixel_stride))
        return kept

    def _writing(self, region: tuple) -> np.ndarray:
        """The data view of an `_output_region` about to be written: SRAM forgets the constants
        it held there, and its pad lanes are 0."""
        address, extent, data, pad = region
        self._sram_written(address, extent)
        if pad is not None:
            pad[...] = 0
        return data

    def _new_output_views(self, address: int, h: int, w: int, c: int, pixel_stride: int) -> tuple:
        """(bytes spanned, the samples x H x W x C int8 view, its pad lanes or None) of an output
        map, bounds checked; what SRAM held there is settled by the writer (_output_map)."""
        cp = self.align(c)
        stride = pixel_stride or cp
        if stride < cp:
            raise XnpuError(f"out_pixel_stride {stride} is smaller than the {cp} padded channels of a pixel")
        extent = strided_extent((h, w, cp), (w * stride, stride, 1))
        self._span(self._sram_rows, "SRAM", address, 0)  # bounds first
        if address + extent > self._sram_rows.shape[1]:
            self._span(self._sram_rows, "SRAM", address, extent)
        rows = self._sram_rows
        padded = np.ndarray((rows.shape[0], h, w, cp), np.int8, rows, address, (rows.shape[1], w * stride, stride, 1))
        return extent, padded[..., :c], padded[..., c:] if cp != c else None

    def _sram_written(self, address: int, size: int) -> None:
        """SRAM [address, address + size) is about to be written: forget which constants it held
        (a pending LOAD that the write covers only in part is done first)."""
        if self._sram_constants.entries:
            end = address + size
            for start in self._sram_constants.overlapping(address, end):
                entry = self._sram_constants.pop(start)
                if entry[2] is not None and not (address <= start and entry[0] <= end):
                    entry[2]()

    def _map_bytes(self, h: int, w: int, c: int) -> int:
        return h * w * self.align(c)

    def _rescale_records(self, address: int, count: int) -> tuple[np.ndarray, np.ndarray]:
        size = count * RESCALE_RECORD.itemsize
        raw = self._shared(self._span(self._sram_rows, "SRAM", address, size), address, size)
        records = raw.view(RESCALE_RECORD)
        if np.any(records["zero"]):
            raise XnpuError(f"a rescale record at SRAM {address} has a nonzero byte 3")
        multiplier = records["multiplier"].astype(np.int64)
        shift = records["shift"].astype(np.int64)
        fp.check_multiplier(multiplier, shift)
        return multiplier, shift
