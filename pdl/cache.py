"""Parsed pattern files kept on disk between runs, the way Python keeps bytecode.

Parsing a pattern file with xDSL's parser costs more than most passes, and every compile, and
every `xnpu-opt` run, meets the same files. The result of the validated parse is pickled to
`__pycache__/<file>.<python tag>.pickle` next to the pattern file (under PYTHONPYCACHEPREFIX when
set, as for bytecode), or, where that directory cannot be written, to the user's cache directory
($XDG_CACHE_HOME/xnpu/patterns or ~/.cache/xnpu/patterns). An entry holds for the exact text
of the file (its sha256), this xDSL, this Python and this FORMAT. Entries are read always;
where sys.dont_write_bytecode (-B, PYTHONDONTWRITEBYTECODE) keeps bytecode out of the source
tree, they are written to the user's cache directory only: an entry is data, like numba's
cache, and without one every process parses every pattern file it meets again (~1.3 s of a
compile). A cache never decides anything: an entry that cannot be read, or does not hold for the
file, and an entry that cannot be written, all mean the file is parsed, silently.
"""

from __future__ import annotations

import hashlib
import importlib.util
import os
import pickle
import sys
from pathlib import Path

import xdsl

from xnpu.core.errors import XnpuError
from xnpu.core.files import write_atomically

FORMAT = 1  # raise when what is pickled (pdl/patterns.py: Pattern) changes shape


def _header(text: str) -> bytes:
    """What an entry must start with to hold for `text` here."""
    digest = hashlib.sha256(text.encode()).hexdigest()
    return f"xnpu-patterns {FORMAT} xdsl {xdsl.__version__} python {sys.hexversion:x} {digest}\n".encode()


def _user_cache_dir() -> Path | None:
    base = os.environ.get("XDG_CACHE_HOME", "")
    if not os.path.isabs(base):  # the XDG spec: a relative path is to be ignored
        try:
            base = Path.home() / ".cache"
        except RuntimeError:  # no home directory to be found
            return None
    return Path(base) / "xnpu" / "patterns"


def cache_paths(path: Path, beside_sources: bool = True) -> list[Path]:
    """Where the entry of pattern file `path` may be, in the order they are tried; without
    `beside_sources`, the user's cache directory only."""
    tag = sys.implementation.cache_tag
    if tag is None:  # an implementation that keeps no bytecode: no place is named for it
        return []
    path = path.resolve()  # one entry per file, however it is named
    name = f"{path.name}.{tag}.pickle"
    places = []
    try:
        if beside_sources:
            places.append(Path(importlib.util.cache_from_source(str(path))).parent / name)
    except ValueError:
        pass
    user = _user_cache_dir()
    if user is not None:
        where = hashlib.sha256(str(path).encode()).hexdigest()[:16]
        places.append(user / f"{where}-{name}")
    return places


def load(path: Path, text: str) -> object | None:
    """The value stored for `path` with this `text`, or None."""
    header = _header(text)
    for place in cache_paths(path):
        try:
            data = place.read_bytes()
            if data.startswith(header):
                return pickle.loads(memoryview(data)[len(header):])
        except Exception:  # unreadable, truncated or corrupt: as if there were none
            continue
    return None


def store(path: Path, text: str, value: object) -> None:
    """Keep `value` (the parse of `text`) for `path` in the first place that can be written."""

    try:
        payload = _header(text) + pickle.dumps(value, protocol=pickle.HIGHEST_PROTOCOL)
    except Exception:  # e.g. a pattern too deep for pickle's recursion: it is parsed each run
        return
    # with -B nothing is written beside the sources, an entry goes to the user's cache only
    for place in cache_paths(path, beside_sources=not sys.dont_write_bytecode):
        try:
            place.parent.mkdir(parents=True, exist_ok=True)
            write_atomically(place, payload)  # a reader never sees half an entry
            return
        except (OSError, XnpuError):
            continue
