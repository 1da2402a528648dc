"""Target descriptions: one accelerator configuration as data (`target/*.toml`).

A target says how big the memories are, how feature maps and kernels are laid out, which
compute units exist with which limits, and what instructions cost (docs/isa.md sections 1,
4 and 5). `load_target("xnpu_default")` reads a shipped target by name; a path to a `.toml`
file loads that file. Every field is required and checked: a missing field, a field of the
wrong type, an unknown field (usually a typo) or an impossible value (alignment not a power
of two, SRAM too small for one aligned row, a limit the instruction fields cannot encode)
is one XnpuError line naming the file and the field.
"""

from __future__ import annotations

import os
import stat
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from xnpu.core.errors import XnpuError
from xnpu.core.files import read_input_file
from xnpu.target.codebook import codebook_problem
from xnpu.target.encoding import DMA_LAYOUTS, FORMATS, Instruction
from xnpu.target.encoding import ELTWISE_OPS as ELTWISE_OP_CODES
from xnpu.target.encoding import POOL_KINDS as POOL_KIND_CODES
from xnpu.target.legality import conv_problem, eltwise_problem, pool_problem, unit_problem

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover - exercised only on Python 3.10
    import tomli as tomllib

TARGET_DIR = Path(__file__).resolve().parent
ELTWISE_OPS = ("add", "sub", "mul")
POOL_KINDS = ("max", "avg", "global_avg")
KERNEL_LAYOUTS = ("OHWI",)


@dataclass(frozen=True)
class DataSpec:
    width: int
    saturation_min: int
    saturation_max: int
    accumulator_width: int


@dataclass(frozen=True)
class MemorySpec:
    sram_bytes: int
    ddr_bytes: int
    channel_alignment: int
    kernel_layout: str


@dataclass(frozen=True)
class ConvUnit:
    depthwise: bool
    max_kernel: int
    max_stride: int
    max_dilation: int
    max_pad: int
    max_channels: int


@dataclass(frozen=True)
class EltwiseUnit:
    ops: tuple[str, ...]
    max_channels: int


@dataclass(frozen=True)
class PoolUnit:
    kinds: tuple[str, ...]
    max_kernel: int
    max_stride: int
    max_pad: int


@dataclass(frozen=True)
class CostModel:
    clock_mhz: float
    instruction_overhead_cycles: int
    sync_cycles: int
    dma_bytes_per_cycle: int
    dma_latency_cycles: int
    mac_block_cycles: int
    vector_lanes: int


@dataclass(frozen=True)
class TargetDescription:
    name: str
    id: int
    description: str
    data: DataSpec
    memory: MemorySpec
    conv: ConvUnit
    eltwise: EltwiseUnit
    pool: PoolUnit
    has_table: bool
    has_clamp: bool
    cost: CostModel

    def align(self, channels: int) -> int:
        """`channels` rounded up to the channel alignment (the padded count Cp)."""
        a = self.memory.channel_alignment
        return -(-channels // a) * a

    def supports_eltwise(self, op: str) -> bool:
        return op in self.eltwise.ops

    def supports_pool(self, kind: str) -> bool:
        return kind in self.pool.kinds

    def check_instruction(self, instruction: Instruction) -> None:
        """XnpuError if the instruction needs a unit, op or limit this target lacks (isa.md section 4)."""
        problem = _target_problem(self, instruction)
        if problem:
            raise XnpuError(f"{instruction.op} is not valid on target {self.name}: {problem}")


def _target_problem(t: TargetDescription, i: Instruction) -> str | None:
    sram_fields = [name for name in i.fields if name.endswith("_addr") and name not in ("ddr_addr", "dictionary_addr")]
    for name in sram_fields:
        if i[name] >= t.memory.sram_bytes:
            return f"{name} {i[name]} is outside the {t.memory.sram_bytes}-byte SRAM"
    if i.op in ("LOAD", "STORE"):
        if i["ddr_addr"] >= t.memory.ddr_bytes:
            return f"ddr_addr {i['ddr_addr']} is outside the {t.memory.ddr_bytes}-byte DDR"
        if i.op == "STORE" and i["layout"] in (DMA_LAYOUTS["OHWI"], DMA_LAYOUTS["DW"]):
            return "kernel layouts are LOAD-only"
        problem = codebook_problem(i)
        if problem:
            return problem
        bits = i.fields.get("codebook_bits", 0)
        if bits and i["dictionary_addr"] + (1 << bits) > t.memory.ddr_bytes:
            return f"the dictionary at DDR {i['dictionary_addr']} runs past the {t.memory.ddr_bytes}-byte DDR"
    elif i.op in ("CLAMP", "TABLE"):
        return unit_problem(t, i.op.lower())
    elif i.op == "ELTWISE":
        op = {code: name for name, code in ELTWISE_OP_CODES.items()}[i["op"]]
        problem = eltwise_problem(t, op, i["c"])
        if problem:
            return problem
        if op == "mul" and any(i[f] for f in ("a_multiplier", "a_shift", "b_multiplier", "b_shift", "stage16", "pre_shift")):
            return "mul takes no input rescales, stage16 or pre_shift (they must be 0)"
    elif i.op == "CONV":
        problem = conv_problem(
            t, kernel=(i["kernel_h"], i["kernel_w"]), strides=(i["stride_h"], i["stride_w"]),
            dilations=(i["dilation_h"], i["dilation_w"]), pads=(i["pad_top"], i["pad_left"], i["pad_bottom"], i["pad_right"]),
            in_channels=i["in_c"], out_channels=i["out_c"], depthwise=bool(i["depthwise"]),
        )
        if problem is None and i["depthwise"] and i["in_c"] != i["out_c"]:
            problem = f"depthwise needs in_c == out_c, got {i['in_c']} and {i['out_c']}"
        if problem is None and 0 < i["out_pixel_stride"] < t.align(i["out_c"]):
            problem = f"out_pixel_stride {i['out_pixel_stride']} is smaller than a pixel of {t.align(i['out_c'])} padded channels"
        return problem
    elif i.op == "POOL":
        kind = {code: name for name, code in POOL_KIND_CODES.items()}[i["kind"]]
        return pool_problem(t, kind, (i["kernel_h"], i["kernel_w"]), (i["stride_h"], i["stride_w"]),
                            (i["pad_top"], i["pad_left"], i["pad_bottom"], i["pad_right"]))
    return None


# --------------------------------------------------------------------------------------
# Reading and checking
# --------------------------------------------------------------------------------------


class _Reader:
    """Takes fields out of the parsed TOML, remembering which were read to catch extras."""

    def __init__(self, source: str, document: dict[str, Any]):
        self.source = source
        self.document = document
        self.seen: set[str] = set()

    def fail(self, message: str) -> XnpuError:
        return XnpuError(f"target {self.source}: {message}")

    def _lookup(self, dotted: str) -> Any:
        node: Any = self.document
        for part in dotted.split("."):
            if not isinstance(node, dict) or part not in node:
                raise self.fail(f"missing field '{dotted}'")
            node = node[part]
        self.seen.add(dotted)
        return node

    def integer(self, dotted: str, low: int, high: int | None = None) -> int:
        value = self._lookup(dotted)
        if not isinstance(value, int) or isinstance(value, bool):
            raise self.fail(f"field '{dotted}' must be an integer, got {_kind(value)}")
        if value < low or (high is not None and value > high):
            bound = f"in [{low}, {high}]" if high is not None else f">= {low}"
            raise self.fail(f"field '{dotted}' = {value} must be {bound}")
        return value

    def number(self, dotted: str) -> float:
        value = self._lookup(dotted)
        if not isinstance(value, (int, float)) or isinstance(value, bool):
            raise self.fail(f"field '{dotted}' must be a number, got {_kind(value)}")
        if not value > 0 or value != value or value == float("inf"):
            raise self.fail(f"field '{dotted}' = {value} must be a positive finite number")
        return float(value)

    def boolean(self, dotted: str) -> bool:
        value = self._lookup(dotted)
        if not isinstance(value, bool):
            raise self.fail(f"field '{dotted}' must be true or false, got {_kind(value)}")
        return value

    def string(self, dotted: str, choices: tuple[str, ...] | None = None) -> str:
        value = self._lookup(dotted)
        if not isinstance(value, str):
            raise self.fail(f"field '{dotted}' must be a string, got {_kind(value)}")
        if choices is not None and value not in choices:
            raise self.fail(f"field '{dotted}' = '{value}' is not one of {', '.join(choices)}")
        return value

    def names(self, dotted: str, choices: tuple[str, ...]) -> tuple[str, ...]:
        value = self._lookup(dotted)
        if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
            raise self.fail(f"field '{dotted}' must be a list of strings, got {_kind(value)}")
        for item in value:
            if item not in choices:
                raise self.fail(f"field '{dotted}' has '{item}', not one of {', '.join(choices)}")
        if len(set(value)) != len(value):
            raise self.fail(f"field '{dotted}' lists an entry twice")
        return tuple(value)

    def check_no_extras(self) -> None:
        def walk(node: dict[str, Any], prefix: str) -> None:
            for key, value in node.items():
                dotted = f"{prefix}{key}"
                if dotted in self.seen:
                    continue
                if isinstance(value, dict) and any(s.startswith(dotted + ".") for s in self.seen):
                    walk(value, dotted + ".")
                else:
                    raise self.fail(f"unknown field '{dotted}'")

        walk(self.document, "")


def _kind(value: Any) -> str:
    return {bool: "a boolean", int: "an integer", float: "a number", str: "a string",
            list: "a list", dict: "a table"}.get(type(value), type(value).__name__)


def _field_max(format_name: str, field_name: str) -> int:
    return FORMATS[format_name].field(field_name).maximum


def _is_power_of_two(value: int) -> bool:
    return value > 0 and value & (value - 1) == 0


def parse_target(document: dict[str, Any], source: str = "<memory>") -> TargetDescription:
    """A checked TargetDescription from an already parsed TOML document."""
    r = _Reader(source, document)
    name = r.string("name")
    if not name or not name.replace("_", "").replace("-", "").isalnum():
        raise r.fail(f"field 'name' = '{name}' must be a non-empty identifier")
    target_id = r.integer("id", 1, 0xFFFF_FFFF)
    description = r.string("description")

    data = DataSpec(
        width=r.integer("data.width", 1),
        saturation_min=r.integer("data.saturation_min", -(1 << 31)),
        saturation_max=r.integer("data.saturation_max", -(1 << 31)),
        accumulator_width=r.integer("data.accumulator_width", 1),
    )
    if data.width != 8:
        raise r.fail(f"field 'data.width' = {data.width}: the instruction set computes on int8 only")
    if data.accumulator_width != 32:
        raise r.fail(f"field 'data.accumulator_width' = {data.accumulator_width}: the CONV unit accumulates in int32 (R13)")
    low, high = -(1 << (data.width - 1)), (1 << (data.width - 1)) - 1
    if not low <= data.saturation_min < data.saturation_max <= high:
        raise r.fail(
            f"saturation range [{data.saturation_min}, {data.saturation_max}] is not an ordered range inside int{data.width}"
        )

    memory = MemorySpec(
        sram_bytes=r.integer("memory.sram_bytes", 1, 1 << 24),
        ddr_bytes=r.integer("memory.ddr_bytes", 1, 1 << 32),
        channel_alignment=r.integer("memory.channel_alignment", 1, 256),
        kernel_layout=r.string("memory.kernel_layout", KERNEL_LAYOUTS),
    )
    if not _is_power_of_two(memory.channel_alignment):
        raise r.fail(f"field 'memory.channel_alignment' = {memory.channel_alignment} is not a power of two")

    conv = ConvUnit(
        depthwise=r.boolean("units.conv.depthwise"),
        max_kernel=r.integer("units.conv.max_kernel", 1, _field_max("CONV", "kernel_h")),
        max_stride=r.integer("units.conv.max_stride", 1, _field_max("CONV", "stride_h")),
        max_dilation=r.integer("units.conv.max_dilation", 1, _field_max("CONV", "dilation_h")),
        max_pad=r.integer("units.conv.max_pad", 0, _field_max("CONV", "pad_top")),
        max_channels=r.integer("units.conv.max_channels", 1, _field_max("CONV", "in_c")),
    )
    eltwise = EltwiseUnit(
        ops=r.names("units.eltwise.ops", ELTWISE_OPS),
        max_channels=r.integer("units.eltwise.max_channels", 1, _field_max("ELTWISE", "c")),
    )
    pool = PoolUnit(
        kinds=r.names("units.pool.kinds", POOL_KINDS),
        max_kernel=r.integer("units.pool.max_kernel", 1, _field_max("POOL", "kernel_h")),
        max_stride=r.integer("units.pool.max_stride", 1, _field_max("POOL", "stride_h")),
        max_pad=r.integer("units.pool.max_pad", 0, _field_max("POOL", "pad_top")),
    )
    has_table = r.boolean("units.table.present")
    has_clamp = r.boolean("units.clamp.present")
    cost = CostModel(
        clock_mhz=r.number("cost.clock_mhz"),
        instruction_overhead_cycles=r.integer("cost.instruction_overhead_cycles", 0),
        sync_cycles=r.integer("cost.sync_cycles", 0),
        dma_bytes_per_cycle=r.integer("cost.dma_bytes_per_cycle", 1),
        dma_latency_cycles=r.integer("cost.dma_latency_cycles", 0),
        mac_block_cycles=r.integer("cost.mac_block_cycles", 1),
        vector_lanes=r.integer("cost.vector_lanes", 1),
    )
    r.check_no_extras()

    # The widest feature-map row the units accept must fit: one pixel of max_channels
    # channels, padded to the alignment, is the least a CONV instruction can work on.
    widest = -(-max(conv.max_channels, eltwise.max_channels) // memory.channel_alignment) * memory.channel_alignment
    if memory.sram_bytes < widest:
        raise r.fail(
            f"memory.sram_bytes = {memory.sram_bytes} is smaller than one aligned row of "
            f"{widest} bytes (max_channels padded to the alignment)"
        )
    if memory.sram_bytes % memory.channel_alignment:
        raise r.fail(f"memory.sram_bytes = {memory.sram_bytes} is not a multiple of the channel alignment")
    return TargetDescription(
        name, target_id, description, data, memory, conv, eltwise, pool, has_table, has_clamp, cost
    )


def load_target(name_or_path: str | Path) -> TargetDescription:
    """A shipped target by name (`xnpu_default`), or a target file by path: read and checked
    once per process (again only when the file changes), so every pass and verifier that asks
    for the module's target gets the same description."""
    text = str(name_or_path)
    path, status = text, _regular_file_status(text)
    if not (text.endswith(".toml") or status is not None):
        path = os.path.join(TARGET_DIR, f"{text}.toml")
        status = _regular_file_status(path)
        if status is None:
            raise XnpuError(f"unknown target '{text}' (known: {', '.join(list_targets())})")
    # os.stat (a shipped name: two, the first failing) and the absolute path, not pathlib's
    # checks or the resolved path (an lstat per component): the verifier of every isa
    # instruction asks, ~3,000 times in segnet_like's compile
    key = (os.path.abspath(path), status.st_mtime_ns if status else None, status.st_size if status else None)
    target = _LOADED.get(key)
    if target is None:
        target = _LOADED[key] = _read_target(Path(path))
    return target


def _regular_file_status(path: str) -> os.stat_result | None:
    try:
        status = os.stat(path)
    except (OSError, ValueError):
        return None
    return status if stat.S_ISREG(status.st_mode) else None


_LOADED: dict[tuple, TargetDescription] = {}


def _read_target(path: Path) -> TargetDescription:
    raw = read_input_file(path)  # a regular file of bounded size: not a FIFO, not /dev/zero
    try:
        document = tomllib.loads(raw.decode("utf-8"))
    except UnicodeDecodeError:
        raise XnpuError(f"target {path}: not UTF-8 text") from None
    except tomllib.TOMLDecodeError as error:
        raise XnpuError(f"target {path}: invalid TOML: {str(error).splitlines()[0]}") from None
    return parse_target(document, str(path))


def list_targets() -> list[str]:
    """Names of the shipped targets."""
    return sorted(p.stem for p in TARGET_DIR.glob("*.toml"))
