"""The reference simulator of the xnpu accelerator: docs/isa.md, executed instruction by instruction.

`Machine` holds the two memories of the hardware model (DDR and SRAM, flat little-endian byte
arrays) and executes decoded instructions one at a time, in program order, exactly as
docs/isa.md says. It only moves bytes: every arithmetic step is a call into
`xnpu.semantics.fixed_point` (the one implementation of docs/fixed-point.md), so a program run
here agrees bit for bit with the `fixed` interpreter by construction. Memory is moved with
numpy views over the byte arrays (strided views for the DMA layouts), never element by element.

Anything a program must not do (an access outside a memory, an unknown layout, a unit the
target lacks, a rule's broken precondition) is one XnpuError line naming the instruction's
index and mnemonic. Each instruction is charged the cycles of `xnpu.target.cost`.

`run_binary(binary, inputs)` is the host side of docs/binary-format.md: quantize the float
inputs with the io table's scales (R4), place them and the constant image in DDR, run, read
the outputs back and dequantize them, mirroring `fixed.quantize` / `fixed.dequantize`.
"""

from __future__ import annotations

import weakref
from collections import OrderedDict
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field

import numpy as np

from xnpu.backend.binary import Binary, IoTensor
from xnpu.backend.host import HostSegments
from xnpu.core.errors import XnpuError
from xnpu.interpreters.function import TensorSpec, bind_inputs
from xnpu.semantics import convolution, units
from xnpu.semantics import fixed_point as fp
from xnpu.target.cost import conv_output_hw, decode_cycles, instruction_cycles
from xnpu.target.description import TargetDescription, list_targets, load_target
from xnpu.target.encoding import BROADCASTS, DMA_LAYOUTS, ELTWISE_OPS, POOL_KINDS, Instruction, decode_program

# docs/isa.md section 1: a rescale record is uint16 M, int8 shift, one zero byte.
RESCALE_RECORD = np.dtype([("multiplier", "<u2"), ("shift", "i1"), ("zero", "u1")])
# DMA element sizes (elem_log2) and the io table's integer dtypes, little-endian.
IO_DTYPES = {"int8": np.dtype("<i1"), "int16": np.dtype("<i2"), "int32": np.dtype("<i4"), "uint8": np.dtype("u1"),
             "float32": np.dtype("<f4")}  # float32: a host segment's outputs
QUANTIZED_BITS = {"int8": 8, "int16": 16, "int32": 32}
INT8_BITS = 8
UNATTRIBUTED = "(no provenance)"
WEIGHT_DECODE = "DECODE"  # the profile's name for the kind-6 weight decode before the program runs


@dataclass(frozen=True)
class TraceRecord:
    """What the `trace` callback receives after each executed instruction."""

    index: int
    mnemonic: str
    provenance: tuple[str, ...]
    cycles: int
    instruction: Instruction

    def __str__(self) -> str:
        origin = ", ".join(self.provenance) or "-"
        return f"{self.index:6d}  {self.mnemonic:<8s} {self.cycles:10d} cycles  {origin}"


@dataclass
class RunStats:
    """Cycles of a run (docs/isa.md section 5: the sum over executed instructions)."""

    clock_mhz: float
    cycles: int = 0
    instructions: int = 0
    by_class: dict[str, int] = field(default_factory=dict)  # mnemonic -> cycles
    by_layer: dict[str, int] = field(default_factory=dict)  # ONNX node name(s) -> cycles
    tokens: list[int] = field(default_factory=list)  # SYNC tokens posted to the host, in order

    @property
    def time_us(self) -> float:
        return self.cycles / self.clock_mhz

    def add(self, mnemonic: str, provenance: tuple[str, ...], cycles: int) -> None:
        self.cycles += cycles
        self.instructions += 1
        self.by_class[mnemonic] = self.by_class.get(mnemonic, 0) + cycles
        layer = " + ".join(provenance) if provenance else UNATTRIBUTED
        self.by_layer[layer] = self.by_layer.get(layer, 0) + cycles

    def merge(self, other: RunStats) -> None:
        """Accumulate another run (one more sample of a batch)."""
        self.cycles += other.cycles
        self.instructions += other.instructions
        for mine, theirs in ((self.by_class, other.by_class), (self.by_layer, other.by_layer)):
            for key, cycles in theirs.items():
                mine[key] = mine.get(key, 0) + cycles
        self.tokens.extend(other.tokens)


@dataclass(frozen=True)
class _Transfer:
    """One DMA instruction's views (bytes with a trailing element axis) and spans."""

    instruction: Instruction
    ddr: np.ndarray
    sram: np.ndarray
    padded: np.ndarray | None  # the whole padded SRAM region, or None
    sram_start: int
    sram_size: int
    ddr_start: int
    ddr_end: int
    fields: tuple

    def copy_in(self) -> None:
        if self.padded is not None:
            self.padded[...] = 0  # every padded lane the LOAD covers is defined: zero, then the data
        self.sram[...] = self.ddr


@dataclass
class _Plan:
    """What a binary's run does that does not depend on data: the instructions executed (up
    to the first SYNC halt=1), each checked against the target, and the run's cycles."""

    instructions: list
    steps: list[tuple[int, str, Instruction]]
    stats: RunStats
    transfers: dict = field(default_factory=dict)  # id(instruction) -> _Transfer, built on first use

    @staticmethod
    def of(binary: Binary, machine: Machine) -> _Plan | None:
        """None when an instruction fails a check: `execute` then reports it at its turn."""
        stats = RunStats(machine.target.cost.clock_mhz)
        steps = []
        for index, instruction in enumerate(binary.instructions):
            mnemonic = getattr(instruction, "op", None)
            if not isinstance(instruction, Instruction) or mnemonic not in machine._units:
                return None
            try:
                machine.target.check_instruction(instruction)
                cycles = instruction_cycles(instruction, machine.target)
            except XnpuError:
                return None
            steps.append((index, mnemonic, instruction))
            stats.add(mnemonic, tuple(binary.provenance.get(index, ())), cycles)
            if mnemonic == "SYNC" and instruction["halt"]:
                break
        return _Plan(binary.instructions, steps, stats)

    def fresh_stats(self) -> RunStats:
        s = self.stats
        return RunStats(s.clock_mhz, s.cycles, s.instructions, dict(s.by_class), dict(s.by_layer))


Program = Binary | Iterable[Instruction] | bytes
Trace = Callable[[TraceRecord], None]


def _ceil_div(a: int, b: int) -> int:
    return -(-a // b)


def _strided_extent(shape: tuple[int, ...], strides: tuple[int, ...]) -> int:
    """Bytes spanned by a view of uint8 elements with non-negative byte strides."""
    if any(n == 0 for n in shape):
        return 0
    return 1 + sum((n - 1) * s for n, s in zip(shape, strides))


class Machine:
    """One xnpu core: DDR and SRAM as bytearray-backed uint8 arrays, instructions run in order."""

    def __init__(self, target: TargetDescription | str, ddr_size: int | None = None):
        self.target = load_target(target) if isinstance(target, str) else target
        limit = self.target.memory.ddr_bytes
        ddr_size = limit if ddr_size is None else ddr_size
        if not 0 <= ddr_size <= limit:
            raise XnpuError(f"simulator DDR of {ddr_size} bytes: target {self.target.name} has {limit}")
        self.ddr = np.frombuffer(bytearray(ddr_size), dtype=np.uint8)
        self._sram_array = np.frombuffer(bytearray(self.target.memory.sram_bytes), dtype=np.uint8)
        self.align = self.target.align
        self._units = {
            "SYNC": self._sync,
            "LOAD": self._load,
            "STORE": self._store,
            "CONV": self._conv,
            "ELTWISE": self._eltwise,
            "POOL": self._pool,
            "TABLE": self._table,
            "CLAMP": self._clamp,
        }
        self._halted = False
        self._tokens: list[int] = []
        self._host: HostSegments | None = None  # the running binary's host segments (backend/host.py)
        # Constants decoded once per binary: which binary's constant image DDR holds unchanged
        # (None once anything else wrote there), the SRAM regions a LOAD filled from that image
        # (start -> [end, the LOAD's fields, its copy while not yet done]), and what the conv
        # unit prepared from them. A LOAD of constants copies only when the bytes are read
        # (`_span`), so weights that the conv unit has prepared are never copied again.
        self._image: tuple[int, int] | None = None  # (id of the binary, image length)
        self._image_owner: Binary | None = None
        self._sram_constants: dict[int, list] = {}
        self._views_only = False
        self._transfers: dict[int, _Transfer] | None = None  # a binary's DMA views, while it runs
        self._prepared: dict[tuple, object] = {}
        self._plans: dict[int, tuple[Binary, _Plan]] = {}

    # ----------------------------------------------------------------------------------
    # Host interface
    # ----------------------------------------------------------------------------------

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

    def _load_image(self, binary: Binary) -> list[int]:
        """Constants and decoded weights into DDR, unless DDR still holds exactly this binary's
        (nothing wrote below the image's end since): a binary is loaded once per machine."""
        if self._image_owner is binary and self._image is not None:
            return self._image_decode
        self.load_constants(binary.constants)
        decode = self.decode_weights(binary)
        self._image = (id(binary), len(binary.constants))
        self._image_owner = binary
        self._image_decode = decode
        return decode

    def decode_weights(self, binary: Binary) -> list[int]:
        """docs/binary-format.md section 6: expand each compressed region through its
        dictionary into DDR, like the hardware decompressor does when the program is loaded
        (the placeholders the constant image holds there are overwritten). Returns the cycles
        of each region's decode (xnpu.target.cost.decode_cycles)."""
        cycles = []
        for region in binary.compressed:
            ids = np.asarray(region.ids, dtype=np.int64)
            table = np.frombuffer(bytes(region.dictionary), dtype=np.uint8)
            if table.size != 1 << region.bits or (ids.size and ids.max() >= table.size):
                raise XnpuError(f"compressed region at DDR {region.ddr_addr}: ids outside its {table.size}-entry dictionary")
            self._span(self.ddr, "DDR", region.ddr_addr, ids.size)[:] = table[ids]
            cycles.append(decode_cycles(int(ids.size), region.bits, self.target))
        return cycles

    def write_tensor(self, tensor: IoTensor, codes) -> None:
        """Integer codes of an io tensor (its logical shape) into DDR, in its layout."""
        dtype = _io_dtype(tensor)
        codes = np.asarray(codes)
        if codes.shape != tuple(tensor.shape):
            raise XnpuError(f"input '{tensor.name}' has shape {list(codes.shape)}, the binary expects {list(tensor.shape)}")
        if dtype.kind in "iu":
            info = np.iinfo(dtype)
            if codes.size and (codes.min() < info.min or codes.max() > info.max):
                raise XnpuError(f"input '{tensor.name}' has codes outside {tensor.dtype}")
        ordered = _to_ddr_order(tensor, codes.astype(dtype))
        self.write_ddr(tensor.ddr_addr, ordered.tobytes())

    def read_tensor(self, tensor: IoTensor) -> np.ndarray:
        """Integer codes of an io tensor out of DDR, in its logical shape."""
        dtype = _io_dtype(tensor)
        count = int(np.prod(tensor.shape, dtype=np.int64))
        raw = self._span(self.ddr, "DDR", tensor.ddr_addr, count * dtype.itemsize)
        flat = np.frombuffer(raw.tobytes(), dtype=dtype)
        return _from_ddr_order(tensor, flat)

    def run(self, program: Program, inputs: Mapping | None = None, trace: Trace | None = None):
        """Run a program; returns (outputs, stats).

        A `Binary`: its constants go to DDR 0, `inputs` maps io input names to integer codes
        (logical shapes), and the outputs are the io outputs' integer codes by name. A list of
        instructions (or a raw instruction stream): `inputs` maps DDR addresses to bytes or
        arrays written first, and the outputs are empty (read the memories directly).
        """
        self.reset_sram()
        inputs = dict(inputs or {})
        if isinstance(program, Binary):
            if program.target_id != self.target.id:
                raise XnpuError(
                    f"binary: built for target id {program.target_id}, the machine is {self.target.name} (id {self.target.id})"
                )
            decode = self._load_image(program)
            if self._host is None or self._host.binary is not program:
                self._host = HostSegments(program) if program.host_segments else None
            for tensor in program.inputs():
                if tensor.name not in inputs:
                    raise XnpuError(f"missing input '{tensor.name}'")
                self.write_tensor(tensor, inputs.pop(tensor.name))
            if inputs:
                raise XnpuError(f"unknown input '{sorted(inputs)[0]}'")
            stats = self._execute_binary(program, trace)
            for cycles in decode:
                stats.add(WEIGHT_DECODE, (WEIGHT_DECODE,), cycles)
                stats.instructions -= 1  # stats.add counts an instruction; a decode is not one
            return {tensor.name: self.read_tensor(tensor) for tensor in program.outputs()}, stats
        instructions = decode_program(program) if isinstance(program, (bytes, bytearray)) else list(program)
        for address, data in inputs.items():
            self.write_ddr(int(address), data)
        return {}, self.execute(instructions, None, trace)

    def execute(
        self,
        instructions: Iterable[Instruction],
        provenance: Mapping[int, tuple[str, ...]] | None = None,
        trace: Trace | None = None,
    ) -> RunStats:
        """Execute in order until the end or the first SYNC halt=1; cycles per docs/isa.md section 5."""
        provenance = provenance or {}
        stats = RunStats(self.target.cost.clock_mhz)
        self._halted = False
        self._tokens = stats.tokens
        for index, instruction in enumerate(instructions):
            mnemonic = getattr(instruction, "op", None)
            try:
                if not isinstance(instruction, Instruction) or mnemonic not in self._units:
                    raise XnpuError(f"{instruction!r} is not a decoded instruction")
                self.target.check_instruction(instruction)
                self._units[mnemonic](instruction)
                cycles = instruction_cycles(instruction, self.target)
            except XnpuError as error:
                raise XnpuError(f"instruction {index} ({mnemonic}): {error}") from None
            origin = tuple(provenance.get(index, ()))
            stats.add(mnemonic, origin, cycles)
            if trace is not None:
                trace(TraceRecord(index, mnemonic, origin, cycles, instruction))
            if self._halted:
                break
        return stats

    def _execute_binary(self, binary: Binary, trace: Trace | None) -> RunStats:
        """`execute` for a Binary: the checks and cycles that depend only on the instructions
        (everything but the data) are computed once per binary (`_Plan`)."""
        plan = None if trace is not None else self._plan(binary)
        if plan is None:
            return self.execute(binary.instructions, binary.provenance, trace)
        stats = plan.fresh_stats()
        self._halted = False
        self._tokens = stats.tokens
        units = self._units
        self._transfers = plan.transfers
        try:
            for index, mnemonic, instruction in plan.steps:
                try:
                    units[mnemonic](instruction)
                except XnpuError as error:
                    raise XnpuError(f"instruction {index} ({mnemonic}): {error}") from None
        finally:
            self._transfers = None
        return stats

    def _plan(self, binary: Binary) -> _Plan | None:
        cached = self._plans.get(id(binary))
        if cached is not None and cached[0] is binary and cached[1].instructions is binary.instructions:
            return cached[1]
        plan = _Plan.of(binary, self)
        if plan is not None:
            self._plans[id(binary)] = (binary, plan)
        return plan

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
        extent = _strided_extent(shape, strides)
        base = self._span(memory, name, address, extent)
        if extent == 0:
            return np.zeros(shape, dtype=np.uint8)
        return np.ndarray(shape, np.uint8, base, 0, strides)

    def _materialize(self, address: int, size: int) -> None:
        """Do the pending constant LOADs that overlap SRAM [address, address + size)."""
        end = address + size
        for entry_start, entry in self._sram_constants.items():
            copy = entry[2]
            if copy is not None and entry_start < end and address < entry[0]:
                entry[2] = None
                copy()

    def _feature_map(self, address: int, h: int, w: int, c: int) -> np.ndarray:
        """The H x W x C int8 view of a padded NHWC map in SRAM (docs/isa.md section 1)."""
        cp = self.align(c)
        return self._span(self._sram_array, "SRAM", address, h * w * cp).view(np.int8).reshape(h, w, cp)[:, :, :c]

    def _write_feature_map(self, address: int, values: np.ndarray) -> None:
        """Store an H x W x C result (already saturated to int8); pad lanes are written as 0."""
        h, w, c = values.shape
        self._output_map(address, h, w, c)[...] = values

    def _output_map(self, address: int, h: int, w: int, c: int) -> np.ndarray:
        """The H x W x C int8 view a unit writes its result through, its pad lanes already 0."""
        cp = self.align(c)
        self._span(self._sram_array, "SRAM", address, 0)  # bounds first
        if address + h * w * cp > self._sram_array.size:
            self._span(self._sram_array, "SRAM", address, h * w * cp)
        self._sram_written(address, h * w * cp)
        padded = self._span(self._sram_array, "SRAM", address, h * w * cp).view(np.int8).reshape(h, w, cp)
        if cp != c:
            padded[:, :, c:] = 0
        return padded[:, :, :c]

    def _sram_written(self, address: int, size: int) -> None:
        """SRAM [address, address + size) is about to be written: forget which constants it held
        (a pending LOAD that the write covers only in part is done first)."""
        if self._sram_constants:
            end = address + size
            for start in [s for s, entry in self._sram_constants.items() if s < end and address < entry[0]]:
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

    # ----------------------------------------------------------------------------------
    # SYNC and DMA
    # ----------------------------------------------------------------------------------

    def _sync(self, i: Instruction) -> None:
        self._tokens.append(i["token"])
        self._halted = bool(i["halt"])
        if not self._halted and self._host is not None:  # a hand-off: the host runs its segment
            self._host.run(i["token"], self)

    def _dma(self, i: Instruction, loading: bool) -> tuple[np.ndarray, np.ndarray, np.ndarray | None]:
        """(DDR view, SRAM data view, whole padded SRAM view or None), all as bytes with a trailing element axis.

        The views follow the DMA layout table of docs/isa.md; both sides have the same
        logical shape, so a transfer is one numpy assignment.
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
            ddr = self._strided(self.ddr, "DDR", ddr_addr, (n, e), (e, 1))
            sram = self._strided(self._sram_array, "SRAM", sram_addr, (n, e), (e, 1))
            return ddr, sram, None
        if layout in (DMA_LAYOUTS["NHWC"], DMA_LAYOUTS["NCHW"]):
            if layout == DMA_LAYOUTS["NHWC"]:
                unused("d3")
                h, w, c = d0, d1, d2
                rs, ps = rs or w * c * e, ps or c * e
                if not loading:
                    _no_overlap("DDR", h, w, c * e, rs, ps)
                ddr = self._strided(self.ddr, "DDR", ddr_addr, (h, w, c, e), (rs, ps, e, 1))
            else:
                unused("d3", "ddr_row_stride", "ddr_pixel_stride")
                c, h, w = d0, d1, d2
                ddr = self._strided(self.ddr, "DDR", ddr_addr, (c, h, w, e), (h * w * e, w * e, e, 1)).transpose(1, 2, 0, 3)
            cp = self.align(c)
            srs = srs or w * cp * e
            if loading:
                _no_overlap("SRAM", h, w, cp * e, srs, cp * e)
            padded = self._strided(self._sram_array, "SRAM", sram_addr, (h, w, cp, e), (srs, cp * e, e, 1))
            return ddr, padded[:, :, :c], padded
        if layout == DMA_LAYOUTS["OHWI"]:
            unused("ddr_row_stride", "ddr_pixel_stride", "sram_row_stride")
            o, kh, kw, ci = d0, d1, d2, d3
            op, ip = self.align(o), self.align(ci)
            ddr = self._strided(self.ddr, "DDR", ddr_addr, (o, kh, kw, ci, e), (kh * kw * ci * e, kw * ci * e, ci * e, e, 1))
            padded = self._strided(self._sram_array, "SRAM", sram_addr, (op, kh, kw, ip, e), (kh * kw * ip * e, kw * ip * e, ip * e, e, 1))
            return ddr, padded[:o, :, :, :ci], padded
        if layout == DMA_LAYOUTS["DW"]:
            unused("d3", "ddr_row_stride", "ddr_pixel_stride", "sram_row_stride")
            c, kh, kw = d0, d1, d2
            strides = (kh * kw * e, kw * e, e, 1)
            ddr = self._strided(self.ddr, "DDR", ddr_addr, (c, kh, kw, e), strides)
            padded = self._strided(self._sram_array, "SRAM", sram_addr, (self.align(c), kh, kw, e), strides)
            return ddr, padded[:c], padded
        raise XnpuError(f"unknown DMA layout {layout}")

    def _transfer(self, i: Instruction, loading: bool) -> _Transfer:
        """A DMA's views and spans. Within a binary's run they are built once per instruction
        (its fields and the memories do not change); the checks of `_dma` ran then."""
        cached = self._transfers.get(id(i)) if self._transfers is not None else None
        if cached is not None and cached.instruction is i:
            return cached
        self._views_only = True  # the views; what they read or overwrite is settled by the caller
        try:
            ddr, sram, padded = self._dma(i, loading)
        finally:
            self._views_only = False
        region = padded if padded is not None else sram
        ddr_start, ddr_end = dma_ddr_span(i)
        transfer = _Transfer(i, ddr, sram, padded, i["sram_addr"], _strided_extent(region.shape, region.strides),
                             ddr_start, ddr_end, tuple(i.fields.values()))
        if self._transfers is not None:
            self._transfers[id(i)] = transfer
        return transfer

    def _load(self, i: Instruction) -> None:
        t = self._transfer(i, loading=True)
        self._sram_written(t.sram_start, t.sram_size)
        if self._image is not None and t.ddr_end <= self._image[1]:
            # constants: copied when SRAM is read there; a unit may reuse what it derived from them
            self._sram_constants[t.sram_start] = [t.sram_start + t.sram_size, t.fields, t.copy_in]
        else:
            t.copy_in()

    def _store(self, i: Instruction) -> None:
        if i["layout"] in (DMA_LAYOUTS["OHWI"], DMA_LAYOUTS["DW"]):
            raise XnpuError(f"layout {_layout_name(i['layout'])} is LOAD-only")
        t = self._transfer(i, loading=False)
        if self._sram_constants:
            self._materialize(t.sram_start, t.sram_size)
        self._before_ddr_write(t.ddr_start, t.ddr_end - t.ddr_start)
        t.ddr[...] = t.sram  # only the unpadded elements reach DDR

    # ----------------------------------------------------------------------------------
    # Compute units: read int8 maps, call fixed_point, write saturated int8 maps
    # ----------------------------------------------------------------------------------

    def _conv(self, i: Instruction) -> None:
        _positive(i, "in_h", "in_w", "in_c", "out_c", "kernel_h", "kernel_w", "stride_h", "stride_w", "dilation_h", "dilation_w")
        h, w, c, o = i["in_h"], i["in_w"], i["in_c"], i["out_c"]
        kh, kw = i["kernel_h"], i["kernel_w"]
        oh, ow = conv_output_hw(i)
        if oh < 1 or ow < 1:
            raise XnpuError(f"the {kh}x{kw} kernel leaves no output on the padded {h}x{w} input")
        depthwise = bool(i["depthwise"])
        if depthwise and c != o:
            raise XnpuError(f"depthwise needs in_c == out_c, got {c} and {o}")
        _disjoint(("input", i["in_addr"], self._map_bytes(h, w, c)), ("output", i["out_addr"], self._map_bytes(oh, ow, o)))
        x = self._feature_map(i["in_addr"], h, w, c)[None]
        strides = (i["stride_h"], i["stride_w"])
        pads = (i["pad_top"], i["pad_left"], i["pad_bottom"], i["pad_right"])
        dilations = (i["dilation_h"], i["dilation_w"])
        weights = self._conv_weights(i, depthwise)
        reduction = kh * kw * (1 if depthwise else c)
        units.conv_unit_nhwc(x, weights, self._requantization(i, reduction), strides, pads, dilations,
                          out=self._output_map(i["out_addr"], oh, ow, o)[None])

    def _constant_origin(self, address: int, size: int) -> tuple | None:
        """Which constants SRAM [address, address + size) holds (the LOAD that brought them and
        the offset into it), or None if it is not known to hold constants."""
        for start, entry in self._sram_constants.items():
            if start <= address and address + size <= entry[0]:
                return entry[1], address - start
        return None

    def _requantization(self, i: Instruction, reduction: int) -> convolution.Requantization:
        """The CONV's bias and rescale records as convolution.Requantization; once per binary when
        both came from the constant image."""
        o = i["out_c"]
        count = o if i["per_channel"] else 1
        rescale = self._constant_origin(i["rescale_addr"], count * RESCALE_RECORD.itemsize)
        bias_origin = self._constant_origin(i["bias_addr"], 4 * o) if i["bias"] else ()
        key = None
        if rescale is not None and bias_origin is not None:
            key = ("requantize", rescale, bias_origin, count, o, i["relu"], reduction)
            cached = self._prepared.get(key)
            if cached is not None:
                return cached
        bias = self._span(self._sram_array, "SRAM", i["bias_addr"], 4 * o).view("<i4") if i["bias"] else None
        multiplier, shift = self._rescale_records(i["rescale_addr"], count)
        low = 0 if i["relu"] else -fp.qmax(INT8_BITS)  # ReLU: R8's clamp to [0, 127] of the int8 result
        prepared = convolution.requantization(bias, reduction, multiplier, shift, low, fp.qmax(INT8_BITS))
        if key is not None:
            self._prepared[key] = prepared
        return prepared

    def _conv_weights(self, i: Instruction, depthwise: bool):
        """The CONV's weights: KH x KW x C int8 (depthwise), or convolution.ExactWeights of the O x KH x
        KW x C block. Weights a LOAD brought from the constant image are prepared once per binary."""
        c, o, kh, kw, address = i["in_c"], i["out_c"], i["kernel_h"], i["kernel_w"], i["weight_addr"]
        if depthwise:
            cp = self.align(c)
            size = cp * kh * kw
        else:
            op, ip = self.align(o), self.align(c)
            size = op * kh * kw * ip
        origin = self._constant_origin(address, size)
        key = None
        if origin is not None:
            key = ("weights", origin, depthwise, c, o, kh, kw)
            prepared = self._prepared.get(key)
            if prepared is not None:
                return prepared
        raw = self._span(self._sram_array, "SRAM", address, size).view(np.int8)
        weight = raw.reshape(cp, kh, kw)[:c].transpose(1, 2, 0) if depthwise else raw.reshape(op, kh, kw, ip)[:o, :, :, :c]
        if key is not None:
            weight = np.array(weight)  # a copy: what is kept must not follow later writes to this SRAM
        prepared = weight if depthwise else convolution.ExactWeights(weight)
        if key is not None:
            self._prepared[key] = prepared
        return prepared

    def _eltwise(self, i: Instruction) -> None:
        _positive(i, "h", "w", "c")
        h, w, c = i["h"], i["w"], i["c"]
        broadcast = i["b_broadcast"]
        if broadcast == BROADCASTS["none"]:
            b_shape = (h, w, c)
        elif broadcast == BROADCASTS["channel"]:
            b_shape = (1, 1, c)
        else:
            b_shape = None
        out_bytes = self._map_bytes(h, w, c)
        b_bytes = 1 if b_shape is None else self._map_bytes(*b_shape)
        _disjoint(("a", i["a_addr"], self._map_bytes(h, w, c)), ("output", i["out_addr"], out_bytes), in_place=True)
        _disjoint(("b", i["b_addr"], b_bytes), ("output", i["out_addr"], out_bytes), in_place=True)
        a = self._feature_map(i["a_addr"], h, w, c)
        if b_shape is None:
            b = self._span(self._sram_array, "SRAM", i["b_addr"], 1).view(np.int8).reshape(1, 1, 1)
        else:
            b = self._feature_map(i["b_addr"], *b_shape)
        op = {code: name for name, code in ELTWISE_OPS.items()}[i["op"]]
        if op == "mul":
            for name in ("a_multiplier", "a_shift", "b_multiplier", "b_shift", "stage16", "pre_shift"):
                if i[name]:
                    raise XnpuError(f"mul takes no {name} (it must be 0)")
            fp.check_multiplier(i["out_multiplier"], i["out_shift"])
            rescales = {}
        else:
            for prefix in ("a", "b", "out"):
                fp.check_multiplier(i[f"{prefix}_multiplier"], i[f"{prefix}_shift"])
            if i["pre_shift"] and not i["stage16"]:
                raise XnpuError("pre_shift must be 0 unless stage16 = 1")
            rescales = dict(a_multiplier=i["a_multiplier"], a_shift=i["a_shift"], b_multiplier=i["b_multiplier"],
                            b_shift=i["b_shift"], pre_shift=i["pre_shift"] if i["stage16"] else None)
        y = units.eltwise_unit(op, a, b, i["out_multiplier"], i["out_shift"], relu_flag=bool(i["relu"]), **rescales)
        self._write_feature_map(i["out_addr"], y)

    def _pool(self, i: Instruction) -> None:
        _positive(i, "in_h", "in_w", "c", "out_h", "out_w")
        kind = i["kind"]
        h, w, c = i["in_h"], i["in_w"], i["c"]
        out_hw = (i["out_h"], i["out_w"])
        x = self._feature_map(i["in_addr"], h, w, c).transpose(2, 0, 1)[None]
        if i["per_position"] and kind != POOL_KINDS["avg"]:
            raise XnpuError("per_position is for avg pooling only")
        name = {code: kind_name for kind_name, code in POOL_KINDS.items()}[kind]
        window = ("kernel_h", "kernel_w", "stride_h", "stride_w", "pad_top", "pad_left", "pad_bottom", "pad_right")
        kernel, strides, pads = (i["kernel_h"], i["kernel_w"]), (i["stride_h"], i["stride_w"]), tuple(i[f] for f in window[4:])
        multiplier, shift = i["out_multiplier"], i["out_shift"]
        if name == "global_avg":
            if out_hw != (1, 1):
                raise XnpuError(f"global_avg needs out_h = out_w = 1, got {out_hw[0]}x{out_hw[1]}")
            for field in window:
                if i[field]:
                    raise XnpuError(f"global_avg takes no {field} (it must be 0)")
            fp.check_multiplier(multiplier, shift)
        else:
            _positive(i, "kernel_h", "kernel_w", "stride_h", "stride_w")
            if name == "max" and (multiplier or shift):
                raise XnpuError("max pooling takes no output rescale (out_multiplier and out_shift must be 0)")
            if name == "avg" and i["per_position"]:
                multiplier, shift = self._rescale_records(i["rescale_addr"], out_hw[0] * out_hw[1])
            elif name == "avg":
                fp.check_multiplier(multiplier, shift)
        y = units.pool_unit(name, x, kernel, strides, pads, out_hw, multiplier, shift)
        if name == "max" and y.size and y.min() < np.iinfo(np.int8).min:
            raise XnpuError("a max-pool window lies entirely in the padding")
        self._write_feature_map(i["out_addr"], y[0].transpose(1, 2, 0))

    def _table(self, i: Instruction) -> None:
        _positive(i, "h", "w", "c")
        table = self._span(self._sram_array, "SRAM", i["table_addr"], fp.TABLE_SIZE).view(np.int8)
        x = self._feature_map(i["in_addr"], i["h"], i["w"], i["c"])
        self._write_feature_map(i["out_addr"], fp.table_lookup(x, table))

    def _clamp(self, i: Instruction) -> None:
        _positive(i, "h", "w", "c")
        low, high = fp.storage_range(INT8_BITS)
        if not low <= i["min"] <= i["max"] <= high:
            raise XnpuError(f"clamp bounds [{i['min']}, {i['max']}] are not an ordered range inside int8")
        x = self._feature_map(i["in_addr"], i["h"], i["w"], i["c"])
        self._write_feature_map(i["out_addr"], fp.clamp(x, i["min"], i["max"]))


def _span_of(bounds: tuple[int, int]) -> tuple[int, int]:
    return bounds[0], bounds[1] - bounds[0]


def _positive(i: Instruction, *names: str) -> None:
    for name in names:
        if i[name] < 1:
            raise XnpuError(f"{name} must be at least 1, got {i[name]}")


def _disjoint(first: tuple[str, int, int], second: tuple[str, int, int], in_place: bool = False) -> None:
    """The two SRAM regions must not overlap (or, with `in_place`, may be exactly the same)."""
    (name_a, start_a, size_a), (name_b, start_b, size_b) = first, second
    if in_place and start_a == start_b and size_a == size_b:
        return
    if size_a and size_b and start_a < start_b + size_b and start_b < start_a + size_a:
        raise XnpuError(
            f"the {name_a} [{start_a}, {start_a + size_a}) and {name_b} [{start_b}, {start_b + size_b}) regions overlap"
        )


def _no_overlap(memory: str, h: int, w: int, pixel_bytes: int, row_stride: int, pixel_stride: int) -> None:
    """The written side of a DMA must not write one byte twice (strides at least the dense ones)."""
    if w > 1 and pixel_stride < pixel_bytes:
        raise XnpuError(f"{memory} pixel stride {pixel_stride} is smaller than a {pixel_bytes}-byte pixel: pixels would overlap")
    if h > 1 and row_stride < (w - 1) * pixel_stride + pixel_bytes:
        raise XnpuError(f"{memory} row stride {row_stride} is smaller than a row: rows would overlap")


def _layout_name(layout: int) -> str:
    return {v: k for k, v in DMA_LAYOUTS.items()}.get(layout, str(layout))


# --------------------------------------------------------------------------------------
# io tensors: logical shape <-> DDR order (docs/binary-format.md, io section)
# --------------------------------------------------------------------------------------


def _io_dtype(tensor: IoTensor) -> np.dtype:
    if tensor.dtype not in IO_DTYPES:
        raise XnpuError(f"io tensor '{tensor.name}' has dtype {tensor.dtype}; the accelerator exchanges integers only")
    return IO_DTYPES[tensor.dtype]


def _check_4d(tensor: IoTensor) -> None:
    if len(tensor.shape) != 4:
        raise XnpuError(
            f"io tensor '{tensor.name}' has layout {tensor.layout} but rank {len(tensor.shape)}; "
            "NHWC/NCHW tensors have the model's 4-D (N, C, H, W) shape"
        )


def _to_ddr_order(tensor: IoTensor, codes: np.ndarray) -> np.ndarray:
    if tensor.layout == "NHWC":
        _check_4d(tensor)
        return np.ascontiguousarray(codes.transpose(0, 2, 3, 1))
    if tensor.layout == "NCHW":
        _check_4d(tensor)
    return np.ascontiguousarray(codes)


def _from_ddr_order(tensor: IoTensor, flat: np.ndarray) -> np.ndarray:
    if tensor.layout == "NHWC":
        _check_4d(tensor)
        n, c, h, w = tensor.shape
        return np.ascontiguousarray(flat.reshape(n, h, w, c).transpose(0, 3, 1, 2))
    if tensor.layout == "NCHW":
        _check_4d(tensor)
    return flat.reshape(tensor.shape)


# --------------------------------------------------------------------------------------
# Running a Binary on float inputs
# --------------------------------------------------------------------------------------


def target_for_binary(binary: Binary) -> TargetDescription:
    """The shipped target whose id the binary names."""
    known = []
    for name in list_targets():
        target = load_target(name)
        if target.id == binary.target_id:
            return target
        known.append(f"{name} (id {target.id})")
    raise XnpuError(f"binary: built for target id {binary.target_id}, which no shipped target has (known: {', '.join(known)})")


def dma_ddr_span(i: Instruction) -> tuple[int, int]:
    """[start, end) of the DDR bytes a LOAD/STORE touches (end == start when it moves nothing)."""
    e = 1 << i["elem_log2"]
    d0, d1, d2, d3 = i["d0"], i["d1"], i["d2"], i["d3"]
    layout = i["layout"]
    if layout == DMA_LAYOUTS["NHWC"]:
        rs, ps = i["ddr_row_stride"] or d1 * d2 * e, i["ddr_pixel_stride"] or d2 * e
        extent = _strided_extent((d0, d1, d2 * e), (rs, ps, 1))
    elif layout == DMA_LAYOUTS["OHWI"]:
        extent = d0 * d1 * d2 * d3 * e
    elif layout in (DMA_LAYOUTS["RAW"],):
        extent = d0 * d1 * e
    else:  # NCHW and DW: three dense dimensions
        extent = d0 * d1 * d2 * e
    return i["ddr_addr"], i["ddr_addr"] + extent


def ddr_bytes_needed(binary: Binary) -> int:
    """The DDR a program touches: its constant image, io tensors and DMA transfers."""
    end = len(binary.constants)
    for tensor in binary.io:
        size = IO_DTYPES.get(tensor.dtype, np.dtype("u1")).itemsize
        end = max(end, tensor.ddr_addr + size * int(np.prod(tensor.shape, dtype=np.int64)))
    for instruction in binary.instructions:
        if instruction.op in ("LOAD", "STORE"):
            end = max(end, dma_ddr_span(instruction)[1])
    return end


_MACHINES: OrderedDict[int, tuple[weakref.ref, TargetDescription, Machine]] = OrderedDict()
_MACHINES_KEPT = 2  # a machine keeps its binary's prepared weights (4 bytes per weight)


def machine_for(binary: Binary, target: TargetDescription | None = None) -> Machine:
    """A machine for running `binary` (on `target`, by default the one its target id names):
    the same one for every run of the same binary object, whose constants are then loaded
    and weights prepared once; kept for the last few binaries."""
    key = id(binary)
    kept = _MACHINES.get(key)
    if kept is not None and kept[0]() is binary and (target is None or kept[1] == target):
        _MACHINES.move_to_end(key)
        return kept[2]
    target = target_for_binary(binary) if target is None else target
    machine = Machine(target, ddr_size=min(target.memory.ddr_bytes, ddr_bytes_needed(binary)))
    _MACHINES[key] = (weakref.ref(binary, lambda _, key=key: _MACHINES.pop(key, None)), target, machine)
    while len(_MACHINES) > _MACHINES_KEPT:
        _MACHINES.popitem(last=False)
    return machine


@dataclass
class BinaryRun:
    outputs: dict[str, np.ndarray]  # dequantized float32, by io name
    codes: dict[str, np.ndarray]  # the integer codes the program wrote
    stats: RunStats  # summed over samples


def simulate(
    binary: Binary,
    inputs: np.ndarray | Mapping[str, np.ndarray],
    target: TargetDescription | str | None = None,
    trace: Trace | None = None,
) -> BinaryRun:
    """Quantize float inputs (R4, io scales), run every sample, dequantize the outputs."""

    target = load_target(target) if isinstance(target, str) else target
    for tensor in binary.io:
        if tensor.zero_point != 0:
            raise XnpuError(f"io tensor '{tensor.name}' has zero point {tensor.zero_point}; the contract is symmetric (R2)")
        if tensor.dtype not in QUANTIZED_BITS and not (tensor.dtype == "float32" and tensor.direction == "output"):
            raise XnpuError(f"io tensor '{tensor.name}' has dtype {tensor.dtype}; the host exchanges int8/int16/int32 codes"
                            " (and reads float32 outputs)")
    specs = [TensorSpec(t.name, tuple(t.shape), np.dtype(np.float32)) for t in binary.inputs()]
    arrays, samples = bind_inputs(specs, inputs)
    machine = machine_for(binary, target)
    stats = RunStats(machine.target.cost.clock_mhz)
    per_sample: list[dict[str, np.ndarray]] = []
    for index in range(samples):
        codes = {
            tensor.name: fp.quantize(array if samples == 1 else array[index : index + 1], tensor.scale, QUANTIZED_BITS[tensor.dtype])
            for tensor, array in zip(binary.inputs(), arrays)
        }
        outputs, sample_stats = machine.run(binary, codes, trace)
        per_sample.append(outputs)
        stats.merge(sample_stats)
    codes = {}
    for tensor in binary.outputs():
        values = [outputs[tensor.name].astype(np.float32 if tensor.dtype == "float32" else np.int64) for outputs in per_sample]
        codes[tensor.name] = values[0] if samples == 1 else np.concatenate(values, axis=0)
    floats = {tensor.name: codes[tensor.name] if tensor.dtype == "float32" else fp.dequantize(codes[tensor.name], tensor.scale)
              for tensor in binary.outputs()}
    return BinaryRun(floats, codes, stats)


def run_binary(
    binary: Binary, inputs: np.ndarray | Mapping[str, np.ndarray], target: TargetDescription | str | None = None
) -> dict[str, np.ndarray]:
    """Float inputs in, dequantized float outputs out, by io name (N samples stack on axis 0)."""
    return simulate(binary, inputs, target).outputs


def format_profile(stats: RunStats) -> str:
    """Cycles per layer (provenance) and per instruction class, as two tables."""
    def table(title: str, rows: dict[str, int]) -> list[str]:
        width = max([len(title)] + [len(name) for name in rows])
        lines = [f"{title:<{width}s}  {'cycles':>12s}  {'share':>6s}"]
        for name, cycles in sorted(rows.items(), key=lambda item: (-item[1], item[0])):
            share = 100.0 * cycles / stats.cycles if stats.cycles else 0.0
            lines.append(f"{name:<{width}s}  {cycles:12d}  {share:5.1f}%")
        return lines

    lines = table("layer", stats.by_layer) + [""] + table("instruction", stats.by_class)
    lines.append("")
    lines.append(
        f"total: {stats.cycles} cycles in {stats.instructions} instructions, "
        f"{stats.time_us:.1f} us at {stats.clock_mhz:g} MHz"
    )
    return "\n".join(lines)


class BinaryModel:
    """A compiled .xnb file as a model runner for xnpu-run: float inputs in, float outputs out."""

    def __init__(self, binary: Binary, target: TargetDescription | None = None):
        self.binary = binary
        self.target = target_for_binary(binary) if target is None else target
        self.trace: Trace | None = None
        self.stats: RunStats | None = None

    @staticmethod
    def from_file(path) -> BinaryModel:
        return BinaryModel(Binary.from_file(path))

    def __call__(self, inputs: np.ndarray | Mapping[str, np.ndarray]) -> dict[str, np.ndarray]:
        result = simulate(self.binary, inputs, self.target, self.trace)
        self.stats = result.stats
        return result.outputs

    def profile(self) -> str:
        if self.stats is None:
            raise XnpuError("the binary has not run yet: no profile")
        return format_profile(self.stats)
