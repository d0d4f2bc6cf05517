"""`Runtime`: the programmatic patch-and-verify API of liveforge (DESIGN §3)."""

from __future__ import annotations

import ast
import difflib
import functools
import importlib
import importlib.util
import os
import sys
import threading
from collections.abc import Callable
from pathlib import Path
from typing import Any

from liveforge.kernel import _engine, _forward, _stale
from liveforge.kernel._changes import Change, ChangeStatus, History
from liveforge.kernel._checks import Checks
from liveforge.kernel._dependents import follow_up
from liveforge.kernel._execute import ExecutionResult, execute
from liveforge.kernel._filestep import FileSteps
from liveforge.kernel._filewrites import FileWrites
from liveforge.kernel._importfail import import_failure
from liveforge.kernel._persist import Persistence
from liveforge.kernel._policy import CheckSettings
from liveforge.kernel._reexports import origin
from liveforge.kernel._rollbacks import Rollbacks
from liveforge.kernel._roots import discover
from liveforge.kernel._safety import KERNEL_DIR, protected_file
from liveforge.kernel._sandbox import Sandbox
from liveforge.kernel._sourcefile import read_source
from liveforge.kernel._sources import (
    ModuleRecord,
    ModuleRegistry,
    capture_sources_under,
    check_module_name,
    importable,
    module_file,
)
from liveforge.kernel._stmts import index
from liveforge.kernel._targets import (
    keep_decorators,
    kind_of,
    locate,
    narrow,
    parse_definition,
    splice,
)
from liveforge.kernel._virtual import VirtualModules
from liveforge.kernel._watch import FileWatch
from liveforge.kernel.defaults import EXECUTE_TIMEOUT, KEEP_RUNS
from liveforge.kernel.errors import (
    PatchError,
    PatchSyntaxError,
    ProtectedTarget,
    SecondModuleName,
    TargetNotFound,
    UndecodableSource,
    UnpersistedChanges,
)

_KERNEL = "liveforge.kernel"


class Runtime(Rollbacks, Checks, Persistence, VirtualModules, FileWrites, FileSteps):
    """A live view of a running program's modules: patch, reload, run, check, undo.

    Example::

        rt = Runtime(project_root=".")
        change = rt.patch("pkg.mod.area", "def area(r):\\n    return 3.14159 * r * r\\n")
        print(change.summary())
        rt.rollback(change.id)
    """

    def __init__(
        self,
        project_root: str | Path = ".",
        *,
        allow_kernel_patches: bool = False,
        keep_runs: int = KEEP_RUNS,
        check_settings: CheckSettings | None = None,
    ) -> None:
        self.project_root = Path(project_root).resolve()
        self._root_prefix = os.path.join(str(self.project_root), "")
        self.allow_kernel_patches = allow_kernel_patches
        self.protected: list[Path] = [KERNEL_DIR]
        """Files and folders whose modules refuse patches, whatever name they were imported
        under (the kernel; `protect` adds more). `allow_kernel_patches` lifts it."""
        self.keep_runs = keep_runs
        self.check_settings = check_settings or CheckSettings()
        self._sandbox: Sandbox | None = None
        self._init_persistence()
        self._init_file_writes()
        self._file_watch = FileWatch(self.project_root)
        self.registry = ModuleRegistry()
        self._history = History()
        self._lock = threading.RLock()
        self._transactions: list[list[Change]] = []
        self.namespace: dict[str, Any] = {"__name__": "__liveforge__", "rt": self}
        self.roots = discover(self.project_root)
        for folder in reversed(self.roots.paths):
            if str(folder) not in sys.path:
                sys.path.insert(0, str(folder))
        capture_sources_under(str(self.project_root), self.roots, owner=self)

    # -- reading ----------------------------------------------------------------------------

    def source(self, target: str) -> str:
        """The current in-memory source of a module or definition."""
        module_name, path = self._split(target)
        record = self._record(module_name)
        if not path:
            return record.source
        module_name, path, record = self._redirect(module_name, path, record)
        module_name, path, record = self._home(module_name, path, record)
        assert record.index is not None
        location = locate(record.index, module_name, path)
        if not location.exists:
            names = [f"{module_name}.{n}" for s in record.index.stmts for n in s.binds]
            raise TargetNotFound(
                target, names, hint="patch() adds a definition that does not exist yet."
            )
        return "".join(record.index.lines[location.start - 1 : location.end])

    def changed_modules(self) -> list[ModuleRecord]:
        """Managed modules whose in-memory source differs from their file."""
        return self.registry.dirty()

    def diff(self, module: str | None = None) -> str:
        """Unified diff of in-memory source against disk, for one module or all changed."""
        records = (
            [self._record(check_module_name(module))]
            if module is not None
            else self.registry.dirty()
        )
        chunks = []
        for record in records:
            label = self._label(record)
            chunks.append(
                "".join(
                    difflib.unified_diff(
                        (record.disk_source or "").splitlines(keepends=True),
                        record.source.splitlines(keepends=True),
                        "/dev/null" if record.virtual else f"a/{label}",
                        f"b/{label}",
                    )
                )
            )
        return "".join(chunks)

    # -- patching ---------------------------------------------------------------------------

    def patch(self, target: str, source: str) -> Change:
        """Replace one definition (or a whole module) named by a dotted path, in place.

        A method of a forwardpy declaration that has an `@impl` body patches that body.
        A name that does not exist yet is added at the end of its module or class. A
        property is its getter, setter and deleter together: source with all of them
        replaces them all; a lone getter (or setter) replaces only that part.
        """
        module_name, path = self._split(target)
        if not path:
            return self.patch_module(module_name, source)
        self._check_protected(target, module_name, by_file=False)  # the file: after redirect
        with self._lock:
            record = self._record(module_name)
            module_name, path, impl_record = self._redirect(module_name, path, record)
            kind_override = "impl" if impl_record is not record else None
            home, path, record = self._home(module_name, path, impl_record)
            moved = f"{home}.{'.'.join(path)}" if home != module_name else None
            module_name = home
            self._check_protected(target, module_name)
            assert record.index is not None
            location = locate(record.index, module_name, path)
            text, node = parse_definition(source, path[-1], target)
            location = narrow(location, text)
            if kind_override and location.node is not None:
                text = keep_decorators(location.node, record.index.lines, text, node)
            before = (
                "".join(record.index.lines[location.start - 1 : location.end])
                if location.exists
                else None
            )
            new_source = splice(record.index.lines, location, text)
            change = self._apply(
                record,
                new_source,
                target=target,
                kind=kind_override or kind_of(node, len(path) > 1),
                target_before=before,
                target_after=text,
            )
            if moved:
                change.notes.insert(
                    0, f"{target} is re-exported; it was patched where it is defined: {moved}"
                )
            return change

    def patch_module(self, name: str, source: str, *, is_package: bool = False) -> Change:
        """Replace a whole module's source; creates a virtual module when none exists."""
        check_module_name(name)
        self._check_protected(name, name)
        with self._lock:
            if name not in sys.modules and self.registry.get(name) is None and not importable(name):
                return self._create_virtual(name, source, is_package)
            record = self._record(name)
            return self._apply(record, source, target=name, kind="module")

    def reload(
        self,
        module: str,
        *,
        dependents: bool = False,
        force: bool = False,
        skip: Callable[[ast.stmt], bool] | None = None,
    ) -> Change:
        """Re-read a module's file and apply it in place (only changed statements run).

        Refuses when the module has unpersisted in-memory changes, unless `force`. `skip`
        picks changed top-level statements (not definitions) to take into the source without
        running them; the change's notes name them. Statements a change left stale (they
        read a value that changed after they ran, and a note named them) run again.
        Names other modules imported from it with `from ... import` (constants: functions and
        classes are updated in place) are re-bound by every change, patches included;
        `dependents` is accepted for compatibility and changes nothing.
        """
        check_module_name(module)
        self._check_protected(module, module)
        with self._lock:
            record = self._record(module)
            if record.virtual:
                raise PatchError(
                    f"{module!r} is virtual (it has no file to reload from); "
                    "persist it first, or roll it back.",
                    target=module,
                )
            pending = self._history.unpersisted(module)
            if record.dirty and pending and not force:
                raise UnpersistedChanges(module, [c.id for c in pending])
            disk = read_source(record.filename)
            change = self._apply(record, disk.text, target=module, kind="reload", skip=skip)
            record.loaded = disk
            if change.id:  # a reload that found the file equal to memory undoes nothing
                for stale in pending:
                    stale.status = ChangeStatus.ROLLED_BACK
            return change

    # -- running ----------------------------------------------------------------------------

    def execute(self, code: str, timeout: float | None = EXECUTE_TIMEOUT) -> ExecutionResult:
        """Run code in this process (REPL style, output captured); `rt` names this runtime.

        Errors in the code come back in the result; a runaway loop is interrupted at the
        timeout. For risky code use `verify`, which runs in a killable sandbox. Project
        files the code writes are listed in the result (with a diff) and `unpersist()`
        puts them back.
        """
        self._file_watch.start()
        stack = len(self._persist_stack)
        try:
            result = execute(code, self.namespace, timeout)
        finally:
            # what the code persisted through this runtime is undone as that persist
            persisted = {p for u in self._persist_stack[stack:] for p in u.record.paths}
            written = self._file_watch.changes(exclude=persisted)
            if written is not None and written.record.backups:
                self.record_file_writes(written.record, written.diff)
        if written is None:
            return result
        return result.model_copy(
            update={
                "files_changed": written.paths,
                "files_diff": written.diff,
                "files_unrestorable": written.unrestorable,
            }
        )

    # -- internals --------------------------------------------------------------------------

    def _apply(
        self,
        record: ModuleRecord,
        source: str,
        *,
        target: str,
        kind: str,
        target_before: str | None = None,
        target_after: str | None = None,
        skip: Callable[[ast.stmt], bool] | None = None,
    ) -> Change:
        module = sys.modules.get(record.name)
        if module is None:
            raise PatchError(
                f"module {record.name!r} is no longer loaded; import it again before patching.",
                target=target,
            )
        before = record.source
        assert record.index is not None
        # A module imported before liveforge watched it may run code older than its file.
        rerun = kind == "reload" and not record.baseline_known
        again = _stale.pending(record) if kind == "reload" else frozenset()
        if source == before and kind == "reload" and not rerun and not again:
            return Change(
                id="",
                target=target,
                module=record.name,
                kind=kind,
                before=before,
                after=source,
                notes=["the file matches memory; nothing changed"],
                filename=self._label(record),
            )
        # Nothing that could fail runs between applying and recording: a patch of code the
        # runtime itself uses (os.path, say) must still be recorded, so it can be undone.
        label = self._label(record)
        index_before = record.index
        new_index, outcome = _engine.apply(
            module,
            record.index,
            source,
            record.filename,
            target,
            rerun_definitions=rerun,
            skip=skip,
            again=again,
        )
        record.source, record.index = source, new_index
        record.baseline_known = True
        _stale.track(record, outcome, new_index)
        change = Change(
            id=self._history.next_id(),
            target=target,
            module=record.name,
            kind=kind,
            before=before,
            after=source,
            target_before=target_before,
            target_after=target_after,
            added=outcome.added,
            updated=outcome.updated,
            removed=outcome.removed,
            notes=outcome.notes,
            filename=label,
        )
        change._revert, change._index_before = outcome.revert, index_before
        change.notes.extend(follow_up(self.registry, record.name, outcome, self._root_prefix))
        return self._record_change(record, change)

    def _split(self, target: str) -> tuple[str, list[str]]:
        parts = check_module_name(target, what="dotted path").split(".")
        for depth in range(len(parts), 0, -1):
            name = ".".join(parts[:depth])
            if name in sys.modules or self.registry.get(name) or importable(name):
                return name, parts[depth:]
        candidates = [m for m in sys.modules if m.split(".")[0] == parts[0]] or list(sys.modules)
        raise TargetNotFound(target, candidates)

    def _record(self, name: str) -> ModuleRecord:
        record = self.registry.get(name)
        if record is None:
            try:
                module = sys.modules.get(name) or importlib.import_module(name)
            except (UndecodableSource, SecondModuleName):
                raise
            except Exception as exc:
                raise import_failure(name, exc, self.project_root) from exc
            try:
                record = self.registry.track(module)
            except ValueError as exc:
                raise PatchError(
                    f"{name!r} has no Python source file (built-in or extension "
                    "module); only Python modules can be patched.",
                    target=name,
                ) from exc
        if record.index is None:
            try:
                record.index = index(record.source, record.filename)
            except PatchSyntaxError as exc:
                # Read from a file that no longer matches what runs; do not keep it.
                if not record.change_ids:
                    self.registry.forget(name)
                raise PatchSyntaxError(
                    f"{name!r} cannot be managed: its file {record.filename} does not "
                    f"compile (line {exc.lineno}), and it may differ from the code that "
                    "is running. Fix the file, then try again.",
                    target=name,
                    line=exc.lineno,
                    filename=record.filename,
                    text=exc.text,
                    offset=exc.offset,
                ) from None
        return record

    def _redirect(
        self, module_name: str, path: list[str], record: ModuleRecord
    ) -> tuple[str, list[str], ModuleRecord]:
        """For a declared forwardpy method with an active @impl, the impl's location."""
        owner: Any = sys.modules.get(module_name)
        for part in path[:-1]:
            owner = getattr(owner, part, None)
        if not _forward.is_declaration(owner):
            return module_name, path, record
        func = _forward.active_impl(owner, path[-1])
        if func is None:
            return module_name, path, record
        impl_module = sys.modules[func.__module__]
        binding = next((k for k, v in vars(impl_module).items() if v is func), None)
        if binding is None:
            return module_name, path, record
        return impl_module.__name__, [binding], self._record(impl_module.__name__)

    def _home(
        self, module_name: str, path: list[str], record: ModuleRecord
    ) -> tuple[str, list[str], ModuleRecord]:
        """For a name the module only re-exports (`from .x import *`, `from .x import y`),
        the module that defines it, and the name there."""
        seen = {module_name}
        while True:
            module = sys.modules.get(module_name)
            assert record.index is not None
            found = origin(record.index, module, path[0]) if module is not None else None
            if found is None or found[0] in seen:
                return module_name, path, record
            module_name, path = found[0], [found[1], *path[1:]]
            seen.add(module_name)
            record = self._record(module_name)

    def protect(self, path: str | Path) -> None:
        """Refuse patches to the modules loaded from `path` (a file, or a folder and all
        under it), by file location: another import name does not get around it."""
        resolved = Path(path).resolve()
        if resolved not in self.protected:
            self.protected.append(resolved)

    def _check_protected(self, target: str, module_name: str, *, by_file: bool = True) -> None:
        if self.allow_kernel_patches:
            return
        if module_name == _KERNEL or module_name.startswith(_KERNEL + "."):
            raise ProtectedTarget(target)
        filename = module_file(module_name)
        in_kernel = filename is not None and Path(filename).resolve().is_relative_to(KERNEL_DIR)
        if in_kernel or (by_file and protected_file(module_name, self.protected)):
            raise ProtectedTarget(
                target,
                place=f"a protected file ({filename or sys.modules[module_name].__file__})",
                hint="It keeps the running program safe; change what it calls instead.",
            )

    def _label(self, record: ModuleRecord) -> str:
        if record.virtual:
            return record.filename
        return _relative_label(record.filename, self.project_root)


@functools.lru_cache(maxsize=4096)
def _relative_label(filename: str, root: Path) -> str:
    """`filename` relative to `root` when it lies inside (resolving a path costs more than
    the rest of a small patch, so it is done once per file)."""
    try:
        return str(Path(filename).resolve().relative_to(root))
    except ValueError:
        return filename
