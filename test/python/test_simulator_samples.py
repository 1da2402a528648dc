"""Several samples through each planned step at once (backend/simulator.py `run_samples`): the
same integers as one run per sample, the same statistics per sample, chunks that fit the
memory budget, and the programs that must run one sample at a time."""

from __future__ import annotations

import os
import signal
import time
from pathlib import Path

import numpy as np
import pytest
from onnx import TensorProto, helper, numpy_helper

import xnpu
from xnpu.backend import simulator
from xnpu.backend.binary import Binary, IoTensor
from xnpu.backend.isa_dependencies import insert_dependencies
from xnpu.backend.machine_memory import SamplesDiffer
from xnpu.backend.simulator import Machine, batch_blocker, machine_for, samples_at_once, simulate
from xnpu.core.errors import XnpuError
from xnpu.target.description import load_target
from xnpu.target.encoding import make_instruction

from models import zoo_model

TARGETS = ("xnpu_default", "xnpu_lite")
DEFAULT = load_target("xnpu_default")


def _softmax_head():
    """conv -> relu -> global pool -> gemm -> softmax: the softmax runs on the host."""
    rng = np.random.default_rng(11)

    def weight(name, *shape):
        return numpy_helper.from_array((rng.standard_normal(shape) * 0.3).astype(np.float32), name)

    nodes = [
        helper.make_node("Conv", ["x", "w", "b"], ["c"], name="conv", kernel_shape=[3, 3], pads=[1, 1, 1, 1]),
        helper.make_node("Relu", ["c"], ["r"], name="relu"),
        helper.make_node("GlobalAveragePool", ["r"], ["p"], name="pool"),
        helper.make_node("Flatten", ["p"], ["f"], name="flatten"),
        helper.make_node("Gemm", ["f", "wf", "bf"], ["logits"], name="fc", transB=1),
        helper.make_node("Softmax", ["logits"], ["probs"], name="softmax", axis=1),
    ]
    graph = helper.make_graph(
        nodes, "host", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 3, 12, 12])],
        [helper.make_tensor_value_info("probs", TensorProto.FLOAT, [1, 5])],
        [weight("w", 8, 3, 3, 3), weight("b", 8), weight("wf", 5, 8), weight("bf", 5)],
    )
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)])


def _binary(name: str, target: str) -> tuple[Binary, np.ndarray]:
    """A small binary and 5 samples: the zoo (depthwise and grouped convs, tables, every pool,
    a clip) with its weights compressed (decoding LOADs), or the softmax head (a host segment)."""
    rng = np.random.default_rng(23)
    if name == "zoo":
        data = rng.standard_normal((13, 3, 40, 40)).astype(np.float32)
        binary = xnpu.compile(zoo_model(), data[:8], target=target, progress=False, compress_bits=3,
                              compress_min_elements=0)
    else:
        data = rng.standard_normal((13, 3, 12, 12)).astype(np.float32)
        binary = xnpu.compile(_softmax_head(), data[:8], target=target, progress=False)
    return binary, data[8:]


@pytest.mark.parametrize("target", TARGETS)
@pytest.mark.parametrize("name", ["zoo", "softmax_head"])
def test_samples_at_once_equal_one_run_per_sample(name, target, monkeypatch):
    binary, x = _binary(name, target)
    if name == "zoo":
        assert any(i.op == "LOAD" and i["codebook_bits"] for i in binary.instructions)
        assert {"TABLE", "POOL"} <= {i.op for i in binary.instructions}
    else:
        assert binary.host_segments
    assert batch_blocker(binary) is None and samples_at_once(binary, machine_for(binary)) > 1
    alone = [simulate(binary, x[k : k + 1]) for k in range(len(x))]
    # every sample in one chunk; chunks of 2, 2 and 1; and the same shared by two processes
    # (3 and 2 samples; chunks of 2 and 2, then 2 with the last sample again)
    for at_once, workers in ((16, 1), (2, 1), (16, 2), (2, 2)):
        monkeypatch.setattr(simulator, "MAX_SAMPLES_AT_ONCE", at_once)
        together = simulate(binary, x, workers=workers)
        for output in binary.outputs():
            expected = np.concatenate([run.codes[output.name] for run in alone])
            assert np.array_equal(together.codes[output.name], expected)
            floats = np.concatenate([run.outputs[output.name] for run in alone])
            assert np.array_equal(together.outputs[output.name], floats)
        assert together.stats.cycles == len(x) * alone[0].stats.cycles
        assert together.stats.by_layer == {k: len(x) * v for k, v in alone[0].stats.by_layer.items()}
        assert together.stats.tokens == [t for run in alone for t in run.stats.tokens]


def test_workers_only_where_their_samples_hold_enough_arithmetic(monkeypatch):
    binary, x = _binary("softmax_head", "xnpu_default")
    machine = machine_for(binary)
    cycles = machine.plan_of(binary).stats.compute_cycles  # one sample's
    assert cycles > 0
    # each of 2 workers needs SHARE_MIN_CYCLES: 5 samples pay for 2 where 5 * cycles >= 2 * that
    monkeypatch.setattr(simulator, "SHARE_MIN_CYCLES", 5 * cycles // 2 + 1)
    assert simulator.workers_worth(binary, machine, 5, 2) == 1
    assert simulator.workers_worth(binary, machine, 6, 2) == 2
    assert simulator.workers_worth(binary, machine, 60, 2) == 2  # never more than the cores
    assert simulator.workers_worth(binary, machine, 60, 8) == 8
    parts: list[int] = []
    run_parts = simulator.run_parts
    monkeypatch.setattr(simulator, "run_parts", lambda task, runs: parts.append(len(runs)) or run_parts(task, runs))
    monkeypatch.setattr(simulator, "cores", lambda: 2)
    monkeypatch.delenv("XNPU_WORKERS", raising=False)
    alone = simulate(binary, x).codes["probs"]  # 5 samples: the rule keeps them here
    monkeypatch.setenv("XNPU_WORKERS", "2")  # forced: shared all the same
    assert np.array_equal(simulate(binary, x).codes["probs"], alone)
    monkeypatch.setattr(simulator, "SHARE_MIN_CYCLES", 1)
    monkeypatch.setenv("XNPU_WORKERS", "1")  # forced: one process where the rule would share
    assert np.array_equal(simulate(binary, x).codes["probs"], alone)
    assert parts == [1, 2, 1]


def test_chunks_follow_the_memory_budget(monkeypatch):
    binary, _ = _binary("softmax_head", "xnpu_default")
    machine = machine_for(binary)
    sample = samples_at_once(binary, machine)
    monkeypatch.setattr(simulator, "SAMPLES_MEMORY_BYTES", machine.target.memory.sram_bytes * 3)
    assert samples_at_once(binary, machine) == 2 < sample
    monkeypatch.setattr(simulator, "SAMPLES_MEMORY_BYTES", 1)
    assert samples_at_once(binary, machine) == 1


def _raw(op: str, sram: int, ddr: int, size: int):
    return make_instruction(op, layout=0, sram_addr=sram, ddr_addr=ddr, d0=1, d1=size)


def _table_binary(table_ddr: int, store_ddr: int = 8192) -> Binary:
    """The input's 256 bytes through a TABLE whose 256 entries are LOADed from DDR `table_ddr`,
    the result STOREd at `store_ddr`; the constant image is 512 bytes."""
    program = [_raw("LOAD", 0, table_ddr, 256), _raw("LOAD", 0x1000, 4096, 256),
               make_instruction("TABLE", in_addr=0x1000, out_addr=0x2000, table_addr=0, h=1, w=16, c=16),
               _raw("STORE", 0x2000, store_ddr, 256), make_instruction("SYNC", halt=1)]
    program = insert_dependencies(program, DEFAULT.memory.channel_alignment)
    constants = np.random.default_rng(3).integers(-128, 128, 512).astype(np.int8).tobytes()
    return Binary(DEFAULT.id, program, constants, [IoTensor("x", "input", (1, 256), "int8", 0.05, 0, 4096, "RAW"),
                                                   IoTensor("y", "output", (1, 256), "int8", 0.05, 0, 8192, "RAW")])


def _run_each_and_all(binary: Binary, x: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Each sample alone, and all of them in one `simulate` call (in one process, and shared by two)."""
    alone = np.concatenate([simulate(binary, x[k : k + 1]).codes["y"] for k in range(len(x))])
    together = simulate(binary, x, workers=1).codes["y"]
    assert np.array_equal(simulate(binary, x, workers=2).codes["y"], together)
    return alone, together


def test_a_program_that_writes_its_constant_image_runs_one_sample_at_a_time():
    x = np.random.default_rng(5).standard_normal((3, 256)).astype(np.float32)
    writes = _table_binary(0, store_ddr=256)  # its output lies in the constant image
    assert "writes the constant image" in batch_blocker(writes)
    assert samples_at_once(writes, machine_for(writes)) == 1
    with pytest.raises(XnpuError, match="cannot run several samples at once"):
        Machine(DEFAULT, ddr_size=16384).run_samples(writes, {"x": np.zeros((2, 1, 256), np.int8)}, 2)
    reads = _table_binary(0)
    assert batch_blocker(reads) is None and samples_at_once(reads, machine_for(reads)) > 1
    alone, together = _run_each_and_all(reads, x)
    assert np.array_equal(alone, together) and len(np.unique(together)) > 10


def test_samples_that_read_different_parameters_run_one_at_a_time():
    """A table LOADed from the input (each sample's own bytes) differs between the samples:
    the run falls back to one sample at a time, with the same results."""
    x = np.random.default_rng(6).standard_normal((3, 256)).astype(np.float32)
    binary = _table_binary(4096)
    assert batch_blocker(binary) is None
    machine = Machine(DEFAULT, ddr_size=16384)
    with pytest.raises(SamplesDiffer):
        machine.run_samples(binary, {"x": np.stack([np.arange(256) - 128, np.arange(256)[::-1] - 128])[:, None]}, 2)
    alone, together = _run_each_and_all(binary, x)
    assert np.array_equal(alone, together)


def test_a_traced_run_traces_every_sample_in_turn():
    """`simulate` with a trace runs one sample at a time: each sample's records, in program order."""
    binary, x = _binary("softmax_head", "xnpu_default")
    one: list = []
    simulate(binary, x[:1], trace=one.append)
    both: list = []
    simulate(binary, x[:2], trace=both.append)
    assert one and [(r.index, r.mnemonic, r.start) for r in both] == 2 * [(r.index, r.mnemonic, r.start) for r in one]


def test_a_table_kept_from_the_last_run_is_the_binarys_after_a_run_overwrote_it_in_ddr():
    """A TABLE keeps its prepared table between runs of a binary while SRAM holds the same
    LOAD's constants: here each run's STORE overwrites the table's bytes in DDR's constant
    image, so the next run reloads the image and still looks up the binary's table."""
    binary = _table_binary(0, store_ddr=0)
    machine = Machine(DEFAULT, ddr_size=16384)
    codes = 127 - np.arange(256, dtype=np.int64).reshape(1, 256)  # every int8 code once, descending
    table = np.frombuffer(binary.constants[:256], np.int8)
    for _ in range(3):  # with the table the last run wrote (the binary's reversed), a run would give the binary's
        machine.run(binary, {"x": codes})
        assert np.array_equal(np.frombuffer(machine.read_ddr(0, 256), np.int8), table[::-1])  # R15: entry i for code i - 128


def _children() -> list[int]:
    """This process's living children (Linux's /proc)."""
    tasks = Path("/proc/self/task")
    if not tasks.exists():
        pytest.skip("no /proc here")
    return [int(pid) for task in tasks.iterdir() for pid in (task / "children").read_text().split()]


def _failing(parent: int, in_worker, in_parent=None):
    """Machine.run_samples, doing `in_worker` in a forked worker (and `in_parent` in this process) instead."""
    run_samples = Machine.run_samples

    def run(self, *args, **kwargs):
        if os.getpid() != parent:
            in_worker()
        elif in_parent is not None:
            in_parent()
        return run_samples(self, *args, **kwargs)

    return run


def test_a_workers_failure_is_the_runs_clear_error_and_leaves_no_process(monkeypatch):
    binary, x = _binary("softmax_head", "xnpu_default")
    parent, before = os.getpid(), _children()

    def fail():
        raise XnpuError("instruction 7 (CONV): what the second worker's samples broke")

    monkeypatch.setattr(Machine, "run_samples", _failing(parent, fail))
    with pytest.raises(XnpuError, match=r"^instruction 7 \(CONV\): what the second worker's samples broke$"):
        simulate(binary, x, workers=2)
    assert _children() == before
    monkeypatch.setattr(Machine, "run_samples", _failing(parent, lambda: os.kill(os.getpid(), signal.SIGKILL)))
    with pytest.raises(XnpuError, match=r"^a worker process \(pid \d+\) was killed by SIGKILL before it returned"):
        simulate(binary, x, workers=2)
    assert _children() == before


def test_a_failure_here_ends_the_workers_at_once(monkeypatch):
    binary, x = _binary("softmax_head", "xnpu_default")
    parent, before = os.getpid(), _children()

    def fail():
        raise XnpuError("input 'x' is not what this run takes")

    monkeypatch.setattr(Machine, "run_samples", _failing(parent, lambda: time.sleep(60), fail))
    start = time.monotonic()
    with pytest.raises(XnpuError, match="^input 'x' is not what this run takes$"):
        simulate(binary, x, workers=2)
    assert time.monotonic() - start < 30 and _children() == before
