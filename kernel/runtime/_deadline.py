"""A deadline for code running in the current thread.

When the deadline passes, a watchdog thread raises ``DeadlineExceeded`` asynchronously in
the thread that entered the block (``PyThreadState_SetAsyncExc``). The exception derives
from BaseException so a tool's ``except Exception`` cannot swallow it. Code blocked inside a
C call (a long ``time.sleep``, a socket read) is interrupted when that call returns; tools
that wait on child processes pass their own timeouts to them.

    with deadline(5.0):
        run_tool()          # DeadlineExceeded after 5 s
"""

from __future__ import annotations

import ctypes
import threading
from collections.abc import Iterator
from contextlib import contextmanager

__all__ = ["AsyncTimer", "DeadlineExceeded", "deadline"]


class DeadlineExceeded(BaseException):
    """Raised inside a block that ran past its deadline."""


class AsyncTimer:
    """Raises `exc` in the thread that made it once `seconds` have passed (after `start`),
    unless `stop` comes first; `fired` tells whether it did."""

    def __init__(self, seconds: float, exc: type[BaseException] = DeadlineExceeded) -> None:
        self.exc = exc
        self.thread_id = threading.get_ident()
        self.lock = threading.Lock()
        self.done = False
        self.fired = False
        self.timer = threading.Timer(seconds, self._fire)
        self.timer.daemon = True

    def _fire(self) -> None:
        with self.lock:
            if self.done:
                return
            self.fired = True
            _set_async_exc(self.thread_id, self.exc)

    def start(self) -> None:
        """Start counting."""
        self.timer.start()

    def fire(self) -> None:
        """Raise `exc` in the thread now, without waiting (nothing after `stop`)."""
        self._fire()

    def stop(self) -> None:
        with self.lock:
            self.done = True
            self.timer.cancel()
            if self.fired:  # not raised yet if the block finished first: withdraw it
                _set_async_exc(self.thread_id, None)


def _set_async_exc(thread_id: int, exc: type[BaseException] | None) -> None:
    # None clears a pending exception (NULL at the C level).
    pending = ctypes.py_object(exc) if exc is not None else None
    ctypes.pythonapi.PyThreadState_SetAsyncExc(ctypes.c_ulong(thread_id), pending)


@contextmanager
def deadline(seconds: float | None) -> Iterator[None]:
    """Raise DeadlineExceeded in this thread if the block runs past ``seconds`` (None: never)."""
    if seconds is None:
        yield
        return
    watchdog = AsyncTimer(seconds)
    watchdog.start()
    try:
        yield
    finally:
        watchdog.stop()
