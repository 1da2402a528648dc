"""Bias correction: calibration's `nn.input_mean` and lower-nn-to-fixed's weight_error_bias."""

from __future__ import annotations

import numpy as np
import pytest
from xdsl.dialects import func
from xdsl.dialects.builtin import FunctionType, ModuleOp, TensorType, f32
from xdsl.ir import Block, Region

import xnpu
from xnpu.dialects import nn
from xnpu.lowering.nn_to_fixed import quantize_weights, weight_error_bias, weight_scales
from xnpu.semantics import float_ops
from xnpu.transforms.calibrate import INPUT_MEAN_ATTR, calibrate

pytestmark = pytest.mark.float_sums  # results went through float sums: `make blas-variance` reruns them


def conv_module(weight: np.ndarray, bias: np.ndarray | None, input_shape, strides=(1, 1), pads=(0, 0, 0, 0),
                dilations=(1, 1), group: int = 1) -> ModuleOp:
    block = Block(arg_types=[TensorType(f32, input_shape)])
    constants = [nn.ConstantOp(weight)] + ([nn.ConstantOp(bias)] if bias is not None else [])
    conv = nn.Conv2dOp(block.args[0], constants[0].result, constants[1].result if bias is not None else None,
                       strides=strides, pads=pads, dilations=dilations, group=group)
    block.add_ops([*constants, conv, func.ReturnOp(conv.result)])
    function = func.FuncOp("main", FunctionType.from_lists([block.args[0].type], [conv.result.type]), Region(block))
    module = ModuleOp([function])
    module.verify()
    return module


def the_op(module: ModuleOp, kind: type):
    return next(op for op in module.walk() if isinstance(op, kind))


@pytest.mark.parametrize("strides, pads, dilations, group", [
    ((1, 1), (1, 1, 1, 1), (1, 1), 1),
    ((2, 1), (0, 2, 1, 1), (1, 2), 1),
    ((2, 2), (1, 0, 2, 1), (2, 1), 4),  # depthwise
])
def test_input_mean_is_what_each_conv_weight_multiplies_on_average(strides, pads, dilations, group):
    """Per input channel and kernel tap, the mean over samples and output positions of the
    padded input that tap reads, zero padding included: against every window taken one by one."""
    rng = np.random.default_rng(3)
    channels, kernel = 4, (3, 2)
    weight = rng.standard_normal((4, channels // group, *kernel)).astype(np.float32)
    data = (rng.standard_normal((6, channels, 7, 6)) + np.arange(channels)[None, :, None, None]).astype(np.float32)
    module = calibrate(conv_module(weight, None, (1, channels, 7, 6), strides, pads, dilations, group), data,
                       bias_correction=True)
    conv = the_op(module, nn.Conv2dOp)
    recorded = np.asarray(conv.attributes[INPUT_MEAN_ATTR].get_values()).reshape(channels, *kernel)

    padded = float_ops.pad_nchw(data, pads)
    out_h, out_w = nn.shape_of(conv.result)[2:]
    expected = np.zeros((channels, *kernel))
    for i in range(kernel[0]):
        for j in range(kernel[1]):
            taps = [padded[:, :, oh * strides[0] + i * dilations[0], ow * strides[1] + j * dilations[1]]
                    for oh in range(out_h) for ow in range(out_w)]
            expected[:, i, j] = np.mean(taps, axis=(0, 1))
    np.testing.assert_allclose(recorded, expected, rtol=1e-5, atol=1e-6)


def test_input_mean_of_a_gemm_is_its_rows_column_means_and_absent_by_default():
    rng = np.random.default_rng(4)
    block = Block(arg_types=[TensorType(f32, (3, 5))])
    weight = nn.ConstantOp(rng.standard_normal((2, 5)).astype(np.float32))
    gemm = nn.GemmOp(block.args[0], weight.result, None, trans_b=True)
    block.add_ops([weight, gemm, func.ReturnOp(gemm.result)])
    function = func.FuncOp("main", FunctionType.from_lists([block.args[0].type], [gemm.result.type]), Region(block))
    data = rng.standard_normal((4, 3, 5)).astype(np.float32) + 1.5
    module = calibrate(ModuleOp([function.clone()]), data, bias_correction=True)
    recorded = np.asarray(the_op(module, nn.GemmOp).attributes[INPUT_MEAN_ATTR].get_values())
    np.testing.assert_allclose(recorded, data.reshape(-1, 5).mean(axis=0), rtol=1e-5)

    plain = calibrate(ModuleOp([function.clone()]), data)
    assert INPUT_MEAN_ATTR not in the_op(plain, nn.GemmOp).attributes


def test_weight_error_bias_is_the_weights_rounding_error_times_the_input_mean():
    """Against the same sum written out per output channel, for a grouped convolution."""
    rng = np.random.default_rng(5)
    weight = rng.standard_normal((6, 2, 3, 3)).astype(np.float32)  # 3 groups of 2 input channels
    module = calibrate(conv_module(weight, None, (1, 6, 5, 5), pads=(1, 1, 1, 1), group=3),
                       rng.standard_normal((4, 6, 5, 5)).astype(np.float32) + 2.0, bias_correction=True)
    conv = the_op(module, nn.Conv2dOp)
    mean = np.asarray(conv.attributes[INPUT_MEAN_ATTR].get_values()).reshape(6, 3, 3)
    scales = weight_scales(conv, weight, 0)
    rounded = quantize_weights(weight, scales, 0) * scales[:, None, None, None]
    correction = weight_error_bias(conv, weight, rounded, group=3)
    expected = [np.sum((rounded[o] - weight[o]) * mean[2 * (o // 2):2 * (o // 2) + 2]) for o in range(6)]
    np.testing.assert_allclose(correction, expected, rtol=1e-9, atol=1e-12)
    assert np.abs(correction).max() > 0


def test_bias_correction_takes_the_mean_error_of_the_int8_weights_out_of_the_fixed_level():
    """A convolution on inputs of large positive mean, where each output channel's int8 weights
    sum to a visibly different value than its float ones: the fixed level's mean error per
    channel, against the float graph on fresh samples, shrinks with the correction."""
    rng = np.random.default_rng(6)
    weight = (rng.standard_normal((8, 16, 1, 1)) * 0.05).astype(np.float32)
    weight[:, 0] = 1.0  # per-channel scale 1/127: the small weights round with a step of ~0.008
    bias = rng.standard_normal(8).astype(np.float32)
    calibration = (rng.standard_normal((32, 16, 4, 4)) * 0.5 + 3.0).astype(np.float32)
    fresh = (rng.standard_normal((32, 16, 4, 4)) * 0.5 + 3.0).astype(np.float32)
    float_out = float_ops.conv2d(fresh, weight, bias, (1, 1), (0, 0, 0, 0), (1, 1), 1)

    def mean_error(correct: bool) -> np.ndarray:
        fixed = xnpu.quantize(conv_module(weight, bias, (1, 16, 4, 4)), calibration, progress=False,
                              bias_correction=correct)
        out = next(iter(xnpu.run(fixed, fresh).values()))
        return np.abs((out - float_out).mean(axis=(0, 2, 3)))

    corrected, plain = mean_error(True), mean_error(False)
    assert corrected.mean() < 0.35 * plain.mean()


def test_a_map_a_conv_and_a_matmul_both_read_gives_each_its_own_mean():
    rng = np.random.default_rng(8)
    block = Block(arg_types=[TensorType(f32, (1, 2, 3, 4))])
    kernel = nn.ConstantOp(rng.standard_normal((3, 2, 1, 1)).astype(np.float32))
    matrix = nn.ConstantOp(rng.standard_normal((4, 5)).astype(np.float32))
    conv = nn.Conv2dOp(block.args[0], kernel.result, None)
    matmul = nn.MatMulOp(block.args[0], matrix.result, TensorType(f32, (1, 2, 3, 5)))
    block.add_ops([kernel, matrix, conv, matmul, func.ReturnOp(conv.result, matmul.result)])
    function = func.FuncOp("main", FunctionType.from_lists([block.args[0].type], [conv.result.type,
                                                                                  matmul.result.type]), Region(block))
    data = (rng.standard_normal((5, 2, 3, 4)) + np.arange(4)).astype(np.float32)
    module = calibrate(ModuleOp([function]), data, bias_correction=True)
    conv_mean = np.asarray(the_op(module, nn.Conv2dOp).attributes[INPUT_MEAN_ATTR].get_values())
    matmul_mean = np.asarray(the_op(module, nn.MatMulOp).attributes[INPUT_MEAN_ATTR].get_values())
    np.testing.assert_allclose(conv_mean, data.mean(axis=(0, 2, 3)), rtol=1e-5)
    np.testing.assert_allclose(matmul_mean, data.reshape(-1, 4).mean(axis=0), rtol=1e-5)
