"""The `--input-shape NAME=d0,d1,...` option of the tools that import ONNX models."""

from __future__ import annotations

import argparse

from xnpu.frontend.input_shapes import INPUT_SHAPE_FLAG, parse_input_shapes


def add_input_shape_option(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        INPUT_SHAPE_FLAG, action="append", default=[], metavar="NAME=D0,D1,...", dest="input_shape",
        help="the static shape of an ONNX graph input with dynamic dimensions (repeatable); "
             "a dynamic batch dimension is 1 by default",
    )


def input_shapes(args: argparse.Namespace) -> dict[str, tuple[int, ...]]:
    """The --input-shape options as {input name: shape}; a malformed one is an XnpuError."""
    return parse_input_shapes(args.input_shape)
