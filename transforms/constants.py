"""Small helpers the float-level passes share: reading constant operands, merging locations."""

from __future__ import annotations

import numpy as np
from xdsl.dialects.builtin import ArrayAttr, FusedLoc, NoneAttr, UnknownLoc
from xdsl.ir import Attribute, Operation, SSAValue

from xnpu.dialects import nn


def constant_array(value: SSAValue) -> np.ndarray | None:
    """The value of `value` if an `nn.constant` defines it, else None."""
    owner = value.owner
    return owner.to_numpy() if isinstance(owner, nn.ConstantOp) else None


def fused_location(*ops: Operation) -> Attribute:
    """One location naming every source op (ONNX node) a rewrite merged, in order.

    Unknown locations are dropped and nested fusions flattened, so a single known origin
    stays a plain `loc("name")` and folding twice does not nest `fused[fused[...]]`.
    """
    parts: list[Attribute] = []
    for op in ops:
        location = op.location
        inner = location.locations.data if isinstance(location, FusedLoc) else (location,)
        for part in inner:
            if not isinstance(part, UnknownLoc) and part not in parts:
                parts.append(part)
    if not parts:
        return UnknownLoc()
    if len(parts) == 1:
        return parts[0]
    return FusedLoc(ArrayAttr(parts), NoneAttr())
