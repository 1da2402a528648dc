"""The levels a compile stops at (`xnpu.compile(stop_at=...)`, `xnpu-compile --emit`), in a module
of their own: the tool builds its options from them without importing the compiler, so a
command that fails on its arguments or files exits before paying for it."""

LEVELS = ("nn", "fixed", "npu", "isa", "bin", "tosa")  # tosa: the fixed level exported (docs/tosa.md)
