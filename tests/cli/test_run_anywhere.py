"""liveforge runs from any folder: the re-run inside the project's environment never puts
the current folder first on `sys.path`, so a `liveforge/` clone beside the project (the
folder a user keeps their checkouts in) cannot stand in for the installed liveforge."""

from __future__ import annotations

import shutil
import subprocess
import sys
import sysconfig
from pathlib import Path

import pytest
from cli_support import cli_env, make_venv

import liveforge

CHECKOUT = Path(liveforge.__file__).resolve().parent.parent


def _install_editable(python: Path) -> None:
    """liveforge installed in the venv of `python` as `pip install -e` installs it: a path
    hook (setuptools' editable finder) that Python consults after the folders on sys.path."""
    here = Path(sysconfig.get_paths()["purelib"])
    finders = [*here.glob("__editable__*liveforge*"), *here.glob("liveforge-*.dist-info")]
    if not any(f.name.endswith("_finder.py") for f in finders):
        pytest.skip("liveforge is not installed in editable mode in this environment")
    target = Path(next(python.parent.parent.glob("lib/python*/site-packages")))
    for found in finders:
        if found.is_dir():
            shutil.copytree(found, target / found.name)
        else:
            shutil.copy2(found, target / found.name)


def _liveforge(*args: str, cwd: Path, stdin: str | None = None) -> subprocess.CompletedProcess[str]:
    """The `liveforge` command as a user types it (the console script, whose own folder is
    the first entry of its sys.path, not the current folder)."""
    script = Path(sys.executable).parent / "liveforge"
    return subprocess.run(
        [str(script), *args],
        cwd=cwd,
        input=stdin,
        capture_output=True,
        text=True,
        timeout=120,
        env=cli_env(),
    )


def test_commands_run_from_the_folder_holding_a_liveforge_clone(tmp_path: Path) -> None:
    """From ~/src holding both `liveforge/` (a clone: a folder without __init__.py) and
    `myproj/` (its .venv has liveforge installed), inspect, view and mcp work; before, the
    re-run imported the clone as a namespace package and died with ImportError."""
    src = tmp_path / "src"
    clone = src / "liveforge" / "liveforge"
    clone.mkdir(parents=True)
    (clone / "__init__.py").write_text("raise SystemExit('the clone was imported')\n")
    project = src / "myproj"
    (project / "app_lf").mkdir(parents=True)
    (project / "app_lf" / "__init__.py").write_text("def quad(x):\n    return 4 * x\n")
    python = make_venv(project / ".venv", [sysconfig.get_paths()["purelib"]])
    _install_editable(python)

    listed = _liveforge("--project", "myproj", "inspect", "app_lf", cwd=src)
    assert listed.returncode == 0, listed.stderr
    assert "quad" in listed.stdout and "ImportError" not in listed.stderr
    shown = _liveforge("--project", "myproj", "view", "app_lf.quad", cwd=src)
    assert shown.returncode == 0, shown.stderr
    assert "return 4 * x" in shown.stdout
    served = _liveforge("--project", "myproj", "mcp", cwd=src, stdin="")  # a client that left
    assert "ImportError" not in served.stderr and served.returncode == 0, served.stderr
