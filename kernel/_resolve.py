"""How `Runtime` finds what a dotted path names: the module (imported, and tracked in the
registry, on first use), the `@impl` body of a declared forwardpy method, and the module that
defines a name another module only re-exports.

    module_name, path = rt._split("pkg.mod.Class.method")   # "pkg.mod", ["Class", "method"]
    record = rt._record(module_name)                        # the module's ModuleRecord
"""

from __future__ import annotations

import importlib
import sys
from pathlib import Path
from typing import Any

from liveforge.kernel import _forward
from liveforge.kernel._importfail import import_failure
from liveforge.kernel._reexports import origin
from liveforge.kernel._sources import ModuleRecord, ModuleRegistry, check_module_name, importable
from liveforge.kernel._stmts import index
from liveforge.kernel.errors import (
    PatchError,
    PatchSyntaxError,
    SecondModuleName,
    TargetNotFound,
    UndecodableSource,
)

__all__ = ["Resolution"]


class Resolution:
    """Mixin of `Runtime`: `_split`, `_record`, `_redirect`, `_home`."""

    project_root: Path
    registry: ModuleRegistry

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
            except UndecodableSource:
                raise  # the file's encoding is the cause, not a missing source
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
