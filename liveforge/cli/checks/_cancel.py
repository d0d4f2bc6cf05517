"""Ctrl-C stops the sandbox check that is running, not only the wait for it.

`Sandbox.stop_running` kills each run in progress with what it started (a run of the
template leads its own process group; a live check, its own session), and a run asked for but
not started yet as it starts. Linux and other systems with /proc; elsewhere a fresh-import
run ends at its timeout.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from liveforge.kernel import Runtime

__all__ = ["stop_running_checks"]


def stop_running_checks(rt: Runtime) -> list[int]:
    """Kill every sandbox run of `rt` in progress, and every live check (a fork of this
    process), with their processes — also a run whose process is yet to start; their pids."""
    from liveforge.kernel.checks._livefork import stop_all

    sandbox = rt.checks.started
    if sandbox is None:
        return stop_all()
    killed: list[int] = sandbox.stop_running()
    return killed
