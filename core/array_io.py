"""Reading numpy files (.npy, .npz) for every tool: model inputs and calibration samples.

One loader, so every tool refuses the same bad files with the same one-line error:
a path that is not a regular file, a file that is neither format, pickled (object) arrays,
a zip that is not one, a member that is not an array, and a header that claims more data
than the file holds. The last is checked from the header alone, before numpy allocates the
array: a 100-byte file claiming a shape of 10^12 elements is an error, not a MemoryError.
"""

from __future__ import annotations

import math
import os
import zipfile

import numpy as np

from xnpu.core.errors import XnpuError
from xnpu.core.errors import first_line
from xnpu.core.files import MAX_INPUT_BYTES, check_input_file

NPY_MAGIC = b"\x93NUMPY"
ZIP_MAGIC = b"PK"

Arrays = np.ndarray | dict[str, np.ndarray]


def load_arrays(path: str | os.PathLike[str], mmap: bool = False) -> Arrays:
    """One array from an .npy file, or arrays by name from an .npz; `mmap` maps an .npy
    read-only instead of reading it (samples are then read as they are used)."""
    status = check_input_file(path)
    try:
        with open(path, "rb") as handle:
            magic = handle.read(len(NPY_MAGIC))
    except OSError as error:
        raise XnpuError(f"{path}: cannot read: {error.strerror or error}") from None
    if magic == NPY_MAGIC:
        return _load_npy(path, status.st_size, mmap)
    if magic.startswith(ZIP_MAGIC):
        return _load_npz(path)
    raise XnpuError(f"{path}: not a NumPy .npy or .npz file")


def _checked_header(stream, path: str, what: str, data_bytes: int) -> tuple[np.dtype, int]:
    """Read an .npy header from `stream` and check it against the `data_bytes` that follow
    the file's start; returns the dtype and the number of elements the header claims."""
    readers = {(1, 0): np.lib.format.read_array_header_1_0, (2, 0): np.lib.format.read_array_header_2_0}
    try:
        version = np.lib.format.read_magic(stream)
        if version in readers:
            shape, _, dtype = readers[version](stream)
    except Exception as error:  # numpy's header parser raises ValueError, SyntaxError, tokenize errors, ...
        raise XnpuError(f"{path}: {what}: bad .npy header ({first_line(error)})") from None
    if version not in readers:
        raise XnpuError(f"{path}: {what}: unsupported .npy format version {version[0]}.{version[1]}")
    if dtype.hasobject:
        raise XnpuError(f"{path}: {what}: holds Python objects (pickled data); only numeric arrays are read")
    if any(d < 0 for d in shape):
        raise XnpuError(f"{path}: {what}: the header's shape {list(shape)} has a negative dimension")
    count = math.prod(shape)
    needed = count * dtype.itemsize
    available = data_bytes - stream.tell()
    if needed > available:
        raise XnpuError(
            f"{path}: {what}: the header claims shape {list(shape)} of {dtype} ({needed} bytes) "
            f"but only {max(available, 0)} bytes of data follow"
        )
    return dtype, count


def _load_npy(path, size: int, mmap: bool) -> np.ndarray:
    with open(path, "rb") as handle:
        _, count = _checked_header(handle, path, "not a valid .npy file", size)
    try:
        # an empty array cannot be mapped; it is read (there is nothing to read)
        return np.load(path, mmap_mode="r" if mmap and count else None, allow_pickle=False)
    except (OSError, ValueError, EOFError) as error:
        raise XnpuError(f"{path}: not a valid .npy file ({first_line(error)})") from None


def _load_npz(path) -> dict[str, np.ndarray]:
    arrays: dict[str, np.ndarray] = {}
    try:
        with zipfile.ZipFile(path) as archive:
            members = archive.infolist()
            total = sum(member.file_size for member in members)
            if total > MAX_INPUT_BYTES:
                raise XnpuError(f"{path}: the arrays hold {total} bytes, more than the {MAX_INPUT_BYTES}-byte limit")
            for member in members:
                if not member.filename.endswith(".npy"):
                    raise XnpuError(f"{path}: member '{member.filename}' is not an .npy array")
                name = member.filename[: -len(".npy")]
                what = f"array '{name}'"
                with archive.open(member) as stream:
                    _checked_header(stream, path, what, member.file_size)
                with archive.open(member) as stream:
                    arrays[name] = np.lib.format.read_array(stream, allow_pickle=False)
    except XnpuError:
        raise
    except Exception as error:  # zipfile and zlib raise many unrelated types for a damaged archive
        raise XnpuError(f"{path}: not a valid .npz file ({first_line(error)})") from None
    return arrays
