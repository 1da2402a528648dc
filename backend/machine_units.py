"""The compute units of the simulated machine: CONV, ELTWISE, POOL, TABLE, CLAMP.

Each unit reads int8 maps out of SRAM, calls `xnpu.semantics.fixed_point` (the one
implementation of docs/fixed-point.md) and writes its saturated int8 result back, so a program
run here agrees bit for bit with the `fixed` interpreter by construction. Every map has a
leading sample axis (backend/machine_memory.py): one call computes every sample, a
convolution's GEMM with the samples' pixels as its rows. Weights and requantization that came
from the constant image are prepared once per binary; what an instruction's fields alone give
(its checks, its maps' views, ELTWISE's loop constants) once per binary's plan
(MachineMemory._decode), so a run does only the data's work and the constants' bookkeeping.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import numpy as np

from xnpu.backend.machine_conv_tiles import ChannelGroup, ChannelTile, Tile, TileEpilogue, TileGroup
from xnpu.backend.machine_memory import RESCALE_RECORD, MachineMemory
from xnpu.core.errors import XnpuError
from xnpu.semantics import conv_kernels, convolution, units
from xnpu.semantics import fixed_point as fp
from xnpu.target.cost import conv_output_hw
from xnpu.target.footprints import conv_output_bytes
from xnpu.target.encoding import BROADCASTS, ELTWISE_OPS, POOL_KINDS, Instruction

INT8_BITS = 8


@dataclass(frozen=True)
class ConvShape:
    """What a CONV's fields alone give: its map sizes, window and reduction length."""

    instruction: Instruction
    h: int
    w: int
    c: int
    o: int
    oh: int
    ow: int
    depthwise: bool
    strides: tuple[int, int]
    pads: tuple[int, int, int, int]
    dilations: tuple[int, int]
    reduction: int
    x: np.ndarray  # the input map's view
    in_bytes: int
    out: tuple  # the output map's region (MachineMemory._output_region)
    operands: tuple  # (SRAM address, bytes) of the weights, the rescale records and the bias (if any)
    memo: list  # the last run's [constants found at `operands`, (weights, requantization)] (_kept_operands)


_ELTWISE_NAMES = {code: name for name, code in ELTWISE_OPS.items()}
_POOL_NAMES = {code: name for name, code in POOL_KINDS.items()}


@dataclass(frozen=True)
class _EltwiseStep:
    """What an ELTWISE's fields alone give: its maps' views, its loop's constants (checked)."""

    a: np.ndarray
    a_bytes: int
    b: np.ndarray
    b_bytes: int
    factors: tuple  # units.eltwise_factors
    out: tuple


@dataclass(frozen=True)
class _PoolStep:
    """What a POOL's fields alone give: its checked window and rescale, its maps' views."""

    kind: str
    x: np.ndarray
    in_bytes: int
    kernel: tuple[int, int]
    strides: tuple[int, int]
    pads: tuple
    out_hw: tuple[int, int]
    multiplier: int
    shift: int
    per_position: bool  # avg's rescale records are read at each run
    out: tuple


class _PendingTiles:
    """The tiles of a group that have run: the union map their input rows filled (rows [0,
    filled)), where each writes its output rows, and the table its in-place TABLE looks them up
    in (None: written as they are)."""

    def __init__(self, group: TileGroup, weights, requant, union: np.ndarray):
        self.group = group
        self.weights = weights
        self.requant = requant
        self.union = union
        self.filled = 0
        self.outputs: list[tuple[np.ndarray, int, int]] = []
        self.positions: list[int] = []
        self.tables: list[np.ndarray | None] = []

    def admits(self, weights, requant, x: np.ndarray, row: int) -> bool:
        """The same prepared operands, and rows equal to the union's where they overlap."""
        if weights is not self.weights or requant is not self.requant:
            return False
        overlap = min(self.filled - row, x.shape[1])
        return overlap <= 0 or bool(np.array_equal(self.union[:, row : row + overlap], x[:, :overlap]))

    def add(self, x: np.ndarray, row: int, out: np.ndarray, out_row: int, rows: int, position: int) -> None:
        start = max(self.filled - row, 0)
        self.union[:, row + start : row + x.shape[1]] = x[:, start:]
        self.filled = max(self.filled, row + x.shape[1])
        self.outputs.append((out, out_row, rows))
        self.positions.append(position)
        self.tables.append(None)

    def pads(self, complete: bool) -> tuple[int, int, int, int]:
        """The union's padding; a part of the group ends on a tile without bottom padding."""
        top, left, bottom, right = self.group.pads
        return top, left, bottom if complete else 0, right


class _PendingChannels:
    """The tiles of a channel group that have run: the input map they all read, and each one's
    prepared weights, requantization and output view."""

    def __init__(self, x: np.ndarray):
        self.x = x
        self.members: list[tuple[convolution.ExactWeights, convolution.Requantization, np.ndarray]] = []


class ComputeUnits(MachineMemory):
    """The units that compute (docs/isa.md, formats CONV to CLAMP); a part of the Machine."""

    _pending_tiles: dict[TileGroup | ChannelGroup, _PendingTiles | _PendingChannels]

    def _conv(self, i: Instruction) -> None:
        shape = self._conv_shape(i)
        self._reading(i["in_addr"], shape.in_bytes)
        weights, requant = self._conv_operands(i, shape)
        units.conv_unit_nhwc(shape.x, weights, requant, shape.strides, shape.pads, shape.dilations,
                             out=self._writing(shape.out))

    def _tile_step(self, i: Instruction, tile: Tile | ChannelTile | TileEpilogue) -> None:
        """A step of a group (backend/machine_conv_tiles.py): a CONV of a row or channel group,
        or an in-place TABLE on a row tile's output."""
        if isinstance(tile, TileEpilogue):
            self._tile_epilogue(i, tile)
        elif isinstance(tile, ChannelTile):
            self._conv_channel_tile(i, tile)
        else:
            self._conv_tile(i, tile)

    def _tile_epilogue(self, i: Instruction, epilogue: TileEpilogue) -> None:
        """An in-place TABLE on a row tile's whole output: where that output is pending (the tile
        joined its group's union, which is not computed yet), the table read now is kept with it
        and looked up when the group is computed; nothing touches those bytes in between (the
        plan's footprints). Else a TABLE at its turn."""
        pending = self._pending_tiles.get(epilogue.group)
        if pending is None or not pending.positions or pending.positions[-1] != epilogue.position:
            self._table(i)
            return
        _, _, _, spans, memo = self._decode(i, self._table_step)
        pending.tables[-1] = self._kept_operands(memo, spans, lambda: self._lookup_table(i["table_addr"]))

    def _conv_tile(self, i: Instruction, tile: Tile) -> None:
        """A CONV of a tile group (backend/machine_conv_tiles.py): its input rows join the group's
        map now, its output is written when the group's last tile has run. A tile whose weights
        or requantization are not the group's prepared ones, or whose rows differ from the rows
        an earlier tile brought, runs on its own (the tiles before it are computed first)."""
        shape = self._conv_shape(i)
        self._reading(i["in_addr"], shape.in_bytes)
        x = shape.x
        weights, requant = self._conv_operands(i, shape)
        out = self._writing(shape.out)
        group = tile.group
        pending = self._pending_tiles.pop(group, None)
        if tile.position == 0 and self._worth_grouping(shape, group, x.shape[0]) and \
                self._prepared_operands(weights, requant):
            union = np.zeros((x.shape[0], group.rows, shape.w, shape.c), np.int8)
            pending = _PendingTiles(group, weights, requant, union)
        elif pending is not None and not pending.admits(weights, requant, x, tile.row):
            self._compute_tiles(pending, shape, complete=False)
            pending = None
        if pending is None:
            units.conv_unit_nhwc(x, weights, requant, shape.strides, shape.pads, shape.dilations, out=out)
            return
        pending.add(x, tile.row, out, tile.out_row, shape.oh, tile.position)
        if tile.last:
            self._compute_tiles(pending, shape, complete=True)
        else:
            self._pending_tiles[group] = pending

    @staticmethod
    def _worth_grouping(shape: ConvShape, group: TileGroup, samples: int) -> bool:
        """Only where the union takes onnxruntime's kernels (semantics/conv_kernels.py): with
        numpy's GEMMs a union was slower than its tiles (segnet_like 43.9 against 37.7 ms of
        CPU an image), with the kernels faster (34.5 against 37.4)."""
        taps = shape.instruction["kernel_h"] * shape.instruction["kernel_w"]
        products = samples * group.out_rows * shape.ow * shape.o * shape.reduction
        return not shape.depthwise and conv_kernels.takes(taps, products, group.rows * shape.w)

    def _prepared_operands(self, weights, requant) -> bool:
        """Both prepared once per binary (kept in `_prepared`), so a later tile that gets the same
        objects reads the same values."""
        kept = self._prepared.values()
        return any(value is weights for value in kept) and any(value is requant for value in kept)

    def _compute_tiles(self, pending: _PendingTiles, shape: ConvShape, complete: bool) -> None:
        """One convolution over the pending tiles' rows, each tile's output rows written where it
        writes them (through its TABLE's table, if it has one); without `complete` the last pending
        tile's bottom padding is the union's."""
        y = units.conv_unit_nhwc(pending.union[:, : pending.filled], pending.weights, pending.requant, shape.strides,
                                 pending.pads(complete), shape.dilations)
        for (out, out_row, rows), table in zip(pending.outputs, pending.tables):
            if table is None:
                out[...] = y[:, out_row : out_row + rows]
            else:
                fp.int8_table_lookup(y[:, out_row : out_row + rows], table, out=out)

    def _conv_channel_tile(self, i: Instruction, tile: ChannelTile) -> None:
        """A CONV of a channel group (backend/machine_conv_tiles.py): its prepared weights and
        requantization are kept now, its output is written when the group's last tile has run,
        all tiles as one convolution. A tile whose operands are not prepared once per binary
        runs on its own (the tiles before it are computed first)."""
        shape = self._conv_shape(i)
        self._reading(i["in_addr"], shape.in_bytes)
        weights, requant = self._conv_operands(i, shape)
        out = self._writing(shape.out)
        pending = self._pending_tiles.pop(tile.group, None)
        prepared = self._prepared_operands(weights, requant)
        if tile.position == 0 and prepared:
            pending = _PendingChannels(shape.x)
        elif pending is not None and not (prepared and pending.x is shape.x):
            self._compute_channels(pending, shape)
            pending = None
        if pending is None:
            units.conv_unit_nhwc(shape.x, weights, requant, shape.strides, shape.pads, shape.dilations, out=out)
            return
        pending.members.append((weights, requant, out))
        if tile.last:
            self._compute_channels(pending, shape)
        else:
            self._pending_tiles[tile.group] = pending

    def _compute_channels(self, pending: _PendingChannels, shape: ConvShape) -> None:
        """One convolution with the pending tiles' weights side by side, each tile's columns
        requantized into its output (a lone tile: its own convolution)."""
        weights, requants, outs = zip(*pending.members)
        if len(weights) == 1:
            units.conv_unit_nhwc(pending.x, weights[0], requants[0], shape.strides, shape.pads, shape.dilations,
                                 out=outs[0])
            return
        units.conv_units_nhwc(pending.x, self._stacked_weights(weights), requants, shape.strides, shape.pads,
                              shape.dilations, outs)

    def _stacked_weights(self, parts: tuple) -> convolution.ExactWeights:
        """convolution.stacked_weights of prepared weights, made once per binary (kept in
        `_prepared` beside the parts it was made of)."""
        key = ("stacked", tuple(id(part) for part in parts))
        kept = self._prepared.get(key)
        if kept is not None and all(a is b for a, b in zip(kept[0], parts)):
            return kept[1]
        stacked = convolution.stacked_weights(parts)
        self._prepared[key] = (parts, stacked)
        return stacked

    def _conv_shape(self, i: Instruction) -> ConvShape:
        """A CONV's sizes, checked, and its maps' views: once per instruction within a binary's
        runs (its fields do not change), ~40% of a small convolution's time when they were
        derived every run."""
        return self._decode(i, self._new_conv_shape)

    def _new_conv_shape(self, i: Instruction) -> ConvShape:
        _positive(i, "in_h", "in_w", "in_c", "out_c", "kernel_h", "kernel_w", "stride_h", "stride_w", "dilation_h", "dilation_w")
        h, w, c, o = i["in_h"], i["in_w"], i["in_c"], i["out_c"]
        kh, kw = i["kernel_h"], i["kernel_w"]
        oh, ow = conv_output_hw(i)
        if oh < 1 or ow < 1:
            raise XnpuError(f"the {kh}x{kw} kernel leaves no output on the padded {h}x{w} input")
        depthwise = bool(i["depthwise"])
        if depthwise and c != o:
            raise XnpuError(f"depthwise needs in_c == out_c, got {c} and {o}")
        _disjoint(("input", i["in_addr"], self._map_bytes(h, w, c)),
                  ("output", i["out_addr"], conv_output_bytes(i, self.target.memory.channel_alignment)))
        return ConvShape(i, h, w, c, o, oh, ow, depthwise, (i["stride_h"], i["stride_w"]),
                         (i["pad_top"], i["pad_left"], i["pad_bottom"], i["pad_right"]),
                         (i["dilation_h"], i["dilation_w"]), kh * kw * (1 if depthwise else c),
                         self._feature_map(i["in_addr"], h, w, c), self._map_bytes(h, w, c),
                         self._output_region(i["out_addr"], oh, ow, o, i["out_pixel_stride"]),
                         self._conv_operand_spans(i, depthwise), [])

    def _conv_operand_spans(self, i: Instruction, depthwise: bool) -> tuple:
        """(SRAM address, bytes) of a CONV's weights, its rescale records and its bias (if it has one)."""
        c, o, kh, kw = i["in_c"], i["out_c"], i["kernel_h"], i["kernel_w"]
        weight_bytes = self.align(c) * kh * kw if depthwise else self.align(o) * kh * kw * self.align(c)
        spans = ((i["weight_addr"], weight_bytes),
                 (i["rescale_addr"], (o if i["per_channel"] else 1) * RESCALE_RECORD.itemsize))
        return spans + ((i["bias_addr"], 4 * o),) if i["bias"] else spans

    def _conv_operands(self, i: Instruction, shape: ConvShape) -> tuple:
        """(weights, requantization) of a CONV, kept between runs (_kept_operands)."""
        return self._kept_operands(shape.memo, shape.operands, lambda: (self._conv_weights(i, shape.depthwise),
                                                                       self._requantization(i, shape.reduction)))

    def _kept_operands(self, memo: list, spans: tuple, prepare: Callable[[], Any]) -> Any:
        """`prepare()` of an instruction's constant operands at SRAM `spans` ((address, bytes)
        each), or what it gave on the last run while SRAM holds the same constants there (the
        same LOADs' bytes, prepared once per binary): a run then only asks which constants lie
        there. `memo` keeps [the constants found, the prepared operands] between runs."""
        origins = [self._constant_origin(address, size) for address, size in spans]
        if memo and memo[0] == origins and None not in origins:
            return memo[1]
        prepared = prepare()
        memo[:] = origins, prepared
        return prepared

    def _constant_origin(self, address: int, size: int) -> tuple | None:
        """Which constants SRAM [address, address + size) holds (the LOAD that brought them and
        the offset into it), or None if it is not known to hold constants."""
        found = self._sram_constants.containing(address, size)
        return None if found is None else (found[1][1], address - found[0])

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
        bias = self._shared(self._span(self._sram_rows, "SRAM", i["bias_addr"], 4 * o), i["bias_addr"], 4 * o).view("<i4") \
            if i["bias"] else None
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
        raw = self._shared(self._span(self._sram_rows, "SRAM", address, size), address, size).view(np.int8)
        weight = raw.reshape(cp, kh, kw)[:c].transpose(1, 2, 0) if depthwise else raw.reshape(op, kh, kw, ip)[:o, :, :, :c]
        if key is not None:
            weight = np.array(weight)  # a copy: what is kept must not follow later writes to this SRAM
        prepared = weight if depthwise else convolution.ExactWeights(weight, kept=key is not None)
        if key is not None:
            self._prepared[key] = prepared
        return prepared

    def _eltwise(self, i: Instruction) -> None:
        step = self._decode(i, self._eltwise_step)
        self._reading(i["a_addr"], step.a_bytes)
        self._reading(i["b_addr"], step.b_bytes)
        y = units.eltwise_prepared(step.a, step.b, step.factors)
        self._writing(step.out)[...] = y

    def _eltwise_step(self, i: Instruction) -> _EltwiseStep:
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
            b = self._span(self._sram_rows, "SRAM", i["b_addr"], 1).view(np.int8).reshape(-1, 1, 1, 1)
        else:
            b = self._feature_map(i["b_addr"], *b_shape)
        op = _ELTWISE_NAMES[i["op"]]
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
        factors = units.eltwise_factors(op, i["out_multiplier"], i["out_shift"], relu_flag=bool(i["relu"]), **rescales)
        return _EltwiseStep(a, out_bytes, b, b_bytes, factors, self._output_region(i["out_addr"], h, w, c))

    def _pool(self, i: Instruction) -> None:
        step = self._decode(i, self._pool_step)
        self._reading(i["in_addr"], step.in_bytes)
        multiplier, shift = step.multiplier, step.shift
        if step.per_position:
            multiplier, shift = self._rescale_records(i["rescale_addr"], step.out_hw[0] * step.out_hw[1])
        y = units.pool_unit(step.kind, step.x, step.kernel, step.strides, step.pads, step.out_hw, multiplier, shift)
        if step.kind == "max" and y.size and y.min() < np.iinfo(np.int8).min:
            raise XnpuError("a max-pool window lies entirely in the padding")
        self._writing(step.out)[...] = y.transpose(0, 2, 3, 1)

    def _pool_step(self, i: Instruction) -> _PoolStep:
        _positive(i, "in_h", "in_w", "c", "out_h", "out_w")
        kind = i["kind"]
        h, w, c = i["in_h"], i["in_w"], i["c"]
        out_hw = (i["out_h"], i["out_w"])
        x = self._feature_map(i["in_addr"], h, w, c).transpose(0, 3, 1, 2)
        if i["per_position"] and kind != POOL_KINDS["avg"]:
            raise XnpuError("per_position is for avg pooling only")
        name = _POOL_NAMES[kind]
        window = ("kernel_h", "kernel_w", "stride_h", "stride_w", "pad_top", "pad_left", "pad_bottom", "pad_right")
        kernel, strides, pads = (i["kernel_h"], i["kernel_w"]), (i["stride_h"], i["stride_w"]), tuple(i[f] for f in window[4:])
        multiplier, shift = i["out_multiplier"], i["out_shift"]
        per_position = False
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
                per_position = True  # the records are read from SRAM at every run
            elif name == "avg":
                fp.check_multiplier(multiplier, shift)
        return _PoolStep(name, x, self._map_bytes(h, w, c), kernel, strides, pads, out_hw, multiplier, shift,
                         per_position, self._output_region(i["out_addr"], *out_hw, c))

    def _table(self, i: Instruction) -> None:
        x, in_bytes, out, spans, memo = self._decode(i, self._table_step)
        self._reading(i["in_addr"], in_bytes)
        table = self._kept_operands(memo, spans, lambda: self._lookup_table(i["table_addr"]))
        if out is not None:
            fp.int8_table_lookup(x, table, out=self._writing(out))
        else:
            self._write_feature_map(i["out_addr"], fp.int8_table_lookup(x, table))

    def _table_step(self, i: Instruction) -> tuple:
        """(the input's view, its bytes, the output's region, or None where the two overlap in part,
        the table's SRAM span, the memo of _kept_operands)."""
        _positive(i, "h", "w", "c")
        x = self._feature_map(i["in_addr"], i["h"], i["w"], i["c"])
        size = self._map_bytes(i["h"], i["w"], i["c"])
        apart = abs(i["in_addr"] - i["out_addr"]) >= size
        # in place or apart: element by element into the output (a partial overlap would read
        # what the lookup already wrote)
        out = self._output_region(i["out_addr"], i["h"], i["w"], i["c"]) if i["in_addr"] == i["out_addr"] or apart \
            else None
        return x, size, out, ((i["table_addr"], fp.TABLE_SIZE),), []

    def _lookup_table(self, address: int) -> np.ndarray:
        """The 256-entry table at SRAM `address`, prepared for int8 lookups; once per binary when
        a LOAD brought it from the constant image (a third of a TABLE's time when done every run)."""
        origin = self._constant_origin(address, fp.TABLE_SIZE)
        key = None if origin is None else ("table", origin)
        prepared = None if key is None else self._prepared.get(key)
        if prepared is None:
            raw = self._shared(self._span(self._sram_rows, "SRAM", address, fp.TABLE_SIZE), address, fp.TABLE_SIZE)
            prepared = fp.int8_lookup_table(raw.view(np.int8))
            if key is not None:
                self._prepared[key] = prepared
        return prepared

    def _clamp(self, i: Instruction) -> None:
        x, in_bytes, out = self._decode(i, self._clamp_step)
        self._reading(i["in_addr"], in_bytes)
        y = fp.clamp(x, i["min"], i["max"])
        self._writing(out)[...] = y

    def _clamp_step(self, i: Instruction) -> tuple:
        """(the input's view, its bytes, the output's region)."""
        _positive(i, "h", "w", "c")
        low, high = fp.storage_range(INT8_BITS)
        if not low <= i["min"] <= i["max"] <= high:
            raise XnpuError(f"clamp bounds [{i['min']}, {i['max']}] are not an ordered range inside int8")
        return (self._feature_map(i["in_addr"], i["h"], i["w"], i["c"]), self._map_bytes(i["h"], i["w"], i["c"]),
                self._output_region(i["out_addr"], i["h"], i["w"], i["c"]))


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
