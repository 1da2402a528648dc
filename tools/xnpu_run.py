"""xnpu-run: run a model on numpy inputs and summarize (or save) its outputs.

    xnpu-run model.mlir --input x.npy                   # a model with one input
    xnpu-run model.mlir --input a=a.npy --input b=b.npy # inputs by name
    xnpu-run model.mlir --input inputs.npz -o out.npz   # .npz keyed by input name
    xnpu-run model.xnb --input x.npy --profile          # a compiled binary on the simulator
    xnpu-run model.isa.mlir --input x.npy --profile     # isa IR: assembled, then as the binary

An input with N samples along the leading dimension of a batch-1 model runs sample by
sample (xnpu.run). Every failure is one line `xnpu-run: error: ...` and exit status 1;
`-o` is written atomically, so a failed run leaves no output file.
"""

from __future__ import annotations

import io
import stat
import sys
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path

import numpy as np

from xnpu.backend.simulator import BinaryModel
from xnpu.core.array_io import load_arrays
from xnpu.core.errors import XnpuError, printable
from xnpu.core.files import write_atomically
from xnpu.tools.cli import ArgumentParser, check_output, run_reporting_errors

PROG = "xnpu-run"

Inputs = np.ndarray | Mapping[str, np.ndarray]
ModelRunner = Callable[[Inputs], dict[str, np.ndarray]]


def load_ir_model(path: Path) -> ModelRunner:
    # imported here: a binary's run needs no IR (xDSL is ~0.5 s of such a process)
    from xnpu.tools.ir_model import load_ir_model

    return load_ir_model(path)


def load_binary_model(path: Path) -> ModelRunner:
    return BinaryModel.from_file(path)


# How each kind of model file is run, by suffix; compiled binaries add their loader here.
MODEL_LOADERS: dict[str, Callable[[Path], ModelRunner]] = {
    ".mlir": load_ir_model,
    ".xnb": load_binary_model,
}


def load_model(path: Path) -> ModelRunner:
    loader = MODEL_LOADERS.get(path.suffix)
    if loader is None:
        known = ", ".join(MODEL_LOADERS)
        raise XnpuError(f"{path}: unknown model file type '{path.suffix}' (known: {known})")
    return loader(path)


def split_input_spec(spec: str) -> tuple[str | None, str]:
    """An `--input` value as (NAME, FILE), or (None, FILE) when it names no input."""
    name, separator, file = spec.partition("=")
    if separator and name and not Path(spec).exists():
        return name, file
    return None, spec


def collect_inputs(specs: Sequence[str]) -> Inputs:
    """`--input` values: FILE (.npy for a one-input model, or .npz by name) or NAME=FILE."""
    named: dict[str, np.ndarray] = {}
    unnamed: list[np.ndarray] = []
    for spec in specs:
        name, file = split_input_spec(spec)
        if name is not None:
            if name in named:
                raise XnpuError(f"input '{name}' is given twice")
            array = load_arrays(file)
            if isinstance(array, dict):
                raise XnpuError(f"{file}: NAME=FILE takes a .npy file, not a .npz")
            named[name] = array
            continue
        arrays = load_arrays(file)
        if isinstance(arrays, dict):
            twice = sorted(set(arrays) & set(named))
            if twice:
                raise XnpuError(f"input '{twice[0]}' is given twice")
            named.update(arrays)
        else:
            unnamed.append(arrays)
    if unnamed:
        if len(unnamed) > 1 or named:
            raise XnpuError("with several inputs, name each one: --input NAME=FILE.npy (or one .npz)")
        return unnamed[0]
    return named


def summarize(name: str, array: np.ndarray, shown: int = 8) -> str:
    shape = "x".join(map(str, array.shape)) or "scalar"
    line = f"{printable(name)}: {shape} {array.dtype}"
    if array.size:
        values = array.astype(np.float64)
        line += f"  min {values.min():.6g}  max {values.max():.6g}  mean {values.mean():.6g}"
        flat = values.reshape(-1)
        head = ", ".join(f"{value:.6g}" for value in flat[:shown])
        line += f"\n  values: [{head}{', ...' if flat.size > shown else ''}]"
    return line


def save_outputs(path: Path, outputs: Mapping[str, np.ndarray], inputs: Sequence[str] = ()) -> None:
    buffer = io.BytesIO()
    np.savez(buffer, **outputs)
    write_atomically(path, buffer.getvalue(), inputs)


def is_special_file(path: Path) -> bool:
    """An existing device or FIFO (/dev/null, a pipe): written through, whatever its name."""
    try:
        mode = path.stat().st_mode
    except OSError:
        return False
    return not (stat.S_ISREG(mode) or stat.S_ISDIR(mode))


def main(argv: Sequence[str] | None = None) -> int:
    parser = ArgumentParser(prog=PROG, description="Run a model on numpy inputs.")
    parser.add_argument("model", help="the model: " + ", ".join(MODEL_LOADERS) + " file")
    parser.add_argument(
        "-i",
        "--input",
        action="append",
        default=[],
        metavar="[NAME=]FILE",
        help="an input: FILE.npy (one-input model), NAME=FILE.npy, or FILE.npz keyed by input name; repeatable",
    )
    parser.add_argument("-o", "--output", help="write the outputs to this .npz, keyed by output name")
    parser.add_argument("--profile", action="store_true", help=".xnb or isa IR: cycles per layer and per instruction class")
    parser.add_argument("--trace", action="store_true", help=".xnb or isa IR: one line per executed instruction")
    args = parser.parse_args(argv)

    def action():
        output = None if args.output is None else Path(args.output)
        if output is not None and output.suffix != ".npz" and not is_special_file(output):
            raise XnpuError(f"{output}: outputs are written as .npz; name the file *.npz")
        inputs = [args.model, *(split_input_spec(spec)[1] for spec in args.input)]
        check_output(args.output, inputs)
        model = load_model(Path(args.model))
        if (args.profile or args.trace) and not hasattr(model, "profile"):
            raise XnpuError("--profile and --trace need a compiled program, .xnb or isa IR (they report simulator cycles)")
        if args.trace:
            model.trace = lambda record: print(record)
        outputs = model(collect_inputs(args.input))
        if output is not None:
            save_outputs(output, outputs, inputs)
        for name, array in outputs.items():
            print(summarize(name, array))
        if args.profile:
            print(model.profile())

    return run_reporting_errors(PROG, action)


if __name__ == "__main__":
    sys.exit(main())
