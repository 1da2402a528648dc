"""Shapes and the checks every dialect's verifiers share.

The output-shape functions are the single definition of each op family's result shape
(the importer, the verifiers and the interpreters all use them); the `expect_*` helpers turn
a violated invariant into one VerifyException line naming the op.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

from xdsl.dialects.builtin import BytesAttr, DenseArrayBase, FloatAttr, IntegerAttr, TensorType, f32, i64
from xdsl.ir import Attribute, Operation, SSAValue
from xdsl.utils.exceptions import VerifyException

from xnpu.core.lazy import numpy as np  # imported at its first use: xnpu-opt parses float IR without it

# --------------------------------------------------------------------------------------
# Shape functions: the single definition of every op's output shape.
# --------------------------------------------------------------------------------------


def broadcast_shapes(lhs: Sequence[int], rhs: Sequence[int]) -> tuple[int, ...]:
    """ONNX (numpy) multidirectional broadcasting; raises ValueError when incompatible."""
    rank = max(len(lhs), len(rhs))
    a = (1,) * (rank - len(lhs)) + tuple(lhs)
    b = (1,) * (rank - len(rhs)) + tuple(rhs)
    out: list[int] = []
    for x, y in zip(a, b):
        if x != y and x != 1 and y != 1:
            raise ValueError(f"shapes {list(lhs)} and {list(rhs)} do not broadcast")
        out.append(max(x, y))
    return tuple(out)


def pool_output_hw(
    hw: Sequence[int],
    kernel: Sequence[int],
    strides: Sequence[int],
    pads: Sequence[int],
    dilations: Sequence[int],
    ceil_mode: bool,
) -> tuple[int, int]:
    out = []
    for axis in range(2):
        size, k, s, d = hw[axis], kernel[axis], strides[axis], dilations[axis]
        begin, end = pads[axis], pads[axis + 2]
        span = d * (k - 1) + 1
        if ceil_mode:
            o = -(-(size + begin + end - span) // s) + 1
            # the last window must start inside the input or its leading padding
            if (o - 1) * s >= size + begin:
                o -= 1
        else:
            o = (size + begin + end - span) // s + 1
        out.append(o)
    return out[0], out[1]


def conv_output_shape(
    x: Sequence[int],
    w: Sequence[int],
    strides: Sequence[int],
    pads: Sequence[int],
    dilations: Sequence[int],
) -> tuple[int, ...]:
    oh, ow = pool_output_hw(x[2:], w[2:], strides, pads, dilations, False)
    return (x[0], w[0], oh, ow)


def conv_transpose_output_shape(
    x: Sequence[int],
    w: Sequence[int],
    strides: Sequence[int],
    pads: Sequence[int],
    dilations: Sequence[int],
    output_padding: Sequence[int],
    group: int,
) -> tuple[int, ...]:
    """N x (w[1] * group) x OH x OW for an NCHW input and a C x O/group x KH x KW weight (ONNX ConvTranspose)."""
    hw = [
        (x[2 + a] - 1) * strides[a] + dilations[a] * (w[2 + a] - 1) + 1 - pads[a] - pads[a + 2] + output_padding[a]
        for a in range(2)
    ]
    return (x[0], w[1] * group, *hw)


def resize_factors(before: Sequence[int], after: Sequence[int]) -> tuple[int, int]:
    """The integer H and W factors of an NCHW upsampling; raises ValueError for anything else."""
    if len(before) != 4 or len(after) != 4:
        raise ValueError(f"needs NCHW tensors, got shapes {list(before)} and {list(after)}")
    if tuple(before[:2]) != tuple(after[:2]):
        raise ValueError(f"only H and W are resized, but {list(before)} becomes {list(after)}")
    factors = []
    for axis in (2, 3):
        if before[axis] < 1 or after[axis] % before[axis]:
            raise ValueError(f"{list(before)} -> {list(after)} is not an upsampling by integer factors")
        factors.append(after[axis] // before[axis])
    return factors[0], factors[1]


def gemm_output_shape(a: Sequence[int], b: Sequence[int], trans_a: bool, trans_b: bool) -> tuple[int, int]:
    m, k = (a[1], a[0]) if trans_a else (a[0], a[1])
    k2, n = (b[1], b[0]) if trans_b else (b[0], b[1])
    if k != k2:
        raise ValueError(f"inner dimensions differ: A gives K={k}, B gives K={k2}")
    return (m, n)


def matmul_output_shape(a: Sequence[int], b: Sequence[int]) -> tuple[int, ...]:
    if len(a) == 0 or len(b) == 0:
        raise ValueError("matmul operands must have rank >= 1")
    a2 = (1,) + tuple(a) if len(a) == 1 else tuple(a)
    b2 = tuple(b) + (1,) if len(b) == 1 else tuple(b)
    if a2[-1] != b2[-2]:
        raise ValueError(f"inner dimensions differ: lhs gives K={a2[-1]}, rhs gives K={b2[-2]}")
    batch = broadcast_shapes(a2[:-2], b2[:-2])
    out = batch + (a2[-2], b2[-1])
    if len(a) == 1:
        out = out[:-2] + out[-1:]
    if len(b) == 1:
        out = out[:-1]
    return out


def flatten_output_shape(shape: Sequence[int], axis: int) -> tuple[int, int]:
    return (math.prod(shape[:axis]), math.prod(shape[axis:]))


# --------------------------------------------------------------------------------------
# Helpers shared by the op definitions
# --------------------------------------------------------------------------------------


def shape_of(value: SSAValue | Attribute) -> tuple[int, ...]:
    type_ = value.type if isinstance(value, SSAValue) else value
    assert isinstance(type_, TensorType)
    return tuple(type_.get_shape())


def ints(attr: DenseArrayBase | None) -> tuple[int, ...]:
    return () if attr is None else tuple(attr.get_values())  # type: ignore[arg-type]


def i64_array(values: Sequence[int]) -> DenseArrayBase:
    # packed by numpy: xDSL's from_list normalises value by value (a per-channel rescale of
    # 10^6 channels took 25 s); a value outside int64 raises OverflowError as there
    return DenseArrayBase(i64, BytesAttr(np.asarray([int(v) for v in values], dtype="<i8").tobytes()))


def f32_attr(value: float) -> FloatAttr:
    return FloatAttr(float(value), f32)


def i64_attr(value: int) -> IntegerAttr:
    return IntegerAttr(int(value), i64)


def conv_properties(strides: Sequence[int], pads: Sequence[int], dilations: Sequence[int], group: int,
                    output_padding: Sequence[int] | None = None) -> dict[str, Attribute]:
    """The window properties every level's convolution carries (a transposed one adds its
    output_padding)."""
    properties = {"strides": i64_array(strides), "pads": i64_array(pads), "dilations": i64_array(dilations)}
    if output_padding is not None:
        properties["output_padding"] = i64_array(output_padding)
    properties["group"] = i64_attr(group)
    return properties


def pool_properties(kernel: Sequence[int], strides: Sequence[int], pads: Sequence[int],
                    ceil_mode: bool) -> dict[str, Attribute]:
    """The window properties every level's kernel pooling carries."""
    return {"kernel_shape": i64_array(kernel), "strides": i64_array(strides), "pads": i64_array(pads),
            "ceil_mode": i64_attr(int(ceil_mode))}


def expect_shape(op: Operation, expected: Sequence[int], what: str = "result") -> None:
    actual = shape_of(op.results[0])
    if tuple(actual) != tuple(expected):
        raise VerifyException(
            f"{op.name}: {what} shape is {list(actual)} but the operands give {list(expected)}"
        )


def broadcasts_to(shape: Sequence[int], target: Sequence[int]) -> bool:
    try:
        return broadcast_shapes(shape, target) == tuple(target)
    except ValueError:
        return False


def expect_rank(op: Operation, value: SSAValue, rank: int, role: str) -> tuple[int, ...]:
    shape = shape_of(value)
    if len(shape) != rank:
        raise VerifyException(f"{op.name}: {role} must have rank {rank}, got shape {list(shape)}")
    return shape


def expect_len(op: Operation, name: str, values: Sequence[int], length: int) -> None:
    if len(values) != length:
        raise VerifyException(f"{op.name}: '{name}' needs {length} values, got {list(values)}")


def expect_at_least(op: Operation, name: str, values: Sequence[int], low: int) -> None:
    if any(v < low for v in values):
        raise VerifyException(f"{op.name}: '{name}' values must be >= {low}, got {list(values)}")


def normalize_axis(op: Operation, axis: int, rank: int, allow_end: bool = False) -> int:
    upper = rank + 1 if allow_end else rank
    if not -rank <= axis < upper:
        raise VerifyException(f"{op.name}: axis {axis} is out of range for rank {rank}")
    return axis + rank if axis < 0 else axis


def verify_conv_geometry(
    op: Operation, input: SSAValue, weight: SSAValue, strides, pads, dilations, group: int
) -> tuple[int, ...]:
    """NCHW input, OIHW weight: attribute lengths and ranges, groups, fit; the result shape."""
    x = expect_rank(op, input, 4, "input")
    w = expect_rank(op, weight, 4, "weight")
    if 0 in x or 0 in w:
        raise VerifyException(f"{op.name}: input {list(x)} and weight {list(w)} must not be empty")
    expect_len(op, "strides", strides, 2)
    expect_len(op, "pads", pads, 4)
    expect_len(op, "dilations", dilations, 2)
    expect_at_least(op, "strides", strides, 1)
    expect_at_least(op, "dilations", dilations, 1)
    expect_at_least(op, "pads", pads, 0)
    if group < 1 or x[1] % group or w[0] % group:
        raise VerifyException(
            f"{op.name}: group {group} must divide input channels {x[1]} and output channels {w[0]}"
        )
    if w[1] * group != x[1]:
        raise VerifyException(
            f"{op.name}: weight expects {w[1]} x group {group} = {w[1] * group} input channels, input has {x[1]}"
        )
    expected = conv_output_shape(x, w, strides, pads, dilations)
    if expected[2] < 1 or expected[3] < 1:
        raise VerifyException(f"{op.name}: kernel {list(w[2:])} does not fit input {list(x[2:])}")
    return expected


def verify_conv_transpose_geometry(
    op: Operation, input: SSAValue, weight: SSAValue, strides, pads, dilations, output_padding, group: int
) -> tuple[int, ...]:
    """NCHW input, C x O/group x KH x KW weight: attribute lengths and ranges, groups; the result shape."""
    x = expect_rank(op, input, 4, "input")
    w = expect_rank(op, weight, 4, "weight")
    for name, values, length in (("strides", strides, 2), ("pads", pads, 4), ("dilations", dilations, 2),
                                 ("output_padding", output_padding, 2)):
        expect_len(op, name, values, length)
    expect_at_least(op, "strides", strides, 1)
    expect_at_least(op, "dilations", dilations, 1)
    expect_at_least(op, "pads", pads, 0)
    expect_at_least(op, "output_padding", output_padding, 0)
    for axis in range(2):
        if output_padding[axis] >= max(strides[axis], dilations[axis]):
            raise VerifyException(
                f"{op.name}: output_padding {list(output_padding)} must be below the stride or the dilation"
            )
    if group < 1 or x[1] % group:
        raise VerifyException(f"{op.name}: group {group} must divide input channels {x[1]}")
    if w[0] != x[1]:
        raise VerifyException(f"{op.name}: weight has {w[0]} input channels, input has {x[1]}")
    expected = conv_transpose_output_shape(x, w, strides, pads, dilations, output_padding, group)
    if expected[2] < 1 or expected[3] < 1:
        raise VerifyException(f"{op.name}: pads {list(pads)} leave no output of input {list(x[2:])}")
    return expected


def verify_window(
    op: Operation, input: SSAValue, kernel, strides, pads, dilations, ceil_mode: bool
) -> tuple[int, int]:
    """A pooling window over NCHW: attribute lengths and ranges, pads below the kernel, fit; (OH, OW)."""
    x = expect_rank(op, input, 4, "input")
    expect_len(op, "kernel_shape", kernel, 2)
    expect_len(op, "strides", strides, 2)
    expect_len(op, "pads", pads, 4)
    expect_at_least(op, "kernel_shape", kernel, 1)
    expect_at_least(op, "strides", strides, 1)
    expect_at_least(op, "pads", pads, 0)
    if any(pads[i] >= kernel[i % 2] for i in range(4)):
        raise VerifyException(f"{op.name}: pads {list(pads)} must be smaller than the kernel {list(kernel)}")
    hw = pool_output_hw(x[2:], kernel, strides, pads, dilations, ceil_mode)
    if min(hw) < 1:
        raise VerifyException(f"{op.name}: kernel {list(kernel)} does not fit input {list(x[2:])}")
    expect_shape(op, (x[0], x[1], *hw))
    return hw
