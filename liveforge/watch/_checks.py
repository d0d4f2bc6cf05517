"""`liveforge watch --verify/--test`: the checks of a save, run in the background.

A save's line is said as soon as the save applied; its checks then run in a thread of their
own, so a long test suite never holds up the next save. A newer save supersedes the checks
of an older one: a check still running is stopped (its sandbox child killed), a check not
started yet is dropped, and a line says which. Each finished check is one line naming the
changes it checked and its outcome — a snippet's value, a failed run's error, the failing
tests with the first line of their assertion.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from liveforge.kernel import Change, Runtime
    from liveforge.kernel.checks._records import RunResult

__all__ = ["BackgroundChecks", "check_lines"]

MAX_FAILURES = 5
"""Failing tests named one per line after a test run's line; the rest are counted."""


@dataclass
class _Job:
    number: int
    changes: list[Change]

    @property
    def label(self) -> str:
        return ",".join(c.id for c in self.changes)


class BackgroundChecks:
    """Runs `verify` (code) and `test` (pytest arguments) after each submitted save, one job
    at a time, in a daemon thread; each line goes to `report`."""

    def __init__(
        self,
        runtime: Runtime,
        report: Callable[[str], None],
        *,
        verify: str | None,
        test: list[str] | None,
        timeout: float,
    ) -> None:
        self.runtime, self.report = runtime, report
        self.verify, self.test, self.timeout = verify, test, timeout
        self._wake = threading.Condition()
        self._waiting: _Job | None = None
        self._running: _Job | None = None
        self._latest = 0
        self._closed = False
        self._thread: threading.Thread | None = None

    @property
    def enabled(self) -> bool:
        """True when there is something to check after a save."""
        return self.verify is not None or self.test is not None

    def submit(self, changes: Sequence[Change]) -> None:
        """Check the state after `changes` (one save's); older checks are superseded."""
        if not self.enabled or not changes:
            return
        with self._wake:
            self._latest += 1
            job = _Job(self._latest, list(changes))
            older = [j for j in (self._waiting, self._running) if j is not None]
            running = self._running
            if running is not None:
                # under the lock: the new job's run cannot have begun, so only the old dies
                self.runtime.sandbox.stop_running()
            self._waiting = job
            self._wake.notify()
        for old in older:
            verb = "stopped" if old is running else "skipped"
            self.report(f"  checks of {old.label} {verb}: superseded by the save {job.label}")
        if self._thread is None:
            self._thread = threading.Thread(target=self._loop, name="liveforge-checks", daemon=True)
            self._thread.start()

    def close(self) -> None:
        """Stop a running check and the thread."""
        with self._wake:
            self._closed = True
            if self._running is not None:
                self.runtime.sandbox.stop_running()
            self._wake.notify()
        if self._thread is not None:
            self._thread.join(10)

    def _loop(self) -> None:
        while True:
            with self._wake:
                while self._waiting is None and not self._closed:
                    self._wake.wait()
                if self._closed:
                    return
                job: _Job | None = self._waiting
                if job is None:
                    continue
                self._waiting, self._running = None, job
            try:
                self._check(job)
            except Exception as exc:  # a fault here must never take the program down
                self.report(
                    f"  checks of {job.label}: internal error ({type(exc).__name__}: {exc})"
                )
            finally:
                with self._wake:
                    self._running = None

    def _current(self, job: _Job) -> bool:
        with self._wake:
            return job.number == self._latest and not self._closed

    def _check(self, job: _Job) -> None:
        rt = self.runtime
        if self.verify is not None and self._current(job):
            result = rt.verify(self.verify, timeout=self.timeout)
            if self._current(job):  # a superseded run was stopped and already said so
                for line in check_lines("verify", job.label, result):
                    self.report(line)
        if self.test is not None and self._current(job):
            result = rt.run_tests(self.test, timeout=self.timeout)
            if self._current(job):
                for line in check_lines("test", job.label, result):
                    self.report(line)


def check_lines(kind: str, label: str, result: RunResult) -> list[str]:
    """A check's outcome as the watch says it: "  verify c3: passed in 0.4s, value 6" and,
    for a divergent snippet or failing tests, the lines that say what differs or failed."""
    head = f"  {kind} {label}: "
    took = f"in {result.duration:.1f}s"
    record = f"(details: liveforge runs {result.run_id})"
    if kind == "verify":
        if result.divergent:
            return [
                f"{head}divergent {took}: {_clip(result.message, 160)}",
                _divergence(result, label),
            ]
        if result.ok:
            value = result.value_repr
            return [
                f"{head}passed {took}" + (f", value {_clip(value)}" if value is not None else "")
            ]
        return [f"{head}{result.status} {took}: {_clip(result.message, 160)} {record}"]
    counts = result.tests.line() if result.tests is not None else result.status
    if result.ok:
        return [f"{head}{counts} {took}"]
    if not result.failures:
        return [f"{head}{counts} {took}: {_clip(result.message, 160)} {record}"]
    lines = [f"{head}{counts} {took} {record}"]
    for failure in result.failures[:MAX_FAILURES]:
        first = next((ln.strip() for ln in failure.message.splitlines() if ln.strip()), "")
        where = "" if failure.when == "call" else f" ({failure.when})"
        lines.append(f"    FAIL {failure.nodeid}{where}: {_clip(first, 160)}")
    if len(result.failures) > MAX_FAILURES:
        lines.append(f"    ... and {len(result.failures) - MAX_FAILURES} more")
    return lines


def _divergence(result: RunResult, label: str) -> str:
    """The line for a `verify` whose runs in the program and in a fresh import disagreed
    after the changes `label` (and the ones the run carried)."""
    ids = ",".join(dict.fromkeys([*label.split(","), *result.change_ids]))
    live = result.live
    running = (live.value_repr or live.exc_type or live.status) if live else "?"
    fresh = result.value_repr or result.exc_type or result.status
    return (
        f"  DIVERGENT ({ids}): the running program gives {_clip(running)}, a fresh import of "
        f"the saved files {_clip(fresh)} (run {result.run_id}): state made before the save, "
        "or a statement not re-run; restart the program to run the files as saved"
    )


def _clip(text: str, limit: int = 60) -> str:
    line = " ".join(text.split())
    return line if len(line) <= limit else line[: limit - 1] + "…"
