"""Several runtimes on one project: a cross-process persist lock and a journal of writes.

Two liveforge processes may work on one project at once (`liveforge mcp` next to
`liveforge chat`, two programs using the API). Each persist takes an exclusive `flock` on
`<project>/.liveforge/persist.lock` and checks the files against what it loaded while it
holds the lock, so a second runtime's stale write is refused as a conflict instead of
overwriting the first one's. The kernel drops a flock when its process dies, so a killed
runtime never leaves a stale lock.

Every write a runtime makes to the project's files (persist, undo, files written by code it
ran) is appended to `<project>/.liveforge/writes.jsonl` under the same lock. Each runtime
reads the entries other runtimes added since it last looked (`Journal.news`), so a front
end can tell its user and its model what changed under them.
"""

from __future__ import annotations

import fcntl
import json
import os
import time
import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

from liveforge.kernel.errors import PersistError
from liveforge.kernel.files._statefolder import state_folder

__all__ = ["ForeignWrite", "Journal"]

_WAIT = 30.0
"""Seconds a persist waits for another runtime's persist to finish."""


@dataclass(frozen=True)
class ForeignWrite:
    """Files another runtime wrote to this project."""

    pid: int
    action: str
    paths: tuple[str, ...]
    modules: tuple[str, ...]
    time: float

    def describe(self) -> str:
        """One line for a person or a model."""
        what = ", ".join(self.modules or self.paths)
        return f"another liveforge runtime (pid {self.pid}) {self.action}: {what}"


class Journal:
    """The persist lock and the write journal of one project, seen by one runtime."""

    def __init__(self, root: Path) -> None:
        self.folder = root / ".liveforge"
        self.root = root
        self.id = uuid.uuid4().hex
        self._seen = self._size()

    @contextmanager
    def locked(self) -> Iterator[None]:
        """Hold the project's persist lock (waiting up to 30 s for another runtime)."""
        try:
            state_folder(self.root)
            handle = (self.folder / "persist.lock").open("a+")
        except OSError as exc:
            raise PersistError(
                f"cannot open the persist lock in {self.folder} ({exc.strerror}); liveforge "
                "needs to create that folder to write files safely. Check its permissions."
            ) from None
        with handle:
            self._acquire(handle.fileno())
            try:
                yield
            finally:
                fcntl.flock(handle, fcntl.LOCK_UN)

    def record(self, action: str, paths: list[Path], modules: list[str]) -> None:
        """Append a write this runtime made (call while holding `locked()`)."""
        entry = {
            "runtime": self.id,
            "pid": os.getpid(),
            "time": time.time(),
            "action": action,
            "paths": [self._label(p) for p in paths],
            "modules": modules,
        }
        with (self.folder / "writes.jsonl").open("a", encoding="utf-8") as handle:
            handle.write(json.dumps(entry) + "\n")

    def news(self) -> list[ForeignWrite]:
        """Writes other runtimes made since the last call (or since this runtime started)."""
        path = self.folder / "writes.jsonl"
        try:
            with path.open("rb") as handle:
                handle.seek(self._seen)
                data = handle.read()
        except OSError:
            return []
        end = data.rfind(b"\n") + 1  # a line still being written waits for the next look
        self._seen += end
        found = []
        for line in data[:end].splitlines():
            try:
                entry = json.loads(line)
            except ValueError:
                continue
            if isinstance(entry, dict) and entry.get("runtime") != self.id:
                found.append(_foreign(entry))
        return found

    def _acquire(self, fd: int) -> None:
        deadline = time.monotonic() + _WAIT
        while True:
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
                return
            except BlockingIOError:
                if time.monotonic() > deadline:
                    raise PersistError(
                        f"another liveforge process has held {self.folder / 'persist.lock'} "
                        f"for over {_WAIT:g} s; nothing was written. Try again when it is done."
                    ) from None
                time.sleep(0.005)

    def _size(self) -> int:
        try:
            return (self.folder / "writes.jsonl").stat().st_size
        except OSError:
            return 0

    def _label(self, path: Path) -> str:
        try:
            return str(path.resolve().relative_to(self.root.resolve()))
        except ValueError:
            return str(path)


def _foreign(entry: dict[str, object]) -> ForeignWrite:
    pid, when = entry.get("pid"), entry.get("time")
    return ForeignWrite(
        pid=pid if isinstance(pid, int) else 0,
        action=str(entry.get("action", "wrote")),
        paths=_strings(entry.get("paths")),
        modules=_strings(entry.get("modules")),
        time=float(when) if isinstance(when, (int, float)) else 0.0,
    )


def _strings(value: object) -> tuple[str, ...]:
    return tuple(v for v in value if isinstance(v, str)) if isinstance(value, list) else ()
