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
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

from liveforge.kernel.errors import PersistError
from liveforge.kernel.files._filebatch import PersistRecord, WriteBackup, restore
from liveforge.kernel.files._files import atomic_write, safe_destination
from liveforge.kernel.history._changes import ChangeStatus
from liveforge.kernel.runtime._filewrites import backup_of, make_folders, read_text_bytes
from liveforge.kernel.runtime._persist import _Undo

if TYPE_CHECKING:
    from liveforge.kernel.runtime._filewrites import FileWrites
    from liveforge.kernel.runtime._modules import Modules
    from liveforge.kernel.runtime._patching import Patching
    from liveforge.kernel.runtime._persist import Persistence
    from liveforge.kernel.runtime._rollbacks import Changes

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
    """Files changed elsewhere (by a shell command on a view), applied as one step."""

    def __init__(
        self,
        modules: Modules,
        changes: Changes,
        patching: Patching,
        persistence: Persistence,
        file_writes: FileWrites,
    ) -> None:
        self.project_root = modules.project_root
        self.modules = modules
        self.changes = changes
        self.patching = patching
        self.persistence = persistence
        self.file_writes = file_writes

    def apply_files(
        self, written: Mapping[str, Path], deleted: Sequence[str] = (), *, label: str = ""
    ) -> AppliedFiles:
        """Copy each file of `written` (project-relative path -> a file elsewhere, its mode
        kept) into the project and remove each path of `deleted` (a folder with what it holds),
        as one undoable step described by `label`. `UnsafePath` for a path outside the project
        (`NotProjectCode` in an environment under it, unless `allow_paths` lists it) and
        `PersistError` for a module with unpersisted changes, both before anything changes;
        a failed write puts back what the step had written."""
        root = self.project_root
        targets = {rel: safe_destination(root, rel) for rel in written}
        doomed = [p for rel in deleted for p in _files_under(safe_destination(root, rel))]
        for dest in [*targets.values(), *doomed]:  # an environment is not the project's
            self.modules.code.check_write(dest, build=False)
        with self.changes.lock:
            modules = self._modules_among(targets, written)
            with self.changes.transaction():
                for name, (_, text) in modules.items():
                    self.patching.patch_module(name, text)
                for guard in list(self.persistence.guards) if modules else []:
                    guard(list(modules))  # as for persist and write_file: e.g. self-tests
                record = _write_all(targets, written, doomed)
            diff = "".join(_diff(b, root) for b in record.backups)
            undo = _Undo(record, after=len(self.changes.log.all()), diff=diff, label=label)
            for name, (dest, _) in modules.items():
                self._mark_on_disk(undo, name, dest)
            self.persistence.stack.append(undo)
            with self.persistence.journal.locked():
                self.persistence.journal.record(
                    label or "applied files", record.paths, list(modules)
                )
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
            name = self.file_writes.module_for_file(dest)
            if name is None:
                continue
            try:
                text = written[rel].read_bytes().decode("utf-8")
            except (OSError, UnicodeDecodeError):
                continue  # not text a module can run: written as a plain file
            record = self.modules.record(name)
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
        record = self.modules.registry.get(name)
        assert record is not None
        ids = [c.id for c in self.changes.log.unpersisted(name)]
        undo.states[name] = (record.loaded, record.virtual, record.filename, ids)
        self.persistence.now_on_disk(record, dest)
        for change in self.changes.log.unpersisted(name):
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
