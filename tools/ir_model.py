"""xnpu-run's loader of IR files, apart from the tool so that running a binary does not import the IR."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from pathlib import Path

import numpy as np

from xnpu.backend.emit import emit_binary, module_target_of
from xnpu.backend.simulator import BinaryModel
from xnpu.core.errors import XnpuError
from xnpu.dialects import isa
from xnpu.driver.runner import run
from xnpu.ir.io import load_ir

ModelRunner = Callable[[np.ndarray | Mapping[str, np.ndarray]], dict[str, np.ndarray]]


def load_ir_model(path: Path) -> ModelRunner:
    """IR of any level: nn, fixed and npu run through their interpreters; an isa program (a
    module naming its `isa.target`) is assembled and runs on the simulator, as its binary would."""
    module = load_ir(path)

    if isa.TARGET_ATTRIBUTE in module.attributes:

        try:
            return BinaryModel(emit_binary(module), module_target_of(module))
        except XnpuError as error:
            raise XnpuError(f"{path}: {error}") from None
    return lambda inputs: run(module, inputs)
