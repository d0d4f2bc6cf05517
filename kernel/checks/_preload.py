"""Which modules the sandbox template imports ahead of time.

The template pre-imports what the parent has already loaded from the standard library and
from installed distributions, so a forked run does not pay for pydantic, httpx or pytest
again. It never pre-imports the project's own modules (anything under the project root or
outside the library directories, such as editable installs), nothing the overlay replaces,
no `__main__` modules, and neither the packages of pytest plugins nor any module whose
import pulls one in (the MCP SDK imports anyio): pytest marks plugin packages for assertion
rewriting and warns when they were imported before it started, and a project whose pytest
configuration turns warnings into errors would fail for a reason of liveforge's making.
"""

from __future__ import annotations

import importlib.metadata
import site
import sys
import sysconfig
import types
from collections.abc import Iterable
from functools import cache
from pathlib import Path

ALWAYS = ("pytest",)
NEVER = frozenset({"__main__", "antigravity", "this", "idlelib", "tkinter", "turtle"})


@cache
def library_dirs() -> tuple[str, ...]:
    """The standard library and site-packages directories of this interpreter."""
    paths = sysconfig.get_paths()
    found = {paths[key] for key in ("stdlib", "platstdlib", "purelib", "platlib")}
    found.update(site.getsitepackages())
    if site.ENABLE_USER_SITE and site.USER_SITE:
        found.add(site.USER_SITE)
    return tuple(sorted(str(Path(p).resolve()) + "/" for p in found))


@cache
def pytest_plugin_packages() -> frozenset[str]:
    """Top-level names of distributions that register pytest plugins (entry point pytest11)."""
    names: set[str] = set()
    for dist in importlib.metadata.distributions():
        if not any(ep.group == "pytest11" for ep in dist.entry_points):
            continue
        names.update(
            ep.value.split(":")[0].split(".")[0]
            for ep in dist.entry_points
            if ep.group == "pytest11"
        )
        for file in dist.files or ():
            parts = file.parts
            if len(parts) == 1 and file.name.endswith(".py"):
                names.add(file.name[:-3])
            elif len(parts) == 2 and file.name == "__init__.py":
                names.add(parts[0])
    return frozenset(names)


def preload_names(project_root: Path, exclude: Iterable[str] = ()) -> list[str]:
    """Modules of the parent worth importing in the template, parents before children."""
    libraries = library_dirs()
    root = str(project_root.resolve()) + "/"
    skipped_tops = NEVER | pytest_plugin_packages()
    excluded = set(exclude) | importing_plugins(pytest_plugin_packages())
    names = set(ALWAYS)
    for name, module in list(sys.modules.items()):
        filename = getattr(module, "__file__", None)
        if not isinstance(filename, str) or name in excluded:
            continue
        if name.partition(".")[0] in skipped_tops or name.rpartition(".")[2] == "__main__":
            continue
        if not _in_library(str(Path(filename).resolve()), root, libraries):
            continue
        names.add(name)
    return sorted(names, key=lambda n: (n.count("."), n))


def importing_plugins(plugin_tops: Iterable[str]) -> set[str]:
    """Loaded modules whose import (theirs or their parent package's) brings in a module of
    `plugin_tops`: a module refers to another by holding it, or an object defined in it, in
    its globals."""
    tops = set(plugin_tops)
    modules = {name: module for name, module in list(sys.modules.items()) if module is not None}
    users: dict[str, set[str]] = {}
    for name, module in modules.items():
        for used in _referenced_modules(module):
            users.setdefault(used, set()).add(name)
        parent = name.rpartition(".")[0]
        if parent:
            users.setdefault(parent, set()).add(name)
    tainted = {name for name in modules if name.partition(".")[0] in tops}
    pending = list(tainted)
    while pending:
        for user in users.get(pending.pop(), ()):
            if user not in tainted:
                tainted.add(user)
                pending.append(user)
    return tainted


def _referenced_modules(module: types.ModuleType) -> set[str]:
    """Names of the modules whose objects `module`'s globals hold."""
    found: set[str] = set()
    for value in list(vars(module).values()):
        try:
            name = value.__name__ if isinstance(value, types.ModuleType) else value.__module__
        except Exception:  # objects may raise anything from attribute access
            continue
        if isinstance(name, str):
            found.add(name)
    return found


def _in_library(path: str, root: str, libraries: tuple[str, ...]) -> bool:
    """Whether `path` is a library file rather than the project's own. The innermost folder
    decides: a virtualenv kept inside the project (`.venv/`) holds libraries."""
    library = max((len(d) for d in libraries if path.startswith(d)), default=-1)
    return library > (len(root) if path.startswith(root) else -1)
