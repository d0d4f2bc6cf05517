"""Files changed elsewhere (a shell command's copy-on-write view) applied as one undoable
step: new, changed and deleted files and folders, modes kept, a managed module patched
live, refusals that change nothing, and one unpersist that puts every file back."""

from __future__ import annotations

import os

import pytest

from liveforge.kernel import PatchSyntaxError, PersistError, UnsafePath


@pytest.fixture
def upper(tmp_path_factory):
    """A folder standing in for a view's upper folder."""
    return tmp_path_factory.mktemp("upper")


def _put(folder, rel, data, mode=0o644):
    path = folder / rel
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(data)
    path.chmod(mode)
    return path


def test_files_and_folders_change_as_one_step_and_one_unpersist_restores_them(rt, project, upper):
    """Changed, created (executable, in a new folder) and deleted files and a deleted folder:
    the diff names the command, and unpersist brings back the exact bytes, modes and folders."""
    root = project.root
    _put(root, "notes.md", b"old\r\n")
    _put(root, "gone.txt", b"bye\n")
    _put(root, "build/out/a.o", b"\x00\x01")
    written = {
        "notes.md": _put(upper, "notes.md", b"new\r\n"),
        "bin/run.sh": _put(upper, "bin/run.sh", b"#!/bin/sh\necho hi\n", 0o755),
    }
    applied = rt.apply_files(written, ["gone.txt", "build"], label="$ make all")
    assert sorted(applied.paths) == ["bin/run.sh", "build/out/a.o", "gone.txt", "notes.md"]
    assert (root / "notes.md").read_bytes() == b"new\r\n"
    assert os.stat(root / "bin/run.sh").st_mode & 0o777 == 0o755
    assert not (root / "gone.txt").exists() and not (root / "build").exists()
    shown = rt.file_writes_diff()
    assert shown.startswith("# $ make all\n") and "-old" in shown and "+new" in shown
    assert "Binary file build/out/a.o changed" in shown and "-bye" in shown
    assert rt.files_are_newest()
    rt.unpersist()
    assert (root / "notes.md").read_bytes() == b"old\r\n"
    assert (root / "gone.txt").read_text() == "bye\n"
    assert (root / "build/out/a.o").read_bytes() == b"\x00\x01"
    assert not (root / "bin").exists()
    assert rt.file_writes_diff() == ""


def test_a_managed_module_is_live_at_once_and_undone_in_two_steps(rt, project, upper):
    """Its file goes through the patch engine: the running module changes with the file;
    unpersist puts the file back and keeps the change in memory, rollback undoes that."""
    mod = project.module("def f():\n    return 1\n")
    keep = mod.f
    rel = os.path.relpath(mod.__file__, project.root)
    applied = rt.apply_files({rel: _put(upper, rel, b"def f():\n    return 2\n")}, label="$ sed")
    assert applied.modules == [mod.__name__] and keep() == 2 and rt.diff() == ""
    rt.unpersist()
    assert open(mod.__file__).read() == "def f():\n    return 1\n" and keep() == 2
    assert "+    return 2" in rt.diff(mod.__name__)
    rt.rollback()
    assert keep() == 1 and rt.diff() == ""


def test_refusals_change_nothing(rt, project, upper):
    """A module with unpersisted patches, a path outside the project, a broken module:
    refused before any file or module changes."""
    mod = project.module("def f():\n    return 1\n")
    rel = os.path.relpath(mod.__file__, project.root)
    _put(project.root, "plain.txt", b"keep\n")
    plain = _put(upper, "plain.txt", b"lost\n")
    rt.patch(f"{mod.__name__}.f", "def f():\n    return 5\n")
    source = _put(upper, rel, b"def f():\n    return 2\n")
    with pytest.raises(PersistError, match="the command's changes were not applied"):
        rt.apply_files({"plain.txt": plain, rel: source})
    assert (project.root / "plain.txt").read_text() == "keep\n" and mod.f() == 5
    with pytest.raises(UnsafePath):
        rt.apply_files({"../escape.txt": plain})
    rt.rollback()
    broken = _put(upper, "broken.py", b"def f(:\n")
    with pytest.raises(PatchSyntaxError):
        rt.apply_files({"plain.txt": plain, rel: broken})
    assert (project.root / "plain.txt").read_text() == "keep\n" and mod.f() == 1
    assert not rt.files_are_newest()


def test_persist_guards_decide_module_files_of_a_step(rt, project, upper):
    """A guard that refuses the module refuses the whole step: no file, no patch."""
    mod = project.module("def f():\n    return 1\n")
    rel = os.path.relpath(mod.__file__, project.root)
    asked = []

    def guard(modules):
        asked.append(modules)
        raise PersistError("the self-tests fail")

    rt.add_persist_guard(guard)
    source = _put(upper, rel, b"def f():\n    return 2\n")
    plain = _put(upper, "plain.txt", b"new\n")
    with pytest.raises(PersistError, match="self-tests fail"):
        rt.apply_files({rel: source, "plain.txt": plain})
    assert asked == [[mod.__name__]] and mod.f() == 1
    assert open(mod.__file__).read() == "def f():\n    return 1\n"
    assert not (project.root / "plain.txt").exists()
