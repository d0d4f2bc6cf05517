"""A watch over files tells which changed since it started; where it cannot tell (its
first answer, a folder or link on the way changed) it says so, and the caller stats."""

from __future__ import annotations

import os
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from liveforge.kernel.files._changedfiles import ChangedFiles

pytestmark = pytest.mark.skipif(not sys.platform.startswith("linux"), reason="needs inotify")


@pytest.fixture
def files(tmp_path: Path) -> dict[str, Path]:
    (tmp_path / "lib" / "pkg").mkdir(parents=True)
    made = {}
    for name in ("a.py", "b.py"):
        made[name] = tmp_path / "lib" / "pkg" / name
        made[name].write_text("VALUE = 1\n")
    return made


@pytest.fixture
def watched(files: dict[str, Path]) -> Iterator[ChangedFiles]:
    watch = ChangedFiles([str(files["a.py"])])
    assert watch.blind is None
    assert watch.changed() is None  # the first answer: the caller stats every file once
    assert watch.changed() == set()
    yield watch
    watch.close()


def test_an_edit_that_keeps_size_and_mtime_is_seen(
    watched: ChangedFiles, files: dict[str, Path]
) -> None:
    """What a stat of the file could not tell apart, the watch sees."""
    path = files["a.py"]
    before = path.stat()
    path.write_text("VALUE = 2\n")
    os.utime(path, ns=(before.st_atime_ns, before.st_mtime_ns))
    after = path.stat()
    assert (after.st_size, after.st_mtime_ns) == (before.st_size, before.st_mtime_ns)
    assert watched.changed() == {str(path)}
    assert watched.changed() == {str(path)}  # said again until the caller stops asking


def test_a_file_replaced_by_rename_is_seen(watched: ChangedFiles, files: dict[str, Path]) -> None:
    """An editor's save: the new text written beside the file, then renamed over it."""
    path = files["a.py"]
    new = path.with_name("a.py.new")
    new.write_text("VALUE = 3\n")
    os.replace(new, path)
    assert watched.changed() == {str(path)}


def test_a_removed_file_is_seen(watched: ChangedFiles, files: dict[str, Path]) -> None:
    files["a.py"].unlink()
    assert watched.changed() == {str(files["a.py"])}


def test_a_touched_file_is_seen(watched: ChangedFiles, files: dict[str, Path]) -> None:
    files["a.py"].touch()
    assert watched.changed() == {str(files["a.py"])}


def test_other_files_of_the_folder_are_not_reported(
    watched: ChangedFiles, files: dict[str, Path]
) -> None:
    files["b.py"].write_text("VALUE = 2\n")
    (files["b.py"].parent / "c.py").write_text("")
    assert watched.changed() == set()


def test_a_folder_on_the_way_moved_leaves_the_answer_to_the_caller(
    watched: ChangedFiles, files: dict[str, Path], tmp_path: Path
) -> None:
    """The path now names another file (or none): the caller stats every file again."""
    (tmp_path / "lib").rename(tmp_path / "old")
    (tmp_path / "lib" / "pkg").mkdir(parents=True)
    (tmp_path / "lib" / "pkg" / "a.py").write_text("VALUE = 1\n")
    assert watched.changed() is None
    assert watched.blind is not None
    assert watched.changed() is None


def test_a_link_on_the_way_pointed_elsewhere_leaves_the_answer_to_the_caller(
    files: dict[str, Path], tmp_path: Path
) -> None:
    (tmp_path / "link").symlink_to(tmp_path / "lib")
    watch = ChangedFiles([str(tmp_path / "link" / "pkg" / "a.py")])
    watch.changed()
    other = tmp_path / "other" / "pkg"
    other.mkdir(parents=True)
    (other / "a.py").write_text("VALUE = 1\n")
    (tmp_path / "relink").symlink_to(tmp_path / "other")
    os.replace(tmp_path / "relink", tmp_path / "link")
    assert watch.changed() is None
    watch.close()


def test_an_edit_of_the_file_a_link_names_is_seen(files: dict[str, Path], tmp_path: Path) -> None:
    """A module imported through a link: its file is watched where it is."""
    (tmp_path / "link").symlink_to(tmp_path / "lib")
    linked = str(tmp_path / "link" / "pkg" / "a.py")
    watch = ChangedFiles([linked])
    watch.changed()
    files["a.py"].write_text("VALUE = 22\n")
    assert watch.changed() == {linked}
    watch.close()


def test_a_relative_path_is_left_to_the_caller() -> None:
    watch = ChangedFiles(["pkg/a.py"])
    assert watch.blind is not None
    watch.changed()
    assert watch.changed() is None


def test_a_forked_child_does_not_hold_the_watch(watched: ChangedFiles) -> None:
    """A fork of this process (a live check) cannot read the events and so take them
    away from the parent."""
    fd = watched._fd
    assert fd is not None
    pid = os.fork()
    if pid == 0:
        try:
            os.fstat(fd)
        except OSError:
            os._exit(0)
        os._exit(1)
    _, status = os.waitpid(pid, 0)
    assert os.waitstatus_to_exitcode(status) == 0
    os.fstat(fd)  # the parent's is open


def test_a_closed_watch_leaves_the_answer_to_the_caller(watched: ChangedFiles) -> None:
    watched.close()
    assert watched.changed() is None
