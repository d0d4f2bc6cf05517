"""The project's turn lock: one process at a time runs a project's turns, one turn per session.

An exclusive `flock` on `<project>/.liveforge/sessions/turn.lock`, taken without waiting by
the first turn of a process and let go after its last one. Other sessions of the same
process (the gateway's worker serves many) run their turns alongside; a session already in a
turn is refused (its lane). The holder writes its pid and session ids into the file so a
refused front end can say who holds it. The kernel drops a flock when its process dies, so
a killed front end never leaves a stale lock behind. A sub-agent's session takes no lock: its
turns run inside its parent's turn, which holds it.
"""

from __future__ import annotations

import fcntl
import json
import os
import threading
from collections.abc import Iterator
from contextlib import AbstractContextManager, contextmanager, nullcontext
from pathlib import Path
from typing import IO

import forwardpy

from liveforge.declarations.session import Session, SessionBusy, SessionError, sessions_dir
from liveforge.kernel.files._statefolder import make_parent

__all__ = ["holder", "lock_path", "running"]


def lock_path(root: str | Path) -> Path:
    """The lock file of the project at `root`."""
    return sessions_dir(root) / "turn.lock"


def holder(root: str | Path) -> tuple[int | None, str]:
    """(pid, session id) of the process holding the turn lock, or (None, "") when free;
    with several sessions in turns, the one that began first."""
    pid, sessions = running(root)
    return pid, sessions[0] if sessions else ""


def running(root: str | Path) -> tuple[int | None, list[str]]:
    """(pid, ids of the sessions in a turn) of the process holding the turn lock."""
    path = lock_path(root)
    held = _held.get(path.resolve())
    if held is not None:
        return os.getpid(), list(held.sessions)
    if not path.exists():
        return None, []
    with path.open("a+", encoding="utf-8") as handle:
        try:
            fcntl.flock(handle, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            return _read_running(path)
        fcntl.flock(handle, fcntl.LOCK_UN)
    return None, []


def _read_running(path: Path) -> tuple[int | None, list[str]]:
    try:
        data = json.loads(path.read_text(encoding="utf-8") or "{}")
    except (OSError, json.JSONDecodeError):
        return None, []
    pid = data.get("pid") if isinstance(data, dict) else None
    sessions = (data.get("sessions") or [data.get("session", "")]) if pid is not None else []
    return (pid if isinstance(pid, int) else None), [str(s) for s in sessions if s]


def _read_holder(path: Path) -> tuple[int | None, str]:
    pid, sessions = _read_running(path)
    return pid, sessions[0] if sessions else ""


class _Held:
    """This process's hold on one project's lock file: the open handle and its sessions."""

    def __init__(self, handle: IO[str]) -> None:
        self.handle = handle
        self.sessions: list[str] = []

    def write(self) -> None:
        self.handle.seek(0)
        self.handle.truncate()
        if self.sessions:
            data = {"pid": os.getpid(), "session": self.sessions[0], "sessions": self.sessions}
            self.handle.write(json.dumps(data))
        self.handle.flush()


_held: dict[Path, _Held] = {}
_guard = threading.Lock()


def _take(session: Session, path: Path) -> _Held:
    """This process's hold on `path`, taking the flock when it has none yet."""
    held = _held.get(path)
    if held is not None:
        return held
    try:
        make_parent(path)
        handle = path.open("a+", encoding="utf-8")
    except OSError as exc:
        raise SessionError(
            f"cannot open the turn lock {path}: {exc}", session_id=session.id, path=str(path)
        ) from exc
    try:
        fcntl.flock(handle, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        handle.close()
        pid, held_by = _read_holder(path)
        raise SessionBusy(str(session.root), pid, held_by) from None
    _held[path] = held = _Held(handle)
    return held


@contextmanager
def _locked(session: Session) -> Iterator[None]:
    path = lock_path(session.root)
    with _guard:
        held = _take(session, path)
        if session.id in held.sessions:
            raise SessionBusy(str(session.root), os.getpid(), session.id)
        held.sessions.append(session.id)
        held.write()
    try:
        yield
    finally:
        with _guard:
            held.sessions.remove(session.id)
            held.write()
            if not held.sessions:
                del _held[path]
                fcntl.flock(held.handle, fcntl.LOCK_UN)
                held.handle.close()


@forwardpy.impl(Session.turn_lock)
def turn_lock(self: Session) -> AbstractContextManager[None]:
    # A sub-agent's turns run inside its parent's, which holds the project's lock.
    if self.live.parent_session:
        return nullcontext()
    return _locked(self)
