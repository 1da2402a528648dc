"""xnpu's plugin for stock xDSL tools: `xdsl-opt` parses xnpu IR and runs xnpu passes.

Registered in pyproject as the `xdsl.universe` entry point `xnpu`. The dialect and pass
tables are the same ones `xnpu-opt` uses (xnpu.context, xnpu.registry), so both drivers
always agree on what exists.
"""

from xdsl.universe import Universe

from xnpu.context import xnpu_dialects
from xnpu.registry import all_passes


def _dialect_factories():
    # A dialect's name is only known once it is built; building every xnpu dialect here
    # is cheap (no pass or interpreter is imported).
    return {dialect.name: (lambda dialect=dialect: dialect) for dialect in xnpu_dialects()}


XNPU_UNIVERSE = Universe(all_dialects=_dialect_factories(), all_passes=all_passes())
