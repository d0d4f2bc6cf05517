"""Dependents of a changed module: what other modules took from it when they ran, and the
references to objects the change could not update in place.

A fresh import of a module that did `from mod import NAME` or `from mod import *` would
take what `mod` binds now. So after a change of `mod`:

- `from mod import NAME [as ALIAS]` copies are bound again to the new value;
- `from mod import *` importers gain the names `mod` now exports (its `__all__`, or its
  public names when it has none), lose those it no longer exports, and take the new value
  of those whose value changed;
- in each, a name a later statement of that module binds itself is left alone (it won at
  import too);
- what those copies reach in the importing module follows as in `mod` itself (see
  `_engine.follow_readers`): default values reading them, pure values computed from them;
  any other statement reading them is named in a note, remembered as stale on the module's
  record (a reload runs it again);
- the modules importing from an importer follow in turn.

Every step is recorded in the change's undo log, so rolling the change back restores the
bindings and objects exactly.
"""

from __future__ import annotations

import ast
import functools
import importlib.util
import sys
import types
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from liveforge.kernel.live import _holders, _reach, _registered, _stale
from liveforge.kernel.live._classes import MergeContext
from liveforge.kernel.live._reexports import export_changes, star_value
from liveforge.kernel.live._revert import MISSING, Revert, changed_bindings
from liveforge.kernel.live._undo import UndoLog
from liveforge.kernel.source._sources import ModuleRegistry, loaded_source
from liveforge.kernel.source._stmts import Index, Stmt, index

if TYPE_CHECKING:
    from liveforge.kernel.live._engine import Outcome

Changes = dict[str, tuple[Any, Any]]


def follow_up(registry: ModuleRegistry, name: str, outcome: Outcome, root: str | None) -> list[str]:
    """After module `name` ran new source: bring what other modules took from it in line
    (see the module's doc), then name what still holds objects the change could not update
    in place. Returns notes."""
    revert = outcome.revert
    if revert is None:
        return []
    notes = []
    if revert.bindings:
        notes += _Importers(registry, revert.log, root).reach(name, revert.bindings)
    if outcome.unmerged:
        records = [*revert.bindings.values(), *outcome.unmerged, outcome.unmerged]
        held = _reach.still_held(outcome.unmerged, records)
        notes += _reach.unmerged_notes(outcome.unmerged, held, outcome.aliases)
        for (name, _, _), where in zip(outcome.unmerged, held, strict=True):
            if where:
                revert.held[name] = where
    thawed = _holders.thawed_note()  # a search above unfroze the program's frozen objects
    if thawed:
        notes.append(thawed)
    return notes


@dataclass
class _Importers:
    registry: ModuleRegistry
    log: UndoLog
    root: str | None
    notes: list[str] = field(default_factory=list)

    def reach(self, name: str, changes: Changes) -> list[str]:
        """Follow `changes` (the bindings module `name` changed) into its importers, and
        theirs in turn; returns notes."""
        queue, done = [(name, changes)], set()
        modules = [m for m in list(sys.modules.values()) if self._may_import(m)]
        while queue:
            source_name, changed = queue.pop(0)
            source = sys.modules.get(source_name)
            if source_name in done or source is None:
                continue
            done.add(source_name)
            starred = export_changes(source, changed)
            copied = {n: c for n, c in changed.items() if c[0] is not MISSING}
            if not starred and not copied:
                continue
            # A module that imported from `source` holds what it took: a replaced value, or
            # (a star import) the functions and classes `source` defines.
            wanted = {id(b) for b, _ in copied.values()}
            if starred:
                wanted |= {id(v) for v in vars(source).values() if _defined_in(v, source_name)}
            for other in modules:
                if other is source:
                    continue
                found = self._index(other, wanted)
                if found is None:
                    continue
                after = self._follow(other, *found, source, copied, starred)
                if after:
                    queue.append((other.__name__, after))
        return self.notes

    def _may_import(self, module: Any) -> bool:
        """A managed module, or another loaded one with its Python file under the root."""
        if not isinstance(module, types.ModuleType):
            return False
        if self.registry.get(module.__name__) is not None:
            return True
        filename = getattr(module, "__file__", None)
        return (
            isinstance(filename, str)
            and filename.endswith(".py")
            and (self.root is None or filename.startswith(self.root))
        )

    def _index(self, module: types.ModuleType, wanted: set[int]) -> tuple[Index, str] | None:
        """The statement index and file name of a module that may import from the changed
        one: any managed module; another (see `_may_import`) when it holds one of the
        `wanted` values."""
        record = self.registry.get(module.__name__)
        try:
            if record is not None:
                if record.index is None:
                    record.index = index(record.source, record.filename)
                return record.index, record.filename
            if not wanted or not any(id(v) in wanted for v in list(vars(module).values())):
                return None
            filename = module.__file__ or ""
            return _parsed(filename, loaded_source(filename)[0]), filename
        except (OSError, SyntaxError, ValueError):  # PatchSyntaxError, undecodable: not ours
            return None

    def _follow(
        self,
        other: types.ModuleType,
        index_: Index,
        filename: str,
        source: types.ModuleType,
        copied: Changes,
        starred: Changes,
    ) -> Changes:
        """Bring `other`'s copies of `source`'s names in line and follow them there; returns
        the bindings of `other` that changed."""
        plan = self._plan(other, index_, source, copied, starred)
        if not plan:
            return {}
        namespace = vars(other)
        saved = dict(namespace)
        for name, (value, note) in plan.items():
            if value is MISSING:
                namespace.pop(name, None)
            else:
                namespace[name] = value
            self.notes.append(note)
        rebound = {n for n, (v, _) in plan.items() if v is not MISSING and n in saved}
        local = UndoLog()
        if rebound:
            self._readers(other, index_, filename, rebound, local)
        after = changed_bindings(namespace, saved)
        self.log.add(Revert(local, namespace, after, lambda: None))
        return after

    def _plan(
        self,
        other: types.ModuleType,
        index_: Index,
        source: types.ModuleType,
        copied: Changes,
        starred: Changes,
    ) -> dict[str, tuple[Any, str]]:
        """What `other` binds anew (`MISSING`: unbinds), with a note for each."""
        namespace, stmts = vars(other), index_.stmts
        label, plan = other.__name__, {}
        for position, stmt in enumerate(stmts):
            node = stmt.node
            if not isinstance(node, ast.ImportFrom) or _resolve(node, other) != source.__name__:
                continue
            later = stmts[position + 1 :]
            for alias in node.names:
                if alias.name == "*":
                    for name, (before, after) in starred.items():
                        current = namespace.get(name, MISSING)
                        if _bound_later(other, later, name) or (
                            before is not MISSING and current is not before
                        ):
                            continue  # not (or no longer) what this star import bound
                        binding = self._unstarred(other, stmts, stmt, name, before, after)
                        if binding is not None:
                            plan[name] = binding
                    continue
                bound = alias.asname or alias.name
                if alias.name not in copied or _bound_later(other, later, bound):
                    continue
                value = vars(source).get(alias.name, MISSING)
                if value is MISSING:
                    self.notes.append(
                        f"{label}.{bound}: imported from {source.__name__}.{alias.name} (line "
                        f"{stmt.start}), which is gone; it keeps the old value, and a fresh "
                        f"import of {label} would fail"
                    )
                elif namespace.get(bound, MISSING) is not value:
                    note = f"re-bound {label}.{bound} to {source.__name__}.{alias.name}"
                    plan[bound] = (value, note)
        return plan

    def _unstarred(
        self,
        other: types.ModuleType,
        stmts: list[Stmt],
        stmt: Stmt,
        name: str,
        before: Any,
        after: Any,
    ) -> tuple[Any, str] | None:
        """What `other` binds to `name`, exported by the star import `stmt` before the
        change (`before`) or after it (`after`), either `MISSING`, with a note; None to
        leave it as it is."""
        label, line = f"{other.__name__}.{name}", f"line {stmt.start}"
        where = f"`{stmt.text.strip()}` ({line})"
        if before is not MISSING and after is not MISSING:
            return after, f"re-bound {label} to {_source_of(stmt, other)}.{name}"
        if after is not MISSING:
            return after, f"{label}: added, since {where} now binds it, as a fresh import would"
        for earlier in reversed(stmts[: stmts.index(stmt)]):
            if name in earlier.binds:
                self.notes.append(
                    f"{label}: {where} no longer binds it, and line {earlier.start} binds it "
                    f"too but did not run again; it keeps the old value (a fresh import "
                    f"would hold what line {earlier.start} binds). Reload {other.__name__} "
                    "to run it again"
                )
                return None
            value = star_value(other, earlier.node, name)
            if value is not MISSING:
                return value, f"{label}: now what line {earlier.start} binds, as in a fresh import"
        return MISSING, f"{label}: removed, since {where} no longer binds it"

    def _readers(
        self, other: types.ModuleType, index_: Index, filename: str, rebound: set[str], log: UndoLog
    ) -> None:
        """What reads the `rebound` copies in `other` follows (see `_engine.follow_readers`);
        a statement that fails doing it leaves what it did undone, with a note."""
        from liveforge.kernel.live import _engine

        namespace = vars(other)
        saved = dict(namespace)
        ctx = MergeContext(log, filename, rehome=_registered.rehome)
        advice = f"reload {other.__name__} to run it again"
        try:
            stale = _engine.follow_readers(
                index_,
                [],
                rebound,
                namespace,
                saved,
                {id(v) for v in saved.values()},
                ctx,
                where=f"{other.__name__}: ",
                advice=advice,
            )
        except Exception as exc:
            log.undo()
            _engine.restore_namespace(namespace, saved)
            _reach.discard_created(ctx.created, saved, anywhere=True)
            self.notes.append(
                f"{other.__name__}: what reads {', '.join(sorted(rebound))} there could not "
                f"follow the new value ({type(exc).__name__}: {exc}); it keeps what the old "
                "value made, and a fresh import would fail or differ"
            )
            return
        self.notes += ctx.notes
        if stale:
            self._remember_stale(other, stale)

    def _remember_stale(self, other: types.ModuleType, stale: list[Stmt]) -> None:
        """Statements of `other` the notes name as stale: a reload of `other` runs them
        again (the change's undo forgets them again)."""
        try:
            record = self.registry.get(other.__name__) or self.registry.track(other)
        except (ValueError, ImportError):
            return
        _stale.remember(record, stale, self.log)


@functools.lru_cache(maxsize=256)
def _parsed(filename: str, source: str) -> Index:
    """The statement index of a module the runtime does not manage (parsed once per text)."""
    return index(source, filename)


def _bound_later(module: types.ModuleType, later: list[Stmt], name: str) -> bool:
    """True when a statement in `later` binds `name` (itself, or by a star import)."""
    return any(name in s.binds or star_value(module, s.node, name) is not MISSING for s in later)


def _defined_in(value: Any, module: str) -> bool:
    return isinstance(value, (type, types.FunctionType)) and value.__module__ == module


def _resolve(node: ast.ImportFrom, module: types.ModuleType) -> str | None:
    """The absolute name of the module an import-from statement of `module` reads."""
    package = module.__name__ if hasattr(module, "__path__") else module.__package__
    try:
        return importlib.util.resolve_name("." * node.level + (node.module or ""), package)
    except (ImportError, ValueError):
        return None


def _source_of(stmt: Stmt, module: types.ModuleType) -> str:
    assert isinstance(stmt.node, ast.ImportFrom)
    return _resolve(stmt.node, module) or ""
