"""The interpreters and tools on `PATH` that live outside the system folders: what a check
or shell command inside the boundary must read and execute to run them.

A developer's `python3` is often not the system's: a pyenv or asdf shim, a uv-managed
CPython linked into ``~/.local/bin``, a pipx tool whose script names its own venv's Python,
the project's virtualenv. All of them are found from the environment, never from a list of
known homes:

- every absolute folder on ``PATH``;
- for a shim folder (``…/shims``: pyenv, asdf, rbenv), the tool's root above it, where the
  shims' target and the installed versions are;
- what the executables in those folders (outside the system's folders) lead to: a symlink's
  target, a script's ``#!`` interpreter, each with its installation when it stands in a
  ``bin`` folder (the folder above it, where a Python finds its standard library);
- the roots the environment names (``PYENV_ROOT``, ``ASDF_DATA_DIR``, ``ASDF_DIR``,
  ``UV_PYTHON_INSTALL_DIR``, ``VIRTUAL_ENV``, ``CONDA_PREFIX``) and the version files the
  version managers read from the working folder up (``.python-version``, ``.tool-versions``).

The home folder itself (or a folder above it) is never granted, so a ``PATH`` entry such as
``~`` leaves the rest of the home folder unreadable.
"""

from __future__ import annotations

import os
from collections.abc import Iterator, Mapping
from pathlib import Path

from liveforge.kernel.boundary._rules import SYSTEM_READABLE

__all__ = ["tool_paths", "tools_key"]

ROOT_VARIABLES = (
    "PYENV_ROOT",
    "ASDF_DATA_DIR",
    "ASDF_DIR",
    "UV_PYTHON_INSTALL_DIR",
    "VIRTUAL_ENV",
    "CONDA_PREFIX",
)
VERSION_FILES = (".python-version", ".tool-versions")
SHIM_FOLDER = "shims"
_MAX_EXECUTABLES = 2000  # per folder: a huge folder on PATH is granted, not searched


def tool_paths(
    environ: Mapping[str, str] | None = None, home: Path | None = None, cwd: Path | None = None
) -> tuple[str, ...]:
    """Folders and files (resolved, existing) that the interpreters and tools on ``PATH``
    need, read-only and executable, in a stable order. ``environ`` defaults to
    ``os.environ``, ``home`` to the user's home folder, ``cwd`` (where commands run, whose
    version files count) to the working folder.

        >>> "/usr/bin" in tool_paths({"PATH": "/usr/bin"})
        True
    """
    environ = os.environ if environ is None else environ
    home = (home or Path.home()).resolve()
    found: dict[str, None] = {}
    for path in _candidates(environ, cwd or Path.cwd(), home):
        try:
            resolved = path.resolve()
        except (OSError, RuntimeError):
            continue
        if resolved.exists() and not _holds_home(resolved, home):
            found.setdefault(str(resolved))
    return tuple(found)


def tools_key(environ: Mapping[str, str] | None = None) -> tuple[object, ...]:
    """What `tool_paths` depends on, cheap to read: the variables it reads and when each
    folder on ``PATH`` last changed (a tool installed or linked)."""
    environ = os.environ if environ is None else environ
    names = ("PATH", *ROOT_VARIABLES)
    folders = environ.get("PATH", "").split(os.pathsep)
    return (*(environ.get(n) for n in names), *map(_mtime, folders))


def _mtime(path: str) -> float | None:
    try:
        return os.stat(path).st_mtime
    except OSError:
        return None


def _candidates(environ: Mapping[str, str], cwd: Path, home: Path) -> Iterator[Path]:
    for entry in environ.get("PATH", "").split(os.pathsep):
        folder = Path(entry)
        if not folder.is_absolute() or not folder.is_dir():
            continue  # "" and "." mean the working folder: nothing to add
        if _holds_home(folder.resolve(), home):
            continue  # `~` on PATH: its programs are not told from the user's files
        yield folder
        if folder.name == SHIM_FOLDER:
            yield folder.parent
        if not _in_system(folder):
            yield from _targets(folder)
    for name in ROOT_VARIABLES:
        value = environ.get(name)
        if value and Path(value).is_absolute():
            yield Path(value)
    for folder in (cwd, *cwd.parents):
        yield from (folder / name for name in VERSION_FILES if (folder / name).is_file())


def _targets(folder: Path) -> Iterator[Path]:
    """The installations the executables in `folder` lead to."""
    try:
        entries = list(os.scandir(folder))[:_MAX_EXECUTABLES]
    except OSError:
        return
    for entry in entries:
        path = Path(entry.path)
        if entry.is_symlink():
            yield _installation(path.resolve())
        elif entry.is_file() and os.access(entry.path, os.X_OK):
            interpreter = _shebang(path)
            if interpreter is not None:
                yield _installation(interpreter.resolve())


def _shebang(path: Path) -> Path | None:
    """The absolute interpreter a script names on its ``#!`` line (not ``/usr/bin/env``)."""
    try:
        with open(path, "rb") as file:
            first = file.readline(512)
    except OSError:
        return None
    if not first.startswith(b"#!"):
        return None
    words = first[2:].decode(errors="replace").split()
    if not words or not words[0].startswith("/"):
        return None
    return Path(words[0])


def _installation(executable: Path) -> Path:
    """What running `executable` needs: the installation above its ``bin`` folder (a Python
    finds its standard library there), else the file alone (a link into a folder of
    documents grants that one file, not the folder)."""
    folder = executable.parent
    return folder.parent if folder.name == "bin" else executable


def _in_system(folder: Path) -> bool:
    """Below a folder every check reads anyway: nothing to search there."""
    return any(folder == Path(s) or Path(s) in folder.parents for s in SYSTEM_READABLE)


def _holds_home(path: Path, home: Path) -> bool:
    """True for the home folder and the folders above it (``/`` included)."""
    return path == home or path in home.parents
