"""A project module that fails while liveforge imports it: one error that names the module,
the file and line the exception came from, the exception, and what to do about it.

Without this, a package whose `__init__` raises (or imports a dependency that is not
installed) looks like a wrong dotted path: the names it would have bound are simply missing.
"""

from __future__ import annotations

import os
import sys
import traceback
from dataclasses import dataclass
from pathlib import Path

from liveforge.kernel.errors import ProjectImportError

__all__ = ["ProjectFrame", "failed_parent", "import_failure", "project_frame"]


@dataclass(frozen=True)
class ProjectFrame:
    """Where in the project an exception was raised: module, file (relative) and line."""

    module: str
    path: str
    line: int

    def __str__(self) -> str:
        return f"{self.path}:{self.line}"


def project_frame(exc: BaseException, root: str | Path) -> ProjectFrame | None:
    """The innermost traceback frame of `exc` in a file under `root` (a virtualenv inside
    the project does not count), or None when the exception never passed through it."""
    base = os.path.join(os.path.realpath(root), "")
    found = None
    for frame, line in traceback.walk_tb(exc.__traceback__):
        path = os.path.realpath(frame.f_code.co_filename)
        if path.startswith(base) and os.sep + ".venv" + os.sep not in path[len(base) - 1 :]:
            module = str(frame.f_globals.get("__name__", ""))
            found = ProjectFrame(module, os.path.relpath(path, base), line)
    return found


def failed_parent(name: str) -> str | None:
    """After a failed `find_spec(name)`: the first parent package of `name` that is not
    imported, i.e. the one whose import raised; None when all of them are imported."""
    parts = name.split(".")
    return next(
        (p for p in (".".join(parts[:i]) for i in range(1, len(parts))) if p not in sys.modules),
        None,
    )


def import_failure(module: str, exc: BaseException, root: str | Path) -> ProjectImportError:
    """The error to raise when importing `module` raised `exc` (chain it with `from exc`)."""
    frame = project_frame(exc, root)
    error = f"{type(exc).__name__}: {exc}"
    where = f" (at {frame})" if frame is not None else ""
    return ProjectImportError(
        f"importing {module!r} failed: {error}{where}. {_advice(module, exc, frame)}",
        module=module,
        filename=frame.path if frame is not None else "",
        line=frame.line if frame is not None else None,
        error=error,
    )


def _advice(module: str, exc: BaseException, frame: ProjectFrame | None) -> str:
    """What to do: install a missing dependency, else fix the line that raised."""
    missing = getattr(exc, "name", None) if isinstance(exc, ModuleNotFoundError) else None
    if missing and missing.split(".")[0] != module.split(".")[0]:
        top = missing.split(".")[0]
        return (
            f"Install the package that provides {top!r} into the environment liveforge "
            f"runs with (`{sys.executable} -m pip install {top}`, or the package's own name "
            "if it differs), then run the command again."
        )
    line = "that line" if frame is not None else "the import error"
    return (
        f"Fix {line} so the module imports (liveforge imports the project's modules to work "
        "on them), then run the command again."
    )
