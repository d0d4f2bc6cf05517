"""Project files changed by code run in the live process: caught, described, undoable.

`execute` runs arbitrary code, which may write files itself (``open(...).write``) instead
of going through `persist`. `FileWatch` notes the project's files before the code runs
(size, modification time, inode, and the bytes of each file up to a size limit, cached
across runs so unchanged files are not read again) and compares afterwards. The files that
changed come back as a `PersistRecord` — the same record a persist leaves — so the one
`unpersist` puts them back.

Folders no program's source lives in are skipped: version control, virtualenvs (by name, and
any folder holding `pyvenv.cfg`), installed packages, caches, liveforge's own `.liveforge/`
and `sandbox_runs/`; past 20,000 files the rest of the tree
is not watched.
"""

from __future__ import annotations

import difflib
import os
import stat
from collections.abc import Collection
from dataclasses import dataclass
from pathlib import Path

from liveforge.kernel.files._filebatch import PersistRecord, WriteBackup
from liveforge.kernel.files._sourcefile import Fingerprint

__all__ = ["FileWatch", "WatchedChanges"]

_SKIPPED = frozenset(
    {
        ".git",
        ".hg",
        ".svn",
        ".venv",
        "venv",
        ".tox",
        ".nox",
        "__pycache__",
        ".mypy_cache",
        ".pytest_cache",
        ".ruff_cache",
        "node_modules",
        ".liveforge",
        "sandbox_runs",
    }
)
_KEEP_LIMIT = 2_000_000
"""Bytes of one file kept for undo; a larger file that changes is reported, not restorable."""
_DIFF_LIMIT = 200
"""Diff lines shown per file."""
_FILE_LIMIT = 20_000
"""Files watched at most (a project root that is really a home folder stays fast)."""

_Key = tuple[int, int, int, int]  # (mtime_ns, size, inode, permission bits)


@dataclass
class WatchedChanges:
    """What a run changed on disk: the record `unpersist` undoes, and a description."""

    record: PersistRecord
    paths: list[str]
    diff: str
    unrestorable: list[str]


class FileWatch:
    """Notes a project's files before code runs; `changes()` says what the code changed."""

    def __init__(self, root: Path) -> None:
        self.root = root
        self._cache: dict[Path, tuple[_Key, bytes | None]] = {}
        self._before: dict[Path, _Key] = {}

    def start(self) -> None:
        """Note the files as they are now (reading only those changed since last time)."""
        self._before = _scan(self.root)
        for path, key in self._before.items():
            cached = self._cache.get(path)
            if cached is None or cached[0] != key:
                self._cache[path] = (key, _read(path, key))
        for path in [p for p in self._cache if p not in self._before]:
            del self._cache[path]

    def changes(self, exclude: Collection[Path] = ()) -> WatchedChanges | None:
        """The files created, changed or deleted since `start` (but `exclude`), or None."""
        after = _scan(self.root)
        skip = {os.path.realpath(p) for p in exclude}
        changed = sorted(
            p
            for p in {*self._before, *after}
            if self._before.get(p) != after.get(p) and os.path.realpath(p) not in skip
        )
        if not changed:
            return None
        record, diffs, unrestorable = PersistRecord(), [], []
        for path in changed:
            old = self._cache.get(path, (None, None))[1] if path in self._before else None
            if path in self._before and old is None:
                unrestorable.append(self._label(path))
                continue
            mode = self._before[path][3] if path in self._before else None
            backup = WriteBackup(path, "", old, mode, Fingerprint.of(path))
            record.backups.append(backup)
            diffs.append(self._diff(path, old))
        return WatchedChanges(
            record, [self._label(p) for p in changed], "".join(diffs), unrestorable
        )

    def _label(self, path: Path) -> str:
        return str(path.relative_to(self.root))

    def _diff(self, path: Path, old: bytes | None) -> str:
        label = self._label(path)
        new = _read(path, None) if path.exists() else None
        lines = difflib.unified_diff(
            _text(old).splitlines(keepends=True),
            _text(new).splitlines(keepends=True),
            fromfile=f"{label} (before)" if old is not None else "/dev/null",
            tofile=f"{label} (after)" if new is not None else "/dev/null",
        )
        shown = list(lines)
        if len(shown) > _DIFF_LIMIT:
            shown = [*shown[:_DIFF_LIMIT], f"… ({len(shown) - _DIFF_LIMIT} more lines)\n"]
        return "".join(line if line.endswith("\n") else line + "\n" for line in shown)


def _skipped(folder: str, name: str) -> bool:
    """Folders no program's source lives in, by name, and environments of any name (a
    folder holding pyvenv.cfg): code that installs into one is not undone file by file."""
    if name in _SKIPPED or name.endswith(".egg-info") or name in ("site-packages", "dist-packages"):
        return True
    return os.path.isfile(os.path.join(folder, name, "pyvenv.cfg"))


def _scan(root: Path) -> dict[Path, _Key]:
    found: dict[Path, _Key] = {}
    for folder, dirs, files in os.walk(root):
        dirs[:] = [d for d in dirs if not _skipped(folder, d)]
        for name in files:
            path = Path(folder, name)
            try:
                info = path.lstat()
            except OSError:
                continue
            if stat.S_ISREG(info.st_mode):
                found[path] = (
                    info.st_mtime_ns,
                    info.st_size,
                    info.st_ino,
                    stat.S_IMODE(info.st_mode),
                )
        if len(found) >= _FILE_LIMIT:
            break
    return found


def _read(path: Path, key: _Key | None) -> bytes | None:
    if key is not None and key[1] > _KEEP_LIMIT:
        return None
    try:
        return path.read_bytes()
    except OSError:
        return None


def _text(data: bytes | None) -> str:
    if data is None:
        return ""
    if b"\0" in data[:8000]:
        return f"(binary, {len(data)} bytes)\n"
    return data.decode("utf-8", "replace")
