"""A model's inputs as the user passes them: arrays matched to the tensors a model takes.

Shared by the IR interpreters (xnpu.interpreters.function) and the simulator's host side
(xnpu.backend.simulator), here with nothing but numpy, so that running a binary does not
import the IR.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

import numpy as np

from xnpu.core.errors import XnpuError


@dataclass(frozen=True)
class TensorSpec:
    name: str
    shape: tuple[int, ...]
    dtype: np.dtype

    def describe(self) -> str:
        return f"{self.name}: {'x'.join(map(str, self.shape))} {self.dtype}"


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
