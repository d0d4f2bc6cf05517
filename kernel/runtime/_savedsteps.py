"""File steps as data: what code run in a runtime wrote to files, carried to another process.

A shell command or executed code that writes files leaves an undoable step on the runtime
(`Runtime.apply_files`, `Runtime.record_file_writes`): `diff` shows it, `unpersist` puts the
files back. Those steps live in the process. `saved_steps` gives each as plain data (what
every file held before, its mode, what the step left there), a session's transcript keeps
it, and `adopt_step` gives a later runtime (a resumed session) the same undoable step —
when the files are still what the step left; otherwise it says which file changed and the
step is not adopted (undoing it would lose that edit).

Steps of `persist` (and of commands that also rewrote a loaded module's file) are not
carried: undoing them also moves modules in memory, which a later process does not hold.
"""

from __future__ import annotations

import base64
from collections.abc import Container
from pathlib import Path
from typing import TYPE_CHECKING, Any

from liveforge.kernel.files._filebatch import PersistRecord, WriteBackup
from liveforge.kernel.files._files import safe_destination
from liveforge.kernel.files._sourcefile import Fingerprint
from liveforge.kernel.runtime._persist import _Undo

if TYPE_CHECKING:
    from liveforge.kernel import Runtime

__all__ = ["adopt_step", "saved_steps"]


def saved_steps(rt: Runtime, known: Container[int] = ()) -> list[tuple[int, dict[str, Any] | None]]:
    """The runtime's undoable file steps made by code it ran, oldest first, each as
    `(identity in this process, data for adopt_step)`; the data is None for the identities
    in `known` (already saved)."""
    root = Path(rt.project_root).resolve()
    out: list[tuple[int, dict[str, Any] | None]] = []
    for undo in rt.persistence.stack:
        if undo.states:
            continue  # a persist, or a step that moved modules in memory too
        if id(undo) in known:
            out.append((id(undo), None))
            continue
        files = [_file(root, backup) for backup in undo.record.backups]
        out.append((id(undo), {"label": undo.label, "diff": undo.diff, "files": files}))
    return out


def adopt_step(rt: Runtime, step: dict[str, Any]) -> str | None:
    """Make `step` (from `saved_steps`, in another process) an undoable step of `rt`, the
    newest; None when adopted, else why not (nothing is adopted then)."""
    root = Path(rt.project_root).resolve()
    backups = []
    for entry in step.get("files", []):
        path = safe_destination(root, entry["path"])
        now = Fingerprint.of(path)
        left = entry.get("after_sha256")
        if (now.sha256 if now else None) != left:
            change = "was removed" if now is None else "changed"
            return f"{entry['path']} {change} since; undoing the step would lose that"
        backups.append(
            WriteBackup(
                path,
                "",
                _bytes(entry),
                entry.get("mode"),
                new_fingerprint=now,
                created=[safe_destination(root, p) for p in entry.get("created", [])],
            )
        )
    undo = _Undo(
        PersistRecord(backups),
        after=len(rt.history()),
        diff=str(step.get("diff", "")),
        label=str(step.get("label", "")),
    )
    rt.persistence.stack.append(undo)
    return None


def _file(root: Path, backup: WriteBackup) -> dict[str, Any]:
    entry: dict[str, Any] = {
        "path": _relative(root, backup.path),
        "mode": backup.old_mode,
        "after_sha256": backup.new_fingerprint.sha256 if backup.new_fingerprint else None,
        "created": [_relative(root, p) for p in backup.created],
    }
    old = backup.old_bytes
    if old is None:
        entry["before"] = None
    else:
        try:
            entry["before"] = old.decode("utf-8")
        except UnicodeDecodeError:
            entry["before_b64"] = base64.b64encode(old).decode("ascii")
    return entry


def _bytes(entry: dict[str, Any]) -> bytes | None:
    if entry.get("before_b64") is not None:
        return base64.b64decode(entry["before_b64"])
    before = entry.get("before")
    return None if before is None else str(before).encode("utf-8")


def _relative(root: Path, path: Path) -> str:
    resolved = Path(path).resolve()
    return str(resolved.relative_to(root)) if resolved.is_relative_to(root) else str(path)
