"""xnpu-quantize: calibrate a float model and lower it to the integer `fixed` level.

    xnpu-quantize model.onnx --calibration calib.npy -o model.fixed.mlir
    xnpu-quantize model.mlir --calibration calib.npz --method entropy --per-tensor -o m.fixed.mlir
    xnpu-quantize model.onnx --calibration calib.npy -o m.fixed.mlir --report report/
    xnpu-quantize model.onnx --input-shape input=1,3,320,320 --calibration calib.npy -o m.fixed.mlir

The model is an ONNX file or nn-level IR (.mlir); the calibration data an .npy holding N
samples along the batch axis (one-input model) or an .npz of arrays by input name.
`--report DIR` compares every layer of the int8 model with the float one on the calibration
data (its first eighth, or its first `--report-samples N`) and writes report.{txt,csv,json,html,dot,svg} there
(driver/quant_report.py). Errors are one line `xnpu-quantize: error: ...` with exit
status 1; the output is written atomically, so a failed run leaves no output file.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence
from pathlib import Path

import xnpu
from xnpu.core.errors import XnpuError
from xnpu.core.files import write_atomically
from xnpu.ir.io import load_ir, print_ir
from xnpu.tools.cli import ArgumentParser, check_output, run_reporting_errors
from xnpu.tools.calibration_options import add_calibration_options, calibration_options
from xnpu.tools.shape_option import add_input_shape_option, input_shapes

PROG = "xnpu-quantize"


def load_model(path: Path, shapes: dict[str, tuple[int, ...]] | None = None):
    if path.suffix == ".onnx":
        from xnpu.frontend.onnx_import import import_onnx

        return import_onnx(path, input_shapes=shapes)
    if path.suffix == ".mlir":

        if shapes:
            raise XnpuError("--input-shape applies to ONNX models only (IR has static shapes)")

        return load_ir(path)
    raise XnpuError(f"{path}: unknown model file type '{path.suffix}' (known: .onnx, .mlir)")


def load_calibration(path: Path, module):
    from xnpu.transforms.calibrate import bind_archive, load_calibration_data

    data = load_calibration_data(path)
    return bind_archive(module, data) if isinstance(data, dict) else data


def build_parser() -> argparse.ArgumentParser:
    parser = ArgumentParser(prog=PROG, description="Calibrate a float model and lower it to int8 (fixed).")
    parser.add_argument("model", help="the float model: .onnx or nn-level .mlir")
    parser.add_argument("--calibration", required=True, metavar="FILE",
                        help="calibration samples: .npy (one-input model) or .npz keyed by input name")
    add_calibration_options(parser)
    parser.add_argument("-o", "--output", required=True, help="the fixed-level IR to write")
    parser.add_argument("--report", metavar="DIR", help="write a per-layer error report into DIR")
    parser.add_argument("--report-samples", type=int, metavar="N",
                        help="compute the report on the first N calibration samples (default: the first eighth)")
    add_input_shape_option(parser)
    return parser


def quantize_file(args: argparse.Namespace) -> list[Path]:
    if args.report_samples is not None and args.report is None:
        raise XnpuError("--report-samples needs --report DIR")
    if args.report_samples is not None and args.report_samples < 1:
        raise XnpuError(f"--report-samples must be >= 1, got {args.report_samples}")
    inputs = (args.model, args.calibration)
    check_output(args.output, inputs)
    module = load_model(Path(args.model), input_shapes(args))
    if not any(op.dialect_name() == "nn" for op in module.walk()):
        raise XnpuError(f"{args.model}: the model has no float (nn) ops to quantize")
    calibration = load_calibration(Path(args.calibration), module)
    float_module = module.clone() if args.report is not None else None

    def after_pass(name, module):
        nonlocal float_module
        if float_module is not None and name == "split-channel-groups":
            float_module = module.clone()  # the report compares the graph the int8 one was made from
    fixed_module = xnpu.quantize(module, calibration, **calibration_options(args), after_pass=after_pass)
    written = []
    if float_module is not None:  # before the output: a failed report leaves no output behind
        written = write_layer_report(args, float_module, fixed_module, calibration)
    write_atomically(args.output, print_ir(fixed_module), inputs)
    return written


def write_layer_report(args: argparse.Namespace, float_module, fixed_module, calibration, placement=None,
                       run=None) -> list[Path]:
    """The per-layer report; with a `placement` (xnpu-compile for a target) each layer says where
    it runs, and with `run` (the RunStats of one sample of the compiled binary) its roofline."""
    # imported here: only a compile or quantization asked for a report pays for them
    from xnpu.driver.pipeline import float_cleanup
    from xnpu.driver.quant_report import REPORT_SHARE, attach_roofline, layer_report, match_layers, write_report

    stats = layer_report(float_module, fixed_module, calibration, samples=args.report_samples, share=REPORT_SHARE)
    if placement is not None:
        for layer in stats:
            layer.runs_on = placement.runs_on(layer.name.split("+"))
    _, unmatched = match_layers(float_cleanup(float_module), fixed_module)
    notes = [f"layers without an integer output in the fixed model: {', '.join(unmatched)}"] if unmatched else []
    if run is not None:
        from xnpu.backend.simulator import roofline_summary

        elsewhere = attach_roofline(stats, run.by_layer, run.compute, run.dma, run.ddr_bytes, run.compulsory_bytes)
        notes += [f"one sample of the binary: {line}" for line in roofline_summary(run).splitlines()]
        elsewhere = [name for name in elsewhere if not name.startswith("(")]  # the final SYNC, idle cycles
        if elsewhere:
            notes.append(f"program cycles outside the report's layers: {', '.join(elsewhere)}")
    arrays = list(calibration.values()) if isinstance(calibration, dict) else [calibration]
    total = arrays[0].shape[0] if arrays and arrays[0].ndim else 1
    if stats and stats[0].samples < total and args.report_samples is None:
        notes.append(f"computed on the first {stats[0].samples} of the {total} calibration samples "
                     "(--report-samples N for more)")
    title = (f"{Path(args.model).name}: {args.method}, {'per-tensor' if args.per_tensor else 'per-channel'} "
             f"weights, {args.variant}")
    return write_report(stats, args.report, title, notes)


def main(argv: Sequence[str] | None = None) -> int:
    args = build_parser().parse_args(argv)

    def action():
        if quantize_file(args):
            print((Path(args.report) / "report.txt").read_text(), end="")

    return run_reporting_errors(PROG, action)


if __name__ == "__main__":
    sys.exit(main())
