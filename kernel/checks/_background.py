"""Work nobody waits for, off the caller's path: reaping a finished live check, building the
next check's Landlock rules.

    later(os.waitpid, pid, 0)

One daemon thread per process runs the jobs in order. Handing a job over costs a queue put,
not a thread start (`Thread.start` waits until the new thread runs, which takes
milliseconds while the machine is busy tearing down the check that just ended). A forked
child starts a thread of its own when it first hands over a job. Jobs that must finish
before something else (a view's folders removed before the sandbox closes) belong in
`_runfiles.Afterwards`, which can be waited for.
"""

from __future__ import annotations

import os
import queue
import sys
import threading
import traceback
from collections.abc import Callable
from typing import Any

__all__ = ["later"]

_jobs: queue.SimpleQueue[tuple[Callable[..., Any], tuple[Any, ...]]] = queue.SimpleQueue()
_lock = threading.Lock()
_worker: tuple[int, threading.Thread] | None = None


def later(job: Callable[..., Any], *args: Any) -> None:
    """Run `job(*args)` in the background thread, after the jobs handed over before it."""
    global _worker
    _jobs.put((job, args))
    with _lock:
        if _worker is None or _worker[0] != os.getpid() or not _worker[1].is_alive():
            thread = threading.Thread(target=_work, name="liveforge-background", daemon=True)
            _worker = (os.getpid(), thread)
            thread.start()


def _work() -> None:
    while True:
        job, args = _jobs.get()
        try:
            job(*args)
        except ChildProcessError:  # reaped elsewhere already
            pass
        except Exception:  # a failed job must not stop the ones after it
            traceback.print_exc(file=sys.stderr)
