"""The user's input shapes as text: `--input-shape NAME=d0,d1,...` (kept free of onnx, for the tools)."""

from __future__ import annotations

from collections.abc import Sequence

from xnpu.core.errors import XnpuError

INPUT_SHAPE_FLAG = "--input-shape"


def parse_input_shape(text: str) -> tuple[str, tuple[int, ...]]:
    """`NAME=d0,d1,...` -> (name, dims); a malformed one is an XnpuError naming the flag."""
    name, equals, dims = text.rpartition("=")
    try:
        shape = tuple(int(d) for d in dims.split(",")) if equals and name else None
    except ValueError:
        shape = None
    if shape is None or any(d < 1 for d in shape):
        raise XnpuError(
            f"{INPUT_SHAPE_FLAG} expects NAME=d0,d1,... with positive integer dimensions, got '{text}'"
        )
    return name, shape


def parse_input_shapes(texts: Sequence[str]) -> dict[str, tuple[int, ...]]:
    shapes: dict[str, tuple[int, ...]] = {}
    for text in texts:
        name, shape = parse_input_shape(text)
        if name in shapes:
            raise XnpuError(f"{INPUT_SHAPE_FLAG} gives the shape of '{name}' twice")
        shapes[name] = shape
    return shapes
