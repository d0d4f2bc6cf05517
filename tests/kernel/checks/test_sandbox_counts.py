"""run_tests reports what pytest reports: every outcome kind apart, subtests apart from tests,
and no pytest plugin the project's own run would not load."""

from __future__ import annotations

import json
import re
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

import liveforge
from liveforge.kernel.checks._records import RunResult

MIXED_SUITE = """
import pytest


def test_subtests_one_fails(subtests):
    for i in range(4):
        with subtests.test(i=i):
            assert i != 2


def test_subtests_pass(subtests):
    for i in range(3):
        with subtests.test(i=i):
            pass


def test_subtest_skip_and_xfail(subtests):
    with subtests.test("skipped"):
        pytest.skip("not here")
    with subtests.test("expected"):
        pytest.xfail("known")


@pytest.mark.xfail
def test_expected_failure():
    assert 0


@pytest.mark.xfail
def test_unexpected_pass():
    pass


@pytest.fixture
def broken():
    raise RuntimeError("fixture broke")


def test_setup_error(broken):
    pass


@pytest.mark.skip
def test_skipped():
    pass


def test_plain():
    pass
"""


def _pytest_summary(root: Path) -> str:
    """pytest's own summary line for the suite, without the time."""
    run = subprocess.run(
        [sys.executable, "-m", "pytest", "-v", "-p", "no:cacheprovider", "-p", "no:xdist"],
        cwd=root,
        capture_output=True,
        text=True,
        timeout=120,
    )
    last = run.stdout.strip().splitlines()[-1]
    return re.sub(r" in [\d.]+s.*$", "", last.strip("= "))


def _run_tests(root: Path) -> RunResult:
    rt = liveforge.Runtime(root)
    try:
        return rt.run_tests(["-p", "no:xdist"])
    finally:
        rt.close()


def test_counts_equal_pytests_own_summary(tmp_path: Path) -> None:
    """Subtests, xfail, xpass, setup errors and skips are counted as pytest counts them."""
    (tmp_path / "test_mixed.py").write_text(MIXED_SUITE)
    expected = _pytest_summary(tmp_path)
    result = _run_tests(tmp_path)
    assert result.tests is not None
    assert result.tests.pytest_line() == expected
    assert result.tests.model_dump() == {
        "passed": 3,
        "failed": 1,
        "errors": 1,
        "skipped": 1,
        "xfailed": 1,
        "xpassed": 1,
        "subtests_passed": 6,
        "subtests_failed": 1,
        "subtests_skipped": 1,
        "subtests_xfailed": 1,
        "subtests_xpassed": 0,
    }
    assert "1 subtests failed" in result.summary()
    assert {f.when for f in result.failures} == {"call", "setup", "subtest"}


def test_module_level_skip_counts_as_skipped(tmp_path: Path) -> None:
    """A module skipped at collection is one skip, as in pytest's summary."""
    (tmp_path / "test_skipmod.py").write_text(
        "import pytest\npytest.skip('whole module', allow_module_level=True)\n"
    )
    (tmp_path / "test_one.py").write_text("def test_one():\n    pass\n")
    result = _run_tests(tmp_path)
    assert result.tests is not None
    assert result.tests.pytest_line() == _pytest_summary(tmp_path) == "1 passed, 1 skipped"


@pytest.mark.skipif(
    subprocess.run([sys.executable, "-c", "import mcp"], capture_output=True).returncode != 0,
    reason="the MCP SDK is not installed",
)
def test_strict_warnings_project_passes_with_mcp_sdk_loaded(tmp_path: Path) -> None:
    """A process that has the MCP SDK loaded (as `liveforge mcp` does) still runs a project
    whose pytest turns warnings into errors: the sandbox does not pre-import the SDK and with
    it a pytest plugin's package before pytest starts."""
    (tmp_path / "pyproject.toml").write_text(
        '[tool.pytest.ini_options]\nfilterwarnings = ["error"]\n'
    )
    (tmp_path / "test_a.py").write_text("def test_a():\n    assert True\n")
    script = textwrap.dedent(
        f"""
        import json
        import mcp.server.fastmcp
        import liveforge
        rt = liveforge.Runtime({str(tmp_path)!r})
        result = rt.run_tests(["-q"])
        rt.close()
        print(json.dumps([result.ok, result.headline()]))
        """
    )
    run = subprocess.run(
        [sys.executable, "-c", script], capture_output=True, text=True, timeout=180
    )
    ok, headline = json.loads(run.stdout.strip().splitlines()[-1])
    assert ok, headline
