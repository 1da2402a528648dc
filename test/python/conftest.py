"""`make quick` leaves out the files marked slow here: the fuzz campaign, the hostile-input probes
(a process per tool run), the tool-level reliability cases, and the bench models run end to end
(through IREE too). Each takes minutes on two cores; `make test` runs them all."""

from __future__ import annotations

from pathlib import Path

import pytest

SLOW_FILES = frozenset({
    "test_fuzz.py",
    "test_security.py",
    "test_reliability.py",
    "test_bench_agreement.py",
    "test_resnet_scale.py",
    "test_fixed_to_tosa.py",
    "test_batching.py",
})


# Files whose tests share what one process builds once (module-scoped fixtures, cached
# compiles): their tests stay on one worker (`--dist loadgroup`), so it is built once; every
# other test goes to whichever worker is free, so one long file no longer ends the run alone.
SHARED_STATE_FILES = frozenset({
    "test_conformance.py",  # the report of every ONNX backend case, built once
    "test_quant_report.py",
    "test_onnx_host_ops.py",
    "test_calibrate.py",
    "test_upsample.py",  # fixed_text's cache
    "test_lower_to_isa.py",  # compiled()'s cache
})


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    for item in items:
        name = Path(str(item.fspath)).name
        if name in SLOW_FILES:
            item.add_marker(pytest.mark.slow)
        if name in SHARED_STATE_FILES:
            item.add_marker(pytest.mark.xdist_group(name))
