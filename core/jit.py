"""numba, as xnpu's loop modules use it (semantics/fixed_point_loops.py,
transforms/calibrate_loops.py). Import this only where a compiled loop is about to run:
numba takes ~0.3 s to import.

numba's cache files are pickles: loading one runs whatever it holds. So machine code is
cached only in the `__pycache__` beside the loop module's own source (numba's in-tree
locator), where only whoever can change xnpu's code can write; never in a directory another
user could plant files in, such as NUMBA_CACHE_DIR or numba's per-user fallback
(~/.cache/numba, used when the source tree is read-only). Where that `__pycache__` cannot be
written, or NUMBA_CACHE_LOCATOR_CLASSES chooses other places, the loops are compiled once
per process instead (about a second per module). docs/reliability.md says the same.
"""

from __future__ import annotations

import numba
from numba.core import config
from numba.core.caching import CompileResultCacheImpl, FunctionCache, InTreeCacheLocator


class _SourceTreeCacheImpl(CompileResultCacheImpl):
    _locator_classes = [InTreeCacheLocator]  # numba's default list also has NUMBA_CACHE_DIR and ~/.cache/numba


class SourceTreeCache(FunctionCache):
    """numba's function cache, kept only in the __pycache__ beside the function's source."""

    _impl_class = _SourceTreeCacheImpl


def jit(function):
    """numba.njit without fastmath (every float operation IEEE, in the order written), its
    machine code cached in the __pycache__ beside its source when that can be written, else
    compiled once per process."""
    dispatcher = numba.njit(nogil=True)(function)
    if not config.CACHE_LOCATOR_CLASSES:  # the user's own list would take precedence over ours
        try:
            # what njit(cache=True) does (Dispatcher.enable_caching), with only the in-tree place
            dispatcher._cache = SourceTreeCache(dispatcher.py_func)
        except RuntimeError:  # numba's "no locator available": that __pycache__ cannot be written
            pass
    return dispatcher


def inline_jit(function):
    """A compiled helper of compiled loops, inlined into each (numba's inline="always"): it is
    compiled and cached as part of its callers, and a call to it costs nothing."""
    return numba.njit(nogil=True, inline="always")(function)
