"""The compile pipeline as Python calls: each step is a pass, run in one process.

`quantize` takes a float (`nn`) module to the integer (`fixed`) level: calibration on the
user's data, `lower-nn-to-fixed`, `fold-quantize-pairs`.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence

import numpy as np
from xdsl.dialects.builtin import ModuleOp
from xdsl.passes import ModulePass

from xnpu.backend.emit import emit_binary
from xnpu.backend.isa_dependencies import IsaInsertDependenciesPass
from xnpu.backend.isa_schedule import IsaSchedulePass
from xnpu.backend.npu_allocate import NpuAllocatePass
from xnpu.backend.npu_assign_layout import NpuAssignLayoutPass
from xnpu.backend.npu_keep_on_chip import NpuKeepOnChipPass
from xnpu.backend.npu_order_layers import NpuOrderLayersPass
from xnpu.backend.npu_plan_sram import NpuPlanSramPass
from xnpu.backend.npu_prefetch_weights import NpuPrefetchWeightsPass
from xnpu.backend.npu_sink_tables import NpuSinkTablesPass
from xnpu.backend.npu_tile import NpuTilePass
from xnpu.backend.npu_to_isa import LowerNpuToIsaPass
from xnpu.core.errors import XnpuError
from xnpu.driver.levels import LEVELS
from xnpu.frontend.onnx_import import import_onnx
from xnpu.ir.context import make_context
from xnpu.ir.io import verify_module
from xnpu.lowering.fixed_to_npu import LowerFixedToNpuPass
from xnpu.lowering.legalize import LegalizePass
from xnpu.lowering.nn_to_fixed import FoldQuantizePairsPass, LowerNNToFixedPass
from xnpu.target.description import load_target
from xnpu.transforms.calibrate import DEFAULT_RUNTIME, calibrate
from xnpu.transforms.calibrate_channel_groups import choose_channel_groups
from xnpu.transforms.compress_weights import DEFAULT_MIN_ELEMENTS, CompressWeightsPass
from xnpu.transforms.fold_batch_norm import FoldBatchNormPass
from xnpu.transforms.expand_layer_norm import ExpandLayerNormPass
from xnpu.transforms.fuse_activations import FuseActivationsPass
from xnpu.transforms.remove_noop import RemoveNoOpPass
from xnpu.transforms.split_channel_groups import SplitChannelGroupsPass

AfterPass = Callable[[str, ModuleOp], None]


def _ignore(name: str, module: ModuleOp) -> None:
    pass


def _apply(module: ModuleOp, step: ModulePass, notify: AfterPass) -> None:
    step.apply(make_context(), module)
    notify(step.name, module)


def float_cleanup(module: ModuleOp, after_pass: AfterPass = _ignore) -> ModuleOp:
    """The float-level passes every compile starts with (batch norm folded into convs, no-ops gone,
    spelled-out activations fused, LayerNorms spelled in ops the accelerator runs)."""

    for step in (FoldBatchNormPass(), RemoveNoOpPass(), FuseActivationsPass(), ExpandLayerNormPass()):
        _apply(module, step, after_pass)
    return module


def quantize(
    module: ModuleOp,
    calibration: np.ndarray | Mapping[str, np.ndarray],
    method: str = "mse",  # transforms/calibrate.py DEFAULT_METHOD
    per_channel: bool = True,
    variant: str = "two_stage",
    progress: bool | None = None,
    after_pass: AfterPass = _ignore,
    compress_bits: int | None = None,
    compress_step: float | None = None,
    compress_method: str = "seed003",
    compress_min_elements: int | None = None,
    compress_exclude: str = "",
    host_fallback: bool = True,
    channel_groups: bool = True,
    **calibration_options,
) -> ModuleOp:
    """Calibrate `module` (an nn module, changed in place) on `calibration` and lower it to `fixed`.

    An op with no integer lowering stays a float op for the host (`host_fallback`), or is an error.

    `channel_groups` splits each depthwise block whose input channels' ranges differ widely into
    two groups with scales of their own, measured on the first samples
    (transforms/calibrate_channel_groups.py, split-channel-groups).

    `compress_bits` runs compress-weights (seed 003's codebook, docs/compression.md) after
    calibration: conv/gemm weights become b-bit ids, kept compressed in DDR (decoding LOADs); the
    other `compress_*` options default to the pass's (step fitted per layer, layers under
    1000 weights left int8).
    """

    verify_module(module)  # what op verifiers leave out (tensor sizes, dominance) before anything runs
    float_cleanup(module, after_pass)
    if channel_groups and choose_channel_groups(
            module, calibration, calibration_options.get("runtime", DEFAULT_RUNTIME), progress,
            calibration_options.get("calibration_batch")):
        _apply(module, SplitChannelGroupsPass(), after_pass)
    calibrate(module, calibration, method=method, per_channel_weights=per_channel, progress=progress,
              **calibration_options)
    after_pass("calibrate", module)
    if compress_bits is not None:

        min_elements = DEFAULT_MIN_ELEMENTS if compress_min_elements is None else compress_min_elements
        _apply(module, CompressWeightsPass(bits=compress_bits, step=compress_step, method=compress_method,
                                           min_elements=min_elements, exclude=compress_exclude), after_pass)
    _apply(module, LowerNNToFixedPass(variant=variant, host_fallback=host_fallback), after_pass)
    _apply(module, FoldQuantizePairsPass(), after_pass)
    verify_module(module)
    return module


def below_npu(target: str) -> list[ModulePass]:
    """The passes from the npu level to the isa program, one per job (docs/npu.md, "Below npu")."""

    return [NpuSinkTablesPass(target=target), NpuOrderLayersPass(), NpuAssignLayoutPass(target=target),
            NpuKeepOnChipPass(target=target), NpuTilePass(target=target),
            NpuPrefetchWeightsPass(target=target), NpuPlanSramPass(target=target), NpuAllocatePass(target=target),
            LowerNpuToIsaPass(target=target), IsaSchedulePass(), IsaInsertDependenciesPass()]


def _verified(module: ModuleOp, steps, notify: AfterPass, verify_each: bool = False) -> None:
    """Run `steps`, then verify the module once: a pass that breaks the IR is a compiler bug the
    pass's own tests catch, and checking after every pass cost ~10% of a compile; `verify_each`
    checks after each one (to find which)."""
    for step in steps:
        _apply(module, step, notify)
        if verify_each:
            verify_module(module)
    if not verify_each:
        verify_module(module)


def lower_to_isa(module: ModuleOp, target: str = "xnpu_default", after_pass: AfterPass = _ignore,
                 host_fallback: bool = True) -> ModuleOp:
    """Lower a fixed module (changed in place) to an `isa` program for `target` (a name or a TOML
    path): lower-fixed-to-npu, npu-sink-tables, npu-order-layers, npu-assign-layout,
    npu-keep-on-chip, npu-tile, npu-prefetch-weights, npu-plan-sram, npu-allocate,
    lower-npu-to-isa, isa-schedule, isa-insert-dependencies.
    What the target cannot run goes to host segments (`host_fallback`), or is an error."""

    _verified(module, [LowerFixedToNpuPass(target=str(target), host_fallback=host_fallback),
                       *below_npu(str(target))], after_pass)
    return module


def load_model(model, input_shapes: Mapping[str, Sequence[int]] | None = None) -> ModuleOp:
    """An nn module from an ONNX model (path or ModelProto), or the module itself."""
    if isinstance(model, ModuleOp):
        if input_shapes:
            raise XnpuError("input_shapes applies to ONNX models only (IR has static shapes)")
        return model

    return import_onnx(model, input_shapes=input_shapes)


def compile(
    model,
    calibration: np.ndarray | Mapping[str, np.ndarray] | None,
    target: str = "xnpu_default",
    stop_at: str = "bin",
    after_pass: AfterPass | None = None,
    clamp_method: str = "auto",
    input_shapes: Mapping[str, Sequence[int]] | None = None,
    host_fallback: bool = True,
    **quantize_options,
):
    """ONNX model (path, ModelProto or nn module) -> Binary for `target`, in one process.

    import -> `quantize` (fold-batch-norm, remove-noop, fuse-activations, expand-layer-norm, [split-channel-groups],
    calibrate, [compress-weights],
    lower-nn-to-fixed, fold-quantize-pairs; `quantize_options` are its options) -> legalize
    -> lower-fixed-to-npu -> npu-sink-tables -> npu-order-layers -> npu-assign-layout
    -> npu-keep-on-chip -> npu-tile -> npu-prefetch-weights -> npu-plan-sram -> npu-allocate
    -> lower-npu-to-isa -> isa-schedule -> isa-insert-dependencies -> emit, with no text in
    between. `stop_at` ("nn", "fixed", "tosa", "npu", "isa") returns
    the module at that level instead of the Binary (npu: after lower-fixed-to-npu, before any
    annotation; tosa: the fixed level after convert-fixed-to-tosa, docs/tosa.md);
    `after_pass(name, module)` is called after every step (--print-ir-after-all).
    `legalize{target}` (docs/extending.md) makes the ops the target lacks into ones it has
    (`clamp_method`: auto, saturate or bias).
    `input_shapes` ({input name: shape}) fixes dynamic input dimensions of an ONNX model.
    `host_fallback` places what the target cannot run on the host (npu.host segments, run at
    SYNC hand-offs; `xnpu.placement_of(result)` says where each op runs); False makes any
    such op one error.
    """

    if stop_at not in LEVELS:
        raise XnpuError(f"unknown level '{stop_at}' (levels: {', '.join(LEVELS)})")
    load_target(target)  # a bad target fails before the slow steps
    notify = after_pass or _ignore
    module = load_model(model, input_shapes)
    notify("import-onnx", module)
    if stop_at == "nn":
        return module
    if calibration is None:
        raise XnpuError("compiling below the nn level needs calibration data")
    quantize(module, calibration, after_pass=notify, host_fallback=host_fallback, **quantize_options)
    if stop_at == "fixed":
        return module
    if stop_at == "tosa":
        from xnpu.lowering.fixed_to_tosa import ConvertFixedToTosaPass  # the tosa dialect: only this export needs it

        _apply(module, ConvertFixedToTosaPass(), notify)
        return module
    steps = [LegalizePass(target=str(target), clamp_method=clamp_method),
             LowerFixedToNpuPass(target=str(target), host_fallback=host_fallback)]
    if stop_at != "npu":
        steps += below_npu(str(target))
    if stop_at in ("npu", "isa"):
        _verified(module, steps, notify)
        return module
    for step in steps:
        _apply(module, step, notify)
    return emit_binary(module)  # which verifies the isa program first
