"""Regression tests for patch-engine bugs found by the random edit test (one per bug)."""

from __future__ import annotations

import inspect
import traceback

from kernel_support import Project, src

from liveforge import Runtime

DECO = src("""
    import functools


    def deco(fn):
        @functools.wraps(fn)
        def wrapper(*args, **kwargs):
            return ("deco", fn(*args, **kwargs))
        return wrapper
    """)


def _raised_line(call: object) -> int:
    try:
        call()  # type: ignore[operator]
    except ValueError as exc:
        return traceback.extract_tb(exc.__traceback__)[-1].lineno or 0
    raise AssertionError("expected ValueError")


def test_moving_decorated_function_shifts_its_own_code_not_the_decorators(
    project: Project, rt: Runtime
) -> None:
    """Lines removed above a decorated function move its code, while the decorator's wrapper
    code (defined elsewhere in the module) keeps its line numbers."""
    filler = "".join(f"C{i} = {i}\n" for i in range(20))
    tail = src("""


        @deco
        def f(x):
            if x:
                raise ValueError(x)
            return x
        """)
    module = project.module(DECO + "\n\n" + filler + tail)
    wrapper_line = module.f.__code__.co_firstlineno
    rt.patch_module(module.__name__, DECO + "\n\n" + tail)
    assert module.f.__code__.co_firstlineno == wrapper_line
    assert inspect.getsource(module.f).startswith("@deco\ndef f(x):")
    lines = rt.source(module.__name__).splitlines()
    assert lines[_raised_line(lambda: module.f(1)) - 1].strip() == "raise ValueError(x)"


def test_moving_class_shifts_decorated_methods_inner_function(
    project: Project, rt: Runtime
) -> None:
    """A class that moves keeps exact line numbers for methods behind a decorator."""
    body = src("""


        class A:
            @deco
            def m(self, x):
                if x:
                    raise ValueError(x)
                return x
        """)
    module = project.module(DECO + "\nX = 1\nY = 2\nZ = 3\n" + body)
    rt.patch_module(module.__name__, DECO + body)
    assert inspect.getsource(module.A.m).startswith("    @deco\n    def m(self, x):")
    lines = rt.source(module.__name__).splitlines()
    line = _raised_line(lambda: module.A().m(1))
    assert lines[line - 1].strip() == "raise ValueError(x)"


def test_method_added_to_live_class_can_use_zero_argument_super(
    project: Project, rt: Runtime
) -> None:
    """A method newly added to an existing class calls super() against the live class."""
    module = project.module(
        src("""
        class Base:
            def hook(self):
                return 1


        class A(Base):
            pass
        """)
    )
    old = module.A()
    rt.patch(f"{module.__name__}.A.extra", "def extra(self):\n    return super().hook() + 1\n")
    rt.patch(
        f"{module.__name__}.A.prop", "@property\ndef prop(self):\n    return super().hook() + 2\n"
    )
    assert (old.extra(), old.prop) == (2, 3)


def test_adding_lru_cache_keeps_earlier_references_live(project: Project, rt: Runtime) -> None:
    """A function that gains `functools.lru_cache` is the cached wrapper in the module, and a
    reference captured before runs the new code."""
    module = project.module(DECO + "\n\ndef f(x):\n    return x\n")
    captured = module.f
    change = rt.patch(
        f"{module.__name__}.f", "@functools.lru_cache(maxsize=None)\ndef f(x):\n    return x * 10\n"
    )
    assert (captured(2), module.f(2)) == (20, 20)
    assert module.f.cache_info().hits == 1
    assert any("forwards every call" in note for note in change.notes)


def test_removing_lru_cache_keeps_earlier_references_live(project: Project, rt: Runtime) -> None:
    """A function that loses `functools.lru_cache` is a plain function in the module, and the
    cached wrapper captured before (cache cleared) runs the new code."""
    module = project.module(
        DECO + "\n\n@functools.lru_cache(maxsize=None)\ndef f(x):\n    return x\n"
    )
    captured = module.f
    assert captured(2) == 2
    rt.patch(f"{module.__name__}.f", "def f(x):\n    return x * 10\n")
    assert not hasattr(module.f, "cache_info")
    assert (captured(2), module.f(2)) == (20, 20)
    assert inspect.getsource(captured) == "def f(x):\n    return x * 10\n"


def test_rolling_back_a_decorator_change_restores_behaviour(project: Project, rt: Runtime) -> None:
    """Rolling back a change that added `lru_cache` brings back the plain function's
    behaviour, for the module and for references captured before the change."""
    module = project.module(DECO + "\n\ndef f(x):\n    return x\n")
    captured = module.f
    rt.patch(
        f"{module.__name__}.f", "@functools.lru_cache(maxsize=None)\ndef f(x):\n    return x * 10\n"
    )
    rt.rollback()
    assert not hasattr(module.f, "cache_info")
    assert (module.f(3), captured(3)) == (3, 3)


def test_forwarder_frame_points_at_the_definitions_first_line(
    project: Project, rt: Runtime
) -> None:
    """When a closure change turns a function into a forwarder, a traceback through it shows
    the first line of the definition, not a line inside its body."""
    module = project.module(DECO + "\n\ndef f(x):\n    # note\n    return x\n")
    captured = module.f
    rt.patch(f"{module.__name__}.f", "@deco\ndef f(x):\n    # note\n    return 1 // x\n")
    try:
        captured(0)
    except ZeroDivisionError as exc:
        frames = traceback.extract_tb(exc.__traceback__)[1:]
    lines = rt.source(module.__name__).splitlines()
    shown = [lines[f.lineno - 1].strip() for f in frames if f.lineno]
    assert shown == ["@deco", 'return ("deco", fn(*args, **kwargs))', "return 1 // x"]


def test_reload_of_a_file_equal_to_memory_keeps_changes_live(project: Project, rt: Runtime) -> None:
    """A forced reload that finds the file equal to memory changes nothing, so the earlier
    changes stay live and can still be rolled back."""
    module = project.module("def f():\n    return 1\n")
    change = rt.patch(f"{module.__name__}.f", "def f():\n    return 2\n")
    project.write(module.__name__, rt.source(module.__name__))
    rt.reload(module.__name__, force=True)
    assert [c.id for c in rt.history() if c.status.value != "rolled_back"] == [change.id]
    rt.rollback()
    assert module.f() == 1


def test_captured_cache_is_cleared_when_the_code_behind_it_changes(
    project: Project, rt: Runtime
) -> None:
    """An `lru_cache` wrapper captured before its decorator was removed never answers from a
    cache filled by code that a later patch replaced."""
    module = project.module(
        DECO + "\n\n@functools.lru_cache(maxsize=None)\ndef f(x):\n    return x\n"
    )
    captured = module.f
    rt.patch(f"{module.__name__}.f", "def f(x):\n    return x * 10\n")
    assert captured(2) == 20
    rt.patch(f"{module.__name__}.f", "def f(x):\n    return x * 100\n")
    assert captured(2) == 200
    rt.patch(f"{module.__name__}.f", "@deco\ndef f(x):\n    return x * 1000\n")
    assert captured(2) == ("deco", 2000)
    rt.patch(f"{module.__name__}.f", "@deco\ndef f(x):\n    return x * 3\n")
    assert captured(2) == ("deco", 6)


def test_patching_a_method_of_a_tab_indented_class(project: Project, rt: Runtime) -> None:
    """A method patched (or added) in a class indented with tabs is re-indented with tabs,
    so the module still compiles."""
    module = project.module(
        "class C:\n\tdef m(self):\n\t\treturn 1\n\n\tdef n(self):\n\t\treturn 2\n"
    )
    rt.patch(f"{module.__name__}.C.m", "def m(self):\n    return 10\n")
    rt.patch(f"{module.__name__}.C.k", "def k(self):\n    return 30\n")
    obj = module.C()
    assert (obj.m(), obj.n(), obj.k()) == (10, 2, 30)
    assert rt.source(f"{module.__name__}.C.m") == "\tdef m(self):\n\t    return 10\n"


ENUM = "import enum\n\n\nclass Color(enum.Enum):\n{members}\n"


def test_enum_alias_added_by_a_patch_is_an_alias(project: Project, rt: Runtime) -> None:
    """A member with the value of another becomes an alias, as in a fresh class."""
    module = project.module(ENUM.format(members="    RED = 1\n    GREEN = 2"))
    red = module.Color.RED
    rt.patch(
        f"{module.__name__}.Color",
        ENUM.format(members="    RED = 1\n    GREEN = 2\n    CRIMSON = 1").split("\n\n\n")[1],
    )
    assert module.Color.CRIMSON is red is module.Color.RED
    assert list(module.Color.__members__) == ["RED", "GREEN", "CRIMSON"]
    assert list(module.Color) == [red, module.Color.GREEN]


def test_enum_alias_that_gets_its_own_value_becomes_a_real_member(
    project: Project, rt: Runtime
) -> None:
    """A name that was an alias and now has its own value is a new member; the member it
    aliased keeps its name and identity."""
    module = project.module(ENUM.format(members="    RED = 1\n    CRIMSON = 1"))
    red = module.Color.RED
    rt.patch(
        f"{module.__name__}.Color",
        ENUM.format(members="    RED = 1\n    CRIMSON = 3").split("\n\n\n")[1],
    )
    assert module.Color.RED is red and red.name == "RED"
    assert module.Color.CRIMSON is not red
    assert [m.name for m in module.Color] == ["RED", "CRIMSON"]
    assert module.Color(3) is module.Color.CRIMSON


def test_turning_on_future_annotations_recompiles_every_definition(
    project: Project, rt: Runtime
) -> None:
    """Adding `from __future__ import annotations` at the top makes every function's
    annotations strings, as a fresh import would, not only the definitions near the edit."""
    body = (
        "import functools\n\n\ndef f(x: int) -> int:\n    return x\n\n\nclass C:\n"
        "    def m(self, x: int) -> int:\n        return x\n"
    )
    module = project.module(body)
    rt.patch_module(module.__name__, "from __future__ import annotations\n" + body)
    assert module.f.__annotations__ == {"x": "int", "return": "int"}
    assert module.C.m.__annotations__ == {"x": "int", "return": "int"}


def test_many_decorated_functions_changed_at_once_keep_their_own_code(
    project: Project, rt: Runtime
) -> None:
    """When one patch re-creates many decorated functions, each live function ends up with
    its own new code (new objects are not confused with one another)."""

    def source(offset: int) -> str:
        return DECO + "".join(
            f"\n\n@deco\ndef f{i}(x):\n    return x + {i * 1000 + offset}\n" for i in range(40)
        )

    module = project.module(source(0))
    rt.patch_module(module.__name__, source(1))
    assert [module.__dict__[f"f{i}"](0) for i in range(40)] == [
        ("deco", i * 1000 + 1) for i in range(40)
    ]


def test_closures_made_by_a_moved_decorator_follow_it(project: Project, rt: Runtime) -> None:
    """Wrappers a decorator made before lines were inserted above it report the decorator's
    new lines in tracebacks."""
    tail = src("""
        @deco
        def f(x):
            return 1 // x
        """)
    module = project.module(DECO + "\n\n" + tail)
    rt.patch_module(module.__name__, "X = 1\nY = 2\n" + DECO + "\n\n" + tail)
    try:
        module.f(0)
    except ZeroDivisionError as exc:
        lines = [(f.lineno, f.line) for f in traceback.extract_tb(exc.__traceback__)[1:]]
    source = rt.source(module.__name__).splitlines()
    assert [(source[n - 1].strip(), line) for n, line in lines if n] == [
        ('return ("deco", fn(*args, **kwargs))', 'return ("deco", fn(*args, **kwargs))'),
        ("return 1 // x", "return 1 // x"),
    ]


def test_function_defined_in_an_if_block_moves_with_it(project: Project, rt: Runtime) -> None:
    """A function defined inside an `if` block (not a plain def statement) keeps exact line
    numbers when lines are inserted above it."""
    tail = "if True:\n    def f(x):\n        return 1 // x\n"
    module = project.module(tail)
    rt.patch_module(module.__name__, "X = 1\n\n\n" + tail)
    assert inspect.getsource(module.f) == "    def f(x):\n        return 1 // x\n"


def test_objects_built_later_in_a_patch_are_not_taken_for_collected_ones(
    project: Project, rt: Runtime
) -> None:
    """A nested class built again is replaced by the live one in the new outer class, so the
    collector can free it (and its methods) before the patch is done; methods a later
    statement of the same patch creates may then get their ids, and must still be merged as
    themselves, not as the live methods the freed ones stood for."""
    count = 30
    inner = "".join(f"\n        def m{i}(self):\n            return {i}\n" for i in range(count))
    later = "".join(f"\n    def n{i}(self):\n        return ('later', {i})\n" for i in range(count))

    def source(tag: int, collect: str, later_body: str) -> str:
        # `gc.collect()` makes the collector run at this point of the patch (as it may on
        # any allocation), and the new methods of Later are made where the freed ones were.
        return (
            "import gc\n\n\nclass Root:\n    def __init_subclass__(cls, **kwargs):\n"
            "        super().__init_subclass__(**kwargs)\n\n\n"
            f"class Outer:\n    TAG = {tag}\n\n    class Inner(Root):{inner}\n\n"
            f"COLLECTED = {collect}\n\n\nclass Later:\n{later_body}"
        )

    for _ in range(3):  # where freed memory is reused is the allocator's choice
        module = project.module(source(0, "0", "    pass\n"))
        rt.patch_module(module.__name__, source(1, "gc.collect()", later))
        made, nested = module.Later(), module.Outer.Inner()
        assert [getattr(made, f"n{i}")() for i in range(count)] == [
            ("later", i) for i in range(count)
        ]
        assert [getattr(nested, f"m{i}")() for i in range(count)] == list(range(count))
