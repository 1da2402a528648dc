"""xnpu-translate: convert between xnpu IR and outside formats (like mlir-translate).

    xnpu-translate --import-onnx model.onnx -o model.mlir
    xnpu-translate --import-onnx model.onnx --input-shape input=1,3,512,512 -o model.mlir
    xnpu-translate --emit-binary model.isa.mlir -o model.xnb
    xnpu-translate --disassemble model.xnb

Exactly one mode flag says which translation to run; each mode reads one input file and
writes its result to `-o` (atomically) or to stdout. Errors are one line on stderr and exit
status 1; no output file is created.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Callable

from xnpu.core.errors import XnpuError
from xnpu.tools.cli import ArgumentParser, check_output, run_reporting_errors, write_output
from xnpu.tools.shape_option import add_input_shape_option, input_shapes

PROG = "xnpu-translate"


# each mode imports what it alone needs: an ONNX import does not load the isa dialect and the
# emitter, and a refused argument exits before either


def import_onnx(args: argparse.Namespace) -> str:
    from xnpu.frontend.onnx_import import import_onnx as _import
    from xnpu.ir.io import print_ir

    return print_ir(_import(args.input, input_shapes=input_shapes(args)))


def emit_binary(args: argparse.Namespace) -> bytes:
    from xnpu.backend.emit import emit_binary as _emit
    from xnpu.ir.io import load_ir

    return _emit(load_ir(args.input)).to_bytes()


def disassemble(args: argparse.Namespace) -> str:
    from xnpu.backend.binary import Binary
    from xnpu.backend.emit import disassemble as _disassemble

    return _disassemble(Binary.from_file(args.input))


# mode name (its flag is --<name>) -> (help, translation returning the output text or bytes)
MODES: dict[str, tuple[str, Callable[[argparse.Namespace], str | bytes]]] = {
    "import-onnx": ("ONNX model -> nn dialect IR", import_onnx),
    "emit-binary": ("isa dialect IR -> binary (.xnb)", emit_binary),
    "disassemble": ("binary (.xnb) -> isa dialect IR with provenance comments", disassemble),
}


def build_parser() -> argparse.ArgumentParser:
    parser = ArgumentParser(prog=PROG, description="Translate between xnpu IR and other formats.")
    modes = parser.add_mutually_exclusive_group(required=True)
    for mode, (help_text, _) in MODES.items():
        modes.add_argument(f"--{mode}", dest="mode", action="store_const", const=mode, help=help_text)
    parser.add_argument("input", help="input file")
    parser.add_argument("-o", "--output", help="output file (default: stdout)")
    add_input_shape_option(parser)
    return parser


def translate(args: argparse.Namespace) -> None:
    if args.input_shape and args.mode != "import-onnx":
        raise XnpuError("--input-shape applies to --import-onnx only")
    check_output(args.output, [args.input])
    write_output(args.output, MODES[args.mode][1](args), [args.input])


def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    return run_reporting_errors(PROG, lambda: translate(args))


if __name__ == "__main__":
    sys.exit(main())
