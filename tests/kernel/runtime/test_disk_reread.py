"""The disk is re-read, not assumed: a file another tool changed after liveforge wrote it
(`git checkout`, an editor) is noticed by its content before a check, a persist or a
rollback, and what is there decides; a rollback of a persisted change says what became of
its file, and `diff` compares memory with the real file."""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import pytest
from kernel_support import Project

from liveforge import Runtime

OLD = "def f():\n    return 1\n"
NEW = "def f():\n    return 2\n"


def _git(root: Path, *args: str) -> None:
    env = {"GIT_AUTHOR_NAME": "t", "GIT_AUTHOR_EMAIL": "t@t", "GIT_COMMITTER_NAME": "t",
           "GIT_COMMITTER_EMAIL": "t@t", "HOME": str(root), "PATH": "/usr/bin:/bin"}  # fmt: skip
    subprocess.run(["git", *args], cwd=root, env=env, check=True, capture_output=True)


@pytest.mark.skipif(shutil.which("git") is None, reason="needs git")
def test_a_file_restored_by_git_after_persist_then_rollback_and_patch_again(
    project: Project, rt: Runtime
) -> None:
    """patch, verify, persist; `git checkout` restores the file; rollback (which says the
    file already holds the rolled-back code); the same patch again: verify passes, not
    divergent, and persist writes it."""
    module = project.module(OLD)
    name, path = module.__name__, Path(module.__file__ or "")
    _git(project.root, "init", "-q")
    _git(project.root, "add", path.name)
    _git(project.root, "commit", "-q", "-m", "start")
    check = f"import {name}\nassert {name}.f() == 2"

    first = rt.patch(f"{name}.f", NEW)
    assert rt.verify(check).ok
    rt.persist()
    _git(project.root, "checkout", "--", path.name)
    assert path.read_text() == OLD

    (undone,) = rt.rollback(first.id)
    assert any("already holds the code as rolled back" in n for n in undone.notes)
    assert rt.diff() == ""
    rt.patch(f"{name}.f", NEW)
    result = rt.verify(check)
    assert result.ok and not result.divergent, result.summary()
    assert rt.persist().modules == [name] and path.read_text() == NEW


def test_rolling_back_a_persisted_change_says_the_file_was_left(
    project: Project, rt: Runtime
) -> None:
    """A rollback of a persisted change reverts memory and says its file still holds the
    change; diff then shows memory against that real file."""
    module = project.module(OLD)
    name, path = module.__name__, Path(module.__file__ or "")
    change = rt.patch(f"{name}.f", NEW)
    rt.persist(force=True)
    (undone,) = rt.rollback(change.id)
    assert module.f() == 1 and path.read_text() == NEW
    assert any("was left as persisted" in n for n in undone.notes)
    assert "-    return 2\n+    return 1\n" in rt.diff(name)


def test_diff_and_checks_see_an_edit_made_on_disk(project: Project, rt: Runtime) -> None:
    """A file edited on disk behind a clean module: diff shows memory against the real file,
    and a check carries the code that runs (not the edited file)."""
    module = project.module(OLD)
    name, path = module.__name__, Path(module.__file__ or "")
    rt.source(name)  # managed from here on
    path.write_text("def f():\n    return 3\n")
    assert "-    return 3\n+    return 1\n" in rt.diff()
    result = rt.verify(f"import {name}\n{name}.f()", live=False)
    assert result.value_repr == "1", result.summary()
