"""Run a command inside the check boundary, and let nothing it starts outlive it.

    read, write = os.pipe()
    argv = confine_argv(Confinement(policy, report_fd=write), ["bash", "-c", cmd])
    subprocess.Popen(argv, pass_fds=[write], start_new_session=True, ...)  # from a thread
    os.close(write)                                                        # that stays alive
    report = json.loads(os.read(read, 1 << 16) or "null")   # what applied; at EOF, running

The launcher (this file run as a script; standard library only, so it starts in a few
milliseconds) is a small supervisor outside the boundary. It becomes a child subreaper,
stops when the thread that started it ends, and forks the command; the child enters the
copy-on-write view of the project when one is given (`_overlay.enter`: its writes to the
project land in the view's upper folder; where the kernel refuses, the report says why and
the command writes the project itself), applies the boundary (`_boundary.apply_boundary`:
no capabilities, Landlock for files, network and signals, death with the launcher) and the
data and file-size limits, and execs; the launcher sends what applied (the boundary's
report) on `report_fd` and closes it. When the command ends — or the launcher is told to
stop (SIGTERM, SIGINT, SIGHUP, or its parent went away) — every process left behind, a
``setsid`` escapee or a double fork included, gets SIGTERM, then SIGKILL after `grace`
seconds, and the launcher ends the way the command did (its exit code, or its signal).
"""

from __future__ import annotations

import dataclasses
import json
import os
import resource
import signal
import sys
from dataclasses import dataclass, field
from pathlib import Path
from types import FrameType, ModuleType
from typing import Any, NoReturn

__all__ = ["Confinement", "confine_argv"]

_STOPPING = (signal.SIGTERM, signal.SIGINT, signal.SIGHUP)
_RESET = ("SIGPIPE", "SIGXFSZ", "SIGXFZ")  # Python ignores these; a command must not


@dataclass(frozen=True)
class Confinement:
    """How to confine one command: the boundary (a `BoundaryPolicy`), limits set with
    setrlimit in the command's process (None: none), the pipe to send the boundary report
    on, how long the command's processes get between SIGTERM and SIGKILL, and the
    copy-on-write view (an `_overlay.View`) to run it on, if any."""

    policy: Any
    report_fd: int
    data_mb: int | None = None
    file_kb: int | None = None
    grace: float = 1.0
    view: Any = None
    parent_pid: int = field(default_factory=os.getpid)

    def to_json(self) -> str:
        fields = {k: getattr(self, k) for k in ("report_fd", "data_mb", "file_kb", "grace")}
        view = dataclasses.asdict(self.view) if self.view is not None else None
        policy = self.policy.to_dict()
        return json.dumps({**fields, "policy": policy, "parent": self.parent_pid, "view": view})


def confine_argv(confinement: Confinement, argv: list[str]) -> list[str]:
    """The argv that runs `argv` confined (``-I -S``: no site, no PYTHON* variables)."""
    return [sys.executable, "-I", "-S", __file__, confinement.to_json(), "--", *argv]


def load_sibling(name: str) -> ModuleType:
    """A standard-library-only kernel module loaded by file path under the private name a
    sandbox child gives it (the launcher never imports liveforge)."""
    import importlib.util

    sys.modules.setdefault("_liveforge_sandbox_loader", sys.modules[__name__])
    private = f"_liveforge_sandbox{name}"
    if private not in sys.modules:
        spec = importlib.util.spec_from_file_location(
            private, Path(__file__).with_name(f"{name}.py")
        )
        assert spec is not None and spec.loader is not None
        sys.modules[private] = module = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(module)
    return sys.modules[private]


def _start(boundary: ModuleType, options: dict[str, Any], argv: list[str]) -> int:
    """Fork the command; in the child, wall it in and exec. The child's pid."""
    read, write = os.pipe()
    pid = os.fork()
    if pid:
        os.close(write)
        with os.fdopen(read, "rb") as pipe:
            report = pipe.read()
        os.write(options["report_fd"], report)
        os.close(options["report_fd"])
        return pid
    try:
        os.close(read)
        os.close(options["report_fd"])
        for sig in (*_STOPPING, *(getattr(signal, n) for n in _RESET if hasattr(signal, n))):
            signal.signal(sig, signal.SIG_DFL)
        fields = {**options["policy"], "parent_pid": os.getppid()}
        policy = boundary.BoundaryPolicy.from_dict(fields)
        view = _enter_view(options.get("view"))
        report = boundary.apply_boundary(policy)
        report["view"] = view
        _set_limits(options, report)
        os.write(write, json.dumps(report).encode())
        os.close(write)
        os.execv(argv[0], argv)
    except BaseException as exc:  # tell the user, then end as a shell does
        os.write(2, f"liveforge: cannot start {argv[0]}: {exc}\n".encode())
    os._exit(127)


def _enter_view(view: dict[str, str] | None) -> dict[str, str | None]:
    """Enter the copy-on-write view of the project; what came of it, for the report."""
    if view is None:
        return {"state": "none", "reason": "no copy-on-write view was asked for"}
    overlay = load_sibling("_overlay")
    try:
        overlay.enter(overlay.View(**view))
    except OSError as exc:
        return {"state": "failed", "reason": f"the copy-on-write view failed: {exc}"}
    return {"state": "copy-on-write", "reason": None}


def _set_limits(options: dict[str, Any], report: dict[str, Any]) -> None:
    # the data limit counts memory written to, not address space reserved (a JVM, node or
    # Go binary reserves far more than it uses and fails under an address-space limit)
    for key, which, unit in (
        ("data_mb", resource.RLIMIT_DATA, 1 << 20),
        ("file_kb", resource.RLIMIT_FSIZE, 1 << 10),
    ):
        if options.get(key):
            value = options[key] * unit
            _, hard = resource.getrlimit(which)
            if hard != resource.RLIM_INFINITY:
                value = min(value, hard)
            resource.setrlimit(which, (value, value))
            report["limits"][key] = options[key]


def _descendants() -> list[int]:
    """Every process below this one, parents before children."""
    found, queue = [], [os.getpid()]
    while queue:
        pid = queue.pop(0)
        try:
            tasks = os.listdir(f"/proc/{pid}/task")
        except OSError:
            continue
        for tid in tasks:
            try:
                with open(f"/proc/{pid}/task/{tid}/children") as file:
                    children = [int(p) for p in file.read().split()]
            except OSError:
                continue
            found += children
            queue += children
    return found


def _signal_all(sig: int) -> None:
    for pid in _descendants():
        try:
            os.kill(pid, sig)
        except OSError:
            pass


class _Stopper:
    """SIGTERM to every descendant now, SIGKILL to all of them `grace` seconds later."""

    def __init__(self, grace: float) -> None:
        self.grace, self.started = grace, False

    def __call__(self, signum: int = 0, frame: FrameType | None = None) -> None:
        if self.started:
            return
        self.started = True
        _signal_all(signal.SIGTERM)
        signal.signal(signal.SIGALRM, _kill_all)
        signal.setitimer(signal.ITIMER_REAL, self.grace, 0.1)  # again while any is left


def _kill_all(signum: int, frame: FrameType | None) -> None:
    _signal_all(signal.SIGKILL)


def _reap(main: int, stop: _Stopper) -> int:
    """Wait for the command, then for everything it left (stopped first); its wait status."""
    status = 0
    while True:
        try:
            pid, code = os.waitpid(-1, 0)
        except ChildProcessError:
            return status
        if pid == main:
            status = code
            stop()  # the command ended: what it left running goes too


def main(args: list[str]) -> NoReturn:
    """The launcher: ``_confine.py OPTIONS_JSON -- ARGV...``."""
    options, argv = json.loads(args[0]), args[2:]
    boundary, processes = load_sibling("_boundary"), load_sibling("_processes")
    processes.become_subreaper()
    processes.die_with_parent(options["parent"], signal.SIGTERM)
    stop = _Stopper(options["grace"])
    for stopping in _STOPPING:
        signal.signal(stopping, stop)
    status = _reap(_start(boundary, options, argv), stop)
    signal.setitimer(signal.ITIMER_REAL, 0)
    if os.WIFSIGNALED(status):
        sig = os.WTERMSIG(status)
        signal.signal(sig, signal.SIG_DFL)
        os.kill(os.getpid(), sig)
    os._exit(os.waitstatus_to_exitcode(status))


if __name__ == "__main__":
    main(sys.argv[1:])
