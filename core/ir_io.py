"""Reading and writing textual IR, with one-line errors.

Parse errors carry `file:line:col`; verification errors name the op and, where the op came
from ONNX, the node (its location). Output files are written atomically: a failed compile
never leaves a half-written file behind.
"""

from __future__ import annotations

import io
import os
import tempfile
from pathlib import Path

from xdsl.dialects.builtin import ModuleOp, UnknownLoc
from xdsl.ir import Operation
from xdsl.parser import Parser
from xdsl.printer import Printer
from xdsl.utils.exceptions import DiagnosticException, ParseError, VerifyException

from xnpu.context import make_context
from xnpu.errors import XnpuError


def parse_error_line(error: ParseError) -> str:
    """`file:line:col: error: message`, as mlir-opt prints it."""
    return f"{error.span.get_location()}: error: {error.msg.strip()}"


class IRParser(Parser):
    """xDSL's parser, except that a constraint an op's builder checks while parsing (an i32
    tensor handed to an f32-only op) is reported as a ParseError at that op, with its
    file:line:col, instead of escaping as a VerifyException that says nowhere."""

    def parse_operation(self) -> Operation:
        start = self._current_token.span
        try:
            return super().parse_operation()
        except VerifyException as error:
            raise ParseError(start, joined_lines(error)) from None


def parse_ir(text: str | bytes, filename: str = "<stdin>", verify: bool = True) -> ModuleOp:
    try:
        module = IRParser(make_context(), text, filename).parse_module()
    except ParseError as error:
        raise XnpuError(parse_error_line(error)) from None
    if verify:
        verify_module(module, filename)
    return module


def load_ir(path: str | os.PathLike[str]) -> ModuleOp:
    path = Path(path)
    try:
        text = path.read_bytes()
    except OSError as error:
        raise XnpuError(f"{path}: cannot read: {error.strerror}") from None
    return parse_ir(text, str(path))


def describe_op(op: Operation) -> str:
    where = "" if isinstance(op.location, UnknownLoc) else f" at {_location_text(op)}"
    return f"'{op.name}'{where}"


def _location_text(op: Operation) -> str:
    stream = io.StringIO()
    Printer(stream=stream).print_attribute(op.location)
    return stream.getvalue()


def verify_module(module: ModuleOp, filename: str = "<module>") -> None:
    try:
        module.verify()
    except DiagnosticException as error:
        raise XnpuError(f"{filename}: error: {verify_error_text(module, error)}") from None


def verify_error_text(module: Operation, error: Exception) -> str:
    """The verifier's message, prefixed by the op that failed and its location (ONNX node).

    xDSL's exception does not carry the op, so the op whose own verifier raises the same
    message is looked up again (cheap: only on failure, and without printing the module).
    """
    message = joined_lines(error)
    failing = None
    for op in module.walk():
        try:
            op.verify_()
        except VerifyException as op_error:
            if joined_lines(op_error) == message:
                failing = op
                break
            failing = failing or op
    if failing is None:
        return message
    prefix = f"{failing.name}: "
    return f"{describe_op(failing)}: {message.removeprefix(prefix)}"


def joined_lines(error: Exception) -> str:
    """The whole message on one line (IRDL's constraint errors span two: what, then why)."""
    return " ".join(line.strip() for line in str(error).splitlines() if line.strip()) or type(error).__name__


def first_line(error: Exception) -> str:
    lines = [line for line in str(error).splitlines() if line.strip()]
    return lines[0].strip() if lines else type(error).__name__


def print_ir(op: Operation, debuginfo: bool = True, generic: bool = False) -> str:
    """Custom-format (or generic) text of `op`; known locations (ONNX node names) are kept, unknown ones elided."""
    stream = io.StringIO()
    Printer(stream=stream, print_debuginfo=debuginfo, print_generic_format=generic).print_op(op)
    stream.write("\n")
    text = stream.getvalue()
    return text.replace(" loc(unknown)", "") if debuginfo else text


def write_atomically(path: str | os.PathLike[str], data: str | bytes) -> None:
    """Write to a temporary file beside `path`, then rename: readers never see half a file."""
    path = Path(path)
    mode = "wb" if isinstance(data, bytes) else "w"
    directory = path.parent if str(path.parent) else Path(".")
    try:
        fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", dir=directory)
    except OSError as error:
        raise XnpuError(f"{path}: cannot write: {error.strerror}") from None
    try:
        with os.fdopen(fd, mode) as handle:
            handle.write(data)
        # mkstemp makes the file private (0600); the output gets the mode `open` would give it
        umask = os.umask(0)
        os.umask(umask)
        os.chmod(tmp, 0o666 & ~umask)
        os.replace(tmp, path)
    except BaseException:
        if os.path.exists(tmp):
            os.unlink(tmp)
        raise
