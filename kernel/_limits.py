"""A check's resource limits: address space, CPU time and number of processes, as hard
limits (a check without capabilities cannot raise them again).

    set_limits(memory_mb=512, cpu_seconds=10, processes=20, notes=notes, base=None)

Standard library only: sandbox children load this file by path.
"""

from __future__ import annotations

import os
import resource
from typing import Any

__all__ = ["set_limits"]


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
