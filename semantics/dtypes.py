"""Element types of the IR and their numpy counterparts."""

import numpy as np
from xdsl.dialects.builtin import Float32Type, Float64Type, IntegerType

from xnpu.core.errors import XnpuError


def numpy_dtype(element_type) -> np.dtype:
    if isinstance(element_type, Float32Type):
        return np.dtype(np.float32)
    if isinstance(element_type, Float64Type):
        return np.dtype(np.float64)
    if isinstance(element_type, IntegerType):
        width = element_type.width.data
        for bits, dtype in ((8, np.int8), (16, np.int16), (32, np.int32), (64, np.int64)):
            if width <= bits:
                return np.dtype(dtype)
    raise XnpuError(f"element type {element_type} has no numpy counterpart")
