"""`lower-fixed-to-npu{target=...}`: the fixed graph becomes the target's units, by PDL patterns.

Fusion and selection are the pattern files in this directory, applied by the PDL driver:
`conv.mlir` (conv2d / gemm + rescale -> one CONV; a dilation the unit lacks -> a dense
kernel), `eltwise.mlir` (add/sub [+ int16 stage] + rescale, mul + rescale -> one ELTWISE),
`pool.mlir`, `activation.mlir` (clamps: the saturation removed, relu as a unit's flag, other
clamps and tables as a unit's epilogue or on their own; int8 requantizations as tables),
`data.mlir` (reshape, flatten, transpose, concat) and `upsample.mlir` (nearest resize as DMA
moves, linear x2 and stride-2 transposed convolutions as four phase convolutions, interleaved
by the DMA). Their native functions (`natives.py`)
ask target/legality.py, the one definition of the units' limits, so a pattern only selects
what the target can run; ops the target lacks are rewritten before this pass by
`legalize` (seeds 001 and 002), at the fixed level.

What is left afterwards has no accelerator operation on this target: with host fallback (the
default) it is placed on the host, in `npu.host` segments carrying each op's reason
(`host.py`); without it, the pass stops with one error naming the op, its ONNX node, the
reason and the target. The result runs (`xnpu-run`) bit-identically to the fixed module:
every npu op computes through the same semantics functions as the ops it replaced, and a
host segment through the interpreters of the fixed level.
"""

from __future__ import annotations

import warnings
from dataclasses import dataclass
from pathlib import Path

from xdsl.context import Context
from xdsl.dialects import func
from xdsl.dialects.builtin import ModuleOp, StringAttr
from xdsl.ir import BlockArgument, Operation
from xdsl.passes import ModulePass
from xdsl.transforms.dead_code_elimination import dce

from xnpu.core.errors import XnpuError, XnpuWarning
from xnpu.dialects import fixed, nn, npu
from xnpu.dialects.targeting import DEFAULT_TARGET, module_target
from xnpu.dialects.traits import unit_form
from xnpu.ir.io import describe_op
from xnpu.lowering.fixed_to_npu.host import place_on_host, split_output_dequantizes
from xnpu.lowering.fixed_to_npu.natives import pending
from xnpu.lowering.nn_to_fixed import FLOAT_REASON
from xnpu.pdl.driver import apply_patterns
from xnpu.pdl.patterns import PatternContext, load_natives, load_patterns, split_paths
from xnpu.target.description import TargetDescription

PATTERN_DIR = Path(__file__).resolve().parent
BOUNDARY = (fixed.ConstantOp, fixed.QuantizeOp, fixed.DequantizeOp, func.ReturnOp)


def fixed_to_npu_patterns(extra=()):
    return load_patterns([PATTERN_DIR, *extra])


class SelectionError(XnpuError):
    pass


def why_not(op: Operation, ctx: PatternContext) -> str:
    """Why no pattern selected a unit for `op`: an ONNX node onnxruntime runs, a float op the
    quantizer left (and why), a tensor the accelerator cannot hold, else the op's own answer
    (its UnitForm), else what selection needs beyond it."""
    assert ctx.target is not None
    if isinstance(op, nn.OnnxOp):
        return op.reason.data
    if op.dialect_name() == "nn":
        reason = op.attributes.get(FLOAT_REASON)  # why lower-nn-to-fixed left it float
        return reason.data if isinstance(reason, StringAttr) else f"'{op.name}' has no fixed-point lowering (it runs in float)"
    problem = fixed.memory_problem(op)
    if problem:
        return problem
    form = unit_form(op)
    if form is None:
        return f"'{op.name}' has no accelerator operation"
    return form.problem(op, ctx.target) or form.needs or f"'{op.name}' has no accelerator operation"


def check_boundary(op: Operation) -> str | None:
    """The host converts floats only at the program's edges, of tensors the accelerator holds."""
    if isinstance(op, fixed.QuantizeOp | fixed.DequantizeOp):
        problem = fixed.memory_problem(op)
        if problem:
            return problem
    if isinstance(op, fixed.QuantizeOp) and not isinstance(op.input, BlockArgument):
        return "a quantize inside the graph has no instruction (only program inputs enter as float)"
    if isinstance(op, fixed.DequantizeOp) and not all(isinstance(u.operation, func.ReturnOp) for u in op.result.uses):
        return "a dequantize inside the graph has no instruction (only program outputs leave int8)"
    return None


def unselected(op: Operation, ctx: PatternContext) -> str | None:
    """Why `op`, a top-level op after selection, has no place on the accelerator (None: it has one)."""
    if isinstance(op, npu.NpuOp | nn.ConstantOp):
        return None
    return check_boundary(op) if isinstance(op, BOUNDARY) else why_not(op, ctx)


def host_reason(op: Operation, ctx: PatternContext) -> str | None:
    """The reason recorded on a host op; None for the dequantize and quantize around a float op."""
    if isinstance(op, fixed.QuantizeOp) and op.input.owner.dialect_name() == "nn":
        return None
    if isinstance(op, fixed.DequantizeOp) and any(u.operation.dialect_name() == "nn" for u in op.result.uses):
        return None
    return unselected(op, ctx)


def only_function(module: ModuleOp) -> func.FuncOp:
    functions = [op for op in module.ops if isinstance(op, func.FuncOp)]
    if len(functions) != 1:
        raise SelectionError(f"lower-fixed-to-npu expects one function, found {len(functions)}")
    return functions[0]


def check_selected(module: ModuleOp, target: TargetDescription, ctx: PatternContext) -> None:
    for op in only_function(module).body.block.ops:
        reason = unselected(op, ctx)
        if reason:
            raise SelectionError(f"{describe_op(op)}: {reason} (target {target.name})")


def lower_fixed_to_npu(module: ModuleOp, target_name: str, extra_patterns=(), host_fallback: bool = True) -> list[str]:
    """Select the units of `target_name` for a fixed module (in place); returns the patterns that fired.

    With `host_fallback`, what no unit takes is placed on the host: in rounds, because an op
    that waits for its producer's unit (a table after a conv, to become its epilogue) can be
    selected on its own once that producer is known to run on the host. Each round marks
    the ops nothing waits behind with their reason (`npu.host_reason`, which the patterns
    read as "selected elsewhere"); the marked ops then become npu.host segments.
    """
    target = module_target(module, target_name, default=DEFAULT_TARGET)
    function = only_function(module)
    # a tensor the accelerator cannot hold keeps every op that reads or writes it off the units
    ctx = PatternContext(target, excluded=fixed.unheld(function.body.block.ops))
    patterns = fixed_to_npu_patterns(extra_patterns)
    fired: list[str] = []
    placed: set[Operation] = set()
    if host_fallback:
        split_output_dequantizes(function)
    while True:
        fired += apply_patterns(module, patterns, ctx)
        dce(module)  # constants a pattern replaced (a reshaped or densified kernel's original)
        if not host_fallback:
            break
        left = {op for op in function.body.block.ops if op not in placed and unselected(op, ctx)}
        waiting = {op for op in left for value in op.operands if value.owner in left and pending(value.owner)}
        ready = left - waiting
        if not ready:
            break
        for op in ready:
            reason = host_reason(op, ctx)
            if reason:
                op.attributes[npu.HOST_REASON] = StringAttr(reason)
        placed |= ready
    if placed:
        place_on_host(function, [op for op in function.body.block.ops if op in placed])
        if not any(isinstance(op, npu.NpuOp) and not isinstance(op, npu.HostOp) for op in function.body.block.ops):
            warnings.warn(f"nothing in the model runs on the accelerator of {target.name}: every op is placed on "
                          "the host", XnpuWarning, stacklevel=2)
    check_selected(module, target, ctx)
    return fired


@dataclass(frozen=True)
class LowerFixedToNpuPass(ModulePass):
    """fixed -> npu for one target (a shipped name or a TOML path): fusion and unit selection by PDL patterns."""

    name = "lower-fixed-to-npu"

    target: str = ""  # a shipped name or a TOML path; default: the module's (legalize records it), else xnpu_default
    patterns: str = ""  # extra pattern files or directories, comma-separated
    natives: str = ""  # Python files registering extra native functions, comma-separated
    host_fallback: bool = True  # place what the target cannot run on the host (npu.host), not an error

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        for path in split_paths(self.natives):
            load_natives(path)
        lower_fixed_to_npu(op, self.target, split_paths(self.patterns), self.host_fallback)
