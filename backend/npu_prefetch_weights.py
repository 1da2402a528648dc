"""npu-prefetch-weights: a layer's constants loaded while the layers before it compute.

A layer's constants (a chunk of weights, its biases and rescale records, its epilogue's table:
one slot, or two when the layer has several channel chunks) are the first thing its unit
needs. When SRAM has room for that constants region beside the working sets of the layers
before it and the results kept on chip over their time, this pass marks the layer
`npu.prefetch = depth`: npu-plan-sram then gives the region an address free from `depth`
layers before (at most PREFETCH_DEPTH = 4) to the layer itself, so nothing orders the LOADs
of its first chunks after those layers' instructions, and isa-schedule issues them while those
layers compute. The deepest depth that still leaves room for the layer's own block wins.
Layers are tried in program order, each with the regions given before it (the planner is
npu-plan-sram's own, `plan_sram`).
"""

from __future__ import annotations

from dataclasses import dataclass

from xdsl.context import Context
from xdsl.dialects.builtin import ModuleOp
from xdsl.passes import ModulePass

from xnpu.backend.npu_annotations import only_function, resolve_target
from xnpu.backend.npu_plan_sram import plan_sram


@dataclass(frozen=True)
class NpuPrefetchWeightsPass(ModulePass):
    """Load each layer's constants during the layers before it where SRAM allows (npu.prefetch)."""

    name = "npu-prefetch-weights"
    target: str | None = None  # default: the module's npu.target

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        target = resolve_target(op, self.target, self.name)
        plan_sram(only_function(op, self.name), target, decide_prefetch=True)
