"""What the compiler knows about an op lives in the op's definition (dialects/traits.py), and
every pass asks the op: legalize and unit selection cannot give two answers for one instance."""

from __future__ import annotations

import numpy as np
import pytest

from xnpu.dialects import fixed, nn, npu
from xnpu.dialects.traits import SampleBatching, ScaleRule, UnitForm, is_native
from xnpu.ir.context import make_context
from xnpu.ir.io import parse_ir
from xnpu.lowering.fixed_to_npu import LowerFixedToNpuPass
from xnpu.lowering.legalize import LegalizePass
from xnpu.target.description import load_target

# An element-wise product whose second operand is broadcast along the channels: the ELTWISE
# unit has a mul, but reads its second operand whole, per channel or as one value only.
SPATIAL_BROADCAST_MUL = """
builtin.module {
  func.func @main(%a: tensor<1x4x2x2xf32>, %b: tensor<1x1x2x2xf32>) -> tensor<1x4x2x2xf32> {
    %x = fixed.quantize %a {scale = 0.01 : f64} : tensor<1x4x2x2xf32> -> tensor<1x4x2x2xi8>
    %y = fixed.quantize %b {scale = 0.01 : f64} : tensor<1x1x2x2xf32> -> tensor<1x1x2x2xi8>
    %m = fixed.mul %x, %y : (tensor<1x4x2x2xi8>, tensor<1x1x2x2xi8>) -> tensor<1x4x2x2xi16>
    %r = fixed.rescale %m {multiplier = array<i64: 16384>, shift = array<i64: 20>} : tensor<1x4x2x2xi16> -> tensor<1x4x2x2xi8>
    %o = fixed.dequantize %r {scale = 0.01 : f64} : tensor<1x4x2x2xi8> -> tensor<1x4x2x2xf32>
    func.return %o : tensor<1x4x2x2xf32>
  }
}
"""


@pytest.mark.parametrize("dialect", [nn.NN, fixed.FIXED, npu.NPU], ids=lambda d: d.name)
def test_each_op_has_one_answer_per_question(dialect):
    for op_type in dialect.operations:
        for family in (SampleBatching, ScaleRule, UnitForm):
            assert len(op_type.get_traits_of_type(family)) <= 1, f"{op_type.name}: two {family.__name__} traits"


def test_every_fixed_op_says_how_the_accelerator_runs_it():
    target = load_target("xnpu_default")
    for op_type in fixed.FIXED.operations:
        form = op_type.get_trait(UnitForm)
        assert form is not None, f"{op_type.name} has no UnitForm"
        assert form.capability(op_type.name, target).op == op_type.name


def test_every_computing_nn_op_says_how_samples_pass_through_it():
    missing = [t.name for t in nn.NN.operations if t is not nn.ConstantOp and t.get_trait(SampleBatching) is None]
    assert missing == []


@pytest.mark.parametrize("target,problem", [
    ("xnpu_default", "broadcasting [1, 1, 2, 2] to [1, 4, 2, 2] has no instruction (only per-channel or scalar)"),
    ("xnpu_lite", "element-wise mul is not supported (supported: add, sub)"),
])
def test_legalize_and_unit_selection_agree_on_a_broadcast_the_eltwise_unit_cannot_read(target, problem):
    """Legalize once counted this mul native on xnpu_default (the unit has a mul) while unit
    selection put it on the host (it cannot read the broadcast): now both ask the op."""
    module = parse_ir(SPATIAL_BROADCAST_MUL)
    mul = next(op for op in module.walk() if isinstance(op, fixed.MulOp))
    assert mul.get_trait(UnitForm).problem(mul, load_target(target)) == problem
    assert not is_native(mul, load_target(target))  # legalize's answer
    LegalizePass(target=target).apply(make_context(), module)
    LowerFixedToNpuPass(target=target).apply(make_context(), module)
    hosted = [op for op in module.walk() if op.name == "fixed.mul"]
    assert [op.attributes[npu.HOST_REASON].data for op in hosted] == [problem]  # unit selection's answer


def test_a_per_channel_mul_is_native_and_selected():
    module = parse_ir(SPATIAL_BROADCAST_MUL.replace("1x1x2x2", "1x4x1x1"))
    target = load_target("xnpu_default")
    mul = next(op for op in module.walk() if isinstance(op, fixed.MulOp))
    assert is_native(mul, target)
    LowerFixedToNpuPass(target="xnpu_default").apply(make_context(), module)
    assert not any(isinstance(op, npu.HostOp) for op in module.walk())
    assert [op.kind for op in module.walk() if isinstance(op, npu.EltwiseOp)] == ["mul"]


def test_a_pointwise_op_is_its_function_at_every_use():
    """The interpreter, the table lowering and calibration read the op's own definition."""
    x = np.linspace(-8, 8, 33, dtype=np.float32)
    op = nn.HardSigmoidOp.create(properties={"alpha": nn.f32_attr(0.25), "beta": nn.f32_attr(0.5)})
    np.testing.assert_allclose(op.function(x), np.clip(0.25 * x + 0.5, 0, 1), rtol=0, atol=1e-7)
    assert op.flat_range() == (-2.0, 2.0)
