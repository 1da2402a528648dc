"""The `--depthwise-weights auto|on|off` option of xnpu-compile and xnpu-quantize: calibrate's
`depthwise_weights` (None: auto, where it measures less error after the depthwise convs)."""

from __future__ import annotations

import argparse

DEPTHWISE_WEIGHTS = {"auto": None, "on": True, "off": False}


def add_depthwise_weights_option(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--depthwise-weights", choices=tuple(DEPTHWISE_WEIGHTS), default="auto",
                        help="mse: weigh a tensor only depthwise convs read by their kernels' norms: on, off, or auto "
                             "(the default: where it measures less error after them; docs/quantization.md)")


def depthwise_weights(args: argparse.Namespace) -> bool | None:
    return DEPTHWISE_WEIGHTS[args.depthwise_weights]
