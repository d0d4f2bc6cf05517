"""patch / reload / rollback / history / diff / execute tools give compact summaries."""

from __future__ import annotations

import importlib

import pytest
from framework_tables import HOOKS_MODULE

from liveforge.kernel import ChangeError, Runtime, UnverifiedChange
from liveforge.tools import NoRuntime, using_runtime
from liveforge.tools.changes import diff, history, patch, persist, reload, rollback
from liveforge.tools.running import execute

NEW_AREA = "def area(radius: float) -> float:\n    return 3.0 * radius ** 2\n"


@pytest.fixture
def rt(project):
    runtime = Runtime(project_root=project.root)
    importlib.import_module(f"{project.pkg}.shapes")
    with using_runtime(runtime):
        yield runtime


def test_patch_reports_what_changed_and_that_it_is_unpersisted(project, rt):
    """A patch result names the change, the updated name and the next steps."""
    text = patch(f"{project.pkg}.shapes.area", NEW_AREA)
    assert text.startswith(f"applied c1 function {project.pkg}.shapes.area [applied] ~area")
    assert text.endswith("in memory only: verify or run_tests, then persist")
    assert importlib.import_module(f"{project.pkg}.shapes").area(1.0) == 3.0


def test_patch_of_a_new_module_says_created(project, rt):
    """Patching with module=True creates a module that does not exist, in memory."""
    assert patch(f"{project.pkg}.brand_new", "X = 1\n", module=True).startswith(
        "created c1 virtual-module"
    )


def test_history_and_rollback(project, rt):
    """history lists changes one per line; rollback undoes the newest and says which."""
    patch(f"{project.pkg}.shapes.area", NEW_AREA)
    patch(f"{project.pkg}.shapes.UNIT", "UNIT = 2.0\n")
    assert history().splitlines()[0].startswith(f"c1 function {project.pkg}.shapes.area")
    assert history(limit=1).splitlines()[0] == "(1 older changes not shown; pass a larger limit)"
    assert rollback().splitlines()[1].startswith("c2 ")
    assert "[rolled_back]" in history().splitlines()[1]


def test_rollback_of_unknown_change_raises_for_the_toolbox(project, rt):
    """A bad change id raises ChangeError (the toolbox turns it into an error result)."""
    patch(f"{project.pkg}.shapes.area", NEW_AREA)
    with pytest.raises(ChangeError):
        rollback("c99")


def test_diff_shows_memory_against_disk(project, rt):
    """diff is the unified diff of the patched module; no changes says so."""
    assert diff() == "no changes"
    patch(f"{project.pkg}.shapes.area", NEW_AREA)
    text = diff(f"{project.pkg}.shapes")
    assert "+    return 3.0 * radius ** 2" in text and text.startswith("---")


def test_reload_restores_the_file_version(project, rt):
    """reload with force drops the in-memory change and says what it updated."""
    patch(f"{project.pkg}.shapes.area", NEW_AREA)
    assert "reload" in reload(f"{project.pkg}.shapes", force=True)
    assert importlib.import_module(f"{project.pkg}.shapes").area(1.0) == pytest.approx(3.14)


def test_execute_shows_output_and_value(project, rt):
    """execute returns printed output, the final value and a status line."""
    text = execute(f"import {project.pkg}.shapes as s\nprint('hi')\ns.area(2.0)")
    assert text.splitlines()[:2] == ["hi", "12.56"] and "[ok in" in text


def test_tools_outside_a_call_say_there_is_no_runtime():
    """Calling a tool with no bound runtime raises NoRuntime explaining how to bind one."""
    with pytest.raises(NoRuntime, match="using_runtime"):
        history()


def test_persist_refuses_unverified_changes_then_writes_verified_ones(project, rt):
    """persist needs a passing check; after verify it writes the file and says where."""
    patch(f"{project.pkg}.shapes.area", NEW_AREA)
    with pytest.raises(UnverifiedChange):
        persist()
    try:
        assert rt.verify(f"from {project.pkg}.shapes import area\nassert area(1.0) == 3.0").ok
    finally:
        rt.close()
    path = project.root / project.pkg / "shapes.py"
    assert persist([f"{project.pkg}.shapes"]) == f"wrote {project.pkg}.shapes -> {path}"
    assert "return 3.0 * radius ** 2" in path.read_text()
    assert persist() == "nothing to persist: every managed module matches its file"


def test_reload_of_an_unchanged_file_says_nothing_changed(project, rt):
    """A reload that finds the file equal to memory reports that, not an applied change
    to verify and persist."""
    importlib.import_module(f"{project.pkg}.shapes")
    text = reload(f"{project.pkg}.shapes")
    assert text.startswith(f"{project.pkg}.shapes: nothing changed") and "persist" not in text


def test_rollback_says_what_a_framework_s_table_keeps_and_not_the_patch_s_notes(project, rt):
    """A change adds `@HOOKS.register def audit`; rollback's result names the change, then
    its note: `HOOKS.by_name['audit']` still holds the function, which may still be called
    there, and a restart drops it. Notes the patch itself had are not repeated."""
    project.write("{pkg}/hooks.py", HOOKS_MODULE)
    hooks = importlib.import_module(f"{project.pkg}.hooks")
    patch(f"{project.pkg}.hooks.audit", "@HOOKS.register\ndef audit(x):\n    return x\n")
    rt.history()[-1].notes.append("a note of the patch")
    said = rollback()
    # the note a heap search adds when it unfroze objects depends on what earlier tests in
    # this process froze (gc state is the process's): not this test's subject
    lines = [line for line in said.splitlines()[1:] if "gc.freeze()" not in line]
    assert len(lines) == 2, said
    head, note = lines
    assert head.startswith(f"c1 function {project.pkg}.hooks.audit [rolled_back]")
    assert note.startswith("  note: audit: this change defined it")
    assert f"{project.pkg}.hooks.HOOKS.by_name['audit']" in note
    assert "may still be called there" in note and note.endswith("Restart the program to drop it")
    assert hooks.HOOKS.by_name["audit"](3) == 3 and not hasattr(hooks, "audit")
