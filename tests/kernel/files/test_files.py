"""Persistence primitives: faithful reads, atomic writes, safe paths, conflicts and undo."""

from __future__ import annotations

import os
import random
import signal
import stat
import time
from pathlib import Path

import pytest

from liveforge.kernel.errors import PersistConflict, PersistError, UnsafePath
from liveforge.kernel.files._filebatch import PlannedWrite, persist_files, restore
from liveforge.kernel.files._files import (
    TEMP_SUFFIX,
    atomic_write,
    check_unchanged,
    module_path_for,
    safe_destination,
)
from liveforge.kernel.files._sourcefile import Fingerprint, read_source


def leftovers(folder: Path) -> list[str]:
    return [p.name for p in folder.rglob(f"*{TEMP_SUFFIX}")]


def test_read_source_remembers_bom_crlf_and_mode(tmp_path: Path) -> None:
    path = tmp_path / "m.py"
    path.write_bytes(b"\xef\xbb\xbfx = 1\r\ny = 2\r\n")
    path.chmod(0o755)
    loaded = read_source(path)
    assert (loaded.text, loaded.encoding, loaded.newline, loaded.mode) == (
        "x = 1\ny = 2\n",
        "utf-8-sig",
        "\r\n",
        0o755,
    )


def test_latin1_cookie_file_is_written_back_in_latin1(tmp_path: Path) -> None:
    path = tmp_path / "m.py"
    path.write_bytes(b"# -*- coding: latin-1 -*-\nNAME = 'caf\xe9'\n")
    loaded = read_source(path)
    atomic_write(path, loaded.text.replace("caf", "th"), like=loaded)
    assert path.read_bytes() == b"# -*- coding: latin-1 -*-\nNAME = 'th\xe9'\n"


def test_bom_crlf_and_mode_survive_a_rewrite(tmp_path: Path) -> None:
    path = tmp_path / "m.py"
    path.write_bytes(b"\xef\xbb\xbfx = 1\r\n")
    path.chmod(0o751)
    atomic_write(path, "x = 'é'\ny = 2\n", like=read_source(path))
    assert path.read_bytes() == "\ufeffx = 'é'\r\ny = 2\r\n".encode()
    assert stat.S_IMODE(path.stat().st_mode) == 0o751


def test_new_file_gets_the_default_mode_and_no_temp_file_remains(tmp_path: Path) -> None:
    path = tmp_path / "new.py"
    umask = os.umask(0o022)
    try:
        atomic_write(path, "x = 1\n")
    finally:
        os.umask(umask)
    assert stat.S_IMODE(path.stat().st_mode) == 0o644
    assert leftovers(tmp_path) == []


def test_unencodable_text_is_refused_and_the_file_is_untouched(tmp_path: Path) -> None:
    path = tmp_path / "m.py"
    path.write_bytes(b"# coding: ascii\nx = 1\n")
    with pytest.raises(PersistError, match="line 2"):
        atomic_write(path, "# coding: ascii\nx = 'é'\n", like=read_source(path))
    assert path.read_bytes() == b"# coding: ascii\nx = 1\n"
    assert leftovers(tmp_path) == []


def test_fingerprint_tracks_content(tmp_path: Path) -> None:
    path = tmp_path / "m.py"
    path.write_text("a\n")
    first = Fingerprint.of(path)
    path.write_text("b\n")
    assert first is not None and Fingerprint.of(path) != first
    assert Fingerprint.of(tmp_path / "missing.py") is None


def test_file_changed_on_disk_is_a_conflict_with_diff(tmp_path: Path) -> None:
    path = tmp_path / "m.py"
    path.write_text("x = 1\n")
    loaded = read_source(path)
    path.write_text("x = 1\ny = 'theirs'\n")
    with pytest.raises(PersistConflict, match="changed on disk") as caught:
        check_unchanged(path, loaded, module="pkg.m")
    assert "+y = 'theirs'" in caught.value.diff
    assert caught.value.module == "pkg.m" and "force=True" in str(caught.value)


def test_deleted_file_is_a_conflict(tmp_path: Path) -> None:
    path = tmp_path / "m.py"
    path.write_text("x = 1\n")
    loaded = read_source(path)
    path.unlink()
    with pytest.raises(PersistConflict, match="deleted"):
        check_unchanged(path, loaded)


def test_touch_without_content_change_is_not_a_conflict(tmp_path: Path) -> None:
    path = tmp_path / "m.py"
    path.write_text("x = 1\n")
    loaded = read_source(path)
    os.utime(path, ns=(1, 1))
    check_unchanged(path, loaded)


@pytest.mark.parametrize("path", ["../evil.py", "pkg/../../evil.py", "/etc/evil.py"])
def test_paths_leaving_the_root_are_refused(tmp_path: Path, path: str) -> None:
    with pytest.raises(UnsafePath):
        safe_destination(tmp_path / "root", path)


def test_symlinked_directory_leaving_the_root_is_refused(tmp_path: Path) -> None:
    root, outside = tmp_path / "root", tmp_path / "outside"
    root.mkdir()
    outside.mkdir()
    (root / "pkg").symlink_to(outside)
    with pytest.raises(UnsafePath, match="symlink"):
        safe_destination(root, "pkg/mod.py")


def test_symlinked_file_leaving_the_root_is_refused(tmp_path: Path) -> None:
    root = tmp_path / "root"
    root.mkdir()
    (root / "mod.py").symlink_to(tmp_path / "target.py")
    with pytest.raises(UnsafePath, match="symlink"):
        safe_destination(root, "mod.py")


def test_paths_inside_the_root_resolve_to_real_paths(tmp_path: Path) -> None:
    root = tmp_path / "root"
    (root / "real").mkdir(parents=True)
    (root / "alias").symlink_to(root / "real")
    assert safe_destination(root, "alias/m.py") == root / "real" / "m.py"
    assert safe_destination(root, root / "real" / "m.py") == root / "real" / "m.py"


def test_module_path_for_modules_and_packages(tmp_path: Path) -> None:
    assert module_path_for(tmp_path, "a.b.c", False) == tmp_path / "a" / "b" / "c.py"
    assert module_path_for(tmp_path, "a.b", True) == tmp_path / "a" / "b" / "__init__.py"


@pytest.mark.parametrize("name", ["a..b", "a.b-c", "a.class", ""])
def test_module_path_for_refuses_bad_names(tmp_path: Path, name: str) -> None:
    with pytest.raises(UnsafePath, match="dotted module name"):
        module_path_for(tmp_path, name, False)


def test_new_module_in_new_packages_creates_init_files_and_undo_removes_all(tmp_path: Path) -> None:
    dest = module_path_for(tmp_path, "fresh.inner.mod", False)
    record = persist_files(tmp_path, [PlannedWrite(dest, "X = 1\n", module="fresh.inner.mod")])
    assert dest.read_text() == "X = 1\n"
    assert (tmp_path / "fresh" / "__init__.py").exists()
    assert (tmp_path / "fresh" / "inner" / "__init__.py").exists()
    restore(record)
    assert list(tmp_path.iterdir()) == []


def test_planned_package_init_is_written_not_emptied(tmp_path: Path) -> None:
    init = module_path_for(tmp_path, "fresh", True)
    mod = module_path_for(tmp_path, "fresh.mod", False)
    persist_files(tmp_path, [PlannedWrite(mod, "X = 1\n"), PlannedWrite(init, "'pkg'\n")])
    assert init.read_text() == "'pkg'\n"


def test_undo_restores_the_overwritten_bytes_and_mode(tmp_path: Path) -> None:
    path = tmp_path / "m.py"
    path.write_bytes(b"x = 1\r\n")
    path.chmod(0o700)
    loaded = read_source(path)
    record = persist_files(tmp_path, [PlannedWrite(path, "x = 2\n", loaded=loaded)])
    assert path.read_bytes() == b"x = 2\r\n"
    restore(record)
    assert path.read_bytes() == b"x = 1\r\n" and stat.S_IMODE(path.stat().st_mode) == 0o700


def test_batch_with_a_conflict_writes_nothing(tmp_path: Path) -> None:
    first, second = tmp_path / "a.py", tmp_path / "b.py"
    first.write_text("a = 1\n")
    second.write_text("b = 1\n")
    loaded_a, loaded_b = read_source(first), read_source(second)
    second.write_text("b = 'edited elsewhere'\n")
    with pytest.raises(PersistConflict):
        persist_files(
            tmp_path,
            [
                PlannedWrite(first, "a = 2\n", loaded=loaded_a),
                PlannedWrite(second, "b = 2\n", loaded=loaded_b),
            ],
        )
    assert first.read_text() == "a = 1\n"


def test_new_module_over_an_existing_file_needs_force(tmp_path: Path) -> None:
    path = tmp_path / "m.py"
    path.write_text("theirs = 1\n")
    with pytest.raises(PersistConflict, match="already exists"):
        persist_files(tmp_path, [PlannedWrite(path, "ours = 1\n")])
    persist_files(tmp_path, [PlannedWrite(path, "ours = 1\n")], force=True)
    assert path.read_text() == "ours = 1\n"


def test_undo_refuses_when_the_file_changed_after_persist(tmp_path: Path) -> None:
    path = tmp_path / "m.py"
    path.write_text("x = 1\n")
    record = persist_files(tmp_path, [PlannedWrite(path, "x = 2\n", loaded=read_source(path))])
    path.write_text("x = 3\n")
    with pytest.raises(PersistConflict, match="changed after it was persisted"):
        restore(record)
    restore(record, force=True)
    assert path.read_text() == "x = 1\n"


def test_sigkill_during_atomic_writes_never_leaves_a_partial_file(tmp_path: Path) -> None:
    """A writer killed at random moments leaves each file entirely old or entirely new."""
    versions = [(f"# version {n}\n" + f"x = {n}\n" * 40_000).encode() for n in range(2)]
    paths = [tmp_path / f"m{i}.py" for i in range(3)]
    for path in paths:
        path.write_bytes(versions[0])
    rng = random.Random(1234)
    seen: set[bytes] = set()
    for round_ in range(25):
        pid = os.fork()
        if pid == 0:
            try:
                # each round starts with the other version, so both land however slow the
                # disk is (a kill inside every first pass used to leave only the first one)
                n = round_
                while True:
                    n += 1
                    for path in paths:
                        atomic_write(path, versions[n % 2])
            finally:
                os._exit(0)
        time.sleep(rng.uniform(0.001, 0.03))
        os.kill(pid, signal.SIGKILL)
        os.waitpid(pid, 0)
        for path in paths:
            content = path.read_bytes()
            assert content in versions
            seen.add(content)
    assert seen == set(versions)
    assert leftovers(tmp_path), "no kill landed inside a write; the test proved nothing"


def test_temporary_files_left_by_a_killed_writer_are_swept_later(tmp_path: Path) -> None:
    path = tmp_path / "m.py"
    stale = tmp_path / f".m.py.abc123{TEMP_SUFFIX}"
    fresh = tmp_path / f".m.py.def456{TEMP_SUFFIX}"
    stale.write_text("partial")
    fresh.write_text("in flight")
    os.utime(stale, (time.time() - 3600, time.time() - 3600))
    atomic_write(path, "x = 1\n")
    assert not stale.exists() and fresh.exists()
