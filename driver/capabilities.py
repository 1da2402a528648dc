"""Which fixed-level operators a target runs natively, derived from its hardware parameters.

Nothing here is a hand-written list of what a target supports: every answer is computed
from the TargetDescription (units present, element-wise ops, conv limits, saturation
range), so a new `target/*.toml` gets its capabilities for free. Two levels of answer:

- `op_capabilities(target)`: per op name, whether the target has an instruction for it
  and within which limits (the supported-operators report, docs/supported-ops.md);
- `is_native(target, op)`: for one op instance, whether lower-fixed-to-npu selects a unit
  for it as it stands (a conv inside the limits, a clamp that is a relu flag or no-op
  saturation, ...), by the rules of target/legality.py.

The legalize pass (lowering/legalize/) asks `is_native` through its native constraint
`not_native`, and the report's "otherwise" column lists the legalization patterns whose
root is that op: the report and the decisions come from the same code.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from xdsl.ir import Operation

from xnpu.target import legality
from xnpu.target.description import TargetDescription, load_target


@dataclass(frozen=True)
class Capability:
    op: str
    native: bool
    limits: str  # when native: the limits of one instance; else why not


def _conv_limits(target: TargetDescription) -> str:
    c = target.conv
    return (f"kernel <= {c.max_kernel}, stride <= {c.max_stride}, dilation <= {c.max_dilation} "
            f"(or a dense kernel <= {c.max_kernel}), pad <= {c.max_pad}, input channels <= {c.max_channels}")


def _saturation(target: TargetDescription) -> str:
    return f"[{target.data.saturation_min}, {target.data.saturation_max}]"


def _clamp(target: TargetDescription) -> Capability:
    if target.has_clamp:
        return Capability("fixed.clamp", True, "CLAMP unit, any bounds")
    return Capability("fixed.clamp", False,
                      f"no clamp unit; only saturation to {_saturation(target)} and [0, max] as a producer's relu flag")


def _eltwise(name: str) -> Callable[[TargetDescription], Capability]:
    def capability(target: TargetDescription) -> Capability:
        if target.supports_eltwise(name):
            return Capability(f"fixed.{name}", True, f"ELTWISE, channels <= {target.eltwise.max_channels}, "
                                                     "same shape, per-channel or scalar broadcast")
        return Capability(f"fixed.{name}", False, f"the ELTWISE unit has no {name} (it has {', '.join(target.eltwise.ops)})")
    return capability


def _conv(target: TargetDescription) -> Capability:
    depthwise = "depthwise included" if target.conv.depthwise else "no depthwise (group == channels)"
    return Capability("fixed.conv2d", True, f"CONV: {_conv_limits(target)}; {depthwise}")


def _pool(kind: str, op: str) -> Callable[[TargetDescription], Capability]:
    def capability(target: TargetDescription) -> Capability:
        if not target.supports_pool(kind):
            return Capability(op, False, f"the POOL unit has no {kind} pooling")
        p = target.pool
        limits = "" if kind == "global_avg" else f", kernel <= {p.max_kernel}, stride <= {p.max_stride}, pad <= {p.max_pad}"
        return Capability(op, True, f"POOL {kind}{limits}")
    return capability


def _table(target: TargetDescription) -> Capability:
    return Capability("fixed.table", target.has_table, "TABLE unit, 256 entries" if target.has_table else "no table unit")


def _rescale(target: TargetDescription) -> Capability:
    fused = "fused into the CONV / ELTWISE / POOL producing it"
    if target.has_table:
        return Capability("fixed.rescale", True, f"{fused}; standalone int8 -> int8 as a TABLE")
    return Capability("fixed.rescale", True, f"{fused} only (no table unit)")


def _resize_linear(target: TargetDescription) -> Capability:
    if not target.conv.depthwise:
        return Capability("fixed.resize_linear", False, "no depthwise convolution for its phases")
    return Capability("fixed.resize_linear", True, "x2 with the same weights in every phase (half_pixel): an edge pad, "
                      "4 depthwise 2x2 CONVs, a DMA interleave; not align_corners (weights vary with the position)")


def _conv_transpose(target: TargetDescription) -> Capability:
    return Capability("fixed.conv_transpose2d", True, "stride 2, dilation 1, kernel >= 2: 4 CONVs by its phase "
                      f"sub-kernels within the CONV limits ({_conv_limits(target)}), a DMA interleave")


def _always(op: str, how: str) -> Callable[[TargetDescription], Capability]:
    return lambda target: Capability(op, True, how)


CAPABILITIES: tuple[Callable[[TargetDescription], Capability], ...] = (
    _always("fixed.constant", "constant image in DDR"),
    _always("fixed.quantize", "program inputs only (the host quantizes)"),
    _always("fixed.dequantize", "program outputs only (the host dequantizes)"),
    _rescale,
    _always("fixed.shift", "fused: the int16 stage of a two-stage ELTWISE add/sub"),
    _clamp,
    _eltwise("add"),
    _eltwise("sub"),
    _eltwise("mul"),
    _conv,
    lambda target: Capability("fixed.gemm", True, f"CONV 1x1, K <= {target.conv.max_channels}"),
    _pool("max", "fixed.max_pool"),
    _pool("avg", "fixed.avg_pool"),
    _pool("global_avg", "fixed.global_avg_pool"),
    _table,
    _always("fixed.reshape", "a view of row-major bytes (a DMA relayout at most)"),
    _always("fixed.flatten", "a view of row-major bytes (a DMA relayout at most)"),
    _always("fixed.transpose", "NCHW <-> NHWC views by DMA"),
    _always("fixed.concat", "channel concatenation by DMA"),
    _always("fixed.resize", "nearest: the input (or its edge pad) stored once per output phase by strided DMA "
                            "stores; not where the pixel read varies with the position inside a phase (align_corners "
                            "beyond x2)"),
    _resize_linear,
    _conv_transpose,
)


def op_capabilities(target: TargetDescription | str) -> dict[str, Capability]:
    target = load_target(target) if isinstance(target, str) else target
    return {cap.op: cap for cap in (make(target) for make in CAPABILITIES)}


# --------------------------------------------------------------------------------------
# One op instance
# --------------------------------------------------------------------------------------


def is_native(target: TargetDescription, op: Operation) -> bool:
    """Whether lower-fixed-to-npu selects a unit for this op instance as it stands (the
    questions are target/legality.py's; ops without a per-instance rule by their unit)."""
    from xnpu.dialects import fixed

    if isinstance(op, fixed.ClampOp):
        return legality.fixed_clamp_problem(target, op) is None
    if isinstance(op, fixed.Conv2dOp):
        return legality.fixed_conv_problem(target, op, dense_dilation=True) is None
    per_instance = {fixed.ResizeOp: legality.fixed_resize_problem, fixed.ResizeLinearOp: legality.fixed_resize_linear_problem,
                    fixed.ConvTranspose2dOp: legality.fixed_conv_transpose_problem}.get(type(op))
    if per_instance is not None:
        return per_instance(target, op) is None
    capability = op_capabilities(target).get(op.name)
    return capability is None or capability.native


# --------------------------------------------------------------------------------------
# The supported-operators report
# --------------------------------------------------------------------------------------


def supported_ops_markdown(target: TargetDescription | str, patterns=None) -> str:
    """A markdown table: op, native?, limits, and the legalization patterns that apply otherwise."""
    from xnpu.lowering.legalize import legalize_patterns

    target = load_target(target) if isinstance(target, str) else target
    patterns = legalize_patterns() if patterns is None else patterns
    lines = [
        f"### {target.name}",
        "",
        f"{target.description}. Data i{target.data.width}, saturation {_saturation(target)}.",
        "",
        "| op | native | limits | otherwise (legalize patterns, by benefit) |",
        "|---|---|---|---|",
    ]
    for op_name, cap in op_capabilities(target).items():
        rules = [f"`{p.name}` ({p.summary})" for p in patterns if p.legalizes == op_name]
        otherwise = "; ".join(rules) if rules else "-"
        lines.append(f"| `{op_name}` | {'yes' if cap.native else 'no'} | {cap.limits} | {otherwise} |")
    return "\n".join(lines) + "\n"


DOC_HEADER = """# Supported operators per target

Generated by `python -m xnpu.driver.capabilities` (`xnpu-opt --supported-ops --target NAME`
prints one table); test/python/test_legalize.py fails when this file is stale. "native"
is derived from the target's TOML (units, element-wise ops, limits); "otherwise" lists the
PDL patterns of `lowering/legalize/` whose root is the op, tried by `legalize{target=...}`
in order of benefit where an instance is not native (docs/extending.md).

"""


def supported_ops_document() -> str:
    from xnpu.target.description import list_targets

    return DOC_HEADER + "\n".join(supported_ops_markdown(name) for name in list_targets())


if __name__ == "__main__":
    import sys
    from pathlib import Path

    out = Path(sys.argv[1]) if len(sys.argv) > 1 else Path(__file__).resolve().parents[1] / "docs" / "supported-ops.md"
    out.write_text(supported_ops_document())
    print(f"wrote {out}")
