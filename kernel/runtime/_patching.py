"""Patching: `patch` (one definition by dotted path, spliced into its module's source),
`patch_module` (a whole module, virtual if new), and `apply`, which runs new source through
the patch engine and records the `Change` (reload uses it too).
"""

from __future__ import annotations

import ast
import sys
from collections.abc import Callable

from liveforge.kernel.errors import PatchError
from liveforge.kernel.history._changes import Change
from liveforge.kernel.live import _engine, _plans, _stale
from liveforge.kernel.live._dependents import follow_up
from liveforge.kernel.runtime._modules import Modules
from liveforge.kernel.runtime._protection import Protection
from liveforge.kernel.runtime._rollbacks import Changes
from liveforge.kernel.source._sources import ModuleRecord, check_module_name, importable
from liveforge.kernel.source._stmts import Stmt, bindings, first_line
from liveforge.kernel.source._targets import (
    keep_decorators,
    kind_of,
    locate,
    narrow,
    parse_definition,
    splice,
)

__all__ = ["Patching"]


class Patching:
    """Changes made by new source: one definition, a whole module, a module made anew."""

    def __init__(self, modules: Modules, protection: Protection, changes: Changes) -> None:
        self.modules = modules
        self.protection = protection
        self.changes = changes

    def patch(self, target: str, source: str, *, outside_project: bool = False) -> Change:
        """Replace one definition (or a whole module) named by a dotted path, in place."""
        module_name, path = self.modules.split(target)
        if not path:
            return self.patch_module(module_name, source, outside_project=outside_project)
        self.protection.check(target, module_name, by_file=False)  # the file: after redirect
        with self.changes.lock:
            record = self.modules.record(module_name)
            module_name, path, impl_record = self.modules.redirect(module_name, path, record)
            kind_override = "impl" if impl_record is not record else None
            home, path, record = self.modules.home(module_name, path, impl_record)
            moved = f"{home}.{'.'.join(path)}" if home != module_name else None
            module_name = home
            self.protection.check(target, module_name)
            self.protection.check_own(target, record, outside_project=outside_project)
            assert record.index is not None
            location = locate(record.index, module_name, path)
            # A top-level definition is parsed where it will stand: the index takes its node.
            first = location.start if location.exists and not location.indent else 1
            text, node = parse_definition(source, path[-1], target, first)
            if location.exists and len(path) == 1 and _is_def(location.node) != _is_def(node):
                # a `def f` patched while a later `f = deco(f)` binds the name: the `def`
                location = locate(record.index, module_name, path, like=node)
            location = narrow(location, text)
            if kind_override and location.node is not None:
                text = keep_decorators(location.node, record.index.lines, text, node)
            before = (
                "".join(record.index.lines[location.start - 1 : location.end])
                if location.exists
                else None
            )
            new_source, lines = splice(record.index.lines, location, text)
            given = None
            if location.exists and not location.indent and not kind_override:
                given = _alone(node, text, first) if location.start == first else None
            change = self.apply(
                record,
                new_source,
                target=target,
                kind=kind_override or kind_of(node, len(path) > 1),
                target_before=before,
                target_after=text,
                known=_plans.Known(lines, (location.start - 1, location.end), given),
            )
            if moved:
                change.notes.insert(
                    0, f"{target} is re-exported; it was patched where it is defined: {moved}"
                )
            return change

    def patch_module(
        self, name: str, source: str, *, is_package: bool = False, outside_project: bool = False
    ) -> Change:
        """Replace a whole module's source; creates a virtual module when none exists.
        `outside_project` as for `patch`."""
        check_module_name(name)
        self.protection.check(name, name)
        with self.changes.lock:
            if (
                name not in sys.modules
                and self.modules.registry.get(name) is None
                and not importable(name)
            ):
                return self.create_virtual(name, source, is_package)
            record = self.modules.record(name)
            self.protection.check_own(name, record, outside_project=outside_project)
            return self.apply(record, source, target=name, kind="module")

    def apply(
        self,
        record: ModuleRecord,
        source: str,
        *,
        target: str,
        kind: str,
        target_before: str | None = None,
        target_after: str | None = None,
        skip: Callable[[ast.stmt], bool] | None = None,
        known: _plans.Known | None = None,
    ) -> Change:
        """Run `source` as `record`'s module's new text through the engine; the `Change`.
        `known` is what a patch knows of the new text (see `_plans.Known`)."""
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
                filename=self.modules.label(record),
            )
        # Nothing that could fail runs between applying and recording: a patch of code the
        # runtime itself uses (os.path, say) must still be recorded, so it can be undone.
        label = self.modules.label(record)
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
            known=known,
        )
        record.source, record.index = source, new_index
        record.baseline_known = True
        _stale.track(record, outcome, new_index)
        change = Change(
            id=self.changes.log.next_id(),
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
        change.notes.extend(
            follow_up(self.modules.registry, record.name, outcome, self.modules.root_prefix)
        )
        return self.changes.record(record, change)

    def create_virtual(self, name: str, source: str, is_package: bool) -> Change:
        """A module that exists only in memory (until persisted), and its missing parents."""
        created = self.modules.virtual_parents(name)
        module, record = self.modules.install_virtual(name, is_package)
        assert record.index is not None  # install_virtual indexes the empty source
        try:
            new_index, outcome = _engine.apply(module, record.index, source, record.filename, name)
        except BaseException:
            for dead in [name, *reversed(created)]:
                self.modules.remove_virtual(dead)
            raise
        record.source, record.index = source, new_index
        change = Change(
            id=self.changes.log.next_id(),
            target=name,
            module=name,
            kind="virtual-module",
            before=None,
            after=source,
            added=outcome.added,
            notes=outcome.notes,
            filename=record.filename,
            created_packages=created,
        )
        return self.changes.record(record, change)


def _alone(node: ast.stmt, text: str, start: int) -> Stmt | None:
    """The statement a top-level definition's `text` is at line `start`, where `node` was
    parsed: the index takes it as it is instead of parsing it again. None when the text holds
    more than the one statement (a comment before it, a property's parts)."""
    count = text.count("\n")
    last = start + count - 1
    if first_line(node) != start or node.end_lineno != last or len(text.splitlines()) != count:
        return None
    return Stmt(start, last, text, node, frozenset(bindings([node])), alone=True)


def _is_def(node: ast.stmt | None) -> bool:
    return isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef))
