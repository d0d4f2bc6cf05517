"""The overlay in a sandbox child: the unpersisted modules a check carries, served from memory.

    modules = [OverlayModule("pkg.mod", source, "/project/pkg/mod.py")]
    manifest = save_overlay(modules, folder)        # for processes started later (xdist)
    install_overlay(load_overlay(manifest))         # in the child, before the check runs

`OverlayFinder`, first on `sys.meta_path`, serves every overlay module from memory. Each
source is registered in `linecache` *before* it is compiled and executed, so tracebacks and
`inspect.getsource` show the in-memory text (forwardpy recognises a stub method only when
`inspect.getsource` works on it).

Standard library only, with no sibling to load: sandbox children and pytest-xdist workers
load this file by path (see `_child`), so that they never import `liveforge` itself.
"""

from __future__ import annotations

import ast
import importlib.abc
import importlib.machinery
import importlib.util
import json
import linecache
import os
import sys
import types
from collections.abc import Iterable, Sequence
from dataclasses import asdict, dataclass
from pathlib import Path

__all__ = [
    "OVERLAY_ENV",
    "OVERLAY_MANIFEST",
    "OverlayFinder",
    "OverlayModule",
    "compile_source",
    "install_overlay",
    "install_overlay_from_env",
    "load_overlay",
    "overlay_first",
    "register_source",
    "save_overlay",
]

OVERLAY_MANIFEST = "overlay.json"
OVERLAY_ENV = "LIVEFORGE_SANDBOX_OVERLAY"


@dataclass(frozen=True)
class OverlayModule:
    """One unpersisted module carried into a sandbox run.

    `filename` is the real `.py` path of a file-backed module (a package's `__init__.py`), or a
    pseudo filename such as ``"<liveforge:pkg.mod>"`` for a virtual module.
    """

    name: str
    source: str
    filename: str
    is_package: bool = False
    virtual: bool = False

    @classmethod
    def new_virtual(cls, name: str, source: str, *, is_package: bool = False) -> OverlayModule:
        """A module that exists only in memory, with the conventional pseudo filename."""
        return cls(name, source, f"<liveforge:{name}>", is_package=is_package, virtual=True)


def register_source(filename: str, source: str) -> None:
    """Make `source` what linecache (tracebacks, inspect) returns for `filename`."""
    lines = source.splitlines(keepends=True)
    if lines and not lines[-1].endswith("\n"):
        lines[-1] += "\n"
    linecache.cache[filename] = (len(source), None, lines, filename)


def compile_source(
    source: str | ast.Module | ast.Expression, filename: str, mode: str
) -> types.CodeType:
    """`compile`, with a SyntaxError showing the in-memory line, not the file on disk."""
    __tracebackhide__ = True
    try:
        return compile(source, filename, mode, dont_inherit=True)
    except SyntaxError as exc:
        text = linecache.getline(filename, exc.lineno or 0)
        if text:
            exc.text = text
        raise


def save_overlay(modules: Iterable[OverlayModule], folder: Path) -> Path:
    """Write the overlay as `overlay/<name>.py` files plus an `overlay.json` manifest."""
    sources = folder / "overlay"
    sources.mkdir(parents=True, exist_ok=True)
    entries = []
    for module in modules:
        stored = sources / f"{module.name}.py"
        stored.write_text(module.source, encoding="utf-8")
        entry = asdict(module)
        entry["source"] = f"overlay/{stored.name}"
        entries.append(entry)
    manifest = folder / OVERLAY_MANIFEST
    manifest.write_text(json.dumps(entries, indent=1), encoding="utf-8")
    return manifest


def load_overlay(manifest: Path) -> list[OverlayModule]:
    """Read an overlay written by `save_overlay`."""
    entries = json.loads(manifest.read_text(encoding="utf-8"))
    folder = manifest.parent
    modules = []
    for entry in entries:
        entry["source"] = (folder / entry["source"]).read_text(encoding="utf-8")
        modules.append(OverlayModule(**entry))
    return modules


class OverlayFinder(importlib.abc.MetaPathFinder, importlib.abc.Loader):
    """Serves the overlay's modules from memory, ahead of every other finder."""

    liveforge_overlay = True

    def __init__(self, modules: Iterable[OverlayModule]) -> None:
        self.modules = {module.name: module for module in modules}

    def find_spec(
        self,
        fullname: str,
        path: Sequence[str] | None = None,
        target: types.ModuleType | None = None,
    ) -> importlib.machinery.ModuleSpec | None:
        module = self.modules.get(fullname)
        if module is None:
            return None
        spec = importlib.util.spec_from_loader(
            fullname, self, origin=module.filename, is_package=module.is_package
        )
        assert spec is not None
        if module.is_package:
            real_dir = [] if module.virtual else [str(Path(module.filename).parent)]
            spec.submodule_search_locations = real_dir
        spec.has_location = not module.virtual
        return spec

    def create_module(self, spec: importlib.machinery.ModuleSpec) -> None:
        return None

    def exec_module(self, module: types.ModuleType) -> None:
        entry = self.modules[module.__name__]
        if entry.virtual:
            module.__file__ = entry.filename
        __tracebackhide__ = True  # pytest: the import machinery is not the test's business
        register_source(entry.filename, entry.source)
        code = compile_source(entry.source, entry.filename, "exec")
        exec(code, module.__dict__)

    def get_source(self, fullname: str) -> str:
        return self.modules[fullname].source


def install_overlay(modules: Iterable[OverlayModule]) -> OverlayFinder:
    """Put an `OverlayFinder` first on `sys.meta_path` (once per process) and return it."""
    for finder in sys.meta_path:
        if getattr(finder, "liveforge_overlay", False):
            return finder  # type: ignore[return-value]
    finder = OverlayFinder(modules)
    for module in finder.modules.values():
        register_source(module.filename, module.source)
    sys.meta_path.insert(0, finder)
    importlib.invalidate_caches()
    return finder


def install_overlay_from_env() -> None:
    """Install the overlay named by the environment (used by pytest-xdist workers)."""
    manifest = os.environ.get(OVERLAY_ENV)
    if manifest:
        install_overlay(load_overlay(Path(manifest)))


def overlay_first() -> None:
    """Move the overlay finder back to the front (pytest inserts its own import hook there)."""
    for finder in list(sys.meta_path):
        if getattr(finder, "liveforge_overlay", False):
            sys.meta_path.remove(finder)
            sys.meta_path.insert(0, finder)
