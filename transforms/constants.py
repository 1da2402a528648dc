"""Small helpers the float-level passes share: reading constant operands."""

from __future__ import annotations

import numpy as np
from xdsl.ir import SSAValue

from xnpu.dialects import nn


def is_constant(value: SSAValue | None) -> bool:
    """Whether an `nn.constant` defines `value` (without decoding it, as constant_array does)."""
    return value is not None and isinstance(value.owner, nn.ConstantOp)


def constant_array(value: SSAValue) -> np.ndarray | None:
    """The value of `value` if an `nn.constant` defines it, else None."""
    owner = value.owner
    return owner.to_numpy() if isinstance(owner, nn.ConstantOp) else None
