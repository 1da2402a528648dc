"""`make demo`: import the bundled ONNX model, run it beside onnxruntime, quantize it to int8.

Each level is shown as IR and run on the same inputs: float (`nn`) beside onnxruntime, then
the integer (`fixed`) level beside float.
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


if __name__ == "__main__":
    main()
