"""The fork server: a pre-imported template process from which each sandbox run is forked.

The template is a long-lived `python -c` child. It imports the heavy third-party and standard
library modules the parent has loaded (never the project's managed modules), reports which
module files it imported, then waits on a Unix socket. For each run the parent sends the request
(code or pytest arguments, the overlay's sources) together with three pipe ends (stdout,
stderr, result); the template forks, the child applies the overlay, runs and writes its outcome
to the result pipe (see `_child`), and the template reports the child's pid and exit status.
After a run in namespaces the template makes the next check ahead while it is idle (see
`_spare`): the namespaces and pid 1 are ready, and the request only goes to a waiting process.

A template is *stale* when it imported a module the overlay now replaces, or a module whose
file changed on disk since; `TemplateProcess.stale_reason` says why, and the sandbox then
starts a fresh one. The files are watched (`files._changedfiles`): after one stat of each file, a
question reads the watch's events instead of stat'ing them all again. The server side uses
the standard library only and is loaded by file path, so the template never imports
`liveforge`.
"""

from __future__ import annotations

import contextlib
import gc
import importlib
import importlib.util
import json
import os
import select
import shutil
import signal
import socket
import subprocess
import sys
import threading
from collections.abc import Iterable
from pathlib import Path
from typing import Any

CHILD_MODULE = "_liveforge_sandbox_child"
BOOTSTRAP = (
    "import importlib.util as u, sys\n"
    "s = u.spec_from_file_location('_liveforge_sandbox_template', sys.argv[1])\n"
    "m = u.module_from_spec(s); s.loader.exec_module(m); m.serve(int(sys.argv[2]))\n"
    # nothing to flush or finalize: the front end closing the sandbox waits for this exit
    "import os; os._exit(0)\n"
)


IDLE_BEFORE_SPARE = 0.005
"""Seconds without a request after a run before the template makes the next check ahead:
long enough for a request already on its way, short enough that checks asked for one after
another (the front end only reads the last result in between) find the next one made."""


def load_child_module() -> Any:
    """Load `_child.py` by path under a private name (so `liveforge` is not imported)."""
    if CHILD_MODULE in sys.modules:
        return sys.modules[CHILD_MODULE]
    spec = importlib.util.spec_from_file_location(
        CHILD_MODULE, Path(__file__).with_name("_child.py")
    )
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[CHILD_MODULE] = module
    spec.loader.exec_module(module)
    return module


class LineChannel:
    """Newline-delimited JSON messages over a stream socket, optionally carrying fds."""

    def __init__(self, sock: socket.socket) -> None:
        self.sock = sock
        self.buffer = b""

    def send(self, message: dict[str, Any], fds: Iterable[int] = ()) -> None:
        data = json.dumps(message).encode() + b"\n"
        fds = list(fds)
        if fds:  # sendmsg may take only part of a large message; the rest follows plainly
            data = data[socket.send_fds(self.sock, [data], fds) :]
        if data:
            self.sock.sendall(data)

    def receive(self, max_fds: int = 0) -> tuple[dict[str, Any] | None, list[int]]:
        """The next message and the fds that came with it; (None, []) at end of stream."""
        fds: list[int] = []
        while b"\n" not in self.buffer:
            if max_fds:
                chunk, new_fds, _, _ = socket.recv_fds(self.sock, 65536, max_fds)
                fds.extend(new_fds)
            else:
                chunk = self.sock.recv(65536)
            if not chunk:
                return None, fds
            self.buffer += chunk
        return self.pop(), fds

    def feed(self, chunk: bytes) -> None:
        self.buffer += chunk

    def pop(self) -> dict[str, Any] | None:
        """A complete buffered message, if there is one."""
        line, newline, rest = self.buffer.partition(b"\n")
        if not newline:
            return None
        self.buffer = rest
        message: dict[str, Any] = json.loads(line)
        return message


def _module_files() -> dict[str, list[Any]]:
    """name -> [file, mtime_ns, size] for every imported module backed by a file."""
    files: dict[str, list[Any]] = {}
    for name, module in list(sys.modules.items()):
        filename = getattr(module, "__file__", None)
        if not isinstance(filename, str):
            continue
        try:
            info = os.stat(filename)
        except OSError:
            continue
        files[name] = [filename, info.st_mtime_ns, info.st_size]
    return files


# First use of some libraries does lazy work that every forked child would repeat: pydantic
# builds its schema machinery on the first model (10-100 ms; later models take under 1 ms).
# The template does that work once, in a scratch namespace.
WARMUPS = {
    "pydantic": (
        "class _Warmup(pydantic.BaseModel):\n"
        "    number: int\n"
        "    text: str | None = None\n"
        "    items: list[float] = []\n"
        "_Warmup.model_validate({'number': 1}).model_dump_json()\n"
    ),
}


def _preload(names: list[str]) -> list[str]:
    failed = []
    for name in names:
        try:
            importlib.import_module(name)
        except BaseException:  # a module that cannot be imported here is simply not preloaded
            failed.append(name)
    for name, code in WARMUPS.items():
        if name in sys.modules:
            try:
                exec(code, {name: sys.modules[name]})
            except Exception:  # a library version without this API is simply not warmed up
                failed.append(f"{name} (warm-up)")
    return failed


def serve(sock_fd: int) -> None:
    """Template main loop: boot, then fork one child per run request until end of stream."""
    channel = LineChannel(socket.socket(fileno=sock_fd))
    boot, _ = channel.receive()
    if boot is None:
        return
    sys.path[:] = boot["sys_path"]
    child = load_child_module()
    failed = _preload(boot["preload"])
    channel.send(
        {
            "ready": True,
            "pid": os.getpid(),
            "modules": _module_files(),
            "names": sorted(sys.modules),
            "failed": failed,
            "threads": threading.active_count(),
        }
    )
    gc.collect()
    gc.freeze()  # keep the pre-imported objects' pages shared with the forked children
    boundary = child.load_sibling("_boundary")
    processes = child.load_sibling("_processes")
    processes.become_subreaper()  # a run's orphans (setsid, double fork) come back here
    rulesets = boundary.Rulesets()
    hosts = child.load_sibling("_hosts")
    spare = None  # the next check in namespaces, made while idle (see `_spare`)
    host = None  # namespaces the front end offered for the next check (`_hosts`)
    stopped = False  # the last run was stopped by a signal: the next waits until asked
    while True:
        message, fds = channel.receive(max_fds=4)
        if message is None:
            if spare is not None:
                spare.discard()
            if host is not None:
                host.end()
            return
        if "offer" in message:  # namespaces made ahead, for the next check
            if host is not None:
                host.end()
            host = hosts.Host(fds[0], fds[1], message["offer"]) if len(fds) == 2 else None
            for fd in fds if host is None else fds[2:]:
                os.close(fd)
            if host is not None and spare is None and boot.get("ahead", True) and not stopped:
                if _idle(channel, IDLE_BEFORE_SPARE):
                    spare, host = _make_spare(child, channel, host), None
            continue
        request = message
        request["parent_pid"] = os.getpid()
        policy = boundary.BoundaryPolicy.from_dict(request["boundary"])
        request["ruleset_fd"] = rulesets.take(policy)
        if spare is not None and not policy.namespaces:
            spare.discard()
            spare = None
        used = handshake = reporting = None  # the host the check runs in, if any
        if spare is not None and spare.start(request, fds, request["ruleset_fd"]):
            pid, handshake, used = spare.pid, spare.handshake, spare.host
            reporting = handshake if spare.mapped else None
        elif policy.namespaces and host is not None:
            used, host = host, None
            pid, handshake, reporting = _fork_check(boundary, child, channel, request, fds, used)
        else:
            pid, handshake, reporting = _fork_check(
                boundary, child, channel, request, fds, held=host
            )
        spare = None
        for fd in [*fds, request["ruleset_fd"]]:
            if fd is not None:
                os.close(fd)
        channel.send({"pid": pid, "wants_host": host is None})
        status = _wait_child(pid, channel, reporting)
        if status is not None:  # said first: tearing down namespaces takes a while
            # what the check left running: counted by its pid 1 (in namespaces; they die
            # with it), else here, where its orphans came back (killed below)
            if reporting is not None:
                left = reporting.left_running
            elif used is not None:
                left = used.left_running()
            else:
                left = processes.running_descendants()
            code = os.waitstatus_to_exitcode(status)
            channel.send({"exit_code": code, "left_running": left})
        _reap(pid)
        if used is not None:
            used.end()
        processes.kill_descendants()  # whatever the run left behind, wherever it went
        if handshake is not None:
            handshake.close()
        if status is None:  # the client is gone: nobody will read a result, nor clean up
            _remove_scratch(request["boundary"], child.load_sibling("_overlay"))
            if host is not None:
                host.end()
            return
        # a run stopped by a signal (the front end's Ctrl-C, a limit): the next waits until asked
        stopped = os.WIFSIGNALED(status)
        ahead = policy.namespaces and boot.get("ahead", True) and not stopped
        # made in namespaces the front end offered where it offers them (else it would
        # make namespaces of its own, three forks of this process, when an offer is due)
        if ahead and (host is not None or not boot.get("hosts")):
            if _idle(channel, IDLE_BEFORE_SPARE):  # before the rulesets' spare, so
                spare, host = _make_spare(child, channel, host), None  # it holds no fd of theirs
        rulesets.make_spare(policy)


def _idle(channel: LineChannel, seconds: float) -> bool:
    """True when no request came within `seconds` (the front end is done with the last
    result: work done now does not compete with it)."""
    if b"\n" in channel.buffer:
        return False
    ready, _, _ = select.select([channel.sock], [], [], seconds)
    return not ready


def _fork_check(
    boundary: Any,
    child: Any,
    channel: LineChannel,
    request: dict[str, Any],
    fds: list[int],
    host: Any = None,
    held: Any = None,
) -> tuple[int, Any, Any]:
    """Fork a check for `request` now, into `host` if given (a `_hosts.Host`, which it
    joins) where it can: its pid, its handshake and the handshake that reports the check's
    status (None where the check is not in namespaces of its own). `held` is a host the
    template keeps for later, which the check must not hold."""
    if host is not None:
        pid = host.fork()
        if pid == 0:
            channel.sock.close()
            entered = host.join()
            child.child_main({**request, "handshake": None, "entered": entered}, *fds)
        if pid is not None:
            return pid, None, None
        host.end()  # gone, or not ours to enter: namespaces of its own instead
    handshake = boundary.Handshake() if request["boundary"]["namespaces"] else None
    request["handshake"] = handshake
    pid = os.fork()
    if pid == 0:
        channel.sock.close()
        if held is not None:
            held.close()
        child.child_main(request, *fds)
    reporting = None
    if handshake is not None:
        handshake.parent_side()
        reporting = handshake if handshake.serve(pid) else None
    try:
        os.setpgid(pid, pid)
    except OSError:
        pass
    return pid, handshake, reporting


def _make_spare(child: Any, channel: LineChannel, host: Any) -> Any:
    """The next check, forked now into `host` (a `_hosts.Host`) or, without one, into
    namespaces of its own (see `_spare`)."""
    spare_module = child.load_sibling("_spare")

    def run(request: dict[str, Any], fds: list[int]) -> Any:
        child.child_main(request, *fds)

    boundary = child.load_sibling("_boundary")
    return spare_module.Spare.make(
        boundary, LineChannel, os.getpid(), run, [channel.sock], host=host
    )


def _reap(pid: int) -> None:
    with contextlib.suppress(ChildProcessError):
        os.waitpid(pid, 0)


def _remove_scratch(policy: dict[str, Any], overlay: Any) -> None:
    """The run's scratch folder and its copy-on-write view's folders."""
    shutil.rmtree(policy["scratch"], ignore_errors=True)
    if policy.get("view"):
        overlay.discard(overlay.View.beside("", policy["view"], make=False))
        shutil.rmtree(policy["view"], ignore_errors=True)


def _wait_child(pid: int, channel: LineChannel, reporting: Any | None) -> int | None:
    """The wait status of the child's check: reported by a child in namespaces (a
    `Handshake`) as soon as the check ended, else the child's own once it exited. None
    when the client closed the connection first (the front end died or gave up), after
    killing the child's process group."""
    try:
        pidfd = os.pidfd_open(pid)
    except (AttributeError, OSError):  # no pidfd here: wait without watching the client
        return os.waitpid(pid, 0)[1]
    watched = [pidfd, channel.sock.fileno()]
    if reporting is not None:
        watched.append(reporting.status_fd)
    try:
        while True:
            ready, _, _ = select.select(watched, [], [])
            if reporting is not None and reporting.status_fd in ready:
                status: int | None = reporting.read_status()
                if status is not None:
                    return status
                watched.remove(reporting.status_fd)  # it died without saying: wait for it
                continue
            if pidfd in ready:
                return os.waitpid(pid, 0)[1]
            # peeked, not read: the next request (sent once the check said how it ends,
            # before this exit) is read with the descriptors it carries after this run
            if channel.sock.recv(1, socket.MSG_PEEK):
                watched.remove(channel.sock.fileno())
                continue
            for kill, target in ((os.killpg, pid), (os.kill, pid)):
                try:
                    kill(target, signal.SIGKILL)
                except OSError:
                    pass
            os.waitpid(pid, 0)
            return None
    finally:
        os.close(pidfd)


_AHEAD: dict[Path, TemplateProcess] = {}
"""Templates started ahead (`TemplateProcess.start_ahead`), by working folder."""


class TemplateProcess:
    """Parent-side handle of one template process."""

    def __init__(
        self,
        *,
        cwd: Path,
        sys_path: list[str],
        preload: list[str],
        boot_timeout: float = 120.0,
        make_ahead: bool = True,
        hosts: bool = False,
        wait: bool = True,
    ) -> None:
        """Start the template; with `wait` (else in `booted`) wait until it has imported
        `preload` and is ready to fork checks. With `make_ahead` it makes the next check
        while idle (`_spare`); with `hosts` too, only in namespaces the front end offers
        (`offer_host`)."""
        # Parent side only: this file also runs standalone as the template's bootstrap.
        from liveforge.kernel.boundary._secrets import start_helper

        parent_end, child_end = socket.socketpair(socket.AF_UNIX, socket.SOCK_STREAM)
        argv = [sys.executable, "-c", BOOTSTRAP, __file__, str(child_end.fileno())]
        self.process = start_helper(argv, child_end.fileno(), cwd)
        child_end.close()
        self.cwd, self.preload, self.make_ahead = cwd, preload, make_ahead
        self.channel = LineChannel(parent_end)
        boot = {"sys_path": sys_path, "preload": preload, "ahead": make_ahead, "hosts": hosts}
        self.channel.send(boot)
        self.boot_timeout = boot_timeout
        self.modules: dict[str, list[Any]] = {}
        self.names: frozenset[str] = frozenset()
        self.failed: list[str] = []
        #: threads running in the template; forking a threaded process can deadlock the child
        self.threads = 0
        self.watch: Any = (
            None  # a `files._changedfiles.ChangedFiles` over `modules`' files, once booted
        )
        self._booted = False
        self._changed_at_boot: str | None = None
        if wait:
            self.booted()

    @property
    def is_ready(self) -> bool:
        """Whether `booted` has seen it ready (what it imported is known)."""
        return self._booted

    def booted(self) -> TemplateProcess:
        """This template, once it is ready (what it imported is then known); OSError when
        it exited while starting."""
        if self._booted:
            return self
        sock = self.channel.sock
        sock.settimeout(self.boot_timeout)
        try:
            ready, _ = self.channel.receive()
        except OSError:
            ready = None
        sock.settimeout(None)
        if ready is None:
            self.close()
            raise OSError("the sandbox template process exited while starting")
        self.modules = ready["modules"]
        self.names = frozenset(ready["names"])
        self.failed = ready["failed"]
        self.threads = ready["threads"]
        from liveforge.kernel.files._changedfiles import ChangedFiles  # parent side only

        self.watch = ChangedFiles(filename for filename, _, _ in self.modules.values())
        # Its first answer is "stat every file" (a file may have changed before the watch
        # began): asked now, at once, so whatever changes later is told by the events, also
        # when the next question comes late (a check made ahead on a background thread).
        self.watch.changed()
        self._changed_at_boot = self._changed_on_disk(None)
        self._booted = True
        return self

    @classmethod
    def start_ahead(cls, cwd: Path) -> None:
        """Start a bare template (nothing pre-imported, nothing made ahead) for checks in
        `cwd`, and go on: a sandbox without `ahead` takes it (`take_ahead`) for its first
        check instead of starting one then (a one-shot check starts its template while its
        front end imports). One nobody takes ends with this process."""
        if cwd not in _AHEAD:
            _AHEAD[cwd] = cls(
                cwd=cwd, sys_path=list(sys.path), preload=[], make_ahead=False, wait=False
            )

    @staticmethod
    def take_ahead(cwd: Path, preload: list[str], make_ahead: bool) -> TemplateProcess | None:
        """The template `start_ahead` started for `cwd` if it fits (bare, nothing made
        ahead) and still runs (`booted` waits for it); None otherwise."""
        if preload or make_ahead or cwd not in _AHEAD:
            return None
        template = _AHEAD.pop(cwd)
        if template.alive:
            return template
        template.close()
        return None

    @property
    def alive(self) -> bool:
        return self.process.poll() is None

    def stale_reason(self, overlay_names: Iterable[str]) -> str | None:
        """Why this template must not serve a run with that overlay, or None if it may."""
        if not self.alive:
            return "the template process exited"
        for name in overlay_names:
            if name in self.names:
                return f"the template imported {name!r}, which the overlay replaces"
        if self._changed_at_boot is not None:
            return self._changed_at_boot
        seen = self.watch.changed() if self.watch is not None else None
        if seen is not None and not seen:
            return None  # the watch saw none of the files change
        return self._changed_on_disk(seen)

    def _changed_on_disk(self, seen: set[str] | None) -> str | None:
        """Why a module file differs from what the template imported: among `seen` (the
        files the watch saw change), or any whose stat differs when `seen` is None."""
        for name, (filename, mtime_ns, size) in self.modules.items():
            if seen is not None and filename not in seen:
                continue  # the watch saw no change of it
            try:
                info = os.stat(filename)
            except OSError:
                return f"{filename} (module {name!r}) disappeared"
            if seen is not None or info.st_mtime_ns != mtime_ns or info.st_size != size:
                return f"{filename} (module {name!r}) changed on disk"
        return None

    def start_run(self, request: dict[str, Any], fds: list[int]) -> None:
        """Ask the template to fork a child for `request` with stdout, stderr and result pipe
        ends `fds`; the replies arrive on `sock`."""
        self.channel.send(request, fds=fds)

    def offer_host(self, fds: list[int], proc_note: str | None) -> None:
        """Give the template namespaces made ahead for its next check in namespaces
        (`_hosts.Host.fds`: a pidfd of their pid 1, their lifeline); OSError when it is
        gone."""
        self.channel.send({"offer": proc_note}, fds=fds)

    @property
    def sock(self) -> socket.socket:
        return self.channel.sock

    def close(self) -> None:
        """Stop the template (end of stream, then SIGKILL if it lingers)."""
        if self.watch is not None:
            self.watch.close()
        try:
            self.channel.sock.close()
        except OSError:
            pass
        try:
            self.process.wait(timeout=2)
        except subprocess.TimeoutExpired:
            self.process.kill()
            self.process.wait()
