"""The target a module is compiled for, named by a module attribute (`npu.target`, `isa.target`).

Verifiers of target-dependent ops look it up here: the value is a shipped target name or a
TOML path, loaded once per process.
"""

from __future__ import annotations

import functools

from xdsl.dialects.builtin import ModuleOp, StringAttr
from xdsl.ir import Operation
from xdsl.utils.exceptions import VerifyException

from xnpu.core.errors import XnpuError
from xnpu.target.description import load_target


@functools.lru_cache(maxsize=16)
def cached_target(name: str):
    return load_target(name)


def enclosing_target(op: Operation, attribute: str):
    """The TargetDescription the closest enclosing module names in `attribute`, or None."""
    parent = op.parent_op()
    while parent is not None and not isinstance(parent, ModuleOp):
        parent = parent.parent_op()
    if parent is None:
        return None
    name = parent.attributes.get(attribute)
    if name is None:
        return None
    if not isinstance(name, StringAttr):
        raise VerifyException(f"{attribute} must be a string (a target name or TOML path), got {name}")
    try:
        return cached_target(name.data)
    except XnpuError as error:
        raise VerifyException(str(error)) from None
