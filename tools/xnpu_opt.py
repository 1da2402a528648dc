"""xnpu-opt: read IR, run passes, print IR (mlir-opt / xdsl-opt for xnpu's dialects).

    xnpu-opt model.mlir -p fold-batch-norm,remove-noop,constant-fold{max-elements=4096} -o out.mlir
    xnpu-opt cases.mlir --split-input-file --verify-diagnostics
    xnpu-opt --list-passes

Only builtin, func and xnpu's dialects are known, and only xnpu's passes (xnpu.driver.registry, the
same table stock `xdsl-opt` gets through xnpu.driver.universe). Locations (ONNX node names) are
printed; a failure is one line on stderr and exit status 1, and `-o` is never left half
written.
"""

from __future__ import annotations

import argparse
import dataclasses
import io
import sys
from collections.abc import Callable, Sequence
from typing import IO, TYPE_CHECKING

from xdsl.dialects.builtin import ModuleOp
from xdsl.tools.command_line_tool import CommandLineTool
from xdsl.utils.exceptions import ArgSpecParseError, DiagnosticException, ParseError

if TYPE_CHECKING:  # xdsl.passes is imported when a pipeline is given
    from xdsl.passes import ModulePass

from xnpu.core.errors import XnpuError, first_line, printable
from xnpu.core.files import check_input_file, write_atomically
from xnpu.driver.registry import all_passes
from xnpu.ir.context import make_context
from xnpu.ir.io import IRParser, failing_op, parse_error_line, position_of, print_ir, verify_error_text, verify_ops
from xnpu.tools.cli import ArgumentParser, check_output, run_reporting_errors

PROG = "xnpu-opt"


class ToolError(Exception):
    """A failure already formatted as the single line the user sees."""


def pass_description(factory: Callable[[], type[ModulePass]]) -> str:
    """The first line of a pass's docstring; a pass that cannot be imported says why."""
    try:
        pass_class = factory()
    except ImportError as error:
        return f"(unavailable: {error})"
    doc = (pass_class.__doc__ or "").strip()
    return doc.splitlines()[0] if doc else ""


class XnpuOptMain(CommandLineTool):
    """xdsl-opt's driver for xnpu IR. Not xDSLOptMain itself: that loads every xDSL dialect,
    adds xDSL's output `-t/--target` (xnpu-opt keeps `--target` for the hardware description
    of the NPU being compiled for, see register_all_arguments), and importing it costs a
    sixth of the tool's start-up."""

    def __init__(self, args: Sequence[str] | None = None):
        self.available_frontends = {}
        self.available_passes = {}
        self.available_targets = {}
        self.ctx = make_context()
        self.register_all_frontends()
        self.register_all_passes()
        arg_parser = ArgumentParser(
            prog=PROG, description="Run xnpu passes over textual IR and print the result."
        )
        self.register_all_arguments(arg_parser)
        self.args = arg_parser.parse_args(args=args)
        self.ctx.allow_unregistered = self.args.allow_unregistered_dialect
        # what the pipeline is doing, for naming the culprit when verification fails
        self.stage: str | None = None
        # where the ops of the chunk being processed were parsed, for file:line:col errors
        self.op_spans: dict = {}
        self.line_offset = 0

    # ---- registration ------------------------------------------------------------------

    def register_all_passes(self) -> None:
        self.available_passes.update(all_passes())

    def register_all_arguments(self, arg_parser: argparse.ArgumentParser) -> None:
        """Input options (from CommandLineTool), then pipeline, output and diagnostics options.

        Options that choose what is compiled for (a hardware `--target`) belong in this
        method; the pipeline is only built after parsing (`setup_pipeline`), so such an
        option can configure the passes it needs.
        """
        CommandLineTool.register_all_arguments(self, arg_parser)
        arg_parser.add_argument(
            "-p",
            "--passes",
            default="",
            help="comma-separated pass pipeline, options in braces: pass1,pass2{opt=v} "
            "(see --list-passes)",
        )
        arg_parser.add_argument(
            "--list-passes", action="store_true", help="list the available passes and exit"
        )
        arg_parser.add_argument("-o", "--output-file", help="write the result here (atomically)")
        arg_parser.add_argument(
            "--split-input-file",
            action="store_true",
            help="process each `// -----`-separated chunk of the input independently",
        )
        arg_parser.add_argument(
            "--verify-diagnostics",
            action="store_true",
            help="print verifier and pass diagnostics to stdout and exit 0 (for FileCheck)",
        )
        arg_parser.add_argument(
            "--parsing-diagnostics",
            action="store_true",
            help="print parse errors to stdout and exit 0 (for FileCheck)",
        )
        arg_parser.add_argument(
            "--print-op-generic", action="store_true", help="print ops in the generic format"
        )
        arg_parser.add_argument(
            "--target",
            help="hardware target (a shipped name or a TOML path): the default of every pass's `target` option",
        )
        arg_parser.add_argument(
            "--supported-ops",
            action="store_true",
            help="print the target's supported-operators table (markdown) and exit",
        )

    # ---- the steps ---------------------------------------------------------------------

    def setup_pipeline(self) -> None:
        def verify_between(previous: ModulePass | None, module: ModuleOp, upcoming: ModulePass | None) -> None:
            self.stage = None if previous is None else f"after pass '{previous.name}'"
            if not self.args.disable_verify:
                verify_ops(module)
            self.stage = None if upcoming is None else f"in pass '{upcoming.name}'"

        from xdsl.passes import PassPipeline

        spec = self.args.passes
        try:
            self.pipeline = PassPipeline.parse_spec(self.available_passes, spec, verify_between)
        except ValueError as error:
            raise ToolError(f"{PROG}: error: invalid pass pipeline '{spec}': {first_line(error)}") from None
        except ArgSpecParseError as error:
            # xDSL's message spans several lines with a caret; its last line is the reason
            reason = [line.strip() for line in str(error).splitlines() if line.strip()][-1]
            raise ToolError(f"{PROG}: error: invalid pass pipeline '{spec}': {reason}") from None
        if self.args.target is not None:
            from xdsl.utils.arg_spec import parse_pipeline

            explicit = [set(spec.normalize_parameter_names().parameters) for spec in parse_pipeline(self.args.passes)]
            self.pipeline = dataclasses.replace(
                self.pipeline,
                passes=tuple(self.with_target(p, given) for p, given in zip(self.pipeline.passes, explicit)),
            )

    def with_target(self, pass_: ModulePass, given: set[str]) -> ModulePass:
        """`--target` sets a pass's `target` option unless the pipeline gives it explicitly."""
        fields = {f.name for f in dataclasses.fields(pass_)} if dataclasses.is_dataclass(pass_) else set()
        if "target" not in fields or "target" in given:
            return pass_
        return dataclasses.replace(pass_, target=self.args.target)

    def register_all_frontends(self) -> None:
        def parse_mlir(stream: IO[bytes]) -> ModuleOp:
            parser = IRParser(self.ctx, stream.read(), self.get_input_name())
            module = parser.parse_module(not self.args.no_implicit_module)
            self.op_spans = parser.op_spans
            return module

        self.available_frontends["mlir"] = parse_mlir

    def get_input_name(self) -> str:
        return self.args.input_file or "<stdin>"

    def split_input(self) -> tuple[list[tuple[IO[bytes], int]], str]:
        """The input as (chunk, line offset) pairs (`// -----` chunks with --split-input-file)."""
        stream, extension = self.get_input_stream()
        chunks = [(stream, 0)]
        if self.args.split_input_file:
            pieces = stream.read().split(b"// -----")
            stream.close()
            chunks, offset = [], 0
            for piece in pieces:
                chunks.append((io.BytesIO(piece), offset))
                offset += piece.count(b"\n")
        extension = self.args.frontend or extension
        if extension not in self.available_frontends:
            for chunk, _ in chunks:
                chunk.close()
            raise ValueError(f"Unrecognized file extension '{extension}'")
        return chunks, extension

    def apply_passes(self, module: ModuleOp) -> None:
        self.pipeline.apply(self.ctx, module)

    def prepare_input(self) -> tuple[list[tuple[IO[bytes], int]], str]:
        if self.args.input_file is not None:
            check_input_file(self.args.input_file)
        try:
            chunks, extension = self.split_input()
        except OSError as error:
            raise ToolError(f"{PROG}: error: {self.get_input_name()}: cannot read: {error.strerror}") from None
        except ValueError:
            known = ", ".join(f".{name}" for name in self.available_frontends)
            raise ToolError(
                f"{PROG}: error: {self.get_input_name()}: unknown file type (known: {known}; "
                "or choose one with -f)"
            ) from None
        return chunks, extension

    def output_resulting_program(self, prog: ModuleOp) -> str:
        return print_ir(prog, generic=self.args.print_op_generic)

    def process(self, chunks: list[tuple[IO[bytes], int]], extension: str, emit: Callable[[str], object]) -> None:
        """Parse, transform and print each chunk; diagnostics go to stdout, as xdsl-opt's do."""
        for index, (chunk, offset) in enumerate(chunks):
            try:
                if index:
                    emit("// -----\n")
                module = self.parse_or_report(chunk, extension, offset)
                if module is None or not self.transform_or_report(module):
                    continue
                emit(self.output_resulting_program(module))
            finally:
                chunk.close()

    def parse_or_report(self, chunk: IO[bytes], extension: str, offset: int) -> ModuleOp | None:
        self.line_offset = offset
        try:
            return self.parse_chunk(chunk, extension, offset)
        except ParseError as error:
            # a chunk's line numbers count from the start of the whole file
            error.span = dataclasses.replace(error.span, line_offset=offset)
            line = parse_error_line(error)
            if self.args.parsing_diagnostics:
                print(line)
                return None
            raise ToolError(line) from None

    def transform_or_report(self, module: ModuleOp) -> bool:
        self.stage = None
        try:
            self.apply_passes(module)
            return True
        except DiagnosticException as error:
            if self.args.verify_diagnostics:
                print(error)
                for note in getattr(error, "__notes__", ()):
                    print(note)
                return False
            failing, message = failing_op(module, error)
            if self.stage is None:  # the input itself does not verify: say where, as MLIR does
                where = position_of(failing, self.get_input_name(), self.op_spans, self.line_offset)
                raise ToolError(f"{where}: error: {verify_error_text(failing, message)}") from None
            message = verify_error_text(failing, message)
        except XnpuError as error:
            message = str(error)
        stage = f"{self.stage}: " if self.stage else ""
        raise ToolError(f"{PROG}: error: {self.get_input_name()}: {stage}{message}")

    def run(self) -> int:
        try:
            if self.args.supported_ops:
                from xnpu.driver.capabilities import supported_ops_markdown
                from xnpu.target.description import load_target

                print(supported_ops_markdown(load_target(self.args.target or "xnpu_default")), end="")
                return 0
            if self.args.list_passes:
                width = max(map(len, self.available_passes), default=0)
                for name, factory in self.available_passes.items():
                    print(f"{name:<{width}}  {pass_description(factory)}".rstrip())
                return 0
            self.setup_pipeline()
            inputs = (self.args.input_file, self.args.target)
            check_output(self.args.output_file, inputs)
            chunks, extension = self.prepare_input()
            if self.args.output_file is None:
                self.process(chunks, extension, sys.stdout.write)
            else:
                pieces: list[str] = []
                self.process(chunks, extension, pieces.append)
                write_atomically(self.args.output_file, "".join(pieces), inputs)
        except ToolError as error:
            sys.stdout.flush()
            print(printable(str(error)), file=sys.stderr)
            return 1
        except XnpuError as error:
            sys.stdout.flush()
            print(printable(f"{PROG}: error: {error}"), file=sys.stderr)
            return 1
        return 0


def main(argv: Sequence[str] | None = None) -> int:
    options = XnpuOptMain(argv)  # a usage error exits here, as argparse does
    return run_reporting_errors(PROG, options.run)


if __name__ == "__main__":
    sys.exit(main())
