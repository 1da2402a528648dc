"""`fuse-activations`: activations exporters spell out, rewritten into the one `nn` op each is.

Hard-swish reaches ONNX in three spellings: the HardSwish op (opset 14), `x * Clip(x + 3, 0,
6) / 6` (older PyTorch exports, Keras) and `x * HardSigmoid(x)` with alpha 1/6. Below the
float level each spelling would cost an add, a clamp, a mul and a rescale, with an int8
rounding between every two; as one `nn.hard_swish` it is one 256-entry table. The rewrites
are the declarative PDL patterns of `hard_swish.mlir` in this directory, applied by xnpu's
PDL driver (pdl/driver.py), which tries both operand orders of the commutative
nn.add and nn.mul; the constants are compared by the native constraints below. The ops a
fusion leaves without users are removed.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from pathlib import Path

import numpy as np
from xdsl.context import Context
from xdsl.dialects.builtin import FloatAttr, ModuleOp
from xdsl.ir import Attribute, SSAValue
from xdsl.passes import ModulePass
from xdsl.transforms.dead_code_elimination import dce

from xnpu.pdl.driver import apply_patterns
from xnpu.pdl.patterns import PatternContext, load_patterns, native_constraint
from xnpu.transforms.constants import constant_array

PATTERN_DIR = Path(__file__).resolve().parent
# float32 rounding: 1/6 written with 7 significant digits still is 1/6
RELATIVE_TOLERANCE = 1e-6


def _close(value: float, expected: float) -> bool:
    return math.isclose(value, expected, rel_tol=RELATIVE_TOLERANCE, abs_tol=0.0)


@native_constraint()
def is_scalar_constant_close(ctx: PatternContext, value: SSAValue, expected: Attribute) -> bool:
    """An nn.constant with one element, equal to `expected` (a float attribute) up to float32 rounding."""
    array = constant_array(value)
    assert isinstance(expected, FloatAttr)
    return array is not None and array.size == 1 and _close(float(np.asarray(array).reshape(())), expected.value.data)


@native_constraint()
def float_attr_close(ctx: PatternContext, value: Attribute, expected: Attribute) -> bool:
    assert isinstance(expected, FloatAttr)
    return isinstance(value, FloatAttr) and _close(value.value.data, expected.value.data)


def activation_patterns():
    return load_patterns([PATTERN_DIR])


@dataclass(frozen=True)
class FuseActivationsPass(ModulePass):
    """Rewrite hard-swish / hard-sigmoid spelled with add, clip, mul and div into nn.hard_swish / nn.hard_sigmoid."""

    name = "fuse-activations"

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        if apply_patterns(op, activation_patterns(), PatternContext()):  # float patterns ask nothing of a target
            dce(op)
