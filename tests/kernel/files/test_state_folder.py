"""liveforge's state folder (`.liveforge/`) ignores itself in git, as `sandbox_runs/` does:
after a checked persist in a real git repository, the only change git shows is the file."""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import pytest
from kernel_support import Project

from liveforge import Runtime
from liveforge.kernel.files._statefolder import make_parent

pytestmark = pytest.mark.skipif(shutil.which("git") is None, reason="needs git")


def _git(root: Path, *args: str) -> str:
    env = {"GIT_AUTHOR_NAME": "t", "GIT_AUTHOR_EMAIL": "t@t", "GIT_COMMITTER_NAME": "t",
           "GIT_COMMITTER_EMAIL": "t@t", "HOME": str(root), "PATH": "/usr/bin:/bin"}  # fmt: skip
    run = subprocess.run(["git", *args], cwd=root, env=env, capture_output=True, text=True)
    assert run.returncode == 0, run.stderr
    return run.stdout


def test_git_status_shows_only_the_persisted_file(project: Project) -> None:
    """patch, verify, persist in a git project: `git status --porcelain` lists the source
    file and nothing of liveforge's (no persist.lock, no writes.jsonl, no sandbox_runs)."""
    module = project.module("def f():\n    return 1\n")
    root = project.root
    (root / ".gitignore").write_text("__pycache__/\n")
    _git(root, "init", "-q")
    _git(root, "add", "-A")
    _git(root, "commit", "-q", "-m", "start")
    rt = Runtime(project_root=root)
    try:
        rt.patch(f"{module.__name__}.f", "def f():\n    return 2\n")
        assert rt.verify(f"import {module.__name__} as m\nassert m.f() == 2").ok
        rt.persist()
    finally:
        rt.close()
    assert (root / ".liveforge" / "persist.lock").exists()
    assert _git(root, "status", "--porcelain").splitlines() == [f" M {module.__name__}.py"]


def test_skills_and_plugins_in_the_state_folder_can_be_committed(tmp_path: Path) -> None:
    """What a user writes under `.liveforge/skills/` and `.liveforge/plugins/` is not
    ignored; liveforge's own files there are."""
    _git(tmp_path, "init", "-q")
    make_parent(tmp_path / ".liveforge" / "sessions" / "s1.jsonl")
    (tmp_path / ".liveforge" / "sessions" / "s1.jsonl").write_text("{}\n")
    (tmp_path / ".liveforge" / "skills").mkdir()
    (tmp_path / ".liveforge" / "skills" / "review.md").write_text("# review\n")
    assert _git(tmp_path, "status", "--porcelain", "-uall").splitlines() == [
        "?? .liveforge/skills/review.md"
    ]
