"""The kernel's self-patch safety net and protection by file location, on a plain runtime."""

from __future__ import annotations

import sys

import pytest
from framework_tables import HOOKS_MODULE

import liveforge.kernel.history._safety
from liveforge import ChangeStatus, ProtectedTarget
from liveforge.kernel.history._safety import SafetyNet

BODY = "def f():\n    return 'original'\n"


def _status(rt, change_id: str) -> ChangeStatus:
    return next(c.status for c in rt.history() if c.id == change_id)


def test_the_kernel_is_protected_under_any_import_name(rt):
    """A kernel module registered under another name is still refused: the check is by file."""
    sys.modules["kernel_alias_for_test"] = liveforge.kernel.history._safety
    try:
        with pytest.raises(ProtectedTarget, match="protected file"):
            rt.patch("kernel_alias_for_test.watched", "def watched(m, p):\n    return False\n")
        with pytest.raises(ProtectedTarget):
            rt.patch_module("kernel_alias_for_test", "")
    finally:
        del sys.modules["kernel_alias_for_test"]
    assert liveforge.kernel.history._safety.watched("a.b", ("a.",))


def test_protect_refuses_the_modules_of_a_file_or_folder(rt, project):
    """`protect(path)` covers the modules loaded from it and leaves the others patchable."""
    guarded, free = project.module(BODY), project.module(BODY)
    rt.protect(guarded.__file__)
    with pytest.raises(ProtectedTarget, match="protected file") as caught:
        rt.patch(f"{guarded.__name__}.f", "def f():\n    return 'x'\n")
    assert caught.value.target == f"{guarded.__name__}.f" and guarded.f() == "original"
    rt.patch(f"{free.__name__}.f", "def f():\n    return 'x'\n")
    assert free.f() == "x"


def test_a_fault_rolls_back_what_is_on_probation_and_nothing_else(rt, project):
    """Changes before `begin` are not watched; changes during it are undone by `rescue`,
    which names the fault; with nothing on probation `rescue` returns None."""
    mod = project.module(BODY)
    net = SafetyNet(rt, (project.prefix,))
    before = rt.patch(f"{mod.__name__}.f", "def f():\n    return 'before'\n")
    net.begin()
    during = rt.patch(f"{mod.__name__}.f", "def f():\n    return 'during'\n")
    try:
        raise ValueError("the loop broke")
    except ValueError as fault:
        rescue = net.rescue(fault)
    assert rescue is not None and rescue.change_ids == (during.id,)
    assert rescue.reason.startswith("ValueError: the loop broke")
    assert mod.f() == "before" and _status(rt, before.id) is ChangeStatus.APPLIED
    assert net.rescue(ValueError("again")) is None


def test_probation_ends_after_a_whole_period_and_everything_undoes_the_rest(rt, project):
    """A change made during a period is confirmed only by the next clean one;
    `rescue(everything=True)` undoes confirmed changes too, newest first."""
    mod, other = project.module(BODY), project.module(BODY)
    net = SafetyNet(rt, (project.prefix,))
    net.begin()
    first = rt.patch(f"{mod.__name__}.f", "def f():\n    return 'first'\n")
    assert net.confirm() == [] and net.probation == [first.id]
    net.begin()
    assert net.confirm() == [first.id] and net.confirmed == [first.id]
    net.begin()
    second = rt.patch(f"{other.__name__}.f", "def f():\n    return 'second'\n")
    rescue = net.rescue(RuntimeError("x"), everything=True)
    assert rescue is not None and set(rescue.change_ids) == {first.id, second.id}
    assert mod.f() == other.f() == "original"
    assert net.probation == net.confirmed == []


def test_unwatched_modules_and_reloads_are_never_on_probation(rt, project):
    """Only modules under the prefixes count, and a reload from disk is not a patch."""
    mod = project.module(BODY)
    net = SafetyNet(rt, ("somewhere.else.",))
    net.begin()
    rt.patch(f"{mod.__name__}.f", "def f():\n    return 'x'\n")
    assert net.scan() == [] and net.rescue(RuntimeError("x")) is None
    watching = SafetyNet(rt, (project.prefix,))
    watching.begin()
    rt.rollback()
    rt.reload(mod.__name__)
    assert watching.scan() == []


def test_a_rescue_says_what_a_framework_s_table_keeps(rt, project):
    """A change on probation added `@HOOKS.register def audit`: the rescue rolls it back and
    carries the rollback's note (`HOOKS.by_name['audit']` still holds it), and what the
    model is told of the rescue repeats it."""
    from liveforge.declarations.agent import rolled_back_note

    mod = project.module(HOOKS_MODULE)
    net = SafetyNet(rt, (project.prefix,))
    net.begin()
    rt.patch(f"{mod.__name__}.audit", "@HOOKS.register\ndef audit(x):\n    return x\n")
    rescue = net.rescue(RuntimeError("the loop broke"))
    assert rescue is not None and not hasattr(mod, "audit") and "audit" in mod.HOOKS.by_name
    # the note a heap search adds when it unfroze objects depends on what earlier tests in
    # this process froze (gc state is the process's): not this test's subject
    notes = [n for n in rescue.notes if "gc.freeze()" not in n]
    assert len(notes) == 1, rescue.notes
    (note,) = notes
    assert note.startswith("audit: this change defined it")
    assert f"{mod.__name__}.HOOKS.by_name['audit']" in note and "Restart the program" in note
    said = rolled_back_note(rescue)  # every note of the rescue, each on a line of its own
    assert f"\nNote: {note}" in said and said.count("\nNote: ") == len(rescue.notes), said
