"""`fuse-activations`: activations and normalizations exporters spell out, rewritten into the
one `nn` op each is.

Hard-swish reaches ONNX in three spellings: the HardSwish op (opset 14), `x * Clip(x + 3, 0,
6) / 6` (older PyTorch exports, Keras) and `x * HardSigmoid(x)` with alpha 1/6. Below the
float level each spelling would cost an add, a clamp, a mul and a rescale, with an int8
rounding between every two; as one `nn.hard_swish` it is one 256-entry table. The rewrites
are the declarative PDL patterns of `hard_swish.mlir` in this directory, applied by xnpu's
PDL driver (pdl/driver.py), which tries both operand orders of the commutative
nn.add and nn.mul; the constants are compared by the native constraints below. The ops a
fusion leaves without users are removed.

GELU (`x * (1 + erf(x / sqrt(2))) / 2`) and SiLU (`x * sigmoid(x)`) become `nn.gelu` and
`nn.silu` (`gelu_silu.mlir`), tables below the float level like hard-swish. LayerNorm spelled
with ReduceMean, Sub, Pow 2, ReduceMean, Add epsilon, Sqrt, Div, Mul and Add
(`layer_norm.mlir`; ReduceMean, Pow and Sqrt are ONNX nodes kept for onnxruntime) becomes one
`nn.layer_norm`, a float op for the host instead of nine ops with an int8 rounding between
the integer ones.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import onnx
from onnx import numpy_helper
from xdsl.context import Context
from xdsl.dialects.builtin import FloatAttr, ModuleOp
from xdsl.ir import Attribute, Operation, SSAValue
from xdsl.passes import ModulePass
from xdsl.transforms.dead_code_elimination import dce

from xnpu.dialects import nn
from xnpu.pdl.driver import apply_patterns
from xnpu.pdl.patterns import PatternContext, load_patterns, native_constraint, native_rewrite
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


def _onnx_node(op: Operation, op_type: str) -> tuple[onnx.NodeProto, dict[str, np.ndarray]] | None:
    """The node an `nn.onnx` op of `op_type` carries, with the constants its model holds."""
    if not isinstance(op, nn.OnnxOp) or op.op_type.data != op_type or not isinstance(op.model, nn.OnnxModelAttr):
        return None
    graph = onnx.load_from_string(op.model_bytes()).graph
    if len(graph.node) != 1:
        return None
    return graph.node[0], {t.name: numpy_helper.to_array(t) for t in graph.initializer}


@native_constraint()
def is_mean_over_last_axis(ctx: PatternContext, op: Operation) -> bool:
    """An ONNX ReduceMean over the last axis only, keeping it (axes as attribute or constant input)."""
    found = _onnx_node(op, "ReduceMean")
    if found is None or len(op.operands) != 1:
        return False
    node, constants = found
    attributes = {a.name: onnx.helper.get_attribute_value(a) for a in node.attribute}
    axes = attributes.get("axes")
    if axes is None and len(node.input) > 1:
        axes = constants.get(node.input[1])
    rank = len(nn.shape_of(op.operands[0]))
    return (attributes.get("keepdims", 1) == 1 and axes is not None
            and [int(a) % rank for a in np.ravel(axes)] == [rank - 1])


@native_constraint()
def is_square(ctx: PatternContext, op: Operation) -> bool:
    """An ONNX Pow by the constant exponent 2."""
    found = _onnx_node(op, "Pow")
    if found is None or len(op.operands) != 1:
        return False
    node, constants = found
    exponent = constants.get(node.input[1])
    return exponent is not None and exponent.size == 1 and float(exponent.reshape(())) == 2.0


@native_constraint()
def is_square_root(ctx: PatternContext, op: Operation) -> bool:
    return _onnx_node(op, "Sqrt") is not None and len(op.operands) == 1


@native_constraint()
def is_positive_scalar_constant(ctx: PatternContext, value: SSAValue) -> bool:
    array = constant_array(value)
    return array is not None and array.size == 1 and float(np.asarray(array).reshape(())) > 0


@native_rewrite()
def scalar_constant_attr(ctx: PatternContext, value: SSAValue) -> FloatAttr:
    """The value of a one-element nn.constant as an f32 attribute."""
    return nn.f32_attr(float(np.asarray(constant_array(value)).reshape(())))


def activation_patterns():
    return load_patterns([PATTERN_DIR])


@dataclass(frozen=True)
class FuseActivationsPass(ModulePass):
    """Rewrite hard-swish / hard-sigmoid spelled with add, clip, mul and div into nn.hard_swish / nn.hard_sigmoid,
    GELU and SiLU into nn.gelu / nn.silu, and a spelled-out LayerNorm into nn.layer_norm."""

    name = "fuse-activations"

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        if apply_patterns(op, activation_patterns(), PatternContext()):  # float patterns ask nothing of a target
            dce(op)
            while _erase_unused_onnx_nodes(op):
                dce(op)


def _erase_unused_onnx_nodes(module: ModuleOp) -> bool:
    """Erase the ONNX nodes nothing reads (a fused GELU's Erf, a LayerNorm's ReduceMean, Pow and Sqrt): dce
    keeps an nn.onnx op, which it cannot know to be free of side effects, but an ONNX node
    computes its outputs only. Whether any was erased."""
    unused = [o for o in module.walk() if isinstance(o, nn.OnnxOp) and all(not r.uses for r in o.results)]
    for onnx_op in reversed(unused):
        onnx_op.detach()
        onnx_op.erase()
    return bool(unused)
