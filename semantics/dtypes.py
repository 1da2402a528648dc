"""Element types of the IR and their numpy counterparts.

Signless integers (`i8`, `i32`, ...) are the fixed level's codes; signed and unsigned ones
(`si64`, `ui8`) and `i1` are values of the graph a host op reads or writes as they are
(silero's int64 sample rate, a bool mask), as ONNX has them.
"""

import numpy as np
from xdsl.dialects.builtin import Float16Type, Float32Type, Float64Type, IntegerType, Signedness

from xnpu.core.errors import XnpuError
from xnpu.semantics.io_dtypes import CODE_DTYPES, IO_DTYPES  # noqa: F401 (part of this module's API)


def numpy_dtype(element_type) -> np.dtype:
    if isinstance(element_type, Float32Type):
        return np.dtype(np.float32)
    if isinstance(element_type, Float64Type):
        return np.dtype(np.float64)
    if isinstance(element_type, Float16Type):
        return np.dtype(np.float16)
    if isinstance(element_type, IntegerType):
        width = element_type.width.data
        if width == 1:
            return np.dtype(np.bool_)
        unsigned = element_type.signedness.data == Signedness.UNSIGNED
        for bits, signed_type, unsigned_type in ((8, np.int8, np.uint8), (16, np.int16, np.uint16),
                                                 (32, np.int32, np.uint32), (64, np.int64, np.uint64)):
            if width <= bits:
                return np.dtype(unsigned_type if unsigned else signed_type)
    raise XnpuError(f"element type {element_type} has no numpy counterpart")


def io_dtype(element_type) -> str:
    """The io dtype of a tensor element type: signless integers are codes, the rest values."""
    dtype = numpy_dtype(element_type)
    if isinstance(element_type, IntegerType) and element_type.signedness.data == Signedness.SIGNLESS \
            and element_type.width.data > 1:
        return dtype.name  # int8, int16, int32: the fixed level's codes
    if dtype.kind == "i" and dtype.itemsize < 8:
        return "s" + dtype.name  # a signed value of the graph, not a code
    return dtype.name
