"""What an opaque host op computes: onnxruntime runs the ONNX model it carries.

A node the front end does not model (control flow with its subgraphs, recurrent layers,
TopK, any op or domain onnxruntime runs) is imported as `nn.onnx`, holding a small ONNX
model: the node, the constants it reads, and one graph input per value it reads from the
rest of the graph (a subgraph's outer-scope reads included), one graph output per result.
What it computes is what onnxruntime's CPU runtime computes for that model, at every
level: the float interpreter (so calibration sees it), the fixed and npu levels' host ops
and the binary's host segments all call `run_model` here, the one place that runs one.

Sessions are kept per model (its bytes) for the life of the process, the most recent
`SESSIONS_KEPT`, and run on one thread: the same model on the same inputs gives the same
bits at every level and in every run (a reduction split over threads would not promise it).
"""

from __future__ import annotations

from collections import OrderedDict
from collections.abc import Sequence

import numpy as np

from xnpu.core.errors import XnpuError, first_line

SESSIONS_KEPT = 256


class _Session:
    __slots__ = ("session", "input_names", "input_dtypes", "output_names")

    def __init__(self, model: bytes):
        import onnx
        import onnxruntime

        options = onnxruntime.SessionOptions()
        options.intra_op_num_threads = 1
        options.inter_op_num_threads = 1
        options.log_severity_level = 4  # its own log lines: a failure is one XnpuError line instead
        self.session = onnxruntime.InferenceSession(model, options, providers=["CPUExecutionProvider"])
        graph = onnx.load_from_string(model).graph
        initializers = {tensor.name for tensor in graph.initializer}
        inputs = [value for value in graph.input if value.name not in initializers]
        self.input_names = [value.name for value in inputs]
        self.input_dtypes = [_numpy_type(value.type) for value in inputs]
        self.output_names = [value.name for value in graph.output]


def _numpy_type(type_proto):
    """The numpy dtype of a tensor input (None: a value numpy does not hold, passed as it is)."""
    import onnx

    if type_proto.WhichOneof("value") != "tensor_type":
        return None
    try:
        dtype = onnx.helper.tensor_dtype_to_np_dtype(type_proto.tensor_type.elem_type)
    except (KeyError, ValueError, TypeError):
        return None
    return dtype if dtype.kind in "biufc" else None


_SESSIONS: OrderedDict[bytes, _Session] = OrderedDict()


def session_for(model: bytes) -> _Session:
    """The (kept) session of a serialized ONNX model; XnpuError when onnxruntime cannot load it."""
    session = _SESSIONS.get(model)
    if session is not None:
        _SESSIONS.move_to_end(model)
        return session
    try:
        session = _Session(model)
    except Exception as error:  # onnxruntime raises its own pybind types (Fail, InvalidGraph, ...)
        raise XnpuError(f"onnxruntime cannot load it: {first_line(error)}") from None
    _SESSIONS[model] = session
    while len(_SESSIONS) > SESSIONS_KEPT:
        _SESSIONS.popitem(last=False)
    return session


def check_model(model: bytes) -> None:
    """XnpuError (one line) unless onnxruntime loads the model."""
    session_for(model)


def run_model(model: bytes, inputs: Sequence) -> list:
    """The model's outputs, in order, on `inputs` (in the order of its graph inputs): numpy
    arrays for tensors, onnxruntime's own values for the rest (a list for a sequence)."""
    session = session_for(model)
    if len(inputs) != len(session.input_names):
        raise XnpuError(f"the ONNX model takes {len(session.input_names)} inputs, got {len(inputs)}")
    feeds = {name: value if dtype is None else np.asarray(value, dtype=dtype, order="C")  # (not ascontiguousarray: it makes a scalar 1-D)
             for name, dtype, value in zip(session.input_names, session.input_dtypes, inputs)}
    try:
        return session.session.run(session.output_names, feeds)
    except Exception as error:  # a shape or value onnxruntime refuses at run time
        raise XnpuError(f"onnxruntime failed: {first_line(error)}") from None
