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
import selectors
import signal
import sys
import threading
import time
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from liveforge.kernel._capture import CappedSink, excerpt
from liveforge.kernel._child import CHILD_RESULT, OverlayModule, save_overlay
from liveforge.kernel._preload import preload_names
from liveforge.kernel._records import (
    RunKind,
    RunResult,
    RunStore,
    RunSummary,
    TestCounts,
    TestFailure,
    elapsed_since,
    utc_now,
)
from liveforge.kernel._template import TemplateProcess
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
KILL_GRACE = 5.0
PIPE_GRACE = 0.5


@dataclass
class _Exit:
    """How the child ended, as seen by the parent."""

    exit_code: int | None = None
    timed_out: bool = False
    template_lost: bool = False


class Sandbox:
    """Runs verification snippets and pytest in forked children that carry the overlay."""

    def __init__(self, project_root: str | Path, runs_dir: str | Path | None = None,
                 keep_runs: int = 50, *, preload: Sequence[str] = (),
                 output_cap: int = 1 << 20) -> None:
        """`preload` names extra modules the template imports ahead of time (besides the
        libraries the parent has loaded); `output_cap` bounds each captured stream's file."""
        self.project_root = Path(project_root).resolve()
        self.store = RunStore(Path(runs_dir) if runs_dir else self.project_root / "sandbox_runs",
                              keep_runs)
        self.output_cap = output_cap
        self.extra_preload = list(preload)
        self.template_starts = 0
        self.last_refresh_reason: str | None = None
        self._template: TemplateProcess | None = None
        self._lock = threading.Lock()

    def verify(self, code: str, overlay: Iterable[OverlayModule] = (),
               change_ids: Sequence[str] = (), *, timeout: float = 30.0,
               memory_mb: int | None = None) -> RunResult:
        """Run `code` in a child with the overlay; the last expression's repr is the value."""
        if not isinstance(code, str):
            raise TypeError(f"code must be a str of Python source, not {type(code).__name__}")
        return self._run("snippet", {"code": code}, overlay, change_ids, timeout, memory_mb)

    def run_tests(self, args: Sequence[str] | None = None, overlay: Iterable[OverlayModule] = (),
                  change_ids: Sequence[str] = (), *, timeout: float = 300.0,
                  memory_mb: int | None = None) -> RunResult:
        """Run pytest with `args` in the project root, in a child with the overlay."""
        if isinstance(args, str):
            raise TypeError("args must be a list of pytest arguments, e.g. ['-q', 'tests']")
        return self._run("tests", {"args": [str(a) for a in args or []]}, overlay, change_ids,
                         timeout, memory_mb)

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

    def _run(self, kind: RunKind, payload: dict[str, Any], overlay: Iterable[OverlayModule],
             change_ids: Sequence[str], timeout: float, memory_mb: int | None) -> RunResult:
        modules = _checked_overlay(overlay)
        if not timeout > 0:
            raise ValueError(f"timeout must be a positive number of seconds, not {timeout!r}")
        if memory_mb is not None and memory_mb <= 0:
            raise ValueError(f"memory_mb must be a positive number of MiB, not {memory_mb!r}")
        with self._lock:
            run_id, folder = self.store.create()
            started_at, started = utc_now(), time.monotonic()
            self._write_request(folder, run_id, kind, payload, modules, list(change_ids),
                                timeout, memory_mb)
            template = self._template_for([m.name for m in modules])
            ended = self._execute(template, folder, timeout)
            result = self._result(run_id, kind, folder, payload, modules, list(change_ids),
                                  ended, memory_mb, timeout, started_at, elapsed_since(started))
            self.store.save(result)
            self.store.prune(protect=run_id)
            return result

    def _write_request(self, folder: Path, run_id: str, kind: RunKind, payload: dict[str, Any],
                       modules: list[OverlayModule], change_ids: list[str], timeout: float,
                       memory_mb: int | None) -> None:
        save_overlay(modules, folder)
        request: dict[str, Any] = {
            "kind": kind, **payload, "run_id": run_id, "cwd": str(self.project_root),
            "sys_path": list(sys.path), "timeout": timeout, "memory_mb": memory_mb,
            "change_ids": change_ids, "filename": f"<verify:{run_id}>"}
        if kind == "snippet":
            (folder / "code.py").write_text(payload["code"], encoding="utf-8")
        else:
            (folder / "args.json").write_text(json.dumps(payload["args"]), encoding="utf-8")
            boot = self._write_boot(folder)
            request["sys_path"] = [str(self.project_root), *request["sys_path"], boot]
            plugins = [p for p in os.environ.get("PYTEST_PLUGINS", "").split(",") if p]
            request["env"] = {
                "PYTEST_PLUGINS": ",".join([*plugins, BOOT_MODULE]),
                "PYTHONPATH": os.pathsep.join([boot, *request["sys_path"][:-1]])}
        (folder / "request.json").write_text(json.dumps(request, indent=1), encoding="utf-8")

    def _write_boot(self, folder: Path) -> str:
        """The pytest plugin that gives fresh interpreters (xdist workers) the overlay."""
        boot = folder / "boot"
        boot.mkdir()
        child = Path(__file__).with_name("_child.py")
        (boot / f"{BOOT_MODULE}.py").write_text(BOOT_SOURCE.format(child=str(child)),
                                               encoding="utf-8")
        return str(boot)

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
        if template is None:  # a pre-imported library pulled in an overlay module
            template = self._start_template([], overlay_names)
        if template is None:
            raise SandboxError(
                "the overlay replaces a module the sandbox itself needs (" +
                ", ".join(overlay_names) + "); such modules can only be checked in process")
        self._template = template
        return template

    def _start_template(self, preload: list[str], overlay_names: list[str]
                        ) -> TemplateProcess | None:
        try:
            template = TemplateProcess(cwd=self.project_root, sys_path=list(sys.path),
                                       preload=preload)
        except OSError as exc:
            raise SandboxError(f"could not start the sandbox template process: {exc}. "
                               "Check that the interpreter can start in the project root."
                               ) from exc
        self.template_starts += 1
        if template.stale_reason(overlay_names) is not None:
            template.close()
            return None
        return template

    def _execute(self, template: TemplateProcess, folder: Path, timeout: float) -> _Exit:
        sinks: dict[int, CappedSink] = {}
        selector = selectors.DefaultSelector()
        ended = _Exit()
        write_ends: list[int] = []
        try:
            for name in ("stdout", "stderr"):
                read_end, write_end = os.pipe()
                sinks[read_end] = CappedSink(folder / f"{name}.txt", head_bytes=self.output_cap)
                write_ends.append(write_end)
            try:
                template.start_run(folder, write_ends[0], write_ends[1])
            except OSError:
                ended.template_lost = True
            finally:
                for fd in write_ends:
                    os.close(fd)
            if not ended.template_lost:
                for fd in sinks:
                    selector.register(fd, selectors.EVENT_READ)
                selector.register(template.sock, selectors.EVENT_READ)
                self._wait(template, selector, sinks, ended, time.monotonic() + timeout)
        finally:
            selector.close()
            for fd, sink in sinks.items():
                sink.close()
                os.close(fd)
        if ended.template_lost:
            template.close()
            self._template = None
        return ended

    def _wait(self, template: TemplateProcess, selector: selectors.BaseSelector,
              sinks: dict[int, CappedSink], ended: _Exit, deadline: float) -> None:
        """Pump output and control messages until the child has exited (or timed out)."""
        pid: int | None = None
        control = template.sock.fileno()
        open_pipes = set(sinks)
        exit_seen = 0.0
        while True:
            now = time.monotonic()
            if ended.exit_code is not None and (not open_pipes or now - exit_seen > PIPE_GRACE):
                return
            if not ended.timed_out and now >= deadline:
                ended.timed_out = True
                _kill_group(pid)
                deadline = now + KILL_GRACE
            elif ended.timed_out and now >= deadline and ended.exit_code is None:
                ended.template_lost = True
                _kill_group(pid)
                return
            wait = max(0.0, deadline - now)
            if ended.exit_code is not None:
                wait = min(wait, PIPE_GRACE)
            for key, _ in selector.select(wait):
                if key.fd == control:
                    chunk = template.sock.recv(1 << 16)
                    if not chunk:
                        ended.template_lost = True
                        _kill_group(pid)
                        return
                    template.channel.feed(chunk)
                    while (message := template.channel.pop()) is not None:
                        pid = message.get("pid", pid)
                        if "exit_code" in message:
                            ended.exit_code = message["exit_code"]
                            exit_seen = time.monotonic()
                else:
                    fd = int(key.fd)
                    chunk = os.read(fd, 1 << 16)
                    if chunk:
                        sinks[fd].write(chunk)
                    else:
                        selector.unregister(fd)
                        open_pipes.discard(fd)

    def _result(self, run_id: str, kind: RunKind, folder: Path, payload: dict[str, Any],
                modules: list[OverlayModule], change_ids: list[str], ended: _Exit,
                memory_mb: int | None, timeout: float, started_at: str, duration: float
                ) -> RunResult:
        child = _read_child(folder)
        fields: dict[str, Any] = {
            "run_id": run_id, "kind": kind, "started_at": started_at, "duration": duration,
            "code": payload.get("code"), "args": payload.get("args"),
            "stdout": excerpt(folder / "stdout.txt"), "stderr": excerpt(folder / "stderr.txt"),
            "change_ids": change_ids, "overlay_modules": [m.name for m in modules],
            "record_path": str(folder), "exit_code": ended.exit_code}
        if ended.exit_code is not None and ended.exit_code < 0:
            fields["signal"] = signal.Signals(-ended.exit_code).name
        for key in ("value_repr", "exc_type", "exc_message", "traceback"):
            fields[key] = child.get(key)
        if "tests" in child:
            fields["tests"] = TestCounts(**child["tests"])
            fields["failures"] = [TestFailure(**f) for f in child.get("failures", [])]
        status, message = _classify(child, ended, memory_mb, timeout)
        if (status == "error" and "pytest_exit_code" in child and not fields.get("failures")
                and not child.get("exc_message")):
            message = (f"pytest stopped with exit code {child['pytest_exit_code']}: " +
                       _first_line(fields["stderr"] or fields["stdout"]))
        return RunResult(status=status, ok=status == "passed", message=message, **fields)


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


def _kill_group(pid: int | None) -> None:
    """SIGKILL the child's process group (the child and everything it spawned)."""
    if pid is None:
        return
    for kill, target in ((os.killpg, pid), (os.kill, pid)):
        try:
            kill(target, signal.SIGKILL)
        except OSError:
            continue


def _read_child(folder: Path) -> dict[str, Any]:
    try:
        data = json.loads((folder / CHILD_RESULT).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return {}
    return data if isinstance(data, dict) else {}


def _classify(child: dict[str, Any], ended: _Exit, memory_mb: int | None, timeout: float
              ) -> tuple[Any, str]:
    """The run's status and a one-line message."""
    if ended.timed_out:
        return "timed_out", f"killed after the {timeout:g} s timeout (with its process group)"
    if ended.template_lost:
        return "crashed", "the sandbox template process died during the run"
    if child.get("harness_error"):
        return "error", f"the sandbox could not run the request: {child.get('exc_message')}"
    code = ended.exit_code
    if "status" not in child:
        if code is not None and code < 0:
            name = signal.Signals(-code).name
            if memory_mb is not None and name == "SIGKILL":
                return "killed_memory", f"killed by {name} with a {memory_mb} MiB memory limit"
            return "crashed", f"the child was killed by {name} before reporting a result"
        return "crashed", f"the child exited with code {code} before reporting a result"
    status = child["status"]
    if status == "passed":
        if "tests" in child:
            return status, "all selected tests passed"
        return status, "the snippet ran to completion"
    if status == "killed_memory":
        return status, f"MemoryError under the {memory_mb} MiB memory limit"
    if child.get("exc_type"):
        return status, f"{child['exc_type']}: {_first_line(child.get('exc_message') or '')}"
    if "tests" in child:
        counts = child["tests"]
        return status, (f"{counts['failed']} failed, {counts['errors']} errors" +
                        (f"; {child['exc_message']}" if child.get("exc_message") else ""))
    return status, child.get("exc_message") or status


def _first_line(text: str) -> str:
    line = text.strip().splitlines()[0] if text.strip() else ""
    return line[:200]
