"""Where a project's modules come from: its import roots, and the module name of each file.

A project says where its packages live in its own configuration, and liveforge reads it the
way the project's tools do:

    src/ layout                         src/<package>/  (setuptools, hatch, flit, PDM, uv)
    [tool.setuptools] package-dir       {"" = "lib"} or {"pkg" = "lib/pkg"}
    [tool.setuptools.packages.find]     where = ["lib"]
    [tool.hatch.build(.targets.wheel)]  packages = ["src/pkg"], sources = ["src"]
    [tool.poetry] packages              [{include = "pkg", from = "src"}]
    [tool.pdm.build] package-dir        "src"
    [tool.uv.build-backend] module-root "src"
    pytest pythonpath                   pyproject.toml, pytest.ini or tox.ini
    an editable install of the project  asked through importlib (find_spec), never through a
                                        finder's private tables

`ImportRoots.module_name(path)` is the single answer to "which module is this file": a
package mapped to a folder of another name (``liveforge.kernel`` from ``kernel/``) is that
package's, never a second, top-level module.
"""

from __future__ import annotations

import configparser
import importlib.metadata
import importlib.util
import json
import os
import tomllib
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any
from urllib.parse import unquote, urlparse

__all__ = ["ImportRoots", "discover"]

NOT_PACKAGES = frozenset(
    {"tests", "test", "docs", "doc", "bench", "benchmarks", "examples", "scripts", "build",
     "dist", "sandbox_runs", "node_modules", "site-packages"}
)  # fmt: skip
"""Folder names under an import root that are not the project's packages even without an
``__init__.py`` (a namespace package needs no ``__init__``, so a name is all there is)."""


@dataclass(frozen=True)
class ImportRoots:
    """The import roots of one project and the packages mapped from folders of other names."""

    root: Path
    #: folders that go on sys.path, most specific first; the project root is last.
    paths: tuple[Path, ...]
    #: dotted package name -> its folder, for packages that do not sit under a path by name.
    packages: dict[str, Path] = field(default_factory=dict)
    #: why each path or package is there ("src/ layout", "pytest pythonpath", ...).
    reasons: dict[str, str] = field(default_factory=dict)

    def module_name(self, path: str | Path) -> str | None:
        """The dotted module name of a file or package folder, or None outside every root."""
        resolved = Path(path).resolve()
        for name, folder in sorted(self.packages.items(), key=lambda i: -len(i[1].parts)):
            if resolved.is_relative_to(folder):
                return _dotted(name, resolved.relative_to(folder))
        for base in sorted(self.paths, key=lambda p: -len(p.parts)):
            if resolved.is_relative_to(base) and resolved != base:
                return _dotted("", resolved.relative_to(base))
        return None

    def mapped(self, path: str | Path) -> str | None:
        """The module name of a file inside a mapped package folder (authoritative there)."""
        resolved = Path(path).resolve()
        if any(resolved.is_relative_to(folder) for folder in self.packages.values()):
            return self.module_name(resolved)
        return None

    def top_level(self) -> list[tuple[str, Path]]:
        """``(name, folder or file)`` of the packages and modules directly under the roots,
        plus the mapped top-level packages; mapped folders never appear under a second name."""
        mapped_folders = set(self.packages.values())
        found: dict[str, Path] = {n: f for n, f in self.packages.items() if "." not in n}
        for base in self.paths:
            for child in sorted(base.iterdir()) if base.is_dir() else ():
                name = _top_name(child, is_root=base == self.root)
                if name and name not in found and child.resolve() not in mapped_folders:
                    found[name] = child
        return sorted(found.items())


def _dotted(package: str, relative: Path) -> str | None:
    python = relative.suffix in (".py", ".pyi")
    parts = list(relative.with_suffix("").parts if python else relative.parts)
    if parts and parts[-1] == "__init__":
        parts.pop()
    if not all(part.isidentifier() for part in parts):
        return None
    return ".".join(([package] if package else []) + parts) or None


def _top_name(child: Path, *, is_root: bool) -> str | None:
    """The module name of a folder or file directly under an import root, if it is one."""
    if child.name.startswith((".", "_")) and child.name != "__init__.py":
        return None
    if child.is_file():
        if is_root or child.suffix != ".py" or not child.stem.isidentifier():
            return None  # loose scripts at the project root are not the project's modules
        return child.stem if child.stem != "__init__" else None
    if not child.name.isidentifier() or child.name in NOT_PACKAGES:
        return None
    if (child / "pyvenv.cfg").exists():
        return None
    if (child / "__init__.py").exists():
        return child.name
    if is_root:
        return None  # a namespace package needs a declared or src/ root to count
    return child.name if next(child.rglob("*.py"), None) is not None else None


def _pyproject(root: Path) -> dict[str, Any]:
    try:
        return tomllib.loads((root / "pyproject.toml").read_text(encoding="utf-8"))
    except (OSError, tomllib.TOMLDecodeError, UnicodeDecodeError):
        return {}


def _dig(data: dict[str, Any], *keys: str) -> Any:
    for key in keys:
        data = data.get(key) if isinstance(data, dict) else None  # type: ignore[assignment]
    return data


class _Collector:
    """Accumulates roots and mapped packages in order of discovery, keeping the first reason."""

    def __init__(self, root: Path) -> None:
        self.root = root
        self.paths: dict[Path, str] = {}
        self.packages: dict[str, Path] = {}
        self.reasons: dict[str, str] = {}

    def path(self, relative: str | Path, why: str) -> None:
        folder = (self.root / relative).resolve()
        if folder.is_dir() and folder.is_relative_to(self.root) and folder not in self.paths:
            self.paths[folder] = why

    def package(self, name: str, folder: Path, why: str) -> None:
        folder = folder.resolve()
        if folder.is_dir() and name not in self.packages:
            if folder.name == name.rpartition(".")[2] and "." not in name:
                self.path(folder.parent, why)  # an ordinary root holds it by name
            else:
                self.packages[name] = folder
                self.reasons[name] = why


def _setuptools(config: dict[str, Any], found: _Collector) -> None:
    tool = _dig(config, "tool", "setuptools") or {}
    for name, folder in (_dig(tool, "package-dir") or {}).items():
        if name == "":
            found.path(folder, "setuptools package-dir")
        else:
            found.package(name, found.root / folder, "setuptools package-dir")
    for where in _dig(tool, "packages", "find", "where") or []:
        found.path(where, "setuptools packages.find")


def _hatch(config: dict[str, Any], found: _Collector) -> None:
    for build in (_dig(config, "tool", "hatch", "build", "targets", "wheel"),
                  _dig(config, "tool", "hatch", "build")):  # fmt: skip
        for package in _dig(build, "packages") or []:
            found.path(Path(package).parent, "hatch packages")
        sources = _dig(build, "sources") or []
        for source in sources:
            if isinstance(sources, list) or sources[source] == "":
                found.path(source, "hatch sources")


def _others(config: dict[str, Any], found: _Collector) -> None:
    for entry in _dig(config, "tool", "poetry", "packages") or []:
        if isinstance(entry, dict) and entry.get("from"):
            found.path(entry["from"], "poetry packages")
    pdm = _dig(config, "tool", "pdm", "build", "package-dir")
    if isinstance(pdm, str):
        found.path(pdm, "pdm package-dir")
    uv = _dig(config, "tool", "uv", "build-backend", "module-root")
    if isinstance(uv, str):
        found.path(uv, "uv module-root")


def _pytest_pythonpath(config: dict[str, Any], found: _Collector) -> None:
    entries = _dig(config, "tool", "pytest", "ini_options", "pythonpath")
    if entries is None:
        for name, section in (("pytest.ini", "pytest"), ("tox.ini", "pytest")):
            parser = configparser.ConfigParser()
            try:
                parser.read(found.root / name, encoding="utf-8")
            except (configparser.Error, UnicodeDecodeError):
                continue
            if parser.has_option(section, "pythonpath"):
                entries = parser.get(section, "pythonpath").split()
                break
    for entry in [entries] if isinstance(entries, str) else entries or []:
        found.path(entry, "pytest pythonpath")


def _editable(found: _Collector) -> None:
    """Packages of an editable install of this project, located by importlib."""
    for dist in importlib.metadata.distributions():
        if _editable_source(dist) != found.root:
            continue
        for top in _top_names(dist):
            try:
                spec = importlib.util.find_spec(top)
            except (ImportError, ValueError):
                continue
            for location in (spec.submodule_search_locations or []) if spec else []:
                if Path(location).resolve().is_relative_to(found.root):
                    found.package(top, Path(location), "editable install")
                    break


def _editable_source(dist: importlib.metadata.Distribution) -> Path | None:
    try:
        info = json.loads(dist.read_text("direct_url.json") or "{}")
    except ValueError:
        return None
    if not _dig(info, "dir_info", "editable"):
        return None
    url = urlparse(str(info.get("url", "")))
    return Path(unquote(url.path)).resolve() if url.scheme == "file" else None


def _top_names(dist: importlib.metadata.Distribution) -> list[str]:
    listed = (dist.read_text("top_level.txt") or "").split()
    return listed or [dist.metadata["Name"].replace("-", "_")]


def _symlinked(found: _Collector) -> None:
    """Sub-packages that are symlinks to folders elsewhere in the project (``liveforge/kernel``
    -> ``kernel/``): the folder is that package's, whatever else could import it."""
    for base in dict.fromkeys([*found.paths, found.root]):
        for top in base.iterdir() if base.is_dir() else ():
            if not _top_name(top, is_root=False) or top.is_symlink() or not top.is_dir():
                continue
            for folder, dirs, _ in os.walk(top):
                dirs[:] = [d for d in dirs if d.isidentifier()]
                for name in dirs:
                    link = Path(folder, name)
                    if link.is_symlink() and link.resolve().is_relative_to(found.root):
                        dotted = _dotted("", link.relative_to(base))
                        if dotted:
                            found.package(dotted, link, "symlinked package")


def discover(project_root: str | Path) -> ImportRoots:
    """The import roots of the project at `project_root` (see the module docstring)."""
    root = Path(project_root).resolve()
    found = _Collector(root)
    config = _pyproject(root)
    _setuptools(config, found)
    _hatch(config, found)
    _others(config, found)
    _pytest_pythonpath(config, found)
    if (root / "src").is_dir() and any(
        _top_name(c, is_root=False) for c in (root / "src").iterdir()
    ):
        found.path("src", "src/ layout")
    _editable(found)
    _symlinked(found)
    found.paths.pop(root, None)
    reasons = {str(p): why for p, why in found.paths.items()} | found.reasons
    reasons[str(root)] = "project root"
    return ImportRoots(root, (*found.paths, root), found.packages, reasons)
