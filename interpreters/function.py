"""Running a function of IR (nn, fixed, npu) on numpy inputs: signature, input binding and the
compiled straight-line function every interpreter-level user shares (calibration, constant
folding, reports, host segments) and `xnpu.run` dispatches to.

A module's entry point is `func.func @main` (or its only function). Inputs and outputs are
named by the `nn.name` argument/result attributes the ONNX importer writes, falling back to
`input0`, `output0`, ... Inputs are checked against the signature (`bind_inputs`); a whole
test set is one call: N samples come along the leading dimension of a batch-1 input
(N x 3 x 224 x 224 for 1 x 3 x 224 x 224), or along a new leading axis of any input (a
recurrent model's state 2 x 1 x 128 as N x 2 x 1 x 128, its int64 scalar as N values),
and an input given once in its own shape is the same for every sample. The outputs are
stacked the way the samples came.
"""

from __future__ import annotations

import math
from collections.abc import Mapping

import numpy as np
from xdsl.dialects import func
from xdsl.dialects.builtin import ArrayAttr, DictionaryAttr, ModuleOp, StringAttr, TensorType
from xdsl.interpreter import (
    Interpreter,
    InterpreterFunctions,
    ReturnedValues,
    impl_callable,
    impl_terminator,
    register_impls,
)
from xdsl.ir import SSAValue
from xdsl.traits import ConstantLike

from xnpu.core.budget import check_total, over_tensor_budget
from xnpu.core.errors import XnpuError
from xnpu.core.inputs import BoundInputs, TensorSpec, bind_inputs, stack_outputs  # noqa: F401 (part of this module's API)
from xnpu.interpreters.batching import runs_batched
from xnpu.interpreters.fixed import FixedFunctions
from xnpu.interpreters.nn import NNFunctions
from xnpu.interpreters.npu import NpuFunctions
from xnpu.ir.io import describe_op
from xnpu.semantics.dtypes import numpy_dtype

NAME_ATTR = "nn.name"


def entry_function(module: ModuleOp) -> func.FuncOp:
    functions = [op for op in module.ops if isinstance(op, func.FuncOp)]
    for function in functions:
        if function.sym_name.data == "main":
            return function
    if len(functions) == 1:
        return functions[0]
    raise XnpuError("the module has no func.func @main to run")


def value_names(attrs: ArrayAttr[DictionaryAttr] | None, count: int, prefix: str) -> list[str]:
    names = []
    for index in range(count):
        name = None
        if attrs is not None and index < len(attrs.data):
            value = attrs.data[index].data.get(NAME_ATTR)
            if isinstance(value, StringAttr):
                name = value.data
        names.append(name or f"{prefix}{index}")
    return names


def _spec(name: str, type_) -> TensorSpec:
    if type_.name == "nn.onnx_value":
        return TensorSpec(name, (), np.dtype(object), type_.description.data)
    if not isinstance(type_, TensorType):
        raise XnpuError(f"'{name}' has type {type_}; only tensors can be passed in or out")

    return TensorSpec(name, tuple(type_.get_shape()), numpy_dtype(type_.get_element_type()))


def signature(module: ModuleOp) -> tuple[list[TensorSpec], list[TensorSpec]]:
    function = entry_function(module)
    inputs = function.function_type.inputs.data
    outputs = function.function_type.outputs.data
    input_names = value_names(function.arg_attrs, len(inputs), "input")
    output_names = value_names(function.res_attrs, len(outputs), "output")
    return (
        [_spec(n, t) for n, t in zip(input_names, inputs)],
        [_spec(n, t) for n, t in zip(output_names, outputs)],
    )


def interpreter_functions():
    """The interpreter functions of xnpu's dialects."""
    return [NNFunctions(), FixedFunctions(), NpuFunctions()]


class CompiledFunction:
    """A function's ops as a straight-line list of steps, built once per module.

    Each step calls the op's implementation in xnpu.interpreters (so the semantics modules,
    as with xDSL's Interpreter) on the values of its operands, and a value is dropped after
    its last use: memory holds only the live tensors, which matters when N samples run at
    once. `listeners` receive `did_interpret_op(op, results)` after every op, as xDSL
    Interpreter listeners do. Functions this cannot run (several blocks, an op without an
    implementation) raise CannotCompile; `run` then uses xDSL's Interpreter.

    Before a call runs, the values it will compute for its samples are checked against the
    memory budget (xnpu.core.budget), from the IR's shapes: each one, and those alive at once.
    """

    class CannotCompile(Exception):
        pass

    def __init__(self, module: ModuleOp, listeners=()) -> None:
        self.function = entry_function(module)
        self.listeners = tuple(listeners)
        block = self.function.body.blocks.first
        if block is None or block.next_block is not None:
            raise CompiledFunction.CannotCompile("the function has several blocks")
        implementations = {}
        for functions in interpreter_functions():
            for op_type, implementation in type(functions)._impls():  # pyright: ignore[reportPrivateUsage]
                implementations[op_type] = (functions, implementation)
        slots: dict[SSAValue, int] = {argument: index for index, argument in enumerate(block.args)}
        self.arguments = len(block.args)
        self.steps: list[tuple] = []
        self.outputs: tuple[int, ...] = ()
        last_use: dict[int, int] = {}
        for op in block.ops:
            operands = tuple(slots[operand] for operand in op.operands)
            if isinstance(op, func.ReturnOp):
                self.outputs = operands
                break
            if type(op) not in implementations or op.regions:
                raise CompiledFunction.CannotCompile(f"no implementation of {op.name}")
            for slot in operands:
                last_use[slot] = len(self.steps)
            results = []
            for result in op.results:
                slots[result] = len(slots)
                results.append(slots[result])
            functions, implementation = implementations[type(op)]
            self.steps.append((op, functions, implementation, operands, tuple(results)))
        self.slot_count = len(slots)
        self.constant_slots = {slot for step in self.steps if step[0].has_trait(ConstantLike) for slot in step[4]}
        self.constant_slots.update(range(self.arguments))  # the caller's arrays
        self.slot_bytes = [0] * len(slots)
        for value, slot in slots.items():
            self.slot_bytes[slot] = _value_bytes(value)
        kept = set(self.outputs)
        # after step k, the values read there for the last time (and not returned) are dropped
        self.dropped = [tuple(s for s in step[3] if last_use[s] == k and s not in kept) for k, step in enumerate(self.steps)]
        self.batched = runs_batched(self.function)
        leading = [shape_of_type(argument.type)[:1] for argument in block.args]
        self.argument_leading = leading[0][0] if leading and leading[0] else 0
        self.budget_checked: set[int] = set()

    def samples_in(self, arguments: tuple) -> int:
        """How many samples `arguments` hold (along a batch-1 model's leading dimension)."""
        if not self.batched or not arguments or not self.argument_leading or not getattr(arguments[0], "ndim", 0):
            return 1
        return max(1, arguments[0].shape[0] // self.argument_leading)

    def check_budget(self, samples: int) -> None:
        """An XnpuError before `samples` run at once when a value they compute, or the values
        alive together, would be over the budget (constants hold what the module holds)."""
        if samples in self.budget_checked:
            return
        for op, _, _, _, results in self.steps:
            if op.has_trait(ConstantLike):
                continue
            for result, slot in zip(op.results, results):
                shape = shape_of_type(result.type)
                if not shape or not self.slot_bytes[slot] or math.prod(shape) <= 0:  # an empty tensor holds nothing
                    continue
                reason = over_tensor_budget((shape[0] * samples, *shape[1:]), self.slot_bytes[slot] // math.prod(shape),
                                            str(result.type.get_element_type()))
                if reason is not None:
                    at_once = f" ({samples} samples at once)" if samples > 1 else ""
                    raise XnpuError(f"{describe_op(op)}{at_once}: {reason}")
        check_total(self.computed_bytes(samples), f"running {self.function.sym_name.data}"
                    + (f" on {samples} samples at once" if samples > 1 else ""))
        self.budget_checked.add(samples)

    def computed_bytes(self, samples: int) -> int:
        """The largest set of values a run of `samples` computes that are alive at once."""
        live = peak = 0
        for (op, _, _, _, results), dropped in zip(self.steps, self.dropped):
            if op.has_trait(ConstantLike):
                continue
            live += samples * sum(self.slot_bytes[r] for r in results)
            peak = max(peak, live)
            live -= samples * sum(self.slot_bytes[d] for d in dropped if d not in self.constant_slots)
        return peak

    def __call__(self, arguments: tuple) -> tuple:
        run = self.stepwise(arguments)
        while True:
            try:
                op, outputs = next(run)
            except StopIteration as finished:
                return finished.value
            for listener in self.listeners:
                listener.did_interpret_op(op, outputs)

    def stepwise(self, arguments: tuple):
        """The run as a generator: yields (op, its results) after each op and returns the
        function's results. A caller can interleave two runs op by op (the per-layer report
        compares the float and the int8 graph layer by layer) or stop one early (`close()`)."""
        self.check_budget(self.samples_in(arguments))
        values: list = [None] * self.slot_count
        values[: self.arguments] = arguments
        for (op, functions, implementation, operands, results), dropped in zip(self.steps, self.dropped):
            outputs = implementation(functions, None, op, tuple(values[s] for s in operands)).values
            for slot, value in zip(results, outputs):
                values[slot] = value
            yield op, outputs
            for slot in dropped:
                values[slot] = None
        return tuple(values[s] for s in self.outputs)

    def sample_bytes(self) -> int:
        """An estimate of the memory one sample needs: the largest set of live values, plus the
        windows a convolution gathers (its im2col), from the IR's batch-1 shapes."""
        live = sum(self.slot_bytes[: self.arguments])
        peak = live
        for (op, _, _, _, results), dropped in zip(self.steps, self.dropped):
            produced = sum(self.slot_bytes[r] for r in results)
            scratch = 0
            if op.name.endswith("conv2d"):
                kernel = math.prod(op.operands[1].type.get_shape()[1:])
                scratch = 4 * kernel * math.prod(op.results[0].type.get_shape()[2:])
            peak = max(peak, live + produced + scratch)
            live += produced - sum(self.slot_bytes[d] for d in dropped)
        return peak


def shape_of_type(type_) -> tuple[int, ...]:
    return tuple(type_.get_shape()) if isinstance(type_, TensorType) else ()


def _value_bytes(value: SSAValue) -> int:
    if not isinstance(value.type, TensorType):
        return 0

    # a dimension the data decides (a host op's, -1 in the type) is counted as 1
    return math.prod(max(d, 1) for d in value.type.get_shape()) * numpy_dtype(value.type.get_element_type()).itemsize


# Samples run at once where a function allows it (xnpu.interpreters.batching): as many as fit this much
# memory (CompiledFunction.sample_bytes), at most MAX_BATCH.
BATCH_MEMORY_BYTES = 256 << 20
MAX_BATCH = 64


def default_batch(compiled: CompiledFunction, memory_bytes: int = BATCH_MEMORY_BYTES) -> int:
    if not compiled.batched:
        return 1
    return max(1, min(MAX_BATCH, memory_bytes // max(1, compiled.sample_bytes())))


def batches(samples: int, batch: int):
    """[start, stop) ranges of at most `batch` samples."""
    for start in range(0, samples, batch):
        yield start, min(samples, start + batch)


def run_function(module: ModuleOp, inputs: np.ndarray | Mapping[str, np.ndarray], batch: int | None = None,
                 call_for=None) -> dict[str, np.ndarray]:
    """Run the entry function of `module` (nn, fixed or npu IR) on numpy inputs; outputs by name
    (stacked over samples). Samples run `batch` at a time (default: as many as fit
    BATCH_MEMORY_BYTES) where the function keeps samples apart along axis 0
    (xnpu.interpreters.batching), else one at a time. A function CompiledFunction cannot take
    runs sample by sample on `call_for(module)`, a callable on argument tuples (default: xDSL's
    Interpreter with xnpu's interpreter functions)."""
    input_specs, output_specs = signature(module)
    bound = bind_inputs(input_specs, inputs)
    try:
        compiled = CompiledFunction(module)
    except CompiledFunction.CannotCompile:
        call = (call_for or xdsl_interpreter_call)(module)
        per_sample = [call(bound.take(index, index + 1)) for index in range(bound.samples)]
        return stack_outputs(output_specs, per_sample, bound)
    if batch is not None and batch < 1:
        raise XnpuError(f"batch must be >= 1, got {batch}")
    size = 1 if not compiled.batched else (batch or default_batch(compiled))
    per_batch: list[tuple] = []
    for start, stop in batches(bound.samples, size):
        per_batch.append(compiled(bound.take(start, stop)))
    return stack_outputs(output_specs, per_batch, bound)


@register_impls
class FuncFunctions(InterpreterFunctions):
    """`func.func` and `func.return` for xDSL's Interpreter (the implementations xDSL ships
    are in xdsl.interpreters, whose package imports every interpreter xDSL has: seconds)."""

    @impl_terminator(func.ReturnOp)
    def run_return(self, interpreter: Interpreter, op: func.ReturnOp, args: tuple):
        return ReturnedValues(args), ()

    @impl_callable(func.FuncOp)
    def call_func(self, interpreter: Interpreter, op: func.FuncOp, args: tuple):
        return interpreter.run_ssacfg_region(op.body, args, op.sym_name.data)


def xdsl_interpreter_call(module: ModuleOp):
    """xDSL's Interpreter on the entry function (for functions CompiledFunction cannot take:
    several blocks, ops with regions such as npu.host)."""
    function = entry_function(module)
    interpreter = Interpreter(module)
    for functions in (FuncFunctions(), *interpreter_functions()):
        interpreter.register_implementations(functions)
    return lambda args: interpreter.call_op(function, args)
