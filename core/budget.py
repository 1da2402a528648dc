"""The one memory budget for the tensors xnpu materialises (docs/reliability.md, "Bounded resources").

A few bytes of input can describe a huge tensor: a splat literal (`dense<1.0> :
tensor<134217728xf32>`, 285 bytes, took 3.2 GB), an ONNX shape computation (ConstantOfShape
of 1x1x16000x16000 from a 172-byte model: 4 GB), an interpreter result (four resizes in a
5 KB binary's host segment: 2.8 GB). Every such tensor is checked against this budget
before anything is allocated for it, with one error naming what asked for it:

- MAX_TENSOR_BYTES for any one tensor: every tensor type in IR (parsed, or built by a pass),
  every literal, every value a folded ONNX shape computation produces;
- MAX_TOTAL_BYTES for the tensors one step holds at once: the splat literals of a module,
  the values of one ONNX shape computation, the live values of one run of a function (its
  samples together).

With both, a process stays under about 1 GB whatever its input describes. Data a file
holds (an ONNX initializer, a dense literal written element by element) is bounded by the
file itself (xnpu.core.files.MAX_INPUT_BYTES), not by this budget, except that no tensor of
it may be over MAX_TENSOR_BYTES either.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

from xnpu.core.errors import XnpuError

MAX_TENSOR_BYTES = 256 << 20  # 256 MiB: 64 M float32 values, ~4x the largest activation of the bench models
MAX_TOTAL_BYTES = 512 << 20  # 512 MiB


def size_text(count: int) -> str:
    for unit, shift in (("GiB", 30), ("MiB", 20), ("KiB", 10)):
        if count >= 1 << shift:
            return f"{count / (1 << shift):.3g} {unit}"
    return f"{count} bytes"


def shape_text(shape: Sequence[int]) -> str:
    return "x".join(map(str, shape)) or "scalar"


def tensor_bytes(shape: Sequence[int], itemsize: int) -> int:
    return math.prod(int(d) for d in shape) * itemsize


def over_tensor_budget(shape: Sequence[int], itemsize: int, element: str = "") -> str | None:
    """Why a tensor of `shape` and `itemsize`-byte elements is over the budget, or None."""
    count = tensor_bytes(shape, itemsize)
    if count <= MAX_TENSOR_BYTES:
        return None
    kind = f" {element}" if element else ""
    return (f"a {shape_text(shape)}{kind} tensor ({size_text(count)}) is over the {size_text(MAX_TENSOR_BYTES)} "
            f"budget for one tensor")


def check_tensor(shape: Sequence[int], itemsize: int, what: str, element: str = "") -> int:
    """The bytes of a tensor of `shape`; an XnpuError `what: ...` when that is over MAX_TENSOR_BYTES."""
    reason = over_tensor_budget(shape, itemsize, element)
    if reason is not None:
        raise XnpuError(f"{what}: {reason}")
    return tensor_bytes(shape, itemsize)


def over_total_budget(count: int) -> str | None:
    if count <= MAX_TOTAL_BYTES:
        return None
    return f"{size_text(count)} of tensors at once is over the {size_text(MAX_TOTAL_BYTES)} budget"


def check_total(count: int, what: str) -> None:
    """An XnpuError `what: ...` when `count` bytes held at once are over MAX_TOTAL_BYTES."""
    reason = over_total_budget(count)
    if reason is not None:
        raise XnpuError(f"{what}: {reason}")
