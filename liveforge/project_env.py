"""The project's own environment: liveforge runs the live program with the project's interpreter.

A project's dependencies live in its virtualenv, not in liveforge's. Before a command works
on a project, the command line looks for that environment, in this order:

    $UV_PROJECT_ENVIRONMENT       uv's setting (relative to the project root)
    .venv/  venv/  env/           in the project root (uv, poetry in-project, python -m venv)
    poetry env info --path        poetry's environments outside the project (poetry projects)
    $VIRTUAL_ENV                  an activated environment, when the project has none

When liveforge already runs there, nothing happens. When the environment has liveforge
installed, the command runs again with that interpreter (re-exec, with `-P`: the current
folder is not put on `sys.path`, whatever it holds). Otherwise it stops with
the exact commands that install liveforge there; ``--this-python`` keeps the current one.
Sandbox checks are forked from the live program's interpreter, so they use the same
interpreter and site-packages.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import tomllib
from dataclasses import dataclass
from pathlib import Path

__all__ = ["REEXEC_MARK", "ProjectEnvironment", "enter", "find_environment"]

REEXEC_MARK = "LIVEFORGE_PROJECT_PYTHON"
"""Set in the environment of a re-executed command (to the interpreter), so it never loops."""

_IN_PROJECT = (".venv", "venv", "env")

SAFE_PATH = ("-P",)
"""Interpreter options of the re-run: the current folder is never put first on `sys.path`
(`-P`), so a folder there named like a package (a `liveforge/` clone beside the project)
cannot stand in for the installed one; the project's own roots are added by the runtime."""


@dataclass(frozen=True)
class ProjectEnvironment:
    """A virtual environment that belongs to a project."""

    prefix: Path
    python: Path
    found_by: str

    @property
    def is_current(self) -> bool:
        """Whether this process already runs in the environment."""
        return Path(sys.prefix).resolve() == self.prefix.resolve()

    def has_liveforge(self) -> bool:
        """Whether liveforge can be imported by the environment's interpreter."""
        probe = (
            "import importlib.util, sys; sys.exit(importlib.util.find_spec('liveforge') is None)"
        )
        try:
            run = subprocess.run([str(self.python), *SAFE_PATH, "-c", probe], timeout=30)
            return run.returncode == 0
        except (OSError, subprocess.TimeoutExpired):
            return False

    def install_advice(self) -> str:
        """What to run so that liveforge works in this environment."""
        from liveforge.installed import pip_install  # reads liveforge's own install record

        python = self.python
        return (
            f"The project's environment {self.prefix} (found by {self.found_by}) does not have "
            "liveforge, so liveforge cannot import the project's dependencies from here. "
            f"Install it there: `{pip_install(python=python, uv=True)}` or "
            f"`{pip_install(python=python)}`, then run the command again (or "
            f"`{python} -m liveforge ...`). To use this interpreter ({sys.executable}) "
            "anyway, pass --this-python."
        )


def _environment(prefix: Path, found_by: str) -> ProjectEnvironment | None:
    if not (prefix / "pyvenv.cfg").is_file():
        return None
    for python in (prefix / "bin" / "python", prefix / "Scripts" / "python.exe"):
        if python.exists():
            return ProjectEnvironment(prefix, python, found_by)
    return None


def find_environment(project_root: str | Path) -> ProjectEnvironment | None:
    """The project's virtual environment, or None when it has none (see the module doc)."""
    root = Path(project_root).resolve()
    candidates: list[tuple[Path, str]] = []
    if os.environ.get("UV_PROJECT_ENVIRONMENT"):
        candidates.append((root / os.environ["UV_PROJECT_ENVIRONMENT"], "UV_PROJECT_ENVIRONMENT"))
    candidates += [(root / name, f"{name}/ in the project") for name in _IN_PROJECT]
    for prefix, found_by in candidates:
        found = _environment(prefix, found_by)
        if found is not None:
            return found
    found = _poetry_environment(root)
    if found is None and os.environ.get("VIRTUAL_ENV"):
        found = _environment(Path(os.environ["VIRTUAL_ENV"]), "$VIRTUAL_ENV")
    return found


def _poetry_environment(root: Path) -> ProjectEnvironment | None:
    """Poetry keeps environments outside the project; only poetry itself knows where."""
    try:
        config = tomllib.loads((root / "pyproject.toml").read_text(encoding="utf-8"))
    except (OSError, tomllib.TOMLDecodeError, UnicodeDecodeError):
        return None
    poetry = shutil.which("poetry")
    if "poetry" not in config.get("tool", {}) or poetry is None:
        return None
    try:
        run = subprocess.run(
            [poetry, "env", "info", "--path"], cwd=root, capture_output=True, text=True, timeout=30
        )
    except (OSError, subprocess.TimeoutExpired):
        return None
    path = run.stdout.strip()
    return _environment(Path(path), "poetry env info") if run.returncode == 0 and path else None


def enter(project_root: str | Path, argv: list[str]) -> str | None:
    """Make the command run in the project's environment: nothing to do (None), a re-exec
    of `argv` with its interpreter (no return), or the advice to show when liveforge is
    not installed there."""
    if os.environ.get(REEXEC_MARK):
        return None  # already moved once; never loop between interpreters
    env = find_environment(project_root)
    if env is None or env.is_current:
        return None
    if not env.has_liveforge():
        return env.install_advice()
    os.environ[REEXEC_MARK] = str(env.python)
    sys.stdout.flush()
    sys.stderr.flush()
    os.execv(env.python, [str(env.python), *SAFE_PATH, "-m", "liveforge", *argv])
    return None  # not reached
