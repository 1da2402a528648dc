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
target/footprints.py, compared here). A tile's activation is often an in-place TABLE on its
whole output right after it (segnet_like's conv_26, mobilenetv3_like's stem), which touches a
pending output: such a TABLE joins the group instead of ending it (`TileEpilogue`), its table
read at its turn and looked up in the tile's output rows when the group is computed, so every
output byte is still the TABLE of the CONV's result and nothing else reads it in between.

The compiler also tiles a convolution whose weights do not fit SRAM into output-channel tiles:
CONVs with the same input map and window, each with its own weights, bias and records
(streamed in by LOADs between them) writing its own channels of the output. Run one by one,
resnet18_like's last layers are 16 GEMMs each on the same gathered windows with 32 output
columns (9 images: 26.9 ms a layer, against 13.0 for one GEMM of 512 columns). `channel_groups`
finds runs of such tiles between which no instruction writes their input map or touches an
output a tile of the run has yet to write: the machine then keeps each tile's prepared weights
and requantization at its turn, and at the run's last tile computes one convolution with the
tiles' weights side by side and requantizes each tile's columns into its output. Each output
channel is its own exact sums (R13: exact integers whatever the GEMM's width), so the results
are the tiles' integer for integer.
"""

from __future__ import annotations

from collections.abc import Collection, Iterable, Sequence
from dataclasses import dataclass, field

from xnpu.target.encoding import Instruction
from xnpu.target.footprints import Footprint, conv_output_hw, padded

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


@dataclass(frozen=True)
class TileEpilogue:
    """An in-place TABLE on the whole output of a group's tile (the group's `position`th): where
    that tile's output is still pending at the TABLE's turn, the table is kept with it and
    looked up in its output rows when the group is computed."""

    group: TileGroup
    position: int


def conv_scratch_bytes(padded_h: int, padded_w: int, oh: int, ow: int, taps: int, c: int, o: int) -> int:
    """What one sample of a convolution holds beside SRAM: its padded float32 input, its gathered
    windows (float32) and its float64 sums."""
    return 4 * padded_h * padded_w * c + 4 * max(oh, padded_h) * ow * taps * c + 8 * oh * ow * o


def instruction_scratch_bytes(i: Instruction, out_channels: int | None = None) -> int:
    """conv_scratch_bytes of a CONV (with `out_channels` output channels instead of its own)."""
    oh, ow = conv_output_hw(i)
    return conv_scratch_bytes(i["in_h"] + i["pad_top"] + i["pad_bottom"], i["in_w"] + i["pad_left"] + i["pad_right"],
                              oh, ow, i["kernel_h"] * i["kernel_w"], i["in_c"],
                              i["out_c"] if out_channels is None else out_channels)


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
    epilogues: list[tuple[int, int]] = field(default_factory=list)  # (TABLE's program index, tile position)

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


def _epilogue_owner(table: Instruction, index: int, program: Sequence[Instruction], prints: Sequence[Footprint],
                    groups: Iterable[_Open]) -> _Open | None:
    """The open group whose latest tile's whole output the in-place TABLE at `index` looks up
    (a dense output of the TABLE's H x W x C, that tile's first), its table read from outside
    the group's pending outputs; or None."""
    if table["in_addr"] != table["out_addr"]:
        return None
    writes = prints[index].sram_writes
    others = [span for span in prints[index].sram_reads if span not in writes]
    for group in groups:
        member = group.members[-1][0]
        if group.epilogues and group.epilogues[-1][1] == len(group.members) - 1:
            continue  # one TABLE a tile
        conv = program[member]
        if (conv["out_addr"] == table["out_addr"] and not conv["out_pixel_stride"]
                and (table["h"], table["w"], table["c"]) == (*conv_output_hw(conv), conv["out_c"])
                and tuple(prints[member].sram_writes) == tuple(writes) and not group.conflicts(others)):
            return group
    return None


def tile_groups(program: Sequence[Instruction], prints: Sequence[Footprint],
                scratch_limit: int) -> dict[int, Tile | TileEpilogue]:
    """The CONVs of `program` (program index -> Tile) that run in groups of at least two, each
    group's union within `scratch_limit` bytes of scratch per sample (conv_scratch_bytes), and
    the in-place TABLEs on their tiles' outputs (program index -> TileEpilogue) that do not end
    a group: a tile's output may take one such TABLE before the next tile."""
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
        owner = _epilogue_owner(instruction, index, program, prints, open_groups.values()) \
            if instruction.op == "TABLE" else None
        for group in list(open_groups.values()):
            if group is not owner and group.conflicts(touched):
                close(group)
                if group is joined:
                    joined = None
        if owner is not None:
            owner.epilogues.append((index, len(owner.members) - 1))
            continue
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

    tiles: dict[int, Tile | TileEpilogue] = {}
    for group in groups:
        pads, union_oh = _geometry(group.first, group.rows, group.last["pad_bottom"])
        if union_oh < group.out_rows:
            continue  # bands that leave rows out: not one convolution
        shared = TileGroup(group.rows, pads, group.out_rows, len(group.members))
        for position, (index, row, out_row) in enumerate(group.members):
            tiles[index] = Tile(shared, position, row, out_row, position == len(group.members) - 1)
        for index, position in group.epilogues:
            tiles[index] = TileEpilogue(shared, position)
    return tiles


# the fields in which the output-channel tiles of one convolution differ
_CHANNEL_FIELDS = frozenset({"out_addr", "weight_addr", "bias_addr", "rescale_addr", "out_c", "wait", "signal"})


@dataclass(frozen=True, eq=False)
class ChannelGroup:
    """Output-channel tiles of one convolution: `size` tiles, `out_channels` channels in all."""

    size: int
    out_channels: int


@dataclass(frozen=True)
class ChannelTile:
    """A CONV's place in its channel group: its output channels are the union's [channel,
    channel + its out_c); the group is computed after the `last` one."""

    group: ChannelGroup
    position: int
    channel: int
    last: bool


@dataclass
class _OpenChannels:
    """A channel group being gathered: its members (program index, first channel), the input
    map's span, and the outputs its members have yet to write: their extents and, exactly,
    their pixels (first byte, bytes of a pixel, bytes from a pixel to the next), `pixels` each."""

    signature: tuple
    members: list[tuple[int, int]]
    channels: int
    source: tuple[int, int]
    outputs: list[tuple[int, int]]
    combs: list[tuple[int, int, int]]
    pixels: int

    def conflicts(self, reads: Sequence[tuple[int, int]], writes: Sequence[tuple[int, int]]) -> bool:
        """Whether an instruction that reads `reads` and writes `writes` writes the input or
        touches a pending output's extent."""
        return _overlap(writes, [self.source]) or _overlap((*reads, *writes), self.outputs)

    def admits(self, reads: Sequence[tuple[int, int]], writes: Sequence[tuple[int, int]],
               comb: tuple[int, int, int]) -> bool:
        """Whether a member that reads `reads` and writes `writes`, the pixels `comb`, leaves
        the input and the pending outputs alone: its channels of the output map lie beside theirs."""
        return not _overlap(writes, [self.source]) and not _overlap(reads, self.outputs) and not any(
            _combs_overlap(pending, comb, self.pixels) for pending in self.combs)


def _overlap(spans: Sequence[tuple[int, int]], others: Sequence[tuple[int, int]]) -> bool:
    return any(a < b and c < d and a < d and c < b for a, b in spans for c, d in others)


def _combs_overlap(first: tuple[int, int, int], second: tuple[int, int, int], pixels: int) -> bool:
    """Whether two maps of `pixels` pixels, each (first byte a, bytes of a pixel, stride), share
    a byte. With one stride: some m = p - q in (-pixels, pixels) has (a2 - a1) - width1 <
    m * stride < (a2 - a1) + width2; with two, their extents are compared."""
    (a, width_a, stride), (b, width_b, stride_b) = first, second
    if stride != stride_b:
        return _overlap([(a, a + (pixels - 1) * stride + width_a)], [(b, b + (pixels - 1) * stride_b + width_b)])
    d = b - a
    low = max((d - width_a) // stride + 1, 1 - pixels)
    high = min(-((-(d + width_b)) // stride) - 1, pixels - 1)
    return low <= high


def _channel_signature(i: Instruction) -> tuple:
    return tuple(value for name, value in i.fields.items() if name not in _CHANNEL_FIELDS)


def channel_groups(program: Sequence[Instruction], prints: Sequence[Footprint], scratch_limit: int, alignment: int,
                   taken: Collection[int] = ()) -> dict[int, ChannelTile]:
    """The dense CONVs of `program` (program index -> ChannelTile), but those in `taken` (the
    row tiles of `tile_groups`), that run in output-channel groups of at least two, each group's
    union within `scratch_limit` bytes of scratch per sample (conv_scratch_bytes). `alignment`:
    the target's channel alignment (a pixel's padded channels)."""
    groups: list[_OpenChannels] = []
    open_groups: dict[tuple, _OpenChannels] = {}

    def close(group: _OpenChannels) -> None:
        del open_groups[group.signature]
        if len(group.members) > 1:
            groups.append(group)

    for index, instruction in enumerate(program):
        if instruction.op == "SYNC":  # the host may read or write anything
            for group in list(open_groups.values()):
                close(group)
            continue
        reads, writes = prints[index].sram_reads, prints[index].sram_writes
        candidate = instruction.op == "CONV" and index not in taken and not instruction["depthwise"]
        signature = _channel_signature(instruction) if candidate else None
        joined = open_groups.get(signature) if signature is not None else None
        oh, ow = conv_output_hw(instruction) if candidate else (0, 0)
        comb = None
        width = padded(instruction["out_c"], alignment) if candidate else 0
        if oh > 0 and ow > 0 and width > 0 and reads and writes:
            comb = (instruction["out_addr"], width, instruction["out_pixel_stride"] or width)
        for group in list(open_groups.values()):
            if group is joined and comb is not None:
                if not group.admits(reads, writes, comb):
                    close(group)
                    joined = None
            elif group.conflicts(reads, writes):
                close(group)
                if group is joined:
                    joined = None
        if comb is None or instruction["stride_h"] < 1:
            continue  # not a tile, or the unit reports it at its turn
        if joined is not None:
            channels = joined.channels + instruction["out_c"]
            if instruction_scratch_bytes(instruction, channels) <= scratch_limit:
                joined.members.append((index, joined.channels))
                joined.channels = channels
                joined.outputs.append(writes[0])
                joined.combs.append(comb)
                continue
            close(joined)
        open_groups[signature] = _OpenChannels(signature, [(index, 0)], instruction["out_c"], reads[0], [writes[0]],
                                               [comb], oh * ow)
    for group in list(open_groups.values()):
        close(group)

    tiles: dict[int, ChannelTile] = {}
    for group in groups:
        shared = ChannelGroup(len(group.members), group.channels)
        for position, (index, channel) in enumerate(group.members):
            tiles[index] = ChannelTile(shared, position, channel, position == len(group.members) - 1)
    return tiles
