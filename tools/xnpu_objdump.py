"""xnpu-objdump: print a compiled binary as isa IR, with each instruction's index and origin.

    xnpu-objdump model.xnb                 # the whole program, constant image in hex
    xnpu-objdump model.xnb --no-constants  # the image summarised in a comment
    xnpu-objdump model.xnb --target my_target.toml

With the constants shown, the text assembles back to the same bytes
(`xnpu-translate --emit-binary`). Errors are one line on stderr and exit status 1.
"""

from __future__ import annotations

import sys
from collections.abc import Sequence

from xnpu.backend.binary import Binary
from xnpu.backend.emit import disassemble
from xnpu.tools.cli import ArgumentParser, check_output, run_reporting_errors, write_output

PROG = "xnpu-objdump"


def main(argv: Sequence[str] | None = None) -> int:
    parser = ArgumentParser(prog=PROG, description="Disassemble an xnpu binary.")
    parser.add_argument("binary", help="compiled program (.xnb)")
    parser.add_argument("--no-constants", action="store_true", help="do not print the constant image")
    parser.add_argument("--target", help="target name or .toml file (default: the shipped target with the binary's id)")
    parser.add_argument("-o", "--output", help="output file (default: stdout)")
    args = parser.parse_args(argv)

    def action():
        inputs = (args.binary, args.target)
        check_output(args.output, inputs)

        text = disassemble(Binary.from_file(args.binary), args.target, constants=not args.no_constants)
        write_output(args.output, text, inputs)

    return run_reporting_errors(PROG, action)


if __name__ == "__main__":
    sys.exit(main())
