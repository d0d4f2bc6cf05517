"""Virtual modules: modules that exist only in memory until they are persisted."""

from __future__ import annotations

import importlib
import sys
import types
from typing import TYPE_CHECKING

from liveforge.kernel.history._changes import Change, History
from liveforge.kernel.live import _engine
from liveforge.kernel.source._sources import ModuleRecord, ModuleRegistry, importable
from liveforge.kernel.source._stmts import index


class VirtualModules:
    """Mixin of `Runtime`: create and remove virtual modules and their parent packages."""

    registry: ModuleRegistry
    _history: History

    if TYPE_CHECKING:  # provided by Runtime

        def _record_change(self, record: ModuleRecord, change: Change) -> Change: ...

    def _create_virtual(self, name: str, source: str, is_package: bool) -> Change:
        created = self._virtual_parents(name)
        module, record = self._install_virtual(name, is_package)
        assert record.index is not None  # _install_virtual indexes the empty source
        try:
            new_index, outcome = _engine.apply(module, record.index, source, record.filename, name)
        except BaseException:
            for dead in [name, *reversed(created)]:
                self._remove_virtual(dead)
            raise
        record.source, record.index = source, new_index
        change = Change(
            id=self._history.next_id(),
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
        return self._record_change(record, change)

    def _install_virtual(
        self, name: str, is_package: bool
    ) -> tuple[types.ModuleType, ModuleRecord]:
        module = self.registry.make_virtual_module(name, is_package=is_package)
        record = self.registry.add_virtual(name, "", is_package=is_package)
        record.index = index("", record.filename)
        sys.modules[name] = module
        parent, _, leaf = name.rpartition(".")
        if parent:
            setattr(sys.modules[parent], leaf, module)
        return module, record

    def _virtual_parents(self, name: str) -> list[str]:
        created = []
        parts = name.split(".")
        for depth in range(1, len(parts)):
            parent = ".".join(parts[:depth])
            if parent in sys.modules or importable(parent):
                importlib.import_module(parent)
                continue
            self._install_virtual(parent, True)
            created.append(parent)
        return created

    def _remove_virtual(self, name: str) -> None:
        sys.modules.pop(name, None)
        parent, _, leaf = name.rpartition(".")
        if parent and parent in sys.modules and hasattr(sys.modules[parent], leaf):
            delattr(sys.modules[parent], leaf)
        self.registry.forget(name)
