"""jedi over the live program: a project over the files, in-memory sources where they differ.

jedi reads files from disk; the runtime's changed and virtual modules live in memory. Every
question is therefore asked twice: of the project's files, skipping modules whose memory
differs from disk, and of each such module's in-memory source. jedi names modules by their
folder (``kernel._runtime``); ``dotted`` translates them to import names
(``liveforge.kernel.runtime._runtime``), following the project's import roots.
"""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

import jedi

from liveforge.tools._modules import layout

__all__ = ["ModuleNames", "memory_sources", "project"]


def project(rt: Any) -> jedi.Project:
    """A jedi project over the runtime's project root, using this interpreter's sys.path."""
    root = Path(getattr(rt, "project_root", "."))
    return jedi.Project(root, sys_path=[p for p in sys.path if p], smart_sys_path=False)


def memory_sources(rt: Any) -> list[tuple[str, str, str | None]]:
    """``(module, source, filename or None)`` of every module whose memory differs from disk."""
    registry = getattr(rt, "registry", None)
    if registry is None:
        return []
    return [(r.name, r.source, None if r.virtual else r.filename) for r in registry.dirty()]


class ModuleNames:
    """Translates file paths to dotted module names for one question."""

    def __init__(self, rt: Any) -> None:
        self.by_file: dict[Path, str] = {}
        for name, module in list(sys.modules.items()):
            filename = getattr(module, "__file__", None)
            if isinstance(filename, str) and filename.endswith(".py"):
                self.by_file[Path(filename).resolve()] = name
        self.layout = layout(rt)

    def of_path(self, path: Path | None) -> str | None:
        """The module a file holds, or None when it is outside every known root."""
        if path is None:
            return None
        path = path.resolve()
        return self.by_file.get(path) or self.layout.module_name(path)

    def dotted(self, name: Any, module: str | None = None) -> str:
        """The import path of a jedi Name (``module`` overrides the module it lives in)."""
        full = name.full_name or name.name
        jedi_module = name.module_name or ""
        qual = full[len(jedi_module) + 1 :] if full.startswith(jedi_module + ".") else name.name
        owner = module or self.of_path(name.module_path) or jedi_module
        if name.type == "module":
            return owner
        return f"{owner}.{qual}" if owner else qual
