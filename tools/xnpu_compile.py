"""xnpu-compile: ONNX model -> accelerator binary, in one process.

    xnpu-compile model.onnx --calibration calib.npy -o model.xnb
    xnpu-compile model.onnx --calibration calib.npy --target xnpu_lite -o model.xnb
    xnpu-compile model.onnx --calibration calib.npy --emit=isa -o model.isa.mlir
    xnpu-compile model.onnx --input-shape input=1,3,320,320 --calibration calib.npy -o model.xnb
    xnpu-compile model.onnx --calibration calib.npy --emit=tosa -o model.tosa.mlir   # for IREE
    xnpu-compile model.onnx --calibration calib.npy --no-host-fallback -o model.xnb  # all on the accelerator, or fail
    xnpu-compile --list-targets

Runs import -> quantize (calibrate, lower-nn-to-fixed) -> legalize -> lower-fixed-to-npu ->
npu-assign-layout -> npu-tile -> npu-allocate -> lower-npu-to-isa -> isa-insert-dependencies -> emit on the module in
memory (`xnpu.driver.pipeline.compile`); `--emit` stops at a level and writes its IR text (nn, fixed,
npu, isa), the binary (bin, the default) or the fixed level as TOSA 1.0 (tosa).
`--print-ir-after-all` prints the
module after every step to stderr. An op the target cannot run is placed on the host (a host
segment of the binary, run where the accelerator hands off); then the placement summary goes
to stderr unless `--quiet`, and `--no-host-fallback` makes any such op one error instead. `--report DIR` writes the
per-layer error report of xnpu-quantize, each layer with where it runs on the target. Every failure is one line `xnpu-compile: error: ...` and
exit status 1; the output file is written atomically, so a failed compile leaves none.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence

from xnpu.core.errors import XnpuError
from xnpu.driver.levels import LEVELS
from xnpu.tools.cli import ArgumentParser, check_output, run_reporting_errors, write_output
from xnpu.tools.calibration_options import add_calibration_options, calibration_options
from xnpu.tools.shape_option import add_input_shape_option, input_shapes

PROG = "xnpu-compile"


def build_parser() -> argparse.ArgumentParser:
    parser = ArgumentParser(prog=PROG, description="Compile an ONNX model for an xnpu target.")
    parser.add_argument("model", nargs="?", help="ONNX model file")
    parser.add_argument("--calibration", "-c", help="calibration samples (.npy, or .npz by input name)")
    parser.add_argument("--target", "-t", default="xnpu_default", help="shipped target name or target .toml file (default: xnpu_default)")
    parser.add_argument("-o", "--output", help="output file (default: stdout for text; required for bin)")
    parser.add_argument("--emit", choices=LEVELS, default="bin", help="stop at this level (default: bin)")
    parser.add_argument("--print-ir-after-all", action="store_true", help="print the IR after each step to stderr")
    parser.add_argument("--list-targets", action="store_true", help="print the shipped targets, one per line, and exit")
    add_calibration_options(parser)
    parser.add_argument("--calibration-samples", type=int, default=None, metavar="N", help="use only the first N samples")
    parser.add_argument("--compress-bits", type=int, default=None, metavar="B",
                        help="store conv/gemm weights as B-bit codebook ids (seed 003, docs/compression.md)")
    parser.add_argument("--compress-step", type=float, default=None, metavar="L",
                        help="log-domain step for every layer (default: fitted per layer)")
    parser.add_argument("--compress-method", default="seed003", choices=("seed003", "frequency", "kmeans"),
                        help="how the codebook points are chosen (default seed003)")
    parser.add_argument("--compress-min-elements", type=int, default=None, metavar="N",
                        help="leave layers with fewer than N weights uncompressed (default 1000)")
    parser.add_argument("--compress-exclude", default="", metavar="NAMES",
                        help="comma-separated layer (ONNX node) names to leave uncompressed")
    parser.add_argument("--no-host-fallback", action="store_true",
                        help="fail on an op the target cannot run instead of placing it on the host")
    parser.add_argument("--quiet", "-q", action="store_true", help="do not print the placement summary (printed when an op runs on the host)")
    parser.add_argument("--report", metavar="DIR",
                        help="write the per-layer error report (as xnpu-quantize --report), with where each layer runs")
    parser.add_argument("--report-samples", type=int, metavar="N", help="compute the report on the first N calibration samples (default: the first eighth)")
    add_input_shape_option(parser)
    return parser


def _load_calibration(path: str, limit: int | None):
    from xnpu.core.array_io import load_arrays

    data = load_arrays(path)
    if limit is not None:
        if limit < 1:
            raise XnpuError(f"--calibration-samples must be at least 1, got {limit}")
        data = data[:limit] if not isinstance(data, dict) else {k: v[:limit] for k, v in data.items()}
    return data


def compile_main(args: argparse.Namespace) -> None:
    # the compiler is imported once the command line is known to be whole: a wrong argument
    # or file is one error line without its ~0.7 s of imports
    if args.model is None:
        raise XnpuError("no model given (xnpu-compile model.onnx --calibration calib.npy -o model.xnb)")
    inputs = (args.model, args.calibration, args.target)
    check_output(args.output, inputs)
    shapes = input_shapes(args)
    if args.emit == "bin" and (args.output is None or args.output == "-") and sys.stdout.isatty():
        raise XnpuError("refusing to write a binary to a terminal; give -o model.xnb")
    calibration = None
    if args.emit != "nn":
        if args.calibration is None:
            raise XnpuError(f"--emit={args.emit} needs --calibration samples")
        calibration = _load_calibration(args.calibration, args.calibration_samples)

    from xnpu.driver.pipeline import compile as compile_model
    from xnpu.driver.placement import placement_of
    from xnpu.ir.io import print_ir

    report_modules = {}

    def after_pass(name, module):
        if args.report is not None and name in ("import-onnx", "split-channel-groups", "fold-quantize-pairs"):
            # the float and the int8 model the report compares: the float one as split, if it was
            report_modules["float" if name != "fold-quantize-pairs" else name] = module.clone()
        if args.print_ir_after_all:
            sys.stderr.write(f"// -----// IR Dump After {name} //----- //\n")
            sys.stderr.write(print_ir(module))
            sys.stderr.flush()

    result = compile_model(
        args.model, calibration, target=args.target, progress=False, stop_at=args.emit, after_pass=after_pass,
        compress_bits=args.compress_bits, compress_step=args.compress_step, compress_method=args.compress_method,
        compress_min_elements=args.compress_min_elements, compress_exclude=args.compress_exclude,
        input_shapes=shapes, host_fallback=not args.no_host_fallback, **calibration_options(args),
    )
    placement = None
    if args.emit in ("npu", "isa", "bin"):

        placement = placement_of(result)
        if placement.host and not args.quiet:  # all on the accelerator is the quiet normal case
            sys.stderr.write(placement.summary() + "\n")
    if args.report is not None:  # before the output: a failed report leaves no output behind

        if "fold-quantize-pairs" not in report_modules:
            raise XnpuError("--report needs the int8 model: compile to --emit=fixed or below")
        from xnpu.backend.simulator import planned_stats  # the report's alone: a compile runs no program
        from xnpu.tools.xnpu_quantize import write_layer_report

        run = planned_stats(result) if args.emit == "bin" else None
        write_layer_report(args, report_modules["float"], report_modules["fold-quantize-pairs"], calibration,
                           placement, run)
    # TOSA goes out in MLIR's generic form, the one every upstream parser reads (docs/tosa.md)
    payload = result.to_bytes() if args.emit == "bin" else print_ir(result, generic=args.emit == "tosa")
    write_output(args.output, payload, inputs)


def main(argv: Sequence[str] | None = None) -> int:
    args = build_parser().parse_args(argv)

    def action():
        if args.list_targets:
            from xnpu.target.description import list_targets

            sys.stdout.write("".join(f"{name}\n" for name in list_targets()))
            return
        compile_main(args)

    return run_reporting_errors(PROG, action)


if __name__ == "__main__":
    sys.exit(main())
