"""The Runtime's checks: sandboxed snippets and test runs that carry the overlay.

The overlay is every unpersisted module (virtual ones included). A passing run marks the
changes it carried as verified, which is what `persist` asks for.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

from liveforge.kernel._changes import Change, ChangeStatus, History
from liveforge.kernel._child import OverlayModule
from liveforge.kernel._records import RunResult, RunSummary
from liveforge.kernel._sandbox import Sandbox
from liveforge.kernel._sources import ModuleRegistry
from liveforge.kernel.defaults import TESTS_TIMEOUT, VERIFY_TIMEOUT


class Checks:
    """Mixin of `Runtime`: `verify`, `run_tests`, `runs`, `run`, `overlay`."""

    project_root: Path
    registry: ModuleRegistry
    _history: History
    _sandbox: Sandbox | None
    keep_runs: int

    @property
    def sandbox(self) -> Sandbox:
        """The sandbox (its template process starts on first use)."""
        if self._sandbox is None:
            self._sandbox = Sandbox(self.project_root, keep_runs=self.keep_runs)
        return self._sandbox

    def overlay(self) -> list[OverlayModule]:
        """Every unpersisted module as the sandbox carries it."""
        return [
            OverlayModule(r.name, r.source, r.filename, is_package=r.is_package, virtual=r.virtual)
            for r in self.registry.dirty()
        ]

    def _carried(self) -> list[Change]:
        dirty = {r.name for r in self.registry.dirty()}
        return [
            c
            for c in self._history.live()
            if c.module in dirty and c.status is not ChangeStatus.PERSISTED
        ]

    def verify(
        self, code: str, *, timeout: float = VERIFY_TIMEOUT, memory_mb: int | None = None
    ) -> RunResult:
        """Run a snippet in a sandboxed child that carries the overlay.

        Example::

            result = rt.verify("from pkg.mod import f\\nassert f(1) == 2")
            result.ok, result.status, result.summary()
        """
        carried = self._carried()
        result = self.sandbox.verify(
            code, self.overlay(), [c.id for c in carried], timeout=timeout, memory_mb=memory_mb
        )
        self._mark(result, carried)
        return result

    def run_tests(
        self,
        args: Sequence[str] | None = None,
        *,
        timeout: float = TESTS_TIMEOUT,
        memory_mb: int | None = None,
    ) -> RunResult:
        """Run the project's own pytest suite (or `args`) in a sandbox with the overlay."""
        carried = self._carried()
        result = self.sandbox.run_tests(
            args, self.overlay(), [c.id for c in carried], timeout=timeout, memory_mb=memory_mb
        )
        self._mark(result, carried)
        return result

    def runs(self) -> list[RunSummary]:
        """Recorded sandbox runs, newest first."""
        return self.sandbox.runs()

    def run(self, run_id: str) -> RunResult:
        """One recorded sandbox run."""
        return self.sandbox.run(run_id)

    def close(self) -> None:
        """Stop background processes (the sandbox template)."""
        if self._sandbox is not None:
            self._sandbox.close()

    @staticmethod
    def _mark(result: RunResult, carried: list[Change]) -> None:
        if not result.ok:
            return
        for change in carried:
            change.verified_by.append(result.run_id)
            if change.status is ChangeStatus.APPLIED:
                change.status = ChangeStatus.VERIFIED
