"""The MLIR context every xnpu tool and API call parses into.

xnpu's dialects are registered by name and built on first use (`Context.register_dialect`):
parsing a file of float ops never imports the fixed or isa dialects (nor numpy), so the
tools start fast however many dialects are added.
"""

from collections.abc import Callable

from xdsl.context import Context
from xdsl.dialects.builtin import Builtin
from xdsl.ir import Dialect


def _nn() -> Dialect:
    from xnpu.dialects.nn import NN

    return NN


def _fixed() -> Dialect:
    from xnpu.dialects.fixed import FIXED

    return FIXED


def _npu() -> Dialect:
    from xnpu.dialects.npu import NPU

    return NPU


def _isa() -> Dialect:
    from xnpu.dialects.isa import ISA

    return ISA


def _tosa() -> Dialect:
    # the export's dialect (dialects/tosa.py): xnpu's context only, xdsl-opt has its own `tosa`
    from xnpu.dialects.tosa import TOSA

    return TOSA


def _func() -> Dialect:
    from xdsl.dialects.func import Func

    return Func


# Every dialect xnpu defines, by name, in pipeline order (float graph first).
XNPU_DIALECTS: dict[str, Callable[[], Dialect]] = {"nn": _nn, "fixed": _fixed, "npu": _npu, "isa": _isa}


def make_context() -> Context:
    ctx = Context()
    ctx.load_dialect(Builtin)
    for name, load in {"func": _func, **XNPU_DIALECTS, "tosa": _tosa}.items():
        ctx.register_dialect(name, load)
    return ctx
