"""The project's own code: the boundary of liveforge's writes and, by default, of its patches.

A file is the project's own code when it lies inside the project root and not in an
environment or installed packages under it, nor in build output, unless a folder the user
allowed (``allow_paths``) holds it:

    code = ProjectCode(root, allowed=("vendor/extpkg",))
    code.reason(".venv/lib/python3.11/site-packages/extpkg/__init__.py")
    # 'in the environment .venv (a folder holding pyvenv.cfg)'
    code.check_write(path, module="extpkg")      # NotProjectCode: the file and the way out

    environments     a folder holding pyvenv.cfg (venv, virtualenv, uv, poetry in-project)
                     or conda-meta/, and .tox/, .nox/, __pypackages__/
    installed        any site-packages/ or dist-packages/ folder
    build output     build/, dist/ at the top of the project, *.egg-info/

Writing into an environment loses the work at its next install; a module loaded from build
output is a copy of a source file elsewhere. Commands and tools that make build output (a
shell step's ``make``) may still write there: only module sources (persist, patches) and
environments are refused.
"""

from __future__ import annotations

import functools
import os
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path

from liveforge.kernel.errors import NotProjectCode

__all__ = ["ProjectCode", "liveforge_file", "real_path"]

_INSTALLED = frozenset({"site-packages", "dist-packages"})
_ENVIRONMENTS = frozenset({".tox", ".nox", "__pypackages__"})
_BUILD = frozenset({"build", "dist"})

_LIVEFORGE = Path(__file__).resolve().parents[2]  # the liveforge package (kernel's parent)
_REPLACEABLE = tuple(
    Path(os.path.realpath(_LIVEFORGE / name)) for name in ("impls", "tools", "declarations")
)


@functools.lru_cache(maxsize=4096)
def real_path(path: str | Path) -> Path:
    """`path` with symbolic links resolved, remembered: every patch asks it of its module's
    file, and links under a project do not change while it runs."""
    return Path(os.path.realpath(path))


def liveforge_file(path: str | Path) -> bool:
    """True for a file of liveforge's own replaceable code (its impls, tools and
    declarations), which the agent may patch wherever liveforge is installed."""
    real = real_path(path)
    return any(real.is_relative_to(folder) for folder in _REPLACEABLE)


@dataclass(frozen=True)
class ProjectCode:
    """Which files are the project's own code (see the module docstring)."""

    root: Path
    #: folders the user allowed beyond the project's own code (relative to the root or not)
    allowed: tuple[Path, ...] = field(default=())

    @classmethod
    def of(cls, root: str | Path, allowed: Iterable[str | Path] = ()) -> ProjectCode:
        """The project at `root`, with `allowed` folders (relative ones from the root)."""
        base = Path(os.path.realpath(root))
        folders = tuple(Path(os.path.realpath(base / Path(p).expanduser())) for p in allowed)
        return cls(base, folders)

    def reason(self, path: str | Path, *, build: bool = True) -> str | None:
        """Why `path` is not the project's own code, or None when it is (or an allowed
        folder holds it). `build=False` lets build output count as the project's."""
        real = Path(os.path.realpath(path))
        if any(real.is_relative_to(folder) for folder in self.allowed):
            return None
        if not real.is_relative_to(self.root):
            return f"outside the project root {self.root}"
        current, environment = self.root, None
        relative = real.relative_to(self.root)
        for depth, part in enumerate(relative.parts[:-1]):
            current = current / part
            label = current.relative_to(self.root)
            if part in _INSTALLED:
                of = f" of the environment {environment}" if environment else ""
                return f"in installed packages ({label}){of}"
            if environment is None and (part in _ENVIRONMENTS or _is_environment(current)):
                environment = label
            elif (
                environment is None
                and build
                and ((depth == 0 and part in _BUILD) or part.endswith(".egg-info"))
            ):
                return f"in build output ({label})"
        return f"in the environment {environment}" if environment else None

    def is_own(self, path: str | Path) -> bool:
        """True when `path` is the project's own code."""
        return self.reason(path) is None

    def check_write(self, path: str | Path, *, module: str = "", build: bool = True) -> None:
        """Refuse (`NotProjectCode`) to write `path` when it is not the project's own code;
        the error names the real file, why, and the folder to list in ``allow_paths``."""
        why = self.reason(path, build=build)
        if why is None:
            return
        real = Path(os.path.realpath(path))
        raise NotProjectCode(
            str(real), why, self._shown(self.folder_to_allow(real, module)), module=module
        )

    def folder_to_allow(self, path: Path, module: str = "") -> Path:
        """What to list in ``allow_paths`` for `path`: its top-level package's folder when
        the module is known (the module's own file for a top-level module), else the
        file's folder."""
        if not module:
            return path.parent
        depth = module.count(".") + (path.name == "__init__.py")
        return path.parents[depth - 1] if depth else path

    def _shown(self, folder: Path) -> str:
        """`folder` relative to the root when inside it (as it would be configured)."""
        return (
            str(folder.relative_to(self.root)) if folder.is_relative_to(self.root) else str(folder)
        )


def _is_environment(folder: Path) -> bool:
    return (folder / "pyvenv.cfg").is_file() or (folder / "conda-meta").is_dir()
