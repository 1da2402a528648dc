"""The reference simulator of the xnpu accelerator: docs/isa.md, executed.

`Machine` is one xnpu core: its memories (backend/machine_memory.py), its DMA engine
(backend/machine_dma.py) and compute units (backend/machine_units.py). A program is first
planned once (backend/machine_plan.py: every instruction checked, its cycles, the schedule of
the DMA and EXEC queues under the queue model of docs/isa.md section 3, the hazard check, the
statistics); the machine then executes the planned steps' data effects in program order, which
is what a program without hazards computes whatever the timing. Every arithmetic step is a
call into `xnpu.semantics.fixed_point` (the one implementation of docs/fixed-point.md), so a
program run here agrees bit for bit with the `fixed` interpreter by construction.

Anything a program must not do (an access outside a memory, an unknown layout, a unit the
target lacks, a rule's broken precondition, a hazard, a deadlock) is one XnpuError line naming
the instruction's index and mnemonic.

`run_binary(binary, inputs)` is the host side of docs/binary-format.md: quantize the float
inputs with the io table's scales (R4), place them and the constant image in DDR, run, read
the outputs back and dequantize them, mirroring `fixed.quantize` / `fixed.dequantize`.

Several samples run through each planned step together (`Machine.run_samples`: memories with a
leading sample axis, backend/machine_memory.py), so an instruction's Python dispatch is paid
once per chunk of samples, not once per sample; `simulate` splits the samples into chunks that
fit a memory budget (`samples_at_once`). A run of N samples is N runs of the program: the same
outputs integer for integer, the same statistics and trace per sample. The chunks are shared
among the cores (xnpu/core/forked.py): each further core's worker is a fork of this process,
made after the binary is decoded, planned and its host segments prepared (`Machine.prepare`),
that runs its run of consecutive samples on its copy of the machine and sends back their
outputs and statistics; a GIL-bound thread would not speed up the per-instruction Python.
Only as many workers as pay for themselves are made (`workers_worth`), a rule on the program's
arithmetic and the count of samples, never on timings.
"""

from __future__ import annotations

import weakref
from collections import OrderedDict
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

import numpy as np

from xnpu.backend.binary import Binary, IoTensor
from xnpu.backend.machine_conv_tiles import instruction_scratch_bytes
from xnpu.backend.machine_dma import DmaUnit
from xnpu.backend.machine_memory import SamplesDiffer
from xnpu.backend.machine_plan import UNATTRIBUTED, Plan, RunStats, TraceRecord
from xnpu.backend.machine_units import ComputeUnits
from xnpu.backend.roofline import compulsory_ranges
from xnpu.core.budget import MAX_TOTAL_BYTES
from xnpu.core.errors import XnpuError
from xnpu.core.forked import cores, forced_workers, run_parts
from xnpu.core.inputs import TensorSpec, bind_inputs, stack_outputs
from xnpu.semantics import fixed_point as fp
from xnpu.semantics.io_dtypes import IO_DTYPES
from xnpu.target.cost import instruction_cycles
from xnpu.target.description import TargetDescription, list_targets, load_target
from xnpu.target.encoding import Instruction, decode_program
from xnpu.target.footprints import dma_ddr_extent

if TYPE_CHECKING:
    from xnpu.backend.host import HostSegments

__all__ = ["Machine", "RunStats", "TraceRecord", "BinaryRun", "BinaryModel", "simulate", "run_binary", "format_profile",
           "roofline_summary", "machine_for", "target_for_binary", "UNATTRIBUTED"]

QUANTIZED_BITS = {"int8": 8, "int16": 16, "int32": 32}  # the codes; every other io dtype is a value (semantics/dtypes.py)

Program = Binary | Iterable[Instruction] | bytes
Trace = Callable[[TraceRecord], None]


class Machine(DmaUnit, ComputeUnits):
    """One xnpu core: DDR and SRAM, the DMA engine and the compute units; programs planned, then run."""

    def __init__(self, target: TargetDescription | str, ddr_size: int | None = None):
        super().__init__(target, ddr_size)
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
        self._plans: dict[int, tuple[Binary, Plan]] = {}
        self._blockers: dict[int, tuple[Binary, str | None, int]] = {}

    # ----------------------------------------------------------------------------------
    # Host interface
    # ----------------------------------------------------------------------------------

    def _load_image(self, binary: Binary) -> None:
        """The constant image into DDR (compressed weights as they are: decoding LOADs expand
        them on the way into SRAM), unless DDR still holds exactly this binary's (nothing
        wrote below the image's end since): a binary is loaded once per machine."""
        if self._image_owner is binary and self._image is not None:
            return
        self.load_constants(binary.constants)
        self._image = (id(binary), len(binary.constants))
        self._image_owner = binary

    def write_tensor(self, tensor: IoTensor, codes) -> None:
        """Integer codes of an io tensor into DDR, in its layout: in its logical shape (the
        same for every sample), or one per sample along a leading axis."""
        dtype = _io_dtype(tensor)
        codes = np.asarray(codes)
        shape = tuple(tensor.shape)
        if codes.shape == shape:
            codes = codes[None]
        elif codes.shape[1:] != shape or codes.shape[0] != self.samples:
            given = codes.shape[1:] if codes.ndim == len(shape) + 1 and codes.shape[0] == self.samples else codes.shape
            raise XnpuError(f"input '{tensor.name}' has shape {list(given)}, the binary expects {list(shape)}")
        if dtype.kind in "iu":
            info = np.iinfo(dtype)
            if codes.size and (codes.min() < info.min or codes.max() > info.max):
                raise XnpuError(f"input '{tensor.name}' has codes outside {tensor.dtype}")
        ordered = _to_ddr_order(tensor, codes.astype(dtype, copy=False))
        self.write_ddr_rows(tensor.ddr_addr, ordered.reshape(codes.shape[0], -1).view(np.uint8))

    def read_tensor(self, tensor: IoTensor) -> np.ndarray:
        """Integer codes of an io tensor out of the first sample's DDR, in its logical shape."""
        return self.read_samples(tensor)[0]

    def read_samples(self, tensor: IoTensor) -> np.ndarray:
        """Integer codes of an io tensor out of DDR: samples x its logical shape."""
        dtype = _io_dtype(tensor)
        count = int(np.prod(tensor.shape, dtype=np.int64))
        raw = self.read_ddr_rows(tensor.ddr_addr, count * dtype.itemsize).copy()
        return _from_ddr_order(tensor, raw.view(dtype))

    def run(self, program: Program, inputs: Mapping | None = None, trace: Trace | None = None):
        """Run a program on one sample; returns (outputs, stats).

        A `Binary`: its constants go to DDR 0, `inputs` maps io input names to integer codes
        (logical shapes), and the outputs are the io outputs' integer codes by name. A list of
        instructions (or a raw instruction stream): `inputs` maps DDR addresses to bytes or
        arrays written first, and the outputs are empty (read the memories directly).
        """
        if isinstance(program, Binary):
            outputs, stats = self.run_samples(program, inputs or {}, 1, trace, stacked=False)
            return {name: codes[0] for name, codes in outputs.items()}, stats
        self.set_samples(1)
        self.reset_sram()
        instructions = decode_program(program) if isinstance(program, (bytes, bytearray)) else list(program)
        for address, data in (inputs or {}).items():
            self.write_ddr(int(address), data)
        return {}, self.execute(instructions, None, trace)

    def run_samples(self, binary: Binary, inputs: Mapping, samples: int, trace: Trace | None = None,
                    stacked: bool = True) -> tuple[dict[str, np.ndarray], RunStats]:
        """Run a binary on `samples` samples at once: each input's integer codes are samples x
        its logical shape (with `stacked`; else its logical shape, the same for every sample),
        and so are the outputs. The statistics are one sample's, and `trace` sees each
        instruction once (`simulate` traces one sample at a time). SamplesDiffer when the
        samples read different parameters (the caller runs them one at a time)."""
        if binary.target_id != self.target.id:
            raise XnpuError(
                f"binary: built for target id {binary.target_id}, the machine is {self.target.name} (id {self.target.id})"
            )
        if samples > 1:
            blocker = self.batch_blocker(binary)
            if blocker is not None:
                raise XnpuError(f"binary: cannot run several samples at once: {blocker}")
        self.set_samples(samples)
        self.reset_sram()
        inputs = dict(inputs)
        self._load_image(binary)
        self._host_for(binary)
        for tensor in binary.inputs():
            if tensor.name not in inputs:
                raise XnpuError(f"missing input '{tensor.name}'")
            codes = np.asarray(inputs.pop(tensor.name))
            if stacked and codes.shape[1:] == tuple(tensor.shape) and codes.shape[0] != samples:
                raise XnpuError(f"input '{tensor.name}' holds {codes.shape[0]} samples, the run {samples}")
            self.write_tensor(tensor, codes)
        if inputs:
            raise XnpuError(f"unknown input '{sorted(inputs)[0]}'")
        stats = self._execute_binary(binary, trace)
        return {tensor.name: self.read_samples(tensor) for tensor in binary.outputs()}, stats

    def prepare(self, binary: Binary) -> None:
        """What every run of the binary needs and this machine makes once, made now: its plan
        (where the program passes the plan's checks; one that fails them fails in its run, as
        ever) and its host segments' runtime. `simulate` prepares before its workers fork."""
        self.planned(binary)
        self._host_for(binary)

    def _host_for(self, binary: Binary) -> None:
        if self._host is None or self._host.binary is not binary:
            self._host = _host_segments(binary) if binary.host_segments else None

    def batch_blocker(self, binary: Binary) -> str | None:
        """`batch_blocker(binary)`, worked out once per binary."""
        return self._batching(binary)[1]

    def _batching(self, binary: Binary) -> tuple[Binary, str | None, int]:
        """(binary, its batch_blocker, the bytes a sample of it holds beside SRAM and DDR), once per binary."""
        kept = self._blockers.get(id(binary))
        if kept is None or kept[0] is not binary:
            scratch = max((instruction_scratch_bytes(i) for i in binary.instructions if i.op == "CONV"), default=0)
            kept = self._blockers[id(binary)] = (binary, batch_blocker(binary), scratch)
        return kept

    def _memories_moved(self) -> None:
        for _, plan in self._plans.values():
            plan.decoded.clear()

    def execute(
        self,
        instructions: Iterable[Instruction],
        provenance: Mapping[int, tuple[str, ...]] | None = None,
        trace: Trace | None = None,
    ) -> RunStats:
        """Plan the program (cycles, queue schedule, hazard check), then execute its data effects
        in program order until the end or the first SYNC halt=1."""
        provenance = provenance or {}
        program = instructions if isinstance(instructions, list) else list(instructions)
        plan = self._checked_plan(program, provenance)
        return self._run_plan(plan, provenance, trace)

    def _checked_plan(self, program: list, provenance: Mapping[int, tuple[str, ...]]) -> Plan:
        return self._checked(Plan.of(program, provenance, self.target, self._units), program)

    def _checked(self, plan: Plan | None, program: list) -> Plan:
        """`plan`; where it is None (the plan refused `program`), the error of the first
        instruction that fails a check."""
        if plan is None:
            self._execute_checking(program)  # raises at the first instruction that fails a check
            raise AssertionError("a program the plan refused ran")  # pragma: no cover
        return plan

    def _execute_checking(self, program: list) -> None:
        """Run instruction by instruction, checking each at its turn, until one fails."""
        self._halted = False
        self._tokens = []
        for index, instruction in enumerate(program):
            mnemonic = getattr(instruction, "op", None)
            try:
                if not isinstance(instruction, Instruction) or mnemonic not in self._units:
                    raise XnpuError(f"{instruction!r} is not a decoded instruction")
                self.target.check_instruction(instruction)
                self._units[mnemonic](instruction)
                instruction_cycles(instruction, self.target)
            except XnpuError as error:
                raise XnpuError(f"instruction {index} ({mnemonic}): {error}") from None
            if self._halted:
                return

    def _run_plan(self, plan: Plan, provenance: Mapping[int, tuple[str, ...]], trace: Trace | None) -> RunStats:
        stats = plan.fresh_stats()
        self._halted = False
        self._tokens = stats.tokens
        units = self._units
        self._decoded = plan.decoded
        self._pending_tiles = {}
        try:
            for index, mnemonic, instruction, tile in plan.steps:
                try:
                    if tile is None:
                        units[mnemonic](instruction)
                    else:
                        self._tile_step(instruction, tile)
                except XnpuError as error:
                    raise XnpuError(f"instruction {index} ({mnemonic}): {error}") from None
                if trace is not None:
                    trace(plan.record(index, provenance))
        finally:
            self._decoded = None
            self._pending_tiles = {}
        return stats

    def _execute_binary(self, binary: Binary, trace: Trace | None) -> RunStats:
        """`execute` for a Binary."""
        return self._run_plan(self.plan_of(binary), binary.provenance, trace)

    def plan_of(self, binary: Binary) -> Plan:
        """The binary's checked plan, made once per binary."""
        return self._checked(self.planned(binary), binary.instructions)

    def planned(self, binary: Binary) -> Plan | None:
        """The binary's plan, made once per binary; None for a program that fails its checks."""
        cached = self._plans.get(id(binary))
        if cached is not None and cached[0] is binary and cached[1].instructions is binary.instructions:
            return cached[1]
        plan = Plan.of(binary.instructions, binary.provenance, self.target, self._units, binary_compulsory(binary))
        if plan is not None:
            self._plans[id(binary)] = (binary, plan)
        return plan

    def _sync(self, i: Instruction) -> None:
        self._tokens.append(i["token"])
        self._halted = bool(i["halt"])
        if not self._halted and self._host is not None:  # a hand-off: the host runs its segment
            self._host.run(i["token"], self)


def _host_segments(binary: Binary) -> HostSegments:
    """The runtime of a binary's host segments, imported by the binaries that have some: it
    runs IR, and the IR (xDSL) is ~0.5 s of a process that only simulates."""
    from xnpu.backend.host import HostSegments

    return HostSegments(binary)


# --------------------------------------------------------------------------------------
# --------------------------------------------------------------------------------------
# io tensors: logical shape <-> DDR order (docs/binary-format.md, io section)
# --------------------------------------------------------------------------------------


def _io_dtype(tensor: IoTensor) -> np.dtype:
    if tensor.dtype not in IO_DTYPES:
        raise XnpuError(f"io tensor '{tensor.name}' has dtype {tensor.dtype}, which the host does not know")
    return IO_DTYPES[tensor.dtype]


def _check_4d(tensor: IoTensor) -> None:
    if len(tensor.shape) != 4:
        raise XnpuError(
            f"io tensor '{tensor.name}' has layout {tensor.layout} but rank {len(tensor.shape)}; "
            "NHWC/NCHW tensors have the model's 4-D (N, C, H, W) shape"
        )


def _to_ddr_order(tensor: IoTensor, codes: np.ndarray) -> np.ndarray:
    """samples x the logical shape -> samples x the DDR order."""
    if tensor.layout == "NHWC":
        _check_4d(tensor)
        return np.ascontiguousarray(codes.transpose(0, 1, 3, 4, 2))
    if tensor.layout == "NCHW":
        _check_4d(tensor)
    return np.ascontiguousarray(codes)


def _from_ddr_order(tensor: IoTensor, rows: np.ndarray) -> np.ndarray:
    """samples x the tensor's elements in DDR order -> samples x its logical shape."""
    samples = rows.shape[0]
    if tensor.layout == "NHWC":
        _check_4d(tensor)
        n, c, h, w = tensor.shape
        return np.ascontiguousarray(rows.reshape(samples, n, h, w, c).transpose(0, 1, 4, 2, 3))
    if tensor.layout == "NCHW":
        _check_4d(tensor)
    return rows.reshape(samples, *tensor.shape)


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


def io_bytes(tensor: IoTensor) -> int:
    return IO_DTYPES.get(tensor.dtype, np.dtype("u1")).itemsize * int(np.prod(tensor.shape, dtype=np.int64))


def binary_compulsory(binary: Binary) -> list[tuple[str, int, int]]:
    """The DDR bytes a run of the binary must move: its constant image, inputs and outputs."""
    return compulsory_ranges(len(binary.constants), [(t.ddr_addr, io_bytes(t)) for t in binary.inputs()],
                             [(t.ddr_addr, io_bytes(t)) for t in binary.outputs()])


def ddr_bytes_needed(binary: Binary) -> int:
    """The DDR a program touches: its constant image, io tensors and DMA transfers."""
    end = len(binary.constants)
    for tensor in binary.all_io():
        end = max(end, tensor.ddr_addr + io_bytes(tensor))
    for instruction in binary.instructions:
        if instruction.op in ("LOAD", "STORE"):
            end = max(end, instruction["ddr_addr"] + dma_ddr_extent(instruction))
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


# Samples run at once (`simulate`): as many as fit this share of the memory budget, at most
# MAX_SAMPLES_AT_ONCE (beyond ~16 the dispatch saved per sample is small beside the work). A
# bound, not the use: DDR's rows take pages only where written, and one convolution's scratch
# is alive at a time (xnpu-run of 9 mobilenetv2_like images peaks at 277 MB, 9 at once).
SAMPLES_MEMORY_BYTES = MAX_TOTAL_BYTES // 2
MAX_SAMPLES_AT_ONCE = 16


def batch_blocker(binary: Binary) -> str | None:
    """Why the samples of a run of `binary` cannot share one run of its steps, or None. The
    constant image is one copy in DDR for every sample (backend/machine_memory.py), so the
    program must not write it, nor read across its end, nor decode from outside it, and no
    tensor the host exchanges may lie in it."""
    image = len(binary.constants)
    for tensor in binary.all_io():
        if tensor.ddr_addr < image:
            return f"io tensor '{tensor.name}' lies in the constant image"
    for index, instruction in enumerate(binary.instructions):
        if instruction.op not in ("LOAD", "STORE"):
            continue
        start, end = instruction["ddr_addr"], instruction["ddr_addr"] + dma_ddr_extent(instruction)
        if instruction.op == "STORE" and start < image:
            return f"instruction {index} (STORE) writes the constant image"
        if instruction.op == "LOAD" and start < image < end:
            return f"instruction {index} (LOAD) reads across the constant image's end"
        if instruction.op == "LOAD" and instruction["codebook_bits"] and (
                end > image or instruction["dictionary_addr"] + (1 << instruction["codebook_bits"]) > image):
            return f"instruction {index} (LOAD) decodes weights from outside the constant image"
    return None


# A worker process pays for itself where the samples it takes over hold at least this many
# compute cycles (the target's cost model: the EXEC queue's busy cycles of one sample, its
# GEMMs' MACs and element-wise work, which the simulator's loops do, ~6-9 ns of a core a
# cycle). A worker costs a fork and a run of its own beside this process's (the weights'
# preparation, the steps' views, ~50 us of per-instruction Python a chunk); what it saves is
# its samples' arithmetic. Measured (bench/results/performance.md, "The simulator on two cores":
# xnpu-run of 9 and 23 images as processes, 2 cores): 4-5 images each of segnet_like (8.7-10.9 M
# cycles), mobilenetv2_like (10.6-13.2 M) and resnet18_like (37-46 M) take 23-34% off the wall
# time, mobilenetv3_like's 4-5 of 9 (3.5-4.4 M) nothing for 2x the CPU, its 11-12 of 23 (9.6-10.5
# M) 37%. The cycles per instruction do not tell these apart (segnet_like ~1400 a step,
# mobilenetv3_like ~1300): a worker's share must outweigh its own fixed cost, so the rule is on
# the share. Decided from the program and the count of samples, never from timings.
SHARE_MIN_CYCLES = 6_000_000


def workers_worth(binary: Binary, machine: Machine, samples: int, most: int) -> int:
    """How many processes (at most `most`) share `samples` samples of the binary: as many as
    give each at least SHARE_MIN_CYCLES of compute cycles; 1 for a program that fails its
    checks (it fails in its run here)."""
    plan = machine.planned(binary)
    if plan is None:
        return 1
    return max(1, min(most, samples, samples * plan.stats.compute_cycles // SHARE_MIN_CYCLES))


def samples_at_once(binary: Binary, machine: Machine, workers: int = 1) -> int:
    """How many samples `simulate` runs through each step together: 1 where `batch_blocker`
    says so, else as many as `workers`' share of SAMPLES_MEMORY_BYTES holds of a sample's
    memories (its SRAM, its DDR beyond the constant image) and of the float GEMM operands of
    its largest convolution."""
    _, blocker, scratch = machine._batching(binary)
    if blocker is not None:
        return 1
    sample = machine.target.memory.sram_bytes + machine.ddr.size - len(binary.constants) + scratch
    return max(1, min(MAX_SAMPLES_AT_ONCE, SAMPLES_MEMORY_BYTES // workers // max(1, sample)))


def _samples(bound, start: int, stop: int, rows: int) -> list[np.ndarray]:
    """Samples [start, stop) of each bound input, then the last of them again up to `rows`:
    rows x its shape."""
    taken = []
    for array, shared in zip(bound.arrays, bound.shared):
        if shared:
            taken.append(np.broadcast_to(array, (rows, *array.shape)))
        else:
            part = array[start:stop]
            taken.append(part if len(part) == rows else np.concatenate([part, np.repeat(part[-1:], rows - len(part), 0)]))
    return taken


@dataclass
class BinaryRun:
    outputs: dict[str, np.ndarray]  # dequantized float32, by io name
    codes: dict[str, np.ndarray]  # the integer codes the program wrote
    stats: RunStats  # summed over samples


def input_specs(binary: Binary) -> list[TensorSpec]:
    """The program's inputs as the user passes them: float32 where the binary quantizes them."""
    return [TensorSpec(t.name, tuple(t.shape), np.dtype(np.float32) if t.dtype in QUANTIZED_BITS else IO_DTYPES[t.dtype])
            for t in binary.inputs()]


def simulate(
    binary: Binary,
    inputs: np.ndarray | Mapping[str, np.ndarray],
    target: TargetDescription | str | None = None,
    trace: Trace | None = None,
    workers: int | None = None,
) -> BinaryRun:
    """Quantize float inputs (R4, io scales), run every sample, dequantize the outputs; an
    io tensor that holds values (float32, int64, bool, ...) is passed as it is.

    Several samples are shared among `workers` processes, each running its run of consecutive
    samples on its own copy of the machine: by default as many as pay for themselves
    (`workers_worth`, at most one per core this process may use), or as many as XNPU_WORKERS
    says (1: this process alone); a trace runs in this process alone."""
    target = load_target(target) if isinstance(target, str) else target
    for tensor in binary.io:
        if tensor.zero_point != 0:
            raise XnpuError(f"io tensor '{tensor.name}' has zero point {tensor.zero_point}; the contract is symmetric (R2)")
        _io_dtype(tensor)
    bound = bind_inputs(input_specs(binary), inputs)
    machine = machine_for(binary, target)
    if trace is not None:
        workers = 1
    elif workers is None:
        workers = forced_workers() or workers_worth(binary, machine, bound.samples, cores())
    workers = max(1, min(workers, bound.samples))
    at_once = 1 if trace is not None else samples_at_once(binary, machine, workers)
    # chunks of one size in every worker (the memories keep their rows and the views made of
    # them, which a worker forked from this process then finds ready): as even as the chunks'
    # count allows, each worker's run of samples a whole number of chunks but the last one's
    # last chunk, which its last sample fills up again
    chunks = workers * max(1, -(-bound.samples // (workers * at_once)))
    at_once = max(1, -(-bound.samples // chunks))
    per_worker = at_once * (chunks // workers)
    runs = [(start, min(bound.samples, start + per_worker)) for start in range(0, bound.samples, per_worker)]
    if len(runs) > 1:
        machine.prepare(binary)  # once, before the workers fork
    parts = run_parts(lambda run: _run_samples(machine, binary, bound, *run, at_once, trace), runs)
    stats = RunStats(machine.target.cost.clock_mhz)
    per_sample: list[tuple] = []
    for outputs, each_chunk in parts:
        per_sample.extend(outputs)
        for count, chunk_stats in each_chunk:
            for _ in range(count):
                stats.merge(chunk_stats)
    output_specs = [TensorSpec(t.name, tuple(t.shape), IO_DTYPES[t.dtype]) for t in binary.outputs()]
    codes = stack_outputs(output_specs, [tuple(np.asarray(v, dtype=np.int64) if t.dtype in QUANTIZED_BITS else v
                                               for t, v in zip(binary.outputs(), sample)) for sample in per_sample], bound)
    floats = {tensor.name: fp.dequantize(codes[tensor.name], tensor.scale) if tensor.dtype in QUANTIZED_BITS
              else codes[tensor.name] for tensor in binary.outputs()}
    return BinaryRun(floats, codes, stats)


def _run_samples(machine: Machine, binary: Binary, bound, first: int, end: int, at_once: int,
                 trace: Trace | None) -> tuple[list[tuple], list[tuple[int, RunStats]]]:
    """Samples [first, end) in chunks of `at_once` (the last one filled up with its last sample
    again): each sample's outputs (the codes of the binary's outputs in order), and each chunk's
    statistics with its count of samples."""
    per_sample: list[tuple] = []
    chunk_stats: list[tuple[int, RunStats]] = []
    start = first
    while start < end:
        stop = min(end, start + at_once)
        codes = {
            tensor.name: fp.quantize(array, tensor.scale, QUANTIZED_BITS[tensor.dtype], _io_dtype(tensor))
            if tensor.dtype in QUANTIZED_BITS
            else array
            for tensor, array in zip(binary.inputs(), _samples(bound, start, stop, at_once))
        }
        try:
            outputs, stats = machine.run_samples(binary, codes, at_once, trace)
        except SamplesDiffer:
            at_once = 1  # this program's parameters depend on the sample: one at a time from here
            continue
        per_sample.extend(tuple(outputs[tensor.name][k] for tensor in binary.outputs()) for k in range(stop - start))
        chunk_stats.append((stop - start, stats))
        start = stop
    return per_sample, chunk_stats


def planned_stats(binary: Binary, target: TargetDescription | None = None) -> RunStats:
    """The statistics of one run of `binary` (cycles, queue busy time and DDR traffic, per
    layer), which its instructions alone decide: what `simulate` returns per sample (Plan.of),
    here without running anything, so without data, the constant image in DDR or the compute
    units' compiled loops (xnpu-compile --report's roofline)."""
    target = target_for_binary(binary) if target is None else target
    return Machine(target, ddr_size=0).plan_of(binary).fresh_stats()


def run_binary(
    binary: Binary, inputs: np.ndarray | Mapping[str, np.ndarray], target: TargetDescription | str | None = None
) -> dict[str, np.ndarray]:
    """Float inputs in, dequantized float outputs out, by io name (N samples stack on axis 0)."""
    return simulate(binary, inputs, target).outputs


def format_profile(stats: RunStats) -> str:
    """Cycles per layer (its share of the makespan, beside its EXEC and DMA busy cycles, their
    roofline ratio and its DDR bytes against the compulsory ones) and per instruction class
    (busy cycles), as two tables, then the program's roofline (backend/roofline.py)."""
    def table(title: str, rows: dict[str, int], per_layer: bool = False) -> list[str]:
        width = max([len(title)] + [len(name) for name in rows])
        heads = (f"  {'compute':>12s}  {'dma':>12s}  {'x max':>6s}  {'ddr bytes':>12s}  {'compulsory':>12s}"
                 if per_layer else "")
        lines = [f"{title:<{width}s}  {'cycles':>12s}  {'share':>6s}{heads}"]
        for name, cycles in sorted(rows.items(), key=lambda item: (-item[1], item[0])):
            share = 100.0 * cycles / stats.cycles if stats.cycles else 0.0
            more = (f"  {stats.compute.get(name, 0):12d}  {stats.dma.get(name, 0):12d}  {stats.layer_ratio(name):6.2f}"
                    f"  {stats.ddr_bytes.get(name, 0):12d}  {stats.compulsory_bytes.get(name, 0):12d}"
                    if per_layer else "")
            lines.append(f"{name:<{width}s}  {cycles:12d}  {share:5.1f}%{more}")
        return lines

    lines = table("layer", stats.by_layer, per_layer=True) + [""] + table("instruction", stats.by_class)
    lines.append("")
    lines.append(
        f"total: {stats.cycles} cycles in {stats.instructions} instructions, "
        f"{stats.time_us:.1f} us at {stats.clock_mhz:g} MHz"
    )
    lines.append(roofline_summary(stats))
    return "\n".join(lines)


def roofline_summary(stats: RunStats) -> str:
    """The program's roofline in two lines: cycles against the busier queue, DDR bytes
    against the compulsory ones."""
    bound = "DMA" if stats.dma_cycles > stats.compute_cycles else "compute"
    moved, compulsory = stats.total_ddr_bytes, stats.total_compulsory_bytes
    times = f" = {moved / compulsory:.2f} x the compulsory {compulsory}" if compulsory else ""
    return (f"roofline: {stats.cycles} cycles = {stats.roofline_ratio:.3f} x max(EXEC busy {stats.compute_cycles}, "
            f"DMA busy {stats.dma_cycles}) ({bound}-bound)\n"
            f"DDR bytes moved: {moved}{times} (constants once, inputs, outputs)")


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

