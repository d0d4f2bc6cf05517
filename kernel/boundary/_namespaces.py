"""A check's own namespaces: user (root of the check is nobody outside), mount (for the
copy-on-write project and a /proc of its own) and pid (everything the check starts dies
with it).

    handshake = Handshake()                 # in the parent, before it forks the check
    pid = os.fork()
    if pid == 0:
        handshake.child_side()
        entered = enter(handshake, view)    # returns in the check; see below
        ...                                 # the boundary, then the check's own work
    handshake.parent_side()
    handshake.serve(pid)                    # writes the child's id maps

`enter` unshares user, mount and pid namespaces and asks the parent for its id maps. A
parent that is root maps the child's root to `CHECK_ID`, an id no account has, and every
other id to itself: the kernel exempts uid 0 from RLIMIT_NPROC whatever its capabilities, so
a check that stayed uid 0 could fork without end. An unprivileged parent maps the child's
root to its own ids. The child then becomes root of its namespace, mounts the copy-on-write
`view` (see `_overlay`) and forks:

    the calling process   relays: waits for pid 1 and ends as the check ended
      pid 1 (init)        mounts a /proc of the namespace, reaps, reports the check's status
        pid 2 (the check) returns from `enter`

The check is not pid 1 itself, because pid 1 ignores every signal it has no handler for
(`os.kill(os.getpid(), SIGTERM)` would do nothing). When pid 1 ends (the check ended, or
its parent died: each level has a parent-death SIGKILL) the kernel kills every process of
the namespace, `setsid` escapees included.

A check forked from a big process (the front end for a live check, the sandbox template
for a fresh-import one: every fork copies page tables) joins namespaces made ahead instead
(a host from `_hosts`, whose pid 1 the small host maker made with `fork_in_new`): no id
maps to wait for. Where this process may enter the host's pid namespace (`fork_into`: it
needs CAP_SYS_ADMIN in its own user namespace, i.e. root) the check is forked straight
into it, then joins the host's user and mount namespaces (`join_forked`): one fork of the
big process. Elsewhere a live fork joins them and forks the check (`join`): two.

    the front end         fork_into: forks the check into the host's pid namespace
      the check           pid 2 there; joins the host's user and mount namespaces

    the live fork         join: joins the host's namespaces; waits, then kills its pid 1
      the check           pid 2 of the host's pid namespace, returns from `join`

Standard library only: sandbox children load this file by path.
"""

from __future__ import annotations

import contextlib
import ctypes
import errno
import os
import resource
import select
import signal
import struct
import sys
from dataclasses import dataclass, field
from typing import Any, NoReturn

if __package__:  # imported as liveforge.kernel.boundary._namespaces
    from liveforge.kernel.boundary import _overlay, _processes
else:  # loaded by file path in a sandbox child, after `_overlay` and `_processes` (see
    # `_boundary`)
    _overlay = sys.modules["_liveforge_sandbox_overlay"]
    _processes = sys.modules["_liveforge_sandbox_processes"]

__all__ = [
    "CHECK_ID",
    "Entered",
    "Handshake",
    "become_root",
    "check_ids",
    "close_all_but",
    "die_with_lifeline",
    "enter",
    "fork_in_new",
    "fork_into",
    "id_maps",
    "join",
    "join_forked",
    "may_fork_into",
    "mount_proc",
    "mount_view",
]

CHECK_ID = 2**31 - 16
"""The id outside that a check run by root has: no account has it, nothing else counts
against its process limit."""
PR_SET_PDEATHSIG = 1
MS_NOSUID, MS_NODEV, MS_NOEXEC = 2, 4, 8
ASK, MAPPED, NO_NAMESPACES = b"?", b"+", b"-"
LAST_ID = 2**32 - 2  # (uid_t)-1 is no id

_libc = ctypes.CDLL(None, use_errno=True)


def id_maps(uid: int, gid: int) -> tuple[str, str, bool]:
    """The uid map and gid map a parent with these ids writes for its check's namespace,
    and whether setgroups must be denied first (an unprivileged writer needs that)."""
    if uid != 0:
        return f"0 {uid} 1\n", f"0 {gid} 1\n", True
    layout = _identity_but_root(CHECK_ID)
    return layout, layout, False


def check_ids() -> tuple[int, int]:
    """The uid and gid outside that a check this process starts in namespaces has (what
    should own the check's scratch folder, so that it is the check's own in there)."""
    if os.geteuid() == 0:
        return CHECK_ID, CHECK_ID
    return os.geteuid(), os.getegid()


def _identity_but_root(outside: int) -> str:
    """Root inside is `outside` outside, `outside` inside is root outside, every other id
    itself (so files keep their owners, and capabilities in the namespace cover them)."""
    return (
        f"0 {outside} 1\n1 1 {outside - 1}\n{outside} 0 1\n"
        f"{outside + 1} {outside + 1} {LAST_ID - outside}\n"
    )


class Handshake:
    """Two pipes between a parent and the child it forks: the child asks for its id maps
    once it has unshared its namespaces, the parent writes them and answers; later the
    child reports the check's wait status on the same pipe as soon as the check ends (the
    namespaces' teardown, which can take milliseconds, is nobody's wait), with how many
    processes of the check were still running then (`left_running`; the teardown kills
    them)."""

    def __init__(self) -> None:
        self.ask_read, self.ask_write = os.pipe()
        self.answer_read, self.answer_write = os.pipe()
        self.left_running = 0

    def child_side(self) -> None:
        """In the child, right after the fork: drop the parent's ends."""
        _close(self.ask_read, self.answer_write)

    def parent_side(self) -> None:
        """In the parent, right after the fork: drop the child's ends."""
        _close(self.ask_write, self.answer_read)

    def serve(self, pid: int) -> bool:
        """Write the id maps of child `pid` when it asks; False when it stays in this
        process's namespaces (or died first). Then `status_fd` tells when the check ended."""
        try:
            if os.read(self.ask_read, 1) != ASK:
                return False
            try:
                uid_map, gid_map, deny = id_maps(os.geteuid(), os.getegid())
                _overlay.write_ids(pid, uid_map, gid_map, deny_setgroups=deny)
                answer = MAPPED
            except OSError as exc:
                answer = f"!{exc}".encode()[:4000]
            os.write(self.answer_write, answer)
            return answer == MAPPED
        except OSError:  # the child died before it asked or before it heard the answer
            return False
        finally:
            _close(self.answer_write)

    @property
    def status_fd(self) -> int:
        """Readable (in the parent) when the check ended: `read_status` then has its wait
        status, or None when the child died without saying."""
        return self.ask_read

    def read_status(self) -> int | None:
        data = b""
        with contextlib.suppress(OSError):
            while len(data) < 8 and (chunk := os.read(self.ask_read, 8 - len(data))):
                data += chunk
        if len(data) != 8:
            return None
        status, self.left_running = struct.unpack("ii", data)
        return int(status)

    def close(self) -> None:
        """In the parent, after the run."""
        _close(self.ask_read)

    def abandon(self) -> None:
        """In the parent, when no child was forked: close every end."""
        _close(self.ask_read, self.ask_write, self.answer_read, self.answer_write)

    def decline(self) -> None:
        """In the child: tell the parent it stays in the parent's namespaces."""
        os.write(self.ask_write, NO_NAMESPACES)
        _close(self.ask_write, self.answer_read)

    def ask(self) -> None:
        """In the child, after unsharing: have the parent write the id maps; OSError when
        the parent could not."""
        os.write(self.ask_write, ASK)
        answer = os.read(self.answer_read, 4096)
        _close(self.answer_read)
        if answer != MAPPED:
            raise OSError(f"the parent could not map the check's ids: {answer[1:].decode()}")

    def report(self, status: int, left_running: int = 0) -> None:
        """In the child's relay: the check's wait status, and how many of its processes
        were still running when it ended, for the parent."""
        with contextlib.suppress(OSError):
            os.write(self.ask_write, struct.pack("ii", status, left_running))


def _close(*fds: int) -> None:
    for fd in fds:
        with contextlib.suppress(OSError):
            os.close(fd)


@dataclass
class Entered:
    """What `enter` set up (plain data for the run record)."""

    namespaces: bool = False
    reason: str | None = None
    project: str = "read-only"
    project_reason: str | None = None
    private_proc: bool = False
    processes_at_start: int = 0
    notes: list[str] = field(default_factory=list)


def enter(handshake: Handshake, view: Any | None) -> Entered:
    """Move this freshly forked child into namespaces of its own (see the module's text);
    returns in the check, pid 2 of the new pid namespace, with the copy-on-write `view`
    (an `_overlay.View`, or None for none) mounted. When the kernel refuses the namespaces
    the child stays where it is, says why, and the parent hears so."""
    entered = Entered()
    parent = os.getppid()
    flags = _overlay.CLONE_NEWUSER | _overlay.CLONE_NEWNS | _overlay.CLONE_NEWPID
    try:
        _overlay.unshare(flags)
    except OSError as exc:
        handshake.decline()
        entered.reason = f"the kernel refused new namespaces: {exc.strerror or exc}"
        return entered
    handshake.ask()
    become_root()
    # new credentials clear the parent-death signal: arm it again
    _libc.prctl(PR_SET_PDEATHSIG, signal.SIGKILL, 0, 0, 0)
    if os.getppid() != parent:
        os._exit(0)
    entered.namespaces = True
    mount_view(entered, view)
    _relay(handshake, entered)
    return entered


def join(host: int, proc_note: str | None, handshake: Handshake | None = None) -> Entered:
    """Join the user, mount and pid namespaces of a host made ahead (`_hosts`; `host` is a
    pidfd of its pid 1, `proc_note` says why its /proc is not private, None when it is),
    then fork the check into them: returns in the check, root of the namespaces. This
    process waits for the check, kills the host's pid 1 (every process of the namespace
    dies with it) and ends as the check ended. OSError, with nothing changed, when the
    kernel refuses (the host is gone); `handshake` hears that the parent need not write id
    maps once the namespaces are joined."""
    flags = _overlay.CLONE_NEWUSER | _overlay.CLONE_NEWNS | _overlay.CLONE_NEWPID
    if _libc.setns(host, flags) != 0:
        code = ctypes.get_errno()
        raise OSError(code, f"joining the check's namespaces: {os.strerror(code)}")
    if handshake is not None:
        handshake.decline()
    lifeline_read, lifeline_write = os.pipe()
    check = os.fork()
    if check == 0:
        _close(lifeline_write, host)
        become_root()
        die_with_lifeline(lifeline_read)
        notes = [] if proc_note is None else [proc_note]
        return Entered(
            namespaces=True,
            private_proc=proc_note is None,
            processes_at_start=3,  # the host's relay and pid 1, and the check
            notes=notes,
        )
    close_all_but(lifeline_write, host)  # only the check holds the run's pipes
    _, status = os.waitpid(check, 0)
    with contextlib.suppress(OSError):
        signal.pidfd_send_signal(host, signal.SIGKILL)
    end_as(status)


def fork_into(host: int) -> tuple[int, int] | None:
    """Fork a child straight into the pid namespace of a host made ahead (`host` is a pidfd
    of its pid 1): (its pid, or 0 in the child; the child's lifeline, see `join_forked`), or
    None, with nothing forked, where this thread may not enter that namespace (it needs
    CAP_SYS_ADMIN in this process's user namespace) or the host is gone. Only the calling
    thread's children go there: it is back in its own pid namespace when this returns."""
    own = os.open("/proc/thread-self/ns/pid", os.O_RDONLY | os.O_CLOEXEC)
    try:
        if _libc.setns(host, _overlay.CLONE_NEWPID) != 0:
            return None
        lifeline_read, lifeline_write = os.pipe()
        try:
            pid = os.fork()
        except OSError:  # the host's pid 1 died since: its namespace takes no process
            _close(lifeline_read, lifeline_write)
            pid = -1
        except BaseException:
            _set_pid_namespace(own)
            raise
        if pid != 0:
            _set_pid_namespace(own)
    finally:
        os.close(own)
    if pid < 0:
        return None
    if pid == 0:
        os.close(lifeline_write)
        return 0, lifeline_read
    os.close(lifeline_read)
    return pid, lifeline_write


CAP_SYS_ADMIN = 21
_SYS_CLONE = {"x86_64": 56, "aarch64": 220, "riscv64": 220, "ppc64le": 120}
"""The clone system call's number on machines where its first argument is the flags (not
on s390x, where it is the stack: there hosts are not made, and checks enter namespaces of
their own)."""
_python_libc = ctypes.PyDLL(None, use_errno=True)  # holds the GIL across the call


def fork_in_new(flags: int) -> int:
    """`os.fork`, with the child born in the new namespaces `flags` ask for (clone(2)):
    0 in the child, its pid in the parent; OSError where the kernel refuses. With
    CLONE_NEWPID the child is pid 1 of its namespace: no process relays for it, as one
    that unshares must. Like `os.fork` it runs the interpreter's fork hooks; unlike it, not
    the C library's, so the caller must have a single thread and the child must not rely
    on the C library's cached thread id (`raise`, `pthread_kill`)."""
    number = _SYS_CLONE.get(os.uname().machine)
    if number is None:
        raise OSError(errno.ENOSYS, f"clone with namespaces is not known on {os.uname().machine}")
    api = ctypes.pythonapi
    api.PyOS_BeforeFork()
    pid = _python_libc.syscall(
        ctypes.c_long(number), ctypes.c_ulong(flags | signal.SIGCHLD), None, None, None, None
    )
    if pid == 0:
        api.PyOS_AfterFork_Child()
        return 0
    code = ctypes.get_errno()
    api.PyOS_AfterFork_Parent()
    if pid < 0:
        raise OSError(code, os.strerror(code))
    return int(pid)


def may_fork_into() -> bool:
    """Whether `fork_into` can work in this process: it has CAP_SYS_ADMIN (root, or the
    root of a user namespace it made), which entering another pid namespace needs."""
    try:
        with open("/proc/self/status") as file:
            for line in file:
                if line.startswith("CapEff:"):
                    return bool(int(line.split()[1], 16) >> CAP_SYS_ADMIN & 1)
    except (OSError, ValueError, IndexError):
        pass
    return False


def _set_pid_namespace(fd: int) -> None:
    """The pid namespace of this thread's next children: the one `fd` refers to."""
    if _libc.setns(fd, _overlay.CLONE_NEWPID) != 0:
        code = ctypes.get_errno()
        raise OSError(code, f"returning to this pid namespace: {os.strerror(code)}")


def join_forked(
    host: int, proc_note: str | None, lifeline: int, handshake: Handshake | None = None
) -> Entered:
    """In a child `fork_into` forked into a host's pid namespace (`lifeline` is what it
    returned there): join the host's user and mount namespaces and become their root. The
    child dies with the thread that forked it (and, being in the host's pid namespace, with
    the host's pid 1: the front end kills it when the check is done). OSError when the
    kernel refuses; `handshake` hears that the parent need not write id maps."""
    flags = _overlay.CLONE_NEWUSER | _overlay.CLONE_NEWNS
    if _libc.setns(host, flags) != 0:
        code = ctypes.get_errno()
        raise OSError(code, f"joining the check's namespaces: {os.strerror(code)}")
    if handshake is not None:
        handshake.decline()
    os.close(host)
    become_root()
    die_with_lifeline(lifeline)  # new credentials cleared any parent-death signal
    return Entered(
        namespaces=True,
        private_proc=proc_note is None,
        processes_at_start=3,  # the host's relay and pid 1, and the check
        notes=[] if proc_note is None else [proc_note],
    )


def mount_view(entered: Entered, view: Any | None) -> None:
    """Mount the copy-on-write `view` in the namespaces `entered` describes (a check made
    ahead of its run mounts its view when the run comes, so it sees the project as it is
    then); where it cannot, `entered` says why and the project stays read-only."""
    if view is None or not entered.namespaces:
        return
    try:
        _overlay.mount(view)
        entered.project = "copy-on-write"
    except OSError as exc:
        entered.project_reason = str(exc)


def become_root() -> None:
    """uid and gid 0 of the namespace (the check's own ids outside), no other groups."""
    with contextlib.suppress(OSError):  # denied where an unprivileged parent mapped us
        os.setgroups([])
    os.setresgid(0, 0, 0)
    os.setresuid(0, 0, 0)


def _relay(handshake: Handshake, entered: Entered) -> None:
    """Fork pid 1; in this process wait for it and end as the check ended (never return)."""
    status_read, status_write = os.pipe()
    lifeline_read, lifeline_write = os.pipe()
    pid = os.fork()
    if pid == 0:
        _close(status_read, lifeline_write, handshake.ask_write)
        die_with_lifeline(lifeline_read)
        _init(status_write, entered)
        return
    # only the check holds the run's pipes (output, result): they end when it ends
    close_all_but(status_read, lifeline_write, handshake.ask_write)
    data = os.read(status_read, 8)
    status, left = struct.unpack("ii", data) if len(data) == 8 else (None, 0)
    if status is not None:
        handshake.report(status, left)
    _, init_status = os.waitpid(pid, 0)
    end_as(init_status if status is None else status)


def _init(status_fd: int, entered: Entered) -> None:
    """Pid 1: mount /proc, fork the check (which returns), reap every orphan, and write
    the check's wait status to `status_fd` when it ends, with how many processes it left
    running (then this namespace ends, and they with it)."""
    signal.signal(signal.SIGINT, signal.SIG_DFL)
    entered.private_proc = mount_proc(entered.notes)
    check = os.fork()
    if check == 0:  # no parent-death signal needed: the kernel kills it with pid 1
        os.close(status_fd)
        signal.signal(signal.SIGINT, signal.default_int_handler)
        entered.processes_at_start = 3  # the relay, pid 1 and the check
        return
    close_all_but(status_fd)
    while True:
        try:
            pid, status = os.waitpid(-1, 0)
        except ChildProcessError:
            os._exit(0)
        if pid == check:  # its orphans are pid 1's children by now
            left = _processes.running_descendants()
            os.write(status_fd, struct.pack("ii", status, left))
            os._exit(0)


def close_all_but(*keep: int) -> None:
    """Close every descriptor of this process but `keep` (standard streams included)."""
    start = 0
    for fd in sorted(keep):
        os.closerange(start, fd)
        start = fd + 1
    os.closerange(start, resource.getrlimit(resource.RLIMIT_NOFILE)[0])


def mount_proc(notes: list[str]) -> bool:
    """Mount a /proc of this process's pid namespace (as its pid 1); False, with a note
    saying why, where the kernel refuses."""
    flags = MS_NOSUID | MS_NODEV | MS_NOEXEC
    if _libc.mount(b"proc", b"/proc", b"proc", flags, None) == 0:
        return True
    reason = os.strerror(ctypes.get_errno())
    notes.append(f"the check sees the machine's /proc (a private one was refused: {reason})")
    return False


def die_with_lifeline(lifeline: int) -> None:
    """SIGKILL this process when its parent dies; exit now if it already has (the parent
    holds the lifeline's other end until it dies)."""
    _libc.prctl(PR_SET_PDEATHSIG, signal.SIGKILL, 0, 0, 0)
    ready, _, _ = select.select([lifeline], [], [], 0)
    if ready:
        os._exit(0)
    os.close(lifeline)


def end_as(status: int) -> NoReturn:
    """Exit with the wait status `status`: the same exit code, or the same signal."""
    if os.WIFSIGNALED(status):
        number = os.WTERMSIG(status)
        resource.setrlimit(resource.RLIMIT_CORE, (0, 0))  # no core file of the relay
        with contextlib.suppress(OSError, ValueError):
            signal.signal(number, signal.SIG_DFL)
            signal.pthread_sigmask(signal.SIG_UNBLOCK, [number])
            os.kill(os.getpid(), number)
        os._exit(128 + number)
    os._exit(os.waitstatus_to_exitcode(status))
