"""Modules imported on first use: a tool that never touches them does not pay for them.

`xnpu-opt` parses and prints IR many times per lit run; numpy alone is a third of its
start-up, and a file of float ops never needs it. `from xnpu.core.lazy import numpy as np`
gives a module object that imports numpy at the first attribute read.
"""

from __future__ import annotations

import importlib
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
