"""What every xnpu command-line tool does the same way: its error line and its output file."""

from __future__ import annotations

import sys
from collections.abc import Callable

from xnpu.errors import XnpuError
from xnpu.ir_io import write_atomically


def error_line(prog: str, error: XnpuError) -> str:
    # IR errors read `file:line:col: error: ...`; after the tool's own prefix, once is enough
    return f"{prog}: error: {str(error).replace(': error: ', ': ', 1)}"


def run_reporting_errors(prog: str, action: Callable[[], int | None]) -> int:
    """Run `action`; a user error becomes one line on stderr and exit status 1, never a traceback."""
    try:
        return action() or 0
    except XnpuError as error:
        print(error_line(prog, error), file=sys.stderr)
        return 1
    except KeyboardInterrupt:
        print(f"{prog}: error: interrupted", file=sys.stderr)
        return 1
    except BrokenPipeError:  # the reader (e.g. `| head`) went away: nothing left to say
        return 0


def write_output(output: str | None, payload: str | bytes) -> None:
    """To the file `output` (atomically), or to stdout when it is None or '-'."""
    if output is not None and output != "-":
        write_atomically(output, payload)
    elif isinstance(payload, bytes):
        sys.stdout.buffer.write(payload)
    else:
        sys.stdout.write(payload)
