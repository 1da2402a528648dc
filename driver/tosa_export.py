"""The fixed level as TOSA 1.0 text, and that text compiled and run by IREE (docs/tosa.md).

    text = xnpu.driver.tosa_export.to_tosa(module)        # a fixed module -> TOSA (generic form)
    program = xnpu.driver.tosa_export.IreeProgram(text)   # iree-compile --iree-input-type=tosa, llvm-cpu
    (y,) = program(x)                              # iree-run-module on numpy arrays

IREE (the `iree-base-compiler` and `iree-base-runtime` wheels, in the test extras) is
imported only here and only when a program is built: xnpu itself does not depend on it.
"""

from __future__ import annotations

import numpy as np
from xdsl.dialects import func
from xdsl.dialects.builtin import IntegerType, ModuleOp
from xdsl.ir import Block

from xnpu.core.errors import XnpuError
from xnpu.dialects import tosa
from xnpu.dialects.shapes import shape_of
from xnpu.interpreters.function import entry_function
from xnpu.ir.context import make_context
from xnpu.ir.io import describe_op, print_ir
from xnpu.lowering.fixed_to_tosa import ConvertFixedToTosaPass
from xnpu.lowering.tosa_build import TosaBuilder


def to_tosa(module: ModuleOp) -> str:
    """`convert-fixed-to-tosa` on `module` (changed in place), printed in MLIR's generic form."""

    ConvertFixedToTosaPass().apply(make_context(), module)
    return print_ir(module, generic=True)


IREE_FLAGS = ("--iree-input-type=tosa", "--iree-hal-target-device=local", "--iree-hal-local-target-device-backends=llvm-cpu")


class IreeProgram:
    """TOSA text compiled by IREE for this machine's CPU; calling it runs `function`.

    `flags` are more iree-compile options (bench/iree_cpu.py: FAST_FLAGS)."""

    def __init__(self, tosa_text: str, function: str = "main", cpu: str = "host", flags: tuple[str, ...] = ()):
        try:
            import iree.compiler as compiler
            import iree.runtime as runtime
        except ImportError:
            raise XnpuError("IREE is not installed (pip install iree-base-compiler iree-base-runtime)") from None
        try:
            self.vmfb = compiler.compile_str(tosa_text, extra_args=[*IREE_FLAGS, f"--iree-llvmcpu-target-cpu={cpu}", *flags])
        except compiler.CompilerToolError as error:
            raise XnpuError(f"iree-compile rejected the TOSA module: {_summary(str(error))}") from None
        try:
            self._module = runtime.load_vm_flatbuffer(self.vmfb, driver="local-task")
            self._function = getattr(self._module, function)
        except Exception as error:
            raise XnpuError(f"IREE cannot load the compiled TOSA module: {_summary(str(error))}") from None

    def __call__(self, *inputs: np.ndarray) -> list[np.ndarray]:
        try:
            results = self._function(*[np.ascontiguousarray(x) for x in inputs])
            results = results if isinstance(results, tuple | list) else (results,)
            return [np.asarray(result.to_host()) for result in results]
        except Exception as error:  # the runtime's own checks (argument shapes, a failed dispatch)
            raise XnpuError(f"IREE failed running the TOSA module: {_summary(str(error))}") from None


def _summary(message: str) -> str:
    """One line of what IREE said: its first `error:` diagnostic; when the compiler crashed
    (an LLVM stack dump of 26 lines and more), that it did and its exit status."""
    lines = [line.strip() for line in message.splitlines() if line.strip()]
    for line in lines:
        if "error:" in line:
            return line
    code = next((line.removeprefix("Error code:").strip() for line in lines if line.startswith("Error code:")), None)
    if code is not None:
        return f"iree-compile ended with status {code} and no error message (it crashed)"
    return lines[0] if lines else "no message"


# --------------------------------------------------------------------------------------
# What IREE is given
# --------------------------------------------------------------------------------------


def iree_program_text(module: ModuleOp) -> str:
    """The generic text of a TOSA module for IREE, checked and guarded first (`xnpu-run x.tosa.mlir`).

    A TOSA file is input like any other: out-of-range `tosa.gather` indices made IREE's code
    read past its buffers (heap bytes in the output, or SIGSEGV). So the module may hold only
    what convert-fixed-to-tosa writes (`tosa` ops in one function, static shapes), with tables
    of the size their input's type indexes, slices inside their input and constant gather
    indices inside their table; computed gather indices (a table lookup by code) are clamped
    to the table (minimum and maximum, as `TosaBuilder.clamp` writes an int32 clamp): the
    exporter's are in range already, so its programs compute the same. `module` is changed."""
    function = entry_function(module)
    for op in module.walk():
        if op is module or isinstance(op, func.FuncOp | func.ReturnOp):
            continue
        if op.dialect_name() != "tosa" or op.parent_op() is not function:
            raise XnpuError(f"{describe_op(op)}: a TOSA program holds tosa ops in one function only "
                            "(what convert-fixed-to-tosa writes)")
        for value in (*op.operands, *op.results):
            if hasattr(value.type, "get_shape") and any(d < 0 for d in value.type.get_shape()):
                raise XnpuError(f"{describe_op(op)}: a TOSA program has static shapes only, not {value.type}")

    def fail(op, message: str) -> XnpuError:
        return XnpuError(f"{describe_op(op)}: {message}")

    for op in list(function.walk()):
        if isinstance(op, tosa.GatherOp):
            values, indices, result = shape_of(op.input1), shape_of(op.input2), shape_of(op.output)
            if (len(values) != 3 or len(indices) != 2 or values[0] != indices[0] or values[1] < 1
                    or result != (indices[0], indices[1], values[2]) or op.input2.type.get_element_type() != IntegerType(32)):
                raise fail(op, f"values {list(values)} and i32 indices {list(indices)} do not give {list(result)}")
            if isinstance(op.input2.owner, tosa.ConstOp):  # a resize's source rows: known, so checked
                known = np.asarray(op.input2.owner.values.get_values())
                if known.size and (known.min() < 0 or known.max() >= values[1]):
                    raise fail(op, f"indices [{known.min()}, {known.max()}] are outside the {values[1]} rows gathered from")
                continue
            scratch = Block()
            builder = TosaBuilder(scratch)
            builder.location = op.location
            guarded = builder.clamp(op.input2, 0, values[1] - 1)
            for inner in list(scratch.ops):
                inner.detach()
                op.parent_block().insert_op_before(inner, op)
            op.operands = [op.input1, guarded]
        elif isinstance(op, tosa.TableOp):
            element = op.input1.type.get_element_type()
            entries = {IntegerType(8): 256, IntegerType(16): 513}.get(element)
            if entries is None or shape_of(op.input2) != (entries,) or op.input2.type.get_element_type() != element:
                raise fail(op, f"a table for {element} values has {entries or 'no'} entries of {element}, "
                               f"not {op.input2.type}")
        elif isinstance(op, tosa.SliceOp):
            shape = shape_of(op.input1)
            start, size = (_shape_constant(operand) for operand in (op.start, op.size))
            if (start is None or size is None or len(start) != len(shape) or len(size) != len(shape)
                    or any(s < 0 or n < 0 or s + n > d for s, n, d in zip(start, size, shape))
                    or tuple(size) != shape_of(op.output)):
                raise fail(op, f"start {start} and size {size} are not a slice of {list(shape)} "
                               f"giving {list(shape_of(op.output))}")
    return print_ir(module, generic=True)


def _shape_constant(value) -> list[int] | None:
    owner = value.owner
    if not isinstance(owner, tosa.ConstShapeOp):
        return None
    return [int(v) for v in owner.values.get_values()]
