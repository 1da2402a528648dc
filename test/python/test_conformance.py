"""ONNX backend node conformance: every case onnxruntime runs imports and runs.

A node the front end does not model runs on onnxruntime, so every case onnxruntime runs
imports and computes the expected answer (or onnxruntime's, where that differs); a case that
imports and then computes a different answer, or raises anything but an XnpuError, is a
failure here. The generated list lives in docs/conformance.md (python -m
xnpu.tools.conformance_report rewrites it).
"""

from __future__ import annotations

import onnx
import pytest

from xnpu.tools import conformance_report


@pytest.fixture(scope="module")
def report():
    return conformance_report.build_report()


def test_no_case_computes_a_wrong_answer(report):
    print("\nONNX node conformance: " + report.summary())
    bugs = report.by_status("wrong") + report.by_status("crashed")
    assert not bugs, "; ".join(f"{o.name}: {o.status}: {o.detail}" for o in bugs)
    # guards against the selection silently shrinking (e.g. a renamed op table)
    assert len(report.by_status("passed")) >= 100


def test_averagepool_window_starting_in_the_padding_passes(report):
    # ceil_mode: a last window that starts in the trailing padding is dropped (ONNX); it once
    # ran and gave wrong values. test_reliability.py checks it at the fixed level and on the binary too.
    passed = {o.name for o in report.by_status("passed")}
    assert "test_averagepool_2d_ceil_last_window_starts_on_pad" in passed


def test_unsupported_cases_say_why(report):
    for outcome in report.by_status("unsupported"):
        assert outcome.detail and "\n" not in outcome.detail, outcome.name


def test_every_case_onnxruntime_runs_imports_unless_a_rank_depends_on_the_data(report):
    # a tensor whose rank depends on input values (a Squeeze of a size given at run time) has
    # no type in xnpu's IR; every other case onnxruntime runs is imported and run
    refused = [o for o in report.by_status("unsupported") if "depends on the data" not in o.detail]
    assert not refused, "; ".join(f"{o.name}: {o.detail}" for o in refused)
    assert len(report.by_status("passed")) >= 1500


def test_conformance_document_is_up_to_date(report):
    document = conformance_report.DOC_PATH
    current = document.read_text() if document.exists() else ""
    if f"onnx {onnx.__version__}" not in current:
        pytest.skip(f"{document.name} was generated with another onnx version than {onnx.__version__}")
    assert current == conformance_report.markdown(report), (
        f"{document} is out of date: run python -m xnpu.tools.conformance_report"
    )
