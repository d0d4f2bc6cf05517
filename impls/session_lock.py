"""The project's turn lock: one turn at a time across every front end of a project.

An exclusive `flock` on `<project>/.liveforge/sessions/turn.lock`, taken without waiting.
The holder writes its pid and session id into the file so a refused front end can say who
holds it. The kernel drops a flock when its process dies, so a killed front end never
leaves a stale lock behind. A sub-agent's session takes no lock: its turns run inside its
parent's turn, which holds it.
"""

from __future__ import annotations

import fcntl
import json
import os
from collections.abc import Iterator
from contextlib import AbstractContextManager, contextmanager, nullcontext
from pathlib import Path

import forwardpy

from liveforge.declarations.session import Session, SessionBusy, SessionError, sessions_dir

__all__ = ["holder", "lock_path"]


def lock_path(root: str | Path) -> Path:
    """The lock file of the project at `root`."""
    return sessions_dir(root) / "turn.lock"


def holder(root: str | Path) -> tuple[int | None, str]:
    """(pid, session id) of the process holding the turn lock, or (None, "") when free."""
    path = lock_path(root)
    if not path.exists():
        return None, ""
    with path.open("a+", encoding="utf-8") as handle:
        try:
            fcntl.flock(handle, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            return _read_holder(path)
        fcntl.flock(handle, fcntl.LOCK_UN)
    return None, ""


def _read_holder(path: Path) -> tuple[int | None, str]:
    try:
        data = json.loads(path.read_text(encoding="utf-8") or "{}")
    except (OSError, json.JSONDecodeError):
        return None, ""
    pid = data.get("pid")
    return (pid if isinstance(pid, int) else None), str(data.get("session", ""))


@contextmanager
def _locked(session: Session) -> Iterator[None]:
    path = lock_path(session.root)
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        handle = path.open("a+", encoding="utf-8")
    except OSError as exc:
        raise SessionError(
            f"cannot open the turn lock {path}: {exc}", session_id=session.id, path=str(path)
        ) from exc
    with handle:
        try:
            fcntl.flock(handle, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            pid, held = _read_holder(path)
            raise SessionBusy(str(session.root), pid, held) from None
        try:
            handle.seek(0)
            handle.truncate()
            handle.write(json.dumps({"pid": os.getpid(), "session": session.id}))
            handle.flush()
            yield
        finally:
            handle.seek(0)
            handle.truncate()
            handle.flush()
            fcntl.flock(handle, fcntl.LOCK_UN)


@forwardpy.impl(Session.turn_lock)
def turn_lock(self: Session) -> AbstractContextManager[None]:
    # A sub-agent's turns run inside its parent's, which holds the project's lock.
    if self.live.parent_session:
        return nullcontext()
    return _locked(self)
