"""The runtime's changes: their history, transactions and exact rollback.

A rollback restores what was there before a change (its recorded undo, identity included)
when the module still holds what the change made; otherwise it applies the old source
again. A change to a file written through the runtime puts the file back first.
"""

from __future__ import annotations

import contextlib
import sys
import threading
from collections.abc import Iterator, Sequence
from typing import Protocol

from liveforge.kernel.errors import ChangeError
from liveforge.kernel.files._sourcefile import read_source
from liveforge.kernel.history._changes import FILE_KIND, Change, ChangeStatus, History
from liveforge.kernel.live import _engine, _holders
from liveforge.kernel.live._dependents import follow_up
from liveforge.kernel.runtime._modules import Modules
from liveforge.kernel.source._ondisk import disk_text, resync
from liveforge.kernel.source._sources import ModuleRecord, register_source

__all__ = ["Changes", "FileUndo"]


class FileUndo(Protocol):
    """What undoes file changes (the runtime's `FileWrites`)."""

    def restore_file(self, change: Change) -> None:
        """Put back the file `change` wrote."""

    def check_undoable(self, changes: Sequence[Change]) -> None:
        """Refuse, before anything is undone, to undo a file that changed again since."""


class Changes:
    """Every change a runtime made, the transactions open now, and undoing them.

    It owns the runtime's lock: one change at a time, whichever part makes it. File changes
    are made and undone by a file part (`file_writes`, set when there is one); without it
    there are only changes in memory."""

    def __init__(self, modules: Modules) -> None:
        self.modules = modules
        self.log = History()
        self.lock = threading.RLock()
        self.transactions: list[list[Change]] = []
        self.file_writes: FileUndo | None = None

    def history(self) -> list[Change]:
        """Every change, oldest first (rolled-back ones included, marked as such)."""
        return self.log.all()

    def keep_change_id(self, change_id: str) -> bool:
        """Number the next change `change_id` if no change of this runtime is numbered that high
        yet (a resumed session re-applies its changes under the ids people saw)."""
        with self.lock:
            return self.log.number_next(change_id)

    @contextlib.contextmanager
    def transaction(self) -> Iterator[list[Change]]:
        """Group patches: if the block raises, every change made inside is rolled back."""
        group: list[Change] = []
        self.transactions.append(group)
        try:
            yield group
        except BaseException:
            for change in reversed(group):
                if change.status is not ChangeStatus.ROLLED_BACK:
                    self.undo(change)
            raise
        finally:
            self.transactions.remove(group)
            if self.transactions:  # the enclosing transaction owns what survived
                self.transactions[-1].extend(
                    c for c in group if c.status is not ChangeStatus.ROLLED_BACK
                )

    def rollback(self, change_id: str | None = None) -> list[Change]:
        """Undo the newest change, or `change_id` together with the later changes of the same
        module (newest first). Returns the changes rolled back."""
        with self.lock:
            live = self.log.live()
            if change_id is None and not live:
                raise ChangeError("there is nothing to roll back: no live changes.")
            change = self.log.get(change_id) if change_id is not None else live[-1]
            if change.status is ChangeStatus.ROLLED_BACK:
                raise ChangeError(
                    f"change {change.id} is already rolled back.", change_id=change.id
                )
            later = [c for c in self.log.after(change) if c.module == change.module]
            self._check_undoable([*later, change])
            undone = []
            for item in [*reversed(later), change]:
                self.undo(item)
                undone.append(item)
            return undone

    def rollback_to(self, change_id: str | None = None) -> list[Change]:
        """Undo every change made after `change_id` (all of them when None)."""
        with self.lock:
            later = (
                self.log.after(self.log.get(change_id))
                if change_id is not None
                else self.log.live()
            )
            self._check_undoable(later)
            undone = []
            for change in reversed(later):
                self.undo(change)
                undone.append(change)
            return undone

    def record(self, record: ModuleRecord, change: Change) -> Change:
        """Add `change` (made to `record`'s module) to the history and the open transaction."""
        self.log.add(change)
        record.change_ids.append(change.id)
        if self.transactions:
            self.transactions[-1].append(change)
        return change

    def undo(self, change: Change) -> None:
        """Undo one change: its recorded undo when the module still holds what it made,
        else its old source applied again; a file change puts its file back first. The
        module's file is read again after, and a rolled-back persisted change says what its
        file holds. What the undo could not take back (a function the change defined that
        a framework's table keeps by name) is added to the change's notes, and kept apart in its
        `rollback_notes`."""
        persisted = change.status is ChangeStatus.PERSISTED and change.kind != FILE_KIND
        said = len(change.notes)
        self._undo_in_memory(change)
        record = self.modules.registry.get(change.module)
        if record is not None and not record.virtual:
            resync(record)
            if persisted:
                change.notes.append(_file_after_rollback(record))
        change.rollback_notes = change.notes[said:]

    def _undo_in_memory(self, change: Change) -> None:
        if change.kind == FILE_KIND:
            self._files().restore_file(change)
        record = self.modules.registry.get(change.module)
        if change.kind == FILE_KIND and (record is None or change.before is None):
            change.status = ChangeStatus.ROLLED_BACK  # a plain file: nothing in memory
            return
        if record is None:
            raise ChangeError(
                f"module {change.module!r} of change {change.id} is no longer "
                "managed; it cannot be rolled back.",
                change_id=change.id,
            )
        if change.before is None:
            for name in [change.module, *reversed(change.created_packages)]:
                self.modules.remove_virtual(name)
        elif change._revert is not None and record.source == change.after:
            # The exact objects and bindings that were there come back (identity included);
            # a function it made that a framework's table keeps by name is said.
            change.notes.extend(change._revert())
            thawed = _holders.thawed_note()  # its search of the heap unfroze the program's
            if thawed:
                change.notes.append(thawed)
            register_source(record.filename, change.before)
            record.source, record.index = change.before, change._index_before
        else:
            module = sys.modules[change.module]
            assert record.index is not None
            new_index, outcome = _engine.apply(
                module, record.index, change.before, record.filename, change.target
            )
            record.source, record.index = change.before, new_index
            # what the old source could not take back (a removed function a framework's
            # table still holds, old references) is said on the change rolled back
            change.notes.extend(outcome.notes)
            change.notes.extend(
                follow_up(self.modules.registry, change.module, outcome, self.modules.root_prefix)
            )
        if change.kind == FILE_KIND:
            record.loaded = read_source(record.filename)
        change.status = ChangeStatus.ROLLED_BACK
        if change.id in record.change_ids:
            record.change_ids.remove(change.id)

    def _files(self) -> FileUndo:
        # only a file part makes file changes, so one is there whenever they are
        assert self.file_writes is not None
        return self.file_writes

    def _check_undoable(self, changes: list[Change]) -> None:
        """Refuse, before undoing anything, a rollback that would orphan a written file or
        lose an edit made to a file after a file change wrote it."""
        if self.file_writes is not None:
            self.file_writes.check_undoable(changes)
        for change in changes:
            record = self.modules.registry.get(change.module)
            if change.before is None and record is not None and not record.virtual:
                raise ChangeError(
                    f"change {change.id} created {change.module}, which has since been "
                    f"persisted to {record.filename}; rolling it back would leave that file "
                    "behind. Undo the persist first (unpersist()), or patch the module "
                    "instead. Nothing was rolled back.",
                    change_id=change.id,
                )


def _file_after_rollback(record: ModuleRecord) -> str:
    """What a rollback of a persisted change did to its file: nothing — it says whether the
    file holds the rolled-back code (restored, say by `git checkout`) or still the change."""
    if disk_text(record) == record.source:
        return (
            f"its file {record.filename} already holds the code as rolled back (it changed "
            "on disk since the persist)"
        )
    return (
        f"its file {record.filename} was left as persisted (it still holds this change); "
        "persist writes the rolled-back code to it, or unpersist() puts the file back"
    )
