"""Runs `nn` ops on numpy arrays by calling the float semantics module.

A pointwise op (nn.PointwiseOp) runs its own `function`: the op's definition is its only
home, so a new activation needs no implementation here. An `nn.onnx` op runs onnxruntime
on the model it carries (semantics/onnx_runtime.py)."""

from __future__ import annotations

from typing import Any

import numpy as np
from xdsl.interpreter import Interpreter, InterpreterFunctions, impl, register_impls
from xdsl.utils.exceptions import VerifyException

from xnpu.core.errors import XnpuError
from xnpu.dialects import nn
from xnpu.interpreters import ConstantCache
from xnpu.interpreters.batching import batch_shape
from xnpu.ir.io import describe_op
from xnpu.semantics import float_ops, onnx_runtime


def _out_hw(op: nn.WindowPoolOp) -> tuple[int, int]:
    shape = nn.shape_of(op.result)
    return shape[2], shape[3]


class NNFunctions(InterpreterFunctions):
    def __init__(self) -> None:
        self.constants = ConstantCache()

    @impl(nn.ConstantOp)
    def run_constant(self, interpreter: Interpreter, op: nn.ConstantOp, args: tuple[Any, ...]):
        return (self.constants.get(op, op.to_numpy),)

    @impl(nn.ClipOp)
    def run_clip(self, interpreter: Interpreter, op: nn.ClipOp, args: tuple[Any, ...]):
        low, high = op.bounds()
        bound_args = iter(args[1:])  # the operand bounds, in order min, max
        if op.min_value is not None:
            low = float(np.asarray(next(bound_args)).reshape(()))
        if op.max_value is not None:
            high = float(np.asarray(next(bound_args)).reshape(()))
        return (float_ops.clip(args[0], low, high),)

    @impl(nn.SoftmaxOp)
    def run_softmax(self, interpreter: Interpreter, op: nn.SoftmaxOp, args: tuple[Any, ...]):
        return (float_ops.softmax(args[0], op.axis.value.data),)

    @impl(nn.LayerNormOp)
    def run_layer_norm(self, interpreter: Interpreter, op: nn.LayerNormOp, args: tuple[Any, ...]):
        return (float_ops.layer_norm(args[0], args[1], args[2], op.axis.value.data, op.epsilon.value.data),)

    @impl(nn.MeanSquareOp)
    def run_mean_square(self, interpreter: Interpreter, op: nn.MeanSquareOp, args: tuple[Any, ...]):
        return (float_ops.mean_square(args[0]),)

    @impl(nn.AddOp)
    def run_add(self, interpreter: Interpreter, op: nn.AddOp, args: tuple[Any, ...]):
        return (float_ops.add(*args),)

    @impl(nn.SubOp)
    def run_sub(self, interpreter: Interpreter, op: nn.SubOp, args: tuple[Any, ...]):
        return (float_ops.sub(*args),)

    @impl(nn.MulOp)
    def run_mul(self, interpreter: Interpreter, op: nn.MulOp, args: tuple[Any, ...]):
        return (float_ops.mul(*args),)

    @impl(nn.DivOp)
    def run_div(self, interpreter: Interpreter, op: nn.DivOp, args: tuple[Any, ...]):
        return (float_ops.div(*args),)

    @impl(nn.Conv2dOp)
    def run_conv2d(self, interpreter: Interpreter, op: nn.Conv2dOp, args: tuple[Any, ...]):
        bias = args[2] if op.bias is not None else None
        return (
            float_ops.conv2d(
                args[0], args[1], bias, nn.ints(op.strides), nn.ints(op.pads), nn.ints(op.dilations),
                op.group.value.data,
            ),
        )

    @impl(nn.ConvTranspose2dOp)
    def run_conv_transpose2d(self, interpreter: Interpreter, op: nn.ConvTranspose2dOp, args: tuple[Any, ...]):
        bias = args[2] if op.bias is not None else None
        return (
            float_ops.conv_transpose2d(
                args[0], args[1], bias, nn.ints(op.strides), nn.ints(op.pads), nn.ints(op.dilations),
                nn.ints(op.output_padding), op.group.value.data,
            ),
        )

    @impl(nn.GemmOp)
    def run_gemm(self, interpreter: Interpreter, op: nn.GemmOp, args: tuple[Any, ...]):
        c = args[2] if op.c is not None else None
        return (
            float_ops.gemm(
                args[0], args[1], c, op.alpha.value.data, op.beta.value.data,
                bool(op.trans_a.value.data), bool(op.trans_b.value.data),
            ),
        )

    @impl(nn.MatMulOp)
    def run_matmul(self, interpreter: Interpreter, op: nn.MatMulOp, args: tuple[Any, ...]):
        return (float_ops.matmul(*args),)

    @impl(nn.BatchNormOp)
    def run_batch_norm(self, interpreter: Interpreter, op: nn.BatchNormOp, args: tuple[Any, ...]):
        return (float_ops.batch_norm(*args, op.epsilon.value.data),)

    @impl(nn.MaxPoolOp)
    def run_max_pool(self, interpreter: Interpreter, op: nn.MaxPoolOp, args: tuple[Any, ...]):
        return (
            float_ops.max_pool(
                args[0], nn.ints(op.kernel_shape), nn.ints(op.strides), nn.ints(op.pads),
                op.pool_dilations(), _out_hw(op),
            ),
        )

    @impl(nn.AveragePoolOp)
    def run_average_pool(self, interpreter: Interpreter, op: nn.AveragePoolOp, args: tuple[Any, ...]):
        return (
            float_ops.average_pool(
                args[0], nn.ints(op.kernel_shape), nn.ints(op.strides), nn.ints(op.pads), _out_hw(op),
                bool(op.count_include_pad.value.data),
            ),
        )

    @impl(nn.GlobalAveragePoolOp)
    def run_global_average_pool(self, interpreter: Interpreter, op: nn.GlobalAveragePoolOp, args: tuple[Any, ...]):
        return (float_ops.global_average_pool(args[0]),)

    @impl(nn.ReshapeOp)
    def run_reshape(self, interpreter: Interpreter, op: nn.ReshapeOp, args: tuple[Any, ...]):
        return (float_ops.reshape(args[0], batch_shape(args[0], nn.shape_of(op.result))),)

    @impl(nn.FlattenOp)
    def run_flatten(self, interpreter: Interpreter, op: nn.FlattenOp, args: tuple[Any, ...]):
        axis = op.axis.value.data
        return (float_ops.flatten(args[0], axis + args[0].ndim if axis < 0 else axis),)

    @impl(nn.TransposeOp)
    def run_transpose(self, interpreter: Interpreter, op: nn.TransposeOp, args: tuple[Any, ...]):
        return (float_ops.transpose(args[0], nn.ints(op.perm)),)

    @impl(nn.ResizeOp)
    def run_resize(self, interpreter: Interpreter, op: nn.ResizeOp, args: tuple[Any, ...]):
        nearest_mode = op.nearest_mode.data if op.nearest_mode is not None else None
        return (
            float_ops.resize(
                args[0], nn.shape_of(op.result)[2:], op.mode.data, op.coordinate_transformation_mode.data,
                nearest_mode,
            ),
        )

    @impl(nn.ConcatOp)
    def run_concat(self, interpreter: Interpreter, op: nn.ConcatOp, args: tuple[Any, ...]):
        return (float_ops.concat(args, op.axis.value.data),)

    @impl(nn.OnnxOp)
    def run_onnx(self, interpreter: Interpreter, op: nn.OnnxOp, args: tuple[Any, ...]):
        try:
            return tuple(onnx_runtime.run_model(op.model_bytes(), args))
        except (XnpuError, VerifyException) as error:
            raise XnpuError(f"{describe_op(op)} ({op.op_type.data}): {error}") from None


def _run_pointwise(functions: NNFunctions, interpreter: Interpreter, op: nn.PointwiseOp, args: tuple[Any, ...]):
    return (op.function(args[0]),)


for _op_type in nn.NN.operations:
    if issubclass(_op_type, nn.PointwiseOp):
        setattr(NNFunctions, f"run_{_op_type.name.split('.')[1]}", impl(_op_type)(_run_pointwise))
NNFunctions = register_impls(NNFunctions)
