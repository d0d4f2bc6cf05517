"""After a patch the live program behaves as a fresh import of the new source would, on code
shaped like real libraries (more-itertools, toolz, boltons): slotted classes, dataclass
parameters, class-based and changed decorators, registries, later rebindings, constants,
star re-exports. Each test builds a small real package on sys.path."""

from __future__ import annotations

import dataclasses
import importlib
import os
import sys

import pytest
from kernel_support import Project, src

from liveforge import Runtime
from liveforge.kernel.errors import PatchError


def _package(project: Project, **modules: str) -> str:
    """Write a package `<prefix>pkg` with the given modules; returns its name."""
    name = project.name("pkg")
    for module, text in modules.items():
        path = name if module == "__init__" else f"{name}.{module}"
        if module == "__init__":
            (project.root / name).mkdir()
            (project.root / name / "__init__.py").write_text(src(text))
        else:
            project.write(path, text)
    importlib.invalidate_caches()
    return name


STATS = """
    import dataclasses


    class RunningMean:
        __slots__ = ("total", "count")

        def __init__(self):
            self.total = 0
            self.count = 0

        def add(self, x):
            self.total += x
            self.count += 1

        def mean(self):
            return self.total / self.count


    @dataclasses.dataclass(slots=True)
    class Point:
        x: int = 0
        y: int = 0

        def norm(self):
            return abs(self.x) + abs(self.y)
    """


def test_patching_a_method_of_a_slotted_class_keeps_every_instance_working(
    project: Project, rt: Runtime
) -> None:
    """Instances of a `__slots__` class and a `dataclass(slots=True)`, made before and after
    a method patch, run the new method; rollback brings back the very same method object."""
    mod = project.module(STATS)
    old_mean, old_point = mod.RunningMean(), mod.Point(3, -4)
    old_mean.add(4)
    method = mod.RunningMean.__dict__["mean"]
    rt.patch(f"{mod.__name__}.RunningMean.mean", "def mean(self):\n    return self.total * 10\n")
    rt.patch(f"{mod.__name__}.Point.norm", "def norm(self):\n    return self.x * self.y\n")
    fresh = mod.RunningMean()
    fresh.add(2)
    assert (old_mean.mean(), fresh.mean()) == (40, 20)
    assert (old_point.norm(), mod.Point(2, 5).norm()) == (-12, 10)
    rt.rollback()
    rt.rollback()
    assert mod.RunningMean.__dict__["mean"] is method and old_mean.mean() == 4.0
    assert old_point.norm() == 7


def test_a_frozen_ordered_dataclass_losing_its_parameters_loses_their_methods(
    project: Project, rt: Runtime
) -> None:
    """Dropping frozen=True and order=True removes the generated __setattr__ and ordering
    methods, as a fresh import would have none; rollback makes it frozen again."""
    mod = project.module(
        "import dataclasses\n\n@dataclasses.dataclass(frozen=True, order=True)\n"
        "class Version:\n    major: int = 1\n"
    )
    before = mod.Version(1)
    rt.patch(
        f"{mod.__name__}.Version", "@dataclasses.dataclass\nclass Version:\n    major: int = 1\n"
    )
    before.major = 5
    assert before.major == 5 and "__lt__" not in vars(mod.Version)
    rt.rollback()
    with pytest.raises(dataclasses.FrozenInstanceError):
        mod.Version(2).major = 3
    assert mod.Version(1) < mod.Version(2)


CURRY = """
    class curry:
        def __init__(self, func):
            self.func = func
            self.calls = 0

        def __call__(self, *args):
            self.calls += 1
            return self.func(*args)


    class cachedproperty:
        def __init__(self, func):
            self.func = func

        def __get__(self, obj, owner):
            if obj is None:
                return self
            value = obj.__dict__[self.func.__name__] = self.func(obj)
            return value


    @curry
    def add(x, y):
        return x + y


    class Box:
        @cachedproperty
        def size(self):
            return 1
    """


def test_class_based_decorators_are_updated_in_place(project: Project, rt: Runtime) -> None:
    """A curry-style instance and a cachedproperty keep their identity: aliases and
    from-import copies taken before the patch run the new code; rollback restores the
    original function and state."""
    pkg = _package(project, __init__="from .fn import *\n", fn=CURRY)
    mod = importlib.import_module(f"{pkg}.fn")
    alias, copied = mod.add, importlib.import_module(pkg).add
    rt.patch(f"{mod.__name__}.add", "@curry\ndef add(x, y):\n    return x * y\n")
    rt.patch(f"{mod.__name__}.Box.size", "@cachedproperty\ndef size(self):\n    return 2\n")
    assert (alias(3, 4), copied(3, 4), mod.add is alias) == (12, 12, True)
    assert mod.Box().size == 2
    rt.rollback_to()
    assert alias(3, 4) == 7 and mod.Box().size == 1
    assert mod.add is alias and importlib.import_module(pkg).add is alias


DECORATED = """
    import functools

    REGISTRY = []


    def register(func):
        REGISTRY.append(func)
        return func


    def tag(func):
        @functools.wraps(func)
        def wrapper(*args):
            return ("v1", func(*args))
        return wrapper


    @register
    def handler():
        return "h1"


    @tag
    def double(x):
        return 2 * x


    class Service:
        @tag
        def run(self, x):
            return x
    """


def test_a_changed_decorator_reaches_the_functions_it_decorated_before(
    project: Project, rt: Runtime
) -> None:
    """Patching a decorator updates the wrappers it made earlier (functions and methods)."""
    mod = project.module(DECORATED)
    double, service = mod.double, mod.Service()
    rt.patch(
        f"{mod.__name__}.tag",
        "def tag(func):\n    @functools.wraps(func)\n    def wrapper(*args):\n"
        "        return ('v2', func(*args))\n    return wrapper\n",
    )
    assert double(2) == ("v2", 4) and service.run(1) == ("v2", 1)
    rt.rollback()
    assert double(2) == ("v1", 4)


def test_a_method_whose_decorator_changed_runs_the_new_decorator(
    project: Project, rt: Runtime
) -> None:
    """Swapping a method's decorator for another changes what earlier bound methods run."""
    mod = project.module(
        src(DECORATED) + "\n\ndef shout(func):\n    def loud(*args):\n"
        "        return str(func(*args)).upper()\n    return loud\n"
    )
    bound = mod.Service().run
    rt.patch(f"{mod.__name__}.Service.run", "@shout\ndef run(self, x):\n    return f'r{x}'\n")
    assert bound(1) == "R1" and mod.Service().run(2) == "R2"


def test_a_registered_function_replaces_its_registry_entry(project: Project, rt: Runtime) -> None:
    """A decorator that collects functions holds one entry per function after a patch,
    the live (updated) object, which a body-only edit updates without running the
    decorator again (and says so); rollback restores the list as it was."""
    mod = project.module(DECORATED)
    entry = mod.REGISTRY[0]
    change = rt.patch(f"{mod.__name__}.handler", "@register\ndef handler():\n    return 'h2'\n")
    assert mod.REGISTRY == [entry] and entry() == "h2"
    assert any("its decorators (@register) not run again" in note for note in change.notes)
    rt.rollback()
    assert mod.REGISTRY == [entry] and entry() == "h1"


def test_a_name_bound_again_later_keeps_the_later_binding(project: Project, rt: Runtime) -> None:
    """`class X` then `try: from ._fast import X`: patching X leaves X what the later
    statement bound (a fresh import's X), says so, and rollback leaves it there."""
    pkg = _package(
        project,
        __init__="",
        _fast="class Parser:\n    kind = 'fast'\n",
        parse="class Parser:\n    kind = 'slow'\n\n\ntry:\n    from ._fast import Parser\n"
        "except ImportError:\n    pass\n",
    )
    mod = importlib.import_module(f"{pkg}.parse")
    change = rt.patch(f"{mod.__name__}.Parser", "class Parser:\n    kind = 'slow2'\n")
    assert mod.Parser.kind == "fast" and "binds it again" in change.notes[0]
    rt.rollback()
    assert mod.Parser.kind == "fast"


def test_a_changed_constant_reaches_defaults_and_from_import_copies(
    project: Project, rt: Runtime
) -> None:
    """A new constant is what defaults reading it and `from`-import/star copies hold; a
    value computed from it at import is named in a note; rollback puts every copy back."""
    pkg = _package(
        project,
        __init__="from .conf import *\n",
        conf="LIMIT = 10\nDOUBLE = LIMIT * 2\n\n\n"
        "def clip(x, top=LIMIT):\n    return min(x, top)\n",
        user="from .conf import LIMIT as CAP\n",
    )
    conf = importlib.import_module(f"{pkg}.conf")
    user, package = importlib.import_module(f"{pkg}.user"), sys.modules[pkg]
    clip = conf.clip
    change = rt.patch(f"{pkg}.conf.LIMIT", "LIMIT = 50")
    assert (clip(99), user.CAP, package.LIMIT, package.clip is clip) == (50, 50, 50, True)
    assert any("DOUBLE" in note and "LIMIT" in note for note in change.notes)
    rt.rollback()
    assert (clip(99), user.CAP, package.LIMIT) == (10, 10, 10)


def test_runtime_state_survives_patch_patch_module_and_rollback(
    project: Project, rt: Runtime
) -> None:
    """An attribute set on the module at runtime (in no source) and a constant the program
    rebound at runtime are the program's state: a patch of a function, a whole-module patch
    that leaves their statements alone, and the rollbacks of both keep them (same objects);
    a whole-module patch that changes the constant's statement sets it, and its rollback
    gives back the runtime value."""
    mod = project.module("LIMIT = 10\n\n\ndef f(x):\n    return x + LIMIT\n")
    cache = {"warm": True}
    mod.cache, mod.LIMIT = cache, 99

    def state() -> tuple[object, ...]:
        return getattr(mod, "cache", None) is cache, mod.LIMIT, mod.f(1)

    assert state() == (True, 99, 100)
    rt.patch(f"{mod.__name__}.f", "def f(x):\n    return x + LIMIT + 1000\n")
    assert state() == (True, 99, 1100)
    text = rt.source(mod.__name__).replace("+ 1000", "+ 5000")
    rt.patch_module(mod.__name__, text)
    assert state() == (True, 99, 5100)
    rt.rollback()
    assert state() == (True, 99, 1100)
    rt.rollback()
    assert state() == (True, 99, 100)
    rt.patch_module(mod.__name__, rt.source(mod.__name__).replace("= 10", "= 11"))
    assert state() == (True, 11, 12)
    rt.rollback()
    assert state() == (True, 99, 100)


def test_a_star_re_exported_name_is_viewed_and_patched_where_it_is_defined(
    project: Project, rt: Runtime
) -> None:
    """`pkg.chunked` (bound by `from .more import *`) shows the source in pkg.more, and a
    patch of it changes pkg.more, not the package's __init__."""
    pkg = _package(
        project,
        __init__="from .more import *\nfrom .recipes import take\n",
        more="__all__ = ['chunked']\n\n\ndef chunked(items, n):\n    return [items[:n]]\n",
        recipes="def take(n, items):\n    return list(items)[:n]\n",
    )
    package = importlib.import_module(pkg)
    assert rt.source(f"{pkg}.chunked").startswith("def chunked(items, n):")
    assert rt.source(f"{pkg}.take").startswith("def take(n, items):")
    change = rt.patch(f"{pkg}.chunked", "def chunked(items, n):\n    return [items[n:]]\n")
    assert change.module == f"{pkg}.more" and f"{pkg}.more.chunked" in change.notes[0]
    assert package.chunked([1, 2, 3], 1) == [[2, 3]] and rt.source(pkg).count("def ") == 0


def test_module_text_with_one_failing_statement_changes_nothing(
    project: Project, rt: Runtime
) -> None:
    """New module text whose one statement raises is refused, naming the line, and every
    other definition in it stays as it was."""
    mod = project.module("def f():\n    return 1\n\n\ndef g():\n    return 2\n")
    f = mod.f
    bad = "def f():\n    return 10\n\n\nBROKEN = 1 // 0\n\n\ndef g():\n    return 20\n"
    with pytest.raises(PatchError, match=r"line 5.*Nothing was changed"):
        rt.patch_module(mod.__name__, bad)
    assert (f(), mod.g(), rt.history()) == (1, 2, [])


def test_rollback_restores_what_was_there_not_a_replay(project: Project, rt: Runtime) -> None:
    """Rollback gives back the exact objects: names bound through a nested star import stay
    bound, and a function made through globals() — which the patch updated, as a fresh
    import would have made it from the new code — runs its old code again."""
    mod = project.module(
        "try:\n    from os import *\nexcept ImportError:\n    pass\n\n\ndef make():\n"
        "    def made():\n        return 'old'\n    return made\n\n\nglobals()['made'] = make()\n"
    )
    made = mod.made
    new = rt.source(mod.__name__).replace("pass", "X = 1").replace("'old'", "'new'")
    rt.patch_module(mod.__name__, new)
    assert made() == "new" and mod.system is os.system
    rt.rollback()
    assert mod.system is os.system and mod.made is made and made() == "old"


def test_changed_lru_cache_parameters_take_effect(project: Project, rt: Runtime) -> None:
    """A new maxsize is what the name's cache has after the patch, and a reference taken
    before runs the new code; a note says the old wrapper forwards."""
    mod = project.module(
        "import functools\n\n@functools.lru_cache(maxsize=None)\ndef f(x):\n    return x\n"
    )
    before = mod.f
    change = rt.patch(
        f"{mod.__name__}.f", "@functools.lru_cache(maxsize=2)\ndef f(x):\n    return -x\n"
    )
    assert mod.f.cache_parameters()["maxsize"] == 2 and before(3) == -3
    assert any("forwards" in note for note in change.notes)
    rt.rollback()
    assert mod.f is before and before(3) == 3  # no result of the patched code is cached


def test_a_subclass_registered_by_init_subclass_keeps_one_entry(
    project: Project, rt: Runtime
) -> None:
    """A base whose __init_subclass__ collects subclasses holds the live subclass once after
    the subclass is patched, and its instances run the new method."""
    mod = project.module(
        "class Plugin:\n    registry = []\n\n    def __init_subclass__(cls):\n"
        "        Plugin.registry.append(cls)\n\n\nclass Csv(Plugin):\n"
        "    def load(self):\n        return 'csv1'\n"
    )
    plugin = mod.Csv()
    rt.patch(
        f"{mod.__name__}.Csv", "class Csv(Plugin):\n    def load(self):\n        return 'csv2'\n"
    )
    assert mod.Plugin.registry == [mod.Csv] and plugin.load() == "csv2"
    rt.rollback()
    assert mod.Plugin.registry == [mod.Csv] and plugin.load() == "csv1"
