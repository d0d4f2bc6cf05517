"""Patching: `Runtime.patch` (one definition by dotted path, spliced into its module's
source), `Runtime.patch_module` (a whole module, virtual if new), and `_apply`, which runs
new source through the patch engine and records the `Change` (reload uses it too).
"""

from __future__ import annotations

import ast
import sys
import threading
from collections.abc import Callable
from typing import TYPE_CHECKING

from liveforge.kernel import _engine, _stale
from liveforge.kernel._changes import Change, History
from liveforge.kernel._dependents import follow_up
from liveforge.kernel._sources import ModuleRecord, ModuleRegistry, check_module_name, importable
from liveforge.kernel._targets import (
    keep_decorators,
    kind_of,
    locate,
    narrow,
    parse_definition,
    splice,
)
from liveforge.kernel.errors import PatchError

__all__ = ["Patching"]


class Patching:
    """Mixin of `Runtime`: `patch`, `patch_module`, `_apply`."""

    registry: ModuleRegistry
    _history: History
    _lock: threading.RLock
    _root_prefix: str

    if TYPE_CHECKING:  # provided by Runtime and its other mixins

        def _split(self, target: str) -> tuple[str, list[str]]: ...

        def _record(self, name: str) -> ModuleRecord: ...

        def _redirect(
            self, module_name: str, path: list[str], record: ModuleRecord
        ) -> tuple[str, list[str], ModuleRecord]: ...

        def _home(
            self, module_name: str, path: list[str], record: ModuleRecord
        ) -> tuple[str, list[str], ModuleRecord]: ...

        def _check_protected(
            self, target: str, module_name: str, *, by_file: bool = True
        ) -> None: ...

        def _check_own(
            self, target: str, record: ModuleRecord, *, outside_project: bool
        ) -> None: ...

        def _create_virtual(self, name: str, source: str, is_package: bool) -> Change: ...

        def _record_change(self, record: ModuleRecord, change: Change) -> Change: ...

        def _label(self, record: ModuleRecord) -> str: ...

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
        module_name, path = self._split(target)
        if not path:
            return self.patch_module(module_name, source, outside_project=outside_project)
        self._check_protected(target, module_name, by_file=False)  # the file: after redirect
        with self._lock:
            record = self._record(module_name)
            module_name, path, impl_record = self._redirect(module_name, path, record)
            kind_override = "impl" if impl_record is not record else None
            home, path, record = self._home(module_name, path, impl_record)
            moved = f"{home}.{'.'.join(path)}" if home != module_name else None
            module_name = home
            self._check_protected(target, module_name)
            self._check_own(target, record, outside_project=outside_project)
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

    def patch_module(
        self, name: str, source: str, *, is_package: bool = False, outside_project: bool = False
    ) -> Change:
        """Replace a whole module's source; creates a virtual module when none exists.
        `outside_project` as for `patch`."""
        check_module_name(name)
        self._check_protected(name, name)
        with self._lock:
            if name not in sys.modules and self.registry.get(name) is None and not importable(name):
                return self._create_virtual(name, source, is_package)
            record = self._record(name)
            self._check_own(name, record, outside_project=outside_project)
            return self._apply(record, source, target=name, kind="module")

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
