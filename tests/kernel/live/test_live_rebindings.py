"""A name bound by several statements — a `def` and a later `f = deco(f)`, several `def _`
overloads of a `singledispatch` function — holds after a change what a fresh import of the
new source holds; each statement's new object is merged into what that statement made."""

from __future__ import annotations

import functools
import inspect

import pytest
from kernel_support import Project, src

from liveforge import Runtime

DECO = src(
    """
    import functools


    def deco(fn):
        @functools.wraps(fn)
        def wrapper(*args):
            return ("deco", fn(*args))
        return wrapper


    def f(x):
        return x
    """
)


def test_wrapping_a_function_again_after_its_definition_wraps_it_once(
    project: Project, rt: Runtime
) -> None:
    """`f = deco(f)` added after `def f`: f is the wrapper around the function (it used to
    become a wrapper around itself: RecursionError); a reference taken before is named in
    the change's note, as it still runs the unwrapped function."""
    mod = project.module(DECO)
    kept = mod.f
    change = rt.patch_module(mod.__name__, DECO + "\nf = deco(f)\n")
    assert mod.f(1) == ("deco", 1) and kept(1) == 1
    assert any("made around the old function" in n for n in change.notes), change.notes
    rt.rollback()
    assert mod.f is kept and mod.f(1) == 1


def test_a_definition_wrapped_by_a_later_statement_keeps_its_wrapper(
    project: Project, rt: Runtime
) -> None:
    """`def f` changed while the later `f = deco(f)` did not: f stays the wrapper, which
    runs the new body (the wrapper used to be overwritten with the plain function)."""
    source = DECO + "\nf = deco(f)\n"
    mod = project.module(source)
    kept = mod.f
    rt.patch_module(mod.__name__, source.replace("return x\n", "return x + 1\n"))
    assert mod.f is kept and mod.f(1) == ("deco", 2)
    rt.rollback()
    assert mod.f(1) == ("deco", 1)


def test_a_removed_wrapping_gives_the_name_back_to_its_definition(
    project: Project, rt: Runtime
) -> None:
    """`f = deco(f)` taken out: f is the plain function again, as in a fresh import; the
    wrapper a reference still holds is named in a note; rollback restores the wrapper."""
    source = DECO + "\nf = deco(f)\n"
    mod = project.module(source)
    kept = [mod.f]
    change = rt.patch_module(mod.__name__, DECO)
    assert mod.f(1) == 1 and mod.f is kept[0].__wrapped__
    assert any("still held by" in n for n in change.notes), change.notes
    rt.rollback()
    assert mod.f is kept[0]


def test_an_alias_put_where_a_wrapping_went_names_what_the_definition_made(
    project: Project, rt: Runtime
) -> None:
    """`f = deco(f)` replaced by `alias = f` in one patch: the name holds the function again
    before the new statement reads it, so both hold it, as in a fresh import (the alias
    took the old wrapper: one `deco` layer more)."""
    mod = project.module(DECO + "\nf = deco(f)\n")
    rt.patch_module(mod.__name__, DECO + "\nalias = f\n")
    assert mod.alias is mod.f and mod.alias(1) == 1
    rt.rollback()
    assert not hasattr(mod, "alias") and mod.f(1) == ("deco", 1)


def test_undoing_a_removed_wrapping_leaves_the_function_in_its_registry(
    project: Project, rt: Runtime
) -> None:
    """`@collect def f` then `f = deco(f)`, the later statement taken out and the change
    rolled back: f is the wrapper again and the list still holds the function, which the
    change did not make (the rollback took it out, as if the change had made it)."""
    source = DECO.replace("def f(x):", "@collect\ndef f(x):").replace(
        "def deco(fn):",
        "COLLECTED = []\n\n\ndef collect(fn):\n    COLLECTED.append(fn)\n"
        "    return fn\n\n\ndef deco(fn):",
    )
    mod = project.module(source + "\nf = deco(f)\n")
    wrapper, function = mod.f, mod.COLLECTED[0]
    rt.patch_module(mod.__name__, source)
    assert mod.f is function and mod.COLLECTED == [function]
    rt.rollback()
    assert mod.f is wrapper and mod.COLLECTED == [function]


def test_a_registered_definition_made_a_partial_under_a_later_wrapper_leaves_the_list(
    project: Project, rt: Runtime
) -> None:
    """`@collect def f` under `f = Func(f)`, `@collect` replaced by a decorator returning a
    `functools.partial`: the function leaves the list, as in a fresh import (the old one,
    made a forwarder to the partial, took `functools` for its module, so the list, bound in
    its own module, was not looked at)."""
    source = src(
        """
        import functools

        COLLECTED = []


        def collect(fn):
            COLLECTED.append(fn)
            return fn


        class Func:
            def __init__(self, func):
                self.func = func

            def __call__(self, *args):
                return ("func", self.func(*args))


        @collect
        def f(x):
            return x
        f = Func(f)
        """
    )
    mod = project.module(source)
    change = rt.patch_module(mod.__name__, source.replace("@collect", "@functools.partial"))
    assert mod.COLLECTED == [] and mod.f(1) == ("func", 1)
    assert any("taken out of" in n for n in change.notes), change.notes
    rt.rollback()
    assert len(mod.COLLECTED) == 1 and mod.f.func is mod.COLLECTED[0]


def test_a_changed_wrapping_wraps_the_definition_not_the_old_wrapper(
    project: Project, rt: Runtime
) -> None:
    """`f = deco(f)` changed to `f = deco(deco(f))`: the new statement reads the function the
    definition made, not the wrapper its first run left in the name."""
    source = DECO + "\nf = deco(f)\n"
    mod = project.module(source)
    rt.patch_module(mod.__name__, DECO + "\nf = deco(deco(f))\n")
    assert mod.f(1) == ("deco", ("deco", 1))


DISPATCH = src(
    """
    import functools


    @functools.singledispatch
    def show(x):
        return ("base", x)


    @show.register
    def _(x: str):
        return ("str", x)
    """
)

FLOAT = '\n\n@show.register\ndef _(x: float):\n    return ("float", x)\n'


def test_an_overload_added_beside_another_keeps_both(project: Project, rt: Runtime) -> None:
    """A second `def _` registered for another type: the first overload keeps its entry
    (the new function used to be merged into it, and its type's entry taken out); rollback
    leaves the registry as it was, and its dispatch cache forgets the removed overload."""
    mod = project.module(DISPATCH)
    rt.patch_module(mod.__name__, DISPATCH + FLOAT)
    assert (mod.show("a"), mod.show(1.5), mod.show(1)) == (
        ("str", "a"),
        ("float", 1.5),
        ("base", 1),
    )
    rt.rollback()
    assert set(mod.show.registry) == {object, str} and mod.show(1.5) == ("base", 1.5)


def test_an_overload_added_on_the_lines_of_another_that_changed_keeps_both(
    project: Project, rt: Runtime
) -> None:
    """A `def _` for floats put above the one for strings, whose body changed in the same
    patch: the new overload lies on the lines the old one had, yet it is a new function, and
    the old one takes its new body; both types keep their entries (the new function used
    to be merged into the old one, and the string entry was taken out)."""
    mod = project.module(DISPATCH)
    kept = mod.show.registry[str]
    text = DISPATCH.replace("\n\n@show.register", FLOAT + "\n\n@show.register", 1)
    rt.patch_module(mod.__name__, text.replace('("str", x)', '("str", x + x)'))
    assert set(mod.show.registry) == {object, str, float} and mod.show.registry[str] is kept
    assert (mod.show("a"), mod.show(1.5)) == (("str", "aa"), ("float", 1.5))
    rt.rollback()
    assert set(mod.show.registry) == {object, str} and mod.show("a") == ("str", "a")


def test_an_overload_edited_in_place_of_one_removed_keeps_its_entry(
    project: Project, rt: Runtime
) -> None:
    """The first of two `def _` taken out while the body of the second changed: the second,
    updated in place, now lies on the lines the removed one had, yet it keeps its entry and
    the removed one's type leaves the registry (the other way round, it used to be)."""
    mod = project.module(DISPATCH + FLOAT)
    text = DISPATCH.replace('\n\n@show.register\ndef _(x: str):\n    return ("str", x)\n', "")
    rt.patch_module(mod.__name__, text + FLOAT.replace('("float", x)', '("float", -x)'))
    assert set(mod.show.registry) == {object, float} and mod.show(1.5) == ("float", -1.5)
    rt.rollback()
    assert set(mod.show.registry) == {object, str, float} and mod.show(1.5) == ("float", 1.5)


def test_overloads_added_by_a_change_leave_the_registry_when_it_is_rolled_back(
    project: Project, rt: Runtime
) -> None:
    """Two `def _` overloads added in one patch to a dispatch function that had none, then
    that patch rolled back (with a later one): both leave the dispatch registry and its
    cache, as the source no longer has them (the one no name held used to stay registered,
    silently)."""
    base = DISPATCH.split("\n\n@show.register")[0] + "\n"
    mod = project.module(base)
    change = rt.patch_module(mod.__name__, base + FLOAT + FLOAT.replace("float", "bytes"))
    assert mod.show(1.5) == ("float", 1.5) and mod.show(b"a") == ("bytes", b"a")
    rt.patch_module(mod.__name__, rt.source(mod.__name__) + "\n\nLATER = 1\n")
    rt.rollback(change.id)
    assert set(mod.show.registry) == {object}
    assert mod.show(1.5) == ("base", 1.5) and mod.show(b"a") == ("base", b"a")


def test_overloads_swapped_and_edited_keep_their_types_through_rollback(
    project: Project, rt: Runtime
) -> None:
    """Two overloads swapped and both edited: each pairs with the old one for its type, so
    the registry has both, and a rollback restores both."""
    source = DISPATCH + FLOAT
    mod = project.module(source)
    swapped = DISPATCH.split("\n\n\n@show.register")[0] + FLOAT.replace('"float", x', '"F", x')
    swapped += '\n\n@show.register\ndef _(x: str):\n    return ("S", x)\n'
    rt.patch_module(mod.__name__, swapped)
    assert (mod.show("a"), mod.show(1.5)) == (("S", "a"), ("F", 1.5))
    rt.rollback()
    assert (mod.show("a"), mod.show(1.5)) == (("str", "a"), ("float", 1.5))


def test_overloads_swapped_line_for_line_and_edited_keep_their_bodies(
    project: Project, rt: Runtime
) -> None:
    """Two overloads of three lines swapped exactly, both edited: the first updated in place
    takes the lines the second had, and is not taken for it (the second's body used to
    land in the first, which then answered for both types)."""
    source = DISPATCH + FLOAT
    str_def = '@show.register\ndef _(x: str):\n    return ("str", x)\n'
    float_def = FLOAT.strip("\n") + "\n"
    swapped = source.replace(str_def, "{first}").replace(float_def, "{second}")
    swapped = swapped.format(
        first=float_def.replace('"float", x', '"F", x'),
        second=str_def.replace('"str", x', '"S", x'),
    )
    mod = project.module(source)
    rt.patch_module(mod.__name__, swapped)
    assert (mod.show("a"), mod.show(1.5)) == (("S", "a"), ("F", 1.5))
    rt.rollback()
    assert (mod.show("a"), mod.show(1.5)) == (("str", "a"), ("float", 1.5))


def test_an_overload_only_the_registry_holds_moves_with_its_statement(
    project: Project, rt: Runtime
) -> None:
    """Lines inserted above a `def _` that a later `def _` shadows: its code moves with it,
    so a traceback through it points at its own line (it used to keep the old line, and
    a later edit took it for another statement's function)."""
    source = DISPATCH.replace('return ("str", x)', 'return ("str", 1 / 0)') + FLOAT
    mod = project.module(source)
    rt.patch_module(mod.__name__, source.replace("import functools\n", "import functools\n\n\n\n"))
    overload = mod.show.registry[str]
    line = rt.source(mod.__name__).splitlines().index('    return ("str", 1 / 0)') + 1
    assert overload.__code__.co_firstlineno == line - 2  # its decorator's line


def test_a_dispatch_function_defined_again_keeps_its_overloads(
    project: Project, rt: Runtime
) -> None:
    """`def show` given another signature (so defined again, not edited in place): the live
    dispatch function keeps the overloads registered on it and takes the new base function
    (it used to take the new function's empty registry, losing `str`)."""
    mod = project.module(DISPATCH)
    kept = mod.show
    rt.patch_module(mod.__name__, DISPATCH.replace("def show(x):", "def show(x, y=0):"))
    assert mod.show is kept and mod.show("a") == ("str", "a") and mod.show(1) == ("base", 1)
    assert mod.show.registry[object] is mod.show.__wrapped__
    rt.rollback()
    assert mod.show("a") == ("str", "a") and set(mod.show.registry) == {object, str}


def test_patching_a_definition_wrapped_later_replaces_the_definition(
    project: Project, rt: Runtime
) -> None:
    """`rt.patch("m.f", "def f...")` while a later `f = deco(f)` binds f too: the `def` is
    what changes (the later statement used to be replaced by it, losing the wrapper)."""
    mod = project.module(DECO + "\nf = deco(f)\n")
    rt.patch(f"{mod.__name__}.f", "def f(x):\n    return x + 1\n")
    assert rt.source(mod.__name__).endswith("def f(x):\n    return x + 1\n\nf = deco(f)\n")
    assert mod.f(1) == ("deco", 2)


def test_an_alias_follows_a_definition_that_became_another_object(
    project: Project, rt: Runtime
) -> None:
    """`g = f` after `def f`, and f given a decorator that makes another kind of object: g
    is bound again to the new object, as a fresh import binds it (it used to keep the old
    function, with a note)."""
    mod = project.module(
        DECO + "\n\nclass Twice:\n    def __init__(self, fn):\n        self.fn = fn\n\n"
        "    def __call__(self, x):\n        return 2 * self.fn(x)\n\ng = f\n"
    )
    rt.patch(f"{mod.__name__}.f", "@Twice\ndef f(x):\n    return x + 1\n")
    assert mod.g is mod.f and mod.g(1) == 4
    rt.rollback()
    assert mod.g is mod.f and mod.g(1) == 1


def test_a_decorated_definition_wrapped_later_runs_again_inside_both_wrappers(
    project: Project, rt: Runtime
) -> None:
    """`@Twice def f` then `f = deco(f)`, and every definition run again (the `from
    __future__` import taken out): the function inside both wrappers takes the new code
    (it used to keep the string annotations of the old flags)."""
    source = DECO.replace("def f(x):", "@Twice\ndef f(x: int):") + src(
        """


        f = deco(f)
        """
    )
    twice = "class Twice:\n    def __init__(self, fn):\n        self.fn = fn\n\n"
    twice += "    def __call__(self, x):\n        return 2 * self.fn(x)\n\n\n"
    source = source.replace("@Twice", twice + "@Twice")
    mod = project.module("from __future__ import annotations\n" + source)
    inner = mod.f.__wrapped__.fn
    rt.patch_module(mod.__name__, source)
    assert inner.__annotations__ == {"x": int} and mod.f(1) == ("deco", 2)
    assert mod.f.__wrapped__.fn is inner


def test_a_removed_definition_wrapped_later_leaves_the_registry_its_decorator_filled(
    project: Project, rt: Runtime
) -> None:
    """`@collect def g` then `g = deco(g)`, both taken out: the function leaves the list its
    decorator put it in (only the wrapper, which the list never held, used to be looked
    for); rollback puts it back."""
    extra = "\n\nCOLLECTED = []\n\n\ndef collect(fn):\n    COLLECTED.append(fn)\n    return fn\n"
    wrapped = "\n\n@collect\ndef g(x):\n    return -x\n\ng = deco(g)\n"
    mod = project.module(DECO + extra + wrapped)
    held = list(mod.COLLECTED)
    rt.patch_module(mod.__name__, DECO + extra)
    assert mod.COLLECTED == [] and not hasattr(mod, "g")
    rt.rollback()
    assert mod.COLLECTED == held and mod.g(1) == ("deco", -1)


def test_a_removed_overload_leaves_the_dispatch_registry(project: Project, rt: Runtime) -> None:
    """One `def _` of two taken out (the name `_` is still bound by the other): its type
    leaves the registry, and calls for it reach the base function again, as in a fresh
    import (it used to stay there, silently); rollback restores it."""
    mod = project.module(DISPATCH + FLOAT)
    assert mod.show("a") == ("str", "a")
    rt.patch_module(mod.__name__, DISPATCH.split("\n\n\n@show.register")[0] + FLOAT)
    assert set(mod.show.registry) == {object, float} and mod.show("a") == ("base", "a")
    rt.rollback()
    assert mod.show("a") == ("str", "a") and mod.show(1.5) == ("float", 1.5)


CONFORMING = src(
    """
    import functools


    class Conforming:
        def __init__(self):
            self.functions = []

        def register(self, fn):
            self.functions.append(fn)
            fn.__conform__ = lambda new: self.recode(fn, new)
            return fn

        def recode(self, fn, new):
            fn.__code__ = new.__code__


    class Twice:
        def __init__(self, fn):
            self.fn = fn
            functools.update_wrapper(self, fn)

        def __call__(self, x):
            return 2 * self.fn(x)


    conf = Conforming()


    @conf.register
    def g(x):
        return x


    g = Twice(g)
    """
)


def test_a_registered_function_wrapped_later_stays_what_the_registry_holds(
    project: Project, rt: Runtime
) -> None:
    """`@conf.register def g` (which gives g a `__conform__`) then `g = Twice(g)`, whose
    `functools.update_wrapper` copies that `__conform__` onto the wrapper; every definition
    run again: the registry still holds g, running the new code (the copied `__conform__`
    used to be taken for what the definition made, and put in the registry); rollback leaves
    the registry as it was (the new function used to stay in it beside the old one)."""
    mod = project.module("from __future__ import annotations\n" + CONFORMING)
    kept = mod.conf.functions[0]
    rt.patch_module(mod.__name__, CONFORMING.replace("return x\n", "return x + 1\n"))
    assert mod.conf.functions == [kept] and kept(1) == 2 and mod.g(1) == 4
    rt.rollback()  # the registry as it was: the new function never stays in it
    assert mod.conf.functions == [kept] and kept(1) == 1 and mod.g(1) == 2


def test_a_definition_wrapped_later_leaves_the_registry_its_old_decorator_filled(
    project: Project, rt: Runtime
) -> None:
    """`@collect def g` then `g = deco(g)`, and `@collect` replaced by another decorator:
    g leaves the list, as a fresh import would not put it there (it stayed: only what the
    name holds, the later wrapper, was looked at)."""
    extra = "\n\nCOLLECTED = []\n\n\ndef collect(fn):\n    COLLECTED.append(fn)\n    return fn\n"
    wrapped = "\n\n@collect\ndef g(x):\n    return -x\n\ng = deco(g)\n"
    mod = project.module(DECO + extra + wrapped)
    rt.patch(f"{mod.__name__}.g", "@deco\ndef g(x):\n    return -x\n")
    assert mod.COLLECTED == [] and mod.g(1) == ("deco", ("deco", -1))
    rt.rollback()
    assert len(mod.COLLECTED) == 1 and mod.g(1) == ("deco", -1)


def test_a_definition_wrapped_later_whose_default_changed_keeps_its_wrapper(
    project: Project, rt: Runtime
) -> None:
    """`def f(x, y=LIMIT)` then `f = deco(f)`, and `LIMIT` patched: f is defined again for
    its new default inside the wrapper (the wrapper used to become the plain function)."""
    source = DECO.replace(
        "def f(x):\n    return x", "LIMIT = 1\n\n\ndef f(x, y=LIMIT):\n    return x + y"
    )
    mod = project.module(source + "\nf = deco(f)\n")
    kept = mod.f
    rt.patch(f"{mod.__name__}.LIMIT", "LIMIT = 5\n")
    assert mod.f is kept and mod.f(1) == ("deco", 6)
    rt.rollback()
    assert mod.f(1) == ("deco", 2)


def test_a_removed_alias_of_a_registered_class_leaves_the_registry_alone(
    project: Project, rt: Runtime
) -> None:
    """`Alias = Plugin` taken out, where `Plugin` is registered by its base's
    `__init_subclass__`: the registry keeps `Plugin` (it used to be taken out with the
    alias, as if the class were gone)."""
    source = src(
        """
        PLUGINS = {}


        class Base:
            def __init_subclass__(cls, **kwargs):
                super().__init_subclass__(**kwargs)
                PLUGINS[cls.__name__] = cls


        class Plugin(Base):
            pass
        """
    )
    mod = project.module(source + "\n\nAlias = Plugin\n")
    rt.patch_module(mod.__name__, source)
    assert mod.PLUGINS == {"Plugin": mod.Plugin} and not hasattr(mod, "Alias")


def test_a_removed_wrapping_gives_back_the_definition_s_own_decorator_object(
    project: Project, rt: Runtime
) -> None:
    """`@Twice def f` then `f = Twice(f)` (whose `functools.update_wrapper` copies the inner
    object's `fn` over its own), the later statement taken out: f is the object the
    definition made, found through `__wrapped__` (it used to become the bare function)."""
    twice = src(
        """
        import functools


        class Twice:
            def __init__(self, fn):
                self.fn = fn
                functools.update_wrapper(self, fn)

            def __call__(self, x):
                return 2 * self.fn(x)


        @Twice
        def f(x):
            return x
        """
    )
    mod = project.module(twice + "\n\nf = Twice(f)\n")
    inner = mod.f.__wrapped__
    rt.patch_module(mod.__name__, twice)
    assert mod.f is inner and mod.f(1) == 2


WRAPPED_REGISTERED = src(
    """
    class Func:
        def __init__(self, func):
            self.func = func

        def __call__(self, *args):
            return ("func", self.func(*args))


    HANDLERS = {}


    def handles(key):
        def register(fn):
            HANDLERS[key] = fn
            return fn
        return register


    @handles("f:1")
    def f(x):
        return (x * 4,)
    f = Func(f)
    """
)


def test_a_decorator_changed_to_make_an_object_under_a_later_wrapper(
    project: Project, rt: Runtime
) -> None:
    """`@handles` becomes `@Func` on a def that a later `f = Func(f)` wraps: the later wrapper
    holds the new object, as in a fresh import (it used to keep calling the old function,
    silently); the old function forwards to it for references taken before, a note says so,
    and the rollback puts everything back."""
    mod = project.module(WRAPPED_REGISTERED)
    wrapper, old = mod.f, mod.f.func
    source = WRAPPED_REGISTERED.replace('@handles("f:1")', "@Func").replace("x * 4", "x * 5")
    change = rt.patch_module(mod.__name__, source)
    assert mod.f(2) == ("func", ("func", (10,))) and mod.f is wrapper
    assert isinstance(wrapper.func, mod.Func) and old(2) == ("func", (10,))
    assert mod.HANDLERS == {}
    assert any("forwards every call" in n for n in change.notes), change.notes
    rt.rollback()
    assert mod.f(2) == ("func", (8,)) and wrapper.func is old and mod.HANDLERS == {"f:1": old}


SLOT_WRAPPED = src(
    """
    import functools


    class Twice:
        def __init__(self, fn):
            self.fn = fn
            functools.update_wrapper(self, fn)

        def __call__(self, *args):
            return ("twice", self.fn(*args))


    class Curry:
        def __init__(self, fn):
            self.fn = fn

        def __call__(self, *args):
            return ("curry", self.fn(*args))


    class Slot:
        __slots__ = ("fn",)

        def __init__(self, fn):
            self.fn = fn

        def __call__(self, *args):
            return ("slot", self.fn(*args))


    def deco(fn):
        @functools.wraps(fn)
        def wrapper(*args):
            return ("deco", fn(*args))
        return wrapper


    @Slot
    def f(x):
        return x
    f = Twice(f)
    """
)


@pytest.mark.parametrize(
    ("wrapping", "before", "after"),
    [
        ("Twice", ("twice", ("slot", 1)), ("twice", 1)),
        ("deco", ("deco", ("slot", 1)), ("deco", ("curry", 1))),
    ],
)
def test_a_later_wrapping_runs_again_around_a_decorator_that_made_another_object(
    project: Project, rt: Runtime, wrapping: str, before: object, after: object
) -> None:
    """`@Slot def f` under `f = Twice(f)` (or a closure `deco`), the decorator changed to
    `@Curry`: the unchanged wrapping runs again around the new Curry, as in a fresh import
    (where `update_wrapper` copies the Curry's `fn` over Twice's own, so calls skip the
    Curry), and what it made is merged into the live wrapper every reference holds (which
    used to call the old Slot, forwarding to the new function: one layer more, silently);
    the rollback puts it back."""
    source = SLOT_WRAPPED.replace("f = Twice(f)", f"f = {wrapping}(f)")
    mod = project.module(source)
    kept = mod.f
    new = source.replace("@Slot", "@Curry")
    change = rt.patch_module(mod.__name__, new)
    assert mod.f is kept and kept(1) == project.module(new).f(1) == after
    assert any("ran again around the new definition" in n for n in change.notes), change.notes
    rt.rollback()
    assert mod.f is kept and kept(1) == before


def test_a_later_wrapping_of_a_c_type_gives_the_name_the_one_made_again(
    project: Project, rt: Runtime
) -> None:
    """`f = functools.partial(f)` after `@Slot def f`, the decorator changed to `@Curry`:
    the old partial (a C object) cannot be made to hold the new Curry, so the name takes
    the partial the wrapping made again around it, as in a fresh import, and a note names
    what still holds the old one (it used to keep calling the old Slot, silently)."""
    source = SLOT_WRAPPED.replace("f = Twice(f)", "f = functools.partial(f)")
    mod = project.module(source)
    kept = [mod.f]
    change = rt.patch_module(mod.__name__, source.replace("@Slot", "@Curry"))
    assert mod.f(1) == ("curry", 1) and kept[0](1) == ("slot", 1)
    assert any(n.startswith("f:") and "still held by a list" in n for n in change.notes), (
        change.notes
    )
    rt.rollback()
    assert mod.f is kept[0] and mod.f(1) == ("slot", 1)


CURRY_REWRAPPED = src(
    """
    import functools

    import toolz


    class Twice:
        def __init__(self, fn):
            self.fn = fn
            functools.update_wrapper(self, fn)

        def __call__(self, *args, **kwargs):
            return ("twice", self.fn(*args, **kwargs))


    def above():
        return 1


    @toolz.curry
    def f(x, *, y=3):
        return x * 2 + y
    f = Twice(f)
    """
)


def test_a_curry_a_later_statement_wraps_takes_a_rerun_in_place(
    project: Project, rt: Runtime
) -> None:
    """Every definition runs again (a `from __future__` line added) while the body of a
    `@curry` function that `f = Twice(f)` wraps changed: the function inside the live curry
    takes the new code and its new lines (the new curry was left aside, the old one kept
    running the old code, silently); undone, both come back."""
    mod = project.module(CURRY_REWRAPPED)
    curried = mod.f.fn
    function = curried.func
    text = "from __future__ import annotations\n" + rt.source(mod.__name__).replace(
        "x * 2", "x * 3"
    )
    rt.patch_module(mod.__name__, text)
    assert mod.f(2) == ("twice", 9) and curried(2) == 9 and curried.func is function
    line = text.splitlines().index("@toolz.curry") + 1
    assert function.__code__.co_firstlineno == line
    rt.rollback()
    assert curried(2) == 7 and function.__code__.co_firstlineno == line - 1


def test_a_wrapping_added_as_every_definition_runs_again_names_the_old_curry(
    project: Project, rt: Runtime
) -> None:
    """`f = Twice(f)` added under a `@curry` def in the patch that adds a `from __future__`
    line (every definition runs again): the new curry is what the name held, and Twice
    wraps it, as in a fresh import (the old curry's function was taken for what an earlier
    Twice wrapped). A reference taken before (and from the alias) holds the old curry,
    which cannot become the Twice: a note names each (there was none)."""
    source = CURRY_REWRAPPED.replace("f = Twice(f)\n", "") + "\n\nalias = f\n"
    mod = project.module(source)
    kept = [mod.f]
    text = "from __future__ import annotations\n" + source.replace(
        "    return x * 2 + y\n", "    return x * 2 + y\nf = Twice(f)\n"
    )
    change = rt.patch_module(mod.__name__, text)
    assert mod.f(2) == ("twice", 7) and mod.alias is mod.f and kept[0](2) == 7
    held = [n.partition(":")[0] for n in change.notes if "still held by a list" in n]
    assert sorted(held) == ["alias", "f"], change.notes
    rt.rollback()
    assert mod.f is mod.alias is kept[0] and mod.f(2) == 7


def test_a_curry_a_later_statement_wraps_moves_with_its_statement(
    project: Project, rt: Runtime
) -> None:
    """`f = Twice(f)` around a `@curry` function: lines inserted above move the function
    two wrapper objects deep with its statement, so tracebacks and inspect stay exact."""
    mod = project.module(CURRY_REWRAPPED)
    rt.patch(f"{mod.__name__}.above", "def above():\n\n\n    return 1\n")
    line = rt.source(mod.__name__).splitlines().index("@toolz.curry") + 1
    assert mod.f.fn.func.__code__.co_firstlineno == line
    assert inspect.getsource(mod.f.fn.func).startswith("@toolz.curry\ndef f(x, *, y=3):")


UNWRAPPED = src(
    """
    import functools


    class Func:
        def __init__(self, func):
            self.func = func

        def __call__(self, *args):
            return ("func", self.func(*args))


    @functools.lru_cache(maxsize=None)
    def f(x):
        return x * 2
    f = Func(f)


    alias = f
    """
)


def test_an_alias_follows_a_name_whose_wrapping_statement_went(
    project: Project, rt: Runtime
) -> None:
    """`f = Func(f)` goes from the source, the `def` and `alias = f` stay: the name holds
    the decorated function again, and the alias is computed again from it, as a fresh
    import binds it (it used to keep the old wrapper, only named in a note); a rollback
    puts both back."""
    mod = project.module(UNWRAPPED)
    wrapper = mod.f
    change = rt.patch_module(mod.__name__, UNWRAPPED.replace("f = Func(f)\n", ""))
    assert mod.alias is mod.f is not wrapper and mod.alias(1) == 2
    assert any(n.startswith("alias (line") for n in change.notes), change.notes
    rt.rollback()
    assert mod.alias is mod.f is wrapper and mod.alias(1) == ("func", 2)


PARTIAL_WRAPPED = src(
    """
    import functools


    def deco(fn):
        @functools.wraps(fn)
        def wrapper(*args):
            return ("deco", fn(*args))
        return wrapper


    @functools.partial
    def f(x):
        return x
    f = deco(f)
    """
)


def test_a_name_whose_wrapping_statement_went_is_not_bound_back_to_the_wrapper(
    project: Project, rt: Runtime
) -> None:
    """`f = deco(f)` around a `functools.partial` goes: the wrapper `functools.wraps` made
    says it comes from `functools`, which is no reason to think the unchanged `@partial`
    definition bound it; the name holds the partial, as in a fresh import."""
    mod = project.module(PARTIAL_WRAPPED)
    rt.patch_module(mod.__name__, PARTIAL_WRAPPED.replace("f = deco(f)\n", ""))
    assert isinstance(mod.f, functools.partial) and mod.f(1) == 1
    rt.rollback()
    assert mod.f(1) == ("deco", 1)


ALIASED = src(
    """
    class Func:
        def __init__(self, func):
            self.func = func

        def __call__(self, *args):
            return ("func", self.func(*args))


    def f(x):
        return x


    alias = f
    """
)


def test_an_alias_of_a_name_wrapped_again_names_what_still_holds_the_old_object(
    project: Project, rt: Runtime
) -> None:
    """`f = Func(f)` added between `def f` and `alias = f`: the alias is computed again and
    holds the wrapper, as in a fresh import; a reference taken from the alias before still
    holds the plain function, and a note under the alias's own name says what holds it (only
    f had one, so the stale alias went unsaid); the rollback puts both back."""
    mod = project.module(ALIASED)
    kept = [mod.alias]
    change = rt.patch_module(mod.__name__, ALIASED.replace("return x\n", "return x\nf = Func(f)\n"))
    assert mod.alias is mod.f and mod.alias(1) == ("func", 1) and kept[0](1) == 1
    notes = [n for n in change.notes if n.startswith("alias:")]
    # what holds it besides `kept` (the wrapper, a tuple) differs between Python versions
    holders = notes[0].partition("still held by ")[2].partition(". ")[0] if notes else ""
    assert len(notes) == 1 and "a list" in holders.split(", "), change.notes
    rt.rollback()
    assert mod.alias is mod.f is kept[0]
