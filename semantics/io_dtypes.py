"""How the host exchanges a tensor with DDR (an io entry of the binary, docs/binary-format.md),
by dtype name, as numpy dtypes: int8, int16 and int32 are codes (real value = code * scale);
every other dtype is a value, read and written as it is (a float32 program output, a host
op's int64 or bool tensors). Numpy only, so that running a binary does not import the IR.
"""

import numpy as np

IO_DTYPES: dict[str, np.dtype] = {
    "int8": np.dtype("<i1"), "int16": np.dtype("<i2"), "int32": np.dtype("<i4"), "float32": np.dtype("<f4"),
    "uint8": np.dtype("u1"), "int64": np.dtype("<i8"), "bool": np.dtype("?"), "float64": np.dtype("<f8"),
    "float16": np.dtype("<f2"), "sint8": np.dtype("<i1"), "sint16": np.dtype("<i2"), "sint32": np.dtype("<i4"),
    "uint16": np.dtype("<u2"), "uint32": np.dtype("<u4"), "uint64": np.dtype("<u8"),
}
CODE_DTYPES = ("int8", "int16", "int32")
