"""Dotted paths resolve the way Python does: through a module a package binds under another
name, and to the code a name is bound to now."""

from __future__ import annotations

import importlib
import sys

from kernel_support import Project

from liveforge import Runtime


def test_a_path_through_a_module_alias_reaches_the_module_it_names(
    project: Project, rt: Runtime
) -> None:
    """`pkg.alias.f`, where the package binds its submodule `real` as `alias`: source and
    patch reach `pkg.real.f` (no `pkg.alias` module exists)."""
    pkg = project.name("pkg")
    project.write(f"{pkg}.__init__", "from . import real as alias\n")
    project.write(f"{pkg}.real", "def f():\n    return 1\n")
    importlib.invalidate_caches()
    real = importlib.import_module(f"{pkg}.real")
    importlib.import_module(pkg)
    assert f"{pkg}.alias" not in sys.modules
    assert rt.source(f"{pkg}.alias.f") == "def f():\n    return 1\n"
    change = rt.patch(f"{pkg}.alias.f", "def f():\n    return 2\n")
    assert change.module == f"{pkg}.real" and real.f() == 2


def test_source_shows_the_code_a_later_import_bound_to_the_name(
    project: Project, rt: Runtime
) -> None:
    """`class Parser` then `try: from ._fast import Parser`: `source()` shows the class the
    name holds (the fast one), not the fallback the import replaced."""
    pkg = project.name("pkg")
    project.write(f"{pkg}.__init__", "")
    project.write(f"{pkg}._fast", "class Parser:\n    kind = 'fast'\n")
    project.write(
        f"{pkg}.parse",
        "class Parser:\n    kind = 'slow'\n\n\ntry:\n    from ._fast import Parser\n"
        "except ImportError:\n    pass\n",
    )
    importlib.invalidate_caches()
    parse = importlib.import_module(f"{pkg}.parse")
    assert parse.Parser.kind == "fast"
    assert rt.source(f"{pkg}.parse.Parser") == "class Parser:\n    kind = 'fast'\n"
