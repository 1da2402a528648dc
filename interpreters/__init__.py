"""Interpreter functions for xnpu's dialects, one module per dialect (as xDSL's own)."""

from __future__ import annotations

from collections.abc import Callable

import numpy as np
from xdsl.ir import Operation


class ConstantCache:
    """Each constant op decoded once per interpreter, not once per sample (ResNet weights are 47 MB).

    The arrays are read-only, so no op implementation can change a weight for later samples.
    """

    def __init__(self) -> None:
        self._values: dict[Operation, np.ndarray] = {}

    def get(self, op: Operation, decode: Callable[[], np.ndarray]) -> np.ndarray:
        value = self._values.get(op)
        if value is None:
            value = self._values[op] = decode()
            value.flags.writeable = False
        return value
