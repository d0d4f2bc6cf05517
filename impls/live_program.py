"""Sharing one live program between sessions: a lock per tool call, and who made each change.

Several sessions of a project may run turns at once in one process (the gateway's worker
does). Their model requests and streamed text run side by side; what touches the live
program — a tool call (patch, reload, rollback, persist, checks, and reads that need a
consistent view), the self-patches applied at a step boundary, a resumed session's changes
re-applied — runs under `holding`, one session at a time. The lock is per tool call, not per
turn, so a session streaming a long answer never holds another one up.

A sub-agent's work belongs to its top-level session's *lane* (`lane_of`): changes made while
a lane held the lock are that lane's, and `Session.track` records only its own lane's changes
(and changes made outside any session, say at a REPL), so undo, diff and resume stay per
session. A tool that waits for other agents (a sub-agent's result) lets go of the lock while
it waits (`released`), so the agents it waits for can work.

    with holding(agent.runtime, lane_of(agent.session)):
        result = agent.toolbox.call(name, arguments)
"""

from __future__ import annotations

import threading
import weakref
from collections.abc import Callable, Iterator
from contextlib import AbstractContextManager, contextmanager
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from liveforge.declarations.session import Session
    from liveforge.kernel import Runtime

__all__ = ["LiveLock", "changes_of", "holding", "lane_of", "owner_of", "released"]

_POLL = 0.05
"""Seconds between looks at `cancelled` while waiting for the lock."""


class LiveLock:
    """A reentrant lock whose waiters can give up when their turn is cancelled, and whose
    holder can let go for a while (`released`)."""

    def __init__(self) -> None:
        self._cond = threading.Condition()
        self._owner: int | None = None
        self._depth = 0

    def acquire(self, cancelled: Callable[[], bool] = lambda: False) -> bool:
        """Take the lock; False (without it) once `cancelled()` says so while waiting."""
        me = threading.get_ident()
        with self._cond:
            while self._owner not in (None, me):
                if cancelled():
                    return False
                self._cond.wait(_POLL)
            self._owner = me
            self._depth += 1
            return True

    def release(self) -> None:
        """Let go of one `acquire`."""
        with self._cond:
            if self._owner != threading.get_ident():
                raise RuntimeError("the live lock is released by a thread that does not hold it")
            self._depth -= 1
            if self._depth == 0:
                self._owner = None
                self._cond.notify_all()

    @contextmanager
    def released(self) -> Iterator[None]:
        """Let go entirely for the block when this thread holds the lock; take it back after."""
        with self._cond:
            depth = self._depth if self._owner == threading.get_ident() else 0
            if depth:
                self._owner, self._depth = None, 0
                self._cond.notify_all()
        try:
            yield
        finally:
            if depth:
                self.acquire()
                with self._cond:
                    self._depth = depth


LIVE_LOCK = LiveLock()
"""One per process: modules are the process's, whichever runtime patches them."""

_owners: weakref.WeakKeyDictionary[Runtime, dict[str, str]] = weakref.WeakKeyDictionary()


def lane_of(session: Session) -> str:
    """The session whose lane this session's work runs in (its own, unless a sub-agent's)."""
    return session.live.lane or session.id


def owner_of(runtime: Runtime, change_id: str) -> str | None:
    """The lane that made `change_id`, or None for a change made outside any session."""
    return _owners.get(runtime, {}).get(change_id)


def changes_of(
    runtime: Runtime, lane: str, *, shared: bool = False, persisted: bool = True
) -> list[str]:
    """Ids of the changes `lane` made that are not rolled back (what `Runtime.rollback` can
    undo), oldest first; with `shared`, changes made outside any session too (another
    session's never); `persisted=False` leaves out the ones already in their files."""
    allowed = {lane, None} if shared else {lane}
    gone = {"rolled_back"} if persisted else {"rolled_back", "persisted"}
    return [
        c.id
        for c in runtime.history()
        if c.status.value not in gone and owner_of(runtime, c.id) in allowed
    ]


@contextmanager
def holding(
    runtime: Runtime, lane: str, cancelled: Callable[[], bool] = lambda: False
) -> Iterator[bool]:
    """Hold the live lock for the block; the changes made meanwhile are `lane`'s. Yields
    False (without the lock) when `cancelled()` became true while waiting."""
    if not LIVE_LOCK.acquire(cancelled):
        yield False
        return
    before = {c.id for c in runtime.history()}
    try:
        yield True
    finally:
        owners = _owners.setdefault(runtime, {})
        for change in runtime.history():
            if change.id not in before:
                owners.setdefault(change.id, lane)
        LIVE_LOCK.release()


def released() -> AbstractContextManager[None]:
    """Let go of the live lock while this thread waits for other agents."""
    return LIVE_LOCK.released()
