"""Changes: every mutation of a live module is a recorded, reversible step."""

from __future__ import annotations

import difflib
import time
from enum import StrEnum
from typing import Any

from pydantic import BaseModel, Field, PrivateAttr

from liveforge.kernel.errors import ChangeError

FILE_KIND = "file"
"""`Change.kind` of a recorded file write (`Runtime.write_file`)."""


class ChangeStatus(StrEnum):
    """Where a change stands: applied in memory, checked, written to files, or undone."""

    APPLIED = "applied"
    VERIFIED = "verified"
    PERSISTED = "persisted"
    ROLLED_BACK = "rolled_back"


class Change(BaseModel):
    """One applied patch, reload or module replacement.

    `before`/`after` are the whole module's in-memory source around the change (`before` is
    None when the change created a virtual module); `target_before`/`target_after` are the
    patched definition alone when the target was a definition.
    """

    id: str
    target: str
    module: str
    kind: str
    before: str | None
    after: str
    target_before: str | None = None
    target_after: str | None = None
    added: list[str] = Field(default_factory=list)
    updated: list[str] = Field(default_factory=list)
    removed: list[str] = Field(default_factory=list)
    notes: list[str] = Field(default_factory=list)
    #: the notes its rollback added to `notes`: what the undo could not take back (a
    #: function a framework's table keeps), what its file holds after.
    rollback_notes: list[str] = Field(default_factory=list)
    status: ChangeStatus = ChangeStatus.APPLIED
    created: float = Field(default_factory=time.time)
    #: ids of passing sandbox runs that carried this change (after its edit).
    verified_by: list[str] = Field(default_factory=list)
    #: id of the check whose live-process run and fresh-import run disagreed, while no
    #: later check found them agreeing; persist refuses the change unless forced.
    divergent_in: str | None = None
    filename: str = ""
    #: virtual parent packages this change created along with its module.
    created_packages: list[str] = Field(default_factory=list)
    #: how to undo exactly this change in the live process, and the statement index of the
    #: module before it (both absent for changes made elsewhere, e.g. read back from JSON).
    _revert: Any = PrivateAttr(default=None)
    _index_before: Any = PrivateAttr(default=None)

    @property
    def divergent(self) -> bool:
        """True when the live process and a fresh import disagreed on a check of it."""
        return self.divergent_in is not None

    @property
    def verified(self) -> bool:
        """True when a passing check ran with this change in place."""
        return bool(self.verified_by)

    def diff(self, context: int = 3) -> str:
        """Unified diff of the module source before and after this change."""
        label = self.filename or self.module
        return "".join(
            difflib.unified_diff(
                (self.before or "").splitlines(keepends=True),
                self.after.splitlines(keepends=True),
                f"a/{label}",
                f"b/{label}",
                n=context,
            )
        )

    def summary(self) -> str:
        """One compact line: id, kind, target, what changed, notes."""
        status = self.status.value + (", divergent" if self.divergent else "")
        parts = [f"{self.id} {self.kind} {self.target} [{status}]"]
        for label, names in (("+", self.added), ("~", self.updated), ("-", self.removed)):
            if names:
                parts.append(label + ",".join(names))
        text = " ".join(parts)
        return text + "".join(f"\n  note: {n}" for n in self.notes)


class History:
    """The ordered list of changes of one runtime."""

    def __init__(self) -> None:
        self._changes: list[Change] = []
        self._counter = 0

    def next_id(self) -> str:
        """A fresh, short change id."""
        self._counter += 1
        return f"c{self._counter}"

    def number_next(self, change_id: str) -> bool:
        """Give the next change the id `change_id` ("c7") when no id up to it is taken yet,
        so a change re-applied in a new process keeps the id it had; False otherwise."""
        digits = change_id[1:]
        if not change_id.startswith("c") or not digits.isdigit() or int(digits) <= self._counter:
            return False
        self._counter = int(digits) - 1
        return True

    def add(self, change: Change) -> Change:
        """Record an applied change."""
        self._changes.append(change)
        return change

    def all(self) -> list[Change]:
        """Every change, oldest first."""
        return list(self._changes)

    def live(self) -> list[Change]:
        """Changes not rolled back, oldest first."""
        return [c for c in self._changes if c.status is not ChangeStatus.ROLLED_BACK]

    def get(self, change_id: str) -> Change:
        """The change with this id; `ChangeError` lists the known ids otherwise."""
        if not isinstance(change_id, str) or not change_id.strip():
            raise ChangeError(
                f"{change_id!r} is not a change id; give one shown by history() (e.g. 'c3'), "
                "or none for the newest change. Nothing was changed.",
                change_id=str(change_id),
            )
        for change in self._changes:
            if change.id == change_id:
                return change
        known = ", ".join(c.id for c in self._changes[-10:]) or "none yet"
        raise ChangeError(
            f"no change {change_id!r}; recent changes: {known}. See history().", change_id=change_id
        )

    def after(self, change: Change) -> list[Change]:
        """Live changes recorded after `change`, oldest first."""
        position = self._changes.index(change)
        return [
            c for c in self._changes[position + 1 :] if c.status is not ChangeStatus.ROLLED_BACK
        ]

    def unpersisted(self, module: str) -> list[Change]:
        """Live changes of `module` not yet written to its file."""
        return [
            c for c in self.live() if c.module == module and c.status is not ChangeStatus.PERSISTED
        ]
