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
