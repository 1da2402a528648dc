"""ResNet-sized IR: import, print, parse and print again quickly, with the weights bit-exact.

Weights print as hex `dense<"0x...">` inside each `nn.constant`, not as `dense_resource`:
xDSL 0.74 keeps resource blobs in one process-wide store that the next parse overwrites, so
a module parsed earlier would silently see another module's weights.
"""

from __future__ import annotations

import time
from pathlib import Path

import numpy as np
import onnx
import pytest
from onnx import numpy_helper

import xnpu
from xnpu.dialects import nn

RESNET = Path(__file__).resolve().parents[2] / ".." / "shared" / "bench" / "imagenet_like" / "resnet18_like.onnx"
# CPU seconds, not wall-clock: a machine busy with other jobs must not fail the test; the bound
# catches a quadratic parse or print (the round trip takes a few CPU seconds)
ROUND_TRIP_BOUND_S = 30.0


def constants(module) -> list[nn.ConstantOp]:
    return [op for op in module.walk() if isinstance(op, nn.ConstantOp)]


def raw_bytes(op: nn.ConstantOp) -> bytes:
    return bytes(op.value.data.data)


def test_resnet18_round_trip_is_fast_and_exact():
    if not RESNET.exists():
        pytest.skip(f"benchmark model not found at {RESNET} (expected ../shared/bench)")
    start = time.process_time()
    module = xnpu.import_onnx(RESNET)
    imported = time.process_time()
    text = xnpu.print_ir(module)
    printed = time.process_time()
    parsed = xnpu.parse_ir(text)
    reparsed = time.process_time()
    again = xnpu.print_ir(parsed)
    end = time.process_time()
    print(
        f"resnet18_like: import {imported - start:.2f} s, print {printed - imported:.2f} s, "
        f"parse {reparsed - printed:.2f} s, print again {end - reparsed:.2f} s, "
        f"IR {len(text) / 1e6:.1f} MB"
    )
    assert again == text
    assert end - start < ROUND_TRIP_BOUND_S

    # every initializer survives import, print and parse bit for bit
    initializers = {t.name: numpy_helper.to_array(t) for t in onnx.load(str(RESNET)).graph.initializer}
    before, after = constants(module), constants(parsed)
    assert len(before) == len(after) > 40
    for original, round_tripped in zip(before, after):
        assert raw_bytes(original) == raw_bytes(round_tripped)
        name = original.location.desc.data
        expected = initializers[name].astype(np.float32)
        assert np.array_equal(round_tripped.to_numpy().view(np.uint32), expected.view(np.uint32)), name


def module_with_weights(weights: np.ndarray):
    """A one-constant module, via the same path the importer uses."""
    from xdsl.dialects import func
    from xdsl.dialects.builtin import ModuleOp

    constant = nn.ConstantOp(weights)
    function = func.FuncOp("main", ((), (constant.result.type,)))
    function.body.block.add_ops([constant, func.ReturnOp(constant.result)])
    return ModuleOp([function])


def test_two_parsed_modules_keep_their_own_weights():
    rng = np.random.default_rng(3)
    first_weights = rng.standard_normal((64, 3, 3, 3)).astype(np.float32)
    second_weights = rng.standard_normal((64, 3, 3, 3)).astype(np.float32)
    first_text = xnpu.print_ir(module_with_weights(first_weights))
    second_text = xnpu.print_ir(module_with_weights(second_weights))
    assert 'dense<"0x' in first_text and "dense_resource" not in first_text

    first = xnpu.parse_ir(first_text)
    second = xnpu.parse_ir(second_text)  # a process-wide blob store would clobber `first` here
    assert np.array_equal(constants(first)[0].to_numpy(), first_weights)
    assert np.array_equal(constants(second)[0].to_numpy(), second_weights)
    assert np.array_equal(xnpu.run(first, {})["output0"], first_weights)
    assert np.array_equal(xnpu.run(second, {})["output0"], second_weights)
