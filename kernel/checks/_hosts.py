"""Namespaces made ahead for checks: hosts that a check is forked into, or joins.

A check in namespaces of its own takes three forks (`_namespaces.enter`: the relay, pid 1,
the check) of a big process: the front end (158 MB in the bench) for a live check
(`_livefork`), the sandbox template (about 50 MB) for a fresh-import one, and every fork
copies page tables, and every write after it copies a page. A *host* cuts that to one. The
host maker, a small interpreter started with a scrubbed environment (it never holds the
front end's keys), makes each host while the front end is idle:

    the maker             clones pid 1 straight into new user, mount and pid namespaces
                          (`_namespaces.fork_in_new`: no relay) and writes its id maps
      pid 1               becomes root there, mounts a /proc of the namespace, sends the
                          front end a pidfd of itself and its lifeline's write end, then
                          reaps orphans until it is killed or every holder let go

A live check is forked straight into the host's pid namespace where the front end may
enter it (`_namespaces.fork_into`, root), else the live fork joins the namespaces and forks
the check into them (`_namespaces.join`). The sandbox offers hosts to its template too
(where it may enter them), which forks its next check into one while idle (`_spare`).
When the check ends its pid 1 is killed, and every process of the namespace with it.

    hosts = Hosts(keep=2)   # hosts kept ready: one for each of a verify's two checks
    host = hosts.take()     # a Host, or None (not ready: the check enters namespaces itself)
    ...                     # the live check joins it, then:
    host.end()              # kills the host's pid 1 whatever happened
    hosts.refill()          # the next one is made while the front end is idle
    hosts.close()

A host serves one check. Its pid 1 dies with the maker (parent-death signal) and when every
copy of its lifeline is closed (the front end's, or the template's it was offered to: a
killed template leaves no namespace behind); the maker ends when the front end closes its
socket or dies. The maker's side uses the standard library only and is loaded by file path
(see `_child.load_sibling`).
"""

from __future__ import annotations

import contextlib
import ctypes
import os
import select
import signal
import socket
import subprocess
import sys
import threading
from dataclasses import dataclass
from pathlib import Path

if __package__:  # imported as liveforge.kernel.checks._hosts
    from liveforge.kernel.boundary import _namespaces, _overlay, _processes
else:  # loaded by file path in the maker (see `BOOTSTRAP`)
    _sibling = sys.modules["_liveforge_sandbox_loader"].load_sibling
    _overlay, _processes = _sibling("_overlay"), _sibling("_processes")
    _namespaces = _sibling("_namespaces")

__all__ = ["Host", "Hosts", "serve"]

BOOTSTRAP = (
    "import importlib.util as u, sys\n"
    "s = u.spec_from_file_location('_liveforge_sandbox_child', sys.argv[1])\n"
    "m = u.module_from_spec(s); sys.modules[s.name] = m; s.loader.exec_module(m)\n"
    "m.load_sibling('_hosts').serve(int(sys.argv[2]))\n"
)
ASK, READY, HOST, REFUSED = b"?", b"r", b"h", b"!"
"""Messages: the front end asks for a host; the maker is ready; a host (with its pidfd,
and why its /proc is not private if it is not); a refusal (why)."""
PR_SET_DUMPABLE = 4
FLAGS = _overlay.CLONE_NEWUSER | _overlay.CLONE_NEWNS | _overlay.CLONE_NEWPID


@dataclass
class Host:
    """Namespaces made ahead for one check: a pidfd of their pid 1, and its lifeline. The
    front end holds it, or gives it away (`fds`, then `close`) to the template, whose
    check is forked into it (`fork`, then `join` in the check)."""

    pidfd: int
    lifeline: int
    """The write end of a pipe the host's pid 1 watches: it ends (and its namespace with
    it) once every copy is closed, so a host lives no longer than who holds it."""
    proc_note: str | None = None
    """Why the namespace has the machine's /proc, or None when it has its own."""
    check_lifeline: int | None = None
    """Held while a check forked into the host runs: the check dies when it is closed."""

    @property
    def fds(self) -> list[int]:
        """What to send to give the host away (`close` then)."""
        return [self.pidfd, self.lifeline]

    def fork(self) -> int | None:
        """Fork a child into the host's pid namespace (`_namespaces.fork_into`): its pid, 0
        in the child (which then calls `join`), or None, with nothing forked, where this
        process may not enter it or the host is gone."""
        forked = _namespaces.fork_into(self.pidfd)
        if forked is None:
            return None
        pid, self.check_lifeline = forked
        if pid == 0:  # the host is the forking process's to hold, not the check's
            os.close(self.lifeline)
            self.lifeline = -1
            return 0
        with contextlib.suppress(OSError):  # before the check forks: its tree is one group
            os.setpgid(pid, pid)
        return int(pid)

    def join(self) -> _namespaces.Entered:
        """In the child `fork` made: join the host's user and mount namespaces; what was
        entered (where the kernel refuses, it says why)."""
        assert self.check_lifeline is not None
        try:
            return _namespaces.join_forked(self.pidfd, self.proc_note, self.check_lifeline)
        except OSError as exc:  # in the host's pid namespace already: no way back
            return _namespaces.Entered(reason=str(exc))

    def left_running(self) -> int:
        """How many processes of the host's namespace still run besides its pid 1."""
        try:
            with open(f"/proc/self/fdinfo/{self.pidfd}") as file:
                init = next(int(line.split()[1]) for line in file if line.startswith("Pid:"))
        except (OSError, StopIteration, ValueError, IndexError):
            return 0
        return _processes.running_descendants(init) if init > 0 else 0

    def close(self) -> None:
        """Let go of the host without ending it: given to who ends it, or in a child that
        must not hold it. Closing again does nothing."""
        for fd in (self.pidfd, self.lifeline, self.check_lifeline):
            if fd is not None and fd >= 0:
                with contextlib.suppress(OSError):
                    os.close(fd)
        self.pidfd, self.lifeline, self.check_lifeline = -1, -1, None

    def end(self) -> None:
        """Kill the host's pid 1 (the namespace ends, and what runs in it: a check forked
        into it dies with its lifeline too) and let go."""
        if self.pidfd >= 0:
            with contextlib.suppress(OSError):
                signal.pidfd_send_signal(self.pidfd, signal.SIGKILL)
        self.close()


class Hosts:
    """The front end's side: starts the maker on first use and keeps `keep` hosts ready."""

    def __init__(self, wait: float = 1.0, keep: int = 1) -> None:
        #: seconds `take` waits for a host being made (the maker is up)
        self.wait = wait
        #: hosts kept ready (or being made) between checks
        self.keep = keep
        #: why hosts cannot be made here (then `take` is always None)
        self.refused: str | None = None
        self._lock = threading.Lock()
        self._process: subprocess.Popen[bytes] | None = None
        self._sock: socket.socket | None = None
        self._ready = False
        self._asked = 0
        self._stock: list[Host] = []
        self._starts = 0

    @staticmethod
    def available() -> bool:
        """True where hosts can be joined (Linux with pidfds and setns)."""
        return sys.platform.startswith("linux") and hasattr(os, "pidfd_open")

    def take(self, wait: bool = True, starting: bool = False) -> Host | None:
        """A host for the next check, or None when none is ready (the maker is still
        starting, or cannot make them); with `wait`, one being made is waited for (up to
        `self.wait` seconds), with `starting` also a maker that is starting. `refill` asks
        for the next one."""
        with self._lock:
            if self.refused is not None or not self.available():
                return None
            if self._sock is None:
                self._start()
            self._receive(self.wait if starting and not self._ready else 0)
            if not self._stock and self._ready and not self._asked:
                self._ask()
            if not self._stock and self._ready and wait:
                self._receive(self.wait)
                if not self._stock:  # the maker is stuck: a new one next time
                    self._stop(kill=True)
            return self._stock.pop(0) if self._stock else None

    def put_back(self, host: Host) -> None:
        """Keep `host`, taken but not used, for the next `take`."""
        with self._lock:
            self._stock.insert(0, host)

    def refill(self) -> None:
        """Ask for the next hosts, up to `keep` ready or being made (after a check, so the
        maker's work does not compete with it)."""
        with self._lock:
            if self._sock is not None:
                self._top_up()

    def _top_up(self) -> None:
        while self._sock is not None and len(self._stock) + self._asked < self.keep:
            self._ask()

    def close(self) -> None:
        """End the hosts made ahead and stop the maker (a `take` after starts a new one: a
        maker stopped here does not count as one that kept exiting)."""
        with self._lock:
            for host in self._stock:
                host.end()
            self._stock.clear()
            self._stop()
            self._starts = 0

    def _start(self) -> None:
        if self._starts >= 3:
            self.refused = "the host maker kept exiting"
            return
        self._starts += 1
        ours, theirs = socket.socketpair(socket.AF_UNIX, socket.SOCK_SEQPACKET)
        from liveforge.kernel.boundary._secrets import start_helper  # front end only

        child = str(Path(__file__).with_name("_child.py"))
        argv = [sys.executable, "-I", "-S", "-c", BOOTSTRAP, child, str(theirs.fileno())]
        try:
            self._process = start_helper(argv, theirs.fileno())
        except OSError as exc:
            self.refused = f"the host maker could not start: {exc}"
            return
        finally:
            theirs.close()
        self._sock, self._ready, self._asked = ours, False, 0
        self._top_up()

    def _ask(self) -> None:
        assert self._sock is not None
        try:
            self._sock.send(ASK)
            self._asked += 1
        except OSError:
            self._stop()

    def _receive(self, wait: float) -> None:
        """Take in what the maker sent, waiting up to `wait` seconds for a host."""
        while self._sock is not None:
            ready, _, _ = select.select([self._sock], [], [], wait)
            if not ready:
                return
            try:
                data, fds, _, _ = socket.recv_fds(self._sock, 4096, 2)
            except OSError:
                data, fds = b"", []
            if not data:  # the maker is gone: a new one next time
                for fd in fds:
                    os.close(fd)
                self._stop()
                return
            kind, text = data[:1], data[1:].decode(errors="replace")
            if kind == READY:
                self._ready = True
                continue
            self._asked = max(0, self._asked - 1)
            if kind == HOST and len(fds) == 2:
                self._stock.append(Host(fds[0], fds[1], text or None))
                return
            for fd in fds:
                os.close(fd)
            if kind == REFUSED:
                self.refused = text
                return

    def _stop(self, kill: bool = False) -> None:
        sock, process = self._sock, self._process
        self._sock, self._process, self._ready, self._asked = None, None, False, 0
        if sock is not None:
            sock.close()
        if process is not None and kill:
            process.kill()
        if process is not None:
            try:
                process.wait(timeout=2)
            except subprocess.TimeoutExpired:
                process.kill()
                process.wait()


# --- the maker (standard library only) ---------------------------------------------------


def serve(sock_fd: int) -> None:
    """The maker's loop: a host for each request, until the front end closes the socket."""
    sock = socket.socket(fileno=sock_fd)
    maker = os.pidfd_open(os.getpid())  # readable once the maker ended: the hosts' lifeline
    sock.send(READY)
    while True:
        try:
            request = sock.recv(16)
        except OSError:
            request = b""
        _reap()
        if request != ASK:
            return
        handshake = _namespaces.Handshake()
        try:
            pid = _namespaces.fork_in_new(FLAGS)
        except OSError as exc:
            handshake.abandon()
            _refuse(sock, f"the kernel refused new namespaces: {exc.strerror or exc}")
            continue
        if pid == 0:
            try:
                _init(sock, handshake, maker)
            finally:
                os._exit(0)
        handshake.parent_side()
        handshake.serve(pid)
        handshake.close()


def _reap() -> None:
    with contextlib.suppress(ChildProcessError):
        while os.waitpid(-1, os.WNOHANG)[0]:
            pass


def _refuse(sock: socket.socket, reason: str) -> None:
    with contextlib.suppress(OSError):
        sock.send(REFUSED + reason.encode()[:4000])


def _init(sock: socket.socket, handshake: _namespaces.Handshake, maker: int) -> None:
    """Pid 1 of a host, born in its namespaces: its ids mapped, root there, a /proc of its
    own, then its pidfd to the front end; then reap whatever is orphaned in the namespace
    until it is killed (which ends the namespace) or the maker ends (`maker`, a pidfd)."""
    handshake.child_side()
    try:
        handshake.ask()
    except OSError as exc:
        _refuse(sock, str(exc))
        return
    _namespaces.become_root()
    _namespaces.die_with_lifeline(maker)  # new credentials cleared any parent-death signal
    signal.signal(signal.SIGINT, signal.SIG_DFL)
    # joinable by the front end's user: new credentials made this process non-dumpable
    ctypes.CDLL(None).prctl(PR_SET_DUMPABLE, 1, 0, 0, 0)
    notes: list[str] = []
    _namespaces.mount_proc(notes)
    me = os.pidfd_open(os.getpid())
    lifeline, held = os.pipe()
    with contextlib.suppress(OSError):
        socket.send_fds(sock, [HOST + " ".join(notes).encode()], [me, held])
    _namespaces.close_all_but(lifeline)
    signal.signal(signal.SIGCHLD, lambda *_: _reap())
    _reap()
    select.select([lifeline], [], [])  # until every holder closed it (or a kill)
