"""Interrupting a provider call's network waits when its CancelToken fires.

`CancelScope.wait(awaitable)` awaits like `await`, but if the token is cancelled meanwhile
(from any thread) the task is interrupted at that await only, like `asyncio.timeout`: the
scope cancels the task, catches the CancelledError at its own await, uncancels the task and
raises `CallCancelled`. A stream read loop instead runs inside `with scope.interruptible():`
and calls `disarm()` / `arm()` around each `yield`, which costs two attribute writes per
batch instead of a wrapper per network read. Awaits while disarmed (the consumer's code
between stream events) are never touched; arming again checks whether the token fired.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Iterator
from contextlib import contextmanager
from typing import TypeVar

from liveforge.declarations.provider import CancelToken

__all__ = ["CallCancelled", "CancelScope", "sleep"]

T = TypeVar("T")


class CallCancelled(Exception):
    """Internal signal: the caller's CancelToken fired during a network wait."""


class CancelScope:
    """Binds a CancelToken (or None: never cancelled) to the awaits of the running task."""

    def __init__(self, token: CancelToken | None) -> None:
        self.token = token
        self._loop = asyncio.get_running_loop()
        self._task: asyncio.Task[object] | None = None
        self._armed = False
        self._fired = False
        if token is not None:
            token.add_callback(self._on_cancel)

    def close(self) -> None:
        """Stop listening to the token."""
        if self.token is not None:
            self.token.remove_callback(self._on_cancel)

    @property
    def cancelled(self) -> bool:
        """True once the token fired."""
        return self.token is not None and self.token.cancelled

    def _on_cancel(self) -> None:
        self._loop.call_soon_threadsafe(self._interrupt)

    def _interrupt(self) -> None:
        # Runs on the loop: if armed, the task is suspended at one of the scope's awaits.
        if self._armed and not self._fired and self._task is not None:
            self._fired = True
            self._task.cancel()

    def arm(self) -> None:
        """Let the token interrupt this task's awaits; raise CallCancelled if it fired."""
        token = self.token
        if token is not None:
            if token.cancelled:
                raise CallCancelled
            self._task = asyncio.current_task(self._loop)  # the loop given: half the cost
            self._armed = True

    def disarm(self) -> None:
        """Stop interrupting: the task is about to run code that is not the scope's."""
        self._armed = False

    @contextmanager
    def interruptible(self) -> Iterator[None]:
        """Armed inside the block; a token firing there raises CallCancelled out of it."""
        self.arm()
        try:
            yield
        except asyncio.CancelledError:
            if not self._fired or self._task is None:
                raise
            self._fired = False
            self._task.uncancel()
            raise CallCancelled from None
        finally:
            self._armed = False

    async def wait(self, awaitable: Awaitable[T]) -> T:
        """Await `awaitable`; raise CallCancelled if the token fires first."""
        if self.token is not None and self.token.cancelled:
            if asyncio.iscoroutine(awaitable):
                awaitable.close()
            raise CallCancelled
        with self.interruptible():
            return await awaitable


async def sleep(seconds: float, scope: CancelScope) -> None:
    """Sleep, returning early with CallCancelled if the token fires."""
    await scope.wait(asyncio.sleep(seconds))
