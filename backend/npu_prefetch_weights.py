"""npu-prefetch-weights: a layer's first weights loaded while the layer before it computes.

A layer's constants (its first chunk of weights, biases, rescale records, and its epilogue's
table) are the first thing its unit needs. When SRAM has room for them beside the previous
layer's whole working set and the on-chip results of both layers' time, this pass marks the
layer `npu.prefetch`: npu-plan-sram then gives that constants slot an address free over both
layers, so nothing orders its LOAD after the previous layer's instructions, and isa-schedule
issues it while the previous layer computes. Layers are tried in program order, each with the
slots given before it (the planner is npu-plan-sram's own, `plan_sram`).
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
    """Load each layer's first constants during the previous layer where SRAM allows (npu.prefetch)."""

    name = "npu-prefetch-weights"
    target: str | None = None  # default: the module's npu.target

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        target = resolve_target(op, self.target, self.name)
        plan_sram(only_function(op, self.name), target, decide_prefetch=True)
