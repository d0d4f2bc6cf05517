"""The runtime's modules: the project's import roots, the registry of the modules it
manages, and how a dotted path finds what it names — the module (imported, and tracked on
first use), the `@impl` body of a declared forwardpy method, the module that defines a name
another module only re-exports — and virtual modules put in place or taken away.

    modules = Modules(Path("."))
    module_name, path = modules.split("pkg.mod.Class.method")   # "pkg.mod", ["Class", "method"]
    record = modules.record(module_name)                         # the module's ModuleRecord
"""

from __future__ import annotations

import functools
import importlib
import os
import sys
import types
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from liveforge.kernel.errors import (
    PatchError,
    PatchSyntaxError,
    SecondModuleName,
    TargetNotFound,
    UndecodableSource,
)
from liveforge.kernel.files._owncode import ProjectCode
from liveforge.kernel.live import _forward
from liveforge.kernel.live._reexports import origin
from liveforge.kernel.source._importfail import import_failure
from liveforge.kernel.source._roots import discover
from liveforge.kernel.source._sources import (
    ModuleRecord,
    ModuleRegistry,
    capture_sources_under,
    check_module_name,
    importable,
)
from liveforge.kernel.source._stmts import index

__all__ = ["Modules"]


def _through_modules(name: str, path: list[str]) -> tuple[str, list[str]]:
    """A name of a loaded module bound to another module (`os.path`, a package's alias of a
    submodule): the path inside the module it names."""
    while path and isinstance(module := sys.modules.get(name), types.ModuleType):
        value = module.__dict__.get(path[0])
        if not isinstance(value, types.ModuleType) or sys.modules.get(value.__name__) is not value:
            break
        name, path = value.__name__, path[1:]
    return name, path


class Modules:
    """The modules of one runtime: what it manages, and where a dotted path leads.

    Making one puts the project's import roots on `sys.path` and starts keeping the source
    of every project module imported from then on (so a later patch sees the text that
    ran, even if the file changed since), for as long as it lives."""

    def __init__(self, project_root: Path, *, allow_paths: Sequence[str | Path] = ()) -> None:
        self.project_root = project_root
        self.code = ProjectCode.of(project_root, allow_paths)
        """What is the project's own code: where liveforge writes, and patches by default."""
        self.root_prefix = os.path.join(str(project_root), "")
        self.registry = ModuleRegistry()
        self.roots = discover(project_root)
        for folder in reversed(self.roots.paths):
            if str(folder) not in sys.path:
                sys.path.insert(0, str(folder))
        capture_sources_under(str(project_root), self.roots, owner=self)

    def split(self, target: str) -> tuple[str, list[str]]:
        parts = check_module_name(target, what="dotted path").split(".")
        for depth in range(len(parts), 0, -1):
            name = ".".join(parts[:depth])
            if name in sys.modules or self.registry.get(name):
                return _through_modules(name, parts[depth:])
            parent = sys.modules.get(".".join(parts[: depth - 1]))
            if parent is not None and not hasattr(parent, "__path__"):
                continue  # a loaded module that is not a package has no submodules
            if importable(name):
                return _through_modules(name, parts[depth:])
        candidates = [m for m in sys.modules if m.split(".")[0] == parts[0]] or list(sys.modules)
        raise TargetNotFound(target, candidates)

    def record(self, name: str) -> ModuleRecord:
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

    def redirect(
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
        return impl_module.__name__, [binding], self.record(impl_module.__name__)

    def home(
        self, module_name: str, path: list[str], record: ModuleRecord, *, bound_now: bool = False
    ) -> tuple[str, list[str], ModuleRecord]:
        """For a name the module only re-exports (`from .x import *`, `from .x import y`),
        the module that defines it, and the name there (`bound_now`: see `origin`)."""
        seen = {module_name}
        while True:
            module = sys.modules.get(module_name)
            assert record.index is not None
            found = (
                origin(record.index, module, path[0], bound_now=bound_now)
                if module is not None
                else None
            )
            if found is None or found[0] in seen:
                return module_name, path, record
            module_name, path = found[0], [found[1], *path[1:]]
            seen.add(module_name)
            record = self.record(module_name)

    def label(self, record: ModuleRecord) -> str:
        """How a module's file is named to people: relative to the project root when inside."""
        if record.virtual:
            return record.filename
        return _relative_label(record.filename, self.project_root)

    # -- virtual modules --------------------------------------------------------------------

    def install_virtual(self, name: str, is_package: bool) -> tuple[types.ModuleType, ModuleRecord]:
        """An empty virtual module `name`, tracked and in `sys.modules` (and its parent)."""
        module = self.registry.make_virtual_module(name, is_package=is_package)
        record = self.registry.add_virtual(name, "", is_package=is_package)
        record.index = index("", record.filename)
        sys.modules[name] = module
        parent, _, leaf = name.rpartition(".")
        if parent:
            setattr(sys.modules[parent], leaf, module)
        return module, record

    def virtual_parents(self, name: str) -> list[str]:
        """Import `name`'s parent packages, making virtual ones where none exists; those
        made, outermost first."""
        created = []
        parts = name.split(".")
        for depth in range(1, len(parts)):
            parent = ".".join(parts[:depth])
            if parent in sys.modules or importable(parent):
                importlib.import_module(parent)
                continue
            self.install_virtual(parent, True)
            created.append(parent)
        return created

    def remove_virtual(self, name: str) -> None:
        """Take a virtual module away: from `sys.modules`, its parent and the registry."""
        sys.modules.pop(name, None)
        parent, _, leaf = name.rpartition(".")
        if parent and parent in sys.modules and hasattr(sys.modules[parent], leaf):
            delattr(sys.modules[parent], leaf)
        self.registry.forget(name)


@functools.lru_cache(maxsize=4096)
def _relative_label(filename: str, root: Path) -> str:
    """`filename` relative to `root` when it lies inside (resolving a path costs more than
    the rest of a small patch, so it is done once per file)."""
    try:
        return str(Path(filename).resolve().relative_to(root))
    except ValueError:
        return filename
