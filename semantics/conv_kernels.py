"""R13's float32 convolution sums by onnxruntime's convolution kernels (MLAS).

A float32 sum of integer products is exact whatever the order of its additions while every
partial sum stays within 2^24 (R13, docs/fixed-point.md); `convolution.conv_sums_nhwc` proves
that from the operands before it asks for float32 sums, so any kernel that forms each output
as a sum of the exact products computes the same integers. onnxruntime's Conv (one thread,
its NCHWc direct kernels) does so about twice as fast as gathering windows for numpy's GEMMs
on a large map (the time of an ONNX model's float inference is what the simulator is compared
with). Used for the weights kept for many calls (`ExactWeights(kept=True)`: the simulator's
prepared weights; the interpreters keep numpy's GEMMs) on convolutions with a kernel larger
than 1x1 (numpy's one GEMM on the map is faster for those) of at least MIN_PRODUCTS products,
where a session's fixed cost (~5-20 ms once, ~20 us a call) is small, on maps of at least
MIN_PIXELS pixels (on a smaller map gathering the windows costs little beside the GEMM).

The session's model is one Conv node with its weight as an initializer (its kernels prepack
it) between two Transposes, NHWC -> NCHW and back: onnxruntime's NCHWc transformer turns them
into its own reorders' channels-last forms (ReorderInput and ReorderOutput with channels_last),
so a channels-last map goes into its blocked layout and back in one copy each way, where an NCHW
model needed numpy's transposing copy on either side as well (bench/results/performance.md,
"Simulator, round 8"). Written here as ONNX protobuf bytes: importing the onnx package costs
~0.3 s of CPU that a process running a binary does not otherwise pay.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from xnpu.semantics import float_ops

# N x OH x OW x O x KH x KW x C: a few samples of a large layer. One sample of the bench
# models' largest layers (~115M products) stays on numpy's GEMMs, so a run of one image pays
# neither onnxruntime's import (~0.25 s of CPU) nor its sessions (~5-20 ms each)
MIN_PRODUCTS = 1 << 27


# H x W of one sample's input map: on a smaller map numpy's GEMM on the gathered windows is as
# fast (9 images of 7x7x512 -> 512, 3x3: 12.9 ms either way) and a session costs its memory
# (resnet18_like's three 512 x 4608 weights: ~110 MB more peak RSS a process)
MIN_PIXELS = 100


def takes(taps: int, products: int, pixels: int) -> bool:
    """Whether a dense convolution with `taps` (KH x KW) kernel taps forming `products` products
    on maps of `pixels` pixels (H x W of a sample's input) runs on these kernels: larger than
    1x1, at least MIN_PRODUCTS and MIN_PIXELS (the module doc and the constants say why)."""
    return taps > 1 and products >= MIN_PRODUCTS and pixels >= MIN_PIXELS


_FLOAT = 1  # TensorProto.FLOAT
_INTS = 7  # AttributeProto.INTS
_OPSET = 17
_IR_VERSION = 8


def conv_sums(x: np.ndarray, weight_oihw: np.ndarray, sessions: dict, strides: Sequence[int], pads: Sequence[int],
              dilations: Sequence[int]) -> np.ndarray:
    """The float32 sums of an N x H x W x C integer map (any integer dtype or strided view)
    convolved with the integer O x C x KH x KW weight, zero padded by ONNX-ordered pads
    [top, left, bottom, right]: N x OH x OW x O, contiguous (the requantization loop reads it
    in order). `sessions` keeps this weight's sessions, one per stride and dilation (the padding
    is done here, in the copy that converts the map to float32, channels last as it is: the
    tiles of one layer differ in their padding)."""
    key = (tuple(strides), tuple(dilations))
    session = sessions.get(key)
    if session is None:
        session = sessions[key] = _session(weight_oihw, *key)
    return session.run(None, {"x": float_ops.pad_nhwc(x, pads, np.float32)})[0]


def _session(weight_oihw: np.ndarray, strides, dilations):
    import onnxruntime

    options = onnxruntime.SessionOptions()
    options.intra_op_num_threads = 1  # one thread: the simulator's samples already run together
    options.inter_op_num_threads = 1
    options.log_severity_level = 4
    # no arena per session: each kept the largest buffers it had ever used (resnet18_like's
    # ~20 sessions held 400 MB more at 9 images)
    options.enable_cpu_mem_arena = False
    model = conv_model(np.ascontiguousarray(weight_oihw, dtype=np.float32), strides, (0, 0, 0, 0), dilations)
    return onnxruntime.InferenceSession(model, options, providers=["CPUExecutionProvider"])


# ----------------------------------------------------------------------------------------
# The ONNX model of one Conv, as protobuf bytes (onnx.proto's field numbers)
# ----------------------------------------------------------------------------------------


def conv_model(weight: np.ndarray, strides, pads, dilations) -> bytes:
    """ModelProto bytes: y = Transpose(Conv(Transpose(x), w)) with `weight` (O x C x KH x KW
    float32) the initializer w, x of shape [N, H, W, C] and y of [N, OH, OW, O] (channels last;
    N, H, W symbolic)."""
    c = weight.shape[1]
    attributes = [_attribute("strides", strides), _attribute("pads", pads), _attribute("dilations", dilations)]
    to_nchw = _node("Transpose", [b"x"], b"x_nchw", [_attribute("perm", (0, 3, 1, 2))])
    conv = _node("Conv", [b"x_nchw", b"w"], b"y_nchw", attributes)
    to_nhwc = _node("Transpose", [b"y_nchw"], b"y", [_attribute("perm", (0, 2, 3, 1))])
    initializer = b"".join(_int(1, d) for d in weight.shape) + _int(2, _FLOAT) + _bytes(8, b"w") + _bytes(
        9, weight.astype("<f4").tobytes())
    x_type = _tensor_type(("N", "H", "W", c))
    y_type = _tensor_type(("N", "OH", "OW", weight.shape[0]))
    graph = (b"".join(_bytes(1, node) for node in (to_nchw, conv, to_nhwc)) + _bytes(2, b"conv")
             + _bytes(5, initializer)
             + _bytes(11, _bytes(1, b"x") + _bytes(2, x_type)) + _bytes(12, _bytes(1, b"y") + _bytes(2, y_type)))
    return _int(1, _IR_VERSION) + _bytes(7, graph) + _bytes(8, _int(2, _OPSET))


def _node(op_type: str, inputs, output: bytes, attributes) -> bytes:
    """NodeProto bytes: its inputs, its one output, its op type and attributes."""
    return (b"".join(_bytes(1, name) for name in inputs) + _bytes(2, output) + _bytes(4, op_type.encode())
            + b"".join(_bytes(5, a) for a in attributes))


def _tensor_type(dims) -> bytes:
    """TypeProto.tensor_type: float32, its dims a dim_value (field 1) or a dim_param (field 2)."""
    shape = b"".join(_bytes(1, _bytes(2, d.encode()) if isinstance(d, str) else _int(1, d)) for d in dims)
    return _bytes(1, _int(1, _FLOAT) + _bytes(2, shape))


def _attribute(name: str, values) -> bytes:
    return _bytes(1, name.encode()) + b"".join(_int(8, int(v)) for v in values) + _int(20, _INTS)


def _varint(value: int) -> bytes:
    value &= (1 << 64) - 1
    out = bytearray()
    while True:
        low = value & 0x7F
        value >>= 7
        if value:
            out.append(low | 0x80)
        else:
            out.append(low)
            return bytes(out)


def _int(field: int, value: int) -> bytes:
    return _varint(field << 3) + _varint(value)


def _bytes(field: int, data: bytes) -> bytes:
    return _varint(field << 3 | 2) + _varint(len(data)) + data
