"""What every xnpu command-line tool does the same way: its error line and its output file.

A tool's work runs inside `run_reporting_errors`: a user error (XnpuError) becomes one line
`<tool>: error: ...` and exit status 1, never a traceback; numpy's floating-point warnings
are silenced (IEEE arithmetic defines their results, and where a non-finite value matters,
calibration and quantization refuse it with an error of their own); an XnpuNote is one line
`<tool>: note: ...` and any other Python warning one line `<tool>: warning: ...`.
"""

from __future__ import annotations

import argparse
import os
import sys
import warnings
from collections.abc import Callable, Iterable

from xnpu.core.errors import XnpuError, XnpuNote, printable
from xnpu.core.files import refuse_overwriting_inputs, write_atomically


class ArgumentParser(argparse.ArgumentParser):
    """argparse, except that a usage error is one line `<tool>: error: ...` (exit status 2)
    instead of the usage text followed by the error."""

    def error(self, message: str):
        self.exit(2, printable(f"{self.prog}: error: {message} (see --help)") + "\n")


def error_line(prog: str, error: XnpuError) -> str:
    # IR errors read `file:line:col: error: ...`; after the tool's own prefix, once is enough
    return printable(f"{prog}: error: {str(error).replace(': error: ', ': ', 1)}")


_NUMPY_FLOAT_WARNING = r"(overflow|invalid value|divide by zero|underflow) encountered"


def run_reporting_errors(prog: str, action: Callable[[], int | None]) -> int:
    """Run `action`; a user error becomes one line on stderr and exit status 1, never a traceback."""

    def one_line_warning(message, category, filename, lineno, file=None, line=None):
        text = " ".join(str(message).split())
        kind = "note" if issubclass(category, XnpuNote) else "warning"
        print(printable(f"{prog}: {kind}: {text}"), file=sys.stderr)

    try:
        with warnings.catch_warnings():
            # numpy's float warnings (overflow, invalid value, ...) say nothing a user can act
            # on: results show inf/nan. Filtered by message, so numpy is not imported for it.
            warnings.filterwarnings("ignore", message=_NUMPY_FLOAT_WARNING, category=RuntimeWarning)
            warnings.showwarning = one_line_warning
            return action() or 0
    except XnpuError as error:
        sys.stdout.flush()
        print(error_line(prog, error), file=sys.stderr)
        return 1
    except KeyboardInterrupt:
        print(f"{prog}: error: interrupted", file=sys.stderr)
        return 1
    except MemoryError:
        print(f"{prog}: error: out of memory (the model or its data is too large for this machine)", file=sys.stderr)
        return 1
    except RecursionError:  # IR text is limited before it is parsed (MAX_NESTING); this is for any other input
        print(f"{prog}: error: the input nests too deeply to be read (Python's recursion limit)", file=sys.stderr)
        return 1
    except BrokenPipeError:
        # the reader (`| head`) went away: say nothing more, and keep the interpreter's
        # final flush of stdout from failing again
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return 0


def check_output(output: str | None, inputs: Iterable[str | os.PathLike[str] | None]) -> None:
    """Refuse, before any work is done, an output file that is one of the inputs."""
    if output is not None and output != "-":
        refuse_overwriting_inputs(output, inputs)


def write_output(output: str | None, payload: str | bytes, inputs: Iterable[str | os.PathLike[str] | None] = ()) -> None:
    """To the file `output` (atomically, never over one of `inputs`), or to stdout when it is None or '-'."""
    if output is not None and output != "-":
        write_atomically(output, payload, inputs)
    elif isinstance(payload, bytes):
        sys.stdout.buffer.write(payload)
    else:
        sys.stdout.write(payload)
