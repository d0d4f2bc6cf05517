"""The Runtime's recorded file writes: a file changed on disk as one undoable `Change`.

A file write is a step in the same history as patches: `rollback()` puts the file back (and
removes it, and any folders made for it, when the write created it), `written_diff()` shows
what the session's writes did. A write to the file of a Python module the runtime has
loaded goes through the patch engine first, so the running module and its file change
together and never disagree:

    change = rt.write_file("notes/todo.md", "- ship it\\n")   # kind "file", on disk
    change = rt.write_file("pkg/mod.py", new_source)         # pkg.mod patched and written
    rt.rollback(change.id)                                   # file and memory as before

Writes are atomic (`_files.atomic_write`), confined to the project root (plus `roots` the
caller allows), keep the file's newline style and mode, and refuse a file that changed on
disk since the runtime loaded it.
"""

from __future__ import annotations

import difflib
import os
import stat
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING

from liveforge.kernel.errors import PersistConflict, PersistError, UnsafePath
from liveforge.kernel.files._filebatch import (
    PersistRecord,
    PlannedWrite,
    WriteBackup,
    persist_files,
    restore,
)
from liveforge.kernel.files._files import atomic_write, safe_destination
from liveforge.kernel.files._sourcefile import Fingerprint, detect_newline, read_source
from liveforge.kernel.history._changes import FILE_KIND, Change, ChangeStatus

if TYPE_CHECKING:
    from liveforge.kernel.runtime._modules import Modules
    from liveforge.kernel.runtime._patching import Patching
    from liveforge.kernel.runtime._persist import Persistence
    from liveforge.kernel.runtime._rollbacks import Changes


def confined(project_root: Path, path: str | Path, roots: Sequence[str | Path] = ()) -> Path:
    """The real path for `path` (relative to the project root), refusing anything outside
    the project root and the extra `roots` (`UnsafePath` names the allowed places)."""
    given = Path(path).expanduser()
    if given.is_absolute():
        for root in [Path(r).expanduser() for r in roots]:
            if Path(os.path.realpath(given)).is_relative_to(os.path.realpath(root)):
                return safe_destination(root, given)
    try:
        return safe_destination(project_root, given)
    except UnsafePath as exc:
        if roots:
            allowed = ", ".join(str(r) for r in roots)
            raise UnsafePath(f"{exc} Also allowed: {allowed}.", path=str(path)) from None
        raise


def _under(path: Path, roots: Sequence[str | Path]) -> bool:
    return any(path.is_relative_to(os.path.realpath(Path(r).expanduser())) for r in roots)


def read_text(path: Path) -> str:
    """A text file's content with its newlines as they are; `UnicodeDecodeError` for
    files that are not UTF-8 text."""
    return read_text_bytes(path.read_bytes(), str(path))


def read_text_bytes(data: bytes, label: str = "") -> str:
    """`data` as text (see `read_text`); `UnicodeDecodeError` for binary data."""
    if b"\0" in data[:8192]:
        raise UnicodeDecodeError("utf-8", data[:1], 0, 1, f"binary file (NUL bytes) {label}")
    return data.decode("utf-8")


class FileWrites:
    """Files written as recorded changes (`write_file`), and what undoes each of them."""

    def __init__(
        self, modules: Modules, changes: Changes, patching: Patching, persistence: Persistence
    ) -> None:
        self.project_root = modules.project_root
        self.modules = modules
        self.changes = changes
        self.patching = patching
        self.persistence = persistence
        self.records: dict[str, PersistRecord] = {}
        """What each file change wrote (by change id), to put it back."""

    def write_file(
        self, path: str | Path, text: str, *, roots: Sequence[str | Path] = ()
    ) -> Change:
        """Write `text` to `path` (relative to the project root) as a recorded change."""
        dest = confined(self.project_root, path, roots)
        if not _under(dest, roots):  # an environment under the project is not its code
            self.modules.code.check_write(dest, build=False)
        label = self.label(dest)
        with self.changes.lock:
            module = self.module_for_file(dest)
            if module is not None:
                return self._write_module_file(module, dest, text, label)
            return self._write_plain_file(dest, text, label)

    def written_diff(self) -> str:
        """Unified diff of every file written by live file changes: as it was before the first
        of them, against the file now."""
        firsts: dict[str, Change] = {}
        for change in self.changes.log.live():
            if change.kind == FILE_KIND:
                firsts.setdefault(change.filename, change)
        chunks = []
        for label, change in firsts.items():
            path = self.records[change.id].paths[0]
            try:
                now = read_text(path) if path.exists() else None
            except (OSError, UnicodeDecodeError):
                now = "(unreadable now)\n"
            chunks.append(_diff_text(change.before, now, label))
        return "".join(chunks)

    # -- internals --------------------------------------------------------------------------

    def _write_module_file(self, module: str, dest: Path, text: str, label: str) -> Change:
        record = self.modules.record(module)
        pending = [c.id for c in self.changes.log.unpersisted(module)]
        if record.dirty:
            raise PersistError(
                f"{label} is the file of module {module}, which has changes in memory that "
                f"the file lacks ({', '.join(pending) or 'a patch'}); writing the file would "
                "persist them unchecked. Persist or roll them back first, or keep working in "
                "memory with patch.",
                path=str(dest),
                module=module,
            )
        with self.changes.transaction():
            change = self.patching.patch_module(module, text)
            for guard in list(self.persistence.guards):  # as for persist: e.g. self-tests
                guard([module])
            write = PlannedWrite(dest, text, loaded=record.loaded, module=module)
            self.records[change.id] = persist_files(self.project_root, [write])
        record.loaded = read_source(dest)
        change.kind, change.status = FILE_KIND, ChangeStatus.PERSISTED
        change.target = change.filename = label
        return change

    def _write_plain_file(self, dest: Path, text: str, label: str) -> Change:
        try:
            before: str | None = read_text(dest) if dest.exists() else None
        except UnicodeDecodeError:
            raise PersistConflict(
                f"{label} is not UTF-8 text; liveforge's file tools only write text files.",
                path=str(dest),
            ) from None
        if before is not None:
            newline = detect_newline(before)
            text = text.replace("\r\n", "\n").replace("\n", newline)
        backup = backup_of(dest)
        backup.created = make_folders(dest.parent)
        backup.new_fingerprint = atomic_write(dest, text.encode("utf-8"), mode=backup.old_mode)
        change = Change(
            id=self.changes.log.next_id(),
            target=label,
            module=label,
            kind=FILE_KIND,
            before=before,
            after=text,
            status=ChangeStatus.PERSISTED,
            filename=label,
        )
        self.records[change.id] = PersistRecord([backup])
        self.changes.log.add(change)
        if self.changes.transactions:
            self.changes.transactions[-1].append(change)
        return change

    def check_undoable(self, changes: Sequence[Change]) -> None:
        """Refuse, before undoing anything, to undo file writes whose file changed again
        since the newest of them (per file) wrote it."""
        newest: dict[str, Change] = {}
        for change in sorted(changes, key=lambda c: int(c.id[1:])):
            if change.kind == FILE_KIND:
                newest[change.filename] = change
        for change in newest.values():
            for backup in self.records[change.id].backups:
                current, expected = Fingerprint.of(backup.path), backup.new_fingerprint
                if expected is not None and (current is None or current.sha256 != expected.sha256):
                    raise PersistConflict(
                        f"{change.filename} changed on disk after change {change.id} wrote "
                        "it; undoing would lose that edit. Look at the file and write it "
                        "back yourself, or leave the change in place. Nothing was rolled back.",
                        path=str(backup.path),
                    )

    def restore_file(self, change: Change) -> None:
        """Put back the file a file change wrote (removing it, and folders made for it, when
        the change created it)."""
        restore(self.records[change.id], force=True)

    def module_for_file(self, dest: Path) -> str | None:
        """The loaded module whose source file is `dest` (a real path), if any."""
        for record in self.modules.registry.records():
            if not record.virtual and _same(record.filename, dest):
                return record.name
        for name, module in list(sys.modules.items()):
            filename = getattr(module, "__file__", None)
            if (
                isinstance(filename, str)
                and filename.endswith(".py")
                and os.path.basename(filename) == dest.name
                and _same(filename, dest)
            ):
                return name
        return None

    def label(self, dest: Path) -> str:
        """`dest` relative to the project root when inside, else as it is."""
        root = Path(os.path.realpath(self.project_root))
        return str(dest.relative_to(root)) if dest.is_relative_to(root) else str(dest)


def _same(filename: str, dest: Path) -> bool:
    return os.path.realpath(filename) == str(dest)


def backup_of(dest: Path) -> WriteBackup:
    """What writing `dest` will replace (nothing when it does not exist yet)."""
    try:
        return WriteBackup(dest, "", dest.read_bytes(), stat.S_IMODE(dest.stat().st_mode))
    except FileNotFoundError:
        return WriteBackup(dest, "", None, None)


def make_folders(folder: Path) -> list[Path]:
    """Create `folder` and its missing parents; the ones created, outermost first."""
    missing = []
    while not folder.exists():
        missing.append(folder)
        folder = folder.parent
    for directory in reversed(missing):
        directory.mkdir()
    return list(reversed(missing))


def _diff_text(before: str | None, after: str | None, label: str) -> str:
    return "".join(
        difflib.unified_diff(
            (before or "").splitlines(keepends=True),
            (after or "").splitlines(keepends=True),
            "/dev/null" if before is None else f"a/{label}",
            "/dev/null" if after is None else f"b/{label}",
        )
    )
