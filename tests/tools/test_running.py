"""verify and run_tests run sandboxed with the in-memory changes and report compactly."""

from __future__ import annotations

import importlib
import sys

import pytest

from liveforge.kernel import Runtime
from liveforge.tools import using_runtime
from liveforge.tools.changes import history, patch
from liveforge.tools.running import run_tests, verify


@pytest.fixture
def rt(project):
    runtime = Runtime(project_root=project.root)
    importlib.import_module(f"{project.pkg}.shapes")
    try:
        with using_runtime(runtime):
            yield runtime
    finally:
        runtime.close()


def test_verify_carries_in_memory_patches(project, rt):
    """A check sees the patched function and marks the change verified."""
    patch(f"{project.pkg}.shapes.area", "def area(radius: float) -> float:\n    return 7.0\n")
    text = verify(f"from {project.pkg}.shapes import area\nassert area(1.0) == 7.0\narea(2.0)")
    assert "snippet passed" in text and "value: 7.0" in text and "changes: c1" in text
    assert "[verified]" in rt.history()[0].summary()


def test_verify_shows_a_live_process_that_disagrees(project, rt):
    """The verify tool shows the live-process run; a live program that no longer runs the
    patched source makes the check divergent, and history says so."""
    patch(f"{project.pkg}.shapes.area", "def area(radius: float) -> float:\n    return 7.0\n")
    sys.modules[f"{project.pkg}.shapes"].area = lambda radius: 8.0
    text = verify(f"from {project.pkg}.shapes import area\narea(2.0)")
    assert "live process: passed" in text and "value 8.0" in text and "DIVERGENT" in text
    assert "divergent" in history()


def test_verify_failure_shows_the_exception(project, rt):
    """A failing check reports the assertion and is not a verification."""
    text = verify(f"from {project.pkg}.shapes import area\nassert area(1.0) == 0, 'nope'")
    assert "snippet failed" in text and "AssertionError" in text and "nope" in text


def test_run_tests_gives_counts_and_failures(project, rt):
    """A pytest run reports pass/fail counts and names each failure."""
    text = run_tests(["tests/test_shapes.py"])
    assert "tests: 1 passed, 1 failed" in text
    assert "FAIL tests/test_shapes.py::test_area_fails_on_purpose" in text
    assert "short test summary" not in text and text.splitlines()[-1].startswith("record: ")
