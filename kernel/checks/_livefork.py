"""Checks that see the live program: a snippet run in a fork of the running process.

A fresh-import check (the sandbox) proves the overlay's *source* works; it cannot see what
the running process holds — objects patched in place, registries, caches, instances made
before a patch. A live check forks this process (the original design's "fork the whole
environment"): the child has every module exactly as it is live, runs the snippet there,
and reports back through a pipe. Nothing it does reaches the parent.

The fork is a boundary too:

- it leaves only through `os._exit`: the parent's `atexit` handlers, buffered output and
  threads (which do not exist in the child) are never run or flushed;
- its output goes to files of its own, through fresh `sys.stdout`/`sys.stderr` objects, so
  text the parent had buffered but not written never appears twice;
- it gets its own session, its signal handlers are the defaults, and at the timeout it is
  killed with everything it started;
- before the snippet runs it overwrites, in its copy of memory, every secret liveforge
  keeps (`_wipe.forget_secrets`: the environment block `/proc/self/environ` shows, C
  `getenv`'s and `os.environ`'s copies, held provider keys, the scrubbers' values and
  patterns). The program's own objects still hold what they hold (a live check sees the
  program as it is), and freed memory is not scrubbed;
- given a `BoundaryPolicy` (the sandbox gives the same as to its fresh-import checks) it
  runs inside the check boundary (`_boundary.contain`): Landlock, network off, signals
  scoped, limits, the project copy-on-write and a pid namespace of its own where the
  platform has them. `LiveCheck.boundary` says what applied. Given a host made ahead
  (`_hosts`) the check is forked into that host's pid namespace and joins its other
  namespaces where this process may (one fork of this big process), else the fork joins
  them and forks the check into them (two instead of three); without a host it enters
  namespaces of its own.
"""

from __future__ import annotations

import contextlib
import functools
import gc
import io
import json
import os
import select
import signal
import sys
import tempfile
import threading
import time
from collections.abc import Callable
from typing import Any, Literal

from pydantic import BaseModel

from liveforge.kernel.boundary import _namespaces, _processes
from liveforge.kernel.boundary._boundary import BoundaryPolicy, Handshake, contain
from liveforge.kernel.boundary._isolation import Boundary
from liveforge.kernel.boundary._policy import expected_report
from liveforge.kernel.boundary._wipe import forget_secrets
from liveforge.kernel.checks._background import later
from liveforge.kernel.checks._child import run_snippet
from liveforge.kernel.checks._childerrors import error_line
from liveforge.kernel.checks._hosts import Host
from liveforge.kernel.checks._probes import Probe, compare

LiveStatus = Literal["passed", "failed", "error", "timed_out", "crashed", "killed_memory"]
_OUTPUT_LIMIT = 100_000
_RUNNING: set[int] = set()
"""Pids of live checks being waited for."""
_KEPT: list[Any] = []


class LiveCheck(BaseModel):
    """The outcome of a snippet run in a fork of the live process."""

    status: LiveStatus
    ok: bool
    duration: float
    value_repr: str | None = None
    exc_type: str | None = None
    exc_message: str | None = None
    traceback: str | None = None
    stdout: str = ""
    stderr: str = ""
    boundary: Boundary | None = None
    """The check boundary as it applied; None for a fork given none (a session of its own
    without secret variables, but no file-system or network boundary)."""

    @property
    def isolation(self) -> str:
        """landlock or none, as for a fresh-import check."""
        return "none" if self.boundary is None else self.boundary.isolation

    def headline(self) -> str:
        """`live process: <status>[, value]` on one line, with its isolation."""
        said = error_line(self.exc_type, self.exc_message, self.traceback)
        detail = f" ({said})" if self.exc_type else ""
        value = f", value {self.value_repr}" if self.value_repr is not None else ""
        return f"live process: {self.status} in {self.duration:.3f}s{value}{detail} [{_said(self)}]"


def _said(check: LiveCheck) -> str:
    if check.boundary is None:
        return "isolation: none"
    if check.boundary.isolation == "none":
        return f"isolation: none ({check.boundary.reason})"
    parts = [f"isolation: landlock ABI {check.boundary.landlock_abi}"]
    parts.append(f"project {check.boundary.project}")
    parts.append("network on" if check.boundary.network else "network off")
    return ", ".join([*parts, check.boundary.processes])


def available() -> bool:
    """True where the live process can be forked (POSIX)."""
    return hasattr(os, "fork")


def run_live(
    code: str,
    *,
    timeout: float,
    memory_mb: int | None = None,
    boundary: BoundaryPolicy | None = None,
    prepared: int | None = None,
    cwd: str | None = None,
    host: Host | None = None,
    on_start: Callable[[int], None] | None = None,
    probes: list[Probe] | None = None,
) -> LiveCheck:
    """Run `code` in a fork of this process, REPL style (a final expression's repr is the
    value); killed with everything it started after `timeout` seconds. With `boundary`
    the fork runs inside the check boundary (see `_boundary.contain`; its folders must
    exist), and its limits are that policy's; `prepared` is a ruleset fd for it from
    `_boundary.prepare` (closed here). `cwd` is the folder it runs in (a fresh-import check
    runs in the project root, wherever this process was started). `host` is namespaces
    made ahead for the check to join (see `_hosts`); it is ended here, whatever happens.
    `on_start` is called with the fork's pid once it runs (`stop` ends it early). With
    `probes`, the fork runs `code` once more against the old objects changes replaced and
    reports a difference as a failure (see `_probes`)."""
    started = time.monotonic()
    handshake = Handshake() if boundary is not None and boundary.namespaces else None
    with tempfile.TemporaryFile() as out, tempfile.TemporaryFile() as err:
        read_end, write_end = os.pipe()
        pid, lifeline = _fork(boundary, host)
        if pid == 0:  # the child: never returns
            os.close(read_end)
            fds = (out.fileno(), err.fileno(), write_end)
            walls = (boundary, handshake, prepared, host, lifeline)
            _child(code, fds, memory_mb, walls, cwd, probes)
        os.close(write_end)
        if prepared is not None:
            os.close(prepared)
        _RUNNING.add(pid)
        try:
            if on_start is not None:
                on_start(pid)
            if handshake is not None:
                handshake.parent_side()
                handshake.serve(pid)
            raw, status = _collect(pid, read_end, timeout)
        finally:
            _RUNNING.discard(pid)
            if handshake is not None:
                handshake.close()
            if host is not None:
                host.end()
            if lifeline is not None:
                os.close(lifeline)
        fields = _outcome(raw, status, timeout)
        fields["stdout"], fields["stderr"] = _read(out), _read(err)
    if boundary is not None:
        report = fields.pop("boundary", None) or expected_report(boundary)
        fields["boundary"] = Boundary(**report)
    duration = time.monotonic() - started
    return LiveCheck(duration=duration, ok=fields["status"] == "passed", **fields)


def _fork(boundary: BoundaryPolicy | None, host: Host | None) -> tuple[int, int | None]:
    """Fork the live check: straight into `host`'s pid namespace where this process may
    (one fork of this big process instead of two, see `_namespaces.fork_into`), else
    plainly. (its pid, or 0 in the child; the lifeline of one forked into the host)"""
    if boundary is not None and boundary.namespaces and host is not None:
        forked = _namespaces.fork_into(host.pidfd)
        if forked is not None:
            return forked
    return os.fork(), None


def stop(pid: int) -> None:
    """Kill the live check `pid` (as `on_start` gave it) with what it started; the waiting
    caller then reports it as killed."""
    _kill(pid)


def stop_all() -> list[int]:
    """Kill every live check of this process in progress, with what it started (each leads
    a session of its own); their pids. The waiting caller then reports it as killed."""
    stopped = sorted(_RUNNING)
    for pid in stopped:
        try:
            os.killpg(pid, signal.SIGKILL)
        except OSError:
            with contextlib.suppress(OSError):
                os.kill(pid, signal.SIGKILL)
    return stopped


def _child(
    code: str,
    fds: tuple[int, int, int],
    memory_mb: int | None,
    walls: tuple[BoundaryPolicy | None, Handshake | None, int | None, Host | None, int | None],
    cwd: str | None = None,
    probes: list[Probe] | None = None,
) -> None:
    out_fd, err_fd, result_fd = fds
    boundary, handshake, prepared, host, lifeline = walls
    exit_code = 0
    report = None
    try:
        # Objects the parent made are never collected here: a collection would touch (and
        # so copy) every page of the parent's heap.
        gc.freeze()
        os.setsid()
        os.dup2(out_fd, 1)
        os.dup2(err_fd, 2)
        # The parent's stream objects stay referenced, so no finalizer flushes what they
        # had buffered into the child's output.
        _KEPT.extend((sys.stdout, sys.stderr))
        sys.stdout = io.TextIOWrapper(io.FileIO(1, "w", closefd=False), line_buffering=True)
        sys.stderr = io.TextIOWrapper(io.FileIO(2, "w", closefd=False), line_buffering=True)
        signal.signal(signal.SIGINT, signal.default_int_handler)
        signal.signal(signal.SIGTERM, signal.SIG_DFL)
        threading.current_thread().name = "MainThread"  # forked from another thread maybe
        forget_secrets()  # before any code of the snippet runs
        entered = _joined(boundary, handshake, host, lifeline)  # in the check, if it joined
        if cwd is not None:  # before the boundary: a copy-on-write view follows it there
            os.chdir(cwd)
        if boundary is not None:
            report = contain(boundary, None if entered else handshake, prepared, entered)
            if boundary.memory_mb is not None:
                memory_mb = boundary.memory_mb
        outcome = run_snippet(code, "<live-check>", memory_mb)
        if probes:
            again = functools.partial(run_snippet, code, "<live-check>", memory_mb)
            outcome = compare(probes, outcome, again)
    except BaseException as exc:  # the harness itself failed: still a result
        outcome = {"status": "error", "exc_type": type(exc).__name__, "exc_message": str(exc)}
        exit_code = 70
    outcome["boundary"] = report
    with contextlib.suppress(BaseException):
        sys.stdout.flush()
        sys.stderr.flush()
    try:
        data = json.dumps(outcome).encode()
        view = memoryview(data)
        while view:
            view = view[os.write(result_fd, view) :]
        os.close(result_fd)  # the parent has the result before this process is torn down
    except BaseException:
        exit_code = 71
    os._exit(exit_code)


def _joined(
    boundary: BoundaryPolicy | None,
    handshake: Handshake | None,
    host: Host | None,
    lifeline: int | None,
) -> _namespaces.Entered | None:
    """Join `host`'s namespaces (returns in the check; unless this process was forked into
    the host's pid namespace already, given a `lifeline` there, it relays), or None where
    there is no host or it is gone (the check then enters namespaces of its own)."""
    if boundary is None or host is None or not boundary.namespaces:
        return None
    if lifeline is not None:  # in the host's pid namespace already: no way back
        return _namespaces.join_forked(host.pidfd, host.proc_note, lifeline, handshake)
    if boundary.parent_pid is not None:
        _processes.die_with_parent(boundary.parent_pid)
    try:
        return _namespaces.join(host.pidfd, host.proc_note, handshake)
    except OSError:
        return None


def _collect(pid: int, fd: int, timeout: float) -> tuple[bytes, int | None]:
    """Read the child's result until it closes the pipe or the timeout passes (then kill
    its whole session); returns (bytes read, wait status or None when it timed out)."""
    deadline = time.monotonic() + timeout
    chunks = []
    timed_out = False
    try:
        while True:
            left = deadline - time.monotonic()
            if left <= 0:
                timed_out = True
                break
            ready, _, _ = select.select([fd], [], [], left)
            if not ready:
                continue
            chunk = os.read(fd, 65536)
            if not chunk:
                break
            chunks.append(chunk)
    finally:
        os.close(fd)
        if timed_out:
            _kill(pid)
    raw = b"".join(chunks)
    if not timed_out and raw.endswith(b"}"):
        # A whole result came: tearing down a copy of a large process takes a while, and
        # nothing waits for it; the background thread reaps the child.
        later(os.waitpid, pid, 0)
        return raw, 0
    _, status = os.waitpid(pid, 0)
    return raw, None if timed_out else status


def _kill(pid: int) -> None:
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(pid, signal.SIGKILL)  # the child's session: whatever it started too
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.kill(pid, signal.SIGKILL)


def _outcome(raw: bytes, status: int | None, timeout: float) -> dict[str, Any]:
    if status is None:
        return {
            "status": "timed_out",
            "exc_message": f"the live check ran past its {timeout:g} s timeout and was killed",
        }
    try:
        outcome: dict[str, Any] = json.loads(raw)
    except ValueError:
        how = (
            f"signal {signal.Signals(os.WTERMSIG(status)).name}"
            if os.WIFSIGNALED(status)
            else f"exit code {os.waitstatus_to_exitcode(status)}"
        )
        return {"status": "crashed", "exc_message": f"the live check died ({how})"}
    keep = ("status", "value_repr", "exc_type", "exc_message", "traceback", "boundary")
    return {k: outcome[k] for k in keep if k in outcome}


def _read(handle: Any) -> str:
    handle.seek(0)
    data: bytes = handle.read(_OUTPUT_LIMIT + 1)
    text = data[:_OUTPUT_LIMIT].decode("utf-8", "replace")
    return text + ("\n[... more output dropped]\n" if len(data) > _OUTPUT_LIMIT else "")
