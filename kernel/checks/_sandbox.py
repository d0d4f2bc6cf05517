"""Isolated verification: snippets and pytest runs in a forked child carrying the overlay.

    sandbox = Sandbox(project_root)
    result = sandbox.verify("from pkg.mod import f; f(1)", overlay, change_ids=["c3"])
    result.status, result.value_repr          # "passed", "2"
    sandbox.run_tests(["-q", "tests"], overlay, change_ids=["c3"]).tests

Each run is forked from a pre-imported template process (`_template`), applies the overlay
from memory in the child (`_child`), streams the child's output into capped files in the
run's record (`_capture`), and is killed with its whole process group at the timeout. A
crash, a hang or a memory bomb in the child becomes a recorded status; the parent only
reads files and pipes. Records live in `sandbox_runs/<run-id>/` (`_records`).
"""

from __future__ import annotations

import contextlib
import os
import shutil
import sys
import threading
import time
import weakref
from collections.abc import Callable, Iterable, Sequence
from pathlib import Path
from typing import Any

from liveforge.kernel.boundary import _namespaces, _overlay, _processes
from liveforge.kernel.boundary._boundary import BoundaryPolicy, Rulesets
from liveforge.kernel.boundary._policy import CheckSettings, Readable, Scratch, policy_for
from liveforge.kernel.boundary._secrets import Scrubber
from liveforge.kernel.checks import _livefork
from liveforge.kernel.checks._background import later
from liveforge.kernel.checks._hosts import Hosts
from liveforge.kernel.checks._liveruns import LiveRuns
from liveforge.kernel.checks._outcome import build_result
from liveforge.kernel.checks._overlayhook import OverlayModule
from liveforge.kernel.checks._preload import preload_names
from liveforge.kernel.checks._records import (
    RunKind,
    RunResult,
    RunStore,
    RunSummary,
    elapsed_since,
    utc_now,
)
from liveforge.kernel.checks._requests import checked_overlay, child_request
from liveforge.kernel.checks._runfiles import (
    Afterwards,
    keep_junit,
    named_paths,
    remove_scratch,
    write_record,
)
from liveforge.kernel.checks._runner import RunExit, run_child
from liveforge.kernel.checks._template import TemplateProcess
from liveforge.kernel.defaults import KEEP_RUNS, RUNS_FOLDER, TESTS_TIMEOUT, VERIFY_TIMEOUT
from liveforge.kernel.errors import SandboxError

__all__ = ["OverlayModule", "RunResult", "RunSummary", "Sandbox"]


class Sandbox(LiveRuns):
    """Runs verification snippets and pytest in forked children that carry the overlay."""

    def __init__(
        self,
        project_root: str | Path,
        runs_dir: str | Path | None = None,
        keep_runs: int = KEEP_RUNS,
        *,
        preload: Sequence[str] = (),
        output_cap: int | None = None,
        settings: CheckSettings | None = None,
        make_ahead: bool | None = None,
    ) -> None:
        """`preload` names extra modules the template imports ahead of time (besides the
        libraries the parent has loaded); `settings` are the checks' boundary and limits
        (network off, 2 GiB of memory by default); `output_cap` overrides its
        `output_bytes`, the cap of each captured stream's file. With `make_ahead` the
        template makes the next check's namespaces while idle (see `_spare`), and live
        checks join namespaces made ahead (see `_hosts`), as the template's checks do
        where this process may enter them (`checks_join_hosts`); False forks each check
        when it is asked for and has it enter namespaces then (slower; for comparison);
        None follows the settings' `ahead`, which also decides whether the template
        pre-imports the libraries this process has loaded (`preload` is imported either
        way)."""
        self.project_root = Path(project_root).resolve()
        self.store = RunStore(
            Path(runs_dir) if runs_dir else self.project_root / RUNS_FOLDER, keep_runs
        )
        self.settings = settings or CheckSettings()
        self.output_cap = output_cap or self.settings.output_bytes
        self.readable = Readable(self.project_root, self.settings.readable)
        self.scratch = Scratch()
        self.extra_preload = list(preload)
        self.make_ahead = self.settings.ahead if make_ahead is None else make_ahead
        self.template_starts = 0
        self._live_rulesets = Rulesets()
        #: fresh-import checks are forked into namespaces made ahead, as live checks are
        #: (one fork of the template, where entering namespaces of their own takes three)
        self.checks_join_hosts = (
            self.make_ahead and Hosts.available() and _namespaces.may_fork_into()
        )
        # namespaces made ahead for live checks, and for the template's checks where they
        # join them: one for each of a verify's two checks
        self._hosts = Hosts(keep=2 if self.checks_join_hosts else 1)
        self._wants_host = False  # the template holds no host for its next check
        self.last_refresh_reason: str | None = None
        self._slot: list[TemplateProcess | None] = [None]
        self._lock = threading.Lock()
        self._afterwards = Afterwards()  # removes views' folders after results went back
        self._stops = 0  # calls of `stop_running` so far: a run begun before one is stopped
        # A dropped or never-closed sandbox still stops its template (also at exit).
        weakref.finalize(self, _close_slot, self._slot)
        weakref.finalize(self, self._hosts.close)
        weakref.finalize(self, _remove_scratch_root, self._afterwards, self.scratch)

    def verify(
        self,
        code: str,
        overlay: Iterable[OverlayModule] = (),
        change_ids: Sequence[str] = (),
        *,
        timeout: float = VERIFY_TIMEOUT,
        memory_mb: int | None = None,
        network: bool | None = None,
        cpu_seconds: float | None = None,
        save: bool = True,
        started: Callable[[], None] | None = None,
    ) -> RunResult:
        """Run `code` in a child with the overlay; the last expression's repr is the value.

        The child runs inside the check boundary (see `_boundary`) and is killed with
        everything it started after `timeout` seconds. `memory_mb` caps the address space
        the snippet may add to the pre-imported template's, `cpu_seconds` its CPU time,
        `network=True` lets it use TCP; None takes the sandbox's settings. With
        `save=False` the record's `result.json` is left to the caller (`store.save`), who
        adds to the result first (a verify's live check): it is written once. `started` is
        called once the template has the request (so work begun then, a verify's live
        check, does not hold up the check's start), or at once when the template must boot
        first.
        """
        if not isinstance(code, str):
            raise TypeError(f"code must be a str of Python source, not {type(code).__name__}")
        options = {"memory_mb": memory_mb, "network": network, "cpu_seconds": cpu_seconds}
        return self._run(
            "snippet", {"code": code}, overlay, change_ids, timeout, options, save, started
        )

    def run_tests(
        self,
        args: Sequence[str] | None = None,
        overlay: Iterable[OverlayModule] = (),
        change_ids: Sequence[str] = (),
        *,
        timeout: float = TESTS_TIMEOUT,
        memory_mb: int | None = None,
        network: bool | None = None,
        cpu_seconds: float | None = None,
    ) -> RunResult:
        """Run pytest with `args` in the project root, in a child with the overlay and the
        same boundary as `verify` (pytest's cache and temporary files go to the scratch)."""
        if isinstance(args, str):
            raise TypeError("args must be a list of pytest arguments, e.g. ['-q', 'tests']")
        options = {"memory_mb": memory_mb, "network": network, "cpu_seconds": cpu_seconds}
        payload = {"args": [str(a) for a in args or []]}
        return self._run("tests", payload, overlay, change_ids, timeout, options)

    def runs(self) -> list[RunSummary]:
        """The kept run records, newest first."""
        self._afterwards.finish()
        return self.store.rows()

    def run(self, run_id: str) -> RunResult:
        """The stored result of one run."""
        self._afterwards.finish()
        return self.store.load(run_id)

    def stop_running(self) -> list[int]:
        """Kill every check of this sandbox in progress, with what it started — also one
        whose process is yet to start, which is killed as it starts (the front end's
        Ctrl-C); the pids killed (live checks of this process included)."""
        self._stops += 1
        killed = _livefork.stop_all()
        template = self.template_pid
        return killed + (_processes.kill_children(template) if template is not None else [])

    @property
    def template_pid(self) -> int | None:
        """Process id of the current template, if one is running."""
        template = self._template
        return template.process.pid if template is not None and template.alive else None

    @property
    def _template(self) -> TemplateProcess | None:
        return self._slot[0]

    @_template.setter
    def _template(self, template: TemplateProcess | None) -> None:
        self._slot[0] = template

    def close(self) -> None:
        """Stop the template process and the live checks' host maker. The sandbox restarts
        them if used again."""
        self._afterwards.finish()
        self._hosts.close()
        with self._lock:
            if self._template is not None:
                self._template.close()
                self._template = None

    def __enter__(self) -> Sandbox:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def _run(
        self,
        kind: RunKind,
        payload: dict[str, Any],
        overlay: Iterable[OverlayModule],
        change_ids: Sequence[str],
        timeout: float,
        options: dict[str, Any],
        save: bool = True,
        sent: Callable[[], None] | None = None,
    ) -> RunResult:
        stops = self._stops
        once = _Once(sent)
        modules = checked_overlay(overlay)
        if not timeout > 0:
            raise ValueError(f"timeout must be a positive number of seconds, not {timeout!r}")
        for name in ("memory_mb", "cpu_seconds"):
            if options[name] is not None and not options[name] > 0:
                raise ValueError(f"{name} must be a positive number, not {options[name]!r}")
        with self._lock:
            run_id, folder = self.store.create()
            started_at, started = utc_now(), time.monotonic()
            scratch = self.scratch.folder(run_id)
            names = [m.name for m in modules]
            try:
                # a template started now boots while the run's boundary is worked out
                template = self._template_for(names)
                if not template.is_ready:  # its boot takes longer than what waits for it
                    once()
                readable = (
                    *self.readable(),
                    *named_paths(payload.get("args") or [], self.project_root),
                )
                policy = self._policy(run_id, readable, scratch, options)
                request = child_request(run_id, kind, payload, modules, policy, self.project_root)
                template = self._ready(template, names)
                if policy.namespaces and self.checks_join_hosts:
                    self._offer_host(template, wait=False)  # the one after the last is late
            except SandboxError:
                remove_scratch(policy=None, scratch=scratch)
                shutil.rmtree(folder, ignore_errors=True)
                raise
            scrubber = Scrubber.current()
            try:
                ended = self._child(
                    template, request, folder, modules, timeout, scrubber, stops=stops, started=once
                )
            finally:
                keep_junit(scratch, folder, scrubber)
                changed = remove_scratch(policy, scratch, self._afterwards)
            if ended.wants_host and self.checks_join_hosts:
                self._wants_host = True
                later(_offer_host, weakref.ref(self), template)  # a dropped sandbox still goes
            fields = {
                "run_id": run_id,
                "kind": kind,
                "started_at": started_at,
                "duration": elapsed_since(started),
                "code": payload.get("code"),
                "args": payload.get("args"),
                "change_ids": list(change_ids),
                "overlay_modules": [m.name for m in modules],
                "record_path": str(folder),
            }
            result = build_result(
                fields, ended, policy=policy, timeout=timeout, scrubber=scrubber, changed=changed
            )
            if save:
                self.store.save(result)
            self.store.prune(protect=run_id)
            return result

    def _policy(
        self, run_id: str, readable: tuple[str, ...], scratch: Path, options: dict[str, Any]
    ) -> BoundaryPolicy:
        """The boundary of one run, its copy-on-write view's folder made where it has one."""
        policy = policy_for(
            self.settings,
            readable,
            scratch,
            project=self.project_root,
            view=self.scratch.view(run_id),
            namespaces_reason=self.scratch.namespaces_reason(),
            **options,
        )
        copy_on_write = policy.copy_on_write()
        if copy_on_write is not None:
            _overlay.View.beside(copy_on_write.root, policy.view or "")
        if policy.namespaces:  # the check's own folder, also to tools that check its owner
            os.chown(scratch, *_namespaces.check_ids())
        return policy

    def _child(
        self,
        template: TemplateProcess,
        request: dict[str, Any],
        folder: Path,
        modules: list[OverlayModule],
        timeout: float,
        scrubber: Scrubber,
        *,
        stops: int,
        started: Callable[[], None],
    ) -> RunExit:
        """Run the request in a child of `template`; a lost template is replaced next time.
        `stops` is `_stops` when the run began: a stop since kills the child as it starts;
        `started` is called once the template has the request."""

        def while_running() -> None:
            started()
            write_record(folder, request, modules, scrubber)

        try:
            ended = run_child(
                template,
                request,
                folder,
                timeout=timeout,
                output_cap=self.output_cap,
                while_running=while_running,
                scrubber=scrubber,
                stopped=lambda: self._stops != stops,
            )
        except BaseException:  # interrupted: the template may still be reaping the child
            template.close()
            self._template = None
            raise
        if ended.template_lost:
            template.close()
            self._template = None
        return ended

    def _offer_host(self, template: TemplateProcess, wait: bool = True) -> None:
        """Give `template` namespaces made ahead for its next check if it still wants
        them (it says so with each check's pid; a new template wants them), and have the
        next made. Called after a check, in the background (the maker's work does not
        compete with it; `wait` waits for a host being made), and, without waiting, before
        a check (with `_lock` held) when that offer has not come yet."""
        if not self._wants_host:
            return
        host = self._hosts.take(wait=wait, starting=wait)
        if host is None:
            return
        try:
            with self._lock if wait else contextlib.nullcontext():
                if not self._wants_host:  # offered meanwhile, before a check
                    self._hosts.put_back(host)
                    host = None
                elif self._template is template and template.alive:
                    template.offer_host(host.fds, host.proc_note)
                    self._wants_host = False
                    host.close()  # the template's to end now
                    host = None
        except OSError:
            pass  # the template is gone: the next check finds out
        finally:
            if host is not None:
                host.end()
            later(self._hosts.refill)

    def _template_for(self, overlay_names: list[str]) -> TemplateProcess:
        """The current template unless it is stale for this overlay, else one started now
        (`_ready` waits for it)."""
        if self._template is not None:
            reason = self._template.stale_reason(overlay_names)
            if reason is None:
                return self._template
            self.last_refresh_reason = reason
            self._template.close()
            self._template = None
        preload = preload_names(self.project_root, overlay_names) if self.settings.ahead else []
        preload += [name for name in self.extra_preload if name not in overlay_names]
        self._template = self._start_template(preload)
        return self._template

    def _ready(self, template: TemplateProcess, overlay_names: list[str]) -> TemplateProcess:
        """`template` once it is ready, if it fits the overlay; where a pre-imported
        library started a thread or pulled in an overlay module, a template with nothing
        pre-imported instead."""
        if template.is_ready:  # in use already: `_template_for` found it fit
            return template
        try:
            template.booted()
        except OSError as exc:
            self._template = None
            raise SandboxError(
                f"could not start the sandbox template process: {exc}. "
                "Check that the interpreter can start in the project root."
            ) from exc
        if template.threads <= 1 and template.stale_reason(overlay_names) is None:
            return template
        template.close()
        self._template = None
        if not template.preload:
            raise SandboxError(
                "the overlay replaces a module the sandbox itself needs ("
                + ", ".join(overlay_names)
                + "); such modules can only be checked in process"
            )
        self._template = self._start_template([])
        return self._ready(self._template, overlay_names)

    def _start_template(self, preload: list[str]) -> TemplateProcess:
        """A template importing `preload`, started (one started ahead for this project,
        where it fits); `_ready` waits for it."""
        try:
            template = TemplateProcess.take_ahead(
                self.project_root, preload, self.make_ahead
            ) or TemplateProcess(
                cwd=self.project_root,
                sys_path=list(sys.path),
                preload=preload,
                make_ahead=self.make_ahead,
                hosts=self.checks_join_hosts,
                wait=False,
            )
        except OSError as exc:
            raise SandboxError(
                f"could not start the sandbox template process: {exc}. "
                "Check that the interpreter can start in the project root."
            ) from exc
        self.template_starts += 1
        self._wants_host = True  # a new template holds none
        return template


class _Once:
    """`call` (if any) the first time this is called, never again."""

    def __init__(self, call: Callable[[], None] | None) -> None:
        self._call = call

    def __call__(self) -> None:
        call, self._call = self._call, None
        if call is not None:
            call()


def _offer_host(sandbox: weakref.ref[Sandbox], template: TemplateProcess) -> None:
    """`Sandbox._offer_host`, if the sandbox is still there."""
    alive = sandbox()
    if alive is not None:
        alive._offer_host(template)


def _remove_scratch_root(afterwards: Afterwards, scratch: Scratch) -> None:
    afterwards.finish()
    scratch.remove()


def _close_slot(slot: list[TemplateProcess | None]) -> None:
    template, slot[0] = slot[0], None
    if template is not None:
        template.close()
