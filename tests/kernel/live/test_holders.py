"""Who holds an object, in words (`_holders.describe`): module attributes by name, containers
by kind and by the module attribute that holds them. Several objects looked up with one
search of the heap (`describe_each`) are named as each one alone would be."""

from __future__ import annotations

import gc
import sys
from collections.abc import Iterator

import pytest
from kernel_support import Project

from liveforge import Runtime
from liveforge.kernel.live import _holders

HELD = """
    import functools


    def f():
        pass


    def g():
        pass


    def make(value):
        def inner():
            return value
        return inner


    REGISTRY = [f, g]
    BY_NAME = {"g": g}
    LATER = functools.partial(g, 1)
    KEEPS_F = make(f)
"""


def test_holders_are_named_one_by_one_and_all_at_once_alike(project: Project) -> None:
    mod = project.module(HELD)
    name = mod.__name__
    each = _holders.describe_each((mod.f, mod.g, mod.f))
    assert each[0] == ["a closure cell", f"{name}.REGISTRY (a list)", f"{name}.f"]
    assert each[1] == [
        "a functools.partial",
        f"{name}.BY_NAME (a dict)",
        f"{name}.REGISTRY (a list)",
        f"{name}.g",
    ]
    assert each == [_holders.describe(mod.f), _holders.describe(mod.g), each[0]]


def test_skipped_holders_are_left_out(project: Project) -> None:
    mod = project.module(HELD)
    assert _holders.describe_each((mod.g,), [mod.REGISTRY, mod.BY_NAME, mod.LATER]) == [
        [f"{mod.__name__}.g"]
    ]


FROZEN = """
    def maker(k):
        def made(x):
            return x + k
        return made


    MADE = [maker(i) for i in range(3)]
    HANDLERS = {}


    def register(name):
        def deco(f):
            HANDLERS[name] = f
            return f
        return deco


    @register("upper")
    def to_upper(s):
        return s.upper()
"""


@pytest.fixture
def frozen() -> Iterator[None]:
    """The test process's objects frozen (`gc.freeze()`), as a server that forks its
    workers, or liveforge's gateway, leaves them; unfrozen again after the test."""
    gc.collect()
    gc.freeze()
    try:
        yield
    finally:
        gc.unfreeze()


def test_what_frozen_objects_hold_is_found_and_the_thaw_is_said(
    project: Project, rt: Runtime, frozen: None
) -> None:
    """Closures and a registry made before the program froze its objects are invisible to
    `gc.get_referrers`: the search unfreezes them first, so they take the new code, and the
    change says the objects were unfrozen (the collector visits them again)."""
    mod = project.module(FROZEN)
    closure, upper = mod.MADE[1], mod.to_upper
    gc.freeze()  # the module's objects too
    assert gc.get_freeze_count() > 0
    change = rt.patch(
        f"{mod.__name__}.maker",
        "def maker(k):\n    def made(x):\n        return x + k + 100\n    return made\n",
    )
    assert closure(1) == 102
    assert gc.get_freeze_count() == 0
    [note] = [n for n in change.notes if "gc.freeze()" in n]
    assert note.startswith("the program had frozen ") and "were unfrozen" in note
    gc.freeze()
    change = rt.patch(
        f"{mod.__name__}.to_upper", "@register('UP')\ndef to_upper(s):\n    return s\n"
    )
    assert mod.HANDLERS == {"UP": upper} and upper("a") == "a"
    assert any("gc.freeze()" in n for n in change.notes), change.notes
    # nothing frozen, nothing said
    change = rt.patch(
        f"{mod.__name__}.to_upper", "@register('UP')\ndef to_upper(s):\n    return s * 2\n"
    )
    assert not any("gc.freeze()" in n for n in change.notes)


def test_a_rollback_that_unfreezes_says_so_on_the_change_it_rolled_back(
    project: Project, rt: Runtime, frozen: None
) -> None:
    """The note goes with the operation whose search unfroze the objects: a rollback's own
    search is said on the change it rolled back, never on a later change."""
    mod = project.module(FROZEN)
    closure = mod.MADE[0]
    patched = rt.patch(
        f"{mod.__name__}.maker",
        "def maker(k):\n    def made(x):\n        return x + k + 100\n    return made\n",
    )
    assert closure(1) == 101 and any("gc.freeze()" in n for n in patched.notes)
    said = len(patched.notes)
    gc.freeze()
    [undone] = rt.rollback()
    assert undone is patched and closure(1) == 1
    unfroze = gc.get_freeze_count() == 0
    assert undone.rollback_notes == undone.notes[said:]
    assert any("gc.freeze()" in n for n in undone.rollback_notes) == unfroze
    change = rt.patch(
        f"{mod.__name__}.maker",
        "def maker(k):\n    def made(x):\n        return x + k + 7\n    return made\n",
    )
    assert closure(1) == 8
    assert any("gc.freeze()" in n for n in change.notes) == (not unfroze), change.notes


def test_what_liveforge_froze_itself_is_unfrozen_without_a_note(
    project: Project, rt: Runtime, frozen: None
) -> None:
    """liveforge's own servers freeze what their startup made (`freeze_own`): a search
    unfreezes those too, but the note counts only what the program froze after."""
    mod = project.module(FROZEN)
    closure = mod.MADE[2]
    _holders.freeze_own()
    change = rt.patch(
        f"{mod.__name__}.maker",
        "def maker(k):\n    def made(x):\n        return x + k + 100\n    return made\n",
    )
    assert closure(1) == 103 and gc.get_freeze_count() == 0
    assert not any("gc.freeze()" in n for n in change.notes), change.notes
    _holders.freeze_own()
    made = [mod.maker(5)]  # made after liveforge's freeze, frozen by the program
    gc.freeze()
    change = rt.patch(
        f"{mod.__name__}.maker",
        "def maker(k):\n    def made(x):\n        return x + k\n    return made\n",
    )
    assert made[0](1) == 6 and closure(1) == 3
    [note] = [n for n in change.notes if "gc.freeze()" in n]
    frozen_by_program = int(note.split("frozen ")[1].split(" objects")[0].replace(",", ""))
    assert 0 < frozen_by_program < 1000, note


@pytest.mark.skipif(sys.version_info[:2] != (3, 12), reason="CPython 3.12 parks immortals")
def test_immortal_objects_a_collection_parks_are_not_said_to_be_the_programs(
    project: Project, rt: Runtime
) -> None:
    """CPython 3.12 moves its immortal objects into the permanent generation whenever a full
    collection visits them, so `gc.get_freeze_count()` is not 0 again after one: a search
    after that unfreezes them, but says nothing (the program froze nothing)."""
    mod = project.module(FROZEN)
    closure = mod.MADE[0]
    first = rt.patch(
        f"{mod.__name__}.maker",
        "def maker(k):\n    def made(x):\n        return x + k + 100\n    return made\n",
    )
    gc.collect()
    assert gc.get_freeze_count() > 0  # parked again, by the interpreter
    again = rt.patch(
        f"{mod.__name__}.maker",
        "def maker(k):\n    def made(x):\n        return x + k + 7\n    return made\n",
    )
    assert closure(1) == 8 and gc.get_freeze_count() == 0
    for change in (first, again):
        assert not any("gc.freeze()" in n for n in change.notes), change.notes
