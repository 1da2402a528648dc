"""Parts of a job in forked processes (xnpu.core.forked): results in the order of the parts,
each part's exception raised by the caller, no child left behind, and XNPU_WORKERS."""

from __future__ import annotations

import os

import pytest

from xnpu.core import forked
from xnpu.core.errors import XnpuError


def _pid_and_square(part: int) -> tuple[int, int]:
    return os.getpid(), part * part


def test_parts_run_in_their_own_processes_and_come_back_in_order():
    results = forked.run_parts(_pid_and_square, [3, 4, 5])
    assert [square for _, square in results] == [9, 16, 25]
    assert results[0][0] == os.getpid() and len({pid for pid, _ in results}) == 3
    assert forked.run_parts(_pid_and_square, [6]) == [(os.getpid(), 36)]


def _fails_unpicklably(part: int) -> int:
    if part:
        error = ValueError("no pickle")
        error.held = lambda: None  # a lambda does not pickle
        raise error
    return part


def test_an_exception_that_does_not_pickle_comes_back_with_its_traceback():
    with pytest.raises(RuntimeError, match=r"(?s)in a worker process:.*ValueError: no pickle"):
        forked.run_parts(_fails_unpicklably, [0, 1])


def _interrupted(part: int) -> int:
    if part == 0:
        raise KeyboardInterrupt
    return part


def test_an_interrupt_here_is_raised_as_it_is():
    with pytest.raises(KeyboardInterrupt):
        forked.run_parts(_interrupted, [0, 1])


def test_workers_variable(monkeypatch):
    monkeypatch.setenv(forked.WORKERS_VARIABLE, "1")
    assert forked.cores() == 1
    monkeypatch.setenv(forked.WORKERS_VARIABLE, "3")
    assert forked.cores() == (3 if hasattr(os, "fork") else 1)
    for wrong in ("two", "0"):
        monkeypatch.setenv(forked.WORKERS_VARIABLE, wrong)
        with pytest.raises(XnpuError, match=f"^{forked.WORKERS_VARIABLE}='{wrong}': give"):
            forked.cores()
    monkeypatch.delenv(forked.WORKERS_VARIABLE)
    assert forked.cores() >= 1


def test_a_part_the_system_refuses_a_process_for_runs_here(monkeypatch):
    def refused():
        raise BlockingIOError("fork: resource temporarily unavailable")

    monkeypatch.setattr(os, "fork", refused)
    assert forked.run_parts(_pid_and_square, [3, 4]) == [(os.getpid(), 9), (os.getpid(), 16)]


def _blas_threads(_part: int) -> list[int]:
    from threadpoolctl import threadpool_info

    return [pool["num_threads"] for pool in threadpool_info() if pool["user_api"] == "blas"]


def test_every_part_runs_one_blas_thread_and_the_caller_gets_its_own_back():
    import numpy  # noqa: F401 (loads its BLAS)

    before = _blas_threads(0)
    assert forked.run_parts(_blas_threads, [0, 1]) == [[1] * len(before)] * 2
    assert _blas_threads(0) == before
