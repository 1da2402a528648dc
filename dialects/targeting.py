"""The target a module is compiled for, carried by the module itself (`npu.target` from
legalize on, `isa.target` at the isa level): a shipped target name or a TOML path, resolved
by `load_target` once per process.

Verifiers of target-dependent ops look it up from their enclosing module; passes ask
`module_target`, which takes a pass's `target` option only to record it in the module.
"""

from __future__ import annotations

from xdsl.dialects.builtin import ModuleOp, StringAttr
from xdsl.ir import Operation
from xdsl.utils.exceptions import VerifyException

from xnpu.core.errors import XnpuError
from xnpu.target.description import TargetDescription, load_target

# the module attribute naming the target from legalize down to the npu level (the isa
# dialect names its own, isa.target, which the binary records)
TARGET_ATTRIBUTE = "npu.target"
DEFAULT_TARGET = "xnpu_default"


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
        return load_target(name.data)
    except XnpuError as error:
        raise VerifyException(str(error)) from None


def module_target(module: ModuleOp, option: str | None = None, attribute: str = TARGET_ATTRIBUTE,
                  default: str | None = None, who: str = "") -> TargetDescription:
    """The target `module` is compiled for: a pass's `option`, recorded in the module so that
    the passes after it need none; else the one the module names; else `default`."""
    if option:
        target = load_target(option)
        module.attributes[attribute] = StringAttr(option)
        return target
    name = module.attributes.get(attribute)
    if isinstance(name, StringAttr):
        return load_target(name.data)
    if default is not None:
        return module_target(module, default, attribute)
    raise XnpuError(f"{who + ': ' if who else ''}the module names no target (module attribute {attribute} = "
                    f"\"{DEFAULT_TARGET}\" or a TOML path, or the pass option target=NAME)")
