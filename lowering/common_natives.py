"""Native constraints every pattern set may call: questions about values PDL cannot ask.

Native names are global (docs/extending.md); the ones here are shared by the nn -> fixed,
legalize and fixed -> npu patterns instead of being defined once per pass.
"""

from __future__ import annotations

from xdsl.ir import Operation, SSAValue

from xnpu.dialects import fixed
from xnpu.lowering.pdl_driver import PatternContext, native_constraint


@native_constraint()
def single_use(ctx: PatternContext, value: SSAValue) -> bool:
    return len(list(value.uses)) == 1


@native_constraint()
def is_i8(ctx: PatternContext, value: SSAValue | Operation) -> bool:
    """An i8 value, or an op whose (first) result is i8."""
    return fixed.width_of(value.results[0] if isinstance(value, Operation) else value) == 8
