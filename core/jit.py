"""numba, as xnpu's loop modules use it (semantics/fixed_point_loops.py,
transforms/calibrate_loops.py). Import this only where a compiled loop is about to run:
numba takes ~0.3 s to import."""

from __future__ import annotations

import numba


def jit(function):
    """numba.njit without fastmath (every float operation IEEE, in the order written), its
    machine code cached on disk where numba finds a writable place (__pycache__ next to the
    source, else numba's user cache), else compiled once per process."""
    try:
        return numba.njit(cache=True, nogil=True)(function)
    except RuntimeError:  # numba's "no locator available": no writable cache directory
        return numba.njit(nogil=True)(function)
