"""A small seeded fuzz campaign over every tool (xnpu.tools.fuzz; `make fuzz` runs a long one).

Damaged IR at the nn, fixed and isa levels, binaries with bytes changed and the CRC fixed
again, damaged ONNX models, bad numpy files and abused paths and options: every case must
end with exit status 0, or with exactly one clean error line and no output file left; no
traceback, no hang (each case has a timeout), no input overwritten, no device replaced.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

from xnpu.tools.fuzz import CATEGORIES

CASES_PER_CATEGORY = 6


def test_seeded_fuzz_cases_end_cleanly():
    environment = {**os.environ, "OPENBLAS_NUM_THREADS": "1"}
    result = subprocess.run(
        [sys.executable, "-m", "xnpu.tools.fuzz", "--cases", str(CASES_PER_CATEGORY * len(CATEGORIES)), "--seed", "12",
         "--timeout", "60", "--json"],
        capture_output=True, text=True, timeout=1800, env=environment,  # a safety net: cases time out on their CPU
    )
    report = json.loads(result.stdout)
    print(f"\nfuzz: {report['cases']} cases in {report['seconds']} s: {report['counts']}")
    assert report["bugs"] == [], json.dumps(report["bugs"], indent=1)
    assert result.returncode == 0, result.stderr
    assert set(report["counts"]) == set(CATEGORIES)
    assert all(sum(row.values()) == CASES_PER_CATEGORY for row in report["counts"].values())
    # the damage is real: most cases are refused, and each refusal was checked to be one clean line
    assert sum(row.get("error", 0) for row in report["counts"].values()) > report["cases"] // 2


FORK_AFTER_COMPILE = """
import gc, os, sys, time
import numpy as np
from xnpu.driver.pipeline import compile as compile_model
compile_model(sys.argv[1], np.load(sys.argv[2])[:8])
pid = os.fork()
if pid == 0:
    gc.collect()  # frees whatever the child inherited and no longer reaches
    os._exit(0)
deadline = time.monotonic() + 60
while time.monotonic() < deadline:
    done, status = os.waitpid(pid, os.WNOHANG)
    if done:
        sys.exit(os.waitstatus_to_exitcode(status))
    time.sleep(0.05)
os.kill(pid, 9)
sys.exit("the forked child hung")
"""


def test_a_process_forked_after_a_compile_frees_what_it_inherited():
    # The campaign forks a child per case from a process that compiled the base model. An
    # onnxruntime session inherited from the parent cannot be destroyed in a child (its
    # destructor waits for the parent's pool threads, which the child does not have): a compile
    # must not leave one behind, or a child that collects it hangs.
    examples = Path(__file__).resolve().parents[2] / "examples"
    result = subprocess.run([sys.executable, "-c", FORK_AFTER_COMPILE, str(examples / "tiny_cnn.onnx"),
                             str(examples / "tiny_calib.npy")], capture_output=True, text=True, timeout=300)
    assert result.returncode == 0, result.stderr
