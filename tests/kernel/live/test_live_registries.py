"""A registry a decorator fills holds what a fresh import of the new source would: one entry per
function, under the key its decorator now gives, in a fresh import's order, and nothing the
new source no longer registers; rollback restores it exactly. Each test builds a real module
on sys.path."""

from __future__ import annotations

import pytest
from kernel_support import Project, src

from liveforge import Runtime
from liveforge.errors import PatchExecutionError

KEYED = """
    HANDLERS = {}


    def register(name):
        def deco(f):
            HANDLERS[name] = f
            return f
        return deco


    @register("upper")
    def to_upper(s):
        return s.upper()


    @register("lower")
    def to_lower(s):
        return s.lower()
    """


def test_a_registry_keyed_by_a_changed_decorator_argument_keeps_one_entry(
    project: Project, rt: Runtime
) -> None:
    """A decorator registering under its argument: after the key changes, the registry
    holds the live function under the new key only, where the old entry stood (a fresh
    import's keys, in its order); the same key keeps its place. Each rollback restores the
    registry exactly."""
    mod = project.module(KEYED)
    upper, lower = mod.to_upper, mod.to_lower
    change = rt.patch(
        f"{mod.__name__}.to_upper",
        "@register('UP')\ndef to_upper(s):\n    return s.upper() + '!'\n",
    )
    assert list(mod.HANDLERS.items()) == [("UP", upper), ("lower", lower)] and upper("a") == "A!"
    assert (
        "its entry under 'upper', where the old definition stored it, was taken out"
        in (change.notes[0])
    )
    rt.patch(f"{mod.__name__}.to_lower", "@register('lower')\ndef to_lower(s):\n    return s\n")
    assert list(mod.HANDLERS.items()) == [("UP", upper), ("lower", lower)] and lower("A") == "A"
    rt.patch(f"{mod.__name__}.to_upper", "@register('U2')\ndef to_upper(s):\n    return s\n")
    assert list(mod.HANDLERS.items()) == [("U2", upper), ("lower", lower)]
    rt.rollback()
    assert list(mod.HANDLERS.items()) == [("UP", upper), ("lower", lower)] and upper("a") == "A!"
    rt.rollback()
    assert list(mod.HANDLERS.items()) == [("UP", upper), ("lower", lower)] and lower("A") == "a"
    rt.rollback()
    assert list(mod.HANDLERS.items()) == [("upper", upper), ("lower", lower)] and upper("a") == "A"


def test_a_registry_loses_what_the_new_source_no_longer_registers(
    project: Project, rt: Runtime
) -> None:
    """A function whose registering decorator was dropped, or whose definition was removed,
    leaves the registry (a fresh import would not have it there); one that now registers,
    where its old decorator made another kind of object, is in it until rolled back. Each
    rollback restores the registry exactly."""
    mod = project.module(
        src(KEYED) + "\n\nclass Box:\n    def __init__(self, f):\n        self.f = f\n"
    )
    upper, lower, name = mod.to_upper, mod.to_lower, mod.__name__
    change = rt.patch(f"{name}.to_upper", "def to_upper(s):\n    return s.upper()\n")
    assert list(mod.HANDLERS) == ["lower"] and "taken out of" in change.notes[-1]
    rt.patch_module(
        name, rt.source(name).replace('@register("lower")\ndef to_lower', "@Box\ndef to_lower")
    )
    boxed = mod.to_lower
    assert list(mod.HANDLERS) == [] and isinstance(boxed, mod.Box)
    rt.patch(f"{name}.to_lower", "@register('low')\ndef to_lower(s):\n    return s\n")
    assert list(mod.HANDLERS) == ["low"] and mod.HANDLERS["low"] is mod.to_lower
    rt.patch_module(
        name, rt.source(name).replace("@register('low')\ndef to_lower(s):\n    return s\n", "")
    )
    assert mod.HANDLERS == {} and not hasattr(mod, "to_lower")
    rt.rollback()
    assert list(mod.HANDLERS) == ["low"]
    rt.rollback()
    assert mod.HANDLERS == {} and mod.to_lower is boxed
    rt.rollback_to()
    assert list(mod.HANDLERS.items()) == [("upper", upper), ("lower", lower)]


NESTED = """
    class Root:
        def __init_subclass__(cls, **kwargs):
            super().__init_subclass__(**kwargs)
            cls.tag = cls.__name__.lower()


    class Beta:
        class Inner(Root):
            def m(self):
                return 1
    """


def test_a_nested_class_is_not_taken_for_an_entry_of_its_new_outer_class(
    project: Project, rt: Runtime
) -> None:
    """Building the outer class again stores the new nested class in the new outer class's
    namespace: that is not a registry, so no note says a hook stored it there (the hook
    stored nothing; the note says so)."""
    mod = project.module(NESTED)
    inner = mod.Beta.Inner
    # A class attribute added: the classes are built again (a method body alone is not).
    new = (
        src(NESTED)
        .replace("return 1", "return 2")
        .replace("class Inner(Root):", "class Inner(Root):\n        size = 1")
    )
    change = rt.patch_module(mod.__name__, new)
    assert mod.Beta.Inner is inner and inner().m() == 2 and inner.tag == "inner"
    assert not [note for note in change.notes if "also stored by" in note], change.notes
    assert [note for note in change.notes if "stored it in no list, dict or set" in note]


OBJECT_LIST = src(
    """
    class Registry:
        def __init__(self):
            self.entries = []

        def register(self, fn):
            self.entries.append(fn)
            return fn


    REG = Registry()
    """
)


def test_a_function_an_object_s_list_holds_leaves_it_on_rollback_and_removal(
    project: Project, rt: Runtime
) -> None:
    """A decorated function added, which `REG.register` appended to the object's list:
    rolled back, or removed from the source, it leaves the list, as a fresh import has it
    (it used to stay there with no note; only a dict, which may name it, keeps it)."""
    mod = project.module(OBJECT_LIST)
    added = OBJECT_LIST + "\n\n@REG.register\ndef h(x):\n    return x\n"
    rt.patch(f"{mod.__name__}.h", "@REG.register\ndef h(x):\n    return x\n")
    rt.rollback()
    assert mod.REG.entries == [] and not hasattr(mod, "h")
    rt.patch_module(mod.__name__, added)
    change = rt.patch_module(mod.__name__, OBJECT_LIST)
    assert mod.REG.entries == [] == project.module(rt.source(mod.__name__)).REG.entries
    assert any("taken out of" in note for note in change.notes), change.notes
    rt.rollback()
    assert mod.REG.entries == [mod.h]


def test_a_function_whose_decorator_became_memoize_leaves_the_list_it_was_in(
    project: Project, rt: Runtime
) -> None:
    """`@REG.register` becomes toolz's `@memoize`, whose function has toolz's module and
    only `__wrapped__` to tell where it was defined: the live function leaves the list
    the old decorator filled, as a fresh import has it (it used to stay, unnoted: its
    registries were looked for in toolz's module)."""
    source = "import toolz\n\n\n" + OBJECT_LIST + "\n\n@REG.register\ndef h(x):\n    return x\n"
    mod = project.module(source)
    ref = mod.h
    change = rt.patch(f"{mod.__name__}.h", "@toolz.memoize\ndef h(x):\n    return x + 1\n")
    assert mod.REG.entries == [] and ref(1) == mod.h(1) == 2
    assert any("taken out of" in note for note in change.notes), change.notes
    rt.rollback()
    assert mod.REG.entries == [ref] and ref(1) == 1


DISPATCH_AFTER_F = """
    import functools


    def f(x):
        return x


    @functools.singledispatch
    def d(x):
        return ("base", x)


    @d.register
    def _(x: float):
        return ("float", x * 7)


    @d.register
    def _(x: str):
        return ("str", x * 2)


    al = f
    """


def test_overloads_moved_up_keep_each_its_own_function(project: Project, rt: Runtime) -> None:
    """A definition above two `singledispatch` overloads `_` goes, and one after them too:
    the first overload runs again (the name `_` last stood for the second), the second only
    moves up, into the old lines of the first. The first overload's function is found by
    its old lines, not the second's moved one: each type calls its own code, as in a fresh
    import (the `str` overload used to run the `float` code)."""
    mod = project.module(DISPATCH_AFTER_F)
    new = src(DISPATCH_AFTER_F).replace("def f(x):\n    return x\n\n\n", "")
    rt.patch_module(mod.__name__, new.replace("\n\nal = f\n", ""))
    assert (mod.d("ab"), mod.d(1.5), mod.d(5)) == (("str", "abab"), ("float", 10.5), ("base", 5))
    rt.rollback()
    assert (mod.d("ab"), mod.d(1.5), mod.al(3)) == (("str", "abab"), ("float", 10.5), 3)


DISPATCH = """
    import functools


    @functools.singledispatch
    def d(x):
        return ("base", x)


    @d.register
    def _(x: float):
        return ("float", x * 7)


    @d.register
    def _(x: tuple):
        return ("tuple", x * 2)
    """


def test_every_overload_runs_again_and_a_rollback_keeps_them_all(
    project: Project, rt: Runtime
) -> None:
    """A change of `from __future__` flags runs every definition again, both overloads `_`
    included: the first one's new function is merged into the one the registry holds (the
    name `_` holds the second's), so the registry keeps its objects, and rolling back keeps
    every type (the first overload's entry used to be dropped by the rollback)."""
    mod = project.module(DISPATCH)
    before = dict(mod.d.registry)
    rt.patch_module(mod.__name__, "from __future__ import annotations\n" + src(DISPATCH))
    assert mod.d.registry == before and (mod.d(1.5), mod.d((1,))) == (
        ("float", 10.5),
        ("tuple", (1, 1)),
    )
    rt.rollback()
    assert mod.d.registry == before and (mod.d(1.5), mod.d((1,))) == (
        ("float", 10.5),
        ("tuple", (1, 1)),
    )


def test_the_last_overload_removed_while_another_changes_leaves_the_registry(
    project: Project, rt: Runtime
) -> None:
    """The `float` overload's body changes and the `tuple` overload after it goes: the
    registry loses `tuple` and the name `_` holds the `float` overload, as in a fresh import
    (the removed one stayed registered, and named by `_`, since the name still held it when
    the change was made in place); a rollback puts it back."""
    mod = project.module(DISPATCH)
    before = dict(mod.d.registry)
    rt.patch_module(
        mod.__name__, src(DISPATCH).rsplit("\n\n@d.register", 1)[0].replace("x * 7", "x * 3") + "\n"
    )
    assert sorted(t.__name__ for t in mod.d.registry) == ["float", "object"]
    assert (mod.d(1.5), mod.d((1,))) == (("float", 4.5), ("base", (1,)))
    assert mod._ is mod.d.registry[float]
    rt.rollback()
    assert mod.d.registry == before and mod._ is before[tuple] and mod.d((1,)) == ("tuple", (1, 1))


BY_NAME = src(
    """
    class Registry:
        def __init__(self):
            self.entries = []
            self.by_name = {}

        def register(self, fn):
            self.entries.append(fn)
            self.by_name[fn.__name__] = fn
            return fn


    _REG = Registry()
    """
)
ADDED_F = "@_REG.register\ndef f(x):\n    return x + 1\n"


def _by_name_note(notes: list[str]) -> str:
    return next(n for n in notes if n.startswith("f: this change defined it"))


def test_a_function_an_object_s_dict_keeps_after_its_rollback_is_said(
    project: Project, rt: Runtime
) -> None:
    """A change adds `@_REG.register def f`: rolled back, `f` leaves the module and the
    object's list, but stays in `_REG.by_name` (a dict may name it for its framework), where
    a fresh import of the restored source has nothing; the rolled-back change's note names
    the entry, says it may still be called there and that a restart drops it."""
    mod = project.module(BY_NAME)
    change = rt.patch(f"{mod.__name__}.f", ADDED_F)
    assert change.notes == []
    (undone,) = rt.rollback()
    assert undone is change and not hasattr(mod, "f") and mod._REG.entries == []
    assert mod._REG.by_name["f"](1) == 2
    assert project.module(rt.source(mod.__name__))._REG.by_name == {}
    note = _by_name_note(change.notes)
    assert f"{mod.__name__}._REG.by_name['f']" in note
    assert "may still be called there" in note and "Restart the program to drop it" in note


def test_every_way_of_undoing_says_what_an_object_s_dict_keeps(
    project: Project, rt: Runtime
) -> None:
    """The note comes with every undo: a rollback of an earlier change with the later ones,
    a rollback back to a point, and a transaction undone by an exception; a change that
    registered nothing gets none."""
    mod = project.module(BY_NAME)
    name = mod.__name__
    first = rt.patch(f"{name}.f", ADDED_F)
    later = rt.patch(f"{name}.g", "def g():\n    return 2\n")
    assert [c.id for c in rt.rollback(first.id)] == [later.id, first.id]
    assert f"{name}._REG.by_name['f']" in _by_name_note(first.notes) and later.notes == []
    point = rt.patch(f"{name}.g", "def g():\n    return 3\n")
    again = rt.patch(f"{name}.f", ADDED_F)
    assert rt.rollback_to(point.id) == [again]
    assert f"{name}._REG.by_name['f']" in _by_name_note(again.notes)
    with pytest.raises(RuntimeError), rt.transaction():
        inside = rt.patch(f"{name}.f", ADDED_F)
        raise RuntimeError("the block failed")
    assert f"{name}._REG.by_name['f']" in _by_name_note(inside.notes)
    assert not hasattr(mod, "f") and point.notes == []


def test_a_failed_patch_says_what_an_object_s_dict_keeps_of_it(
    project: Project, rt: Runtime
) -> None:
    """New source that registers `f` in `_REG.by_name` and then raises: the module is as it
    was, and the error, which says nothing else changed, names the entry that keeps `f`."""
    mod = project.module(BY_NAME)
    broken = rt.source(mod.__name__) + "\n\n" + ADDED_F + "\n\nBROKEN = 1 // 0\n"
    with pytest.raises(PatchExecutionError) as caught:
        rt.patch_module(mod.__name__, broken)
    message = str(caught.value)
    assert "Nothing was changed but this: f, which the new source defined before it failed" in (
        message
    )
    assert f"{mod.__name__}._REG.by_name['f']" in message and "Restart the program" in message
    assert not hasattr(mod, "f") and mod._REG.entries == [] and rt.history() == []
