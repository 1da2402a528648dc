"""`make demo`: the bundled ONNX model through every level, each one run on the same inputs.

float (`nn`) beside onnxruntime; calibrated and lowered to int8 (`fixed`) beside float; then
compiled to an accelerator binary, run on the bit-exact simulator with its cycle estimate.
"""

import re
from pathlib import Path

import numpy as np

import xnpu

HERE = Path(__file__).resolve().parent
MODEL = HERE / "tiny_cnn.onnx"
LONG_DENSE = re.compile(r'dense<("0x[0-9A-F]{40,}"|\[[^>]{60,}\])>')


def show_ir(module) -> None:
    # weights print as long hex blobs or lists; the demo elides them to keep the graph readable
    print(LONG_DENSE.sub("dense<...>", xnpu.print_ir(module)))


def onnxruntime_outputs(x: np.ndarray) -> np.ndarray:
    import onnxruntime

    session = onnxruntime.InferenceSession(str(MODEL), providers=["CPUExecutionProvider"])
    return np.concatenate([session.run(None, {"input": sample[None]})[0] for sample in x])


def format_cycles(by_layer: dict[str, int]) -> str:
    total = sum(by_layer.values())
    return "\n".join(f"{layer:<20} {cycles:>8} cycles  {cycles / total:6.1%}"
                     for layer, cycles in sorted(by_layer.items(), key=lambda item: -item[1]))


def main() -> None:
    x = np.load(HERE / "tiny_input.npy")

    print(f"== {MODEL.name} imported into the nn dialect\n")
    module = xnpu.import_onnx(MODEL)
    show_ir(module)

    ours = xnpu.run(module, x)["logits"]
    reference = onnxruntime_outputs(x)
    print(f"\n== logits on {len(x)} samples: xnpu (float interpreter) vs onnxruntime\n")
    np.set_printoptions(precision=4, suppress=True, linewidth=150)
    for index in range(len(x)):
        print(f"sample {index}  xnpu         {ours[index]}")
        print(f"          onnxruntime  {reference[index]}")
    print(f"\nmax |xnpu - onnxruntime| = {np.abs(ours - reference).max():.3g}")

    calibration = np.load(HERE / "tiny_calib.npy")
    print(f"\n== calibrated on {len(calibration)} samples and lowered to the fixed dialect (int8)\n")
    xnpu.quantize(module, calibration)
    show_ir(module)
    int8 = xnpu.run(module, x)["logits"]
    print(f"\n== logits: int8 (fixed interpreter) vs float\n")
    for index in range(len(x)):
        print(f"sample {index}  int8   {int8[index]}")
        print(f"          float  {ours[index]}")
    cosine = (int8 * ours).sum(1) / np.linalg.norm(int8, axis=1) / np.linalg.norm(ours, axis=1)
    agree = (int8.argmax(1) == ours.argmax(1)).mean()
    print(f"\ntop-1 agreement {agree:.3f}, mean logits cosine {cosine.mean():.5f}")

    from xnpu.backend.simulator import simulate

    binary = xnpu.compile(MODEL, calibration, target="xnpu_default")
    print(f"\n== compiled for xnpu_default: {len(binary.instructions)} instructions, "
          f"{len(binary.to_bytes())} bytes; first instructions (xnpu-objdump):\n")
    from xnpu.backend.emit import disassemble

    print("\n".join(line for line in disassemble(binary, constants=False).splitlines()[:12]))
    run = simulate(binary, {"input": x})
    exact = np.array_equal(run.outputs["logits"], int8)
    print(f"\n== the binary on the simulator: outputs {'bit-identical to' if exact else 'DIFFERENT from'} "
          f"the fixed level; {run.stats.cycles // len(x)} cycles per sample\n")
    print(format_cycles({layer: cycles // len(x) for layer, cycles in run.stats.by_layer.items()}))


if __name__ == "__main__":
    main()
