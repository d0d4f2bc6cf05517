"""Helpers for kernel tests: real temporary modules imported for real."""

from __future__ import annotations

import importlib
import itertools
import textwrap
import types
from pathlib import Path

_counter = itertools.count()


class Project:
    """A temporary project root whose modules are real files imported for real."""

    def __init__(self, root: Path) -> None:
        self.root = root
        self.prefix = f"lftmp{next(_counter)}_"

    def write(self, name: str, source: str) -> Path:
        """Write module `name` (dotted; packages get __init__.py) and return its path."""
        parts = name.split(".")
        folder = self.root.joinpath(*parts[:-1])
        for depth in range(1, len(parts)):
            init = self.root.joinpath(*parts[:depth], "__init__.py")
            init.parent.mkdir(parents=True, exist_ok=True)
            init.touch()
        folder.mkdir(parents=True, exist_ok=True)
        path = folder / f"{parts[-1]}.py"
        path.write_text(textwrap.dedent(source))
        return path

    def module(self, source: str, name: str | None = None) -> types.ModuleType:
        """Write and import a fresh module; returns it."""
        name = name or f"{self.prefix}m{next(_counter)}"
        self.write(name, source)
        importlib.invalidate_caches()
        return importlib.import_module(name)

    def name(self, suffix: str = "") -> str:
        """A fresh module name unique to this test."""
        return f"{self.prefix}{suffix or 'n'}{next(_counter)}"


def src(text: str) -> str:
    """Dedent a source literal."""
    return textwrap.dedent(text).lstrip("\n")
