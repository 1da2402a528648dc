"""Modules imported on first use: a tool that never touches them does not pay for them.

`xnpu-opt` parses and prints IR many times per lit run; numpy alone is a third of its
start-up, and a file of float ops never needs it. `from xnpu.core.lazy import numpy as np`
gives a module object that imports numpy at the first attribute read.
"""

from __future__ import annotations

import importlib
import importlib.util
import sys
import types


class LazyModule(types.ModuleType):
    def __getattr__(self, name: str):
        module = importlib.import_module(self.__name__)
        self.__dict__.update(module.__dict__)  # later reads are plain attribute hits
        return getattr(module, name)


numpy = LazyModule("numpy")


def load(reference: str):
    """The object a `package.module:name` reference names, its module imported now. Registries
    (passes, dialects) list their entries by reference, as Python's entry points do, so that
    listing them imports nothing."""
    module, _, name = reference.partition(":")
    return getattr(importlib.import_module(module), name)


class _PackageRunOnFirstUse(types.ModuleType):
    """A package whose `__init__` runs at the first read of a name it defines."""

    def __getattr__(self, name: str):
        if name.startswith("__"):
            raise AttributeError(name)
        loader = self.__spec__.loader
        self.__class__ = types.ModuleType  # run the real __init__ once
        loader.exec_module(self)
        return getattr(self, name)


def defer_package_init(name: str) -> None:
    """Let `import name.sub` load `sub` without running `name/__init__.py` first.

    `xdsl.interpreters/__init__.py` imports every interpreter xDSL ships (RISC-V, linalg,
    snitch, ...: ~0.5 s, a third of a small compile) to offer `register_implementations`;
    the PDL driver needs `xdsl.interpreters.pdl` only. The package's own names (that
    function) still work: reading one runs the `__init__`.
    """
    if name in sys.modules:
        return
    spec = importlib.util.find_spec(name)
    if spec is None or spec.submodule_search_locations is None:
        return
    module = importlib.util.module_from_spec(spec)
    module.__class__ = _PackageRunOnFirstUse
    sys.modules[name] = module
