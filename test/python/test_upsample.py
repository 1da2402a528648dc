"""Upsampling below the float level: Resize (nearest, linear), ConvTranspose and Tanh.

The fixed level's accuracy against the float level is tested in test_nn_to_fixed.py (R16-R18
tolerances); here: the npu level is bit-identical to the fixed level on a small random model
holding every upsampling form, for every target; whatever the accelerator cannot run exactly
is not selected with one clear reason; the phase decomposition costs fewer cycles than the
convolution of a zero-inserted input (target/cost.py); and the binary (through the passes
below npu and the simulator) is bit-identical to the fixed level, on segnet_like too.
"""

from __future__ import annotations

import functools
from pathlib import Path

import numpy as np
import onnx
import pytest
from onnx import TensorProto, helper, numpy_helper

import xnpu
from xnpu.core.errors import XnpuError
from xnpu.dialects import npu
from xnpu.ir.context import make_context
from xnpu.ir.io import parse_ir, print_ir
from xnpu.ir.locations import location_names
from xnpu.lowering.fixed_to_npu import lower_fixed_to_npu
from xnpu.lowering.legalize import LegalizePass
from xnpu.target import phases
from xnpu.target.cost import conv_cycles
from xnpu.target.description import load_target

TARGETS = ("xnpu_default", "xnpu_lite", str(Path(__file__).resolve().parent / "data" / "xnpu_test_16k.toml"))
BENCH = Path(__file__).resolve().parents[3] / "shared" / "bench" / "imagenet_like"
IMAGENET_MEAN = np.array([0.485, 0.456, 0.406], np.float32).reshape(1, 3, 1, 1)
IMAGENET_STD = np.array([0.229, 0.224, 0.225], np.float32).reshape(1, 3, 1, 1)


def upsample_model(size: int = 6, channels: int = 8, seed: int = 0) -> onnx.ModelProto:
    """Every upsampling form the accelerator runs, on one size x size map: nearest x2 by replication,
    nearest x4 with shifted phases (asymmetric, ceil), linear x2 (half_pixel) added to the
    replication, transposed convolutions with kernels 2 (no bias, then relu6), 3 (pads,
    output_padding, then tanh) and 4 (depthwise, bias, then relu)."""
    rng = np.random.default_rng(seed)

    def tensor(name, *shape, spread=0.3):
        return numpy_helper.from_array((rng.standard_normal(shape) * spread).astype(np.float32), name)

    def scales(name, factor):
        return numpy_helper.from_array(np.array([1, 1, factor, factor], np.float32), name)

    c = channels
    init = [tensor("w", c, 4, 3, 3), tensor("b", c), tensor("t3", c, 4, 3, 3), tensor("b3", 4),
            tensor("t4", c, 1, 4, 4), tensor("b4", c), tensor("t2", c, 6, 2, 2), scales("x2", 2), scales("x4", 4),
            numpy_helper.from_array(np.array(0.0, np.float32), "zero"), numpy_helper.from_array(np.array(0.5, np.float32), "six")]
    nodes = [
        helper.make_node("Conv", ["x", "w", "b"], ["c"], name="conv", kernel_shape=[3, 3], pads=[1, 1, 1, 1]),
        helper.make_node("Relu", ["c"], ["r"], name="relu"),
        helper.make_node("Resize", ["r", "", "x2"], ["near"], name="nearest", mode="nearest",
                         coordinate_transformation_mode="asymmetric", nearest_mode="floor"),
        helper.make_node("Resize", ["r", "", "x2"], ["lin"], name="linear", mode="linear",
                         coordinate_transformation_mode="half_pixel"),
        helper.make_node("Add", ["near", "lin"], ["sum"], name="add"),
        helper.make_node("Resize", ["r", "", "x4"], ["ceil"], name="nearest_ceil", mode="nearest",
                         coordinate_transformation_mode="asymmetric", nearest_mode="ceil"),
        helper.make_node("ConvTranspose", ["r", "t3", "b3"], ["d3"], name="deconv3", kernel_shape=[3, 3],
                         strides=[2, 2], pads=[1, 1, 1, 1], output_padding=[1, 1]),
        helper.make_node("Tanh", ["d3"], ["tanh"], name="tanh"),
        helper.make_node("ConvTranspose", ["r", "t4", "b4"], ["d4"], name="deconv4_dw", kernel_shape=[4, 4],
                         strides=[2, 2], pads=[1, 1, 1, 1], group=c),
        helper.make_node("Relu", ["d4"], ["relu4"], name="relu4"),
        helper.make_node("ConvTranspose", ["r", "t2"], ["d2"], name="deconv2", kernel_shape=[2, 2], strides=[2, 2]),
        helper.make_node("Clip", ["d2", "zero", "six"], ["clip2"], name="clip2"),
    ]
    up = 2 * size
    outputs = [("sum", [1, c, up, up]), ("ceil", [1, c, 2 * up, 2 * up]), ("tanh", [1, 4, up, up]),
               ("relu4", [1, c, up, up]), ("clip2", [1, 6, up, up])]
    graph = helper.make_graph(nodes, "upsample", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 4, size, size])],
                              [helper.make_tensor_value_info(n, TensorProto.FLOAT, s) for n, s in outputs], init)
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])


def images(first: int, count: int) -> np.ndarray:
    raw = np.load(BENCH / "images_u8.npy", mmap_mode="r")[first : first + count]
    return ((raw.astype(np.float32) / 255.0 - IMAGENET_MEAN) / IMAGENET_STD).astype(np.float32)


def model_and_data(name: str):
    if name == "upsample":
        data = np.random.default_rng(4).standard_normal((10, 4, 6, 6)).astype(np.float32)
        return upsample_model(), data, data[:3]
    if name == "upsample_large":  # tiled on the 16 KiB target
        data = np.random.default_rng(5).standard_normal((3, 4, 40, 40)).astype(np.float32)
        return upsample_model(40, 16), data, data[:1]
    if not BENCH.is_dir():
        pytest.skip(f"bench data not found at {BENCH} (../shared/bench/imagenet_like)")
    return BENCH / f"{name}.onnx", images(0, 4), images(32, 2)


@functools.lru_cache(maxsize=None)
def fixed_text(name: str) -> str:
    model, calibration, _ = model_and_data(name)
    return print_ir(xnpu.quantize(xnpu.import_onnx(model), calibration, progress=False))


def to_npu(text: str, target: str, host_fallback: bool = True):
    module = parse_ir(text)
    LegalizePass(target=target).apply(make_context(), module)
    return module, lower_fixed_to_npu(module, target, host_fallback=host_fallback)


@pytest.mark.parametrize("target", TARGETS)
@pytest.mark.parametrize("name", ("upsample",))  # segnet_like: its binary case below passes through this level
def test_npu_level_is_bit_identical_to_the_fixed_level(name, target):
    module, fired = to_npu(fixed_text(name), target)
    module.verify()
    assert {"resize_nearest", "resize_linear", "conv_transpose"} <= set(fired)
    if name == "upsample":
        assert "resize_nearest_shifted" in fired
    leftover = {op.name for op in module.walk() if op.name.startswith("fixed.")}
    assert leftover <= {"fixed.constant", "fixed.quantize", "fixed.dequantize"}
    _, _, x = model_and_data(name)
    expected = xnpu.run(parse_ir(fixed_text(name)), x)
    actual = xnpu.run(parse_ir(print_ir(module)), x)
    for key in expected:
        assert np.array_equal(expected[key], actual[key]), key


def test_upsampling_models_run_their_samples_in_one_pass():
    """nn.resize, nn.conv_transpose2d, nn.tanh and their fixed ops keep the samples apart
    (xnpu.interpreters.batching): the fixed level bit for bit as sample by sample, the float level to BLAS order."""
    from xnpu.interpreters.batching import runs_batched
    from xnpu.interpreters.function import entry_function

    model, _, x = model_and_data("upsample")
    for module, exact in ((xnpu.import_onnx(model), False), (parse_ir(fixed_text("upsample")), True)):
        assert runs_batched(entry_function(module))
        together = xnpu.run(module, x, batch=3)
        alone = xnpu.run(module, x, batch=1)
        for key in together:
            if exact:
                assert np.array_equal(together[key], alone[key]), key
            else:
                np.testing.assert_allclose(together[key], alone[key], rtol=1e-5, atol=1e-5)


def ops_by_node(module) -> dict[str, list]:
    """The npu ops by the ONNX node they were made for (the first of a fused location)."""
    by_node: dict[str, list] = {}
    for op in module.walk():
        if isinstance(op, npu.NpuOp):
            by_node.setdefault(f'loc("{location_names(op.location)[0]}")', []).append(op)
    return by_node


def test_upsampling_ops_at_the_npu_level():
    """Nearest x2 is the map stored four times; x4 with ceil reads an edge pad from shifted
    offsets; linear and each transposed convolution are four CONVs and one interleave."""
    module, _ = to_npu(fixed_text("upsample"), "xnpu_default")
    by_node = ops_by_node(module)
    nearest = [op for op in by_node['loc("nearest")'] if isinstance(op, npu.InterleaveOp)][0]
    assert len(set(nearest.inputs)) == 1 and not isinstance(nearest.inputs[0].owner, npu.PadOp)
    ceil = by_node['loc("nearest_ceil")']
    pad = next(op for op in ceil if isinstance(op, npu.PadOp))
    assert list(npu.ints(pad.pads)) == [0, 0, 1, 1]
    interleave = next(op for op in ceil if isinstance(op, npu.InterleaveOp))
    assert len(interleave.inputs) == 16 and set(interleave.inputs) == {pad.result}
    for node in ('loc("linear")', 'loc("deconv3")', 'loc("deconv4_dw")', 'loc("deconv2")'):
        kinds = [type(op) for op in by_node[node]]
        assert kinds.count(npu.ConvOp) == 4 and kinds.count(npu.InterleaveOp) == 1, node
    depthwise = [op for op in by_node['loc("deconv4_dw")'] if isinstance(op, npu.ConvOp)]
    assert all(op.is_depthwise and op.bias is not None and npu.shape_of(op.weight)[2:] == (2, 2) for op in depthwise)


@pytest.mark.parametrize("target", TARGETS[:2])
def test_activations_after_phases_run_in_every_phase_units_output_stage(target):
    """relu, relu6 and tanh after a transposed convolution commute with the interleave: the
    relu flag, the clamp (a TABLE on xnpu_lite) and the table of each phase CONV; the relu is
    not legalized into bias-adds on xnpu_lite."""
    module, fired = to_npu(fixed_text("upsample"), target)
    convs = {node: [op for op in ops if isinstance(op, npu.ConvOp)] for node, ops in ops_by_node(module).items()}
    assert not any(isinstance(op, (npu.ClampOp, npu.TableOp)) for op in module.walk())
    assert all(len(convs[node]) == 4 for node in ('loc("deconv4_dw")', 'loc("deconv3")', 'loc("deconv2")'))
    assert [op.relu is not None for op in convs['loc("deconv4_dw")']] == [True] * 4
    assert all(op.table is not None for op in convs['loc("deconv3")'])
    relu6 = convs['loc("deconv2")']
    assert all(op.relu is not None or op.clamp is not None or op.table is not None for op in relu6)
    assert len({str(op.properties.get("table") or op.properties.get("clamp")) for op in relu6}) == 1


# --------------------------------------------------------------------------------------
# The binary: bit-identical to the fixed level
# --------------------------------------------------------------------------------------

# segnet_like on one target (bench/targets.py checks every bench model on both)
BINARY_CASES = [("upsample", target) for target in TARGETS] + [("upsample_large", TARGETS[2]), ("segnet_like", "xnpu_default")]


@pytest.mark.parametrize("name,target", BINARY_CASES, ids=[f"{n}-{Path(t).stem}" for n, t in BINARY_CASES])
def test_binary_is_bit_identical_to_the_fixed_level(name, target):
    """segnet_like does not fit the 16 KiB target at all (conv_26's 3x3x128 kernels of one
    16-channel chunk need 18 KiB); upsample_large is tiled there, the upsampling layers included."""
    from xnpu.backend.emit import emit_binary
    from xnpu.backend.simulator import run_binary
    from xnpu.driver.pipeline import lower_to_isa

    banded = []  # interleaves and pads moved in bands of fewer rows than their sources have

    def record_tiles(step: str, module) -> None:
        for op in module.walk() if step == "npu-tile" else ():
            if isinstance(op, npu.InterleaveOp | npu.PadOp):
                rows = max(w.rows for w in op.phase_windows()) if isinstance(op, npu.InterleaveOp) else npu.shape_of(op.input)[2]
                if npu.ints(op.attributes["npu.tile"])[0] < rows:
                    banded.append(op.name)

    module = parse_ir(fixed_text(name))
    LegalizePass(target=target).apply(make_context(), module)
    lower_to_isa(module, target, record_tiles)
    _, _, x = model_and_data(name)
    expected = xnpu.run(parse_ir(fixed_text(name)), x)
    actual = run_binary(emit_binary(module), x, load_target(target))
    assert list(actual) == list(expected)
    for key in expected:
        assert np.array_equal(expected[key], actual[key]), key
    if name == "upsample_large":
        assert {"npu.interleave", "npu.pad"} <= set(banded)


# --------------------------------------------------------------------------------------
# What the accelerator does not run: not selected, with the reason
# --------------------------------------------------------------------------------------


def one_node_fixed(node, out_shape, initializers=()):
    graph = helper.make_graph([node], "one", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 2, 5, 5])],
                              [helper.make_tensor_value_info("y", TensorProto.FLOAT, out_shape)], list(initializers))
    data = np.random.default_rng(0).standard_normal((4, 2, 5, 5)).astype(np.float32)
    return print_ir(xnpu.quantize(xnpu.import_onnx(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])),
                                  data, progress=False))


X2 = numpy_helper.from_array(np.array([1, 1, 2, 2], np.float32), "s")
X4 = numpy_helper.from_array(np.array([1, 1, 4, 4], np.float32), "s")
KERNEL3 = numpy_helper.from_array(np.ones((2, 2, 3, 3), np.float32), "w")
KERNEL1 = numpy_helper.from_array(np.ones((2, 2, 1, 1), np.float32), "w")

UNSELECTABLE = [
    (helper.make_node("Resize", ["x", "", "s"], ["y"], name="corners", mode="linear",
                      coordinate_transformation_mode="align_corners"), [1, 2, 10, 10], [X2],
     "'fixed.resize_linear' at loc(\"corners\"): linear resize: its output rows read pixels or weights that vary "
     "with the position (as align_corners does); no unit computes them"),
    # x2 align_corners reads like pixel replication (or shifted by one); x4 does not
    (helper.make_node("Resize", ["x", "", "s"], ["y"], name="corners", mode="nearest",
                      coordinate_transformation_mode="align_corners", nearest_mode="floor"),
     [1, 2, 20, 20], [X4], "'fixed.resize' at loc(\"corners\"): nearest resize: its output rows read pixels"),
    (helper.make_node("ConvTranspose", ["x", "w"], ["y"], name="stride3", kernel_shape=[3, 3], strides=[3, 3]),
     [1, 2, 15, 15], [KERNEL3], "transposed convolution stride 3x3: the phase pattern is stride 2x2"),
    (helper.make_node("ConvTranspose", ["x", "w"], ["y"], name="dilated", kernel_shape=[3, 3], strides=[2, 2],
                      dilations=[2, 2]), [1, 2, 13, 13], [KERNEL3], "a dilated transposed convolution has no phase pattern"),
    (helper.make_node("ConvTranspose", ["x", "w"], ["y"], name="k1", kernel_shape=[1, 1], strides=[2, 2]),
     [1, 2, 9, 9], [KERNEL1], "kernel 1x1 is smaller than the stride: a phase has no tap"),
]


@pytest.mark.parametrize("node,out_shape,initializers,reason", UNSELECTABLE, ids=lambda v: getattr(v, "name", None))
def test_what_the_accelerator_cannot_run_is_not_selected_with_its_reason(node, out_shape, initializers, reason):
    with pytest.raises(XnpuError) as error:
        to_npu(one_node_fixed(node, out_shape, initializers), "xnpu_default", host_fallback=False)
    message = str(error.value)
    assert reason in message and message.endswith("(target xnpu_default)") and "\n" not in message
    module, _ = to_npu(one_node_fixed(node, out_shape, initializers), "xnpu_default")  # host fallback: the host runs it
    from xnpu.driver.placement import placement_of

    why = reason.split("): ", 1)[-1]  # the words after the op and its node
    assert any(why in op.reason and op.nodes == (node.name,) for op in placement_of(module).host)


def test_a_phase_beyond_the_unit_limits_is_not_selected():
    """xnpu_lite pads at most 3: a transposed convolution whose phases need more is left alone."""
    kernel = numpy_helper.from_array(np.ones((2, 2, 15, 15), np.float32), "w")
    node = helper.make_node("ConvTranspose", ["x", "w"], ["y"], name="big", kernel_shape=[15, 15], strides=[2, 2])
    with pytest.raises(XnpuError, match=r"loc\(\"big\"\): phase convolution: kernel 8x8 is outside \[1, 7\] \(target xnpu_lite\)"):
        to_npu(one_node_fixed(node, [1, 2, 23, 23], [kernel]), "xnpu_lite", host_fallback=False)


# --------------------------------------------------------------------------------------
# Why phases: cycles of the CONV instructions (target/cost.py)
# --------------------------------------------------------------------------------------


def cycles(target, shapes) -> int:
    return sum(conv_cycles(target, s.out_hw, s.kernel, s.in_channels, s.out_channels, s.depthwise) for s in shapes)


@pytest.mark.parametrize("target", TARGETS)
@pytest.mark.parametrize("kernel,pad,output_padding", [(2, 0, 0), (3, 1, 1), (4, 1, 0), (3, 0, 0)])
@pytest.mark.parametrize("depthwise", [False, True])
def test_phases_cost_a_quarter_of_the_zero_inserted_convolution(target, kernel, pad, output_padding, depthwise):
    """A stride-2 transposed convolution: the zero-inserted input's convolution multiplies
    every kernel tap for every output, three quarters of them by inserted zeros; the phases
    skip those, so (per-instruction overheads aside) their CONVs take a quarter of the cycles."""
    description = load_target(target)
    size, channels = 28, 64
    out = (size - 1) * 2 + kernel - 2 * pad + output_padding
    phase = cycles(description, phases.transpose_conv_phase_shapes(
        (size, size), (out, out), (kernel, kernel), (2, 2), (pad, pad), channels, channels, depthwise))
    zero_inserted = cycles(description, phases.zero_insert_shape((out, out), (kernel, kernel), channels, channels, depthwise))
    assert phase * 3.9 < zero_inserted


@pytest.mark.parametrize("target", TARGETS)
def test_linear_phases_cost_about_a_quarter_of_the_zero_inserted_filter(target):
    """half_pixel x2: four 2 x 2 phase kernels over the (H + 1) x (W + 1) valid positions of the
    edge pad against the 4 x 4 filter outer([1, 3, 3, 1]) at every one of the 2H x 2W outputs."""
    from xnpu.semantics import windows

    description = load_target(target)
    axis = phases.resize_axis(*windows.linear_resize_taps(56, 112, "half_pixel")[:2], 56)
    phase = cycles(description, phases.resize_linear_phase_shapes((56, 56), axis, axis, 32))
    zero_inserted = cycles(description, phases.zero_insert_shape((112, 112), (4, 4), 32, 32, True))
    assert 3.5 * phase < zero_inserted
