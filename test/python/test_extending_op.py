"""docs/extending.md, "Adding an op": LeakyRelu is its definition, its importer line, its float
semantics and this test. The doc's blocks are what the tree holds, no other source file names
the op, and the op runs at every level down to the binary, on the accelerator."""

from __future__ import annotations

import re
import subprocess

import numpy as np
import onnx
import onnxruntime as ort
import pytest
from onnx import TensorProto, helper, numpy_helper

import xnpu
from xnpu.dialects import npu

from models import ROOT

SECTION = re.compile(r"## Adding an op:.*?(?=\n## )", re.S)
BLOCK = re.compile(r"```python excerpt=(\S+)\n(.*?)```", re.S)
# the four places the doc names (the documents under docs/ that mention the op are not code:
# this walk-through, and the conformance list, which is generated)
OP_FILES = {"semantics/float_ops.py", "dialects/nn.py", "frontend/onnx_converters.py", "test/python/test_extending_op.py"}


def test_the_doc_shows_what_the_tree_holds():
    blocks = BLOCK.findall(SECTION.search((ROOT / "docs" / "extending.md").read_text()).group(0))
    assert [path for path, _ in blocks] == ["semantics/float_ops.py", "dialects/nn.py", "frontend/onnx_converters.py"]
    for path, body in blocks:
        assert body in (ROOT / path).read_text(), f"docs/extending.md's block for {path} is not in {path}"


def test_no_other_source_file_names_the_op():
    listed = subprocess.run(["git", "grep", "--untracked", "-l", "-i", "-E", "leaky_?relu"], cwd=ROOT, capture_output=True, text=True)
    if listed.returncode not in (0, 1):
        pytest.skip(f"git grep is not available here: {listed.stderr.strip()}")
    assert {path for path in listed.stdout.split() if not path.startswith("docs/")} == OP_FILES


def _model() -> onnx.ModelProto:
    rng = np.random.default_rng(7)
    w1 = numpy_helper.from_array(rng.normal(0, 0.3, (8, 3, 3, 3)).astype(np.float32), "w1")
    w2 = numpy_helper.from_array(rng.normal(0, 0.3, (4, 8, 1, 1)).astype(np.float32), "w2")
    nodes = [
        helper.make_node("Conv", ["x", "w1"], ["c1"], pads=[1, 1, 1, 1], name="conv1"),
        helper.make_node("LeakyRelu", ["c1"], ["a1"], alpha=0.1, name="leaky1"),
        helper.make_node("Conv", ["a1", "w2"], ["c2"], name="conv2"),
        helper.make_node("LeakyRelu", ["c2"], ["y"], name="leaky2"),  # the default alpha, 0.01
    ]
    graph = helper.make_graph(nodes, "leaky", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 3, 8, 8])],
                              [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, 4, 8, 8])], [w1, w2])
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])


@pytest.mark.parametrize("target", ["xnpu_default", "xnpu_lite"])
def test_leaky_relu_runs_at_every_level_on_the_accelerator(target):
    model = _model()
    data = np.random.default_rng(3).normal(0, 1, (16, 1, 3, 8, 8)).astype(np.float32)
    calibration, samples = data[:12].reshape(12, 3, 8, 8), data[12:].reshape(4, 3, 8, 8)

    session = ort.InferenceSession(model.SerializeToString(), providers=["CPUExecutionProvider"])
    float_level = xnpu.run(xnpu.import_onnx(model), samples)["y"]
    reference = np.concatenate([session.run(None, {"x": s[None]})[0] for s in samples])
    np.testing.assert_allclose(float_level, reference, rtol=1e-5, atol=1e-5)  # float32 sums in another order

    fixed_module = xnpu.quantize(model, calibration)
    assert sum(op.name == "fixed.table" for op in fixed_module.walk()) == 2  # R15: one table per LeakyRelu
    fixed_outputs = xnpu.run(fixed_module, samples)["y"]
    binary = xnpu.compile(model, calibration, target=target)
    np.testing.assert_array_equal(xnpu.run(binary, samples)["y"], fixed_outputs)
    placement = xnpu.placement_of(binary)
    assert placement.host == [] and {"leaky1", "leaky2"} <= set(placement.accelerator)

    npu_module = xnpu.compile(model, calibration, target=target, stop_at="npu")
    convs = [op for op in npu_module.walk() if isinstance(op, npu.ConvOp)]
    assert len(convs) == 2 and all(op.table is not None for op in convs)  # each table in its conv's output stage
    cosine = float(np.dot(fixed_outputs.ravel(), reference.ravel())
                   / (np.linalg.norm(fixed_outputs) * np.linalg.norm(reference)))
    assert cosine > 0.99, cosine  # int8 close to float
