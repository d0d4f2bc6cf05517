"""Modules as the tools see them: in-memory source, disk source, and what is inside a package.

The runtime's module registry is authoritative for modules it manages (patched or virtual);
other modules are read the way they were loaded (a linecache entry pinned in memory, else the
file). Packages list their submodules from disk (pkgutil, without importing them) and from
memory (virtual modules and entries in ``sys.modules``), so a listing does not depend on
what happens to be imported.
"""

from __future__ import annotations

import importlib.machinery
import importlib.util
import pkgutil
import sys
import types
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from liveforge.kernel.errors import (
    PatchSyntaxError,
    SecondModuleName,
    TargetNotFound,
    UndecodableSource,
)
from liveforge.kernel.files._sourcefile import decode_python
from liveforge.kernel.live._reexports import origin
from liveforge.kernel.source._importfail import failed_parent, import_failure
from liveforge.kernel.source._roots import ImportRoots, discover
from liveforge.kernel.source._sources import loaded_source, quiet_spec
from liveforge.kernel.source._stmts import index

__all__ = [
    "ModuleView",
    "check_decodable",
    "empty_project_note",
    "layout",
    "module_view",
    "resolve",
    "submodules",
    "top_level",
]


@dataclass(frozen=True)
class ModuleView:
    """One module's sources and state, whether or not it is imported."""

    name: str
    source: str | None
    disk_source: str | None
    filename: str
    is_package: bool
    imported: bool
    virtual: bool
    search_path: tuple[str, ...] = ()
    #: why the module's file cannot be read as Python text (its encoding, the byte and
    #: line): such a module is listed and marked, never a crash
    undecodable: str = ""

    @property
    def dirty(self) -> bool:
        """True when the in-memory source differs from the file (always, for virtual ones)."""
        return self.virtual or (self.imported and self.source != self.disk_source)

    @property
    def module(self) -> Any:
        """The live module object, or None when it is not imported."""
        return sys.modules.get(self.name)


def _record(rt: Any, name: str) -> Any:
    registry = getattr(rt, "registry", None)
    return registry.get(name) if registry is not None else None


def _read(path: str) -> str | None:
    """The text of a source file; `UndecodableSource` (naming the encoding, the byte and
    its line) when it is not text in its encoding."""
    try:
        return decode_python(Path(path).read_bytes(), path)[0]
    except OSError:
        return None


def _read_marked(path: str) -> tuple[str | None, str]:
    """`_read`, with an undecodable file as (None, why) instead of an error."""
    try:
        return _read(path), ""
    except UndecodableSource as exc:
        return None, exc.reason


def check_decodable(view: ModuleView) -> None:
    """Raise `UndecodableSource` for a module whose file is not text in its encoding."""
    if view.undecodable:
        _read(view.filename)


def _loaded_source(filename: str) -> str | None:
    """The text the module's code was compiled from, as far as it is known."""
    try:
        return loaded_source(filename)[0]
    except (OSError, UnicodeDecodeError, SyntaxError):
        return None


def module_view(name: str, rt: Any = None) -> ModuleView | None:
    """The view of module ``name``, or None when no such module exists (loaded or on disk)."""
    record = _record(rt, name)
    module = sys.modules.get(name)
    search = tuple(getattr(module, "__path__", ()) or ())
    if record is not None:
        return ModuleView(
            name,
            record.source,
            record.disk_source,
            record.filename,
            record.is_package,
            module is not None,
            record.virtual,
            search,
        )
    if module is not None:
        filename = getattr(module, "__file__", None) or ""
        disk, why = _read_marked(filename) if filename.endswith(".py") else (None, "")
        source = _loaded_source(filename) if filename.endswith(".py") else None
        package = hasattr(module, "__path__")
        return ModuleView(name, source, disk, filename, package, True, False, search, why)
    return _unimported_view(name, rt)


def _unimported_view(name: str, rt: Any = None) -> ModuleView | None:
    """A module found on disk without importing it or its parent packages; a name found
    nowhere on disk is looked for by importing its parents (a package may bind submodules
    or re-export names), and a parent that fails to import is reported as such."""
    try:
        spec = quiet_spec(name) or importlib.util.find_spec(name)
    except SecondModuleName:
        raise  # says which module the file is
    except Exception as exc:
        parent = failed_parent(name)
        if parent is None:
            return None
        raise import_failure(parent, exc, getattr(rt, "project_root", ".")) from exc
    if spec is None:
        return None
    origin = spec.origin if spec.has_location and spec.origin else ""
    source, why = _read_marked(origin) if origin.endswith(".py") else (None, "")
    search = tuple(spec.submodule_search_locations or ())
    return ModuleView(name, source, source, origin, bool(search), False, False, search, why)


def submodules(view: ModuleView, rt: Any = None) -> list[str]:
    """Direct submodules of a package, from disk and from memory, sorted by name."""
    if not view.is_package:
        return []
    prefix = view.name + "."
    names = {prefix + info.name for info in pkgutil.iter_modules(list(view.search_path))}
    names.update(_mapped(prefix, rt))
    registry = getattr(rt, "registry", None)
    in_memory = [r.name for r in registry.records()] if registry is not None else []
    names.update(
        n
        for n in [*in_memory, *list(sys.modules)]
        if n.startswith(prefix) and "." not in n[len(prefix) :]
    )
    return sorted(names)


def layout(rt: Any) -> ImportRoots:
    """The import roots of the runtime's project (discovered once per runtime)."""
    found = getattr(rt, "roots", None)
    if isinstance(found, ImportRoots):
        return found
    return discover(getattr(rt, "project_root", "."))


def _mapped(prefix: str, rt: Any) -> list[str]:
    """Sub-packages mapped from folders of other names (pkgutil cannot see them)."""
    return [
        name
        for name in layout(rt).packages
        if name.startswith(prefix) and "." not in name[len(prefix) :]
    ]


def top_level(rt: Any) -> list[str]:
    """The project's top-level packages and modules under its import roots (src/, mapped
    folders under their package's name, namespace packages), plus top-level virtual modules."""
    names = {name for name, _ in layout(rt).top_level()}
    registry = getattr(rt, "registry", None)
    if registry is not None:
        names.update(r.name for r in registry.records() if r.virtual and "." not in r.name)
    return sorted(names)


def empty_project_note(rt: Any) -> str:
    """Why the project shows no packages, and what to do about it."""
    roots = layout(rt)
    looked = ", ".join(f"{path} ({why})" for path, why in roots.reasons.items())
    return (
        f"no Python packages found under the import roots: {looked}. Put the code in a "
        "package folder (with __init__.py) under one of them, declare where it lives in "
        "pyproject.toml (e.g. [tool.setuptools] package-dir, or [tool.pytest.ini_options] "
        "pythonpath), or inspect a module by its dotted name."
    )


def _through_modules(view: ModuleView, names: list[str], rt: Any) -> tuple[ModuleView, list[str]]:
    """A name of a loaded module bound to another loaded module (`os.path`, a package's
    alias of a submodule): the view of that module, and the names inside it."""
    while names and view.name in sys.modules:
        value = getattr(sys.modules[view.name], names[0], None)
        if not isinstance(value, types.ModuleType) or sys.modules.get(value.__name__) is not value:
            break
        target = module_view(value.__name__, rt)
        if target is None:
            break
        view, names = target, names[1:]
    return view, names


def _defining(view: ModuleView, names: list[str], rt: Any) -> tuple[ModuleView, list[str]]:
    """For a name the module only re-exports (`from .x import *`, `from .x import y`), the
    view of the module that defines it and the name there."""
    seen = {view.name}
    while names and view.source is not None and view.name in sys.modules:
        try:
            home = origin(index(view.source), sys.modules[view.name], names[0], bound_now=True)
        except PatchSyntaxError:
            return view, names
        target = module_view(home[0], rt) if home and home[0] not in seen else None
        if home is None or target is None:
            return view, names
        view, names = target, [home[1], *names[1:]]
        seen.add(view.name)
    return view, names


def resolve(path: str, rt: Any = None) -> tuple[ModuleView, list[str]]:
    """Split ``pkg.mod.Class.attr`` into the longest module prefix and the names inside it.

    Walks down from the top package and stops at the first plain module, so looking inside
    a module never imports it; a name the module re-exports resolves to the module that
    defines it. Raises TargetNotFound (with close matches) when no prefix
    names a module.
    """
    parts = path.split(".")
    found: tuple[ModuleView, list[str]] | None = None
    for cut in range(1, len(parts) + 1):
        view = module_view(".".join(parts[:cut]), rt) if all(parts[:cut]) else None
        if view is None:
            break
        found = (view, parts[cut:])
        if not view.is_package:
            break
    if found is not None:
        return _defining(*_through_modules(*found, rt), rt)
    raise TargetNotFound(
        path,
        [name for name in sys.modules if not name.startswith("_")],
        "Give a dotted path that starts with a module.",
        project=top_level(rt),
    )
