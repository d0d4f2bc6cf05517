"""A check's processes and privileges: who may signal and outlive whom.

- `protect_process`: the front end is non-dumpable, so no check reads its /proc files;
- `become_subreaper` / `kill_descendants`: the sandbox's template gets back every orphan a
  run leaves (`setsid`, double forks) and kills them after the run (where a check has no pid
  namespace of its own, see `_namespaces`); `running_descendants` counts them first, so the
  result can say how many were still running;
- `die_with_parent`: a check is SIGKILLed when the process that forked it dies;
- `drop_capabilities`: a check keeps no capability it could use to lift its limits.

Standard library only: sandbox children load this file by path.
"""

from __future__ import annotations

import ctypes
import errno
import os
import signal
import sys
import time

__all__ = [
    "FILE_CAPABILITIES",
    "become_subreaper",
    "die_with_parent",
    "drop_capabilities",
    "in_user_namespace",
    "kill_descendants",
    "protect_process",
    "running_descendants",
]

LINUX = sys.platform.startswith("linux")
PR_SET_PDEATHSIG = 1
PR_SET_DUMPABLE = 4
PR_CAPBSET_DROP = 24
PR_SET_CHILD_SUBREAPER = 36
# CAP_CHOWN, CAP_DAC_OVERRIDE, CAP_DAC_READ_SEARCH, CAP_FOWNER, CAP_FSETID: what root of a
# check's user namespace keeps to use the project's files as their owner outside could
FILE_CAPABILITIES = (1 << 0) | (1 << 1) | (1 << 2) | (1 << 3) | (1 << 4)
_CAP_V3 = 0x20080522

_libc = ctypes.CDLL(None, use_errno=True)


class _CapHeader(ctypes.Structure):
    _fields_ = [("version", ctypes.c_uint32), ("pid", ctypes.c_int)]


class _CapData(ctypes.Structure):
    _fields_ = [
        ("effective", ctypes.c_uint32),
        ("permitted", ctypes.c_uint32),
        ("inheritable", ctypes.c_uint32),
    ]


def drop_capabilities(keep: int = 0) -> None:
    """No capabilities but `keep` (a mask of capability bits below 32), now or after exec:
    root keeps its uid but loses its overrides (raising hard limits, reading other
    processes' memory, changing ids)."""
    if not LINUX or (os.geteuid() != 0 and not _has_capabilities()):
        return
    cap = 0
    while cap <= 63:
        if not keep & (1 << cap) and _libc.prctl(PR_CAPBSET_DROP, cap, 0, 0, 0) != 0:
            if ctypes.get_errno() == errno.EINVAL:
                break  # past the last capability this kernel knows
        cap += 1
    data = (_CapData * 2)()
    data[0].effective = data[0].permitted = keep
    _libc.capset(ctypes.byref(_CapHeader(_CAP_V3, 0)), data)


def in_user_namespace() -> bool:
    """True inside a user namespace other than the initial one (a check's own, or the one
    of a check this process runs in): capabilities there cover only what it maps."""
    try:
        with open("/proc/self/uid_map") as ids:
            return ids.read().split() != ["0", "0", "4294967295"]
    except OSError:
        return False


def _has_capabilities() -> bool:
    try:
        with open("/proc/self/status") as status:
            line = next(x for x in status if x.startswith("CapEff:"))
    except (OSError, StopIteration):
        return False
    return int(line.split()[1], 16) != 0


def die_with_parent(parent_pid: int, sig: int = signal.SIGKILL) -> None:
    """Have the kernel send `sig` to this process when the thread that started it ends
    (Linux); exit now if `parent_pid` (the parent that forked us) is already gone."""
    if not LINUX:
        return
    _libc.prctl(PR_SET_PDEATHSIG, sig, 0, 0, 0)
    if os.getppid() != parent_pid:  # it died before the signal was armed
        os._exit(0)


def protect_process() -> bool:
    """Make this process non-dumpable (Linux): its /proc files (environment, memory) are
    closed to other processes of the same user, and no core dump holds its keys. False
    where the platform cannot."""
    return LINUX and int(_libc.prctl(PR_SET_DUMPABLE, 0)) == 0


def become_subreaper() -> bool:
    """Make orphaned descendants of this process its children (not init's), so
    `kill_descendants` can find them; False where the platform cannot."""
    return LINUX and int(_libc.prctl(PR_SET_CHILD_SUBREAPER, 1)) == 0


def kill_descendants(timeout: float = 2.0) -> int:
    """SIGKILL every child of this process and reap it, until none is left (orphans of the
    killed ones come back to a subreaper); the number of processes reaped."""
    reaped, deadline = 0, time.monotonic() + timeout
    while (children := _children()) and time.monotonic() < deadline:
        for pid in children:
            try:
                os.kill(pid, signal.SIGKILL)
            except OSError:
                pass
        for pid in children:  # a killed parent's orphans are ours once it is reaped
            try:
                os.waitpid(pid, 0)
                reaped += 1
            except ChildProcessError:
                pass
    return reaped


def running_descendants(pid: int | str = "self") -> int:
    """How many processes below `pid` (this one) still run (exited ones not yet reaped
    aside)."""
    count, queue = 0, _children(pid)
    while queue:
        pid = queue.pop()
        try:
            with open(f"/proc/{pid}/stat") as file:
                state = file.read().rsplit(")", 1)[1].split()[0]
        except (OSError, IndexError):
            continue  # gone meanwhile
        if state not in ("Z", "X"):
            count += 1
        queue += _children(pid)
    return count


def kill_children(pid: int) -> list[int]:
    """SIGKILL each child of `pid` with its process group (a sandbox run leads one); their
    pids."""
    children = _children(pid)
    for child in children:
        try:
            os.killpg(child, signal.SIGKILL)
        except OSError:  # already gone, or not a group leader yet: the process itself
            try:
                os.kill(child, signal.SIGKILL)
            except OSError:
                pass
    return children


def _children(pid: int | str = "self") -> list[int]:
    pids: list[int] = []
    try:
        for tid in os.listdir(f"/proc/{pid}/task"):
            with open(f"/proc/{pid}/task/{tid}/children") as file:
                pids += [int(p) for p in file.read().split()]
    except OSError:
        return pids
    return pids
