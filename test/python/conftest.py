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


# The files that cost most CPU (a file is one worker's at a time: `--dist loadfile`), in the
# order the workers take them (the Makefile keeps the collection's order: --no-loadscope-reorder).
# Started first, they run beside each other and the short files fill in at the end; started
# last (xdist's default order is by the number of tests), one long file kept a core busy while
# the other was idle. Measured per file with the suite on two workers: the ONNX conformance
# report (one 35 s fixture), the real models (one 18 s case), then the hostile-input processes
# and the IREE compiles.
LONGEST_FIRST = (
    "test_conformance.py",
    "test_realmodels.py",
    "test_security.py",
    "test_fixed_to_tosa.py",
    "test_lower_to_isa.py",
    "test_fuzz.py",
    "test_pdl_driver.py",
    "test_calibrate.py",
    "test_upsample.py",
    "test_tools.py",
    "test_quant_report.py",
    "test_legalize.py",
    "test_fixed_to_npu.py",
)


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    for item in items:
        if Path(str(item.fspath)).name in SLOW_FILES:
            item.add_marker(pytest.mark.slow)
    missing = [name for name in LONGEST_FIRST if not (Path(__file__).parent / name).is_file()]
    if missing:
        raise pytest.UsageError(f"conftest.py LONGEST_FIRST names files that do not exist: {', '.join(missing)}")
    rank = {name: index for index, name in enumerate(LONGEST_FIRST)}
    items.sort(key=lambda item: rank.get(Path(str(item.fspath)).name, len(rank)))  # stable: the rest keep their order
