"""Files in and out, for every tool: inputs checked before they are read (regular, bounded),
outputs written atomically, through devices and FIFOs, and never over an input
(docs/reliability.md, "Inputs" and "Outputs")."""

from __future__ import annotations

import os
import shutil
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


def _new_mode(base: int = 0o777) -> int:
    """The mode `open`/`mkdir` would give a new file (0o666) or directory (0o777): `base` less the umask."""
    umask = os.umask(0)
    os.umask(umask)
    return base & ~umask


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
            mode = _new_mode(0o666)
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


def write_directory_atomically(directory: str | os.PathLike[str], files: dict[str, str | bytes],
                               owned: Iterable[str]) -> list[Path]:
    """Write `files` (name -> content) into `directory` as a whole or not at all.

    Everything is written into a temporary directory first; a failure there leaves
    `directory` as it was. A new directory, or one holding only names in `owned` (an earlier
    run's files), is then replaced by the temporary one with renames, so readers see the old
    set or the new one, never a mix. A directory holding other files too (a report written
    beside the binary, the working directory) gets the new files renamed in one by one, and
    loses the owned files this run did not write (an earlier run's report.svg).
    """
    directory = Path(directory)
    target = Path(os.path.realpath(directory))
    try:
        target.parent.mkdir(parents=True, exist_ok=True)
        status = os.stat(target) if os.path.lexists(target) else None
        present = os.listdir(target) if status is not None and stat.S_ISDIR(status.st_mode) else []
    except OSError as error:
        raise XnpuError(f"{directory}: cannot write: {error.strerror or error}") from None
    if status is not None and not stat.S_ISDIR(status.st_mode):
        raise XnpuError(f"{directory}: cannot write: not a directory")
    owned = set(owned) | set(files)
    for name in sorted(set(present) & owned):
        if os.path.islink(target / name) or not os.path.isfile(target / name):
            raise XnpuError(f"{directory / name}: cannot write: not a regular file")
    working = Path(os.path.realpath(os.getcwd()))
    whole = set(present) <= owned and target != working and target not in working.parents
    try:
        staging = Path(tempfile.mkdtemp(prefix=f".{target.name}.", dir=target.parent if whole else target))
    except OSError as error:
        raise XnpuError(f"{directory}: cannot write: {error.strerror or error}") from None
    try:
        for name, content in files.items():
            with open(staging / name, "wb") as handle:
                handle.write(content.encode() if isinstance(content, str) else content)
            os.chmod(staging / name, _new_mode(0o666))
        if whole:
            os.chmod(staging, stat.S_IMODE(status.st_mode) if status is not None else _new_mode())
            _replace_directory(staging, target)
        else:
            for name in files:
                os.replace(staging / name, target / name)
            for name in set(present) & owned - set(files):
                os.unlink(target / name)
    except OSError as error:
        raise XnpuError(f"{directory}: cannot write: {error.strerror or error}") from None
    finally:
        shutil.rmtree(staging, ignore_errors=True)  # gone already when it became `directory`
    return [directory / name for name in files]


def _replace_directory(new: Path, target: Path) -> None:
    """Rename `new` to `target`; an existing `target` (an earlier run's files only) is moved
    aside first and removed after, or put back when the second rename fails."""
    if not os.path.lexists(target):
        os.rename(new, target)
        return
    aside = Path(tempfile.mkdtemp(prefix=f".{target.name}.old.", dir=target.parent))
    try:
        os.rename(target, aside)  # over the empty directory mkdtemp made
    except OSError:
        os.rmdir(aside)
        raise
    try:
        os.rename(new, target)
    except OSError:
        os.rename(aside, target)
        raise
    shutil.rmtree(aside, ignore_errors=True)  # the earlier run's files
