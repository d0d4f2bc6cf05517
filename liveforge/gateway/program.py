"""The live program as a session sees it: its changes by module, each with its state, the
last check that carried it and its diff, and each module's diff against its file.

`changes.list` answers with this, and the web UI's live program panel draws it. A change's
state is one of

    applied       in memory, no passing check since its last edit
    verified      a check carrying it passed
    divergent     the live process and a fresh import disagreed (persist refuses it)
    persisted     written to its file
    rolled_back   undone

A module's state is the state of its newest change still in effect ("rolled_back" when none
is).
"""

from __future__ import annotations

import contextlib
from typing import Any

from liveforge.impls.live_program import owner_of

__all__ = ["STATES", "program"]

STATES = ("applied", "verified", "divergent", "persisted", "rolled_back")


def program(runtime: Any, session: str) -> dict[str, Any]:
    """The changes agent session `session` made (every change when empty), by module, newest
    module first; call with the live lock held."""
    changes = [c for c in runtime.history() if not session or owner_of(runtime, c.id) == session]
    runs = runtime.runs()  # newest first
    modules: dict[str, list[Any]] = {}
    for change in changes:
        modules.setdefault(change.module, []).append(change)
    out = [_module(runtime, name, own, runs) for name, own in modules.items()]
    out.sort(key=lambda m: max(c["created"] for c in m["changes"]), reverse=True)
    return {"modules": out}


def _module(runtime: Any, name: str, changes: list[Any], runs: list[Any]) -> dict[str, Any]:
    rows = [_change(runtime, c, runs) for c in reversed(changes)]
    live = [row for row in rows if row["state"] != "rolled_back"]
    disk = ""
    with contextlib.suppress(Exception):  # a module gone since (a virtual one rolled back)
        disk = runtime.diff(name)
    return {
        "module": name,
        "file": changes[-1].filename,
        "state": live[0]["state"] if live else "rolled_back",
        "diff": disk,
        "changes": rows,
    }


def _change(runtime: Any, change: Any, runs: list[Any]) -> dict[str, Any]:
    return {
        "change": change.id,
        "target": change.target,
        "kind": change.kind,
        "state": state(change),
        "created": change.created,
        "check": _last_check(runtime, change.id, runs),
        "diff": change.diff(),
        "notes": list(change.notes),
    }


def state(change: Any) -> str:
    """One of STATES for `change`."""
    status = change.status.value
    if status in ("rolled_back", "persisted"):
        return str(status)
    if change.divergent:
        return "divergent"
    return "verified" if change.verified else "applied"


def _last_check(runtime: Any, change_id: str, runs: list[Any]) -> dict[str, Any] | None:
    """The newest check that carried the change: kind, outcome, headline and value."""
    summary = next((r for r in runs if change_id in r.change_ids), None)
    if summary is None:
        return None
    value = None
    with contextlib.suppress(Exception):  # a pruned record: the headline still says it
        value = runtime.run(summary.run_id).value_repr
    return {
        "run": summary.run_id,
        "kind": str(summary.kind),
        "ok": summary.ok,
        "headline": summary.headline,
        "value": value,
    }
