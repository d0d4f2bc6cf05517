"""The Runtime's persistence: write validated in-memory source to files, and undo that.

All-or-nothing: every destination is checked (inside the project root, unchanged on disk
since it was loaded, every change verified since its last edit) before the first byte is
written; the writes themselves are atomic (`_files`). Afterwards the module's file, its code
objects and linecache point at the real file, so a reload from disk is a no-op. What a
persist overwrote is kept, so `unpersist()` puts it back.
"""

from __future__ import annotations

import importlib.abc
import importlib.machinery
import linecache
import sys
import types
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from pydantic import BaseModel

from liveforge.kernel.errors import PersistError, TargetNotFound, UnverifiedChange
from liveforge.kernel.files._filebatch import PersistRecord, PlannedWrite, persist_files, restore
from liveforge.kernel.files._files import module_path_for
from liveforge.kernel.files._journal import ForeignWrite, Journal
from liveforge.kernel.files._sourcefile import SourceFile, read_source
from liveforge.kernel.history._changes import ChangeStatus, History
from liveforge.kernel.live._functions import defined_functions
from liveforge.kernel.live._update import refile_code
from liveforge.kernel.runtime._modules import Modules
from liveforge.kernel.source._ondisk import resync
from liveforge.kernel.source._sources import (
    ModuleRecord,
    ModuleRegistry,
    check_module_name,
    register_source,
)


class Persisted(BaseModel):
    """What one `persist` wrote."""

    modules: list[str]
    paths: list[str]
    changes: list[str]
    action: str = "wrote"

    def summary(self) -> str:
        """One line per file."""
        if not self.modules:
            return (
                "nothing to persist: every managed module matches its file"
                if self.action == "wrote"
                else "nothing to restore"
            )
        return "\n".join(
            f"{self.action} {m} -> {p}" for m, p in zip(self.modules, self.paths, strict=True)
        )


@dataclass
class _Undo:
    record: PersistRecord
    #: module name -> (loaded before, virtual before, filename before, change ids persisted)
    states: dict[str, tuple[SourceFile | None, bool, str, list[str]]] = field(default_factory=dict)
    #: how many changes history held when the files were written (what came after)
    after: int = 0
    #: the files' diff, for writes made by code run in the process (not by persist)
    diff: str = ""
    #: what made the writes (a shell command), shown above the diff
    label: str = ""


PersistGuard = Callable[[list[str]], None]
"""Called with the module names a persist is about to write; raises to refuse it."""


class Persistence:
    """What the runtime wrote to files, newest last, so each step can be undone; the persist
    guards; the lock and journal shared with other runtimes on the project."""

    def __init__(self, modules: Modules, log: History) -> None:
        self.project_root = modules.project_root
        self.registry = modules.registry
        self.code = modules.code
        self.log = log
        self.stack: list[_Undo] = []
        self.guards: list[PersistGuard] = []
        self.journal = Journal(self.project_root)

    def foreign_writes(self) -> list[ForeignWrite]:
        """Files other runtimes (other processes) wrote to this project since the last call:
        reload those modules before changing them, or their persist will conflict."""
        return self.journal.news()

    def add_persist_guard(self, guard: PersistGuard) -> None:
        """Run `guard(module_names)` before every persist — `force` does not skip it — so a
        policy (say, "liveforge's own tests pass") holds however persist is reached."""
        self.guards.append(guard)

    def remove_persist_guard(self, guard: PersistGuard) -> None:
        """Stop running a guard added with `add_persist_guard`."""
        self.guards.remove(guard)

    def persist(self, modules: Sequence[str] | None = None, *, force: bool = False) -> Persisted:
        """Write changed modules' in-memory source to their files."""
        records = self._to_persist(modules)
        if not records:  # nothing to undo later, so nothing goes on the unpersist stack
            return Persisted(modules=[], paths=[], changes=[])
        for guard in list(self.guards):
            guard([r.name for r in records])
        if not force:
            self._require_verified(records)
        writes = [
            PlannedWrite(self._destination(r), r.source, loaded=r.loaded, module=r.name)
            for r in records
        ]
        for write in writes:  # force does not reach past the project's own code
            self.code.check_write(write.path, module=write.module)
        # Under the lock the files are checked against what was loaded, then written: a
        # second runtime's stale persist is a conflict, never a lost update.
        with self.journal.locked():
            undo = _Undo(persist_files(self.project_root, writes, force=force))
            self.journal.record("persisted", [w.path for w in writes], [r.name for r in records])
        changed: list[str] = []
        for record, write in zip(records, writes, strict=True):
            ids = [c.id for c in self.log.unpersisted(record.name)]
            undo.states[record.name] = (record.loaded, record.virtual, record.filename, ids)
            self.now_on_disk(record, write.path.resolve())
            for change in self.log.unpersisted(record.name):
                change.status = ChangeStatus.PERSISTED
            changed.extend(ids)
        undo.after = len(self.log.all())
        self.stack.append(undo)
        return Persisted(
            modules=[r.name for r in records], paths=[str(w.path) for w in writes], changes=changed
        )

    def record_file_writes(self, record: PersistRecord, diff: str) -> None:
        """Keep files written outside `persist` (by code run in this process) as an undoable
        step: the next `unpersist` puts them back."""
        self.stack.append(_Undo(record, after=len(self.log.all()), diff=diff))
        with self.journal.locked():
            self.journal.record("ran code that wrote", record.paths, [])

    def files_are_newest(self) -> bool:
        """True when the newest step still in effect wrote files (a persist, or code run in this
        process), so undoing means putting files back rather than a rollback."""
        if not self.stack:
            return False
        later = self.log.all()[self.stack[-1].after :]
        return all(c.status is ChangeStatus.ROLLED_BACK for c in later)

    def file_writes_diff(self) -> str:
        """What code run in this process wrote to files and can still be undone."""
        return "".join(
            f"# {undo.label}\n{undo.diff}" if undo.label else undo.diff for undo in self.stack
        )

    def unpersist(self, *, force: bool = False) -> Persisted:
        """Undo the newest persist: files as they were; memory keeps the changes (unpersisted
        again). Refuses when a written file changed since, unless `force`."""
        if not self.stack:
            raise PersistError("there is no persist to undo in this runtime.")
        undo = self.stack[-1]
        with self.journal.locked():
            restore(undo.record, force=force)
            self.journal.record("put back", undo.record.paths, list(undo.states))
        self.stack.pop()
        for name, (loaded, virtual, filename, ids) in undo.states.items():
            record = self.registry.get(name)
            if record is None:
                continue
            record.loaded = loaded
            if virtual:
                self._refile(record, filename, virtual=True)
            for change in self.log.all():
                if change.id in ids and change.status is ChangeStatus.PERSISTED:
                    change.status = (
                        ChangeStatus.VERIFIED if change.verified else ChangeStatus.APPLIED
                    )
        return Persisted(
            modules=list(undo.states) or [self._label_path(p) for p in undo.record.paths],
            paths=[str(p) for p in undo.record.paths],
            changes=[i for s in undo.states.values() for i in s[3]],
            action="restored",
        )

    def _label_path(self, path: Path) -> str:
        try:
            return str(path.relative_to(self.project_root))
        except ValueError:
            return str(path)

    def _to_persist(self, modules: Sequence[str] | None) -> list[ModuleRecord]:
        for known in self.registry.records():
            resync(known)  # a file that already holds what memory runs needs no write
        if modules is None:
            return self.registry.dirty()
        chosen: dict[str, ModuleRecord] = {}
        for name in modules:
            record = self.registry.get(check_module_name(name))
            if record is None:
                raise TargetNotFound(
                    name,
                    [r.name for r in self.registry.records()],
                    hint="Only modules the runtime manages can be persisted.",
                )
            for parent in _virtual_parents(self.registry, name):
                chosen.setdefault(parent.name, parent)
            if record.dirty:
                chosen[name] = record
        return sorted(chosen.values(), key=lambda r: r.name.count("."))

    def _require_verified(self, records: list[ModuleRecord]) -> None:
        divergent = [c for r in records for c in self.log.unpersisted(r.name) if c.divergent]
        if divergent:
            listed = ", ".join(f"{c.id} ({c.target}, run {c.divergent_in})" for c in divergent)
            raise UnverifiedChange(
                f"the live process and a fresh import disagreed on these changes: {listed}; "
                "what would be written is not what runs. Make them agree (patch, reload or "
                "roll back) and verify again, or persist with force=True.",
                module=divergent[0].module,
            )
        missing = [
            c
            for r in records
            for c in self.log.unpersisted(r.name)
            if not c.verified and c.kind != "reload"
        ]
        if missing:
            listed = ", ".join(f"{c.id} ({c.target})" for c in missing)
            raise UnverifiedChange(
                f"no passing verify() or run_tests() since these changes: {listed}. Check "
                "them first (rt.verify(...) / rt.run_tests(...)), or persist with force=True.",
                module=missing[0].module,
            )

    def _destination(self, record: ModuleRecord) -> Path:
        if not record.virtual:
            return Path(record.filename)
        parts = record.name.split(".")
        for depth in range(len(parts) - 1, 0, -1):
            parent = sys.modules.get(".".join(parts[:depth]))
            parent_record = self.registry.get(".".join(parts[:depth]))
            paths = list(getattr(parent, "__path__", []) or [])
            if parent is not None and paths and not (parent_record and parent_record.virtual):
                rest = parts[depth:]
                base = Path(paths[0]).joinpath(*rest)
                return base / "__init__.py" if record.is_package else base.with_suffix(".py")
        return module_path_for(self.project_root, record.name, record.is_package)

    def now_on_disk(self, record: ModuleRecord, path: Path) -> None:
        """`record`'s module was written to `path`: its file, code and linecache say so."""
        record.loaded = read_source(path)
        if record.virtual:
            self._refile(record, str(path), virtual=False)

    def _refile(self, record: ModuleRecord, filename: str, *, virtual: bool) -> None:
        """Point a module, its code and linecache at another file name."""
        module = sys.modules.get(record.name)
        old = record.filename
        record.filename, record.virtual = filename, virtual
        register_source(filename, record.source)
        linecache.cache.pop(old, None)
        if module is None:
            return
        module.__file__ = filename
        loader: importlib.abc.Loader
        if virtual:
            loader = self.registry.loader
        else:
            loader = importlib.machinery.SourceFileLoader(record.name, filename)
        spec = importlib.machinery.ModuleSpec(
            record.name, loader, origin=filename, is_package=record.is_package
        )
        spec.has_location = not virtual
        module.__spec__, module.__loader__ = spec, loader
        if record.is_package:
            module.__path__ = [] if virtual else [str(Path(filename).parent)]
        for func in _module_functions(module, old):
            func.__code__ = refile_code(func.__code__, filename)


def _virtual_parents(registry: ModuleRegistry, name: str) -> list[ModuleRecord]:
    parts = name.split(".")
    found = []
    for depth in range(1, len(parts)):
        record = registry.get(".".join(parts[:depth]))
        if record is not None and record.virtual:
            found.append(record)
    return found


def _module_functions(module: types.ModuleType, filename: str) -> list[types.FunctionType]:
    found: dict[int, types.FunctionType] = {}
    for value in list(vars(module).values()):
        for func in defined_functions(value, filename, 1, sys.maxsize):
            found[id(func)] = func
    return list(found.values())
