"""The `npu` dialect: one op per accelerator operation on tensors, before memory exists.

Between `fixed` (integer arithmetic, one rule per op) and `isa` (instructions on addresses)
sits the level at which the compiler has chosen the accelerator's units but not yet where
anything lives. Each op is what one unit does to whole tensors, with every parameter the
unit needs as a property:

    %y = npu.conv %x, %w, %b {strides = array<i64: 1, 1>, pads = array<i64: 1, 1, 1, 1>,
           dilations = array<i64: 1, 1>, group = 1 : i64,
           multiplier = array<i64: 20000, ...>, shift = array<i64: 37, ...>, relu}
         : (tensor<1x8x16x16xi8>, tensor<16x8x3x3xi8>, tensor<16xi32>) -> tensor<1x16x16x16xi8>

Values are the `fixed` level's int8 tensors in logical (NCHW) shape; weights and biases are
`fixed.constant`s (or, for seed 002's mul, an activation reshaped to kernels); the program's
inputs and outputs stay `fixed.quantize` / `fixed.dequantize` (the host converts floats).
docs/npu.md describes each op; `xnpu.semantics.fixed_point`'s unit functions (`conv_unit`,
`eltwise_unit`, `pool_unit`, `epilogue`) are what they compute, the same functions the
simulator runs for the instructions, so the npu level is bit-identical to both neighbours.

Compute ops carry an optional epilogue, what follows the unit's int8 result in SRAM:
`relu` (the unit's flag), then either `clamp = array<i64: lo, hi>` (a CLAMP) or
`table = array<i8: ...256 entries>` (a TABLE).

A module compiled for a target names it (`npu.target = "xnpu_default"`, a shipped name or a
TOML path); then every op is also checked against that target by target/legality.py, the
one definition of what a unit can do. The passes below this level annotate ops with
discardable `npu.*` attributes (layout, tiles, addresses) that do not change what they compute.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from typing import ClassVar

import numpy as np
from xdsl.dialects.builtin import (
    I64,
    DenseArrayBase,
    IntegerAttr,
    IntegerType,
    StringAttr,
    TensorType,
    UnitAttr,
    i8,
)
from xdsl.ir import Attribute, Dialect, Operation, SSAValue
from xdsl.irdl import (
    IRDLOperation,
    ParsePropInAttrDict,
    irdl_op_definition,
    operand_def,
    opt_operand_def,
    opt_prop_def,
    prop_def,
    region_def,
    result_def,
    traits_def,
    var_operand_def,
    var_result_def,
)
from xdsl.traits import HasParent, IsolatedFromAbove, IsTerminator, Pure
from xdsl.utils.exceptions import VerifyException

from xnpu.dialects.shapes import (
    conv_output_shape,
    conv_properties,
    expect_len,
    expect_shape,
    i64_array,
    i64_attr,
    ints,
    normalize_axis,
    pool_output_hw,
    shape_of,
    verify_conv_geometry,
    verify_window,
)
from xnpu.dialects.targeting import (
    TARGET_ATTRIBUTE,  # noqa: E402,F401  (npu.TARGET_ATTRIBUTE)
    enclosing_target,
)
from xnpu.semantics import fixed_point, units
from xnpu.target import legality

ELTWISE_OPS = ("add", "sub", "mul")
POOL_KINDS = ("max", "avg", "global_avg")
LAYOUTS = ("NHWC", "NCHW")

IntTensor = TensorType[IntegerType]


# --------------------------------------------------------------------------------------
# Shared checks
# --------------------------------------------------------------------------------------


def width_of(value: SSAValue) -> int:
    element = value.type.get_element_type()  # type: ignore[attr-defined]
    return element.width.data if isinstance(element, IntegerType) else 0


def _expect_width(op: Operation, value: SSAValue, role: str, bits: int = 8) -> None:
    if width_of(value) != bits:
        raise VerifyException(f"{op.name}: {role} must be an i{bits} tensor, got {value.type}")


def _check_pairs(op: Operation, multipliers: Sequence[int], shifts: Sequence[int], counts: Sequence[int]) -> None:
    """R5/R6 for every (multiplier, shift) pair; `counts` are the allowed numbers of pairs."""
    if len(multipliers) != len(shifts) or len(multipliers) not in counts:
        wanted = " or ".join(str(c) for c in counts)
        raise VerifyException(
            f"{op.name}: needs {wanted} (multiplier, shift) pairs, got {len(multipliers)} multipliers and {len(shifts)} shifts"
        )
    try:
        fixed_point.check_multiplier(np.asarray(multipliers, dtype=np.int64), np.asarray(shifts, dtype=np.int64))
    except Exception as error:  # XnpuError from the semantics module
        raise VerifyException(f"{op.name}: {error}") from None


def _table_entries(attr: DenseArrayBase) -> np.ndarray:
    return np.asarray(attr.get_values(), dtype=np.int64)


def _check_table(op: Operation, attr: DenseArrayBase) -> None:
    element = attr.elt_type
    if not (isinstance(element, IntegerType) and element.width.data == 8):
        raise VerifyException(f"{op.name}: the table must be an array<i8: ...>, got {element}")
    values = _table_entries(attr)
    if values.size != fixed_point.TABLE_SIZE:
        raise VerifyException(f"{op.name}: the table needs {fixed_point.TABLE_SIZE} entries, got {values.size}")
    if values.min() < -fixed_point.qmax(8):
        raise VerifyException(f"{op.name}: table entries must be in [-127, 127] (R2)")


def table_attr(entries: Sequence[int] | np.ndarray) -> DenseArrayBase:
    return DenseArrayBase.from_list(i8, [int(v) for v in np.asarray(entries).reshape(-1)])


class NpuOp(IRDLOperation):
    """Every npu op: its own invariants (`verify_npu`), then the target's limits when the
    module names one (`target_problem`, through target/legality.py)."""

    def verify_(self) -> None:
        self.verify_npu()
        target = enclosing_target(self, TARGET_ATTRIBUTE)
        if target is None:
            return
        problem = self.target_problem(target)
        if problem:
            raise VerifyException(f"{self.name}: {problem} (target {target.name})")

    def verify_npu(self) -> None:
        raise NotImplementedError

    def target_problem(self, target) -> str | None:
        return None


class UnitOp(NpuOp):
    """A compute unit's op: an int8 result and the optional epilogue (relu, clamp or table)."""

    relu = opt_prop_def(UnitAttr)
    clamp = opt_prop_def(DenseArrayBase[I64])
    table = opt_prop_def(DenseArrayBase)

    def clamp_bounds(self) -> tuple[int, int] | None:
        return None if self.clamp is None else tuple(ints(self.clamp))  # type: ignore[return-value]

    def table_entries(self) -> np.ndarray | None:
        return None if self.table is None else _table_entries(self.table)

    def verify_epilogue(self) -> None:
        _expect_width(self, self.results[0], "result")
        if self.clamp is not None and self.table is not None:
            raise VerifyException(f"{self.name}: an epilogue is a clamp or a table, not both")
        bounds = self.clamp_bounds()
        if bounds is not None:
            expect_len(self, "clamp", bounds, 2)
            limit = fixed_point.qmax(8)
            if not -limit <= bounds[0] <= bounds[1] <= limit:
                raise VerifyException(f"{self.name}: clamp bounds {list(bounds)} are not an ordered range in [-127, 127]")
        if self.table is not None:
            _check_table(self, self.table)

    def epilogue_problem(self, target) -> str | None:
        if self.clamp is not None:
            return legality.unit_problem(target, "clamp")
        if self.table is not None:
            return legality.unit_problem(target, "table")
        return None

    def finish(self, y: np.ndarray) -> np.ndarray:
        """The clamp or table after the unit's int8 result (its relu flag is the unit's own)."""
        return units.epilogue(y, self.clamp_bounds(), self.table_entries())


def epilogue_properties(relu: bool = False, clamp: Sequence[int] | None = None, table=None) -> dict[str, Attribute]:
    props: dict[str, Attribute] = {}
    if relu:
        props["relu"] = UnitAttr()
    if clamp is not None:
        props["clamp"] = i64_array(clamp)
    if table is not None:
        props["table"] = table_attr(table)
    return props


# --------------------------------------------------------------------------------------
# Compute units
# --------------------------------------------------------------------------------------


@irdl_op_definition
class ConvOp(UnitOp):
    """CONV: a convolution (dense, grouped, depthwise) of an NCHW map, or a fully connected
    layer of an N x K matrix by an M x K weight, with an optional int32 bias, exact int32
    accumulation and a rescale to int8 (one pair, or one per output channel).

    `units.conv_unit` / `gemm_unit`, then the epilogue.
    """

    name = "npu.conv"
    input = operand_def(IntTensor)
    weight = operand_def(IntTensor)
    bias = opt_operand_def(IntTensor)
    result = result_def(IntTensor)
    strides = prop_def(DenseArrayBase[I64])
    pads = prop_def(DenseArrayBase[I64])
    dilations = prop_def(DenseArrayBase[I64])
    group = prop_def(IntegerAttr[I64])
    multiplier = prop_def(DenseArrayBase[I64])
    shift = prop_def(DenseArrayBase[I64])
    traits = traits_def(Pure())
    irdl_options = (ParsePropInAttrDict(),)
    assembly_format = "$input `,` $weight (`,` $bias^)? attr-dict `:` functional-type(operands, results)"

    def __init__(self, input: SSAValue, weight: SSAValue, bias: SSAValue | None, multiplier, shift,
                 strides=(1, 1), pads=(0, 0, 0, 0), dilations=(1, 1), group: int = 1, **epilogue):
        x, w = shape_of(input), shape_of(weight)
        shape = (x[0], w[0]) if len(x) == 2 else conv_output_shape(x, w, strides, pads, dilations)
        super().__init__(
            operands=[input, weight, bias],
            result_types=[TensorType(IntegerType(8), shape)],
            properties={
                **conv_properties(strides, pads, dilations, group), "multiplier": i64_array(np.asarray(multiplier).reshape(-1)),
                "shift": i64_array(np.asarray(shift).reshape(-1)), **epilogue_properties(**epilogue),
            },
        )

    @property
    def is_gemm(self) -> bool:
        return len(shape_of(self.input)) == 2

    @property
    def is_depthwise(self) -> bool:
        x, w = shape_of(self.input), shape_of(self.weight)
        g = self.group.value.data
        return not self.is_gemm and g > 1 and g == x[1] == w[0]

    def out_channels(self) -> int:
        return shape_of(self.weight)[0]

    def verify_npu(self) -> None:
        _expect_width(self, self.input, "input")
        _expect_width(self, self.weight, "weight")
        self.verify_epilogue()
        w = shape_of(self.weight)
        if self.is_gemm:
            x = shape_of(self.input)
            if len(w) != 2 or w[1] != x[1]:
                raise VerifyException(f"npu.conv: a {list(x)} matrix needs an M x {x[1]} weight, got {list(w)}")
            if ints(self.strides) != (1, 1) or ints(self.dilations) != (1, 1) or any(ints(self.pads)) or self.group.value.data != 1:
                raise VerifyException("npu.conv: a fully connected layer takes unit strides and dilations, no pads, group 1")
            expected: Sequence[int] = (x[0], w[0])
            reduction = w[1]
        else:
            expected = verify_conv_geometry(self, self.input, self.weight, ints(self.strides), ints(self.pads),
                                            ints(self.dilations), self.group.value.data)
            reduction = w[1] * w[2] * w[3]
        if reduction > fixed_point.MAX_REDUCTION:
            raise VerifyException(f"npu.conv: reduction length {reduction} exceeds {fixed_point.MAX_REDUCTION} (R13)")
        if self.bias is not None:
            _expect_width(self, self.bias, "bias", 32)
            if shape_of(self.bias) != (w[0],):
                raise VerifyException(f"npu.conv: bias shape must be [{w[0]}], got {list(shape_of(self.bias))}")
        _check_pairs(self, ints(self.multiplier), ints(self.shift), sorted({1, w[0]}))
        expect_shape(self, expected)

    def target_problem(self, target) -> str | None:
        w = shape_of(self.weight)
        kernel = (1, 1) if self.is_gemm else w[2:]
        problem = legality.conv_problem(
            target, kernel=kernel, strides=ints(self.strides), dilations=ints(self.dilations), pads=ints(self.pads),
            in_channels=w[1], depthwise=self.is_depthwise,
        )
        return problem or self.epilogue_problem(target)

    def compute(self, x, weight, bias) -> np.ndarray:
        m, s = ints(self.multiplier), ints(self.shift)
        relu = self.relu is not None
        if self.is_gemm:
            y = units.gemm_unit(x, weight, bias, m, s, relu)
        else:
            y = units.conv_unit(x, weight, bias, ints(self.strides), ints(self.pads), ints(self.dilations),
                                      self.group.value.data, m, s, relu)
        return self.finish(y)


@irdl_op_definition
class EltwiseOp(UnitOp):
    """ELTWISE: `add`/`sub` (each input through its own (multiplier, shift) into int24,
    optionally the int16 stage `pre_shift`, then the output rescale) or `mul` (the exact
    int16 product, then the output rescale). The first operand has the result's shape; the
    second the same shape, one value per channel, or one value.

    `units.eltwise_unit`, then the epilogue.
    """

    name = "npu.eltwise"
    lhs = operand_def(IntTensor)
    rhs = operand_def(IntTensor)
    result = result_def(IntTensor)
    op = prop_def(StringAttr)
    multiplier = prop_def(IntegerAttr[I64])
    shift = prop_def(IntegerAttr[I64])
    lhs_multiplier = opt_prop_def(IntegerAttr[I64])
    lhs_shift = opt_prop_def(IntegerAttr[I64])
    rhs_multiplier = opt_prop_def(IntegerAttr[I64])
    rhs_shift = opt_prop_def(IntegerAttr[I64])
    pre_shift = opt_prop_def(IntegerAttr[I64])
    traits = traits_def(Pure())
    irdl_options = (ParsePropInAttrDict(),)
    assembly_format = "$op $lhs `,` $rhs attr-dict `:` `(` type($lhs) `,` type($rhs) `)` `->` type($result)"

    INPUT_RESCALES: ClassVar[tuple[str, ...]] = ("lhs_multiplier", "lhs_shift", "rhs_multiplier", "rhs_shift")

    def __init__(self, op: str, lhs: SSAValue, rhs: SSAValue, multiplier: int, shift: int,
                 inputs: Sequence[int] | None = None, pre_shift: int | None = None, **epilogue):
        props: dict[str, Attribute] = {"op": StringAttr(op), "multiplier": i64_attr(multiplier),
                                       "shift": i64_attr(shift), **epilogue_properties(**epilogue)}
        if inputs is not None:
            props.update({name: i64_attr(v) for name, v in zip(self.INPUT_RESCALES, inputs)})
        if pre_shift is not None:
            props["pre_shift"] = i64_attr(pre_shift)
        super().__init__(operands=[lhs, rhs], result_types=[TensorType(IntegerType(8), shape_of(lhs))], properties=props)

    @property
    def kind(self) -> str:
        return self.op.data

    def input_rescales(self) -> tuple[int, int, int, int]:
        return tuple(self.properties[name].value.data for name in self.INPUT_RESCALES)  # type: ignore[return-value,attr-defined]

    def broadcast(self) -> str | None:
        return legality.eltwise_broadcast(shape_of(self.lhs), shape_of(self.rhs))

    def verify_npu(self) -> None:
        if self.kind not in ELTWISE_OPS:
            raise VerifyException(f"npu.eltwise: op must be one of {', '.join(ELTWISE_OPS)}, got '{self.kind}'")
        _expect_width(self, self.lhs, "lhs")
        _expect_width(self, self.rhs, "rhs")
        self.verify_epilogue()
        given = [name for name in self.INPUT_RESCALES if name in self.properties]
        if self.kind == "mul":
            if given or self.pre_shift is not None:
                raise VerifyException("npu.eltwise: mul takes no input rescales and no pre_shift")
        else:
            if len(given) != len(self.INPUT_RESCALES):
                raise VerifyException(f"npu.eltwise: {self.kind} needs {', '.join(self.INPUT_RESCALES)}")
            lm, ls, rm, rs = self.input_rescales()
            _check_pairs(self, [lm, rm], [ls, rs], (2,))
            if self.pre_shift is not None and not 0 <= self.pre_shift.value.data <= 15:
                raise VerifyException(f"npu.eltwise: pre_shift {self.pre_shift.value.data} must be in [0, 15]")
        _check_pairs(self, [self.multiplier.value.data], [self.shift.value.data], (1,))
        if self.broadcast() is None:
            raise VerifyException(
                f"npu.eltwise: the second operand {list(shape_of(self.rhs))} is neither the first's shape "
                f"{list(shape_of(self.lhs))}, one value per channel, nor one value"
            )
        expect_shape(self, shape_of(self.lhs))

    def channels(self) -> int:
        shape = shape_of(self.lhs)
        return shape[1] if len(shape) == 4 else shape[-1]

    def target_problem(self, target) -> str | None:
        return legality.eltwise_problem(target, self.kind) or self.epilogue_problem(target)

    def compute(self, a, b) -> np.ndarray:
        pre = None if self.pre_shift is None else self.pre_shift.value.data
        rescales = {} if self.kind == "mul" else dict(zip(("a_multiplier", "a_shift", "b_multiplier", "b_shift"),
                                                          self.input_rescales()))
        y = units.eltwise_unit(self.kind, a, b, self.multiplier.value.data, self.shift.value.data,
                                     pre_shift=pre, relu_flag=self.relu is not None, **rescales)
        return self.finish(y)


@irdl_op_definition
class PoolOp(UnitOp):
    """POOL: `max` over windows (no rescale), `avg` (window sums times one (multiplier, shift)
    or one per output position) or `global_avg` (the sum over H x W, one pair).

    `units.pool_unit`, then the epilogue.
    """

    name = "npu.pool"
    input = operand_def(IntTensor)
    result = result_def(IntTensor)
    kind = prop_def(StringAttr)
    kernel_shape = opt_prop_def(DenseArrayBase[I64])
    strides = opt_prop_def(DenseArrayBase[I64])
    pads = opt_prop_def(DenseArrayBase[I64])
    ceil_mode = opt_prop_def(IntegerAttr[I64])  # 1: the last window may start in the end padding (ONNX ceil_mode)
    multiplier = opt_prop_def(DenseArrayBase[I64])
    shift = opt_prop_def(DenseArrayBase[I64])
    traits = traits_def(Pure())
    irdl_options = (ParsePropInAttrDict(),)
    assembly_format = "$kind $input attr-dict `:` type($input) `->` type($result)"

    def __init__(self, kind: str, input: SSAValue, multiplier=(), shift=(), kernel=None, strides=None, pads=None,
                 ceil_mode: bool = False, **epilogue):
        x = shape_of(input)
        props: dict[str, Attribute] = {"kind": StringAttr(kind), **epilogue_properties(**epilogue)}
        if kind != "max":
            props.update(multiplier=i64_array(np.asarray(multiplier).reshape(-1)), shift=i64_array(np.asarray(shift).reshape(-1)))
        if kind == "global_avg":
            hw: Sequence[int] = (1, 1)
        else:
            props.update(kernel_shape=i64_array(kernel), strides=i64_array(strides), pads=i64_array(pads))
            props["ceil_mode"] = i64_attr(int(ceil_mode))
            hw = pool_output_hw(x[2:], kernel, strides, pads, (1, 1), ceil_mode)
        super().__init__(operands=[input], result_types=[TensorType(IntegerType(8), (x[0], x[1], *hw))], properties=props)

    @property
    def pool_kind(self) -> str:
        return self.kind.data

    def window(self) -> tuple[tuple[int, ...], tuple[int, ...], tuple[int, ...]]:
        return ints(self.kernel_shape), ints(self.strides), ints(self.pads)

    def out_hw(self) -> tuple[int, int]:
        shape = shape_of(self.result)
        return shape[2], shape[3]

    def verify_npu(self) -> None:
        kind = self.pool_kind
        if kind not in POOL_KINDS:
            raise VerifyException(f"npu.pool: kind must be one of {', '.join(POOL_KINDS)}, got '{kind}'")
        _expect_width(self, self.input, "input")
        self.verify_epilogue()
        x = shape_of(self.input)
        if len(x) != 4:
            raise VerifyException(f"npu.pool: the input must be an NCHW map, got {list(x)}")
        window = (self.kernel_shape, self.strides, self.pads)
        if kind == "global_avg":
            if any(part is not None for part in window) or self.ceil_mode is not None:
                raise VerifyException("npu.pool: global_avg takes no window")
            expect_shape(self, (x[0], x[1], 1, 1))
            _check_pairs(self, ints(self.multiplier), ints(self.shift), (1,))
            return
        if any(part is None for part in window):
            raise VerifyException(f"npu.pool: {kind} pooling needs kernel_shape, strides and pads")
        ceil_mode = self.ceil_mode is not None and bool(self.ceil_mode.value.data)
        oh, ow = verify_window(self, self.input, *self.window(), (1, 1), ceil_mode)
        expect_shape(self, (x[0], x[1], oh, ow))
        if kind == "max":
            if self.multiplier is not None or self.shift is not None:
                raise VerifyException("npu.pool: max pooling takes no rescale (no multiplier or shift)")
        else:
            _check_pairs(self, ints(self.multiplier), ints(self.shift), sorted({1, oh * ow}))

    def target_problem(self, target) -> str | None:
        if self.pool_kind == "global_avg":
            problem = legality.pool_problem(target, "global_avg")
        else:
            problem = legality.pool_problem(target, self.pool_kind, *self.window())
        return problem or self.epilogue_problem(target)

    def compute(self, x) -> np.ndarray:
        kernel, strides, pads = ((), (), ()) if self.pool_kind == "global_avg" else self.window()
        y = units.pool_unit(self.pool_kind, x, kernel, strides, pads, self.out_hw(),
                                  ints(self.multiplier), ints(self.shift))
        # POOL has no relu flag: a relu here runs in the epilogue (one CLAMP or TABLE with the rest)
        return self.finish(units.relu(y) if self.relu is not None else y)


@irdl_op_definition
class TableOp(NpuOp):
    """TABLE: R15's 256-entry lookup of every int8 value (any function of one int8 code)."""

    name = "npu.table"
    input = operand_def(IntTensor)
    result = result_def(IntTensor)
    table = prop_def(DenseArrayBase)
    traits = traits_def(Pure())
    irdl_options = (ParsePropInAttrDict(),)
    assembly_format = "$input attr-dict `:` type($input) `->` type($result)"

    def __init__(self, input: SSAValue, table: Sequence[int] | np.ndarray):
        super().__init__(operands=[input], result_types=[input.type], properties={"table": table_attr(table)})

    def entries(self) -> np.ndarray:
        return _table_entries(self.table)

    def verify_npu(self) -> None:
        _expect_width(self, self.input, "input")
        _check_table(self, self.table)
        expect_shape(self, shape_of(self.input))

    def target_problem(self, target) -> str | None:
        return legality.unit_problem(target, "table")


@irdl_op_definition
class ClampOp(NpuOp):
    """CLAMP: R8's clip of every int8 value to [min, max]."""

    name = "npu.clamp"
    input = operand_def(IntTensor)
    result = result_def(IntTensor)
    min = prop_def(IntegerAttr[I64])
    max = prop_def(IntegerAttr[I64])
    traits = traits_def(Pure())
    irdl_options = (ParsePropInAttrDict(),)
    assembly_format = "$input attr-dict `:` type($input) `->` type($result)"

    def __init__(self, input: SSAValue, low: int, high: int):
        super().__init__(operands=[input], result_types=[input.type], properties={"min": i64_attr(low), "max": i64_attr(high)})

    def bounds(self) -> tuple[int, int]:
        return self.min.value.data, self.max.value.data

    def verify_npu(self) -> None:
        _expect_width(self, self.input, "input")
        low, high = self.bounds()
        limit = fixed_point.qmax(8)
        if not -limit <= low <= high <= limit:
            raise VerifyException(f"npu.clamp: bounds [{low}, {high}] are not an ordered range in [-127, 127]")
        expect_shape(self, shape_of(self.input))

    def target_problem(self, target) -> str | None:
        return legality.unit_problem(target, "clamp")


# --------------------------------------------------------------------------------------
# Data movement: views and copies of int8 tensors, done by the DMA
# --------------------------------------------------------------------------------------


class MoveOp(NpuOp):
    traits = traits_def(Pure())
    irdl_options = (ParsePropInAttrDict(),)

    def verify_moved_widths(self) -> None:
        for index, value in enumerate(self.operands):
            _expect_width(self, value, f"operand {index}")
        _expect_width(self, self.results[0], "result")


@irdl_op_definition
class ReshapeOp(MoveOp):
    """Same elements in row-major order, a new shape (a reshape or a flatten)."""

    name = "npu.reshape"
    input = operand_def(IntTensor)
    result = result_def(IntTensor)
    assembly_format = "$input attr-dict `:` type($input) `->` type($result)"

    def __init__(self, input: SSAValue, shape: Sequence[int]):
        super().__init__(operands=[input], result_types=[TensorType(IntegerType(8), shape)])

    def verify_npu(self) -> None:
        self.verify_moved_widths()
        before, after = shape_of(self.input), shape_of(self.result)
        if math.prod(before) != math.prod(after):
            raise VerifyException(f"npu.reshape: cannot reshape {list(before)} to {list(after)}")


@irdl_op_definition
class TransposeOp(MoveOp):
    """Result dimension i is input dimension perm[i]."""

    name = "npu.transpose"
    input = operand_def(IntTensor)
    result = result_def(IntTensor)
    perm = prop_def(DenseArrayBase[I64])
    assembly_format = "$input attr-dict `:` type($input) `->` type($result)"

    def __init__(self, input: SSAValue, perm: Sequence[int]):
        shape = shape_of(input)
        super().__init__(operands=[input], result_types=[TensorType(IntegerType(8), [shape[p] for p in perm])],
                         properties={"perm": i64_array(perm)})

    def verify_npu(self) -> None:
        self.verify_moved_widths()
        shape, perm = shape_of(self.input), ints(self.perm)
        if sorted(perm) != list(range(len(shape))):
            raise VerifyException(f"npu.transpose: perm {list(perm)} is not a permutation of 0..{len(shape) - 1}")
        expect_shape(self, [shape[p] for p in perm])


@irdl_op_definition
class ConcatOp(MoveOp):
    """Tensors joined along `axis` (each part stored at its offset by the DMA)."""

    name = "npu.concat"
    inputs = var_operand_def(IntTensor)
    result = result_def(IntTensor)
    axis = prop_def(IntegerAttr[I64])
    assembly_format = "$inputs attr-dict `:` functional-type(operands, results)"

    def __init__(self, inputs: Sequence[SSAValue], axis: int):
        shapes = [shape_of(v) for v in inputs]
        out = list(shapes[0])
        out[axis] = sum(s[axis] for s in shapes)
        super().__init__(operands=[list(inputs)], result_types=[TensorType(IntegerType(8), out)],
                         properties={"axis": i64_attr(axis)})

    def verify_npu(self) -> None:
        if not self.inputs:
            raise VerifyException("npu.concat: needs at least one input")
        self.verify_moved_widths()
        shapes = [shape_of(v) for v in self.inputs]
        rank = len(shapes[0])
        axis = normalize_axis(self, self.axis.value.data, rank)
        if any(len(s) != rank or any(a != b for i, (a, b) in enumerate(zip(s, shapes[0])) if i != axis) for s in shapes):
            raise VerifyException(f"npu.concat: input shapes {[list(s) for s in shapes]} differ outside axis {axis}")
        out = list(shapes[0])
        out[axis] = sum(s[axis] for s in shapes)
        expect_shape(self, out)


def interleave_rows(out_size: int, factor: int, phase: int) -> int:
    """How many output rows (or columns) phase `phase` of an interleave by `factor` fills."""
    return len(range(phase, out_size, factor))


@dataclass(frozen=True)
class PhaseWindow:
    """One phase of an interleave: `rows` x `cols` of `source` from (`top`, `left`), stored at
    output rows a, a + f_h, ... and columns b, b + f_w, ..."""

    source: SSAValue
    a: int
    b: int
    top: int
    left: int
    rows: int
    cols: int


@irdl_op_definition
class InterleaveOp(MoveOp):
    """f_h * f_w phase maps interleaved into one map by strided DMA stores: phase
    p = a * f_w + b fills output rows a, a + f_h, ... and columns b, b + f_w, ..., from its
    own row offsets[2p] and column offsets[2p + 1] on (rows and columns beyond are not stored).
    A nearest upsampling by pixel replication is the input stored f_h * f_w times.

    `fixed_point.interleave`."""

    name = "npu.interleave"
    inputs = var_operand_def(IntTensor)
    result = result_def(IntTensor)
    factors = prop_def(DenseArrayBase[I64])
    offsets = prop_def(DenseArrayBase[I64])
    assembly_format = "$inputs attr-dict `:` functional-type(operands, results)"

    def __init__(self, inputs: Sequence[SSAValue], factors: Sequence[int], offsets: Sequence[int], out_hw: Sequence[int]):
        n, c = shape_of(inputs[0])[:2]
        super().__init__(operands=[list(inputs)], result_types=[TensorType(IntegerType(8), (n, c, *out_hw))],
                         properties={"factors": i64_array(factors), "offsets": i64_array(offsets)})

    def out_hw(self) -> tuple[int, int]:
        shape = shape_of(self.result)
        return shape[2], shape[3]

    def phase_windows(self) -> list[PhaseWindow]:
        """Where each phase goes (a, b) and what of it is moved (from top, left: rows x cols)."""
        (fh, fw), offsets, (oh, ow) = ints(self.factors), ints(self.offsets), self.out_hw()
        windows = []
        for index, value in enumerate(self.inputs):
            a, b = divmod(index, fw)
            windows.append(PhaseWindow(value, a, b, offsets[2 * index], offsets[2 * index + 1],
                                       interleave_rows(oh, fh, a), interleave_rows(ow, fw, b)))
        return windows

    def verify_npu(self) -> None:
        self.verify_moved_widths()
        factors, offsets = ints(self.factors), ints(self.offsets)
        expect_len(self, "factors", factors, 2)
        if min(factors) < 1:
            raise VerifyException(f"npu.interleave: factors {list(factors)} must be at least 1")
        fh, fw = factors
        if len(self.inputs) != fh * fw:
            raise VerifyException(f"npu.interleave: factors {fh}x{fw} need {fh * fw} phases, got {len(self.inputs)}")
        expect_len(self, "offsets", offsets, 2 * fh * fw)
        out = shape_of(self.result)
        if len(out) != 4:
            raise VerifyException(f"npu.interleave: the result must be an NCHW map, got {list(out)}")
        for index, window in enumerate(self.phase_windows()):
            shape, top, left = shape_of(window.source), window.top, window.left
            need = (top + window.rows, left + window.cols)
            if len(shape) != 4 or shape[:2] != out[:2] or min(top, left) < 0 or shape[2] < need[0] or shape[3] < need[1]:
                raise VerifyException(
                    f"npu.interleave: phase {index} {list(shape)} does not hold rows {top}..{need[0] - 1} and columns "
                    f"{left}..{need[1] - 1} of a {list(out[:2])} map"
                )

    def target_problem(self, target) -> str | None:
        n, c, oh, ow = shape_of(self.result)
        return legality.interleave_problem(target, c, (oh, ow), ints(self.factors))

    def compute(self, phases) -> np.ndarray:
        return fixed_point.interleave(phases, ints(self.factors), ints(self.offsets), self.out_hw())


PAD_MODES = ("edge",)


@irdl_op_definition
class PadOp(MoveOp):
    """A map grown by `pads` (top, left, bottom, right) copies of its nearest edge pixel, by
    DMA stores of the map and of its edge rows and columns. `fixed_point.pad_edge`."""

    name = "npu.pad"
    input = operand_def(IntTensor)
    result = result_def(IntTensor)
    mode = prop_def(StringAttr)
    pads = prop_def(DenseArrayBase[I64])
    assembly_format = "$mode $input attr-dict `:` type($input) `->` type($result)"

    def __init__(self, input: SSAValue, pads: Sequence[int], mode: str = "edge"):
        n, c, h, w = shape_of(input)
        shape = (n, c, h + pads[0] + pads[2], w + pads[1] + pads[3])
        super().__init__(operands=[input], result_types=[TensorType(IntegerType(8), shape)],
                         properties={"mode": StringAttr(mode), "pads": i64_array(pads)})

    def verify_npu(self) -> None:
        self.verify_moved_widths()
        if self.mode.data not in PAD_MODES:
            raise VerifyException(f"npu.pad: mode must be one of {', '.join(PAD_MODES)}, got '{self.mode.data}'")
        pads = ints(self.pads)
        expect_len(self, "pads", pads, 4)
        if min(pads) < 0:
            raise VerifyException(f"npu.pad: pads {list(pads)} must be at least 0")
        x = shape_of(self.input)
        if len(x) != 4:
            raise VerifyException(f"npu.pad: the input must be an NCHW map, got {list(x)}")
        expect_shape(self, (x[0], x[1], x[2] + pads[0] + pads[2], x[3] + pads[1] + pads[3]))

    def target_problem(self, target) -> str | None:
        n, c, h, w = shape_of(self.result)
        return legality.interleave_problem(target, c, (h, w), (1, 1))

    def compute(self, x) -> np.ndarray:
        return fixed_point.pad_edge(x, ints(self.pads))


@irdl_op_definition
class RelayoutOp(MoveOp):
    """A copy of a map into the storage order `layout` (NHWC or NCHW) by the DMA; the values
    and the logical shape are unchanged. Inserted by npu-assign-layout."""

    name = "npu.relayout"
    input = operand_def(IntTensor)
    result = result_def(IntTensor)
    layout = prop_def(StringAttr)
    assembly_format = "$input $layout attr-dict `:` type($input) `->` type($result)"

    def __init__(self, input: SSAValue, layout: str):
        super().__init__(operands=[input], result_types=[input.type], properties={"layout": StringAttr(layout)})

    def verify_npu(self) -> None:
        self.verify_moved_widths()
        if self.layout.data not in LAYOUTS:
            raise VerifyException(f"npu.relayout: layout must be one of {', '.join(LAYOUTS)}, got '{self.layout.data}'")
        expect_shape(self, shape_of(self.input))


# --------------------------------------------------------------------------------------
# Host placement: what the target cannot run, run by the host between accelerator segments
# --------------------------------------------------------------------------------------

HOST_REASON = "npu.host_reason"  # on each op of a host region that the target could not take: why


@irdl_op_definition
class HostOp(NpuOp):
    """A host segment: ops the target cannot run (float ops the quantizer left, fixed ops no
    unit takes, ONNX nodes onnxruntime runs), run by the host between accelerator
    operations. The region is isolated: it reads its operands as block arguments and yields
    its results: int8 tensors the accelerator reads on, or values as they are (float32
    program outputs, a tensor another segment reads, a host op's int64 or bool values,
    which also come from program inputs). Each op placed here for a reason
    carries it as `npu.host_reason`. Its ops run through the ordinary interpreters (fixed
    ops through the integer semantics), so the module stays bit-identical to the fixed level.
    """

    name = "npu.host"
    inputs = var_operand_def()
    outputs = var_result_def()
    body = region_def("single_block")
    traits = traits_def(IsolatedFromAbove())
    assembly_format = "`(` $inputs `)` attr-dict-with-keyword `:` functional-type($inputs, $outputs) $body"

    def __init__(self, inputs: Sequence[SSAValue], result_types: Sequence[Attribute], body):
        super().__init__(operands=[list(inputs)], result_types=[list(result_types)], regions=[body])

    def yielded(self) -> HostYieldOp:
        terminator = self.body.block.last_op
        assert isinstance(terminator, HostYieldOp)
        return terminator

    def placed_ops(self) -> list[Operation]:
        """The ops of the region placed here for a reason (not the conversions and constants they need)."""
        return [op for op in self.body.walk() if HOST_REASON in op.attributes]

    def verify_npu(self) -> None:
        block = self.body.block
        if [arg.type for arg in block.args] != [value.type for value in self.inputs]:
            raise VerifyException("npu.host: the region's arguments must have the operands' types")
        terminator = block.last_op
        if not isinstance(terminator, HostYieldOp):
            raise VerifyException("npu.host: the region must end with npu.host_yield")
        if [value.type for value in terminator.operands] != [value.type for value in self.outputs]:
            raise VerifyException("npu.host: npu.host_yield must yield the results' types")
        for value in (*self.inputs, *self.outputs):
            if not isinstance(value.type, TensorType):
                raise VerifyException(f"npu.host: operands and results are tensors, got {value.type}")


@irdl_op_definition
class HostYieldOp(IRDLOperation):
    """The results of a host segment."""

    name = "npu.host_yield"
    values = var_operand_def()
    traits = traits_def(IsTerminator(), HasParent(HostOp))
    assembly_format = "($values^ `:` type($values))? attr-dict"

    def __init__(self, values: Sequence[SSAValue]):
        super().__init__(operands=[list(values)])


NPU = Dialect(
    "npu",
    [ConvOp, EltwiseOp, PoolOp, TableOp, ClampOp, ReshapeOp, TransposeOp, ConcatOp, InterleaveOp, PadOp, RelayoutOp,
     HostOp, HostYieldOp],
)
