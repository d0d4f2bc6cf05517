"""Runtime.persist: validated in-memory source reaches files atomically, and can be undone."""

from __future__ import annotations

import importlib
import inspect
import sys

import pytest

from liveforge import ChangeError, ChangeStatus, PersistConflict, UnsafePath, UnverifiedChange


@pytest.fixture
def pkg(project):
    project.write(f"{project.prefix}pk.m", "def f(x):\n    return x\n")
    return importlib.import_module(f"{project.prefix}pk.m")


def test_unverified_change_is_refused(rt, pkg, project):
    """persist() refuses a change without a passing check since its edit, writing nothing."""
    rt.patch(f"{pkg.__name__}.f", "def f(x):\n    return x + 1\n")
    with pytest.raises(UnverifiedChange, match="verify"):
        rt.persist()
    assert "x + 1" not in project.root.joinpath(f"{project.prefix}pk", "m.py").read_text()


def test_verified_change_is_written_and_marked(rt, pkg, project):
    """After a passing verify, persist writes the file and marks the change persisted."""
    change = rt.patch(f"{pkg.__name__}.f", "def f(x):\n    return x + 1\n")
    assert rt.verify(f"import {pkg.__name__} as m\nassert m.f(1) == 2").ok
    result = rt.persist()
    path = project.root / f"{project.prefix}pk" / "m.py"
    assert path.read_text() == "def f(x):\n    return x + 1\n"
    assert result.modules == [pkg.__name__] and change.status is ChangeStatus.PERSISTED
    assert rt.diff() == "" and rt.reload(pkg.__name__).id == ""


def test_failing_check_does_not_verify(rt, pkg):
    """A failing verify leaves the change unverified, so persist still refuses."""
    rt.patch(f"{pkg.__name__}.f", "def f(x):\n    return x + 1\n")
    assert not rt.verify("assert False").ok
    with pytest.raises(UnverifiedChange):
        rt.persist()


def test_newline_style_and_mode_are_kept(rt, project):
    """A CRLF file with mode 0o640 keeps both after persist."""
    path = project.write(f"{project.prefix}crlf", "")
    path.write_bytes(b"def f():\r\n    return 1\r\n")
    path.chmod(0o640)
    module = importlib.import_module(f"{project.prefix}crlf")
    rt.patch(f"{module.__name__}.f", "def f():\n    return 2\n")
    rt.persist(force=True)
    assert path.read_bytes() == b"def f():\r\n    return 2\r\n"
    assert path.stat().st_mode & 0o777 == 0o640


def test_conflict_on_disk_edit_shows_diff(rt, pkg, project):
    """A file edited on disk since it was loaded is not overwritten; the error has a diff."""
    rt.patch(f"{pkg.__name__}.f", "def f(x):\n    return 0\n")
    rt.verify("1")
    path = project.root / f"{project.prefix}pk" / "m.py"
    path.write_text("def f(x):\n    return 'someone else'\n")
    with pytest.raises(PersistConflict) as info:
        rt.persist()
    assert "+    return 'someone else'" in info.value.diff
    assert "someone else" in path.read_text()


def test_virtual_module_is_written_with_packages_and_points_at_file(rt, project):
    """A virtual module lands at the path its name maps to; code and inspect use the file."""
    name = f"{project.prefix}newpkg.tool"
    rt.patch_module(name, "def g():\n    return 'v'\n")
    rt.persist(force=True)
    module = sys.modules[name]
    path = project.root / f"{project.prefix}newpkg" / "tool.py"
    assert path.read_text() == "def g():\n    return 'v'\n"
    assert (path.parent / "__init__.py").exists()
    assert module.__file__ == str(path) and module.g.__code__.co_filename == str(path)
    assert inspect.getsourcefile(module.g) == str(path)
    assert not rt.registry.get(name).virtual and rt.reload(name).id == ""


def test_unpersist_restores_files_and_keeps_memory(rt, pkg, project):
    """unpersist() puts the old file back; the change is in memory, unpersisted again."""
    change = rt.patch(f"{pkg.__name__}.f", "def f(x):\n    return 5\n")
    rt.verify("1")
    rt.persist()
    rt.unpersist()
    path = project.root / f"{project.prefix}pk" / "m.py"
    assert path.read_text() == "def f(x):\n    return x\n"
    assert pkg.f(0) == 5 and change.status is ChangeStatus.VERIFIED and rt.diff()


def test_persist_with_nothing_to_write_does_not_hide_the_last_persist(rt, pkg, project):
    """A persist that writes nothing leaves nothing to undo: unpersist() still undoes the
    last persist that wrote files."""
    rt.patch(f"{pkg.__name__}.f", "def f(x):\n    return 5\n")
    rt.persist(force=True)
    assert rt.persist().modules == []
    assert rt.unpersist().modules == [pkg.__name__]
    path = project.root / f"{project.prefix}pk" / "m.py"
    assert path.read_text() == "def f(x):\n    return x\n"


def test_unpersist_of_new_module_removes_its_file(rt, project):
    """Undoing the persist of a once-virtual module deletes its file; it is virtual again."""
    name = f"{project.prefix}gone.tool"
    rt.patch_module(name, "X = 1\n")
    rt.persist(force=True)
    rt.unpersist()
    assert not (project.root / f"{project.prefix}gone").exists()
    assert rt.registry.get(name).virtual and sys.modules[name].X == 1


def test_module_outside_project_root_is_refused(rt, tmp_path_factory):
    """A managed module whose file is outside the project root is never written; the error
    names the module and what to do."""
    elsewhere = tmp_path_factory.mktemp("elsewhere")
    (elsewhere / "outside_mod_lf.py").write_text("def f():\n    return 1\n")
    sys.path.insert(0, str(elsewhere))
    try:
        module = importlib.import_module("outside_mod_lf")
        rt.patch("outside_mod_lf.f", "def f():\n    return 2\n", outside_project=True)
        with pytest.raises(UnsafePath, match="outside the project root") as info:
            rt.persist(force=True)
        assert info.value.module == "outside_mod_lf" and "roll it back" in str(info.value)
        assert (elsewhere / "outside_mod_lf.py").read_text() == "def f():\n    return 1\n"
        assert module.f() == 2
    finally:
        sys.path.remove(str(elsewhere))
        sys.modules.pop("outside_mod_lf", None)


def test_persist_guard_runs_even_when_forced(rt, pkg, project):
    """A persist guard sees the modules to write and can refuse, force or not."""
    seen = []

    def guard(modules: list[str]) -> None:
        seen.append(modules)
        raise UnverifiedChange("refused by policy")

    rt.add_persist_guard(guard)
    rt.patch(f"{pkg.__name__}.f", "def f(x):\n    return 9\n")
    with pytest.raises(UnverifiedChange, match="policy"):
        rt.persist(force=True)
    assert seen == [[pkg.__name__]]
    rt.remove_persist_guard(guard)
    rt.persist(force=True)
    assert "return 9" in (project.root / f"{project.prefix}pk" / "m.py").read_text()


def test_rollback_of_a_persisted_new_module_is_refused_whole(rt, pkg, project):
    """Rolling back the creation of a module that was since persisted would orphan its file:
    refused before anything is undone; after unpersist() it rolls back."""
    name = f"{project.prefix}fresh_mod"
    rt.patch_module(name, "X = 1\n")
    rt.persist(force=True)
    other = rt.patch(f"{pkg.__name__}.f", "def f(x):\n    return 9\n")
    with pytest.raises(ChangeError, match="unpersist"):
        rt.rollback_to()
    assert other.status is not ChangeStatus.ROLLED_BACK and sys.modules[name].X == 1
    rt.unpersist()
    rt.rollback_to()
    assert name not in sys.modules and not (project.root / f"{name}.py").exists()
