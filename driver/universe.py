"""xnpu's plugin for stock xDSL tools: `xdsl-opt` parses xnpu IR and runs xnpu passes.

Registered in pyproject as the `xdsl.universe` entry point `xnpu`. The dialect and pass
tables are the same ones `xnpu-opt` uses (xnpu.ir.context, xnpu.driver.registry), so both drivers
always agree on what exists.
"""

from xdsl.universe import Universe

from xnpu.driver.registry import all_passes
from xnpu.ir.context import XNPU_DIALECTS

XNPU_UNIVERSE = Universe(all_dialects=dict(XNPU_DIALECTS), all_passes=all_passes())
