"""Recorded file writes: a file written through the runtime is one undoable step in the same
history as patches, and a managed module's file changes together with the running module."""

from __future__ import annotations

import os

import pytest
from kernel_support import src

from liveforge.kernel import (
    ChangeStatus,
    PatchSyntaxError,
    PersistConflict,
    PersistError,
    UnsafePath,
)


def test_a_new_file_is_written_diffed_and_removed_again_with_its_folders(rt, project):
    """Creating docs/notes/todo.md records a file change; rollback removes file and folders."""
    change = rt.write_file("docs/notes/todo.md", "- ship it\n")
    path = project.root / "docs" / "notes" / "todo.md"
    assert path.read_text() == "- ship it\n"
    assert (change.kind, change.status, change.before) == ("file", ChangeStatus.PERSISTED, None)
    assert "+++ b/docs/notes/todo.md" in rt.written_diff()
    assert rt.history()[-1] is change
    rt.rollback()
    assert not (project.root / "docs").exists()
    assert rt.written_diff() == ""


def test_an_overwrite_keeps_crlf_and_mode_and_two_writes_undo_in_order(rt, project):
    """A CRLF, executable file stays CRLF and executable; undoing the first of two writes of the
    same file undoes both, back to the original bytes."""
    path = project.root / "run.sh"
    path.write_bytes(b"echo one\r\n")
    path.chmod(0o755)
    first = rt.write_file("run.sh", "echo two\n")
    rt.write_file(path, "echo three\n")
    assert path.read_bytes() == b"echo three\r\n"
    assert os.stat(path).st_mode & 0o777 == 0o755
    diff = rt.written_diff()
    assert "-echo one" in diff and "+echo three" in diff and "echo two" not in diff
    undone = rt.rollback(first.id)
    assert [c.id for c in undone] == ["c2", "c1"]
    assert path.read_bytes() == b"echo one\r\n"


def test_undo_is_refused_when_the_file_changed_after_the_write(rt, project):
    """Someone edited the file after the write: rollback refuses and touches nothing."""
    rt.write_file("notes.txt", "mine\n")
    (project.root / "notes.txt").write_text("theirs\n")
    with pytest.raises(PersistConflict, match="changed on disk after change c1"):
        rt.rollback()
    assert (project.root / "notes.txt").read_text() == "theirs\n"
    assert rt.history()[-1].status is ChangeStatus.PERSISTED


def test_paths_outside_the_project_are_refused_unless_allowed(rt, project, tmp_path_factory):
    """'..', absolute paths elsewhere and symlinks out are refused; an allowed root works."""
    outside = tmp_path_factory.mktemp("elsewhere")
    for bad in ("../escape.txt", str(outside / "x.txt")):
        with pytest.raises(UnsafePath):
            rt.write_file(bad, "no\n")
    (project.root / "link").symlink_to(outside)
    with pytest.raises(UnsafePath, match="symlink"):
        rt.write_file("link/x.txt", "no\n")
    assert list(outside.iterdir()) == []
    rt.write_file(outside / "x.txt", "yes\n", roots=[outside])
    assert (outside / "x.txt").read_text() == "yes\n"


def test_writing_a_managed_module_file_patches_the_running_module(rt, project):
    """The module runs the new code at once, file and memory agree, and one rollback restores
    both."""
    mod = project.module("def f():\n    return 1\n")
    keep = mod.f
    change = rt.write_file(
        mod.__file__,
        src("""
        def f():
            return 2
        """),
    )
    assert keep() == 2 and change.module == mod.__name__
    assert rt.diff() == ""  # memory matches the file
    assert "+    return 2" in rt.written_diff()
    rt.rollback()
    assert keep() == 1
    assert open(mod.__file__).read() == "def f():\n    return 1\n"
    assert rt.diff() == ""


def test_a_module_file_that_does_not_compile_is_refused_with_nothing_changed(rt, project):
    """The patch engine refuses broken source; the file and the module stay as they were."""
    mod = project.module("def f():\n    return 1\n")
    with pytest.raises(PatchSyntaxError):
        rt.write_file(mod.__file__, "def f(:\n")
    assert mod.f() == 1 and open(mod.__file__).read() == "def f():\n    return 1\n"
    assert rt.history() == []


def test_a_module_with_unpersisted_patches_refuses_a_file_write(rt, project):
    """Writing the file would persist unchecked patches: refused, naming them."""
    mod = project.module("def f():\n    return 1\n")
    rt.patch(f"{mod.__name__}.f", "def f():\n    return 5\n")
    with pytest.raises(PersistError, match=r"changes in memory that the file lacks \(c1\)"):
        rt.write_file(mod.__file__, "def f():\n    return 2\n")
    assert mod.f() == 5


def test_persist_guards_decide_module_file_writes_too(rt, project):
    """A guard that refuses (say, the person declined) leaves module and file unchanged."""
    mod = project.module("def f():\n    return 1\n")
    seen = []

    def guard(modules):
        seen.append(modules)
        raise PersistError("declined")

    rt.add_persist_guard(guard)
    with pytest.raises(PersistError, match="declined"):
        rt.write_file(mod.__file__, "def f():\n    return 2\n")
    assert seen == [[mod.__name__]] and mod.f() == 1
    assert open(mod.__file__).read() == "def f():\n    return 1\n"
    rt.write_file("notes.txt", "plain files are not modules\n")
    assert seen == [[mod.__name__]]
