"""`Runtime`: the programmatic patch-and-verify API of liveforge (DESIGN §3).

The facade is made of parts, each owning its state and usable alone: the modules it manages
(`Modules`: the registry, import roots, dotted paths, virtual modules), protection, the
changes (`Changes`: history, transactions, rollback, the lock), patching, checks (the
sandbox and its runs), persistence, file writes and file steps. Reading, reloading and
running code in this process are here.
"""

from __future__ import annotations

import ast
import contextlib
import difflib
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any

from liveforge.kernel.boundary._policy import CheckSettings
from liveforge.kernel.checks._overlayhook import OverlayModule
from liveforge.kernel.checks._records import RunResult, RunSummary
from liveforge.kernel.checks._sandbox import Sandbox
from liveforge.kernel.defaults import (
    EXECUTE_TIMEOUT,
    KEEP_RUNS,
    TESTS_TIMEOUT,
    VERIFY_TIMEOUT,
)
from liveforge.kernel.errors import PatchError, TargetNotFound, UnpersistedChanges
from liveforge.kernel.files._filebatch import PersistRecord
from liveforge.kernel.files._journal import ForeignWrite
from liveforge.kernel.files._owncode import ProjectCode
from liveforge.kernel.files._sourcefile import read_source
from liveforge.kernel.files._watch import FileWatch
from liveforge.kernel.history._changes import Change, ChangeStatus
from liveforge.kernel.live._interpreter import announce
from liveforge.kernel.runtime._checks import Checks
from liveforge.kernel.runtime._execute import ExecutionResult, execute
from liveforge.kernel.runtime._filestep import AppliedFiles, FileSteps
from liveforge.kernel.runtime._filewrites import FileWrites
from liveforge.kernel.runtime._modules import Modules
from liveforge.kernel.runtime._patching import Patching
from liveforge.kernel.runtime._persist import Persisted, Persistence, PersistGuard
from liveforge.kernel.runtime._protection import Protection
from liveforge.kernel.runtime._rollbacks import Changes
from liveforge.kernel.source._ondisk import differs_from_disk, disk_text
from liveforge.kernel.source._roots import ImportRoots
from liveforge.kernel.source._sources import ModuleRecord, ModuleRegistry, check_module_name
from liveforge.kernel.source._targets import locate


class Runtime:
    """A live view of a running program's modules: patch, reload, run, check, undo.

    Example::

        rt = Runtime(project_root=".")
        change = rt.patch("pkg.mod.area", "def area(r):\\n    return 3.14159 * r * r\\n")
        print(change.summary())
        rt.rollback(change.id)

    Its parts are attributes: `modules`, `protection`, `changes`, `patching`, `checks`,
    `persistence`, `file_writes` and `file_steps`; every method below delegates to one of
    them or puts several together.
    """

    def __init__(
        self,
        project_root: str | Path = ".",
        *,
        allow_kernel_patches: bool = False,
        keep_runs: int = KEEP_RUNS,
        check_settings: CheckSettings | None = None,
        allow_paths: Sequence[str | Path] = (),
        outside_project: bool = False,
    ) -> None:
        """`allow_paths`: folders (relative to the project root, or not) that persist and
        file writes may write although they are not the project's own code (an environment
        or installed package under the project, a folder outside it). `outside_project`:
        patch modules that are not the project's own code (standard library, site-packages)
        without being asked per patch."""
        announce()  # what this Python has that liveforge does not support yet
        self.modules = Modules(Path(project_root).resolve(), allow_paths=allow_paths)
        self.protection = Protection(
            self.modules.code,
            allow_kernel_patches=allow_kernel_patches,
            outside_project=outside_project,
        )
        self.changes = Changes(self.modules)
        self.patching = Patching(self.modules, self.protection, self.changes)
        self.checks = Checks(
            self.modules,
            self.changes.log,
            keep_runs=keep_runs,
            settings=check_settings or CheckSettings(),
        )
        self.persistence = Persistence(self.modules, self.changes.log)
        self.file_writes = FileWrites(self.modules, self.changes, self.patching, self.persistence)
        self.changes.file_writes = self.file_writes
        self.file_steps = FileSteps(
            self.modules, self.changes, self.patching, self.persistence, self.file_writes
        )
        self._file_watch = FileWatch(self.project_root)
        self.namespace: dict[str, Any] = {"__name__": "__liveforge__", "rt": self}

    # -- what the parts hold ----------------------------------------------------------------

    @property
    def project_root(self) -> Path:
        """The project's folder (resolved)."""
        return self.modules.project_root

    @property
    def registry(self) -> ModuleRegistry:
        """The modules this runtime manages."""
        return self.modules.registry

    @property
    def roots(self) -> ImportRoots:
        """The project's import roots."""
        return self.modules.roots

    @property
    def allow_kernel_patches(self) -> bool:
        """Whether liveforge's kernel may be patched (off unless asked for)."""
        return self.protection.allow_kernel_patches

    @allow_kernel_patches.setter
    def allow_kernel_patches(self, allowed: bool) -> None:
        self.protection.allow_kernel_patches = allowed

    @property
    def code(self) -> ProjectCode:
        """What is the project's own code: where persist writes, and what is patched unasked."""
        return self.modules.code

    @property
    def outside_project(self) -> bool:
        """Whether modules that are not the project's own code are patched unasked."""
        return self.protection.outside_project

    @outside_project.setter
    def outside_project(self, allowed: bool) -> None:
        self.protection.outside_project = allowed

    @property
    def protected(self) -> list[Path]:
        """Files and folders whose modules refuse patches (see `protect`)."""
        return self.protection.protected

    @property
    def keep_runs(self) -> int:
        """How many check records are kept under `sandbox_runs/`."""
        return self.checks.keep_runs

    @property
    def check_settings(self) -> CheckSettings:
        """The settings every check runs with (network, limits, extra paths)."""
        return self.checks.settings

    # -- reading ----------------------------------------------------------------------------

    def source(self, target: str) -> str:
        """The current in-memory source of a module or definition."""
        module_name, path = self.modules.split(target)
        record = self.modules.record(module_name)
        if not path:
            return record.source
        module_name, path, record = self.modules.redirect(module_name, path, record)
        module_name, path, record = self.modules.home(module_name, path, record, bound_now=True)
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
        return self.modules.registry.dirty()

    def diff(self, module: str | None = None) -> str:
        """Unified diff of in-memory source against the file as it is on disk now (re-read
        when it changed since liveforge read or wrote it), for one module or all that
        differ."""
        records = (
            [self.modules.record(check_module_name(module))]
            if module is not None
            else [r for r in self.modules.registry.records() if differs_from_disk(r)]
        )
        chunks = []
        for record in records:
            label = self.modules.label(record)
            chunks.append(
                "".join(
                    difflib.unified_diff(
                        (disk_text(record) or "").splitlines(keepends=True),
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
        self.protection.check(module, module)
        with self.changes.lock:
            record = self.modules.record(module)
            if record.virtual:
                raise PatchError(
                    f"{module!r} is virtual (it has no file to reload from); "
                    "persist it first, or roll it back.",
                    target=module,
                )
            pending = self.changes.log.unpersisted(module)
            if record.dirty and pending and not force:
                raise UnpersistedChanges(module, [c.id for c in pending])
            disk = read_source(record.filename)
            change = self.patching.apply(record, disk.text, target=module, kind="reload", skip=skip)
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
        stack = len(self.persistence.stack)
        try:
            result = execute(code, self.namespace, timeout)
        finally:
            # what the code persisted through this runtime is undone as that persist
            persisted = {p for u in self.persistence.stack[stack:] for p in u.record.paths}
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

    # -- the parts' methods ------------------------------------------------------------------

    def patch(self, target: str, source: str, *, outside_project: bool = False) -> Change:
        """Replace one definition (or a whole module) named by a dotted path, in place.

        A method of a forwardpy declaration that has an `@impl` body patches that body.
        A name that does not exist yet is added at the end of its module or class. A
        property is its getter, setter and deleter together: source with all of them
        replaces them all; a lone getter (or setter) replaces only that part.
        A module that is not the project's own code (standard library, site-packages, an
        environment under the project) is refused unless `outside_project` (or the
        runtime's `outside_project`) says to patch it.
        """
        return self.patching.patch(target, source, outside_project=outside_project)

    def patch_module(
        self, name: str, source: str, *, is_package: bool = False, outside_project: bool = False
    ) -> Change:
        """Replace a whole module's source; creates a virtual module when none exists.
        `outside_project` as for `patch`."""
        return self.patching.patch_module(
            name, source, is_package=is_package, outside_project=outside_project
        )

    def protect(self, path: str | Path) -> None:
        """Refuse patches to the modules loaded from `path` (a file, or a folder and all
        under it), by file location: another import name does not get around it."""
        self.protection.protect(path)

    def history(self) -> list[Change]:
        """Every change, oldest first (rolled-back ones included, marked as such)."""
        return self.changes.history()

    def keep_change_id(self, change_id: str) -> bool:
        """Number the next change `change_id` if no change of this runtime is numbered that
        high yet (a resumed session re-applies its changes under the ids people saw)."""
        return self.changes.keep_change_id(change_id)

    def transaction(self) -> contextlib.AbstractContextManager[list[Change]]:
        """Group patches: if the block raises, every change made inside is rolled back.

        Example::

            with rt.transaction() as changes:
                rt.patch("pkg.a.f", src_f)
                rt.patch("pkg.b.g", src_g)   # if this fails, pkg.a.f is restored too
        """
        return self.changes.transaction()

    def rollback(self, change_id: str | None = None) -> list[Change]:
        """Undo the newest change, or `change_id` together with the later changes of the
        same module (newest first). Returns the changes rolled back."""
        return self.changes.rollback(change_id)

    def rollback_to(self, change_id: str | None = None) -> list[Change]:
        """Undo every change made after `change_id` (all of them when None)."""
        return self.changes.rollback_to(change_id)

    @property
    def sandbox(self) -> Sandbox:
        """The sandbox (its template process starts on first use)."""
        return self.checks.sandbox

    def overlay(self) -> list[OverlayModule]:
        """Every unpersisted module as the sandbox carries it."""
        return self.checks.overlay()

    def verify(
        self,
        code: str,
        *,
        timeout: float = VERIFY_TIMEOUT,
        memory_mb: int | None = None,
        live: bool | None = None,
        network: bool | None = None,
    ) -> RunResult:
        """Run a snippet in a sandboxed child that imports the overlay fresh, inside the check
        boundary (writes only to its scratch folder; TCP only with `network=True` or the
        `sandbox.network` setting) and, where the platform can fork (`live` None: by
        default; True: required; False: skipped), in a fork of this live process too. When
        the two disagree the result is not ok, says so (`divergent`), and the changes it
        carried are marked divergent.

        Example::

            result = rt.verify("from pkg.mod import f\\nassert f(1) == 2")
            result.ok, result.status, result.live, result.summary()
        """
        return self.checks.verify(
            code, timeout=timeout, memory_mb=memory_mb, live=live, network=network
        )

    def run_tests(
        self,
        args: Sequence[str] | None = None,
        *,
        timeout: float = TESTS_TIMEOUT,
        memory_mb: int | None = None,
        network: bool | None = None,
    ) -> RunResult:
        """Run the project's own pytest suite (or `args`) in a sandbox with the overlay,
        inside the same boundary as `verify`."""
        return self.checks.run_tests(args, timeout=timeout, memory_mb=memory_mb, network=network)

    def runs(self) -> list[RunSummary]:
        """Recorded sandbox runs, newest first."""
        return self.checks.runs()

    def run(self, run_id: str) -> RunResult:
        """One recorded sandbox run."""
        return self.checks.run(run_id)

    def close(self) -> None:
        """Stop background processes (the sandbox template)."""
        self.checks.close()

    def foreign_writes(self) -> list[ForeignWrite]:
        """Files other runtimes (other processes) wrote to this project since the last call:
        reload those modules before changing them, or their persist will conflict."""
        return self.persistence.foreign_writes()

    def add_persist_guard(self, guard: PersistGuard) -> None:
        """Run `guard(module_names)` before every persist — `force` does not skip it — so a
        policy (say, "liveforge's own tests pass") holds however persist is reached."""
        self.persistence.add_persist_guard(guard)

    def remove_persist_guard(self, guard: PersistGuard) -> None:
        """Stop running a guard added with `add_persist_guard`."""
        self.persistence.remove_persist_guard(guard)

    def persist(self, modules: Sequence[str] | None = None, *, force: bool = False) -> Persisted:
        """Write changed modules' in-memory source to their files.

        Refuses, writing nothing: paths outside the project root; files changed on disk
        since they were loaded (the error carries the diff); changes without a passing
        `verify`/`run_tests` since their last edit. `force=True` overrides the last two.
        """
        return self.persistence.persist(modules, force=force)

    def record_file_writes(self, record: PersistRecord, diff: str) -> None:
        """Keep files written outside `persist` (by code run in this process) as an undoable
        step: the next `unpersist` puts them back."""
        self.persistence.record_file_writes(record, diff)

    def files_are_newest(self) -> bool:
        """True when the newest step still in effect wrote files (a persist, or code run in
        this process), so undoing means putting files back rather than a rollback."""
        return self.persistence.files_are_newest()

    def file_writes_diff(self) -> str:
        """What code run in this process wrote to files and can still be undone."""
        return self.persistence.file_writes_diff()

    def unpersist(self, *, force: bool = False) -> Persisted:
        """Undo the newest persist: files as they were; memory keeps the changes (unpersisted
        again). Refuses when a written file changed since, unless `force`."""
        return self.persistence.unpersist(force=force)

    def write_file(
        self, path: str | Path, text: str, *, roots: Sequence[str | Path] = ()
    ) -> Change:
        """Write `text` to `path` (relative to the project root) as a recorded change.

        The file of a loaded Python module is patched in memory (the module runs the new
        code at once) and written, as one change; that module must have no changes in
        memory that its file lacks, and the persist guards must agree. Any other file is
        written as text, in its own newline style (the text's ``\\n`` become the file's line
        ending). `roots` are folders outside the project that may be written too.
        """
        return self.file_writes.write_file(path, text, roots=roots)

    def written_diff(self) -> str:
        """Unified diff of every file written by live file changes: as it was before the
        first of them, against the file now."""
        return self.file_writes.written_diff()

    def module_for_file(self, dest: Path) -> str | None:
        """The loaded module whose source file is `dest` (a real path), if any."""
        return self.file_writes.module_for_file(dest)

    def apply_files(
        self, written: Mapping[str, Path], deleted: Sequence[str] = (), *, label: str = ""
    ) -> AppliedFiles:
        """Copy each file of `written` (project-relative path -> a file elsewhere, its mode
        kept) into the project and remove each path of `deleted` (a folder with what it
        holds), as one undoable step described by `label`. `UnsafePath` for a path outside
        the project and `PersistError` for a module with unpersisted changes, both before
        anything changes; a failed write puts back what the step had written."""
        return self.file_steps.apply_files(written, deleted, label=label)
