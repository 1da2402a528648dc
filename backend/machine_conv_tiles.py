"""CONV tiles of one layer computed as one convolution, worked out once per program.

The compiler tiles a large convolution into row bands (backend/npu_tile.py): CONVs with the
same weights, requantization and window, each reading a few input rows (its own LOADed band,
or rows of one map in SRAM) and writing its output rows. Run one by one, segnet_like's
convolutions are hundreds of GEMMs on 1-3 output rows, whose fixed costs (padding, gathering,
BLAS's packing of a thin operand) outweigh the arithmetic. `tile_groups` finds runs of such
tiles whose outputs no instruction between them touches: the machine then copies each tile's
input rows, at its turn, into one map (the union of the bands, checked equal where bands
overlap), and at the group's last tile computes one convolution over that map and writes each
tile's output rows where the tile writes them. Each output row is its own sums over its own
window (R13: exact integers, whatever the GEMM's shape), then R9 element by element, so the
results are the tiles' integer for integer; deferring a tile's write to the group's end changes
nothing because nothing reads or writes those bytes in between (the footprints of
target/footprints.py, compared here).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from xnpu.target.encoding import Instruction
from xnpu.target.footprints import Footprint, conv_output_hw

# the fields in which the tiles of one convolution differ
_TILE_FIELDS = frozenset({"in_addr", "out_addr", "in_h", "pad_top", "pad_bottom", "wait", "signal"})


@dataclass(frozen=True, eq=False)
class TileGroup:
    """The union of a group's input bands: `rows` unpadded rows, padded by `pads` (top, left,
    bottom, right); its tiles' output rows in order are its first `out_rows` output rows."""

    rows: int
    pads: tuple[int, int, int, int]
    out_rows: int
    size: int


@dataclass(frozen=True)
class Tile:
    """A CONV's place in its group: its input fills union rows [row, row + in_h), its output is
    union output rows [out_row, out_row + its OH); the group is computed after the `last` one."""

    group: TileGroup
    position: int
    row: int
    out_row: int
    last: bool


def conv_scratch_bytes(padded_h: int, padded_w: int, oh: int, ow: int, taps: int, c: int, o: int) -> int:
    """What one sample of a convolution holds beside SRAM: its padded float32 input, its gathered
    windows (float32) and its float64 sums."""
    return 4 * padded_h * padded_w * c + 4 * max(oh, padded_h) * ow * taps * c + 8 * oh * ow * o


def instruction_scratch_bytes(i: Instruction) -> int:
    oh, ow = conv_output_hw(i)
    return conv_scratch_bytes(i["in_h"] + i["pad_top"] + i["pad_bottom"], i["in_w"] + i["pad_left"] + i["pad_right"],
                              oh, ow, i["kernel_h"] * i["kernel_w"], i["in_c"], i["out_c"])


@dataclass
class _Open:
    """A group being gathered: its members (program index, row, out_row), the next tile's
    padded start row, and the output spans the group has yet to write."""

    signature: tuple
    first: Instruction
    members: list[tuple[int, int, int]]
    top: int
    next_start: int
    rows: int
    out_rows: int
    last: Instruction
    outputs: list[list[int]]

    def conflicts(self, spans: Sequence[tuple[int, int]]) -> bool:
        return any(start < end and out_start < end and start < out_end
                   for start, end in spans for out_start, out_end in self.outputs)

    def add_output(self, span: tuple[int, int]) -> None:
        if self.outputs and self.outputs[-1][1] == span[0]:
            self.outputs[-1][1] = span[1]  # the tiles' outputs usually follow one another
        else:
            self.outputs.append(list(span))


def _signature(i: Instruction) -> tuple:
    return tuple(value for name, value in i.fields.items() if name not in _TILE_FIELDS)


def _geometry(first: Instruction, rows: int, bottom: int) -> tuple[tuple[int, int, int, int], int]:
    pads = (first["pad_top"], first["pad_left"], bottom, first["pad_right"])
    span = first["dilation_h"] * (first["kernel_h"] - 1) + 1
    return pads, (pads[0] + rows + bottom - span) // first["stride_h"] + 1


def _scratch(first: Instruction, rows: int, out_rows: int) -> int:
    _, ow = conv_output_hw(first)
    return conv_scratch_bytes(first["pad_top"] + rows, first["in_w"] + first["pad_left"] + first["pad_right"], out_rows,
                              ow, first["kernel_h"] * first["kernel_w"], first["in_c"], first["out_c"])


def tile_groups(program: Sequence[Instruction], prints: Sequence[Footprint], scratch_limit: int) -> dict[int, Tile]:
    """The CONVs of `program` (program index -> Tile) that run in groups of at least two, each
    group's union within `scratch_limit` bytes of scratch per sample (conv_scratch_bytes)."""
    groups: list[_Open] = []
    open_groups: dict[tuple, _Open] = {}

    def close(group: _Open) -> None:
        del open_groups[group.signature]
        if len(group.members) > 1:
            groups.append(group)

    for index, instruction in enumerate(program):
        touched = prints[index].sram_reads + prints[index].sram_writes
        if instruction.op == "SYNC":  # the host may read or write anything
            for group in list(open_groups.values()):
                close(group)
            continue
        signature = _signature(instruction) if instruction.op == "CONV" else None
        joined = open_groups.get(signature) if signature is not None else None
        for group in list(open_groups.values()):
            if group.conflicts(touched):
                close(group)
                if group is joined:
                    joined = None
        if signature is None:
            continue
        oh, _ = conv_output_hw(instruction)
        stride = instruction["stride_h"]
        if joined is not None:
            row = joined.next_start - joined.top
            rows = max(joined.rows, row + instruction["in_h"])
            if (joined.last["pad_bottom"] or instruction["pad_top"] or row < 0
                    or _scratch(joined.first, rows, joined.out_rows + oh) > scratch_limit):
                close(joined)
                joined = None
            else:
                joined.members.append((index, row, joined.out_rows))
                joined.next_start += oh * stride
                joined.rows = rows
                joined.out_rows += oh
                joined.last = instruction
                joined.add_output(prints[index].sram_writes[0] if prints[index].sram_writes else (0, 0))
                continue
        if oh < 1 or stride < 1:
            continue  # the unit reports it at its turn
        group = _Open(signature, instruction, [(index, 0, 0)], instruction["pad_top"], oh * stride,
                      instruction["in_h"], oh, instruction, [])
        group.add_output(prints[index].sram_writes[0] if prints[index].sram_writes else (0, 0))
        open_groups[signature] = group
    for group in list(open_groups.values()):
        close(group)

    tiles: dict[int, Tile] = {}
    for group in groups:
        pads, union_oh = _geometry(group.first, group.rows, group.last["pad_bottom"])
        if union_oh < group.out_rows:
            continue  # bands that leave rows out: not one convolution
        shared = TileGroup(group.rows, pads, group.out_rows, len(group.members))
        for position, (index, row, out_row) in enumerate(group.members):
            tiles[index] = Tile(shared, position, row, out_row, position == len(group.members) - 1)
    return tiles
