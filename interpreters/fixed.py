"""Runs `fixed` ops on numpy arrays by calling the integer semantics module.

Each implementation only translates the op's properties into a call of
`xnpu.semantics.fixed_point` (which works in int64) and stores the result in the numpy
dtype of the result's width (i24 in int32), as the runner and the lower levels expect.
"""

from __future__ import annotations

from typing import Any

import numpy as np
from xdsl.interpreter import Interpreter, InterpreterFunctions, impl, register_impls

from xnpu.dialects import fixed
from xnpu.dialects.nn import ints
from xnpu.interpreters import ConstantCache
from xnpu.interpreters.batching import batch_shape
from xnpu.semantics import convolution, windows
from xnpu.semantics import fixed_point as fp


def _store(op, values: np.ndarray) -> np.ndarray:
    return np.ascontiguousarray(values, dtype=fp.storage_dtype(fixed.width_of(op.results[0])))


def _bits(op) -> int:
    return fixed.width_of(op.results[0])


@register_impls
class FixedFunctions(InterpreterFunctions):
    def __init__(self) -> None:
        self.constants = ConstantCache()

    @impl(fixed.ConstantOp)
    def run_constant(self, interpreter: Interpreter, op: fixed.ConstantOp, args: tuple[Any, ...]):
        return (self.constants.get(op, op.to_numpy),)

    @impl(fixed.QuantizeOp)
    def run_quantize(self, interpreter: Interpreter, op: fixed.QuantizeOp, args: tuple[Any, ...]):
        return (_store(op, fp.quantize(args[0], op.scale.value.data, _bits(op))),)

    @impl(fixed.DequantizeOp)
    def run_dequantize(self, interpreter: Interpreter, op: fixed.DequantizeOp, args: tuple[Any, ...]):
        axis = None if op.axis is None else op.axis.value.data % args[0].ndim
        return (fp.dequantize(args[0], op.scales(), axis),)

    @impl(fixed.RescaleOp)
    def run_rescale(self, interpreter: Interpreter, op: fixed.RescaleOp, args: tuple[Any, ...]):
        values = fp.rescale(args[0], ints(op.multiplier), ints(op.shift), _bits(op), op.channel_axis())
        return (_store(op, values),)

    @impl(fixed.ShiftOp)
    def run_shift(self, interpreter: Interpreter, op: fixed.ShiftOp, args: tuple[Any, ...]):
        shifted = fp.shift_arithmetic(args[0], op.shift.value.data, bool(op.rounding.value.data))
        return (_store(op, fp.saturate(shifted, _bits(op))),)

    @impl(fixed.ClampOp)
    def run_clamp(self, interpreter: Interpreter, op: fixed.ClampOp, args: tuple[Any, ...]):
        return (_store(op, fp.clamp(args[0], *op.bounds())),)

    @impl(fixed.AddOp)
    def run_add(self, interpreter: Interpreter, op: fixed.AddOp, args: tuple[Any, ...]):
        return (_store(op, fp.add_widening(args[0], args[1], *op.params(), _bits(op))),)

    @impl(fixed.SubOp)
    def run_sub(self, interpreter: Interpreter, op: fixed.SubOp, args: tuple[Any, ...]):
        return (_store(op, fp.add_widening(args[0], args[1], *op.params(), _bits(op), subtract=True)),)

    @impl(fixed.MulOp)
    def run_mul(self, interpreter: Interpreter, op: fixed.MulOp, args: tuple[Any, ...]):
        return (_store(op, fp.mul_widening(args[0], args[1], _bits(op))),)

    @impl(fixed.Conv2dOp)
    def run_conv2d(self, interpreter: Interpreter, op: fixed.Conv2dOp, args: tuple[Any, ...]):
        bias = args[2] if op.bias is not None else None
        values = convolution.conv2d_int(
            args[0], args[1], bias, ints(op.strides), ints(op.pads), ints(op.dilations), op.group.value.data, _bits(op)
        )
        return (_store(op, values),)

    @impl(fixed.ConvTranspose2dOp)
    def run_conv_transpose2d(self, interpreter: Interpreter, op: fixed.ConvTranspose2dOp, args: tuple[Any, ...]):
        bias = args[2] if op.bias is not None else None
        values = convolution.conv_transpose2d_int(
            args[0], args[1], bias, ints(op.strides), ints(op.pads), ints(op.dilations), ints(op.output_padding),
            op.group.value.data, _bits(op),
        )
        return (_store(op, values),)

    @impl(fixed.GemmOp)
    def run_gemm(self, interpreter: Interpreter, op: fixed.GemmOp, args: tuple[Any, ...]):
        bias = args[2] if op.bias is not None else None
        return (_store(op, convolution.gemm_int(args[0], args[1], bias, bool(op.trans_b.value.data), _bits(op))),)

    @impl(fixed.MaxPoolOp)
    def run_max_pool(self, interpreter: Interpreter, op: fixed.MaxPoolOp, args: tuple[Any, ...]):
        values = windows.max_pool_int(
            args[0], ints(op.kernel_shape), ints(op.strides), ints(op.pads), op.pool_dilations(), op.out_hw()
        )
        return (_store(op, values),)

    @impl(fixed.AvgPoolOp)
    def run_avg_pool(self, interpreter: Interpreter, op: fixed.AvgPoolOp, args: tuple[Any, ...]):
        values = windows.avg_pool_int(
            args[0], ints(op.kernel_shape), ints(op.strides), ints(op.pads), op.out_hw(),
            ints(op.multiplier), ints(op.shift), _bits(op),
        )
        return (_store(op, values),)

    @impl(fixed.GlobalAvgPoolOp)
    def run_global_avg_pool(self, interpreter: Interpreter, op: fixed.GlobalAvgPoolOp, args: tuple[Any, ...]):
        return (_store(op, fp.saturate(windows.global_avg_pool_sum_int(args[0]), _bits(op))),)

    @impl(fixed.TableOp)
    def run_table(self, interpreter: Interpreter, op: fixed.TableOp, args: tuple[Any, ...]):
        return (_store(op, fp.table_lookup(args[0], op.entries())),)

    @impl(fixed.ReshapeOp)
    def run_reshape(self, interpreter: Interpreter, op: fixed.ReshapeOp, args: tuple[Any, ...]):
        return (_store(op, fp.reshape(args[0], batch_shape(args[0], fixed.shape_of(op.result)))),)

    @impl(fixed.FlattenOp)
    def run_flatten(self, interpreter: Interpreter, op: fixed.FlattenOp, args: tuple[Any, ...]):
        return (_store(op, fp.reshape(args[0], batch_shape(args[0], fixed.shape_of(op.result)))),)

    @impl(fixed.TransposeOp)
    def run_transpose(self, interpreter: Interpreter, op: fixed.TransposeOp, args: tuple[Any, ...]):
        return (_store(op, fp.transpose(args[0], ints(op.perm))),)

    @impl(fixed.ConcatOp)
    def run_concat(self, interpreter: Interpreter, op: fixed.ConcatOp, args: tuple[Any, ...]):
        return (_store(op, fp.concat(args, op.axis.value.data)),)

    @impl(fixed.ResizeOp)
    def run_resize(self, interpreter: Interpreter, op: fixed.ResizeOp, args: tuple[Any, ...]):
        return (_store(op, fp.resize_nearest(args[0], ints(op.rows), ints(op.cols))),)

    @impl(fixed.ResizeLinearOp)
    def run_resize_linear(self, interpreter: Interpreter, op: fixed.ResizeLinearOp, args: tuple[Any, ...]):
        return (_store(op, fp.saturate(windows.resize_linear_sum(args[0], *op.taps()), _bits(op))),)
