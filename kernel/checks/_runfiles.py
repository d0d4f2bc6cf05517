"""The files of a run outside its record: the scratch folder and the copy-on-write view of
the project (listed, then removed), what ran (scrubbed, into the record), pytest's junit
XML (kept, scrubbed), the boot plugin
that gives pytest-xdist workers the overlay, and the folders a pytest run names.

A view's folders are removed after the run's result went back (`Afterwards`): removing
overlayfs's work folder while the check's namespaces are being torn down takes
milliseconds that nobody needs to wait for. The next run, a listing and `close` wait for it.
"""

from __future__ import annotations

import json
import queue
import shutil
import sys
import threading
import traceback
from collections.abc import Callable
from dataclasses import replace
from pathlib import Path
from typing import Any

from liveforge.kernel.boundary import _overlay
from liveforge.kernel.boundary._boundary import BoundaryPolicy
from liveforge.kernel.boundary._secrets import Scrubber
from liveforge.kernel.checks._childpytest import JUNIT
from liveforge.kernel.checks._overlayhook import OverlayModule, save_overlay

__all__ = [
    "BOOT_MODULE",
    "Afterwards",
    "keep_junit",
    "named_paths",
    "remove_scratch",
    "write_boot",
    "write_record",
]

BOOT_MODULE = "_liveforge_sandbox_boot"
BOOT_SOURCE = '''"""Installs the liveforge sandbox overlay in pytest-xdist workers."""
import importlib.util
import sys

_NAME = "_liveforge_sandbox_overlayhook"
if _NAME not in sys.modules:
    _spec = importlib.util.spec_from_file_location(_NAME, {hook!r})
    _module = importlib.util.module_from_spec(_spec)
    sys.modules[_NAME] = _module
    _spec.loader.exec_module(_module)
sys.modules[_NAME].install_overlay_from_env()
'''


def named_paths(args: list[str], root: Path) -> list[str]:
    """Folders holding the files and folders a pytest run names: a check may read what it
    was asked to run, also outside the project (pytest lists the folder above a named one
    to collect it)."""
    found = []
    for arg in args:
        if arg.startswith("-"):
            continue
        path = (root / arg.split("::")[0]).resolve()
        if path.exists() and not path.is_relative_to(root):
            found.append(str(path.parent))
    return found


def remove_scratch(
    policy: BoundaryPolicy | None,
    scratch: Path,
    afterwards: Afterwards | None = None,
    *,
    scratch_later: bool = False,
) -> _overlay.Changes:
    """Remove a run's scratch folder and its copy-on-write view; what the view held. The
    view's folders (out of every check's reach) are removed by `afterwards` if given, and
    with `scratch_later` the scratch folder too (a live check's: its result does not list
    the folder, and the processes of the check, tearing down, would slow its removal)."""
    view = policy.copy_on_write() if policy is not None else None
    changed = _overlay.changes(view.upper) if view is not None else _overlay.Changes()
    later = scratch_later and afterwards is not None
    if not later:
        shutil.rmtree(scratch, ignore_errors=True)

    def remove() -> None:
        if later:
            shutil.rmtree(scratch, ignore_errors=True)
        if view is not None:
            _remove_view(view)

    if afterwards is None:
        remove()
    elif view is not None or later:
        afterwards.start(remove)
    return changed


def _remove_view(view: _overlay.View) -> None:
    _overlay.discard(view)
    shutil.rmtree(Path(view.upper).parent, ignore_errors=True)


class Afterwards:
    """Work that follows a run off its caller's path, in order, in one background thread;
    `finish` waits for it (a listing, closing the sandbox and its finalizer do; a run does
    not: the next check need not wait for the last one's folders to go). The thread is
    started once and kept while jobs come (a `Thread.start` per job waits until the new
    thread runs: milliseconds on a busy machine); it is a daemon, so what is left at exit
    is finished by the sandbox's finalizer, which calls `finish`."""

    IDLE = 1.0
    """Seconds the thread waits for another job before it ends."""

    def __init__(self) -> None:
        self._jobs: queue.SimpleQueue[Callable[[], None]] = queue.SimpleQueue()
        self._done = threading.Condition()
        self._pending = 0
        self._thread: threading.Thread | None = None

    def start(self, job: Callable[[], None]) -> None:
        """Run `job` in the background once the jobs before it are done."""
        with self._done:
            self._pending += 1
            self._jobs.put(job)
            if self._thread is None or not self._thread.is_alive():
                self._thread = threading.Thread(
                    target=self._work, name="liveforge-afterwards", daemon=True
                )
                self._thread.start()

    def finish(self) -> None:
        """Wait until every job started so far is done."""
        with self._done:
            while self._pending:
                self._done.wait()

    def _work(self) -> None:
        me = threading.current_thread()
        while True:
            try:
                job = self._jobs.get(timeout=self.IDLE)
            except queue.Empty:
                with self._done:
                    if self._jobs.empty():  # a job put since is this thread's to run
                        self._thread = None if self._thread is me else self._thread
                        return
                continue
            try:
                job()
            except Exception:  # a failed job must not stop the ones after it
                traceback.print_exc(file=sys.stderr)
            finally:
                with self._done:
                    self._pending -= 1
                    self._done.notify_all()


def keep_junit(scratch: Path, folder: Path, scrubber: Scrubber) -> None:
    """pytest's junit XML, from the scratch folder into the record, scrubbed."""
    try:
        data = (scratch / JUNIT).read_bytes()
    except OSError:
        return
    (folder / JUNIT).write_bytes(scrubber.bytes(data))


def write_boot(folder: Path) -> str:
    """The pytest plugin that gives fresh interpreters (xdist workers) the overlay."""
    boot = folder / "boot"
    boot.mkdir()
    hook = Path(__file__).with_name("_overlayhook.py")
    (boot / f"{BOOT_MODULE}.py").write_text(BOOT_SOURCE.format(hook=str(hook)), encoding="utf-8")
    return str(boot)


def write_record(
    folder: Path, request: dict[str, Any], modules: list[OverlayModule], scrubber: Scrubber
) -> None:
    """What ran, for people: the code or arguments, the request, the overlay's sources (all
    scrubbed of secret values)."""
    if request["kind"] == "snippet":
        (folder / "code.py").write_text(scrubber.text(request["code"]), encoding="utf-8")
    else:
        (folder / "args.json").write_text(json.dumps(request["args"]), encoding="utf-8")
    save_overlay([replace(m, source=scrubber.text(m.source)) for m in modules], folder)
    # The environment stays out of the record: it may hold credentials.
    described = {k: v for k, v in request.items() if k not in ("overlay", "environ")}
    described["overlay"] = [m.name for m in modules]
    text = json.dumps(described, indent=1)
    (folder / "request.json").write_text(scrubber.text(text), encoding="utf-8")
