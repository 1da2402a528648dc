"""The one exception type users see.

Every failure that is the user's doing (bad IR, unsupported ONNX, wrong inputs, impossible
targets, corrupt binaries) is raised as `XnpuError` with a single-line message; the command
line tools print that line and exit non-zero instead of showing a traceback.
"""


class XnpuError(Exception):
    """A user-facing error: `str(error)` is one complete line."""


class XnpuNote(UserWarning):
    """Something the user should know that is not an error (a default chosen for them).

    Issued with `warnings.warn`; the command line tools print each as one `<tool>: note: ...` line.
    """


def first_line(error: Exception) -> str:
    lines = [line for line in str(error).splitlines() if line.strip()]
    return lines[0].strip() if lines else type(error).__name__


def printable(text: str) -> str:
    """`text` with every character a terminal would act on escaped as its UTF-8 bytes, `\\XX` as
    MLIR escapes string literals: control characters (a newline, ESC and the terminal sequences
    it starts, C1 controls), line and paragraph separators, bidirectional overrides; whatever
    `str.isprintable` refuses. A node name printed in an error line, a listing or a summary
    then shows what it holds on one line, instead of ending the line or recolouring the terminal."""
    if text.isprintable():
        return text
    return "".join(c if c.isprintable() else "".join(f"\\{b:02X}" for b in c.encode("utf-8", "surrogatepass"))
                   for c in text)


class XnpuWarning(UserWarning):
    """Something that works but is likely not what the user wants (a model with nothing for
    the accelerator). Printed by the command line tools as one `<tool>: warning: ...` line."""
