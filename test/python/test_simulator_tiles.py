"""CONV tiles of one layer computed as one convolution (backend/machine_conv_tiles.py), row bands
and output-channel tiles: the same integers as running each tile at its turn, and no group
across an instruction that touches a tile's output (or a channel group's input) before the
group's end, but an in-place TABLE on a tile's whole output, which waits for the group."""

from __future__ import annotations

import numpy as np
import pytest
from onnx import TensorProto, helper, numpy_helper

import xnpu
from xnpu.backend import machine_plan, simulator
from xnpu.backend.machine_conv_tiles import (TileEpilogue, _combs_overlap, channel_groups, instruction_scratch_bytes,
                                             tile_groups)
from xnpu.backend.machine_units import ComputeUnits
from xnpu.backend.simulator import machine_for, simulate
from xnpu.semantics import conv_kernels
from xnpu.target.description import load_target
from xnpu.target.encoding import make_instruction
from xnpu.target.queues import footprints


def _strided_stem(activation: str = "Relu"):
    """A stride-2 3x3 conv on a 64x64 map, then a 3x3 and a 1x1 conv: xnpu_lite's SRAM takes
    the first in 16 bands of 5 input rows that overlap by one, from two alternating buffers.
    With a Sigmoid after it, each band's output takes an in-place TABLE."""
    rng = np.random.default_rng(5)

    def weight(name, *shape):
        return numpy_helper.from_array((rng.standard_normal(shape) * 0.2).astype(np.float32), name)

    nodes = [
        helper.make_node("Conv", ["x", "w1", "b1"], ["c1"], name="conv1", kernel_shape=[3, 3], pads=[1, 1, 1, 1],
                         strides=[2, 2]),
        helper.make_node(activation, ["c1"], ["r1"], name="act1"),
        helper.make_node("Conv", ["r1", "w2", "b2"], ["c2"], name="conv2", kernel_shape=[3, 3], pads=[1, 1, 1, 1]),
        helper.make_node("Relu", ["c2"], ["r2"], name="relu2"),
        helper.make_node("Conv", ["r2", "w3", "b3"], ["y"], name="conv3", kernel_shape=[1, 1]),
    ]
    graph = helper.make_graph(
        nodes, "tiles", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 3, 64, 64])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, 8, 32, 32])],
        [weight("w1", 16, 3, 3, 3), weight("b1", 16), weight("w2", 16, 16, 3, 3), weight("b2", 16),
         weight("w3", 8, 16, 1, 1), weight("b3", 8)],
    )
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)])
    data = rng.standard_normal((7, 3, 64, 64)).astype(np.float32)
    return xnpu.compile(model, data[:4], target="xnpu_lite", progress=False), data[4:]


def assert_same_without(grouping: str, binary, x, grouped, monkeypatch) -> None:
    """The binary run again with the plan's `grouping` (machine_plan.tile_groups or
    channel_groups) switched off, every tile computed at its turn: the same codes and cycles as
    `grouped`. The machines are dropped before and after, so no plan outlives the patch."""
    monkeypatch.setattr(machine_plan, grouping, lambda *args: {})
    simulator._MACHINES.clear()
    alone = simulate(binary, x)
    simulator._MACHINES.clear()
    np.testing.assert_array_equal(grouped.codes["y"], alone.codes["y"])
    assert grouped.stats.cycles == alone.stats.cycles


@pytest.mark.parametrize("kernels", [False, True])
def test_tile_groups_equal_each_tile_at_its_turn(kernels, monkeypatch):
    """With onnxruntime's kernels (conv_kernels) for every convolution, and with numpy's GEMMs
    (where a union's sums need more than one float32 chunk)."""
    monkeypatch.setattr(conv_kernels, "MIN_PRODUCTS", 0 if kernels else 1 << 62)
    monkeypatch.setattr(conv_kernels, "MIN_PIXELS", 0)
    monkeypatch.setattr(ComputeUnits, "_worth_grouping", staticmethod(lambda *args: True))
    computed = []
    compute = ComputeUnits._compute_tiles
    monkeypatch.setattr(ComputeUnits, "_compute_tiles",
                        lambda self, *args, **kwargs: computed.append(compute(self, *args, **kwargs)))
    binary, x = _strided_stem()
    tiles = [step[3] for step in machine_for(binary).plan_of(binary).steps if step[3] is not None]
    assert len(tiles) == 16 and tiles[-1].last and tiles[0].group.rows == 64
    grouped = simulate(binary, x)
    assert len(computed) == 1  # the 16 tiles as one convolution
    assert_same_without("tile_groups", binary, x, grouped, monkeypatch)
    assert not any(step[3] for step in machine_for(binary).plan_of(binary).steps)


def test_tile_groups_take_their_tables_along(monkeypatch):
    """Each band's in-place TABLE (the Sigmoid) leaves its group open: the group's tiles are
    one convolution whose output rows are looked up in each TABLE's table, the same integers
    as every tile and TABLE at its turn."""
    monkeypatch.setattr(conv_kernels, "MIN_PRODUCTS", 0)
    monkeypatch.setattr(conv_kernels, "MIN_PIXELS", 0)
    monkeypatch.setattr(ComputeUnits, "_worth_grouping", staticmethod(lambda *args: True))
    computed = []
    compute = ComputeUnits._compute_tiles
    monkeypatch.setattr(ComputeUnits, "_compute_tiles", lambda self, pending, *args, **kwargs: computed.append(
        sum(table is not None for table in pending.tables)) or compute(self, pending, *args, **kwargs))
    simulator._MACHINES.clear()
    binary, x = _strided_stem("Sigmoid")
    steps = machine_for(binary).plan_of(binary).steps
    epilogues = [step[3] for step in steps if isinstance(step[3], TileEpilogue)]
    assert len(epilogues) == 16 and {tile.group.size for tile in epilogues} == {16}
    grouped = simulate(binary, x)
    assert computed == [15]  # every TABLE but the last tile's (which follows the group's result) waited for it
    assert_same_without("tile_groups", binary, x, grouped, monkeypatch)


def _table(addr: int, h: int = 1, w: int = 8, c: int = 16, out_addr: int | None = None, table_addr: int = 16384):
    return make_instruction("TABLE", in_addr=addr, out_addr=addr if out_addr is None else out_addr,
                            table_addr=table_addr, h=h, w=w, c=c)


def test_only_an_in_place_table_on_the_latest_tile_keeps_a_group_open():
    """A TABLE in place on the whole output of the group's latest tile joins it as that tile's
    epilogue; one on part of it, out of place, on an earlier tile's output, a second one, or
    one whose table lies in a pending output ends the group."""
    row = 8 * 16
    program = [_conv(0, 4096, 2, pad_top=1), _conv(row, 4096 + 4 * row), _conv(2 * row, 4096 + 8 * row, 2, pad_bottom=1)]
    alignment = load_target("xnpu_default").memory.channel_alignment

    def groups(instructions):
        found = tile_groups(instructions, footprints(instructions, alignment), 1 << 30)
        return {index: (type(tile).__name__, tile.position) for index, tile in found.items()}

    tiles = {0: ("Tile", 0), 2: ("Tile", 1), 4: ("Tile", 2)}
    with_tables = [program[0], _table(0), program[1], _table(row), program[2], _table(2 * row)]
    assert groups(with_tables) == {**tiles, 1: ("TileEpilogue", 0), 3: ("TileEpilogue", 1), 5: ("TileEpilogue", 2)}
    ended = {0: ("Tile", 0), 1: ("Tile", 1)}
    for between in (_table(0, w=4), _table(0, out_addr=8192), _table(0, table_addr=0)):
        assert groups([program[0], program[1], between, program[2]]) == ended
    assert groups([program[0], program[1], _table(row), _table(row), program[2]]) == {**ended, 2: ("TileEpilogue", 1)}


def _conv(out_addr: int, in_addr: int, in_h: int = 3, pad_top: int = 0, pad_bottom: int = 0):
    """A tile of one output row of a 3x3 conv on an 8-pixel wide, 16-channel map."""
    return make_instruction("CONV", in_addr=in_addr, weight_addr=8192, bias_addr=12288, rescale_addr=12544,
                            out_addr=out_addr, in_h=in_h, in_w=8, in_c=16, out_c=16, kernel_h=3, kernel_w=3, stride_h=1,
                            stride_w=1, dilation_h=1, dilation_w=1, pad_top=pad_top, pad_left=1, pad_bottom=pad_bottom,
                            pad_right=1, per_channel=1, bias=1)


def test_no_group_across_a_read_of_a_pending_output():
    """Three one-row tiles of a 3-row map, each from its own buffer; a STORE of the first tile's
    output between the second and the third must see it written, so the group ends at the second."""
    row = 8 * 16
    program = [_conv(0, 4096, 2, pad_top=1), _conv(row, 4096 + 4 * row),
               _conv(2 * row, 4096 + 8 * row, 2, pad_bottom=1)]
    store = make_instruction("STORE", layout=1, sram_addr=0, ddr_addr=0, d0=1, d1=8, d2=16)
    alignment = load_target("xnpu_default").memory.channel_alignment
    whole = tile_groups(program, footprints(program, alignment), 1 << 30)
    assert sorted(whole) == [0, 1, 2] and whole[2].last and whole[0].group.rows == 3
    interrupted = program[:2] + [store] + program[2:]
    groups = tile_groups(interrupted, footprints(interrupted, alignment), 1 << 30)
    assert sorted(groups) == [0, 1] and groups[1].last


def _channel_model():
    """A 3x3 conv of 256 channels into 96 on a 6x6 map: xnpu_lite's SRAM takes its weights in
    four tiles of 24 output channels, from two alternating buffers."""
    rng = np.random.default_rng(7)

    def weight(name, *shape):
        return numpy_helper.from_array((rng.standard_normal(shape) * 0.05).astype(np.float32), name)

    nodes = [helper.make_node("Conv", ["x", "w1", "b1"], ["c1"], name="conv1", kernel_shape=[3, 3], pads=[1, 1, 1, 1]),
             helper.make_node("Relu", ["c1"], ["r1"], name="relu1"),
             helper.make_node("Conv", ["r1", "w2", "b2"], ["y"], name="conv2", kernel_shape=[3, 3], pads=[1, 1, 1, 1])]
    graph = helper.make_graph(
        nodes, "channels", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 32, 6, 6])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, 96, 6, 6])],
        [weight("w1", 256, 32, 3, 3), weight("b1", 256), weight("w2", 96, 256, 3, 3), weight("b2", 96)])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)])
    data = rng.standard_normal((7, 32, 6, 6)).astype(np.float32)
    return xnpu.compile(model, data[:4], target="xnpu_lite", progress=False), data[4:]


@pytest.mark.parametrize("kernels", [False, True])
def test_channel_groups_equal_each_tile_at_its_turn(kernels, monkeypatch):
    """The four channel tiles as one convolution (with onnxruntime's kernels and with numpy's
    GEMMs): each tile's output channels are what it computes alone. The union here needs more
    scratch than the program's largest convolution, so the limit is lifted for the test."""
    monkeypatch.setattr(conv_kernels, "MIN_PRODUCTS", 0 if kernels else 1 << 62)
    monkeypatch.setattr(conv_kernels, "MIN_PIXELS", 0)
    monkeypatch.setattr(machine_plan, "channel_groups",
                        lambda program, prints, scratch, *rest: channel_groups(program, prints, 1 << 30, *rest))
    computed = []
    compute = ComputeUnits._compute_channels
    monkeypatch.setattr(ComputeUnits, "_compute_channels", lambda self, pending, shape: computed.append(
        len(pending.members)) or compute(self, pending, shape))
    simulator._MACHINES.clear()
    binary, x = _channel_model()
    steps = machine_for(binary).plan_of(binary).steps
    tiles = [step[3] for step in steps if step[3] is not None and hasattr(step[3], "channel")]
    assert [tile.channel for tile in tiles] == [0, 24, 48, 72] and tiles[-1].last
    grouped = simulate(binary, x)
    assert computed == [4]
    assert_same_without("channel_groups", binary, x, grouped, monkeypatch)


def _channel_conv(out_addr: int, weight_addr: int, in_addr: int = 0):
    """An output-channel tile of 16 channels of a 3x3 conv on a 3x8x16 map into 48 channels."""
    return make_instruction("CONV", in_addr=in_addr, weight_addr=weight_addr, bias_addr=weight_addr + 2304,
                            rescale_addr=weight_addr + 2368, out_addr=out_addr, in_h=3, in_w=8, in_c=16, out_c=16,
                            kernel_h=3, kernel_w=3, stride_h=1, stride_w=1, dilation_h=1, dilation_w=1, pad_top=1,
                            pad_left=1, pad_bottom=1, pad_right=1, out_pixel_stride=48, per_channel=1, bias=1)


def test_channel_groups_end_where_their_input_or_outputs_are_touched():
    """Three tiles of one layer, each its 16 of 48 channels, group; a STORE of the output, a
    LOAD into the input, or a tile writing an earlier tile's channels between them ends the
    group before it, and so does a union beyond the scratch limit."""
    out, buffers = 8192, (16384, 24576)
    program = [_channel_conv(out, buffers[0]), _channel_conv(out + 16, buffers[1]), _channel_conv(out + 32, buffers[0])]
    alignment = load_target("xnpu_default").memory.channel_alignment

    def groups(instructions, scratch=1 << 30):
        found = channel_groups(instructions, footprints(instructions, alignment), scratch, alignment)
        return {index: (tile.position, tile.channel, tile.last) for index, tile in found.items()}

    assert groups(program) == {0: (0, 0, False), 1: (1, 16, False), 2: (2, 32, True)}
    store = make_instruction("STORE", layout=1, sram_addr=out, ddr_addr=0, d0=1, d1=8, d2=16)
    load = make_instruction("LOAD", layout=1, sram_addr=0, ddr_addr=0, d0=1, d1=8, d2=16)
    for between in (store, load):
        assert groups(program[:2] + [between] + program[2:]) == {0: (0, 0, False), 1: (1, 16, True)}
    # a tile over channels 8-23: the first group ends before it, and it starts the next one
    assert groups(program[:2] + [_channel_conv(out + 8, buffers[1])] + program[2:]) == {
        0: (0, 0, False), 1: (1, 16, True), 2: (0, 0, False), 3: (1, 16, True)}
    assert groups([program[0], program[0]]) == {}  # the same channels twice
    # a tile whose weights lie where the first tile's output rows are yet to be written
    assert groups(program[:2] + [_channel_conv(out + 32, out + 5 * 48)]) == {0: (0, 0, False), 1: (1, 16, True)}
    assert groups(program[:2] + [_channel_conv(out + 32, buffers[0], in_addr=4096)]) == {
        0: (0, 0, False), 1: (1, 16, True)}  # another input
    assert groups(program, instruction_scratch_bytes(program[0], 16)) == {}
    assert groups(program, instruction_scratch_bytes(program[0], 32)) == {0: (0, 0, False), 1: (1, 16, True)}


def test_combs_overlap_as_byte_sets():
    """_combs_overlap against the byte sets themselves, over small strides, widths and offsets
    (maps of two strides: by their extents, which may only say more)."""
    for stride, stride_b in ((1, 1), (3, 3), (8, 8), (3, 8)):
        for pixels in (1, 2, 4):
            for width_a in range(1, 10):
                for width_b in range(1, 10):
                    for b in range(-20, 21):
                        first = {p * stride + k for p in range(pixels) for k in range(width_a)}
                        second = {b + p * stride_b + k for p in range(pixels) for k in range(width_b)}
                        found = _combs_overlap((0, width_a, stride), (b, width_b, stride_b), pixels)
                        if stride == stride_b:
                            assert found == bool(first & second), (stride, pixels, width_a, width_b, b)
                        else:
                            assert found >= bool(first & second), (stride, stride_b, pixels, width_a, width_b, b)
