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


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    for item in items:
        if Path(str(item.fspath)).name in SLOW_FILES:
            item.add_marker(pytest.mark.slow)
