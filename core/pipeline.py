"""The compile pipeline as Python calls: each step is a pass, run in one process.

`quantize` takes a float (`nn`) module to the integer (`fixed`) level: calibration on the
user's data, `lower-nn-to-fixed`, `fold-quantize-pairs`.
"""

from __future__ import annotations

from collections.abc import Mapping

import numpy as np
from xdsl.dialects.builtin import ModuleOp

from xnpu.context import make_context
from xnpu.ir_io import verify_module


def float_cleanup(module: ModuleOp) -> ModuleOp:
    """The float-level passes every compile starts with (batch norm folded into convs, no-ops gone)."""
    from xnpu.transforms.fold_batch_norm import FoldBatchNormPass
    from xnpu.transforms.remove_noop import RemoveNoOpPass

    ctx = make_context()
    for step in (FoldBatchNormPass(), RemoveNoOpPass()):
        step.apply(ctx, module)
    return module


def quantize(
    module: ModuleOp,
    calibration: np.ndarray | Mapping[str, np.ndarray],
    method: str = "minmax",
    per_channel: bool = True,
    variant: str = "two_stage",
    progress: bool | None = None,
    **calibration_options,
) -> ModuleOp:
    """Calibrate `module` (an nn module, changed in place) on `calibration` and lower it to `fixed`."""
    from xnpu.lowering.nn_to_fixed import FoldQuantizePairsPass, LowerNNToFixedPass
    from xnpu.transforms.calibrate import calibrate

    float_cleanup(module)
    calibrate(module, calibration, method=method, per_channel_weights=per_channel, progress=progress,
              **calibration_options)
    ctx = make_context()
    LowerNNToFixedPass(variant=variant).apply(ctx, module)
    FoldQuantizePairsPass().apply(ctx, module)
    verify_module(module)
    return module
