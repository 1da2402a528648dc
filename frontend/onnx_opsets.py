"""ONNX opsets: the front end imports opset 11 and newer, and upgrades older models first.

A model of an opset before MIN_OPSET is upgraded to MIN_OPSET by onnx's own version converter
(with a note), so the nodes the nn dialect models at MIN_OPSET become nn ops. Where the
converter cannot do it, or changes the model's inputs or outputs (Scan before opset 9 had a
batch axis), the model is kept as it is (a note says why): the converters read the attributes
of its opset, and what they do not take, onnxruntime runs at that opset.
"""

from __future__ import annotations

import warnings

import onnx

from xnpu.core.errors import XnpuError, XnpuNote, first_line

MIN_OPSET = 11
MIN_UPGRADED_OPSET = 1  # older opsets are upgraded to MIN_OPSET first (onnx's version converter)
MAX_OPSET = onnx.defs.onnx_opset_version()


def upgraded(model: onnx.ModelProto) -> tuple[onnx.ModelProto, int]:
    """`model` at an opset the importer reads, and that opset (see the module doc)."""
    version = _default_opset(model)
    if version >= MIN_OPSET:
        return model, version
    try:
        from onnx import version_converter

        converted = version_converter.convert_version(model, MIN_OPSET)
        if not _same_interface(model, converted):
            raise ValueError("it changes the model's inputs or outputs")
    except Exception as error:  # the converter raises RuntimeError, ValueError, ... for what it cannot adapt
        warnings.warn(f"ONNX opset {version} is imported as it is: onnx's version converter cannot upgrade it to "
                      f"opset {MIN_OPSET} ({first_line(error)})", XnpuNote, stacklevel=3)
        return model, version
    warnings.warn(f"ONNX opset {version} is upgraded to opset {MIN_OPSET} with onnx's version converter",
                  XnpuNote, stacklevel=3)
    return converted, MIN_OPSET


def _default_opset(model: onnx.ModelProto) -> int:
    versions = [o.version for o in model.opset_import if o.domain in ("", "ai.onnx")]
    if not versions:  # only nodes of other domains (ai.onnx.ml, ...): nothing to upgrade
        return MAX_OPSET
    version = versions[0]
    if not MIN_UPGRADED_OPSET <= version <= MAX_OPSET:
        raise XnpuError(
            f"unsupported ONNX opset {version}: xnpu imports opsets {MIN_OPSET} to {MAX_OPSET} "
            f"(older ones upgraded with onnx's version converter)"
        )
    return version


def _same_interface(model: onnx.ModelProto, converted: onnx.ModelProto) -> bool:
    """Whether `converted` has `model`'s inputs and outputs: the same names and types, and the
    same dimensions wherever `model` gives one (the converter may infer shapes it left out)."""
    def values(proto):
        initializers = {tensor.name for tensor in proto.graph.initializer}
        return [value for value in (*proto.graph.input, *proto.graph.output) if value.name not in initializers]

    before, after = values(model), values(converted)
    if [v.name for v in before] != [v.name for v in after]:
        return False
    for old, new in zip(before, after):
        if old.type.WhichOneof("value") != "tensor_type":
            if old.type != new.type:
                return False
            continue
        old_tensor, new_tensor = old.type.tensor_type, new.type.tensor_type
        if old_tensor.elem_type != new_tensor.elem_type:
            return False
        if old_tensor.HasField("shape"):
            if not new_tensor.HasField("shape") or len(old_tensor.shape.dim) != len(new_tensor.shape.dim):
                return False
            if any(a.HasField("dim_value") and b.HasField("dim_value") and a.dim_value != b.dim_value
                   for a, b in zip(old_tensor.shape.dim, new_tensor.shape.dim)):
                return False
    return True
