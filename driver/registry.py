"""Every pass xnpu defines, by name: read by xnpu-opt and by the xdsl-opt universe.

Each pass is named by the module that defines it and imported when it is asked for, so that
listing passes stays cheap (`xnpu-opt` starts without importing any of them). Add a pass here
when you add one to transforms/, lowering/ or backend/.
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from typing import TYPE_CHECKING

from xnpu.core.lazy import load

if TYPE_CHECKING:  # xdsl.passes is only needed once a pass runs
    from xdsl.passes import ModulePass

PASSES = {
    "calibrate": "xnpu.transforms.calibrate:CalibratePass",
    "fold-batch-norm": "xnpu.transforms.fold_batch_norm:FoldBatchNormPass",
    "remove-noop": "xnpu.transforms.remove_noop:RemoveNoOpPass",
    "fuse-activations": "xnpu.transforms.fuse_activations:FuseActivationsPass",
    "expand-layer-norm": "xnpu.transforms.expand_layer_norm:ExpandLayerNormPass",
    "split-channel-groups": "xnpu.transforms.split_channel_groups:SplitChannelGroupsPass",
    "constant-fold": "xnpu.transforms.constant_fold:ConstantFoldPass",
    "compress-weights": "xnpu.transforms.compress_weights:CompressWeightsPass",
    "lower-nn-to-fixed": "xnpu.lowering.nn_to_fixed:LowerNNToFixedPass",
    "fold-quantize-pairs": "xnpu.lowering.nn_to_fixed:FoldQuantizePairsPass",
    "legalize": "xnpu.lowering.legalize:LegalizePass",
    "lower-fixed-to-npu": "xnpu.lowering.fixed_to_npu:LowerFixedToNpuPass",
    "npu-sink-tables": "xnpu.backend.npu_sink_tables:NpuSinkTablesPass",
    "npu-order-layers": "xnpu.backend.npu_order_layers:NpuOrderLayersPass",
    "npu-assign-layout": "xnpu.backend.npu_assign_layout:NpuAssignLayoutPass",
    "npu-keep-on-chip": "xnpu.backend.npu_keep_on_chip:NpuKeepOnChipPass",
    "npu-tile": "xnpu.backend.npu_tile:NpuTilePass",
    "npu-prefetch-weights": "xnpu.backend.npu_prefetch_weights:NpuPrefetchWeightsPass",
    "npu-plan-sram": "xnpu.backend.npu_plan_sram:NpuPlanSramPass",
    "npu-allocate": "xnpu.backend.npu_allocate:NpuAllocatePass",
    "lower-npu-to-isa": "xnpu.backend.npu_to_isa:LowerNpuToIsaPass",
    "isa-schedule": "xnpu.backend.isa_schedule:IsaSchedulePass",
    "isa-insert-dependencies": "xnpu.backend.isa_dependencies:IsaInsertDependenciesPass",
    "convert-fixed-to-tosa": "xnpu.lowering.fixed_to_tosa:ConvertFixedToTosaPass",
}


def all_passes() -> dict[str, Callable[[], type[ModulePass]]]:
    return {name: functools.partial(load, reference) for name, reference in PASSES.items()}
