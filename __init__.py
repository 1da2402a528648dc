"""xnpu: an MLIR-style multi-level compiler for int8 NPUs, built on xDSL.

The Python API the command line tools are thin shells over:

    import xnpu
    module = xnpu.import_onnx("model.onnx")      # float graph (`nn` dialect)
    text = xnpu.print_ir(module)                 # textual IR
    module = xnpu.parse_ir(text)                 # and back
    outputs = xnpu.run(module, {"input": x})     # run any level on numpy inputs
    int8 = xnpu.quantize(module, calibration_x)  # calibrate and lower to `fixed`
    binary = xnpu.compile("model.onnx", calibration_x)  # ... down to an accelerator Binary
    print(xnpu.placement_of(binary).summary())   # which ops the accelerator runs, which the host
"""

from xnpu.core.errors import XnpuError

# Imported on first use: every tool imports the package (xnpu.core.errors, ...), and one that only
# parses and prints (xnpu-opt, many times per lit run) must not pay for the runner (xDSL's
# interpreters, numpy) or even the dialects before it needs them.
_LAZY = {"TensorSpec": "xnpu.interpreters.function", "run": "xnpu.driver.runner", "signature": "xnpu.interpreters.function",
         "load_ir": "xnpu.ir.io", "parse_ir": "xnpu.ir.io", "print_ir": "xnpu.ir.io"}


def __getattr__(name):
    if name in _LAZY:
        import importlib

        return getattr(importlib.import_module(_LAZY[name]), name)
    raise AttributeError(f"module 'xnpu' has no attribute '{name}'")


def quantize(model, calibration, input_shapes=None, **options):
    """Calibrate an nn module (or an ONNX model, imported first) on `calibration` samples and
    lower it to the integer `fixed` level; `input_shapes` as in `import_onnx`."""
    from xnpu.driver.pipeline import load_model, quantize as _quantize

    return _quantize(load_model(model, input_shapes), calibration, **options)


def compile(model, calibration, target="xnpu_default", **options):
    """ONNX model (or nn module) -> quantized, lowered, emitted Binary for `target`."""
    from xnpu.driver.pipeline import compile as _compile

    return _compile(model, calibration, target, **options)


def placement_of(result):
    """Where a compiled model runs (a Binary, or an npu / isa module): `xnpu.driver.placement.Placement`."""
    from xnpu.driver.placement import placement_of as _placement_of

    return _placement_of(result)


def import_onnx(path, **options):
    """Import an ONNX model file (or ModelProto) as a module in the `nn` dialect.

    `input_shapes={"input": (1, 3, 224, 224)}` fixes the shapes of inputs with dynamic
    dimensions (a dynamic batch dimension is 1 otherwise, with an XnpuNote warning).
    """
    from xnpu.frontend.onnx_import import import_onnx as _import

    return _import(path, **options)


__all__ = [
    "XnpuError",
    "compile",
    "TensorSpec",
    "import_onnx",
    "load_ir",
    "parse_ir",
    "placement_of",
    "print_ir",
    "quantize",
    "run",
    "signature",
]
