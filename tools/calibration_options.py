"""The calibration and quantization options xnpu-compile and xnpu-quantize share, and the
keyword arguments they give `xnpu.compile` / `xnpu.quantize` (transforms/calibrate.py and
docs/quantization.md say what each does)."""

from __future__ import annotations

import argparse

# transforms/calibrate.py's METHODS (its default first) and RUNTIMES, and lower-nn-to-fixed's
# add variants, written out so that parsing a command line loads no compiler module
METHODS = ("mse", "minmax", "percentile", "entropy")
RUNTIMES = ("onnxruntime", "interpreter")
VARIANTS = ("two_stage", "direct")
DEPTHWISE_WEIGHTS = {"auto": None, "on": True, "off": False}


def add_calibration_options(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--method", choices=METHODS, default=METHODS[0], help=f"calibration method (default: {METHODS[0]})")
    parser.add_argument("--per-tensor", action="store_true", help="one weight scale per tensor (default: per channel)")
    parser.add_argument("--depthwise-weights", choices=tuple(DEPTHWISE_WEIGHTS), default="auto",
                        help="mse: weigh a tensor only depthwise convs read by their kernels' norms: on, off, or auto "
                             "(the default: where it measures less error after them; docs/quantization.md)")
    parser.add_argument("--channel-groups", choices=("auto", "off"), default="auto",
                        help="split a depthwise block into two channel groups with scales of their own where its input "
                             "channels' ranges differ widely (auto, the default; docs/quantization.md) or never (off)")
    parser.add_argument("--bias-correction", action="store_true",
                        help="take the mean error of each conv's, gemm's and matmul's int8 weights on the calibration "
                             "samples out of its bias (docs/quantization.md, 'Bias correction')")
    parser.add_argument("--variant", choices=VARIANTS, default=VARIANTS[0],
                        help="requantization of adds: two_stage (int24 -> int16 -> int8) or direct (R11)")
    parser.add_argument("--calibration-batch", type=int, default=None, metavar="N",
                        help="samples run through the float graph at once during calibration "
                             "(default: as many as fit 256 MiB, at most 64)")
    parser.add_argument("--calibration-runtime", default=RUNTIMES[0], choices=RUNTIMES,
                        help="what runs the float graph during calibration: onnxruntime (an ONNX model, where its "
                        "tensors hold every value measured; else the interpreter) or the interpreter (default: onnxruntime)")


def calibration_options(args: argparse.Namespace) -> dict:
    """The options add_calibration_options parsed, as `xnpu.quantize`'s keyword arguments."""
    return dict(method=args.method, per_channel=not args.per_tensor,
                depthwise_weights=DEPTHWISE_WEIGHTS[args.depthwise_weights],
                channel_groups=args.channel_groups == "auto", bias_correction=args.bias_correction,
                variant=args.variant, calibration_batch=args.calibration_batch, runtime=args.calibration_runtime)
