"""Running IR of any level, or a compiled binary, on numpy inputs: the `run` half of xnpu's
Python API (`xnpu.run`, `xnpu-run`).

nn, fixed and npu IR run through xnpu's interpreters (xnpu.interpreters.function), a module in
the `tosa` dialect through IREE (docs/tosa.md), a Binary on the simulator of its target.
"""

from __future__ import annotations

from collections.abc import Mapping

import numpy as np

from xnpu.backend.binary import Binary
from xnpu.backend.simulator import run_binary
from xnpu.driver.tosa_export import IreeProgram, iree_program_text
from xnpu.interpreters.function import TensorSpec, entry_function, run_function, signature

__all__ = ["TensorSpec", "run", "signature"]


def run(module, inputs: np.ndarray | Mapping[str, np.ndarray], batch: int | None = None) -> dict[str, np.ndarray]:
    """Run `module` (IR of any level, or a compiled Binary) on numpy inputs; returns outputs
    by name (stacked over samples).

    Samples run `batch` at a time (default: as many as fit BATCH_MEMORY_BYTES) where the
    function keeps samples apart along axis 0 (xnpu.interpreters.batching), else one at a time.
    A Binary runs on the simulator of the target it was compiled for.
    """

    if isinstance(module, Binary):

        return run_binary(module, inputs)
    return run_function(module, inputs, batch, call_for=_iree_call if _is_tosa(module) else None)


def _is_tosa(module) -> bool:
    return any(op.dialect_name() == "tosa" for op in entry_function(module).walk())


def _iree_call(module):
    """The TOSA export runs on IREE (docs/tosa.md)."""
    program = IreeProgram(iree_program_text(module), entry_function(module).sym_name.data)
    return lambda args: tuple(program(*args))
