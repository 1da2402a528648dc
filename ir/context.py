"""The MLIR context every xnpu tool and API call parses into.

xnpu's dialects are registered by name and built on first use (`Context.register_dialect`):
parsing a file of float ops never imports the fixed or isa dialects (nor numpy), so the
tools start fast however many dialects are added.
"""

import functools
from collections.abc import Callable

from xdsl.context import Context
from xdsl.dialects.builtin import Builtin
from xdsl.ir import Dialect

from xnpu.core.lazy import load

# Every dialect xnpu defines, by name, in pipeline order (float graph first).
XNPU_DIALECTS: dict[str, Callable[[], Dialect]] = {
    name: functools.partial(load, reference)
    for name, reference in (("nn", "xnpu.dialects.nn:NN"), ("fixed", "xnpu.dialects.fixed:FIXED"),
                            ("npu", "xnpu.dialects.npu:NPU"), ("isa", "xnpu.dialects.isa:ISA"))
}
# the export's dialect (dialects/tosa.py): xnpu's context only, xdsl-opt has its own `tosa`
_OTHERS = {"func": functools.partial(load, "xdsl.dialects.func:Func"), "tosa": functools.partial(load, "xnpu.dialects.tosa:TOSA")}


def make_context() -> Context:
    ctx = Context()
    ctx.load_dialect(Builtin)
    for name, loader in {"func": _OTHERS["func"], **XNPU_DIALECTS, "tosa": _OTHERS["tosa"]}.items():
        ctx.register_dialect(name, loader)
    return ctx
