"""N samples in one pass: which functions allow it, and that it changes no result.

The runner, calibration and the layer report run N samples of a batch-1 model at once
where xnpu.interpreters.batching says the samples stay apart; the integer levels must agree bit for bit
with a sample-by-sample run, the float level to float rounding, and calibration must give
the same scales whatever the batch.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
from xdsl.dialects import func
from xdsl.dialects.builtin import FunctionType, IntegerAttr, ModuleOp, TensorType, f32, i64
from xdsl.ir import Block, Region

import xnpu
from xnpu.interpreters.batching import runs_batched
from xnpu.dialects import nn
from xnpu.core.errors import XnpuError
from xnpu.interpreters.function import CompiledFunction, default_batch, entry_function
from xnpu.transforms.calibrate import SCALE_ATTR, calibrate

pytestmark = pytest.mark.float_sums  # results went through float sums: `make blas-variance` reruns them

SHARED = Path(__file__).resolve().parents[2] / ".." / "shared" / "bench"
DIGITS = SHARED / "digits"
needs_digits = pytest.mark.skipif(
    not (DIGITS / "digits_plain.onnx").is_file(), reason=f"benchmark models not found at {DIGITS}"
)


def module_of(build, input_shape) -> ModuleOp:
    block = Block(arg_types=[TensorType(f32, input_shape)])
    ops = build(block.args[0])
    block.add_ops([*ops, func.ReturnOp(ops[-1].results[0])])
    function = func.FuncOp("main", FunctionType.from_lists([TensorType(f32, input_shape)],
                                                           [ops[-1].results[0].type]), Region(block))
    return ModuleOp([function])


def flatten_gemm(x):
    flat = nn.FlattenOp(x, 1)
    weight = nn.ConstantOp(np.arange(12 * 3, dtype=np.float32).reshape(12, 3) / 10)
    return [flat, weight, nn.GemmOp(flat.result, weight.result, None)]


def transpose_batch_away(x):
    return [nn.TransposeOp(x, (1, 0, 2))]


def reshape_merging_samples(x):
    return [nn.ReshapeOp(x, (12,))]


def softmax_over_samples(x):
    return [nn.SoftmaxOp(x, axis=IntegerAttr(0, i64))]


def reshape_then_relu(x):
    reshape = nn.ReshapeOp(x, (1, 4, 3))
    return [reshape, nn.ReluOp(reshape.result)]


@pytest.mark.parametrize("build,shape,batched", [
    (flatten_gemm, (1, 3, 4), True),
    (reshape_then_relu, (1, 3, 4), True),
    (transpose_batch_away, (1, 3, 4), False),
    (reshape_merging_samples, (1, 3, 4), False),
    (softmax_over_samples, (1, 3, 4), False),
])
def test_which_functions_keep_samples_apart(build, shape, batched):
    module = module_of(build, shape)
    assert runs_batched(entry_function(module)) is batched
    x = np.random.default_rng(1).normal(size=(5, *shape[1:])).astype(np.float32)
    together = xnpu.run(module, x)
    one_by_one = {name: np.concatenate([xnpu.run(module, x[i : i + 1])[name] for i in range(5)]) for name in together}
    for name in together:
        np.testing.assert_allclose(together[name], one_by_one[name], rtol=1e-6, atol=1e-6)


def test_a_batch_of_one_value_per_step_is_dropped_after_its_last_use():
    module = module_of(flatten_gemm, (1, 3, 4))
    compiled = CompiledFunction(module)
    # the flatten result is read by the gemm only; the constant and the input likewise
    assert [len(d) for d in compiled.dropped] == [1, 0, 2]
    assert compiled.sample_bytes() > 0 and default_batch(compiled) >= 1
    with pytest.raises(XnpuError, match="batch must be >= 1"):
        xnpu.run(module, np.zeros((2, 3, 4), np.float32), batch=0)


@needs_digits
@pytest.mark.parametrize("name", ["digits_resnet", "digits_se"])
def test_batched_runs_agree_with_sample_by_sample(name):
    x = np.load(DIGITS / "test_x.npy")[:40].astype(np.float32)
    float_module = xnpu.import_onnx(DIGITS / f"{name}.onnx")
    assert CompiledFunction(float_module).batched
    float_together = xnpu.run(float_module, x, batch=16)["logits"]
    float_alone = xnpu.run(float_module, x, batch=1)["logits"]
    np.testing.assert_allclose(float_together, float_alone, rtol=1e-5, atol=1e-5)  # BLAS order only
    fixed_module = xnpu.quantize(float_module, np.load(DIGITS / "calib_x.npy")[:50].astype(np.float32), progress=False)
    assert CompiledFunction(fixed_module).batched
    fixed_together = xnpu.run(fixed_module, x, batch=16)["logits"]
    assert np.array_equal(fixed_together, xnpu.run(fixed_module, x, batch=1)["logits"])  # integers: exact


def scales(module: ModuleOp) -> np.ndarray:
    values = [op.attributes[SCALE_ATTR].value.data for op in module.walk() if SCALE_ATTR in op.attributes]
    return np.array(values)


@needs_digits
@pytest.mark.parametrize("method,options", [
    ("minmax", {}),
    ("minmax", {"batch_average": True, "batch_size": 7}),
    ("percentile", {}),  # histograms whose range grows as samples arrive
    ("entropy", {"bins": 512}),
    ("entropy", {"bins": 512, "exact_range": False}),
    ("mse", {}),  # histograms over the exact range, observed through consumer ranges
])
def test_calibration_scales_do_not_depend_on_the_batch(method, options):
    data = np.load(DIGITS / "calib_x.npy")[:60].astype(np.float32)
    results = []
    for batch in (1, 13, 60):
        module = xnpu.import_onnx(DIGITS / "digits_resnet.onnx")
        calibrate(module, data, method=method, calibration_batch=batch, progress=False, **options)
        results.append(scales(module))
    for other in results[1:]:
        # the float graph's values differ by BLAS summation order only: scales to float rounding
        np.testing.assert_allclose(other, results[0], rtol=1e-5)


def test_calibration_batch_must_be_positive():
    module = module_of(flatten_gemm, (1, 3, 4))
    with pytest.raises(XnpuError, match="calibration_batch must be >= 1"):
        calibrate(module, np.zeros((2, 3, 4), np.float32), calibration_batch=0)
