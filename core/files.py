"""Files in and out, for every tool: inputs checked before they are read (regular, bounded),
outputs written atomically, through devices and FIFOs, and never over an input
(docs/reliability.md, "Inputs" and "Outputs")."""

from __future__ import annotations

import os
import stat
import tempfile
from collections.abc import Iterable
from pathlib import Path

from xnpu.core.errors import XnpuError

# Input files larger than this are refused before they are read (a sparse or runaway file
# would otherwise be read into memory whole); ResNet-50-sized IR is a few hundred MB.
MAX_INPUT_BYTES = 2 << 30

def check_input_file(path: str | os.PathLike[str], limit: int = MAX_INPUT_BYTES) -> os.stat_result:
    """The status of `path`, an existing regular file of at most `limit` bytes, else an XnpuError."""
    try:
        status = os.stat(path)
    except OSError as error:
        raise XnpuError(f"{path}: cannot read: {error.strerror or error}") from None
    if stat.S_ISDIR(status.st_mode):
        raise XnpuError(f"{path}: cannot read: is a directory")
    if not stat.S_ISREG(status.st_mode):
        raise XnpuError(f"{path}: cannot read: not a regular file (a device, FIFO or socket)")
    if status.st_size > limit:
        raise XnpuError(f"{path}: cannot read: {status.st_size} bytes is more than the {limit}-byte limit")
    return status


def read_input_file(path: str | os.PathLike[str], limit: int = MAX_INPUT_BYTES) -> bytes:
    """The bytes of an input file, checked by `check_input_file` first."""
    check_input_file(path, limit)
    try:
        with open(path, "rb") as handle:
            return handle.read(limit + 1)[:limit]
    except OSError as error:
        raise XnpuError(f"{path}: cannot read: {error.strerror or error}") from None


def refuse_overwriting_inputs(output: str | os.PathLike[str], inputs: Iterable[str | os.PathLike[str] | None]) -> None:
    """An XnpuError when `output` is the same file as one of `inputs` (by device and inode,
    so another path, a symlink or a hard link to an input is caught too)."""
    try:
        written = os.stat(output)
    except OSError:
        return  # not there yet (or unreadable): it cannot be an input that was read
    for source in inputs:
        if source is None:
            continue
        try:
            read = os.stat(source)
        except OSError:
            continue
        if (read.st_dev, read.st_ino) == (written.st_dev, written.st_ino) and stat.S_ISREG(written.st_mode):
            raise XnpuError(f"{output}: refusing to overwrite the input {source}")


def write_atomically(
    path: str | os.PathLike[str], data: str | bytes, inputs: Iterable[str | os.PathLike[str] | None] = ()
) -> None:
    """Write `data` to `path` so that readers never see half a file, and no input is lost.

    A regular file (or a new one) is written to a temporary file beside it, then renamed
    over it; a symlink keeps pointing at the file it names. An existing device or FIFO
    (/dev/null, a pipe) is written through: renaming a regular file over it would replace
    the device. `path` may not be one of `inputs`.
    """
    path = Path(path)
    refuse_overwriting_inputs(path, inputs)
    payload = data.encode() if isinstance(data, str) else data
    try:
        status = os.stat(path)
    except FileNotFoundError:
        status = None
    except OSError as error:
        raise XnpuError(f"{path}: cannot write: {error.strerror or error}") from None
    if status is not None and stat.S_ISDIR(status.st_mode):
        raise XnpuError(f"{path}: cannot write: is a directory")
    if status is not None and not stat.S_ISREG(status.st_mode):
        _write_through(path, payload)
        return
    target = Path(os.path.realpath(path))
    try:
        fd, tmp = tempfile.mkstemp(prefix=f".{target.name}.", dir=target.parent)
    except OSError as error:
        raise XnpuError(f"{path}: cannot write: {error.strerror or error}") from None
    try:
        with os.fdopen(fd, "wb") as handle:
            handle.write(payload)
        # mkstemp makes the file private (0600): an existing output keeps its mode, a new
        # one gets the mode `open` would give it
        if status is not None:
            mode = stat.S_IMODE(status.st_mode)
        else:
            umask = os.umask(0)
            os.umask(umask)
            mode = 0o666 & ~umask
        os.chmod(tmp, mode)
        os.replace(tmp, target)
    except OSError as error:
        raise XnpuError(f"{path}: cannot write: {error.strerror or error}") from None
    finally:
        if os.path.lexists(tmp):
            os.unlink(tmp)


def _write_through(path: Path, payload: bytes) -> None:
    try:
        with open(path, "wb") as handle:
            handle.write(payload)
    except OSError as error:
        raise XnpuError(f"{path}: cannot write: {error.strerror or error}") from None
