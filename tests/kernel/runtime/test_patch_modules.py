"""Whole-module patches, virtual modules, reload, rollback, transactions and protection."""

from __future__ import annotations

import ast
import importlib
import inspect
import linecache
import sys

import pytest
from kernel_support import src

import liveforge.kernel.live._engine
from liveforge import (
    ChangeError,
    ChangeStatus,
    PatchExecutionError,
    ProtectedTarget,
    Runtime,
    TargetNotFound,
    UnpersistedChanges,
)

BASE = src("""
    CALLS = []
    CALLS.append("imported")
    CACHE = {}
    LIMIT = 3

    def f():
        return "f1"

    def g():
        return "g1"

    class K:
        pass
""")


@pytest.fixture
def mod(project):
    return project.module(BASE)


def test_module_state_survives_when_other_definitions_change(rt, mod):
    """A cache dict keeps its contents when a function in the module is changed."""
    mod.CACHE["k"] = 1
    rt.patch_module(mod.__name__, BASE.replace('"f1"', '"f2"'))
    assert mod.CACHE == {"k": 1} and mod.f() == "f2"


def test_unchanged_top_level_side_effects_do_not_rerun(rt, mod):
    """Statements whose text is unchanged are not executed again."""
    rt.patch_module(mod.__name__, BASE.replace('"g1"', '"g2"'))
    assert mod.CALLS == ["imported"]


def test_changed_top_level_statement_runs(rt, mod):
    """A changed top-level statement is executed."""
    rt.patch_module(mod.__name__, BASE.replace("LIMIT = 3", "LIMIT = 4"))
    assert mod.LIMIT == 4


def test_unchanged_functions_keep_identity_in_module_patch(rt, mod):
    """A whole-module patch keeps every function object that still exists."""
    f, g = mod.f, mod.g
    rt.patch_module(mod.__name__, BASE.replace('"f1"', '"f3"'))
    assert mod.f is f and mod.g is g and f() == "f3"


def test_names_removed_from_source_are_removed(rt, mod):
    """A function and a constant deleted from the source disappear from the module."""
    change = rt.patch_module(
        mod.__name__, BASE.replace('def g():\n    return "g1"\n', "").replace("LIMIT = 3\n", "")
    )
    assert not hasattr(mod, "g") and not hasattr(mod, "LIMIT")
    assert sorted(change.removed) == ["LIMIT", "g"]


def test_future_annotations_are_respected(rt, project):
    """With `from __future__ import annotations`, patched annotations stay strings."""
    m = project.module(
        "from __future__ import annotations\n\ndef f(x: int) -> Foo:\n    return x\n"
    )
    rt.patch(f"{m.__name__}.f", "def f(x: Bar) -> Baz:\n    return x\n")
    assert m.f.__annotations__ == {"x": "Bar", "return": "Baz"}


def test_exception_in_module_patch_restores_everything(rt, mod):
    """A later statement raising undoes updates made by earlier statements of the patch."""
    f = mod.f
    broken = BASE.replace('"f1"', '"f9"') + "\nraise RuntimeError('late')\n"
    with pytest.raises(PatchExecutionError, match="RuntimeError: late"):
        rt.patch_module(mod.__name__, broken)
    assert f() == "f1" and mod.f is f and rt.source(mod.__name__) == BASE
    assert inspect.getsource(mod.f) == 'def f():\n    return "f1"\n'


def test_virtual_module_with_virtual_parents(rt, project):
    """A module that exists nowhere is created in memory, with its parent packages."""
    name = f"virt_{project.prefix}pkg.sub.tool"
    change = rt.patch_module(name, "def run():\n    return 'virtual'\n")
    module = importlib.import_module(name)
    assert module.run() == "virtual" and change.kind == "virtual-module"
    assert sys.modules[name.rsplit(".", 1)[0]].tool is module
    assert inspect.getsource(module.run) == "def run():\n    return 'virtual'\n"
    assert rt.registry.get(name).virtual


def test_failed_virtual_module_leaves_nothing_behind(rt, project):
    """A virtual module whose source raises is not created, nor are its parents."""
    name = f"virt_{project.prefix}broken.mod"
    with pytest.raises(PatchExecutionError):
        rt.patch_module(name, "x = 1 / 0\n")
    assert name not in sys.modules and name.split(".")[0] not in sys.modules


def test_virtual_module_linecache_heals_through_loader(rt, project):
    """After linecache is cleared, the virtual module's loader serves its source again."""
    name = f"virt_{project.prefix}heal"
    rt.patch_module(name, "def h():\n    return 1\n")
    linecache.clearcache()
    assert inspect.getsource(sys.modules[name].h) == "def h():\n    return 1\n"


def test_reload_applies_the_file_in_place(rt, mod, project):
    """reload() runs the file's new text with the same in-place semantics."""
    f = mod.f
    (project.root / f"{mod.__name__}.py").write_text(BASE.replace('"f1"', '"disk"'))
    rt.reload(mod.__name__)
    assert f() == "disk" and mod.CALLS == ["imported"]


def test_reload_skip_takes_statements_into_the_source_without_running_them(rt, mod, project):
    """reload(skip=...) applies the changed definitions, leaves the chosen changed
    statements unexecuted, names them in the notes, and the source is the file's."""
    new = BASE.replace('"f1"', '"disk"').replace(
        'CALLS.append("imported")', 'CALLS.append("again")'
    )
    (project.root / f"{mod.__name__}.py").write_text(new)
    change = rt.reload(mod.__name__, skip=lambda node: isinstance(node, ast.Expr))
    assert mod.f() == "disk" and mod.CALLS == ["imported"]
    assert change.notes == ['not re-run: line 2 `CALLS.append("again")`']
    assert rt.source(mod.__name__) == new and rt.diff() == ""


def test_reload_skip_keeps_the_state_a_skipped_loop_made(rt, project):
    """A skipped loop that binds a name is no part of the order of binding: the unchanged
    `n = 0` before it does not run again, so the count the loop made stays."""
    first = "n = 0\nfor _ in range(3):\n    n += 1\n\n\ndef f():\n    return n\n"
    mod = project.module(first)
    rt.source(mod.__name__)
    (project.root / f"{mod.__name__}.py").write_text(
        first.replace("range(3)", "range(5)").replace("return n", "return n * 10")
    )
    change = rt.reload(mod.__name__, skip=lambda node: isinstance(node, ast.For))
    assert mod.n == 3 and mod.f() == 30
    assert change.updated == ["f"] and change.notes == ["not re-run: line 2 `for _ in range(5):`"]


def test_reload_refuses_to_drop_unpersisted_changes(rt, mod):
    """reload() raises UnpersistedChanges when memory differs from disk; force overrides."""
    change = rt.patch(f"{mod.__name__}.f", "def f():\n    return 'mem'\n")
    with pytest.raises(UnpersistedChanges, match=change.id):
        rt.reload(mod.__name__)
    assert mod.f() == "mem"
    rt.reload(mod.__name__, force=True)
    assert mod.f() == "f1" and change.status is ChangeStatus.ROLLED_BACK


def test_reload_dependents_rebinds_from_imports(rt, mod, project):
    """With dependents=True a `from mod import LIMIT` elsewhere sees the new constant."""
    user = project.module(f"from {mod.__name__} import LIMIT\n\ndef get():\n    return LIMIT\n")
    rt.source(user.__name__)  # the dependent is managed
    (project.root / f"{mod.__name__}.py").write_text(BASE.replace("LIMIT = 3", "LIMIT = 8"))
    change = rt.reload(mod.__name__, dependents=True)
    assert user.get() == 8 and any("LIMIT" in n for n in change.notes)


def test_reload_dependents_rebinds_modules_the_runtime_never_touched(rt, mod, project):
    """dependents=True also re-binds `from mod import LIMIT` in a module the runtime has not
    managed yet, and leaves a module that merely holds an equal value alone."""
    user = project.module(f"from {mod.__name__} import LIMIT as CAP\n")
    bystander = project.module("OTHER = 3\n")
    (project.root / f"{mod.__name__}.py").write_text(BASE.replace("LIMIT = 3", "LIMIT = 8"))
    rt.reload(mod.__name__, dependents=True)
    assert user.CAP == 8 and bystander.OTHER == 3


def test_rollback_restores_exact_previous_state(rt, mod):
    """rollback() undoes the newest change: behaviour and source as before."""
    f = mod.f
    rt.patch(f"{mod.__name__}.f", "def f():\n    return 'x'\n")
    undone = rt.rollback()
    assert f() == "f1" and rt.source(mod.__name__) == BASE
    assert undone[0].status is ChangeStatus.ROLLED_BACK and rt.diff() == ""


def test_rollback_by_id_undoes_later_changes_of_that_module(rt, mod):
    """Rolling back an earlier change also rolls back later changes of the same module."""
    first = rt.patch(f"{mod.__name__}.f", "def f():\n    return 'a'\n")
    second = rt.patch(f"{mod.__name__}.g", "def g():\n    return 'b'\n")
    undone = rt.rollback(first.id)
    assert [c.id for c in undone] == [second.id, first.id]
    assert mod.f() == "f1" and mod.g() == "g1"


def test_rollback_to_a_point(rt, mod):
    """rollback_to(id) keeps that change and undoes everything after it."""
    keep = rt.patch(f"{mod.__name__}.f", "def f():\n    return 'keep'\n")
    rt.patch(f"{mod.__name__}.g", "def g():\n    return 'drop'\n")
    rt.rollback_to(keep.id)
    assert mod.f() == "keep" and mod.g() == "g1"


def test_rollback_of_virtual_module_removes_it(rt, project):
    """Rolling back the change that created a virtual module removes the module."""
    name = f"virt_{project.prefix}gone"
    rt.patch_module(f"{name}.inner", "X = 1\n")
    rt.rollback()
    assert f"{name}.inner" not in sys.modules and rt.registry.get(f"{name}.inner") is None
    assert name not in sys.modules and rt.registry.dirty() == []


def test_unknown_change_id_is_a_clear_error(rt, mod):
    """rollback of an unknown id names the known ids."""
    rt.patch(f"{mod.__name__}.f", "def f():\n    return 1\n")
    with pytest.raises(ChangeError, match="recent changes: c1"):
        rt.rollback("c99")


def test_transaction_undoes_all_patches_on_failure(rt, mod, project):
    """A failing step inside a transaction rolls back the steps before it, across modules."""
    other = project.module("def h():\n    return 'h1'\n")
    with pytest.raises(TargetNotFound), rt.transaction():
        rt.patch(f"{mod.__name__}.f", "def f():\n    return 'tx'\n")
        rt.patch(f"{other.__name__}.h", "def h():\n    return 'tx'\n")
        rt.patch(f"{mod.__name__}.Nope.x", "def x(self):\n    pass\n")
    assert mod.f() == "f1" and other.h() == "h1"


def test_transaction_keeps_patches_on_success(rt, mod):
    """A transaction that completes keeps its changes and lists them."""
    with rt.transaction() as changes:
        rt.patch(f"{mod.__name__}.f", "def f():\n    return 'ok'\n")
    assert mod.f() == "ok" and len(changes) == 1


def test_kernel_is_protected_by_default(rt):
    """Patching liveforge.kernel without opt-in raises ProtectedTarget naming the opt-in."""
    with pytest.raises(ProtectedTarget, match="allow_kernel_patches=True"):
        rt.patch(
            "liveforge.kernel.live._engine._describe", "def _describe(exc, f):\n    return ''\n"
        )


def test_kernel_patch_allowed_with_opt_in(project):
    """With allow_kernel_patches=True the kernel can be patched (and rolled back)."""
    rt = Runtime(project.root, allow_kernel_patches=True)
    original = rt.source("liveforge.kernel.live._engine._failing_line")
    rt.patch(
        "liveforge.kernel.live._engine._failing_line",
        "def _failing_line(exc, filename):\n    return -1\n",
    )
    try:
        assert liveforge.kernel.live._engine._failing_line(None, "") == -1
    finally:
        rt.rollback()
    assert rt.source("liveforge.kernel.live._engine._failing_line") == original


def test_target_not_found_lists_close_matches(rt, mod):
    """A misspelt name gets suggestions."""
    with pytest.raises(TargetNotFound) as info:
        rt.patch(f"{mod.__name__}.K.missing.deeper", "def deeper():\n    pass\n")
    assert "was not found" in str(info.value)
    with pytest.raises(TargetNotFound, match="close matches") as info:
        rt.source(f"{mod.__name__}.ff")


def test_source_of_definition_and_module(rt, mod):
    """source() returns a definition's exact in-memory text."""
    assert rt.source(f"{mod.__name__}.g") == 'def g():\n    return "g1"\n'
    assert rt.source(mod.__name__) == BASE


def test_diff_shows_memory_against_disk(rt, mod):
    """diff() is a unified diff of in-memory source against the file."""
    rt.patch(f"{mod.__name__}.f", "def f():\n    return 'd'\n")
    text = rt.diff()
    assert f"a/{mod.__name__}.py" in text and "+    return 'd'" in text
    assert '-    return "f1"' in text


def test_change_records_what_happened(rt, mod):
    """A Change carries id, target, kind, before/after, and the names it touched."""
    change = rt.patch(f"{mod.__name__}.f", "def f():\n    return 'c'\n")
    assert change.id == "c1" and change.kind == "function" and change.module == mod.__name__
    assert change.before == BASE and "return 'c'" in change.after
    assert change.updated == ["f"] and change.target_before == 'def f():\n    return "f1"\n'
    assert "+    return 'c'" in change.diff() and rt.history() == [change]


def test_reload_of_module_imported_before_the_runtime_applies_a_later_file_edit(project):
    """A module imported (and its file edited) before any Runtime existed: reload makes the
    running code match the file, even though liveforge first reads the file after the edit."""
    module = project.module("def f():\n    return 'imported'\n")
    path = project.root / f"{module.__name__}.py"
    path.write_text("def f():\n    return 'edited before the runtime'\n")
    fresh = Runtime(project.root)
    f = module.f
    change = fresh.reload(module.__name__)
    assert f() == "edited before the runtime" and change.updated == ["f"]
    assert fresh.reload(module.__name__).id == ""
