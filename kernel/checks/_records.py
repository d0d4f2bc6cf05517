"""Sandbox run results and their records under `sandbox_runs/<run-id>/`.

The folder is created with its own `.gitignore` (`*`), so `git status` stays clean, and each
record is readable by its owner only. A record folder holds what ran (`request.json`,
`code.py` or `args.json`), the overlay it carried (`overlay.json` + `overlay/<module>.py`),
the captured `stdout.txt` / `stderr.txt` (capped), pytest's `junit.xml` and the final
`result.json`, which also says what the check's boundary was (`RunResult.boundary`). Secret
values are scrubbed from all of it. Run ids sort by creation time; `RunStore.prune` keeps
the newest `keep` records.
"""

from __future__ import annotations

import os
import re
import secrets
import shutil
import time
from datetime import UTC, datetime
from pathlib import Path
from typing import Literal

from pydantic import BaseModel, Field

from liveforge.kernel.boundary._isolation import Boundary
from liveforge.kernel.checks._background import later
from liveforge.kernel.checks._livefork import LiveCheck
from liveforge.kernel.defaults import KEEP_RUNS
from liveforge.kernel.errors import SandboxError

RunKind = Literal["snippet", "tests"]
RunStatus = Literal["passed", "failed", "error", "timed_out", "crashed", "killed_memory"]
RUN_ID = re.compile(r"^\d{8}-\d{6}-\d{6}-[0-9a-f]{6}$")
RESULT_FILE = "result.json"
TRASH = ".removing-"
UNFINISHED_GRACE = 3600.0  # seconds a record without result.json counts as still running


class TestFailure(BaseModel):
    """One failed or erroring pytest item."""

    __test__ = False
    nodeid: str
    when: str = Field(description="collect, setup, call or teardown")
    message: str


class TestCounts(BaseModel):
    """Outcome counts of a pytest run."""

    __test__ = False
    passed: int = 0
    failed: int = 0
    errors: int = 0
    skipped: int = 0
    xfailed: int = 0
    xpassed: int = 0
    subtests_passed: int = 0
    subtests_failed: int = 0
    subtests_skipped: int = 0
    subtests_xfailed: int = 0
    subtests_xpassed: int = 0

    def line(self) -> str:
        """Every non-zero count, tests and subtests apart: ``3 passed, 1 subtests failed``."""
        parts = [
            f"{count} {name.replace('_', ' ')}"
            for name, count in self.model_dump().items()
            if count
        ]
        return ", ".join(parts) or "no test outcomes"

    def pytest_line(self) -> str:
        """The counts as pytest's own summary line shows them (``pytest -v``, without the
        time): subtest failures, skips and xfails are folded into the test counts there."""
        merged = {
            "failed": self.failed + self.subtests_failed,
            "passed": self.passed,
            "skipped": self.skipped + self.subtests_skipped,
            "xfailed": self.xfailed + self.subtests_xfailed,
            "xpassed": self.xpassed + self.subtests_xpassed,
            "error": self.errors,
            "subtests passed": self.subtests_passed,
        }
        parts = [f"{n} {_plural(key, n)}" for key, n in merged.items() if n]
        return ", ".join(parts) or "no tests ran"


def _plural(word: str, count: int) -> str:
    return word + "s" if word == "error" and count != 1 else word


class RunSummary(BaseModel):
    """One row of `Sandbox.runs()`."""

    run_id: str
    kind: RunKind
    status: RunStatus
    ok: bool
    started_at: str
    duration: float
    change_ids: list[str]
    headline: str


class RunResult(BaseModel):
    """The outcome of one sandbox run (`verify` or `run_tests`)."""

    run_id: str
    kind: RunKind
    status: RunStatus
    ok: bool
    message: str = Field(description="one line saying what happened")
    started_at: str
    duration: float
    code: str | None = None
    args: list[str] | None = None
    value_repr: str | None = Field(None, description="repr of the snippet's last expression")
    stdout: str = ""
    stderr: str = ""
    exc_type: str | None = None
    exc_message: str | None = None
    traceback: str | None = None
    exit_code: int | None = Field(
        None, description="the check process's exit code; for a test run, pytest's"
    )
    signal: str | None = None
    tests: TestCounts | None = None
    failures: list[TestFailure] = Field(default_factory=list)
    change_ids: list[str] = Field(default_factory=list)
    overlay_modules: list[str] = Field(default_factory=list)
    record_path: str = ""
    live: LiveCheck | None = Field(
        None, description="the same snippet in a fork of the live process"
    )
    divergent: bool = Field(False, description="the live process and a fresh import disagreed")
    boundary: Boundary | None = None

    def headline(self) -> str:
        """`<kind> <status> in <duration>: <message>` on one line."""
        return f"{self.kind} {self.status} in {self.duration:.3f}s: {self.message}"

    def summary(self, max_lines: int = 20) -> str:
        """Compact text for a model or a person: status, value, counts, failures, output."""
        lines = [f"run {self.run_id}: {self.headline()}"]
        if self.change_ids:
            lines.append("changes: " + ", ".join(self.change_ids))
        if self.value_repr is not None:
            lines.append(f"value: {_head(self.value_repr, 1)}")
        if self.live is not None:
            lines.append(self.live.headline())
        if self.divergent:
            lines.append(
                "DIVERGENT: the live process and a fresh import of the source disagree; the "
                "changes are marked divergent and persist refuses them unless forced"
            )
        if self.tests is not None:
            lines.append(f"tests: {self.tests.line()}")
            lines += [f"  FAIL {f.nodeid} ({f.when}): {f.message}" for f in self.failures[:10]]
            if len(self.failures) > 10:
                lines.append(f"  ... {len(self.failures) - 10} more failures in the record")
        if self.traceback and self.kind == "snippet":
            lines.append(_tail(self.traceback, max_lines))
        for name, text in (("stdout", self.stdout), ("stderr", self.stderr)):
            if text.strip():
                lines.append(f"{name}:\n{_tail(text, max_lines)}")
        if self.boundary is not None:
            lines.append(f"boundary: {self.boundary.line()}")
        lines.append(f"record: {self.record_path}")
        return "\n".join(lines)

    def row(self) -> RunSummary:
        """This result as a listing row."""
        return RunSummary(
            run_id=self.run_id,
            kind=self.kind,
            status=self.status,
            ok=self.ok,
            started_at=self.started_at,
            duration=self.duration,
            change_ids=self.change_ids,
            headline=self.headline(),
        )


def _head(text: str, count: int) -> str:
    lines = text.splitlines()
    extra = f"\n... ({len(lines) - count} more lines)" if len(lines) > count else ""
    return "\n".join(lines[:count]) + extra


def _tail(text: str, count: int) -> str:
    lines = text.rstrip("\n").splitlines()
    if len(lines) <= count:
        return "\n".join(lines)
    return f"... ({len(lines) - count} earlier lines)\n" + "\n".join(lines[-count:])


class RunStore:
    """The folder of run records, with creation, loading and retention."""

    def __init__(self, runs_dir: Path, keep: int = KEEP_RUNS) -> None:
        if keep < 1:
            raise ValueError(f"keep must be at least 1 (got {keep}); it is how many runs to keep")
        self.runs_dir = Path(runs_dir)
        self.keep = keep

    def create(self) -> tuple[str, Path]:
        """A new, empty record folder (its owner's only) and its run id."""
        self.runs_dir.mkdir(parents=True, exist_ok=True)
        ignore = self.runs_dir / ".gitignore"
        if not ignore.exists():
            ignore.write_text("*\n", encoding="utf-8")
        while True:
            now = datetime.now(UTC)
            run_id = now.strftime("%Y%m%d-%H%M%S-%f-") + secrets.token_hex(3)
            folder = self.runs_dir / run_id
            try:
                folder.mkdir(mode=0o700)
            except FileExistsError:
                continue
            return run_id, folder

    def save(self, result: RunResult) -> None:
        """Write `result.json` atomically into the run's folder."""
        folder = self.runs_dir / result.run_id
        temporary = folder / (RESULT_FILE + ".tmp")
        temporary.write_text(result.model_dump_json(indent=1), encoding="utf-8")
        os.replace(temporary, folder / RESULT_FILE)

    def run_ids(self) -> list[str]:
        """Ids of the stored records, oldest first."""
        if not self.runs_dir.is_dir():
            return []
        return sorted(name for name in os.listdir(self.runs_dir) if RUN_ID.match(name))

    def load(self, run_id: str) -> RunResult:
        """The stored result of `run_id`."""
        if not RUN_ID.match(run_id):
            raise SandboxError(f"{run_id!r} is not a run id; list the runs with rt.runs()")
        path = self.runs_dir / run_id / RESULT_FILE
        try:
            return RunResult.model_validate_json(path.read_text(encoding="utf-8"))
        except FileNotFoundError:
            raise SandboxError(
                f"run {run_id!r} has no record in {self.runs_dir} (it may have "
                "been removed by retention); list the runs with rt.runs()"
            ) from None

    def rows(self) -> list[RunSummary]:
        """Listing rows of the finished runs, newest first."""
        rows = []
        for run_id in reversed(self.run_ids()):
            try:
                rows.append(self.load(run_id).row())
            except (SandboxError, ValueError):
                continue  # a run still in progress, or an unreadable record
        return rows

    def prune(self, protect: str = "") -> list[str]:
        """Remove all but the newest `keep` records; returns the removed run ids.

        A removed record is renamed out of sight at once and deleted by a background thread,
        so retention does not slow the run that triggered it.
        """
        ids = self.run_ids()
        removed = [
            run_id
            for run_id in ids[: max(0, len(ids) - self.keep)]
            if run_id != protect and not self._in_progress(run_id)
        ]
        doomed = (
            [self.runs_dir / name for name in os.listdir(self.runs_dir) if name.startswith(TRASH)]
            if removed
            else []
        )
        for run_id in removed:
            target = self.runs_dir / f"{TRASH}{run_id}"
            try:
                os.rename(self.runs_dir / run_id, target)
            except OSError:
                continue
            doomed.append(target)
        if doomed:  # handed to the background thread: starting one per run costs more
            later(_delete, doomed)
        return removed

    def _in_progress(self, run_id: str) -> bool:
        """A run (perhaps of another process) that has no result yet and started recently."""
        folder = self.runs_dir / run_id
        if (folder / RESULT_FILE).exists():
            return False
        try:
            return time.time() - folder.stat().st_mtime < UNFINISHED_GRACE
        except FileNotFoundError:
            return False


def _delete(folders: list[Path]) -> None:
    for folder in folders:
        shutil.rmtree(folder, ignore_errors=True)


def utc_now() -> str:
    """ISO-8601 UTC timestamp with milliseconds."""
    return datetime.now(UTC).isoformat(timespec="milliseconds")


def elapsed_since(started: float) -> float:
    """Seconds since a `time.monotonic()` reading, rounded to microseconds."""
    return round(time.monotonic() - started, 6)
