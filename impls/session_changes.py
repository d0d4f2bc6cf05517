"""`Session` bodies for changes: record the runtime's changes, re-apply them on resume.

`track` compares the runtime's history with what the transcript already holds and records
new changes (with whole module sources) and status moves (rolled back, persisted) — only
changes of its own lane, or made outside any session (`live_program`). Keys are
"<epoch>:<change id>": every opening of a session is a new epoch, because a new process
numbers its changes from c1 again.

`restore` re-applies the live, unpersisted changes in order. A change is replayed exactly
(whole module) when the module's source is still what the change was made on; a definition
patch is otherwise re-spliced by its dotted path; anything else is reported as no longer
applying. Re-applied changes are new, unverified changes: the old records are marked
superseded. Files a shell command (or executed code) wrote are undoable steps of the
runtime; `track` records them too (`file_step`), and `restore` gives them back to the new
runtime when the files are still what the step left, so `/diff` and `/undo` keep them.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import forwardpy

from liveforge.declarations.session import ChangeRecord, Session
from liveforge.impls.live_program import lane_of, owner_of
from liveforge.impls.session_store import write_record
from liveforge.kernel.errors import LiveforgeError
from liveforge.kernel.history._safety import watched
from liveforge.kernel.runtime._savedsteps import adopt_step, saved_steps

if TYPE_CHECKING:
    from liveforge.kernel import Change, Runtime

__all__ = ["is_self_module"]


def is_self_module(module: str, prefixes: tuple[str, ...]) -> bool:
    """True for modules of the agent itself (and never for the protected kernel)."""
    return watched(module, prefixes)


def _seen(session: Session) -> dict[str, ChangeRecord]:
    seen = session.live.by_key
    if seen is None:
        seen = session.live.by_key = {c.key: c for c in session.changes}
    return seen


def _record_new(
    session: Session,
    change: Change,
    prefixes: tuple[str, ...],
    replaces: ChangeRecord | None = None,
) -> ChangeRecord:
    record = ChangeRecord(
        key=f"{session.epoch}:{change.id}",
        change_id=change.id,
        target=change.target,
        module=change.module,
        kind=change.kind,
        before=change.before,
        after=change.after,
        target_after=change.target_after,
        status=change.status.value,
        self_patch=is_self_module(change.module, prefixes),
        replaces=replaces.key if replaces else None,
        confirmed=replaces.confirmed if replaces else False,
    )
    write_record(session, "change", change=record.model_dump(mode="json"))
    session.changes.append(record)
    _seen(session)[record.key] = record
    return record


def _set_status(session: Session, record: ChangeRecord, status: str) -> None:
    write_record(session, "status", key=record.key, status=status)
    record.status = status


@forwardpy.impl(Session.track)
def track(self: Session, runtime: Runtime, self_prefixes: tuple[str, ...] = ()) -> list[Change]:
    seen, epoch, new, lane = _seen(self), self.epoch, [], lane_of(self)
    for change in runtime.history():
        record = seen.get(f"{epoch}:{change.id}")
        if record is None:
            if owner_of(runtime, change.id) not in (None, lane):
                continue  # another session's change: its transcript records it
            _record_new(self, change, self_prefixes)
            new.append(change)
        elif record.status != change.status.value:
            _set_status(self, record, change.status.value)
    _track_file_steps(self, runtime)
    return new


def _track_file_steps(session: Session, runtime: Runtime) -> None:
    """Record the runtime's new file steps (a shell command's writes) in the transcript, and
    the ones undone since, so a resumed session can still show and undo them."""
    live = session.live
    present = {identity for identity, _ in saved_steps(runtime, live.step_keys)}
    for identity, key in list(live.step_keys.items()):
        if identity not in present:  # undone (first: its identity may be reused later)
            del live.step_keys[identity]
            if live.file_steps.pop(key, None) is not None:
                write_record(session, "file_step_gone", key=key)
    for identity, step in saved_steps(runtime, live.step_keys):
        if step is not None:
            key = f"{session.epoch}:s{_next_step(live.file_steps, session.epoch)}"
            write_record(session, "file_step", key=key, step=step)
            live.file_steps[key], live.step_keys[identity] = step, key


def _next_step(steps: dict[str, Any], epoch: int) -> int:
    """A number for the next file step of this epoch, after every one recorded."""
    mine = [int(k.rsplit(":s", 1)[1]) for k in steps if k.startswith(f"{epoch}:s")]
    return max(mine, default=0) + 1


def _adopt_file_steps(session: Session, runtime: Runtime) -> list[str]:
    """Give the runtime back the file steps an earlier process left undoable; a line for
    each (adopted, or why not)."""
    lines = []
    for key, step in list(session.live.file_steps.items()):
        if key.startswith(f"{session.epoch}:"):
            continue
        label = step.get("label") or "code run in the process"
        paths = ", ".join(f["path"] for f in step.get("files", []))
        why = adopt_step(runtime, step)
        write_record(session, "file_step_gone", key=key)  # kept again under a new key
        del session.live.file_steps[key]
        if why is None:
            lines.append(f"files written by {label} ({paths}): still undoable (/undo, /diff)")
        else:
            lines.append(f"files written by {label}: no longer undoable: {why}")
    _track_file_steps(session, runtime)
    return lines


@forwardpy.impl(Session.unpersisted)
def unpersisted(self: Session) -> list[ChangeRecord]:
    return [c for c in self.changes if c.live]


@forwardpy.impl(Session.restore)
def restore(self: Session, runtime: Runtime, self_prefixes: tuple[str, ...] = ()) -> list[str]:
    self.track(runtime, self_prefixes)
    lines = []
    for record in [c for c in self.unpersisted() if not c.key.startswith(f"{self.epoch}:")]:
        lines.append(_reapply(self, runtime, record, self_prefixes))
    lines += _adopt_file_steps(self, runtime)
    if lines:
        self.note("restored", "\n".join(lines))
    self.live.restored = lines
    return lines


@forwardpy.impl(Session.confirm)
def confirm(self: Session, change_ids: list[str]) -> None:
    records = [_seen(self).get(f"{self.epoch}:{i}") for i in change_ids]
    keys = [r.key for r in records if r is not None and not r.confirmed]
    if keys:
        write_record(self, "confirmed", keys=keys)
        for key in keys:
            _seen(self)[key].confirmed = True


def _reapply(
    session: Session, runtime: Runtime, record: ChangeRecord, prefixes: tuple[str, ...]
) -> str:
    label = f"{record.change_id} {record.kind} {record.target}"
    if record.self_patch and not record.confirmed:
        _set_status(session, record, "superseded")
        return (
            f"{label}: not re-applied: a self-patch still on probation when the session "
            "stopped (no turn had ended cleanly with it); patch again if still wanted"
        )
    if record.kind == "reload":
        _set_status(session, record, "superseded")
        return f"{label}: a reload from disk; the file is what is loaded now"
    try:
        current = _current_source(runtime, record.module)
        runtime.keep_change_id(record.change_id)  # the id people saw stays the change's id
        if current == record.before or (record.before is None and current is None):
            change = runtime.patch_module(record.module, record.after)
            how = "re-applied"
        elif record.target != record.module and record.target_after is not None:
            change = runtime.patch(record.target, record.target_after)
            how = "re-applied by definition (the module changed since)"
        else:
            _set_status(session, record, "superseded")
            return (
                f"{label}: no longer applies: {record.module} is not what the change was "
                "made on (its file changed); view it and patch again if still wanted"
            )
    except LiveforgeError as exc:
        _set_status(session, record, "superseded")
        return f"{label}: no longer applies: {type(exc).__name__}: {exc}"
    _record_new(session, change, prefixes, replaces=record)
    _set_status(session, record, "superseded")
    return f"{label}: {how} as {change.id} (unverified: verify before persisting)"


def _current_source(runtime: Runtime, module: str) -> str | None:
    """The module's source now, or None when no such module exists."""
    try:
        return runtime.source(module)
    except LiveforgeError:
        return None
