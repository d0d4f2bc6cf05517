"""Patching functions keeps their identity: every earlier reference runs the new code."""

from __future__ import annotations

import inspect
import threading
import traceback

import pytest
from kernel_support import src

from liveforge import PatchExecutionError, PatchSyntaxError

BASE = src("""
    import functools

    def f(x, y=1, *, z=2):
        "old doc"
        return ("old", x, y, z)

    def deco(fn):
        @functools.wraps(fn)
        def wrapper(*args):
            return ("deco", fn(*args))
        return wrapper

    def deco2(fn):
        @functools.wraps(fn)
        def wrapper(*args):
            return ("deco2", fn(*args))
        return wrapper

    @deco
    def g(x):
        return x

    @functools.lru_cache(maxsize=None)
    def cached(x):
        return x + 1

    def make_adder(n):
        def add(x):
            return x + n
        return add

    def after():
        return 1 / 0
""")


@pytest.fixture
def mod(project):
    return project.module(BASE)


def test_from_import_reference_runs_new_code(rt, mod):
    """A function imported by name before the patch runs the new body."""
    f = mod.f
    rt.patch(f"{mod.__name__}.f", "def f(x, y=1, *, z=2):\n    return ('new', x)\n")
    assert f(5) == ("new", 5) and mod.f is f


def test_callback_in_registry_runs_new_code(rt, mod):
    """A function stored in a list (a callback registry) runs the new body."""
    callbacks = [mod.f]
    rt.patch(f"{mod.__name__}.f", "def f(x, y=1, *, z=2):\n    return 'cb'\n")
    assert callbacks[0](1) == "cb"


def test_defaults_are_updated(rt, mod):
    """Positional defaults come from the new source."""
    rt.patch(f"{mod.__name__}.f", "def f(x, y=10, *, z=2):\n    return (x, y)\n")
    assert mod.f(1) == (1, 10)


def test_keyword_only_defaults_are_updated(rt, mod):
    """Keyword-only defaults come from the new source."""
    rt.patch(f"{mod.__name__}.f", "def f(x, y=1, *, z=30):\n    return z\n")
    assert mod.f(1) == 30


def test_docstring_and_annotations_are_updated(rt, mod):
    """__doc__ and __annotations__ follow the new source."""
    rt.patch(
        f"{mod.__name__}.f",
        'def f(x: int, y=1, *, z=2) -> str:\n    "new doc"\n    return str(x)\n',
    )
    assert mod.f.__doc__ == "new doc"
    assert mod.f.__annotations__ == {"x": int, "return": str}


def test_closure_free_variable_change_forwards_and_says_so(rt, mod):
    """A changed set of free variables makes the old object forward to the new function."""
    add = mod.make_adder(2)
    f = mod.f
    change = rt.patch(
        f"{mod.__name__}.f",
        src("""
        def f(x, y=1, *, z=2):
            def inner():
                return x * 2
            return inner()
    """),
    )
    assert f(4) == 8 and add(1) == 3
    rt.patch(
        f"{mod.__name__}.make_adder",
        src("""
        def make_adder(n):
            def add(x):
                return x + n + 100
            return add
    """),
    )
    # the closure made before the patch (and before `make_adder` moved) runs the new code
    assert mod.make_adder(1)(1) == 102 and add(1) == 103
    assert change.notes == []


def test_wrapped_function_is_updated_through_its_wrapper(rt, mod):
    """A functools.wraps-decorated function keeps its wrapper object and runs the new body."""
    g = mod.g
    rt.patch(f"{mod.__name__}.g", "@deco\ndef g(x):\n    return -x\n")
    assert g is mod.g and g(3) == ("deco", -3)
    assert inspect.getsource(g) == "@deco\ndef g(x):\n    return -x\n"


def test_changed_decorator_is_reapplied(rt, mod):
    """Switching to another decorator takes effect on the existing wrapper object."""
    g = mod.g
    rt.patch(f"{mod.__name__}.g", "@deco2\ndef g(x):\n    return x * 10\n")
    assert g(2) == ("deco2", 20)


def test_lru_cache_is_updated_and_cleared(rt, mod):
    """An lru_cache front keeps its identity, runs the new body and drops stale results."""
    cached = mod.cached
    assert cached(1) == 2
    rt.patch(
        f"{mod.__name__}.cached",
        "@functools.lru_cache(maxsize=None)\ndef cached(x):\n    return x + 100\n",
    )
    assert cached(1) == 101 and mod.cached is cached


def test_getsource_shows_in_memory_source(rt, mod):
    """inspect.getsource returns the patched text, not the file's."""
    new = "def f(x, y=1, *, z=2):\n    return 'mem'\n"
    rt.patch(f"{mod.__name__}.f", new)
    assert inspect.getsource(mod.f) == new


def test_tracebacks_point_at_shifted_lines(rt, mod):
    """After a patch adds lines above it, a later function's traceback shows the right line."""
    rt.patch(
        f"{mod.__name__}.f",
        "def f(x, y=1, *, z=2):\n    a = 1\n    b = 2\n    c = 3\n    return a\n",
    )
    with pytest.raises(ZeroDivisionError) as info:
        mod.after()
    frame = traceback.extract_tb(info.value.__traceback__)[-1]
    assert frame.line == "return 1 / 0"
    assert (
        rt.source(f"{mod.__name__}.after")
        .splitlines()[frame.lineno - mod.after.__code__.co_firstlineno]
        .strip()
        == "return 1 / 0"
    )


def test_syntax_error_leaves_function_intact(rt, mod):
    """A patch that does not compile changes nothing."""
    before = rt.source(mod.__name__)
    with pytest.raises(PatchSyntaxError) as info:
        rt.patch(f"{mod.__name__}.f", "def f(x:\n    return\n")
    assert "does not compile" in str(info.value)
    assert mod.f(1) == ("old", 1, 1, 2) and rt.source(mod.__name__) == before


def test_decorator_failure_leaves_function_intact(rt, mod):
    """An exception while executing the new definition changes nothing."""
    with pytest.raises(PatchExecutionError) as info:
        rt.patch(f"{mod.__name__}.g", "@undefined_decorator\ndef g(x):\n    return 0\n")
    assert "NameError" in str(info.value) and info.value.line is not None
    assert mod.g(1) == ("deco", 1)
    assert rt.history() == []


def test_new_function_is_added(rt, mod):
    """Patching a name that does not exist adds it at the end of the module."""
    change = rt.patch(f"{mod.__name__}.brand_new", "def brand_new():\n    return 7\n")
    assert mod.brand_new() == 7 and change.added == ["brand_new"]
    assert rt.source(mod.__name__).endswith("def brand_new():\n    return 7\n")


def test_wrong_name_in_source_is_refused(rt, mod):
    """The source must define the target's name."""
    with pytest.raises(Exception, match="must be one definition of 'f'"):
        rt.patch(f"{mod.__name__}.f", "def other():\n    pass\n")


def test_constant_can_be_patched(rt, mod, project):
    """A module-level constant is a target too."""
    m = project.module("LIMIT = 3\n\ndef get():\n    return LIMIT\n")
    rt.patch(f"{m.__name__}.LIMIT", "LIMIT = 9\n")
    assert m.get() == 9


def test_concurrent_calls_see_old_or_new_never_a_mix(rt, mod, project):
    """A thread calling a function while it is patched sees a consistent code+defaults pair."""
    m = project.module("def f(x=1):\n    return ('a', x)\n")
    versions = ["def f(x=2):\n    return ('b', x)\n", "def f(x=1):\n    return ('a', x)\n"]
    seen: set[tuple[str, int]] = set()
    stop = threading.Event()

    def caller() -> None:
        while not stop.is_set():
            seen.add(m.f())

    thread = threading.Thread(target=caller)
    thread.start()
    try:
        for i in range(300):
            rt.patch(f"{m.__name__}.f", versions[i % 2])
    finally:
        stop.set()
        thread.join()
    assert seen <= {("a", 1), ("b", 2)}
