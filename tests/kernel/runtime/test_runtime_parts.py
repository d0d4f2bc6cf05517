"""`Runtime` is made of parts that own their state: each one works on its own, built from the
parts it needs and nothing else."""

from __future__ import annotations

import sys

import pytest
from kernel_support import Project, src

from liveforge import Runtime
from liveforge.kernel.boundary._policy import CheckSettings
from liveforge.kernel.errors import ProtectedTarget, UnverifiedChange
from liveforge.kernel.files._owncode import ProjectCode
from liveforge.kernel.history._changes import ChangeStatus
from liveforge.kernel.runtime._checks import Checks
from liveforge.kernel.runtime._modules import Modules
from liveforge.kernel.runtime._patching import Patching
from liveforge.kernel.runtime._persist import Persistence
from liveforge.kernel.runtime._protection import Protection
from liveforge.kernel.runtime._rollbacks import Changes


def test_modules_alone_resolve_a_dotted_path_and_track_its_module(project: Project):
    """`Modules` finds the module a dotted path names and keeps its source, with no runtime."""
    mod = project.module("def area(r):\n    return 3 * r * r\n")
    modules = Modules(project.root)
    name, path = modules.split(f"{mod.__name__}.area")
    assert (name, path) == (mod.__name__, ["area"])
    record = modules.record(name)
    assert "return 3 * r * r" in record.source and modules.registry.get(name) is record
    assert modules.label(record) == f"{mod.__name__}.py"


def test_patching_and_changes_without_checks_or_files(project: Project):
    """Patching needs only modules, protection and changes: patch, then undo exactly."""
    mod = project.module("def f():\n    return 1\n")
    modules = Modules(project.root)
    changes = Changes(modules)
    patching = Patching(modules, Protection(modules.code), changes)
    f = mod.f
    change = patching.patch(f"{mod.__name__}.f", "def f():\n    return 2\n")
    assert f() == 2 and changes.history() == [change]
    assert changes.rollback(change.id) == [change]
    assert f() == 1 and change.status is ChangeStatus.ROLLED_BACK


def test_protection_alone_refuses_the_kernel_and_protected_folders(project: Project):
    """`Protection` refuses liveforge's kernel and the folders it was told to protect."""
    mod = project.module("X = 1\n")
    protection = Protection(ProjectCode.of(project.root))
    with pytest.raises(ProtectedTarget):
        protection.check("liveforge.kernel.live._engine.apply", "liveforge.kernel.live._engine")
    protection.check(mod.__name__, mod.__name__)  # not protected yet
    protection.protect(project.root)
    with pytest.raises(ProtectedTarget):
        protection.check(mod.__name__, mod.__name__)
    opted_in = Protection(ProjectCode.of(project.root), allow_kernel_patches=True)
    opted_in.check("liveforge.kernel", "liveforge.kernel")


def test_persistence_alone_refuses_unverified_then_writes_when_forced(project: Project):
    """`Persistence` writes a managed module's memory to its file from modules and a history."""
    mod = project.module("def f():\n    return 1\n")
    modules = Modules(project.root)
    changes = Changes(modules)
    Patching(modules, Protection(modules.code), changes).patch(
        f"{mod.__name__}.f", "def f():\n    return 5\n"
    )
    persistence = Persistence(modules, changes.log)
    with pytest.raises(UnverifiedChange):
        persistence.persist()
    written = persistence.persist(force=True)
    assert written.modules == [mod.__name__]
    assert "return 5" in (project.root / f"{mod.__name__}.py").read_text()
    assert changes.history()[0].status is ChangeStatus.PERSISTED


def test_checks_alone_verify_the_overlay_of_a_modules_part(project: Project):
    """`Checks` runs a sandboxed check carrying what the modules part holds in memory."""
    mod = project.module(
        src("""
        def f():
            return 1
    """)
    )
    modules = Modules(project.root)
    changes = Changes(modules)
    Patching(modules, Protection(modules.code), changes).patch(
        f"{mod.__name__}.f", "def f():\n    return 7\n"
    )
    checks = Checks(modules, changes.log, keep_runs=5, settings=CheckSettings())
    try:
        result = checks.verify(f"from {mod.__name__} import f\nf()", live=False)
    finally:
        checks.close()
    assert result.ok and result.value_repr == "7"
    assert changes.history()[0].status is ChangeStatus.VERIFIED


def test_the_runtime_is_its_parts(project: Project):
    """The facade's state lives in its parts; no part reaches another through the facade."""
    rt = Runtime(project_root=project.root)
    try:
        assert rt.registry is rt.modules.registry
        assert rt.changes.modules is rt.modules and rt.patching.changes is rt.changes
        assert rt.changes.file_writes is rt.file_writes
        assert rt.checks.log is rt.changes.log is rt.persistence.log
        rt.allow_kernel_patches = True
        assert rt.protection.allow_kernel_patches
        assert "rt" in rt.namespace and sys.modules["liveforge"].Runtime is Runtime
    finally:
        rt.close()
