"""The Runtime's checks: sandboxed snippets and test runs that carry the overlay.

The overlay is every unpersisted module (virtual ones included). A passing run marks the
changes it carried as verified, which is what `persist` asks for.
"""

from __future__ import annotations

import contextlib
import functools
import re
import sys
from collections.abc import Iterable, Iterator, Sequence
from typing import Any

from liveforge.kernel.boundary._policy import CheckSettings
from liveforge.kernel.boundary._secrets import Scrubber
from liveforge.kernel.checks import _livefork
from liveforge.kernel.checks._alongside import LiveAlongside
from liveforge.kernel.checks._overlayhook import OverlayModule
from liveforge.kernel.checks._probes import Probe
from liveforge.kernel.checks._records import RunResult, RunSummary
from liveforge.kernel.checks._sandbox import Sandbox
from liveforge.kernel.defaults import TESTS_TIMEOUT, VERIFY_TIMEOUT
from liveforge.kernel.errors import SandboxError
from liveforge.kernel.history._changes import Change, ChangeStatus, History
from liveforge.kernel.live._holders import describe_each
from liveforge.kernel.live._revert import MISSING, Revert
from liveforge.kernel.runtime._modules import Modules
from liveforge.kernel.source._ondisk import differs_from_disk, resync
from liveforge.kernel.source._sources import ModuleRecord


class Checks:
    """The runtime's checks: its sandbox (started on first use) and the runs it made."""

    def __init__(
        self, modules: Modules, log: History, *, keep_runs: int, settings: CheckSettings
    ) -> None:
        self.project_root = modules.project_root
        self.registry = modules.registry
        self.code = modules.code
        self.log = log
        self.keep_runs = keep_runs
        self.settings = settings
        self._sandbox: Sandbox | None = None

    @property
    def sandbox(self) -> Sandbox:
        """The sandbox (its template process starts on first use)."""
        if self._sandbox is None:
            self._sandbox = Sandbox(
                self.project_root, keep_runs=self.keep_runs, settings=self.settings
            )
        return self._sandbox

    @property
    def started(self) -> Sandbox | None:
        """The sandbox if it has started (stopping its runs must not start one)."""
        return self._sandbox

    def overlay(self) -> list[OverlayModule]:
        """Every module whose running source is not what its file holds now (re-read when
        it changed on disk), as the sandbox carries it."""
        return [
            OverlayModule(r.name, r.source, r.filename, is_package=r.is_package, virtual=r.virtual)
            for r in self._unlike_disk()
        ]

    def _unlike_disk(self) -> list[ModuleRecord]:
        records = self.registry.records()
        for record in records:
            resync(record)
        return [r for r in records if differs_from_disk(r)]

    def _carried(self) -> list[Change]:
        dirty = {r.name for r in self._unlike_disk()}
        return [
            c
            for c in self.log.live()
            if c.module in dirty and c.status is not ChangeStatus.PERSISTED
        ]

    def verify(
        self,
        code: str,
        *,
        timeout: float = VERIFY_TIMEOUT,
        memory_mb: int | None = None,
        live: bool | None = None,
        network: bool | None = None,
    ) -> RunResult:
        """Run a snippet in a sandboxed child that imports the overlay fresh, inside the check
        boundary (writes only to its scratch folder; TCP only with `network=True` or the
        `sandbox.network` setting) and, where the platform can fork (`live` None: by default;
        True: required; False: skipped), in a fork of this live process too. When the two
        disagree the result is not ok, says so (`divergent`), and the changes it carried are
        marked divergent."""
        if live and not _livefork.available():
            raise SandboxError(
                "a live check needs os.fork, which this platform lacks; verify with "
                "live=False (a fresh import only)."
            )
        carried = self._carried()
        overlay = self.overlay()
        live_check: list[LiveAlongside] = []
        start_live = None
        if live is not False and _livefork.available():
            # the live check runs while the fresh-import one does (both are mostly waiting
            # for other processes); it is forked once the template has the fresh-import
            # check's request (forking this big process holds up this thread meanwhile)
            # the old objects changes replaced, which something still holds, are probed too
            probes = stale_probes(carried)
            options = {
                "timeout": timeout,
                "memory_mb": memory_mb,
                "network": network,
                "probes": probes,
            }

            def start_live() -> None:
                live_check.append(LiveAlongside(self.sandbox, code, options))

        try:
            with self._machinery_guard():
                # with a live check, the record's result is written once, with it (below)
                result = self.sandbox.verify(
                    code,
                    overlay,
                    [c.id for c in carried],
                    timeout=timeout,
                    memory_mb=memory_mb,
                    network=network,
                    save=start_live is None,
                    started=start_live,
                )
        except BaseException:
            for started in live_check:
                started.cancel()
            raise
        alongside = live_check[0] if live_check else None  # started once the template had it
        # a fresh-import run that was stopped (timeout, a kill, Ctrl-C) has nothing to compare
        # against: the live run is stopped rather than waited for
        stopped = result.status in ("timed_out", "crashed", "killed_memory")
        if alongside is not None:
            try:
                if stopped:
                    alongside.cancel()
                else:
                    result = self._compare_live(result, alongside.result())
            finally:
                self.sandbox.store.save(result)
        self._mark(result, carried)
        return result

    def _compare_live(self, result: RunResult, checked: _livefork.LiveCheck) -> RunResult:
        """Add the live-process run (inside the same boundary) to `result`, and whether the
        two disagree."""
        checked = _scrubbed(checked)
        divergent = _disagree(result, checked)
        update: dict[str, object] = {"live": checked, "divergent": divergent}
        if divergent:
            update["ok"] = False
            fresh = "" if result.status == "passed" else f" Fresh import: {result.message}"
            update["message"] = (
                f"the live process and a fresh import disagree: {_difference(result, checked)}."
                + fresh.rstrip(".")
                + ("." if fresh else "")
            )
        return result.model_copy(update=update)

    def run_tests(
        self,
        args: Sequence[str] | None = None,
        *,
        timeout: float = TESTS_TIMEOUT,
        memory_mb: int | None = None,
        network: bool | None = None,
    ) -> RunResult:
        """Run the project's own pytest suite (or `args`) in a sandbox with the overlay, inside
        the same boundary as `verify`."""
        carried = self._carried()
        with self._machinery_guard():
            result = self.sandbox.run_tests(
                args,
                self.overlay(),
                [c.id for c in carried],
                timeout=timeout,
                memory_mb=memory_mb,
                network=network,
            )
        self._mark(result, carried)
        return result

    @contextlib.contextmanager
    def _machinery_guard(self) -> Iterator[None]:
        """A check that fails to run while modules outside the project's code are patched
        in memory (liveforge's own process and its checks use the standard library too)
        says so, naming them, instead of failing with a bare fault of its machinery."""
        try:
            yield
        except Exception as exc:
            outside = [
                r
                for r in self.registry.dirty()
                if not r.virtual and self.code.reason(r.filename) is not None
            ]
            if not outside:
                raise
            changes = [c for c in self.log.live() if c.module in {r.name for r in outside}]
            named = ", ".join(f"{c.id} ({c.target})" for c in changes) or ", ".join(
                r.name for r in outside
            )
            modules = ", ".join(r.name for r in outside)
            raise SandboxError(
                f"the check could not run: {type(exc).__name__}: {str(exc).rstrip('.')}. "
                "The patched module "
                f"{modules} is not the project's own code, and liveforge's own machinery (this "
                f"process, the sandbox template, the check's child) uses it: the patch broke "
                f"the check itself ({named}). Roll it back to check other changes."
            ) from exc

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
        for change in carried:
            if result.divergent:
                change.divergent_in = result.run_id
            elif result.live is not None and result.ok:
                change.divergent_in = None  # both agree now
        if not result.ok:
            return
        for change in carried:
            change.verified_by.append(result.run_id)
            if change.status is ChangeStatus.APPLIED:
                change.status = ChangeStatus.VERIFIED


def _disagree(fresh: RunResult, live: _livefork.LiveCheck) -> bool:
    """True when the two runs of one snippet ended differently (outcome, value or error)."""
    if fresh.status != live.status:
        return True
    if fresh.ok:
        return _ADDRESS.sub("", fresh.value_repr or "") != _ADDRESS.sub("", live.value_repr or "")
    return fresh.exc_type != live.exc_type


def _difference(fresh: RunResult, live: _livefork.LiveCheck) -> str:
    """What differs between the two runs, in words: the outcome, else the value, else the
    exception."""
    if fresh.status != live.status:
        said = f" ({live.exc_message})" if live.exc_type == "StaleReferences" else ""
        return f"fresh import {fresh.status}, live process {live.status}{said}"
    if fresh.ok:
        return (
            f"both passed, with different values: fresh import {_short(fresh.value_repr)}, "
            f"live process {_short(live.value_repr)}"
        )
    return (
        f"both {fresh.status}, with different errors: fresh import {fresh.exc_type}, "
        f"live process {live.exc_type}"
    )


def _short(value: str | None, limit: int = 80) -> str:
    text = "no value" if value is None else value
    return text if len(text) <= limit else text[: limit - 3] + "..."


# Object addresses differ between any two processes; they are no disagreement.
_ADDRESS = re.compile(r" at 0x[0-9a-fA-F]+")


def _scrubbed(checked: _livefork.LiveCheck) -> _livefork.LiveCheck:
    """The live run with secret values scrubbed as the sandbox's run records are (so the
    two compare alike and no key reaches the record)."""
    scrubber = Scrubber.current()
    if not scrubber:
        return checked
    fields = ("value_repr", "exc_message", "traceback", "stdout", "stderr")
    update = {
        name: scrubber.text(text)
        for name in fields
        if isinstance(text := getattr(checked, name), str)
    }
    return checked.model_copy(update=update)


def stale_probes(changes: Iterable[Any]) -> list[Probe]:
    """The probes of `changes` (live `Change`s) whose names still hold what the change
    bound, and whose old objects something besides liveforge's records still holds (one
    search of the heap, only when a change left such a name)."""
    found: list[tuple[str, str, Any]] = []
    records: list[Any] = []
    for change in changes:
        revert = getattr(change, "_revert", None)
        module = sys.modules.get(change.module)
        if revert is None or module is None:
            continue
        records += [*revert.bindings.values(), *_held_by_steps(revert.log.steps())]
        for name in revert.held:
            before, after = revert.bindings.get(name, (MISSING, MISSING))
            if before is not MISSING and vars(module).get(name, MISSING) is after:
                found.append((change.module, name, before))
    if not found:
        return []
    held = describe_each([old for _, _, old in found], [*records, *found, found])
    return [
        Probe(module, name, old, where)
        for (module, name, old), where in zip(found, held, strict=True)
        if where
    ]


def _held_by_steps(steps: list[Any]) -> list[Any]:
    """What the undo steps of a change hold objects through: their argument tuples and
    dicts, closure cells (liveforge's records, not references of the program)."""
    held: list[Any] = []
    for step in steps:
        held.append(step)
        if isinstance(step, functools.partial):
            held += [step.args, step.keywords]
        if isinstance(step, Revert):  # the importers' bindings a change re-bound
            held += [*step.bindings.values(), *_held_by_steps(step.log.steps())]
        held += getattr(step, "__closure__", None) or ()
    return held
