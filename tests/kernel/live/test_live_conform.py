"""Objects that say how they take an update (`__conform__`, the protocol jurigged defines):
a function carrying its own `__conform__`, or an object whose class defines one and that
holds the function's code, is handed the new function — or `None` when its definition is
gone — instead of being updated by liveforge; undo hands it the old code back."""

from __future__ import annotations

from kernel_support import Project, src

from liveforge import Runtime

# A registry whose `register` returns itself (every definition is named `do`) and keeps
# the functions in a list; each function says how it takes new code.
ACTIVITIES = src(
    """
    class Activities:
        def __init__(self):
            self.functions = []
            self.told = []

        def register(self, fn):
            self.functions.append(fn)
            fn.__conform__ = lambda new: self.recode(fn, new)
            return self

        def recode(self, fn, new):
            self.told.append(None if new is None else new.__name__)
            if new is None:
                self.functions.remove(fn)
            else:
                fn.__code__ = new.__code__

        def __call__(self, x):
            return [fn(x) for fn in self.functions]


    activities = Activities()


    @activities.register
    def do(x):
        return f"paint {x}"


    @activities.register
    def do(x):
        return f"sing {x}"


    @activities.register
    def do(x):
        return f"dance {x}"
    """
)


def test_a_function_that_declares_conform_takes_the_new_code_itself(
    project: Project, rt: Runtime
) -> None:
    """Editing the second of three `do`s: its `__conform__` gets the new function; the
    registry keeps three entries in their order, and the decorator did not run again;
    rollback hands the old code back."""
    mod = project.module(ACTIVITIES)
    source = rt.source(mod.__name__)
    rt.patch_module(mod.__name__, source.replace('f"sing {x}"', 'f"sing {x * 2}"'))
    assert mod.activities(3) == ["paint 3", "sing 6", "dance 3"]
    assert mod.activities.told == ["do"] and len(mod.activities.functions) == 3
    fresh = project.module(rt.source(mod.__name__))
    assert fresh.activities(3) == mod.activities(3)
    rt.rollback()
    assert mod.activities(3) == ["paint 3", "sing 3", "dance 3"]


def test_a_removed_definition_is_told_with_none(project: Project, rt: Runtime) -> None:
    """A source keeping one `do` (changed) of three: the others' `__conform__` get `None`
    and leave the registry, which holds what a fresh import's does; rollback restores all
    three entries and their code."""
    mod = project.module(ACTIVITIES)
    head = rt.source(mod.__name__).split("@activities.register")[0]
    rt.patch_module(
        mod.__name__, head + '@activities.register\ndef do(x):\n    return f"eat {x}"\n'
    )
    fresh = project.module(rt.source(mod.__name__))
    assert mod.activities(7) == fresh.activities(7) == ["eat 7"]
    rt.rollback()
    assert mod.activities(7) == ["paint 7", "sing 7", "dance 7"]


def test_an_object_holding_the_code_is_conformed(project: Project, rt: Runtime) -> None:
    """An object whose class defines `__conform__` and that holds the function's code object
    (not the function) is given the new function when the body changes."""
    mod = project.module(
        src(
            """
            CONFORMED = []


            class Compiled:
                def __init__(self, fn):
                    self.code = fn.__code__

                def __conform__(self, new):
                    CONFORMED.append(new.__name__)
                    self.code = new.__code__

                def __call__(self, x):
                    return type(lambda: 0)(self.code, globals())(x)


            @Compiled
            def double(x):
                return x * 2
            """
        )
    )
    kept = mod.double
    rt.patch(f"{mod.__name__}.double", "@Compiled\ndef double(x):\n    return x * 3\n")
    assert mod.double is kept and kept(2) == 6 and mod.CONFORMED == ["double"]
    rt.rollback()
    assert kept(2) == 4 and mod.CONFORMED == ["double", "double"]


def test_definitions_added_between_others_register_as_a_fresh_import_orders_them(
    project: Project, rt: Runtime
) -> None:
    """A `do` added between two others and one added at the end: the registry calls them
    in the order a fresh import of the new source does, each once."""
    mod = project.module(ACTIVITIES)
    source = rt.source(mod.__name__)
    worship = '@activities.register\ndef do(x):\n    return f"worship {x}"\n\n\n'
    source = source.replace(
        '@activities.register\ndef do(x):\n    return f"dance',
        worship + ('@activities.register\ndef do(x):\n    return f"dance'),
    )
    source += '\n\n@activities.register\ndef do(x):\n    return f"push {x}"\n'
    rt.patch_module(mod.__name__, source)
    fresh = project.module(rt.source(mod.__name__))
    assert mod.activities(2) == fresh.activities(2)
    assert mod.activities(2) == ["paint 2", "sing 2", "worship 2", "dance 2", "push 2"]


def test_definitions_that_did_not_change_between_changed_lines_are_not_told_they_are_gone(
    project: Project, rt: Runtime
) -> None:
    """Lines changed above and below a registered function (so the changed run spans it,
    unchanged): its `__conform__` is not called with `None`, and the registry keeps it (it
    used to be told it was gone, and left the registry)."""
    source = ACTIVITIES.split("@activities.register")[0]
    source += "START = 0\n\n\n@activities.register\ndef paint(x):\n    return x\n\n\nLIMIT = 1\n"
    mod = project.module(source)
    rt.patch_module(
        mod.__name__, source.replace("START = 0", "START = 1").replace("= 1\n", "= 2\n")
    )
    assert mod.activities(1) == [1] and None not in mod.activities.told


def test_a_conform_made_for_the_rerun_definition_recodes_the_live_function(
    project: Project, rt: Runtime
) -> None:
    """A signature change runs `register` again, whose `__conform__` closes over the new
    function: merged, it recodes the live one, so a later body-only edit runs in every
    reference and a removal takes the live function out of the registry (the lambda used
    to recode the discarded new function: the old body kept running)."""
    source = src(
        """
        class Conforming:
            def __init__(self):
                self.functions = []

            def register(self, fn):
                self.functions.append(fn)
                fn.__conform__ = lambda new: self.recode(fn, new)
                return fn

            def recode(self, fn, new):
                if new is None:
                    self.functions[:] = [f for f in self.functions if f is not fn]
                else:
                    fn.__code__, fn.__defaults__ = new.__code__, new.__defaults__


        conforming = Conforming()


        @conforming.register
        def scale(x):
            return x
        """
    )
    mod = project.module(source)
    kept, target = mod.scale, f"{mod.__name__}.scale"
    rt.patch(target, "@conforming.register\ndef scale(x, y=2):\n    return x * y\n")
    rt.patch(target, "@conforming.register\ndef scale(x, y=2):\n    return x * y + 1\n")
    assert kept(3) == mod.conforming.functions[0](3) == 7
    assert mod.conforming.functions == [kept]
    rt.patch_module(mod.__name__, source.split("@conforming")[0])
    assert mod.conforming.functions == []
    rt.rollback()
    assert mod.conforming.functions == [kept] and kept(3) == 7
