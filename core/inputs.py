"""A model's inputs as the user passes them: arrays matched to the tensors a model takes, and
its outputs stacked the way the samples came.

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
    opaque: str | None = None  # a value of another ONNX type (`seq(tensor(float))`): passed as it is

    def describe(self) -> str:
        if self.opaque:
            return f"{self.name}: {self.opaque}"
        return f"{self.name}: {'x'.join(map(str, self.shape))} {self.dtype}"


@dataclass
class BoundInputs:
    """User arrays matched to a signature: `arrays[i]` holds the samples of input i along a
    new leading axis (N x shape), or is the input itself where every sample shares it."""

    specs: list[TensorSpec]
    arrays: list[np.ndarray]
    shared: list[bool]
    samples: int
    stacked: bool  # samples came along a new leading axis: outputs are stacked the same way

    def take(self, start: int, stop: int) -> tuple[np.ndarray, ...]:
        """Samples [start, stop) as the function takes them: one sample in the model's own
        shapes; several along axis 0 of batch-1 inputs (xnpu.interpreters.batching)."""
        count = stop - start
        taken = []
        for spec, array, shared in zip(self.specs, self.arrays, self.shared):
            if count == 1:
                taken.append(array if shared else array[start])
            elif shared:
                taken.append(np.broadcast_to(array, (count * spec.shape[0], *spec.shape[1:])))
            else:
                taken.append(array[start:stop].reshape(count * spec.shape[0], *spec.shape[1:]))
        return tuple(taken)


def bind_inputs(specs: list[TensorSpec], inputs: np.ndarray | Mapping[str, np.ndarray]) -> BoundInputs:
    """Match user arrays to the signature (see the module doc for the ways samples come)."""
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
    arrays, shared, counts, stacked = [], [], set(), False
    for spec in specs:
        if spec.name not in inputs:
            raise XnpuError(f"missing input '{spec.name}' ({spec.describe()})")
        if spec.opaque:  # the same value for every sample
            arrays.append(inputs[spec.name])
            shared.append(True)
            continue
        array = np.asarray(inputs[spec.name])
        if array.dtype.kind != spec.dtype.kind:
            raise XnpuError(
                f"input '{spec.name}' has dtype {array.dtype}, the model expects {spec.dtype}"
            )
        array = array.astype(spec.dtype, copy=False)
        if array.shape == spec.shape:
            arrays.append(array)
            shared.append(True)
            continue
        if array.ndim == len(spec.shape) + 1 and array.shape[1:] == spec.shape:
            stacked = True
        elif (
            len(spec.shape) >= 1
            and spec.shape[0] == 1
            and array.ndim == len(spec.shape)
            and array.shape[1:] == spec.shape[1:]
        ):
            array = array.reshape(array.shape[0], *spec.shape)
        else:
            along = "N samples along its leading batch of 1, or " if spec.shape[:1] == (1,) else ""
            raise XnpuError(
                f"input '{spec.name}' has shape {list(array.shape)}, the model expects "
                f"{list(spec.shape)} (or {along}N x {list(spec.shape)} for N samples)"
            )
        arrays.append(array)
        shared.append(False)
        counts.add(array.shape[0])
    if len(counts) > 1:
        raise XnpuError(f"inputs disagree on the number of samples: {sorted(counts)}")
    if 0 in counts:
        raise XnpuError("the data holds no samples (its leading dimension is 0)")
    return BoundInputs(specs, arrays, shared, counts.pop() if counts else 1, stacked)


def stack_outputs(output_specs: list[TensorSpec], per_batch: list[tuple], bound: BoundInputs) -> dict[str, np.ndarray]:
    """The outputs of every run, by name: one sample's as they are, N samples along the
    leading axis of batch-1 outputs, or along a new leading axis when the samples came so."""
    outputs = {}
    for position, spec in enumerate(output_specs):
        if spec.opaque:  # a sequence or string tensor as onnxruntime gives it, one per sample
            values = [result[position] for result in per_batch]
            outputs[spec.name] = values[0] if bound.samples == 1 else values
            continue
        values = [np.asarray(result[position]) for result in per_batch]
        one_per_run = len(values) == bound.samples
        try:
            if bound.samples == 1:
                outputs[spec.name] = values[0]
            elif bound.stacked:  # batched runs of a batch-1 model give k x ... for k x 1 x ...
                outputs[spec.name] = np.stack(values) if one_per_run else np.concatenate([v[:, None] for v in values])
            else:
                outputs[spec.name] = np.concatenate(values, axis=0)
        except ValueError:
            raise XnpuError(f"output '{spec.name}' has a shape that depends on the data ({[list(v.shape) for v in values[:3]]}, "
                            "...): run one sample at a time") from None
    return outputs
