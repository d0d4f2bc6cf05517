"""The live check of a verify, run in a thread of its own while the fresh-import check runs.

    alongside = LiveAlongside(sandbox, code, {"timeout": 30, "memory_mb": None, "network": None})
    fresh = sandbox.verify(code, overlay)      # meanwhile the live fork runs
    live = alongside.result()                  # or alongside.cancel(): killed, not waited for

Both checks spend their time waiting for other processes (the template's child, the fork
of this one), so running them together costs about as long as the slower of the two.
The fork is made from the thread; what it runs sees the program as it was at that moment.
"""

from __future__ import annotations

import threading
from typing import Any

from liveforge.kernel.checks import _livefork
from liveforge.kernel.checks._livefork import LiveCheck

__all__ = ["LiveAlongside"]


class LiveAlongside:
    """One live check in a thread of its own, started at once."""

    def __init__(self, sandbox: Any, code: str, options: dict[str, Any]) -> None:
        """`sandbox` is the `Sandbox` whose `run_live` runs `code` with `options`
        (timeout, memory_mb, network)."""
        self._lock = threading.Lock()
        self._pid: int | None = None
        self._cancelled = False
        self._outcome: LiveCheck | BaseException | None = None
        self._done = threading.Event()
        # A thread of its own, which ends with the check: what the check's fork started with
        # a parent-death signal (the relay and pid 1 of namespaces it made itself, when no
        # host was ready) is tied to the thread that forked it, and ends with that thread.
        thread = threading.Thread(
            target=self._run, args=(sandbox, code, options), name="liveforge-live-check"
        )
        thread.daemon = True
        thread.start()

    def result(self) -> LiveCheck:
        """The live check's result, once it is there (its error, raised here)."""
        self._done.wait()
        outcome = self._outcome
        if isinstance(outcome, BaseException):
            raise outcome
        assert outcome is not None
        return outcome

    def cancel(self) -> None:
        """Kill the live check (now, or as soon as it forks) and do not wait for it."""
        with self._lock:
            self._cancelled = True
            pid = self._pid
        if pid is not None:
            _livefork.stop(pid)

    def _run(self, sandbox: Any, code: str, options: dict[str, Any]) -> None:
        try:
            self._outcome = sandbox.run_live(code, on_start=self._started, **options)
        except BaseException as exc:  # handed to the caller of `result`
            self._outcome = exc
        finally:
            self._done.set()

    def _started(self, pid: int) -> None:
        with self._lock:
            self._pid = pid
            cancelled = self._cancelled
        if cancelled:
            _livefork.stop(pid)
