"""The fixed level as TOSA 1.0 text, and that text compiled and run by IREE (docs/tosa.md).

    text = xnpu.driver.tosa_export.to_tosa(module)        # a fixed module -> TOSA (generic form)
    program = xnpu.driver.tosa_export.IreeProgram(text)   # iree-compile --iree-input-type=tosa, llvm-cpu
    (y,) = program(x)                              # iree-run-module on numpy arrays

IREE (the `iree-base-compiler` and `iree-base-runtime` wheels, in the test extras) is
imported only here and only when a program is built: xnpu itself does not depend on it.
"""

from __future__ import annotations

import numpy as np
from xdsl.dialects.builtin import ModuleOp

from xnpu.core.errors import XnpuError
from xnpu.ir.context import make_context
from xnpu.ir.io import print_ir
from xnpu.lowering.fixed_to_tosa import ConvertFixedToTosaPass


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
            lines = [line for line in str(error).splitlines() if "error:" in line]
            raise XnpuError(f"iree-compile rejected the TOSA module: {lines[0] if lines else error}") from None
        self._module = runtime.load_vm_flatbuffer(self.vmfb, driver="local-task")
        self._function = getattr(self._module, function)

    def __call__(self, *inputs: np.ndarray) -> list[np.ndarray]:
        results = self._function(*[np.ascontiguousarray(x) for x in inputs])
        results = results if isinstance(results, tuple | list) else (results,)
        return [np.asarray(result.to_host()) for result in results]
