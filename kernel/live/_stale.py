"""Stale statements: statements of a module that read a value a change rebound after they ran
(`DOUBLE = compute(LIMIT)` after `LIMIT` changed), and were not run again — running one
could repeat its side effects, so a note names it instead. The module's record remembers
them; a reload of the module runs them again, as a fresh import of its file would. The
change that made (or ran) them undoes that too."""

from __future__ import annotations

import functools
from collections.abc import Iterable
from typing import TYPE_CHECKING

from liveforge.kernel.live._undo import UndoLog
from liveforge.kernel.source._sources import ModuleRecord
from liveforge.kernel.source._stmts import Index, Stmt

if TYPE_CHECKING:
    from liveforge.kernel.live._engine import Outcome


def pending(record: ModuleRecord) -> frozenset[str]:
    """The stale statements the module still has (a reload runs them again)."""
    if not record.stale or record.index is None:
        return frozenset()
    return frozenset(record.stale & {s.text for s in record.index.stmts})


def track(record: ModuleRecord, outcome: Outcome, index: Index) -> None:
    """After an application to `record`'s module (its new source indexed by `index`): the
    stale statements it ran are stale no longer, those it left are remembered; a note names
    each one run; undoing the application undoes both."""
    assert outcome.revert is not None
    outcome.notes += ran_again(record, outcome.ran_again, index, outcome.revert.log)
    remember(record, outcome.stale, outcome.revert.log)


def remember(record: ModuleRecord, stmts: Iterable[Stmt], log: UndoLog) -> None:
    """`stmts` of `record`'s module are stale; undoing `log` forgets them again."""
    texts = {s.text for s in stmts} - record.stale
    if texts:
        record.stale |= texts
        log.add(functools.partial(record.stale.difference_update, texts))


def ran_again(record: ModuleRecord, again: frozenset[str], index: Index, log: UndoLog) -> list[str]:
    """The stale statements among `again` (texts of statements that ran) are stale no
    longer (until `log` is undone).
    Returns a note for each, naming it by its line in `index`."""
    ran = again & record.stale
    if not ran:
        return []
    record.stale -= ran
    log.add(functools.partial(record.stale.update, ran))
    lines = {s.text: s.start for s in index.stmts}
    return [
        f"line {lines.get(text, '?')} `{text.strip().splitlines()[0]}`: run again, since it read "
        "a value that changed after it ran (as a fresh import would run it)"
        for text in sorted(ran, key=lambda t: lines.get(t, 0))
    ]
