"""`Runtime`: the programmatic patch-and-verify API of liveforge (DESIGN §3).

The class is put together from mixins, one concern each: patching (`_patching`), resolving
dotted paths (`_resolve`), protection (`_protection`), undo (`_rollbacks`), checks
(`_checks`), persistence (`_persist`), virtual modules (`_virtual`) and file writes
(`_filewrites`, `_filestep`). Reading, reloading and running code in this process are here.
"""

from __future__ import annotations

import ast
import difflib
import functools
import os
import sys
import threading
from collections.abc import Callable
from pathlib import Path
from typing import Any

from liveforge.kernel._changes import Change, ChangeStatus, History
from liveforge.kernel._checks import Checks
from liveforge.kernel._execute import ExecutionResult, execute
from liveforge.kernel._filestep import FileSteps
from liveforge.kernel._filewrites import FileWrites
from liveforge.kernel._interpreter import announce
from liveforge.kernel._patching import Patching
from liveforge.kernel._persist import Persistence
from liveforge.kernel._policy import CheckSettings
from liveforge.kernel._protection import Protection
from liveforge.kernel._resolve import Resolution
from liveforge.kernel._rollbacks import Rollbacks
from liveforge.kernel._roots import discover
from liveforge.kernel._safety import KERNEL_DIR
from liveforge.kernel._sandbox import Sandbox
from liveforge.kernel._sourcefile import read_source
from liveforge.kernel._sources import (
    ModuleRecord,
    ModuleRegistry,
    capture_sources_under,
    check_module_name,
)
from liveforge.kernel._targets import locate
from liveforge.kernel._virtual import VirtualModules
from liveforge.kernel._watch import FileWatch
from liveforge.kernel.defaults import EXECUTE_TIMEOUT, KEEP_RUNS
from liveforge.kernel.errors import PatchError, TargetNotFound, UnpersistedChanges


class Runtime(
    Patching,
    Resolution,
    Protection,
    Rollbacks,
    Checks,
    Persistence,
    VirtualModules,
    FileWrites,
    FileSteps,
):
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
        announce()  # what this Python has that liveforge does not support yet
        self.project_root = Path(project_root).resolve()
        self._root_prefix = os.path.join(str(self.project_root), "")
        self.allow_kernel_patches = allow_kernel_patches
        self.protected = [KERNEL_DIR]
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

    # -- reloading --------------------------------------------------------------------------

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
