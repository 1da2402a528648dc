"""What every xnpu command-line tool does the same way: its error line and its output file."""

from __future__ import annotations

import sys
import warnings
from collections.abc import Callable

from xnpu.errors import XnpuError, XnpuNote
from xnpu.ir_io import write_atomically


def error_line(prog: str, error: XnpuError) -> str:
    # IR errors read `file:line:col: error: ...`; after the tool's own prefix, once is enough
    return f"{prog}: error: {str(error).replace(': error: ', ': ', 1)}"


def run_reporting_errors(prog: str, action: Callable[[], int | None]) -> int:
    """Run `action`; a user error becomes one line on stderr and exit status 1, never a traceback."""
    print_notes_as_lines(prog)
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


def print_notes_as_lines(prog: str) -> None:
    """Show every XnpuNote warning as one `<prog>: note: ...` line on stderr (other warnings as usual)."""
    show_warning = warnings.showwarning

    def show(message, category, filename, lineno, file=None, line=None):
        if issubclass(category, XnpuNote):
            print(f"{prog}: note: {message}", file=sys.stderr)
        else:
            show_warning(message, category, filename, lineno, file, line)

    warnings.showwarning = show
