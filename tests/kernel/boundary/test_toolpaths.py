"""The interpreters and tools on PATH are found from the environment, with what they need to
run (a shim's tool root, a link's installation, a script's interpreter), and never the home
folder itself."""

from __future__ import annotations

import os
from pathlib import Path

from liveforge.kernel.boundary._toolpaths import tool_paths, tools_key


def executable(path: Path, text: str) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)
    path.chmod(0o755)
    return path


def found(home: Path, path: str, **more: str) -> set[Path]:
    return {Path(p) for p in tool_paths({"PATH": path, **more}, home=home, cwd=home / "work")}


def test_a_shim_folder_brings_its_tool_root(tmp_path):
    """pyenv, asdf and rbenv put `shims` on PATH; the versions and the dispatcher are in
    the folder above."""
    home = tmp_path.resolve()
    (home / ".pyenv" / "shims").mkdir(parents=True)
    assert found(home, str(home / ".pyenv" / "shims")) == {
        home / ".pyenv" / "shims",
        home / ".pyenv",
    }


def test_a_link_brings_its_installation_and_a_script_its_interpreter(tmp_path):
    """A uv-style link into another installation's `bin` brings that installation; a
    pipx-style script brings its venv; a link to a document brings that file alone."""
    home = tmp_path.resolve()
    uv = executable(home / ".uv" / "cpython-3.12" / "bin" / "python3.12", "")
    pipx = executable(home / ".pipx" / "venvs" / "tool" / "bin" / "python", "")
    notes = executable(home / "Documents" / "notes.sh", "echo")
    local = home / ".local" / "bin"
    local.mkdir(parents=True)
    (local / "python3.12").symlink_to(uv)
    (local / "notes").symlink_to(notes)
    executable(local / "tool", f"#!{pipx}\nimport tool\n")
    executable(local / "plain", "#!/usr/bin/env bash\n")
    assert found(home, str(local)) == {
        local,
        home / ".uv" / "cpython-3.12",
        home / ".pipx" / "venvs" / "tool",
        notes,
        Path("/usr").resolve(),
    }


def test_the_home_folder_and_relative_entries_are_never_granted(tmp_path):
    """`~`, a folder above it, `.` and an empty entry on PATH add nothing."""
    home = (tmp_path / "home").resolve()
    home.mkdir()
    (home / "secret.txt").write_text("x")
    path = os.pathsep.join([str(home), str(tmp_path), "/", ".", ""])
    assert found(home, path) == set()


def test_named_roots_and_version_files_are_added(tmp_path):
    """PYENV_ROOT and friends, and `.python-version` / `.tool-versions` from the working
    folder up (the version managers read them)."""
    home = tmp_path.resolve()
    (home / "work").mkdir()
    (home / ".tool-versions").write_text("python 3.12.1\n")
    (home / "work" / ".python-version").write_text("3.12.1\n")
    (home / "uvenv").mkdir()
    assert found(home, "", VIRTUAL_ENV=str(home / "uvenv"), PYENV_ROOT=str(home / "none")) == {
        home / "uvenv",
        home / "work" / ".python-version",
        home / ".tool-versions",
    }


def test_the_key_changes_when_a_tool_is_linked_onto_path(tmp_path):
    """A tool installed into a PATH folder (its mtime changes) is seen without a restart."""
    environ = {"PATH": str(tmp_path)}
    before = tools_key(environ)
    os.utime(tmp_path, (1, 1))
    assert tools_key(environ) != before
