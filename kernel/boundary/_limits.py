"""A check's resource limits: address space, CPU time and number of processes, as hard
limits (a check without capabilities cannot raise them again).

    set_limits(memory_mb=512, cpu_seconds=10, processes=20, notes=notes, base=None)
    refused_starts()   # process starts the limit refused (fork, spawn, subprocess)

A check that catches the error of a refused fork (and many do: a loop that starts workers
until it cannot) would otherwise end as if no limit had been hit, so the process starts of
the check's Python code are counted where they fail, in memory shared with the processes
it forks.

Standard library only: sandbox children load this file by path.
"""

from __future__ import annotations

import functools
import mmap
import os
import resource
from collections.abc import Callable
from typing import Any

__all__ = ["refused_starts", "set_limits"]

_refused: mmap.mmap | None = None
"""A counter shared with forked children: process starts refused with EAGAIN."""


def set_limits(
    *,
    memory_mb: int | None,
    cpu_seconds: float | None,
    processes: int | None,
    notes: list[str],
    base: int | None = None,
) -> dict[str, Any]:
    """Apply the limits that are not None to this process (and what it starts); the limits
    as given. `memory_mb` is added to the address space the process has now, `cpu_seconds`
    to the CPU time it has used; `processes` to `base`, the processes its user already has
    (counted in /proc when None: in a user namespace of its own it is known). Notes say
    where a limit could not bind."""
    if memory_mb is not None:
        try:
            with open("/proc/self/statm") as statm:
                current = int(statm.read().split()[0]) * resource.getpagesize()
        except OSError:  # inside another check's boundary, which keeps its own limit
            notes.append("memory: /proc/self is closed here; the enclosing limit applies")
        else:
            _hard_limit(resource.RLIMIT_AS, current + memory_mb * 1024 * 1024)
    if cpu_seconds is not None:
        used = sum(os.times()[:2])
        seconds = max(1, int(used + cpu_seconds + 0.999))
        # SIGXCPU at the soft limit, SIGKILL one second later at the hard one
        resource.setrlimit(resource.RLIMIT_CPU, (seconds, seconds + 1))
    if processes is not None:
        _process_limit(processes, base, notes)
    return {"memory_mb": memory_mb, "cpu_seconds": cpu_seconds, "processes": processes}


def _process_limit(processes: int, base: int | None, notes: list[str]) -> None:
    if os.geteuid() == 0 and base is None:
        notes.append(
            "the process limit does not bind root (the kernel exempts uid 0): "
            "no user namespace could map the check to another id"
        )
    try:
        start = _user_processes() if base is None else base
        _hard_limit(resource.RLIMIT_NPROC, start + processes)
    except OSError:  # inside another check's boundary /proc cannot be listed
        notes.append("processes: /proc is closed here; the enclosing limit applies")
    _count_refused_starts()


def refused_starts() -> int:
    """How many process starts the process limit refused so far, in this process and the
    processes it forked (0 where no process limit was set)."""
    return 0 if _refused is None else int.from_bytes(_refused[:8], "little")


def _count_refused_starts() -> None:
    """Wrap the ways Python code starts a process so that a refusal is counted."""
    global _refused
    if _refused is not None:
        return
    import _posixsubprocess
    import subprocess

    _refused = mmap.mmap(-1, 8)  # MAP_SHARED: children that fork count here too
    starts = [(os, name) for name in ("fork", "forkpty", "posix_spawn", "posix_spawnp")]
    starts += [(_posixsubprocess, "fork_exec"), (subprocess, "_fork_exec")]
    for owner, name in starts:
        original = getattr(owner, name, None)
        if callable(original):
            setattr(owner, name, _counting(original))


def _counting(start: Callable[..., Any]) -> Callable[..., Any]:
    @functools.wraps(start)
    def counted(*args: Any, **kwargs: Any) -> Any:
        try:
            return start(*args, **kwargs)
        except BlockingIOError:  # EAGAIN: the process limit (RLIMIT_NPROC)
            if _refused is not None:
                _refused[:8] = (refused_starts() + 1).to_bytes(8, "little")
            raise

    return counted


def _hard_limit(which: int, value: int) -> None:
    _, hard = resource.getrlimit(which)
    if hard != resource.RLIM_INFINITY:
        value = min(value, hard)
    resource.setrlimit(which, (value, value))


def _user_processes() -> int:
    """Processes (threads count too) of this user now: RLIMIT_NPROC counts all of them."""
    uid, count = os.getuid(), 0
    for name in os.listdir("/proc"):  # OSError when /proc cannot be listed
        if name.isdigit():
            try:
                if os.stat(f"/proc/{name}").st_uid == uid:
                    count += len(os.listdir(f"/proc/{name}/task"))
            except OSError:
                continue
    return count
