"""The ONNX model a module was imported from, kept beside the module for the passes that can
use it: calibration runs its float inference on onnxruntime where the module's values are
tensors of that model (transforms/calibrate_onnx.py).

The front end records it (`record_origin`) on the module it returns; the record lives as long
as that module object (a copy of the module has none) and says nothing once a pass has made a
value differ from the model's tensor, so readers check every value they take from the model
(calibrate_onnx.onnx_tensors).
"""

from __future__ import annotations

import weakref
from collections import Counter
from dataclasses import dataclass
from typing import TYPE_CHECKING

from xdsl.dialects.builtin import ModuleOp

from xnpu.dialects import nn
from xnpu.ir.locations import location_names

if TYPE_CHECKING:
    import onnx


def node_location_name(node: onnx.NodeProto, index: int) -> str:
    """The name an ONNX node's ops carry as their location: its own, or `<OpType>_<index>`."""
    return node.name or f"{node.op_type}_{index}"


@dataclass(frozen=True, eq=False)  # one per import, kept by identity
class OnnxOrigin:
    model: onnx.ModelProto  # as the front end imported it: opsets upgraded, shapes static and inferred
    single_op_nodes: frozenset[str]  # node names whose import made exactly one op that is not a constant


_ORIGINS: weakref.WeakKeyDictionary[ModuleOp, OnnxOrigin] = weakref.WeakKeyDictionary()


def record_origin(module: ModuleOp, model: onnx.ModelProto) -> None:
    """Remember `model` as the source of the freshly imported `module` (every op still located at
    the one node it came from)."""
    ops_per_node = Counter(name for op in module.walk()
                           if op.dialect_name() == "nn" and not isinstance(op, nn.ConstantOp)
                           for name in location_names(op.location))
    _ORIGINS[module] = OnnxOrigin(model, frozenset(name for name, count in ops_per_node.items() if count == 1))


def origin_of(module: ModuleOp) -> OnnxOrigin | None:
    return _ORIGINS.get(module)
