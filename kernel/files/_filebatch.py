"""A batch of file writes, all or nothing, and its undo.

    loaded = read_source(path)
    record = persist_files(root, [PlannedWrite(path, new_text, loaded=loaded, module="pkg.mod")])
    restore(record)                                  # puts back exactly what was overwritten

A batch is validated completely (paths, conflicts, encodability) before the first file is
touched, and a failure while writing undoes the files already written. Each write is atomic
(`_files.atomic_write`).
"""

from __future__ import annotations

import os
import shutil
import stat
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path

from liveforge.kernel.errors import PersistConflict, PersistError, UnsafePath
from liveforge.kernel.files._files import atomic_write, check_unchanged, safe_destination
from liveforge.kernel.files._sourcefile import Fingerprint, SourceFile, encode_source

__all__ = ["PersistRecord", "PlannedWrite", "WriteBackup", "persist_files", "restore"]


@dataclass(frozen=True)
class PlannedWrite:
    """One file to write: the new text, and the version it replaces (None for a new file)."""

    path: Path
    text: str
    loaded: SourceFile | None = None
    module: str = ""


@dataclass
class WriteBackup:
    """What one write replaced, so that it can be put back."""

    path: Path
    module: str
    old_bytes: bytes | None
    old_mode: int | None
    new_fingerprint: Fingerprint | None = None
    created: list[Path] = field(default_factory=list)


@dataclass
class PersistRecord:
    """The backups of one persist, in the order the files were written."""

    backups: list[WriteBackup] = field(default_factory=list)

    @property
    def paths(self) -> list[Path]:
        return [backup.path for backup in self.backups]


def persist_files(
    project_root: str | Path, writes: Sequence[PlannedWrite], *, force: bool = False
) -> PersistRecord:
    """Write a batch of sources all-or-nothing; returns the record that `restore` undoes.

    Everything is checked before the first write: destinations inside the root, no conflict
    with the loaded version (or an existing file for a new module) unless `force`, text
    encodable. Directories created for new modules get an empty `__init__.py` unless the batch
    writes one.
    """
    plans = [_prepare(project_root, write, force) for write in writes]
    inits = {dest for dest, _, _ in plans if dest.name == "__init__.py"}
    root = Path(os.path.realpath(project_root))
    record = PersistRecord()
    try:
        for dest, data, write in plans:
            backup = _backup(dest, write.module)
            record.backups.append(backup)
            backup.created = _make_packages(root, dest.parent, inits)
            mode = write.loaded.mode if write.loaded else None
            backup.new_fingerprint = atomic_write(dest, data, mode=mode)
    except BaseException as exc:
        restore(record, force=True)
        if isinstance(exc, OSError):
            raise PersistError(
                f"writing {exc.filename or 'a file'} failed ({exc.strerror}); "
                "every file of this persist was put back."
            ) from exc
        raise
    return record


def _prepare(
    project_root: str | Path, write: PlannedWrite, force: bool
) -> tuple[Path, bytes, PlannedWrite]:
    try:
        dest = safe_destination(project_root, write.path)
    except UnsafePath as exc:
        if not write.module:
            raise
        raise UnsafePath(
            f"module {write.module}: {exc} Nothing was written; leave it out "
            "(persist(modules=[...]) with the others) or roll it back.",
            path=str(write.path),
            module=write.module,
        ) from None
    if not force and write.loaded is not None:
        check_unchanged(dest, write.loaded, module=write.module)
    elif not force and dest.exists():
        raise PersistConflict(
            f"{write.module or dest}: {dest} already exists on disk but liveforge holds this "
            "module only in memory. Move the file away, or persist with force=True to "
            "overwrite it.",
            path=str(dest),
            module=write.module,
        )
    return dest, encode_source(write.text, write.loaded, path=dest, module=write.module), write


def _backup(dest: Path, module: str) -> WriteBackup:
    try:
        return WriteBackup(dest, module, dest.read_bytes(), stat.S_IMODE(dest.stat().st_mode))
    except FileNotFoundError:
        return WriteBackup(dest, module, None, None)


def _make_packages(root: Path, folder: Path, inits: set[Path]) -> list[Path]:
    """Create `folder` and missing parents; new ones get `__init__.py` unless planned."""
    missing = []
    current = folder
    while not current.exists() and current != root and current.is_relative_to(root):
        missing.append(current)
        current = current.parent
    created: list[Path] = []
    for directory in reversed(missing):
        directory.mkdir()
        created.append(directory)
        init = directory / "__init__.py"
        if init not in inits:
            atomic_write(init, b"")
            created.append(init)
    return created


def restore(record: PersistRecord, *, force: bool = False) -> None:
    """Undo a persist: put back each overwritten file, remove created files and folders.

    Refuses (`PersistConflict`) when a written file changed again since, unless `force`.
    """
    if not force:
        for backup in record.backups:
            current = Fingerprint.of(backup.path)
            expected = backup.new_fingerprint
            if expected is not None and (current is None or current.sha256 != expected.sha256):
                raise PersistConflict(
                    f"{backup.module or backup.path}: {backup.path} changed after it was "
                    "persisted; undoing would lose that edit. Pass force=True to undo anyway.",
                    path=str(backup.path),
                    module=backup.module,
                )
    for backup in reversed(record.backups):
        if backup.old_bytes is not None:
            backup.path.parent.mkdir(parents=True, exist_ok=True)  # its folder was removed
            atomic_write(backup.path, backup.old_bytes, mode=backup.old_mode)
        else:
            backup.path.unlink(missing_ok=True)
        for created in reversed(backup.created):
            if created.is_dir():
                _remove_if_empty(created)
            else:
                created.unlink(missing_ok=True)


def _remove_if_empty(folder: Path) -> None:
    shutil.rmtree(folder / "__pycache__", ignore_errors=True)  # left by importing the module
    try:
        folder.rmdir()
    except OSError:
        pass  # something else lives there now; leave it
