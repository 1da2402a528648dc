"""The ONNX node names an op carries in its location (`loc("conv1")`, or fused names after a
fusion), read and written the same way at every level down to the binary's provenance."""

from __future__ import annotations

from xdsl.dialects.builtin import ArrayAttr, FusedLoc, NameLoc, NoneAttr, StringAttr, UnknownLoc
from xdsl.ir import Attribute, Operation


def location_names(location: Attribute) -> tuple[str, ...]:
    """The ONNX node names a location records: loc("a"), fused["a", "b"]; unknown gives ()."""
    if isinstance(location, NameLoc):
        return (location.desc.data,)
    if isinstance(location, FusedLoc):
        names: list[str] = []
        for part in location.locations.data:
            names.extend(n for n in location_names(part) if n not in names)
        return tuple(names)
    return ()


def location_of(names: tuple[str, ...]) -> Attribute:
    parts = [NameLoc(StringAttr(name), NoneAttr()) for name in names]
    if not parts:
        return UnknownLoc()
    return parts[0] if len(parts) == 1 else FusedLoc(ArrayAttr(parts), NoneAttr())


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
