"""Who holds an object, in words (`_holders.describe`): module attributes by name, containers
by kind and by the module attribute that holds them. Several objects looked up with one
search of the heap (`describe_each`) are named as each one alone would be."""

from __future__ import annotations

from kernel_support import Project

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
