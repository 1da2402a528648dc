"""Small helpers the float-level passes share: reading constant operands."""

from __future__ import annotations

import numpy as np
from xdsl.ir import SSAValue

from xnpu.dialects import nn


def constant_array(value: SSAValue) -> np.ndarray | None:
    """The value of `value` if an `nn.constant` defines it, else None."""
    owner = value.owner
    return owner.to_numpy() if isinstance(owner, nn.ConstantOp) else None
