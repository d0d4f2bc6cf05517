"""Ctrl-C stops the sandbox check that is running, not only the wait for it.

Each sandbox run is a child of the runtime's template process and leads its own process
group; killing those groups ends the run (the template reports it as killed) and everything
the check started. Linux and other systems with /proc; elsewhere the run ends at its timeout.
"""

from __future__ import annotations

import os
import signal
from pathlib import Path
from typing import Any

__all__ = ["stop_running_checks"]


def stop_running_checks(rt: Any) -> list[int]:
    """Kill every sandbox run of `rt` in progress, and every live check (a fork of this
    process), with their processes; their pids."""
    from liveforge.kernel._livefork import stop_all

    live = stop_all()
    sandbox = getattr(rt, "_sandbox", None)
    template = sandbox.template_pid if sandbox is not None else None
    if template is None:
        return live
    runs = _children_of(template)
    for pid in runs:
        try:
            os.killpg(pid, signal.SIGKILL)
        except OSError:  # already gone, or not a group leader yet: the process itself
            try:
                os.kill(pid, signal.SIGKILL)
            except OSError:
                pass
    return [*live, *runs]


def _children_of(parent: int) -> list[int]:
    """Pids whose parent is `parent`, read from /proc (empty where there is none)."""
    found = []
    for stat in Path("/proc").glob("[0-9]*/stat"):
        try:
            fields = stat.read_text().rsplit(")", 1)[1].split()
        except (OSError, IndexError):
            continue
        if len(fields) > 1 and fields[1] == str(parent):
            found.append(int(stat.parent.name))
    return found
