"""Interrupting a provider call's network waits when its CancelToken fires.

`CancelScope.wait(awaitable)` awaits like `await`, but if the token is cancelled meanwhile
(from any thread) the task is interrupted at that await only, like `asyncio.timeout`: the
scope cancels the task, catches the CancelledError at its own await, uncancels the task and
raises `CallCancelled`. Awaits outside `wait` (the consumer's code between stream events)
are never touched; the token is checked again before the next network wait.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable
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
        # Runs on the loop: if armed, the task is suspended inside `wait`, nowhere else.
        if self._armed and not self._fired and self._task is not None:
            self._fired = True
            self._task.cancel()

    async def wait(self, awaitable: Awaitable[T]) -> T:
        """Await `awaitable`; raise CallCancelled if the token fires first."""
        if self.token is None:
            return await awaitable
        if self.token.cancelled:
            if asyncio.iscoroutine(awaitable):
                awaitable.close()
            raise CallCancelled
        self._task = asyncio.current_task()
        self._armed = True
        try:
            return await awaitable
        except asyncio.CancelledError:
            if not self._fired or self._task is None:
                raise
            self._fired = False
            self._task.uncancel()
            raise CallCancelled from None
        finally:
            self._armed = False


async def sleep(seconds: float, scope: CancelScope) -> None:
    """Sleep, returning early with CallCancelled if the token fires."""
    await scope.wait(asyncio.sleep(seconds))
