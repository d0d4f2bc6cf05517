"""Which of a set of files changed since a moment, told by the kernel (inotify) rather than
by a stat of every file at every question.

    watch = ChangedFiles(paths)        # right after the files were seen (stat'ed)
    watch.changed()                 # None the first time: stat every file once now
    watch.changed()                 # then: the paths written, replaced or removed since
    watch.close()

A sandbox's template imported a few hundred module files; before each check the sandbox
asks whether any of them changed on disk (then the template is stale). Stat'ing each file
takes about a millisecond per check; reading the watch's descriptor takes one system call.

What is watched: the folder of each file, for that name being written, its metadata
changed (`touch`, `chmod`), replaced (an editor's save by rename), moved or removed; and
every folder on the way to it (symbolic links followed as the kernel follows them), for
that folder being moved or removed, and for a symbolic link on the way being replaced or
removed. So what a stat of the path would see change, an event says.

`changed` returns None (the caller stats every file, as without a watch) the first time,
because a file may have changed between its stat and the watches being set; and from the
moment the watch cannot tell any more: inotify missing or refused (no descriptor or no
watch left), its queue overflowed, a watched folder moved or went away, or a link on the
way changed. A file reported once stays reported.

Each forked child of this process closes the watches' descriptors as it starts (a live
check must not read, and so take away, the events).
"""

from __future__ import annotations

import contextlib
import ctypes
import os
import struct
import sys
import threading
from collections.abc import Iterable

__all__ = ["ChangedFiles"]

IN_MODIFY, IN_ATTRIB, IN_CLOSE_WRITE = 0x2, 0x4, 0x8
IN_MOVED_FROM, IN_MOVED_TO, IN_CREATE, IN_DELETE = 0x40, 0x80, 0x100, 0x200
IN_DELETE_SELF, IN_MOVE_SELF, IN_UNMOUNT, IN_Q_OVERFLOW, IN_IGNORED = (
    0x400,
    0x800,
    0x2000,
    0x4000,
    0x8000,
)
IN_ONLYDIR = 0x01000000
IN_NONBLOCK, IN_CLOEXEC = os.O_NONBLOCK, getattr(os, "O_CLOEXEC", 0)

ENTRY = IN_MOVED_FROM | IN_MOVED_TO | IN_CREATE | IN_DELETE
"""A name of the folder replaced, moved or removed."""
CONTENT = IN_MODIFY | IN_ATTRIB | IN_CLOSE_WRITE
"""A file of the folder written or its metadata changed."""
SELF = IN_DELETE_SELF | IN_MOVE_SELF
"""The folder itself moved or removed."""
LOST = IN_Q_OVERFLOW | IN_IGNORED | IN_UNMOUNT | SELF
"""The watch can no longer tell."""
_EVENT = struct.Struct("iIII")
_MAX_LINKS = 40

_open: set[int] = set()
"""Descriptors of the watches open in this process (closed in each forked child)."""
_lock = threading.Lock()


def _before_fork() -> None:
    _lock.acquire()


def _after_in_parent() -> None:
    _lock.release()


def _after_in_child() -> None:
    """The watches are the parent's: their descriptors are closed, and the lock (held
    across the fork) is a new one."""
    global _lock
    _lock = threading.Lock()
    for fd in _open:
        with contextlib.suppress(OSError):
            os.close(fd)
    _open.clear()


def _libc() -> ctypes.CDLL | None:
    if not sys.platform.startswith("linux"):
        return None
    try:
        libc = ctypes.CDLL(None, use_errno=True)
        libc.inotify_init1  # noqa: B018 - present in glibc and musl since long ago
        return libc
    except (OSError, AttributeError):
        return None


_LIBC = _libc()
if _LIBC is not None and hasattr(os, "register_at_fork"):
    # no fork while a watch's descriptor is made and not yet known to be closed in children
    os.register_at_fork(
        before=_before_fork, after_in_parent=_after_in_parent, after_in_child=_after_in_child
    )


class ChangedFiles:
    """Watches over a set of files (see the module's text)."""

    def __init__(self, paths: Iterable[str]) -> None:
        """Start watching `paths` (absolute paths of files that existed when last seen)."""
        self.paths = frozenset(paths)
        self._fd: int | None = None
        self._files: dict[tuple[int, str], str] = {}
        """(watch, name) -> the watched path of a file."""
        self._links: set[tuple[int, str]] = set()
        """(watch, name) of the symbolic links on the way to a file."""
        self._asked = False
        self._changed: set[str] = set()
        self.blind: str | None = "not started"
        """Why the watch cannot tell (the caller stats every file), or None."""
        if _LIBC is None:
            self.blind = "inotify is not available here"
            return
        if not all(os.path.isabs(p) for p in self.paths):
            self.blind = "a relative path"
            return
        try:
            self._start()
        except OSError as exc:
            self.close()
            self.blind = f"inotify refused: {exc}"

    def changed(self) -> set[str] | None:
        """The watched paths that changed since the watch started (see the module's text),
        or None when the caller must stat every file instead."""
        if not self._asked:
            self._asked = True
            return None
        if self._fd is None:
            return None
        self._read()
        return None if self._fd is None else set(self._changed)

    def close(self) -> None:
        """Stop watching."""
        fd, self._fd = self._fd, None
        if self.blind is None:
            self.blind = "closed"
        if fd is not None:
            with _lock:
                _open.discard(fd)
            with contextlib.suppress(OSError):
                os.close(fd)

    def __del__(self) -> None:
        with contextlib.suppress(Exception):  # also at interpreter exit
            self.close()

    def _start(self) -> None:
        assert _LIBC is not None
        with _lock:
            fd = _LIBC.inotify_init1(IN_NONBLOCK | IN_CLOEXEC)
            if fd < 0:
                code = ctypes.get_errno()
                raise OSError(code, os.strerror(code))
            self._fd = fd
            _open.add(fd)
        masks: dict[str, int] = {}
        files: dict[str, dict[str, str]] = {}  # folder -> name -> the watched path
        links: dict[str, set[str]] = {}
        resolved: dict[str, tuple[str, list[tuple[str, str, bool]]]] = {}
        for path in self.paths:
            folder, name, way = _resolve_file(path, resolved)
            for parent, entry, is_link in way:
                masks[parent] = masks.get(parent, 0) | SELF | (ENTRY if is_link else 0)
                if is_link:
                    links.setdefault(parent, set()).add(entry)
            masks[folder] = masks.get(folder, 0) | SELF | ENTRY | CONTENT
            files.setdefault(folder, {}).setdefault(name, path)
        for folder, mask in masks.items():
            wd = _LIBC.inotify_add_watch(fd, os.fsencode(folder), mask | IN_ONLYDIR)
            if wd < 0:
                code = ctypes.get_errno()
                raise OSError(code, f"{os.strerror(code)} ({folder})")
            for name, path in files.get(folder, {}).items():
                self._files[(wd, name)] = path
            for name in links.get(folder, ()):
                self._links.add((wd, name))
        self.blind = None

    def _read(self) -> None:
        """Take in every event queued; lose the watch on one it cannot follow."""
        assert self._fd is not None
        while True:
            try:
                data = os.read(self._fd, 65536)
            except BlockingIOError:
                return
            except OSError as exc:
                self.close()
                self.blind = f"reading inotify failed: {exc}"
                return
            offset = 0
            while offset + _EVENT.size <= len(data):
                wd, mask, _, length = _EVENT.unpack_from(data, offset)
                start = offset + _EVENT.size
                name = data[start : start + length].rstrip(b"\0")
                offset = start + length
                if mask & LOST:
                    self.close()
                    self.blind = "a watched folder moved or went away, or events were lost"
                    return
                key = (wd, os.fsdecode(name))
                if key in self._links:
                    self.close()
                    self.blind = "a symbolic link on the way to a file changed"
                    return
                path = self._files.get(key)
                if path is not None:
                    self._changed.add(path)


def _resolve_file(
    path: str, done: dict[str, tuple[str, list[tuple[str, str, bool]]]]
) -> tuple[str, str, list[tuple[str, str, bool]]]:
    """The real folder and name of file `path`, and the entries looked up on the way to
    it (see `_resolve`), the links it is reached through included."""
    folder, name = os.path.split(path)
    real, way = _resolve(folder, done)
    way = list(way)
    for _ in range(_MAX_LINKS):
        full = os.path.join(real, name)
        if not os.path.islink(full):
            break
        way.append((real, name, True))
        folder, name = os.path.split(os.path.join(real, os.readlink(full)))
        real, more = _resolve(folder, done)
        way += more
    return real, name, way


def _resolve(
    folder: str, done: dict[str, tuple[str, list[tuple[str, str, bool]]]]
) -> tuple[str, list[tuple[str, str, bool]]]:
    """The real path of `folder` and the entries looked up on the way, as (real folder,
    name, is a link), links followed as the kernel follows them."""
    if folder in done:
        return done[folder]
    parts = [p for p in folder.split("/") if p not in ("", ".")]
    current, way, hops = "/", [], 0
    while parts:
        name = parts.pop(0)
        if name == "..":
            current = os.path.dirname(current)
            continue
        full = os.path.join(current, name)
        is_link = os.path.islink(full)
        way.append((current, name, is_link))
        if is_link and hops < _MAX_LINKS:
            hops += 1
            target = os.readlink(full)
            if target.startswith("/"):
                current = "/"
            parts = [p for p in target.split("/") if p not in ("", ".")] + parts
            continue
        current = full
    done[folder] = (current, way)
    return current, way
