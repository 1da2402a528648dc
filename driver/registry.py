"""Every pass xnpu defines, by name: read by xnpu-opt and by the xdsl-opt universe.

Each entry imports its pass lazily so that listing passes stays cheap. Add a pass here
when you add one to transforms/ or lowering/.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING

if TYPE_CHECKING:  # xdsl.passes is only needed once a pass runs
    from xdsl.passes import ModulePass


def _calibrate():
    from xnpu.transforms.calibrate import CalibratePass

    return CalibratePass


def _fold_batch_norm():
    from xnpu.transforms.fold_batch_norm import FoldBatchNormPass

    return FoldBatchNormPass


def _remove_noop():
    from xnpu.transforms.remove_noop import RemoveNoOpPass

    return RemoveNoOpPass


def _fuse_activations():
    from xnpu.transforms.fuse_activations import FuseActivationsPass

    return FuseActivationsPass


def _constant_fold():
    from xnpu.transforms.constant_fold import ConstantFoldPass

    return ConstantFoldPass


def _compress_weights():
    from xnpu.transforms.compress_weights import CompressWeightsPass

    return CompressWeightsPass


def _lower_nn_to_fixed():
    from xnpu.lowering.nn_to_fixed import LowerNNToFixedPass

    return LowerNNToFixedPass


def _fold_quantize_pairs():
    from xnpu.lowering.nn_to_fixed import FoldQuantizePairsPass

    return FoldQuantizePairsPass


def _convert_fixed_to_tosa():
    from xnpu.lowering.fixed_to_tosa import ConvertFixedToTosaPass

    return ConvertFixedToTosaPass


def _lower_fixed_to_npu():
    from xnpu.lowering.fixed_to_npu import LowerFixedToNpuPass

    return LowerFixedToNpuPass


def _npu_assign_layout():
    from xnpu.backend.npu_assign_layout import NpuAssignLayoutPass

    return NpuAssignLayoutPass


def _npu_tile():
    from xnpu.backend.npu_tile import NpuTilePass

    return NpuTilePass


def _npu_allocate():
    from xnpu.backend.npu_allocate import NpuAllocatePass

    return NpuAllocatePass


def _lower_npu_to_isa():
    from xnpu.backend.npu_to_isa import LowerNpuToIsaPass

    return LowerNpuToIsaPass


def _legalize():
    from xnpu.lowering.legalize import LegalizePass

    return LegalizePass


def all_passes() -> dict[str, Callable[[], type[ModulePass]]]:
    return {
        "calibrate": _calibrate,
        "fold-batch-norm": _fold_batch_norm,
        "remove-noop": _remove_noop,
        "fuse-activations": _fuse_activations,
        "constant-fold": _constant_fold,
        "compress-weights": _compress_weights,
        "lower-nn-to-fixed": _lower_nn_to_fixed,
        "fold-quantize-pairs": _fold_quantize_pairs,
        "legalize": _legalize,
        "lower-fixed-to-npu": _lower_fixed_to_npu,
        "npu-assign-layout": _npu_assign_layout,
        "npu-tile": _npu_tile,
        "npu-allocate": _npu_allocate,
        "lower-npu-to-isa": _lower_npu_to_isa,
        "convert-fixed-to-tosa": _convert_fixed_to_tosa,
    }
