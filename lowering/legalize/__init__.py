"""`legalize{target=...}`: fixed ops the target lacks, rewritten into fixed ops it has.

Seed 001 (clamps as saturating bias-adds, or one power-of-two conv whose saturation clips)
and seed 002 (element-wise mul as a depthwise convolution) are the PDL patterns in this
directory (`clamp.mlir`, `mul.mlir`); their parameters come from the native functions of
`natives.py`. The pass runs at the fixed level, before `lower-fixed-to-npu` selects units,
so its effect can be printed, run and checked like any fixed module. docs/extending.md
shows how to add a legalization: a pattern file, and a native function where a parameter
must be computed.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from xdsl.context import Context
from xdsl.dialects.builtin import ModuleOp
from xdsl.passes import ModulePass

import xnpu.lowering.legalize.natives  # noqa: F401  (registers by decoration)
from xnpu.core.errors import XnpuError
from xnpu.dialects import fixed
from xnpu.dialects.targeting import DEFAULT_TARGET, module_target
from xnpu.pdl.driver import apply_patterns
from xnpu.pdl.patterns import PatternContext, load_natives, load_patterns, split_paths

PATTERN_DIR = Path(__file__).resolve().parent
CLAMP_METHODS = ("auto", "saturate", "bias")


def legalize_patterns(extra=()):
    """The shipped legalizations and those in `extra` (files or directories), by decreasing benefit."""

    return load_patterns([PATTERN_DIR, *extra])


@dataclass(frozen=True)
class LegalizePass(ModulePass):
    """Rewrite fixed ops the target does not run natively into ones it does (PDL patterns, docs/extending.md)."""

    name = "legalize"

    target: str = ""  # a shipped name or a TOML path, recorded in the module for the passes after it
    clamp_method: str = "auto"  # auto | saturate (seed 001 method 1) | bias (method 2)
    patterns: str = ""  # extra pattern files or directories, comma-separated
    natives: str = ""  # Python files registering extra native functions, comma-separated

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        if self.clamp_method not in CLAMP_METHODS:
            raise XnpuError(f"legalize: clamp-method must be one of {', '.join(CLAMP_METHODS)}, got '{self.clamp_method}'")
        for path in split_paths(self.natives):
            load_natives(path)
        target = module_target(op, self.target, default=DEFAULT_TARGET)
        # what the accelerator cannot hold goes to the host as it is (lower-fixed-to-npu)
        context = PatternContext(target, {"clamp_method": self.clamp_method}, excluded=fixed.unheld(op.walk()))
        apply_patterns(op, legalize_patterns(split_paths(self.patterns)), context)
