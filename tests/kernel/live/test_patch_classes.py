"""Patching classes updates the live class object: instances, subclasses and references stay."""

from __future__ import annotations

import enum
import inspect
import sys

import pytest
from kernel_support import src

from liveforge import UnsupportedChange

BASE = src("""
    import abc
    import dataclasses
    import enum

    class Base:
        def hello(self):
            return "base"

    class C(Base):
        registry = []
        N = 5
        LABEL = "old"

        def __init__(self):
            self.state = 41

        def m(self, y=N):
            return y

        def hello(self):
            return "c"

        @property
        def prop(self):
            return "p-old"

        @classmethod
        def make(cls):
            return ("cm-old", cls)

        @staticmethod
        def util():
            return "sm-old"

        class Inner:
            def deep(self):
                return "deep-old"

    class Sub(C):
        def hello(self):
            return "sub+" + super().hello()

    @dataclasses.dataclass
    class Point:
        x: int
        y: int = 0

    class Color(enum.Enum):
        RED = 1
        GREEN = 2

    class Slotted:
        __slots__ = ("a",)
""")


@pytest.fixture
def mod(project):
    return project.module(BASE)


def test_class_identity_and_instances_survive_a_method_patch(rt, mod):
    """Existing instances see the new method; the class object is the same."""
    cls, obj = mod.C, mod.C()
    rt.patch(f"{mod.__name__}.C.m", "def m(self, y=N):\n    return y * 2\n")
    assert mod.C is cls and isinstance(obj, mod.C) and obj.m() == 10


def test_instance_state_is_preserved(rt, mod):
    """Attributes stored on instances are untouched by a class patch."""
    obj = mod.C()
    obj.state = 99
    rt.patch(f"{mod.__name__}.C.hello", "def hello(self):\n    return self.state\n")
    assert obj.hello() == 99


def test_unchanged_class_level_mutable_state_is_preserved(rt, mod):
    """A registry list in the class body keeps its contents when a method changes."""
    mod.C.registry.append("x")
    rt.patch(f"{mod.__name__}.C.m", "def m(self, y=N):\n    return 0\n")
    assert mod.C.registry == ["x"]


def test_changed_class_level_value_takes_the_new_value(rt, mod):
    """A class attribute whose statement changed is re-evaluated."""
    rt.patch(f"{mod.__name__}.C.LABEL", 'LABEL = "new"\n')
    assert mod.C.LABEL == "new"


def test_method_default_naming_class_constant_resolves(rt, mod):
    """`def m(self, y=N)` resolves N from the class body when the method is patched."""
    rt.patch(f"{mod.__name__}.C.m", "def m(self, y=N):\n    return y + 1\n")
    assert mod.C().m() == 6


def test_bound_method_captured_before_runs_new_code(rt, mod):
    """A bound method taken before the patch runs the new body."""
    bound = mod.C().m
    rt.patch(f"{mod.__name__}.C.m", "def m(self, y=N):\n    return 'new'\n")
    assert bound() == "new"


def test_zero_argument_super_keeps_working(rt, mod):
    """A patched method that already used super() still resolves it."""
    rt.patch(f"{mod.__name__}.Sub.hello", "def hello(self):\n    return 'SUB+' + super().hello()\n")
    assert mod.Sub().hello() == "SUB+c"


def test_newly_added_super_call_works_for_earlier_references(rt, mod):
    """A patch that newly adds super() works, also through a bound method taken before."""
    obj = mod.C()
    bound = obj.hello
    change = rt.patch(
        f"{mod.__name__}.C.hello", "def hello(self):\n    return 'c+' + super().hello()\n"
    )
    assert obj.hello() == "c+base" and bound() == "c+base"
    assert any("free variables changed" in n for n in change.notes)


def test_subclass_sees_patched_base_method(rt, mod):
    """Subclasses inherit the new body of a patched base method."""
    rt.patch(f"{mod.__name__}.C.hello", "def hello(self):\n    return 'C2'\n")
    assert mod.Sub().hello() == "sub+C2"


def test_property_getter_is_patched(rt, mod):
    """A property is patched through its accessor functions."""
    prop = mod.C.__dict__["prop"]
    rt.patch(f"{mod.__name__}.C.prop", "@property\ndef prop(self):\n    return 'p-new'\n")
    assert mod.C().prop == "p-new" and mod.C.__dict__["prop"] is prop


def test_classmethod_is_patched(rt, mod):
    """A classmethod keeps receiving the class."""
    rt.patch(f"{mod.__name__}.C.make", "@classmethod\ndef make(cls):\n    return ('new', cls)\n")
    assert mod.C.make() == ("new", mod.C)


def test_staticmethod_is_patched(rt, mod):
    """A staticmethod is patched in place."""
    rt.patch(f"{mod.__name__}.C.util", "@staticmethod\ndef util():\n    return 'sm-new'\n")
    assert mod.C.util() == "sm-new"


def test_nested_class_method_is_patched(rt, mod):
    """`Outer.Inner.method` is a valid target; the nested class keeps its identity."""
    inner = mod.C.Inner
    rt.patch(f"{mod.__name__}.C.Inner.deep", "def deep(self):\n    return 'deep-new'\n")
    assert mod.C.Inner is inner and inner().deep() == "deep-new"


def test_new_method_is_added_to_class(rt, mod):
    """Patching a missing method name adds it to the class body."""
    rt.patch(f"{mod.__name__}.C.extra", "def extra(self):\n    return self.state + 1\n")
    assert mod.C().extra() == 42
    assert "    def extra(self):\n" in rt.source(f"{mod.__name__}.C")


def test_removed_method_is_removed_from_class(rt, mod):
    """A method the new class body no longer defines disappears from the live class."""
    body = rt.source(f"{mod.__name__}.C")
    without = body.replace('    @staticmethod\n    def util():\n        return "sm-old"\n', "")
    rt.patch(f"{mod.__name__}.C", without)
    assert not hasattr(mod.C, "util")


def test_whole_class_patch_keeps_identity(rt, mod):
    """Patching the class itself merges into the existing class object."""
    cls = mod.C
    rt.patch(f"{mod.__name__}.C", rt.source(f"{mod.__name__}.C").replace('"c"', '"C!"'))
    assert mod.C is cls and cls().hello() == "C!"


def test_dataclass_field_added_regenerates_init(rt, mod):
    """Adding a dataclass field regenerates __init__/__repr__ on the same class."""
    cls, old = mod.Point, mod.Point(1, 2)
    rt.patch(
        f"{mod.__name__}.Point",
        "@dataclasses.dataclass\nclass Point:\n    x: int\n    y: int = 0\n    z: int = 5\n",
    )
    assert mod.Point is cls and repr(cls(1)) == "Point(x=1, y=0, z=5)"
    assert isinstance(old, cls)


def test_enum_member_identity_kept_and_value_changes(rt, mod):
    """Existing enum members stay the same objects; a changed value is taken."""
    red = mod.Color.RED
    rt.patch(f"{mod.__name__}.Color", "class Color(enum.Enum):\n    RED = 10\n    GREEN = 2\n")
    assert mod.Color.RED is red and red.value == 10 and mod.Color(10) is red


def test_enum_added_member_is_a_real_member(rt, mod):
    """A new enum member is an instance of the live enum, iterable and found by value."""
    rt.patch(
        f"{mod.__name__}.Color",
        "class Color(enum.Enum):\n    RED = 1\n    GREEN = 2\n    BLUE = 3\n",
    )
    blue = mod.Color.BLUE
    assert isinstance(blue, mod.Color) and mod.Color(3) is blue
    assert [m.name for m in mod.Color] == ["RED", "GREEN", "BLUE"]
    assert isinstance(blue, enum.Enum) and mod.Color["BLUE"] is blue


def test_enum_removed_member_disappears(rt, mod):
    """A member the new source drops is no longer a member."""
    rt.patch(f"{mod.__name__}.Color", "class Color(enum.Enum):\n    RED = 1\n")
    assert [m.name for m in mod.Color] == ["RED"] and not hasattr(mod.Color, "GREEN")


def test_slots_change_is_refused_and_state_intact(rt, mod):
    """Changing __slots__ raises UnsupportedChange and leaves the class as it was."""
    cls = mod.Slotted
    with pytest.raises(UnsupportedChange, match="__slots__"):
        rt.patch(f"{mod.__name__}.Slotted", "class Slotted:\n    __slots__ = ('a', 'b')\n")
    assert mod.Slotted is cls and cls.__slots__ == ("a",)
    assert '("a",)' in rt.source(f"{mod.__name__}.Slotted")


def test_metaclass_change_is_refused(rt, mod):
    """A class cannot change its metaclass in place."""
    with pytest.raises(UnsupportedChange, match="metaclass"):
        rt.patch(f"{mod.__name__}.Base", "class Base(metaclass=abc.ABCMeta):\n    pass\n")
    assert mod.Base().hello() == "base"


def test_failed_class_patch_restores_every_method(rt, mod):
    """When executing the class body fails midway nothing of the class changes."""
    with pytest.raises(Exception, match="NameError"):
        rt.patch(
            f"{mod.__name__}.C",
            rt.source(f"{mod.__name__}.C").replace(
                '    LABEL = "old"', "    LABEL = undefined_name"
            ),
        )
    assert mod.C().hello() == "c" and mod.C.LABEL == "old"


def test_bases_change_applies_when_layout_allows(rt, mod):
    """Changing a class's bases to a compatible one updates __bases__ in place."""
    sub = mod.Sub
    rt.patch(
        f"{mod.__name__}.Sub",
        "class Sub(Base):\n    def hello(self):\n        return 'sub+' + super().hello()\n",
    )
    assert mod.Sub is sub and sub.__bases__ == (mod.Base,) and sub().hello() == "sub+base"


def test_change_names_the_members_a_class_patch_touched(rt, mod):
    """A method patch reports `C.m`, not the whole class; additions and removals likewise."""
    changed = rt.patch(f"{mod.__name__}.C.m", "def m(self, y=N):\n    return -y\n")
    added = rt.patch(f"{mod.__name__}.C.extra", "def extra(self):\n    return 1\n")
    body = rt.source(f"{mod.__name__}.C")
    removed = rt.patch(
        f"{mod.__name__}.C",
        body.replace('    @staticmethod\n    def util():\n        return "sm-old"\n', ""),
    )
    assert changed.updated == ["C.m"] and added.added == ["C.extra"]
    assert removed.removed == ["C.util"] and removed.updated == []


MOVING = src("""
    def top():
        return 1

    def keep(cls):
        return cls

    @keep
    class Outer:
        def m(self):
            self.seen = 1

        class Inner:
            pass

    def make():
        class Made:
            pass
        return Made

    MADE = make()
""")


def _class_sources(mod):
    return [inspect.getsource(c) for c in (mod.Outer, mod.Outer.Inner, mod.MADE)]


def test_classes_below_a_patch_that_adds_lines_show_their_own_source(rt, project):
    """Lines added above a class move it without running it again: `inspect.getsource` of
    the class, a nested class and a class a moved factory made still shows exactly that
    class (Python 3.13 finds it through `__firstlineno__`), and again after a rollback."""
    mod = project.module(MOVING)
    before = _class_sources(mod)
    assert before[0].startswith("@keep\nclass Outer:") and "class Made:" in before[2]
    rt.patch(f"{mod.__name__}.top", "def top():\n    x = 1\n    y = 2\n    return x + y\n")
    assert _class_sources(mod) == before
    assert inspect.getsourcelines(mod.Outer)[1] == 9
    rt.rollback()
    assert _class_sources(mod) == before and inspect.getsourcelines(mod.Outer)[1] == 7


@pytest.mark.skipif(sys.version_info < (3, 13), reason="__static_attributes__ is new in 3.13")
def test_a_changed_class_takes_its_new_static_attributes(rt, mod):
    """The `self.x` names a class's methods assign (3.13's `__static_attributes__`) follow a
    method patch and its rollback, as a fresh import's would."""
    assert mod.C.__static_attributes__ == ("state",)
    rt.patch(f"{mod.__name__}.C.hello", "def hello(self):\n    self.said = 'c'\n    return 'c'\n")
    assert mod.C.__static_attributes__ == ("said", "state")
    rt.rollback()
    assert mod.C.__static_attributes__ == ("state",)


METHODS = src("""
    import functools

    REG = []
    CALLS = []


    def register(f):
        CALLS.append(f.__qualname__)
        REG.append(f)
        return f


    class Base:
        def greet(self):
            return "base"


    class K(Base):
        __secret = 7

        @register
        def m(self):
            return 1

        def greet(self):
            return "k"

        @functools.cached_property
        def size(self):
            return 10

        def below(self):
            raise ValueError("below")
""")


def test_a_decorated_method_body_edit_runs_no_decorator_and_undoes_exactly(project, rt):
    """A method's body edited: the class body does not run again, so its decorators do not
    register it twice (a fresh import registers it once); the one entry runs the new code,
    and the rollback leaves the registry as it was."""
    mod = project.module(METHODS)
    entry = mod.REG[0]
    change = rt.patch(f"{mod.__name__}.K.m", "@register\ndef m(self):\n    return 2\n")
    assert mod.REG == [entry] and mod.CALLS == ["K.m"] and entry(None) == mod.K().m() == 2
    assert change.updated == ["K.m"]
    assert any(n.startswith("K.m: only its body changed") for n in change.notes)
    rt.rollback()
    assert mod.REG == [entry] and mod.CALLS == ["K.m"] and mod.K().m() == 1


def test_an_in_place_method_edit_keeps_super_private_names_and_lines_below(project, rt):
    """The new body is compiled inside the class: zero-argument `super()` and private names
    work; the methods below the edited one (which grew two lines) report their new lines in
    tracebacks and `inspect`."""
    mod = project.module(METHODS)
    rt.patch(
        f"{mod.__name__}.K.greet",
        "def greet(self):\n    head = super().greet()\n    tail = self.__secret\n"
        "    return f'{head}+{tail}'\n",
    )
    assert mod.K().greet() == "base+7" and mod.K().size == 10
    source = rt.source(mod.__name__).splitlines()
    below = mod.K.below
    assert source[below.__code__.co_firstlineno - 1].strip() == "def below(self):"
    assert inspect.getsource(mod.K.__dict__["size"].func).strip().startswith("@functools")
    with pytest.raises(ValueError) as raised:
        mod.K().below()
    line = raised.traceback[-1].lineno + 1
    assert source[line - 1].strip() == 'raise ValueError("below")'
