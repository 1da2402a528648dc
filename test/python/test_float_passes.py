"""The float-level passes: every rewrite keeps what the module computes, and changes its IR as intended.

Each case runs the module before and after the pass on random inputs (xnpu.run) and
compares, then checks which ops the pass removed, kept or created.
"""

from __future__ import annotations

import numpy as np
import pytest
from xdsl.dialects.builtin import FusedLoc, ModuleOp
from xdsl.passes import ModulePass

import xnpu
from xnpu.ir.context import make_context
from xnpu.dialects import nn
from xnpu.interpreters.function import entry_function
from xnpu.transforms.constant_fold import ConstantFoldPass
from xnpu.transforms.fold_batch_norm import FoldBatchNormPass
from xnpu.transforms.remove_noop import RemoveNoOpPass

pytestmark = pytest.mark.float_sums  # results went through float sums: `make blas-variance` reruns them


def apply_and_compare(pass_: ModulePass, text: str, seed: int = 0) -> ModuleOp:
    """Apply `pass_` to the module in `text`; assert outputs agree on random inputs."""
    before = xnpu.parse_ir(text)
    after = xnpu.parse_ir(text)
    pass_.apply(make_context(), after)
    after.verify()
    rng = np.random.default_rng(seed)
    specs, _ = xnpu.signature(before)
    inputs = {spec.name: rng.standard_normal(spec.shape).astype(np.float32) for spec in specs}
    expected, actual = xnpu.run(before, inputs), xnpu.run(after, inputs)
    assert expected.keys() == actual.keys()
    for name in expected:
        scale = float(np.abs(expected[name]).max()) or 1.0
        np.testing.assert_allclose(actual[name], expected[name], rtol=1e-5, atol=1e-6 * scale)
    return after


def op_names(module: ModuleOp) -> list[str]:
    return [op.name for op in module.walk() if op.name.startswith("nn.")]


def argument(module: ModuleOp, index: int):
    return entry_function(module).body.block.args[index]


def returned(module: ModuleOp):
    return entry_function(module).body.block.last_op.operands


def only(module: ModuleOp, op_type):
    found = [op for op in module.walk() if isinstance(op, op_type)]
    assert len(found) == 1, [op.name for op in found]
    return found[0]


def t(*shape: int) -> str:
    return f"tensor<{'x'.join(map(str, shape))}xf32>"


def const(name: str, array: np.ndarray) -> str:
    values = np.asarray(array, np.float32)
    body = np.array2string(values, separator=", ", floatmode="unique", threshold=10**6, max_line_width=10**6)
    return f"%{name} = nn.constant dense<{body}> : {t(*values.shape)}"


def conv_attrs(pads=(0, 0, 0, 0), group=1) -> str:
    return (
        f"{{strides = array<i64: 1, 1>, pads = array<i64: {', '.join(map(str, pads))}>, "
        f"dilations = array<i64: 1, 1>, group = {group} : i64}}"
    )


def func(args: str, results: str, body: list[str]) -> str:
    lines = "\n".join(f"    {line}" for line in body)
    return f"func.func @main({args}) -> ({results}) {{\n{lines}\n}}\n"


# --------------------------------------------------------------------------------------
# fold-batch-norm
# --------------------------------------------------------------------------------------


def bn_params(rng: np.random.Generator, channels: int) -> list[str]:
    return [
        const("gamma", rng.uniform(0.5, 2.0, channels)),
        const("beta", rng.standard_normal(channels)),
        const("mean", rng.standard_normal(channels)),
        const("var", rng.uniform(0.1, 3.0, channels)),
    ]


def conv_bn_module(with_bias: bool, group: int = 1, extra_use: bool = False) -> str:
    rng = np.random.default_rng(7)
    cin, cout = 4, 4 if group > 1 else 6
    x_t, w_t, y_t = t(1, cin, 5, 5), t(cout, cin // group, 3, 3), t(1, cout, 5, 5)
    body = [const("w", rng.standard_normal((cout, cin // group, 3, 3)))]
    operands = "%x, %w"
    types = f"{x_t}, {w_t}"
    if with_bias:
        body.append(const("b", rng.standard_normal(cout)))
        operands += ", %b"
        types += f", {t(cout)}"
    body += bn_params(rng, cout)
    body += [
        f'%y = nn.conv2d {operands} {conv_attrs((1, 1, 1, 1), group)} : ({types}) -> {y_t} loc("conv0")',
        f"%z = nn.batch_norm %y, %gamma, %beta, %mean, %var {{epsilon = 1.0e-05 : f32}} : "
        f'({y_t}, {t(cout)}, {t(cout)}, {t(cout)}, {t(cout)}) -> {y_t} loc("bn0")',
    ]
    if extra_use:
        body.append(f"func.return %z, %y : {y_t}, {y_t}")
        return func(f"%x: {x_t}", f"{y_t}, {y_t}", body)
    body.append(f"func.return %z : {y_t}")
    return func(f"%x: {x_t}", y_t, body)


@pytest.mark.parametrize("with_bias", [True, False])
def test_fold_batch_norm_into_conv(with_bias):
    after = apply_and_compare(FoldBatchNormPass(), conv_bn_module(with_bias))
    assert op_names(after) == ["nn.constant", "nn.constant", "nn.conv2d"]
    conv = only(after, nn.Conv2dOp)
    assert conv.bias is not None
    assert isinstance(conv.location, FusedLoc)
    assert [loc.desc.data for loc in conv.location.locations.data] == ["conv0", "bn0"]


def test_fold_batch_norm_weights_follow_the_formula():
    after = apply_and_compare(FoldBatchNormPass(), conv_bn_module(with_bias=True))
    before = xnpu.parse_ir(conv_bn_module(with_bias=True))
    values = {op.result.name_hint: op.to_numpy() for op in before.walk() if isinstance(op, nn.ConstantOp)}
    factor = values["gamma"] / np.sqrt(values["var"] + np.float32(1e-5))
    conv = only(after, nn.Conv2dOp)
    np.testing.assert_allclose(conv.weight.owner.to_numpy(), values["w"] * factor[:, None, None, None], rtol=1e-6)
    expected_bias = (values["b"] - values["mean"]) * factor + values["beta"]
    np.testing.assert_allclose(conv.bias.owner.to_numpy(), expected_bias, rtol=1e-6, atol=1e-7)


def test_fold_batch_norm_into_depthwise_conv():
    after = apply_and_compare(FoldBatchNormPass(), conv_bn_module(with_bias=False, group=4))
    assert "nn.batch_norm" not in op_names(after)
    assert only(after, nn.Conv2dOp).group.value.data == 4


def test_fold_batch_norm_keeps_a_conv_with_other_users():
    after = apply_and_compare(FoldBatchNormPass(), conv_bn_module(with_bias=True, extra_use=True))
    assert op_names(after).count("nn.batch_norm") == 1


def test_fold_batch_norm_needs_constant_weights():
    text = conv_bn_module(with_bias=False).replace("%w = nn.constant", "%unused = nn.constant")
    text = text.replace("func.func @main(%x: tensor<1x4x5x5xf32>)", "func.func @main(%x: tensor<1x4x5x5xf32>, %w: tensor<6x4x3x3xf32>)")
    after = apply_and_compare(FoldBatchNormPass(), text)
    assert "nn.batch_norm" in op_names(after)


# --------------------------------------------------------------------------------------
# remove-noop
# --------------------------------------------------------------------------------------


def test_remove_noop_removes_identities():
    x_t = t(1, 3, 4, 4)
    text = func(
        f"%x: {x_t}",
        t(1, 3, 4, 4),
        [
            const("zero", np.zeros((3, 1, 1))),
            const("one", np.ones((1, 4))),
            "%r = nn.reshape %x : " + f"{x_t} -> {x_t}",
            "%p = nn.transpose %r {perm = array<i64: 0, 1, 2, 3>} : " + f"{x_t} -> {x_t}",
            f"%c = nn.clip %p : {x_t} -> {x_t}",
            f"%a = nn.add %zero, %c : ({t(3, 1, 1)}, {x_t}) -> {x_t}",
            f"%s = nn.sub %a, %zero : ({x_t}, {t(3, 1, 1)}) -> {x_t}",
            f"%m = nn.mul %s, %one : ({x_t}, {t(1, 4)}) -> {x_t}",
            f"%d = nn.div %m, %one : ({x_t}, {t(1, 4)}) -> {x_t}",
            f"%j = nn.concat %d {{axis = 1 : i64}} : ({x_t}) -> {x_t}",
            f"%y = nn.relu %j : {x_t} -> {x_t}",
            f"func.return %y : {x_t}",
        ],
    )
    after = apply_and_compare(RemoveNoOpPass(), text)
    assert op_names(after) == ["nn.relu"]
    assert only(after, nn.ReluOp).input is argument(after, 0)


def test_remove_noop_keeps_ops_that_change_values_or_shapes():
    x_t = t(1, 3)
    text = func(
        f"%x: {x_t}",
        f"{t(2, 3)}, {x_t}, {x_t}, {t(3, 1)}",
        [
            const("zero", np.zeros((2, 3))),
            const("half", np.full((3,), 0.5)),
            const("zero3", np.zeros((3,))),
            # broadcasting against the zero changes the shape
            f"%a = nn.add %x, %zero : ({x_t}, {t(2, 3)}) -> {t(2, 3)}",
            f"%m = nn.mul %x, %half : ({x_t}, {t(3)}) -> {x_t}",
            # 0 - x is a negation, not an identity
            f"%s = nn.sub %zero3, %x : ({t(3)}, {x_t}) -> {x_t}",
            f"%c = nn.clip %s {{max = 1.0 : f32}} : {x_t} -> {x_t}",
            f"%p = nn.transpose %x {{perm = array<i64: 1, 0>}} : {x_t} -> {t(3, 1)}",
            f"func.return %a, %m, %c, %p : {t(2, 3)}, {x_t}, {x_t}, {t(3, 1)}",
        ],
    )
    after = apply_and_compare(RemoveNoOpPass(), text)
    assert sorted(op_names(after)) == sorted(
        ["nn.constant"] * 3 + ["nn.add", "nn.mul", "nn.sub", "nn.clip", "nn.transpose"]
    )


def test_remove_noop_collapses_reshape_chains():
    x_t = t(1, 2, 3, 4)
    text = func(
        f"%x: {x_t}",
        f"{t(1, 24)}, {x_t}",
        [
            f'%r = nn.reshape %x : {x_t} -> {t(2, 12)} loc("r0")',
            f'%f = nn.flatten %r {{axis = 0 : i64}} : {t(2, 12)} -> {t(1, 24)} loc("f0")',
            f"%back = nn.reshape %r : {t(2, 12)} -> {t(6, 4)}",
            f"%same = nn.reshape %back : {t(6, 4)} -> {x_t}",
            f"func.return %f, %same : {t(1, 24)}, {x_t}",
        ],
    )
    after = apply_and_compare(RemoveNoOpPass(), text)
    # the flatten became one reshape of %x; reshaping back to %x's own shape vanished
    reshape = only(after, nn.ReshapeOp)
    assert nn.shape_of(reshape.result) == (1, 24)
    assert reshape.input is argument(after, 0)
    assert reshape.location.desc.data == "f0"
    assert returned(after)[1] is argument(after, 0)


# --------------------------------------------------------------------------------------
# constant-fold
# --------------------------------------------------------------------------------------


def constant_chain_module() -> str:
    rng = np.random.default_rng(3)
    return func(
        f"%x: {t(2, 4)}",
        t(2, 3),
        [
            const("a", rng.standard_normal((3, 4))),
            const("bias", rng.standard_normal((3,))),
            const("s", np.full((3, 4), 2.0)),
            # weights computed from constants: transpose(a * 2) then a relu
            f"%scaled = nn.mul %a, %s : ({t(3, 4)}, {t(3, 4)}) -> {t(3, 4)}",
            f'%wt = nn.transpose %scaled {{perm = array<i64: 1, 0>}} : {t(3, 4)} -> {t(4, 3)} loc("wt")',
            f"%w = nn.relu %wt : {t(4, 3)} -> {t(4, 3)}",
            f"%y = nn.gemm %x, %w, %bias {{alpha = 1.0 : f32, beta = 1.0 : f32, trans_a = 0 : i64, trans_b = 0 : i64}}"
            f" : ({t(2, 4)}, {t(4, 3)}, {t(3)}) -> {t(2, 3)}",
            f"func.return %y : {t(2, 3)}",
        ],
    )


def test_constant_fold_evaluates_constant_subgraphs():
    after = apply_and_compare(ConstantFoldPass(), constant_chain_module())
    assert op_names(after) == ["nn.constant", "nn.constant", "nn.gemm"]
    gemm = only(after, nn.GemmOp)
    before = xnpu.parse_ir(constant_chain_module())
    a = next(op for op in before.walk() if isinstance(op, nn.ConstantOp)).to_numpy()
    np.testing.assert_array_equal(gemm.b.owner.to_numpy(), np.maximum(a * 2, 0).T)


def test_constant_fold_respects_max_elements():
    after = apply_and_compare(ConstantFoldPass(max_elements=11), constant_chain_module())
    # the 3x4 products exceed 11 elements and stay; nothing after them is constant
    assert op_names(after).count("nn.mul") == 1
    assert "nn.transpose" in op_names(after)


def test_constant_fold_keeps_the_location_of_the_folded_op():
    text = func(
        "",
        t(2),
        [
            const("a", np.array([-1.0, 2.0])),
            f'%r = nn.relu %a : {t(2)} -> {t(2)} loc("relu0")',
            f"func.return %r : {t(2)}",
        ],
    )
    after = apply_and_compare(ConstantFoldPass(), text)
    folded = only(after, nn.ConstantOp)
    np.testing.assert_array_equal(folded.to_numpy(), [0.0, 2.0])
    assert folded.location.desc.data == "relu0"
