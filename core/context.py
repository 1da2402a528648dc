"""The MLIR context every xnpu tool and API call parses into."""

from xdsl.context import Context
from xdsl.dialects.builtin import Builtin
from xdsl.dialects.func import Func

from xnpu.dialects.fixed import FIXED
from xnpu.dialects.isa import ISA
from xnpu.dialects.nn import NN
from xnpu.dialects.npu import NPU
from xnpu.dialects.tosa import TOSA


def xnpu_dialects():
    """Every dialect xnpu defines, in pipeline order (float graph first)."""
    return [NN, FIXED, NPU, ISA]


def make_context() -> Context:
    ctx = Context()
    for dialect in (Builtin, Func, *xnpu_dialects()):
        ctx.load_dialect(dialect)
    ctx.load_dialect(TOSA)  # the export's dialect (dialects/tosa.py); xdsl-opt has its own `tosa`
    return ctx
