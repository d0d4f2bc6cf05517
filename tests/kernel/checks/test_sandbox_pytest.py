"""run_tests runs the target project's own pytest suite in a child carrying the overlay."""

from __future__ import annotations

import sys
from collections.abc import Iterator
from pathlib import Path

import pytest
from sandbox_support import copy_fixture_project, file_overlay, shows_sandbox_frames

from liveforge.kernel.checks._sandbox import OverlayModule, Sandbox

BUGGY_F = '''"""Geometry helpers with an off-by-one bug."""

import httpx
from pydantic import BaseModel


class Point(BaseModel):
    x: int
    y: int


def f(x: int) -> int:
    return x + 2


def shifted(point: Point, dx: int) -> Point:
    return Point(x=point.x + dx, y=point.y)


def client(base_url: str) -> httpx.Client:
    return httpx.Client(base_url=base_url)
'''


@pytest.fixture(scope="module")
def project(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[Path, Sandbox]]:
    root = copy_fixture_project(tmp_path_factory.mktemp("tests") / "project")
    sys.path.insert(0, str(root))
    try:
        with Sandbox(root, runs_dir=root.parent / "runs") as box:
            yield root, box
    finally:
        sys.path.remove(str(root))


@pytest.fixture
def bug(project: tuple[Path, Sandbox]) -> OverlayModule:
    return file_overlay(project[0], "fixture_pkg.mod", BUGGY_F)


def test_suite_passes_without_overlay(project: tuple[Path, Sandbox]) -> None:
    result = project[1].run_tests(["-q"])
    assert (result.status, result.ok) == ("passed", True)
    assert result.tests is not None
    assert result.tests.line() == "6 passed, 1 skipped"


def test_bug_in_overlay_is_detected_with_failing_node_ids(
    project: tuple[Path, Sandbox], bug: OverlayModule
) -> None:
    result = project[1].run_tests(["-q"], [bug], change_ids=["c7"])
    assert result.status == "failed" and result.tests is not None
    assert (result.tests.passed, result.tests.failed) == (2, 4)
    ids = {failure.nodeid for failure in result.failures}
    assert "tests/test_mod.py::test_f_is_the_successor" in ids
    assert any("assert 3 == 2" in failure.message for failure in result.failures)
    assert result.change_ids == ["c7"]
    assert result.message == "2 passed, 4 failed, 1 skipped"
    assert "FAIL tests/test_mod.py::test_f_is_the_successor (call)" in result.summary()


def test_run_uses_the_project_conftest(project: tuple[Path, Sandbox]) -> None:
    result = project[1].run_tests(["-q", "tests/test_mod.py::test_shifted_moves_right"])
    assert result.tests is not None and result.tests.passed == 1


def test_overlay_reaches_every_xdist_worker(
    project: tuple[Path, Sandbox], bug: OverlayModule
) -> None:
    result = project[1].run_tests(["-n", "2"], [bug])
    assert result.status == "failed" and result.tests is not None
    assert (result.tests.passed, result.tests.failed) == (2, 4)
    assert "created: 2/2 workers" in result.stdout


def test_junit_xml_and_arguments_are_recorded(project: tuple[Path, Sandbox]) -> None:
    result = project[1].run_tests(["-q", "-k", "client"])
    record = Path(result.record_path)
    assert '<testcase classname="tests.test_mod" name="test_client_base_url"' in (
        (record / "junit.xml").read_text()
    )
    assert (record / "args.json").read_text() == '["-q", "-k", "client"]'


def test_no_collected_tests_is_an_error(project: tuple[Path, Sandbox]) -> None:
    result = project[1].run_tests(["-q", "-k", "no_such_test_name"])
    assert result.status == "error" and "no tests" in result.message


def test_collection_error_is_counted_and_reported(project: tuple[Path, Sandbox]) -> None:
    without_shifted = BUGGY_F[: BUGGY_F.index("def shifted")]
    broken = file_overlay(project[0], "fixture_pkg.mod", without_shifted)
    result = project[1].run_tests(["-q"], [broken])
    assert result.status == "error" and result.tests is not None
    assert result.tests.errors == 1
    assert [(f.nodeid, f.when) for f in result.failures] == [("tests/test_mod.py", "collect")]


def test_broken_conftest_import_is_an_error_showing_the_overlay_line(
    project: tuple[Path, Sandbox],
) -> None:
    broken = file_overlay(project[0], "fixture_pkg.mod", "def f(:\n")
    result = project[1].run_tests(["-q"], [broken])
    assert result.status == "error"
    assert "ImportError while loading conftest" in result.message
    assert "def f(:" in result.stderr and not shows_sandbox_frames(result.stderr)


def test_hanging_test_is_killed_at_the_timeout(project: tuple[Path, Sandbox]) -> None:
    slow = file_overlay(
        project[0], "fixture_pkg.mod", BUGGY_F.replace("return x + 2", "while True:\n        pass")
    )
    result = project[1].run_tests(["-q", "-k", "successor"], [slow], timeout=3)
    assert result.status == "timed_out"
