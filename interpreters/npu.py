"""Runs `npu` ops on numpy arrays: each op computes through its unit function in
`xnpu.semantics.fixed_point` (dialects/npu.py `compute`), the one the simulator runs too.

Data movement ops move codes: reshape and transpose as R16, concat along its axis, an
interleave of phases and an edge pad (R16's DMA moves), and a relayout (a DMA copy into
another storage order) is the identity on the logical tensor.
A host segment (`npu.host`) runs its region with the same interpreter: its fixed ops through
the fixed functions, its float ops through the nn functions, as at the fixed level.
"""

from __future__ import annotations

from typing import Any

import numpy as np
from xdsl.interpreter import Interpreter, InterpreterFunctions, ReturnedValues, impl, impl_terminator, register_impls

from xnpu.dialects import npu
from xnpu.dialects.shapes import ints, shape_of
from xnpu.semantics import fixed_point as fp


def _int8(values: np.ndarray) -> np.ndarray:
    return np.ascontiguousarray(values, dtype=fp.storage_dtype(8))


@register_impls
class NpuFunctions(InterpreterFunctions):
    @impl(npu.ConvOp)
    def run_conv(self, interpreter: Interpreter, op: npu.ConvOp, args: tuple[Any, ...]):
        bias = args[2] if op.bias is not None else None
        return (_int8(op.compute(args[0], args[1], bias)),)

    @impl(npu.EltwiseOp)
    def run_eltwise(self, interpreter: Interpreter, op: npu.EltwiseOp, args: tuple[Any, ...]):
        return (_int8(op.compute(args[0], args[1])),)

    @impl(npu.PoolOp)
    def run_pool(self, interpreter: Interpreter, op: npu.PoolOp, args: tuple[Any, ...]):
        return (_int8(op.compute(args[0])),)

    @impl(npu.TableOp)
    def run_table(self, interpreter: Interpreter, op: npu.TableOp, args: tuple[Any, ...]):
        return (_int8(fp.table_lookup(args[0], op.entries())),)

    @impl(npu.ClampOp)
    def run_clamp(self, interpreter: Interpreter, op: npu.ClampOp, args: tuple[Any, ...]):
        return (_int8(fp.clamp(args[0], *op.bounds())),)

    @impl(npu.ReshapeOp)
    def run_reshape(self, interpreter: Interpreter, op: npu.ReshapeOp, args: tuple[Any, ...]):
        return (_int8(fp.reshape(args[0], shape_of(op.result))),)

    @impl(npu.TransposeOp)
    def run_transpose(self, interpreter: Interpreter, op: npu.TransposeOp, args: tuple[Any, ...]):
        return (_int8(fp.transpose(args[0], ints(op.perm))),)

    @impl(npu.ConcatOp)
    def run_concat(self, interpreter: Interpreter, op: npu.ConcatOp, args: tuple[Any, ...]):
        return (_int8(fp.concat(args, op.axis.value.data)),)

    @impl(npu.InterleaveOp)
    def run_interleave(self, interpreter: Interpreter, op: npu.InterleaveOp, args: tuple[Any, ...]):
        return (_int8(op.compute(args)),)

    @impl(npu.PadOp)
    def run_pad(self, interpreter: Interpreter, op: npu.PadOp, args: tuple[Any, ...]):
        return (_int8(op.compute(args[0])),)

    @impl(npu.RelayoutOp)
    def run_relayout(self, interpreter: Interpreter, op: npu.RelayoutOp, args: tuple[Any, ...]):
        return (args[0],)

    @impl(npu.HostOp)
    def run_host(self, interpreter: Interpreter, op: npu.HostOp, args: tuple[Any, ...]):
        return interpreter.run_ssacfg_region(op.body, args, "npu.host")

    @impl_terminator(npu.HostYieldOp)
    def run_host_yield(self, interpreter: Interpreter, op: npu.HostYieldOp, args: tuple[Any, ...]):
        return ReturnedValues(args), ()
