"""Files changed elsewhere, applied to the project as one undoable step.

A shell command runs on a copy-on-write view of the project; what it wrote there (files
with their modes, and deletions) comes here, relative to the project root, and lands in the
real project as one step of the runtime's history:

    applied = rt.apply_files({"notes.md": upper / "notes.md"}, ["old.txt"], label="$ make")
    applied.paths, applied.modules, applied.diff
    rt.unpersist()          # the chat's /undo: every file as it was

The file of a module the runtime manages goes through the patch engine first, so the
running module and its file agree at once (as `write_file` does); undoing the step puts
the files back and leaves that change in memory, unpersisted — the next undo rolls it
back, exactly as after a `persist`. The persist guards decide module files as they do for
`persist`; a guard's refusal, or a module with changes in memory its file lacks, refuses
the whole step before anything is written.
"""

from __future__ import annotations

import difflib
import os
import stat
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

from liveforge.kernel._changes import ChangeStatus, History
from liveforge.kernel._filebatch import PersistRecord, WriteBackup, restore
from liveforge.kernel._files import atomic_write, safe_destination
from liveforge.kernel._filewrites import backup_of, make_folders, read_text_bytes
from liveforge.kernel._owncode import ProjectCode
from liveforge.kernel._persist import _Undo
from liveforge.kernel.errors import PersistError

if TYPE_CHECKING:
    import contextlib
    import threading

    from liveforge.kernel._changes import Change
    from liveforge.kernel._journal import Journal
    from liveforge.kernel._sources import ModuleRecord, ModuleRegistry

__all__ = ["AppliedFiles", "FileSteps"]

_DIFF_LINES = 200
"""Diff lines kept per file."""


@dataclass
class AppliedFiles:
    """What one `apply_files` step changed: project-relative paths, patched modules, diff."""

    paths: list[str] = field(default_factory=list)
    modules: list[str] = field(default_factory=list)
    diff: str = ""


class FileSteps:
    """Mixin of `Runtime`: `apply_files`."""

    project_root: Path
    code: ProjectCode
    registry: ModuleRegistry
    _history: History
    _persist_stack: list[_Undo]
    _journal: Journal

    if TYPE_CHECKING:  # provided by Runtime
        _lock: threading.RLock
        _persist_guards: list[Callable[[list[str]], None]]

        def module_for_file(self, dest: Path) -> str | None: ...

        def _record(self, name: str) -> ModuleRecord: ...

        def patch_module(self, name: str, source: str, *, is_package: bool = False) -> Change: ...

        def transaction(self) -> contextlib.AbstractContextManager[list[Change]]: ...

        def _now_on_disk(self, record: ModuleRecord, path: Path) -> None: ...

    def apply_files(
        self, written: Mapping[str, Path], deleted: Sequence[str] = (), *, label: str = ""
    ) -> AppliedFiles:
        """Copy each file of `written` (project-relative path -> a file elsewhere, its mode
        kept) into the project and remove each path of `deleted` (a folder with what it
        holds), as one undoable step described by `label`. `UnsafePath` for a path outside
        the project (`NotProjectCode` in an environment under it, unless `allow_paths`
        lists it) and `PersistError` for a module with unpersisted changes, both before
        anything changes; a failed write puts back what the step had written."""
        root = self.project_root
        targets = {rel: safe_destination(root, rel) for rel in written}
        doomed = [p for rel in deleted for p in _files_under(safe_destination(root, rel))]
        for dest in [*targets.values(), *doomed]:  # an environment is not the project's
            self.code.check_write(dest, build=False)
        with self._lock:
            modules = self._modules_among(targets, written)
            with self.transaction():
                for name, (_, text) in modules.items():
                    self.patch_module(name, text)
                for guard in list(self._persist_guards) if modules else []:
                    guard(list(modules))  # as for persist and write_file: e.g. self-tests
                record = _write_all(targets, written, doomed)
            diff = "".join(_diff(b, root) for b in record.backups)
            undo = _Undo(record, after=len(self._history.all()), diff=diff, label=label)
            for name, (dest, _) in modules.items():
                self._mark_on_disk(undo, name, dest)
            self._persist_stack.append(undo)
            with self._journal.locked():
                self._journal.record(label or "applied files", record.paths, list(modules))
        _remove_empty_folders(deleted, root)
        return AppliedFiles(
            paths=[str(b.path.relative_to(root)) for b in record.backups],
            modules=list(modules),
            diff=diff,
        )

    def _modules_among(
        self, targets: dict[str, Path], written: Mapping[str, Path]
    ) -> dict[str, tuple[Path, str]]:
        """The managed modules whose files are written, with their new text; refuses a
        module whose memory differs from its file."""
        found: dict[str, tuple[Path, str]] = {}
        for rel, dest in targets.items():
            name = self.module_for_file(dest)
            if name is None:
                continue
            try:
                text = written[rel].read_bytes().decode("utf-8")
            except (OSError, UnicodeDecodeError):
                continue  # not text a module can run: written as a plain file
            record = self._record(name)
            if record.dirty:
                raise PersistError(
                    f"{rel} is the file of module {name}, which has changes in memory that "
                    "the file lacks; the command's changes were not applied. Persist or roll "
                    "back those changes, then run the command again.",
                    path=str(dest),
                    module=name,
                )
            found[name] = (dest, text)
        return found

    def _mark_on_disk(self, undo: _Undo, name: str, dest: Path) -> None:
        """As `persist` does: the module's file is now what memory holds."""
        record = self.registry.get(name)
        assert record is not None
        ids = [c.id for c in self._history.unpersisted(name)]
        undo.states[name] = (record.loaded, record.virtual, record.filename, ids)
        self._now_on_disk(record, dest)
        for change in self._history.unpersisted(name):
            change.status = ChangeStatus.PERSISTED


def _files_under(path: Path) -> list[Path]:
    """`path` itself, or every file and link beneath it when it is a folder."""
    if path.is_symlink() or path.is_file():
        return [path]
    if not path.is_dir():
        return []
    return [
        Path(folder) / name
        for folder, dirs, files in os.walk(path)
        for name in [*files, *(d for d in dirs if os.path.islink(os.path.join(folder, d)))]
    ]


def _write_all(
    targets: dict[str, Path], written: Mapping[str, Path], doomed: list[Path]
) -> PersistRecord:
    record = PersistRecord()
    try:
        for rel, dest in targets.items():
            source = written[rel]
            backup = _backup(dest)
            backup.created = make_folders(dest.parent)
            record.backups.append(backup)
            mode = stat.S_IMODE(source.stat().st_mode)
            backup.new_fingerprint = atomic_write(dest, source.read_bytes(), mode=mode)
        for dest in doomed:
            record.backups.append(_backup(dest))
            dest.unlink()
    except BaseException:
        restore(record, force=True)
        raise
    return record


def _backup(dest: Path) -> WriteBackup:
    if dest.is_symlink() or dest.is_dir():
        raise PersistError(
            f"{dest} is a link or a folder where the step writes a file; nothing was applied.",
            path=str(dest),
        )
    return backup_of(dest)


def _remove_empty_folders(deleted: Sequence[str], root: Path) -> None:
    for rel in deleted:
        folder = root / rel
        if folder.is_dir() and not folder.is_symlink():
            for inner, _, _ in sorted(os.walk(folder), key=lambda x: -len(x[0])):
                try:
                    os.rmdir(inner)
                except OSError:
                    pass


def _diff(backup: WriteBackup, root: Path) -> str:
    label = str(backup.path.relative_to(root))
    try:
        after = backup.path.read_bytes() if backup.path.exists() else None
    except OSError:
        after = None
    before = backup.old_bytes
    try:
        old, new = (
            read_text_bytes(data or b"", label).splitlines(keepends=True)
            for data in (before, after)
        )
    except UnicodeDecodeError:
        return f"Binary file {label} changed\n"
    lines = list(
        difflib.unified_diff(
            old,
            new,
            "/dev/null" if before is None else f"a/{label}",
            "/dev/null" if after is None else f"b/{label}",
        )
    )
    if len(lines) > _DIFF_LINES:
        lines = [*lines[:_DIFF_LINES], f"... ({len(lines) - _DIFF_LINES} more diff lines)\n"]
    return "".join(line if line.endswith("\n") else line + "\n" for line in lines)
