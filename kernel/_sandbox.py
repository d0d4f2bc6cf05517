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

import json
import os
import shutil
import signal
import sys
import threading
import time
import weakref
from collections.abc import Iterable, Sequence
from dataclasses import asdict
from pathlib import Path
from typing import Any

from liveforge.kernel._child import OVERLAY_ENV, OVERLAY_MANIFEST, OverlayModule, save_overlay
from liveforge.kernel._preload import preload_names
from liveforge.kernel._records import (
    RUNS_FOLDER,
    RunKind,
    RunResult,
    RunStatus,
    RunStore,
    RunSummary,
    TestCounts,
    TestFailure,
    elapsed_since,
    utc_now,
)
from liveforge.kernel._runner import RunExit, run_child
from liveforge.kernel._secrets import without_secrets
from liveforge.kernel._template import TemplateProcess
from liveforge.kernel.defaults import KEEP_RUNS, TESTS_TIMEOUT, VERIFY_TIMEOUT
from liveforge.kernel.errors import SandboxError

__all__ = ["OverlayModule", "RunResult", "RunSummary", "Sandbox"]

BOOT_MODULE = "_liveforge_sandbox_boot"
BOOT_SOURCE = '''"""Installs the liveforge sandbox overlay in pytest-xdist workers."""
import importlib.util
import sys

_NAME = "_liveforge_sandbox_child"
if _NAME not in sys.modules:
    _spec = importlib.util.spec_from_file_location(_NAME, {child!r})
    _module = importlib.util.module_from_spec(_spec)
    sys.modules[_NAME] = _module
    _spec.loader.exec_module(_module)
sys.modules[_NAME].install_overlay_from_env()
'''


class Sandbox:
    """Runs verification snippets and pytest in forked children that carry the overlay."""

    def __init__(
        self,
        project_root: str | Path,
        runs_dir: str | Path | None = None,
        keep_runs: int = KEEP_RUNS,
        *,
        preload: Sequence[str] = (),
        output_cap: int = 1 << 20,
    ) -> None:
        """`preload` names extra modules the template imports ahead of time (besides the
        libraries the parent has loaded); `output_cap` bounds each captured stream's file."""
        self.project_root = Path(project_root).resolve()
        self.store = RunStore(
            Path(runs_dir) if runs_dir else self.project_root / RUNS_FOLDER, keep_runs
        )
        self.output_cap = output_cap
        self.extra_preload = list(preload)
        self.template_starts = 0
        self.last_refresh_reason: str | None = None
        self._slot: list[TemplateProcess | None] = [None]
        self._lock = threading.Lock()
        # A dropped or never-closed sandbox still stops its template (also at exit).
        weakref.finalize(self, _close_slot, self._slot)

    def verify(
        self,
        code: str,
        overlay: Iterable[OverlayModule] = (),
        change_ids: Sequence[str] = (),
        *,
        timeout: float = VERIFY_TIMEOUT,
        memory_mb: int | None = None,
    ) -> RunResult:
        """Run `code` in a child with the overlay; the last expression's repr is the value.

        The child is killed with everything it spawned after `timeout` seconds. `memory_mb`
        caps the address space the snippet may add to the pre-imported template's.
        """
        if not isinstance(code, str):
            raise TypeError(f"code must be a str of Python source, not {type(code).__name__}")
        return self._run("snippet", {"code": code}, overlay, change_ids, timeout, memory_mb)

    def run_tests(
        self,
        args: Sequence[str] | None = None,
        overlay: Iterable[OverlayModule] = (),
        change_ids: Sequence[str] = (),
        *,
        timeout: float = TESTS_TIMEOUT,
        memory_mb: int | None = None,
    ) -> RunResult:
        """Run pytest with `args` in the project root, in a child with the overlay."""
        if isinstance(args, str):
            raise TypeError("args must be a list of pytest arguments, e.g. ['-q', 'tests']")
        return self._run(
            "tests", {"args": [str(a) for a in args or []]}, overlay, change_ids, timeout, memory_mb
        )

    def runs(self) -> list[RunSummary]:
        """The kept run records, newest first."""
        return self.store.rows()

    def run(self, run_id: str) -> RunResult:
        """The stored result of one run."""
        return self.store.load(run_id)

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
        """Stop the template process. The sandbox restarts one if used again."""
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
        memory_mb: int | None,
    ) -> RunResult:
        modules = _checked_overlay(overlay)
        if not timeout > 0:
            raise ValueError(f"timeout must be a positive number of seconds, not {timeout!r}")
        if memory_mb is not None and memory_mb <= 0:
            raise ValueError(f"memory_mb must be a positive number of MiB, not {memory_mb!r}")
        with self._lock:
            run_id, folder = self.store.create()
            started_at, started = utc_now(), time.monotonic()
            request = self._request(folder, run_id, kind, payload, modules, memory_mb)
            try:
                template = self._template_for([m.name for m in modules])
            except SandboxError:
                shutil.rmtree(folder, ignore_errors=True)
                raise
            try:
                ended = run_child(
                    template,
                    request,
                    folder,
                    timeout=timeout,
                    output_cap=self.output_cap,
                    while_running=lambda: _write_record(folder, request, modules),
                )
            except BaseException:  # interrupted: the template may still be reaping the child
                template.close()
                self._template = None
                raise
            if ended.template_lost:
                template.close()
                self._template = None
            result = _result(
                run_id,
                kind,
                folder,
                payload,
                modules,
                list(change_ids),
                ended,
                memory_mb,
                timeout,
                started_at,
                elapsed_since(started),
            )
            self.store.save(result)
            self.store.prune(protect=run_id)
            return result

    def _request(
        self,
        folder: Path,
        run_id: str,
        kind: RunKind,
        payload: dict[str, Any],
        modules: list[OverlayModule],
        memory_mb: int | None,
    ) -> dict[str, Any]:
        """What the child needs; pytest runs also get the overlay on disk for xdist workers."""
        request: dict[str, Any] = {
            "kind": kind,
            **payload,
            "run_id": run_id,
            "run_dir": str(folder),
            "cwd": str(self.project_root),
            "sys_path": list(sys.path),
            "memory_mb": memory_mb,
            "filename": f"<verify:{run_id}>",
            "overlay": [asdict(m) for m in modules],
            "environ": without_secrets(os.environ),
        }
        if kind == "tests":
            boot = _write_boot(folder)
            save_overlay(modules, folder)
            request["sys_path"] = [str(self.project_root), *request["sys_path"], boot]
            plugins = [p for p in os.environ.get("PYTEST_PLUGINS", "").split(",") if p]
            request["env"] = {
                "PYTEST_PLUGINS": ",".join([*plugins, BOOT_MODULE]),
                "PYTHONPATH": os.pathsep.join([boot, *request["sys_path"][:-1]]),
                OVERLAY_ENV: str(folder / OVERLAY_MANIFEST),
            }
        return request

    def _template_for(self, overlay_names: list[str]) -> TemplateProcess:
        if self._template is not None:
            reason = self._template.stale_reason(overlay_names)
            if reason is None:
                return self._template
            self.last_refresh_reason = reason
            self._template.close()
            self._template = None
        preload = preload_names(self.project_root, overlay_names)
        preload += [name for name in self.extra_preload if name not in overlay_names]
        template = self._start_template(preload, overlay_names)
        if template is None:  # a pre-imported library started a thread or pulled in an
            # overlay module: fall back to a template with nothing pre-imported
            template = self._start_template([], overlay_names)
        if template is None:
            raise SandboxError(
                "the overlay replaces a module the sandbox itself needs ("
                + ", ".join(overlay_names)
                + "); such modules can only be checked in process"
            )
        self._template = template
        return template

    def _start_template(
        self, preload: list[str], overlay_names: list[str]
    ) -> TemplateProcess | None:
        try:
            template = TemplateProcess(
                cwd=self.project_root, sys_path=list(sys.path), preload=preload
            )
        except OSError as exc:
            raise SandboxError(
                f"could not start the sandbox template process: {exc}. "
                "Check that the interpreter can start in the project root."
            ) from exc
        self.template_starts += 1
        if template.threads > 1 or template.stale_reason(overlay_names) is not None:
            template.close()
            return None
        return template


def _close_slot(slot: list[TemplateProcess | None]) -> None:
    template, slot[0] = slot[0], None
    if template is not None:
        template.close()


def _checked_overlay(overlay: Iterable[OverlayModule]) -> list[OverlayModule]:
    modules = list(overlay)
    seen: set[str] = set()
    for module in modules:
        if not isinstance(module, OverlayModule):
            raise TypeError(f"overlay entries must be OverlayModule, not {type(module).__name__}")
        if module.name in seen:
            raise ValueError(f"the overlay names module {module.name!r} twice; pass one source")
        seen.add(module.name)
    return modules


def _write_record(folder: Path, request: dict[str, Any], modules: list[OverlayModule]) -> None:
    """What ran, for people: the code or arguments, the request, the overlay's sources."""
    if request["kind"] == "snippet":
        (folder / "code.py").write_text(request["code"], encoding="utf-8")
    else:
        (folder / "args.json").write_text(json.dumps(request["args"]), encoding="utf-8")
    if not (folder / OVERLAY_MANIFEST).exists():
        save_overlay(modules, folder)
    # The environment stays out of the record: it may hold credentials.
    described = {k: v for k, v in request.items() if k not in ("overlay", "environ")}
    described["overlay"] = [m.name for m in modules]
    (folder / "request.json").write_text(json.dumps(described, indent=1), encoding="utf-8")


def _write_boot(folder: Path) -> str:
    """The pytest plugin that gives fresh interpreters (xdist workers) the overlay."""
    boot = folder / "boot"
    boot.mkdir()
    child = Path(__file__).with_name("_child.py")
    (boot / f"{BOOT_MODULE}.py").write_text(BOOT_SOURCE.format(child=str(child)), encoding="utf-8")
    return str(boot)


def _result(
    run_id: str,
    kind: RunKind,
    folder: Path,
    payload: dict[str, Any],
    modules: list[OverlayModule],
    change_ids: list[str],
    ended: RunExit,
    memory_mb: int | None,
    timeout: float,
    started_at: str,
    duration: float,
) -> RunResult:
    child = ended.outcome
    fields: dict[str, Any] = {
        "run_id": run_id,
        "kind": kind,
        "started_at": started_at,
        "duration": duration,
        "code": payload.get("code"),
        "args": payload.get("args"),
        "stdout": ended.stdout,
        "stderr": ended.stderr,
        "change_ids": change_ids,
        "overlay_modules": [m.name for m in modules],
        "record_path": str(folder),
        "exit_code": ended.exit_code,
    }
    if ended.exit_code is not None and ended.exit_code < 0:
        fields["signal"] = signal.Signals(-ended.exit_code).name
    for key in ("value_repr", "exc_type", "exc_message", "traceback"):
        fields[key] = child.get(key)
    if "tests" in child:
        fields["tests"] = TestCounts(**child["tests"])
        fields["failures"] = [TestFailure(**f) for f in child.get("failures", [])]
    status, message = _classify(child, ended, memory_mb, timeout)
    return RunResult(status=status, ok=status == "passed", message=message, **fields)


def _classify(
    child: dict[str, Any], ended: RunExit, memory_mb: int | None, timeout: float
) -> tuple[RunStatus, str]:
    """The run's status and a one-line message saying what happened."""
    if ended.timed_out:
        return "timed_out", f"killed after the {timeout:g} s timeout (with its process group)"
    if ended.template_lost:
        return "crashed", "the sandbox template process died during the run"
    if child.get("harness_error"):
        return "error", f"the sandbox could not run the request: {child.get('exc_message')}"
    if "status" not in child:
        code = ended.exit_code
        if code is not None and code < 0:
            name = signal.Signals(-code).name
            if memory_mb is not None and name == "SIGKILL":
                return "killed_memory", f"killed by {name} with a {memory_mb} MiB memory limit"
            return "crashed", f"the child was killed by {name} before reporting a result"
        return "crashed", f"the child exited with code {code} before reporting a result"
    status: RunStatus = child["status"]
    if status == "killed_memory":
        return status, f"MemoryError under the {memory_mb} MiB memory limit"
    if "tests" in child:
        return status, _tests_message(child, ended)
    if status == "passed":
        return status, "the snippet ran to completion"
    return status, f"{child.get('exc_type')}: {_first_line(child.get('exc_message') or '')}"


def _tests_message(child: dict[str, Any], ended: RunExit) -> str:
    counts = child["tests"]
    tally = ", ".join(
        f"{counts[key]} {key}" for key in ("passed", "failed", "errors", "skipped") if counts[key]
    )
    if child.get("exc_type"):
        return f"{child['exc_type']}: {_first_line(child.get('exc_message') or '')}"
    if child.get("exc_message"):
        return str(child["exc_message"])
    if child["status"] == "error" and not child.get("failures"):
        return f"pytest stopped with exit code {child.get('pytest_exit_code')}: " + _first_line(
            ended.stderr or ended.stdout
        )
    return tally or "no test outcomes"


def _first_line(text: str) -> str:
    line = text.strip().splitlines()[0] if text.strip() else ""
    return line[:200]
