"""pytest in a sandbox child: a plugin that counts outcomes as pytest's summary line does,
and `run_pytest`, which runs a selection in-process with that plugin.

    outcome = run_pytest(["tests/test_x.py", "-q"], scratch)
    outcome["status"], outcome["tests"]["passed"], outcome["failures"]

Standard library only (pytest is imported when a run starts, from the project's
environment): sandbox children load this file by path (see `_child`).
"""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

if __package__:  # imported as liveforge.kernel.checks._childpytest
    from liveforge.kernel.checks import _overlayhook
    from liveforge.kernel.checks._childerrors import clip, exception_info
else:  # loaded by file path (`load_sibling` of `_child`), which never imports liveforge
    _sibling = sys.modules["_liveforge_sandbox_loader"].load_sibling
    _overlayhook, _errors = _sibling("_overlayhook"), _sibling("_childerrors")
    clip, exception_info = _errors.clip, _errors.exception_info

__all__ = ["COUNT_KEYS", "JUNIT", "PYTEST_STATUS", "PytestCollector", "run_pytest"]

JUNIT = "junit.xml"


class PytestCollector:
    """A pytest plugin that counts outcomes the way pytest's summary line does and keeps a
    short message per failure. Subtests (pytest >= 9, or the pytest-subtests plugin) are
    counted apart from tests: a test whose subtests failed counts as one failed test, and
    each failed subtest as one failed subtest."""

    def __init__(self) -> None:
        self.counts = dict.fromkeys(COUNT_KEYS, 0)
        self.failures: list[dict[str, str]] = []
        self._failed_subtests: dict[str, int] = {}

    def pytest_load_initial_conftests(self) -> None:
        _overlayhook.overlay_first()

    def pytest_collectreport(self, report: Any) -> None:
        if report.failed:
            self.counts["errors"] += 1
            self._failure(report, "collect")
        elif report.skipped:
            self.counts["skipped"] += 1

    def pytest_runtest_logreport(self, report: Any) -> None:
        if not getattr(report, "count_towards_summary", True):
            return
        if report.when != "call":
            if report.failed:
                self.counts["errors"] += 1
                self._failure(report, report.when)
            elif report.skipped:
                self.counts["skipped"] += 1
            return
        subtest = type(report).__name__ == "SubtestReport"
        outcome = _call_outcome(report)
        if subtest:
            self.counts["subtests_" + outcome] += 1
            if outcome == "failed":
                self._failed_subtests[report.nodeid] = (
                    self._failed_subtests.get(report.nodeid, 0) + 1
                )
                self._failure(report, "subtest")
            return
        if outcome == "passed" and self._failed_subtests.pop(report.nodeid, 0):
            outcome = "failed"  # pytest fails a test whose subtests failed
        self.counts[outcome] += 1
        if report.failed:
            self._failure(report, "call")

    def _failure(self, report: Any, when: str) -> None:
        crash = getattr(report.longrepr, "reprcrash", None)
        message = getattr(crash, "message", None) or ""
        if not message:
            lines = [line for line in str(report.longrepr or "").splitlines() if line.strip()]
            message = lines[-1] if lines else "failed"
        self.failures.append({"nodeid": report.nodeid, "when": when, "message": clip(message, 500)})


COUNT_KEYS = (
    "passed",
    "failed",
    "errors",
    "skipped",
    "xfailed",
    "xpassed",
    "subtests_passed",
    "subtests_failed",
    "subtests_skipped",
    "subtests_xfailed",
    "subtests_xpassed",
)


def _call_outcome(report: Any) -> str:
    """passed, failed, skipped, xfailed or xpassed: the call phase of a test or subtest."""
    if hasattr(report, "wasxfail"):
        return "xfailed" if report.skipped else "xpassed" if report.passed else "failed"
    return str(report.outcome)


PYTEST_STATUS = {0: "passed", 1: "failed", 5: "error"}


def run_pytest(args: list[str], scratch: Path) -> dict[str, Any]:
    """Run pytest in-process with the given arguments; its junit XML and cache go to the
    scratch folder (not the project, which a check may not see writable)."""
    import pytest

    # pytest-xdist starts local workers with the sys.path it saw when it was imported (in the
    # template, perhaps long ago); give them this run's.
    workermanage = sys.modules.get("xdist.workermanage")
    if isinstance(getattr(workermanage, "_sys_path", None), list):
        workermanage._sys_path[:] = sys.path  # type: ignore[union-attr]
    collector = PytestCollector()
    full_args = [*args, f"--junitxml={scratch / JUNIT}"]
    if "no:cacheprovider" not in args:
        full_args += ["-o", f"cache_dir={scratch / '.pytest_cache'}"]
    try:
        code = int(pytest.main(full_args, plugins=[collector]))
    except BaseException as exc:
        return {
            "status": "error",
            **exception_info(exc),
            "tests": collector.counts,
            "failures": collector.failures,
        }
    status = PYTEST_STATUS.get(code, "error")
    outcome: dict[str, Any] = {
        "status": status,
        "pytest_exit_code": code,
        "tests": collector.counts,
        "failures": collector.failures,
    }
    if code == 5:
        outcome["exc_message"] = "pytest collected no tests"
    return outcome
