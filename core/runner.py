"""Running IR on numpy inputs: the `run` half of xnpu's Python API.

A module's entry point is `func.func @main` (or its only function). Inputs and outputs are
named by the `nn.name` argument/result attributes the ONNX importer writes, falling back to
`input0`, `output0`, ... Inputs are checked against the signature; an input whose leading
dimension is a multiple of samples of a batch-1 model runs each sample and stacks the
outputs, so a whole test set is one call.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

import numpy as np
from xdsl.dialects import func
from xdsl.dialects.builtin import ArrayAttr, DictionaryAttr, ModuleOp, StringAttr, TensorType
from xdsl.interpreter import Interpreter
from xdsl.interpreters.func import FuncFunctions

from xnpu.errors import XnpuError

NAME_ATTR = "nn.name"


@dataclass(frozen=True)
class TensorSpec:
    name: str
    shape: tuple[int, ...]
    dtype: np.dtype

    def describe(self) -> str:
        return f"{self.name}: {'x'.join(map(str, self.shape))} {self.dtype}"


def entry_function(module: ModuleOp) -> func.FuncOp:
    functions = [op for op in module.ops if isinstance(op, func.FuncOp)]
    for function in functions:
        if function.sym_name.data == "main":
            return function
    if len(functions) == 1:
        return functions[0]
    raise XnpuError("the module has no func.func @main to run")


def _names(attrs: ArrayAttr[DictionaryAttr] | None, count: int, prefix: str) -> list[str]:
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
    if not isinstance(type_, TensorType):
        raise XnpuError(f"'{name}' has type {type_}; only tensors can be passed in or out")
    from xnpu.semantics.dtypes import numpy_dtype

    return TensorSpec(name, tuple(type_.get_shape()), numpy_dtype(type_.get_element_type()))


def signature(module: ModuleOp) -> tuple[list[TensorSpec], list[TensorSpec]]:
    function = entry_function(module)
    inputs = function.function_type.inputs.data
    outputs = function.function_type.outputs.data
    input_names = _names(function.arg_attrs, len(inputs), "input")
    output_names = _names(function.res_attrs, len(outputs), "output")
    return (
        [_spec(n, t) for n, t in zip(input_names, inputs)],
        [_spec(n, t) for n, t in zip(output_names, outputs)],
    )


def interpreter_functions():
    """The interpreter functions of every dialect a module may contain."""
    from xnpu.interpreters.fixed import FixedFunctions
    from xnpu.interpreters.nn import NNFunctions
    from xnpu.interpreters.npu import NpuFunctions

    return [FuncFunctions(), NNFunctions(), FixedFunctions(), NpuFunctions()]


def bind_inputs(
    specs: list[TensorSpec], inputs: np.ndarray | Mapping[str, np.ndarray]
) -> tuple[list[np.ndarray], int]:
    """Match user arrays to the signature; returns the arrays and the number of samples."""
    if isinstance(inputs, np.ndarray):
        if len(specs) != 1:
            names = ", ".join(s.name for s in specs)
            raise XnpuError(f"the model has {len(specs)} inputs ({names}); pass them by name")
        inputs = {specs[0].name: inputs}
    unknown = sorted(set(inputs) - {s.name for s in specs})
    if unknown:
        raise XnpuError(
            f"unknown input '{unknown[0]}'; the model's inputs are: " + ", ".join(s.name for s in specs)
        )
    arrays, batches = [], set()
    for spec in specs:
        if spec.name not in inputs:
            raise XnpuError(f"missing input '{spec.name}' ({spec.describe()})")
        array = np.asarray(inputs[spec.name])
        if array.dtype.kind != spec.dtype.kind:
            raise XnpuError(
                f"input '{spec.name}' has dtype {array.dtype}, the model expects {spec.dtype}"
            )
        array = array.astype(spec.dtype, copy=False)
        if array.shape == spec.shape:
            batches.add(1)
        elif (
            len(spec.shape) >= 1
            and spec.shape[0] == 1
            and array.ndim == len(spec.shape)
            and array.shape[1:] == spec.shape[1:]
        ):
            batches.add(array.shape[0])
        else:
            raise XnpuError(
                f"input '{spec.name}' has shape {list(array.shape)}, the model expects "
                f"{list(spec.shape)}" + (" (or N samples along a leading batch of 1)" if spec.shape[:1] == (1,) else "")
            )
        arrays.append(array)
    if len(batches) > 1:
        raise XnpuError(f"inputs disagree on the number of samples: {sorted(batches)}")
    if 0 in batches:
        raise XnpuError("the data holds no samples (its leading dimension is 0)")
    return arrays, batches.pop() if batches else 1


def run(module: ModuleOp, inputs: np.ndarray | Mapping[str, np.ndarray]) -> dict[str, np.ndarray]:
    """Run `module` on numpy inputs; returns outputs by name (stacked over samples)."""
    input_specs, output_specs = signature(module)
    arrays, samples = bind_inputs(input_specs, inputs)
    function = entry_function(module)
    if any(op.dialect_name() == "tosa" for op in function.walk()):  # the TOSA export runs on IREE (docs/tosa.md)
        from xnpu.ir_io import print_ir
        from xnpu.tosa_export import IreeProgram

        program = IreeProgram(print_ir(module, generic=True), function.sym_name.data)
        call = lambda args: tuple(program(*args))  # noqa: E731
    else:
        interpreter = Interpreter(module)
        for functions in interpreter_functions():
            interpreter.register_implementations(functions)
        call = lambda args: interpreter.call_op(function, args)  # noqa: E731
    per_sample: list[tuple] = []
    for index in range(samples):
        args = tuple(a if samples == 1 else a[index : index + 1] for a in arrays)
        per_sample.append(call(args))
    outputs = {}
    for position, spec in enumerate(output_specs):
        values = [np.asarray(result[position]) for result in per_sample]
        outputs[spec.name] = values[0] if samples == 1 else np.concatenate(values, axis=0)
    return outputs
