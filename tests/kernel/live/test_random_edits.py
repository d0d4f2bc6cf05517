"""Seeded random edit sequences applied live leave a module that behaves like a fresh import
of the final source.

A small model of a module (functions with decorators, classes with methods of every kind,
class constants and nested classes, dataclasses, enums, constants, blank lines and comments;
see `random_items`) is edited at random (`random_module`, `random_apply`). Each edit is applied to a
real module on sys.path through `Runtime.patch` (one definition), `Runtime.patch_module`
(whole module) or `Runtime.reload` (whole module written to disk); now and then the newest
change is rolled back with `Runtime.rollback`, or a patch that must fail (a statement that
raises or does not compile) checks that nothing changed. After the sequence the live module
is compared with a fresh import of the final text from another folder: public names, class
members, results of calling everything with sample arguments, instance reprs,
`inspect.getsource` and the lines a traceback points at. References captured before the
sequence (from-imports, instances, bound methods, enum members) must run the final code,
and module and class state must survive. Two other modules import from it: one copies
constants with `from m import ...` and makes a default and a value from one, the other
re-exports it with `from m import *` and binds one name itself; both must hold what fresh
imports of them would. A registry keyed by a decorator's argument (which edits change) must
hold what a fresh import's does.

Functions also get wrapper objects (a class holding `func`, `functools.partial`,
`functools.lru_cache`, toolz's `curry` and `memoize`, a click command in a group), are
registered by an object's method (one registry plain, one whose entries declare
`__conform__`), and `singledispatch` functions with `def _` overloads, `cached_property`
members, aliases (`al0 = f2`, `Al1 = Beta`) and later wrappings (`f2 = deco(f2)`) come and go.
Registries must hold what a fresh import's do, aliases the same objects; a reference taken
before that a change's note says still holds an old object is not compared, nor a removed
function a note says a registry still holds, nor the entry of `_REG.by_name` a note says
still holds a function whose decorator changed (`@_REG.register` became `@toolz.memoize`)
or that a rolled-back change defined (notes a rollback gives the changes it undid count as
well as a new change's).
Rollbacks undo the newest change, one with every later one, or all after one. Seeds in
`KNOWN` still end in a divergence without a note.
A failure prints the seed and the edit sequence; replay one seed with
`pytest tests/kernel/live/test_random_edits.py -k "seed_37-"`.
"""

from __future__ import annotations

import enum
import functools
import importlib.util
import inspect
import linecache
import random
import re
import sys
import traceback
import types
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import click
import pytest
from kernel_support import Project
from random_apply import edit
from random_importers import STAR, USER, importer_differences
from random_items import factory_shape, identities, render
from random_module import ALIASES, CLASSES, DISPATCH, ENUMS, FAST, FUNCS, Sequence

from liveforge import Runtime

#: the suite's share of the seeds (0-399 were run outside it, and all pass: 287, 308 and 372
#: end with a registration a rolled-back change made, which a dict keeps and the rollback's
#: note names); 64 keep CI inside its time.
SEEDS = range(64)
#: Seeds whose sequences still end in a divergence liveforge does not yet say in a note,
#: each with what differs. Not strict: other Python versions may number lines otherwise.
KNOWN: dict[int, str] = {}
EDITS_PER_SEQUENCE = 20
#: arguments a singledispatch function is called with (one per overload type, and an int)
DISPATCH_ARGS = [5, "ab", 1.5, (1, 2)]
SAMPLE_CALLS: list[tuple[tuple[Any, ...], dict[str, Any]]] = [
    ((5,), {}),
    ((13,), {}),
    ((2,), {"y": 1}),
    ((4, 6), {}),
]


# -- observing behaviour --------------------------------------------------------------------


def outcome(call: Callable[[], Any], filename: str) -> str:
    """What a call returns, or the exception and the lines of `filename` its traceback passed
    through (frames of liveforge's forwarders, which the fresh import has not, left out)."""
    try:
        return re.sub(r" at 0x[0-9a-f]+", "", repr(call()))
    except Exception as exc:
        frames = [
            (f.f_code.co_filename, n)
            for f, n in traceback.walk_tb(exc.__traceback__)
            if "__liveforge_target__" not in f.f_code.co_varnames
        ]
        where = "".join(
            f" @ {n}: {linecache.getline(filename, n).strip()}"
            for fname, n in frames
            if fname == filename
        )
        return f"{type(exc).__name__}: {exc}{where}"


def probe(value: Any, filename: str) -> list[str]:
    if not callable(value) or isinstance(value, type):
        return [repr(value)]
    if isinstance(value, click.Command):  # called, it would run a command line
        value = value.callback
    return [outcome(functools.partial(value, *a, **k), filename) for a, k in SAMPLE_CALLS]


def dispatched(value: Any, filename: str) -> list[str]:
    """A singledispatch function's overloads: the types it knows and calls with each."""
    calls = [outcome(functools.partial(value, arg), filename) for arg in DISPATCH_ARGS]
    return [repr(sorted(t.__name__ for t in value.registry)), *calls]


def inner(value: Any) -> Any:
    """The function wrapper objects hold (their own `fn`/`func`/`callback`, one inside
    another), or `value`."""
    for _ in range(4):
        held = next(
            (getattr(value, a) for a in ("fn", "func", "callback") if hasattr(value, a)), None
        )
        if not callable(held) or isinstance(value, types.MethodType):
            break
        value = held
    return value


def entries(
    module: types.ModuleType, held: Any, kept: set[str], retained: frozenset[str] = frozenset()
) -> list[tuple[str, bool, str]]:
    """What a registry holds: each entry's name, whether the module's name holds that very
    object, and what it returns; in a fresh import's order of definition, which a live
    update keeps only for entries it did not add (so sorted). Removed functions a change's
    note said stay in the registry (`kept`) are left out, and so are functions a note said
    the registry still holds after their decorators changed (`retained`, left out of the
    fresh import's entries too)."""
    filename = module.__file__ or ""
    items = held.items() if isinstance(held, dict) else ((None, v) for v in held)
    found = []
    for key, value in items:
        name = getattr(inner(value), "__name__", repr(value))
        now = getattr(module, name, None)
        same = value is now or value is inner(now)
        if (name in kept and not same) or name in retained:
            continue
        found.append((f"{key}:{name}", same, probe(value, filename)[0]))
    return sorted(found)


def members(cls: type) -> list[str]:
    """Class members, without dunders and slot descriptors (instance data)."""
    return sorted(
        n
        for n, v in vars(cls).items()
        if not (n.startswith("__") and n.endswith("__"))
        and not isinstance(v, types.MemberDescriptorType)
    )


def behaviour(
    module: types.ModuleType,
    instance: Callable[[str], Any],
    noted: set[str] | None = None,
    kept: set[str] | None = None,
    retained: frozenset[str] = frozenset(),
) -> dict[str, Any]:
    """Everything observable about the generated part of `module`, except what a change's
    note said keeps old objects (`noted`: names, or "callbacks" made at import; `kept`:
    removed functions registries still hold)."""
    filename = module.__file__ or ""
    seen: dict[str, Any] = {"names": sorted(n for n in vars(module) if not n.startswith("_"))}
    # What ran at import and holds objects of the module: callbacks a factory made, and the
    # registry of classes `Root.__init_subclass__` fills.
    noted = noted or set()
    if "callbacks" not in noted:
        callbacks = module._CALLBACKS
        seen["callbacks"] = [outcome(functools.partial(cb, 4), filename) for cb in callbacks]
    seen["plugins"] = {
        k: (v.__qualname__, v is getattr(module, k, None)) for k, v in module._PLUGINS.items()
    }
    seen["handlers"] = {
        k: (v.__name__, v is getattr(module, v.__name__, None)) for k, v in module._HANDLERS.items()
    }
    # a list registry: one entry per collected function, the one the name holds
    seen["collected"] = sorted(
        (getattr(v, "__name__", repr(v)), v is getattr(module, getattr(v, "__name__", ""), None))
        for v in module._COLLECTED
    )
    # registries an object's method fills (one with `__conform__`), and a click group
    kept = kept or set()
    seen["registry entries"] = entries(module, module._REG.entries, kept)
    seen["registry by name"] = entries(module, module._REG.by_name, kept, retained)
    seen["conforming"] = entries(module, module._CONF.functions, kept)
    seen["commands"] = entries(module, module._cli.commands, kept)
    # aliases: which names hold one and the same object
    public = [n for n in seen["names"] if not isinstance(getattr(module, n), types.ModuleType)]
    seen["same objects"] = sorted(
        (a, b) for a in public for b in public if a < b and getattr(module, a) is getattr(module, b)
    )
    for name in seen["names"]:
        value = getattr(module, name)
        if isinstance(value, types.ModuleType) or name in ("STATE", *noted):
            continue
        if isinstance(value, enum.EnumMeta):
            _observe_enum(name, value, filename, seen)
        elif isinstance(value, type):
            _observe_class(name, value, instance(name), filename, seen)
        else:
            seen[name] = probe(value, filename)
            seen[f"{name} source"] = _source(value)
            if callable(value):
                func = inspect.unwrap(inner(value))
                seen[f"{name} annotations"] = repr(getattr(func, "__annotations__", None))
            if isinstance(getattr(value, "registry", None), types.MappingProxyType):
                seen[f"{name} dispatch"] = dispatched(value, filename)
    return seen


def _observe_class(path: str, cls: type, obj: Any, filename: str, seen: dict[str, Any]) -> None:
    """Members, their results on `obj` and their source; nested classes likewise."""
    seen[path] = members(cls)
    seen[f"{path} source"] = inspect.getsource(cls)
    seen[f"{path} repr"] = outcome(functools.partial(repr, obj), filename)
    for member in members(cls):
        value = vars(cls)[member]
        key = f"{path}.{member}"
        if isinstance(value, type):
            _observe_class(key, value, value(), filename, seen)
            continue
        if member == "REG":  # class state: compared with the captured list instead
            continue
        seen[key] = (
            outcome(functools.partial(getattr, obj, member), filename)
            if isinstance(value, (property, functools.cached_property))
            else probe(getattr(obj, member), filename)
        )
        if isinstance(value, property) and value.fset is not None:
            seen[f"{key} set"] = outcome(functools.partial(_set_and_read, obj, member), filename)
        seen[f"{key} source"] = _source(value)


def _set_and_read(obj: Any, name: str) -> Any:
    other = type(obj)()  # a new instance, so the probed ones keep their state
    setattr(other, name, 7)
    return other.v


def _observe_enum(path: str, cls: Any, filename: str, seen: dict[str, Any]) -> None:
    """Members (aliases included), lookups by value, a method on each, and the source."""
    seen[path] = repr(list(cls))
    seen[f"{path} members"] = {k: repr(v) for k, v in cls.__members__.items()}
    seen[f"{path} by value"] = [outcome(functools.partial(cls, v), filename) for v in range(7)]
    seen[f"{path} describe"] = [outcome(m.describe, filename) for m in cls]
    seen[f"{path} source"] = inspect.getsource(cls)


def _source(value: Any) -> str | None:
    func = getattr(value, "__func__", None) or getattr(value, "fget", None) or value
    func = inner(func)  # a class-based decorator's instance: its function
    if not isinstance(func, (types.FunctionType, type)):
        return type(func).__name__ if callable(func) else None
    try:
        return inspect.getsource(func)
    except TypeError as exc:  # it unwraps to an object with no source (a wrapper instance)
        return f"no source: {exc}"


def fresh_import(name: str, source: str, folder: Path) -> types.ModuleType:
    """The final source imported from a file in `folder`, under the same module name but
    outside sys.modules."""
    folder.mkdir()
    path = folder / f"{name}.py"
    path.write_text(source)
    spec = importlib.util.spec_from_file_location(name, path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def _diff(live: dict[str, Any], fresh: dict[str, Any]) -> list[str]:
    return [
        f"  {key}:\n    live : {live.get(key)!r}\n    fresh: {fresh.get(key)!r}"
        for key in sorted(set(live) | set(fresh))
        if live.get(key) != fresh.get(key)
    ]


# -- the test -------------------------------------------------------------------------------


@dataclass
class Captured:
    """References taken before the sequence, as a program would hold them."""

    functions: dict[str, Any]
    instances: dict[str, Any]
    bound: dict[str, Any]
    state: dict[str, int]
    #: each class, as a closure made before the sequence holds it
    classes: dict[str, Callable[[], type]]

    @classmethod
    def take(cls, module: types.ModuleType) -> Captured:
        instances = {n: getattr(module, n)() for n in CLASSES if hasattr(module, n)}
        bound = {
            f"{c}.{m}": getattr(obj, m)
            for c, obj in instances.items()
            for m in members(type(obj))
            if isinstance(vars(type(obj))[m], types.FunctionType)
        }
        for obj in instances.values():
            type(obj).REG.append("start")  # class-level state that edits must not reset
        instances.update(
            {
                f"{n}.{m}": member
                for n in ENUMS
                if hasattr(module, n)
                for m, member in getattr(module, n).__members__.items()
                if member.name == m
            }
        )  # aliases name another member
        module.STATE["calls"] = 42
        return cls(
            functions={
                n: v
                for n, v in vars(module).items()
                if n in FUNCS + DISPATCH + ALIASES and not isinstance(v, type)
            },
            instances=instances,
            bound=bound,
            state=module.STATE,
            classes={n: _holding(v) for n, v in vars(module).items() if n in CLASSES},
        )

    def differences(
        self,
        module: types.ModuleType,
        fresh: types.ModuleType,
        fresh_seen: dict[str, Any],
        broken: set[str],
        noted: set[str],
        kept: set[str],
        retained: frozenset[str] = frozenset(),
    ) -> list[str]:
        """Where the captured references do not run the final code."""
        found = [
            f"(instance made at the start) {d}"
            for d in _diff(
                behaviour(
                    module,
                    lambda n: (
                        self.instances[n]
                        if n in self.instances and n not in broken
                        else getattr(module, n)()
                    ),
                    noted,
                    kept,
                    retained,
                ),
                fresh_seen,
            )
        ]
        filename = module.__file__ or ""
        for name, func in self.functions.items():
            if name not in broken and hasattr(fresh, name):
                found += _compare(f"from-import of {name}", probe(func, filename), fresh_seen[name])
                if f"{name} dispatch" in fresh_seen:
                    got = dispatched(func, filename) if hasattr(func, "registry") else None
                    found += _compare(f"overloads of {name}", got, fresh_seen[f"{name} dispatch"])
        for name, held in self.classes.items():
            if name not in broken and hasattr(fresh, name) and held() is not getattr(module, name):
                found.append(f"  class {name} held by a closure is not the live class")
        for key, method in self.bound.items():
            cls, meth = key.split(".")
            if not {cls, key} & broken and meth in vars(getattr(fresh, cls, object)):
                found += _compare(f"bound method {key}", probe(method, filename), fresh_seen[key])
        found += self._enum_differences(module, fresh, broken)
        for name, obj in self.instances.items():
            if "." in name or name in broken:
                continue
            live = getattr(module, name).REG
            if live is not type(obj).REG or live != ["start"]:
                found.append(f"  class state {name}.REG was reset: {live!r}")
        if module.STATE is not self.state or self.state != {"calls": 42}:
            found.append(f"  module state was reset: {module.STATE!r}")
        return found

    def _enum_differences(
        self, module: types.ModuleType, fresh: types.ModuleType, broken: set[str]
    ) -> list[str]:
        found = []
        for key, member in self.instances.items():
            name, _, attr = key.partition(".")
            if (
                not attr
                or {name, key} & broken
                or attr not in getattr(getattr(fresh, name, None), "__members__", {})
            ):
                continue
            if getattr(getattr(module, name), attr) is not member:
                found.append(f"  enum member {key} lost its identity")
            found += _compare(
                f"enum member {key}",
                outcome(member.describe, ""),
                outcome(getattr(getattr(fresh, name), attr).describe, ""),
            )
        return found


def _holding(value: Any) -> Callable[[], Any]:
    return lambda: value


def _compare(what: str, got: Any, want: Any) -> list[str]:
    if got == want:
        return []
    return [f"  {what} captured at the start:\n    live : {got!r}\n    fresh: {want!r}"]


@pytest.mark.parametrize(
    "seed",
    [
        pytest.param(s, marks=pytest.mark.xfail(reason=KNOWN[s], strict=False)) if s in KNOWN else s
        for s in SEEDS
    ],
    ids=lambda s: f"seed_{s}-",
)
def test_random_edit_sequence_matches_fresh_import(
    project: Project, tmp_path: Path, seed: int
) -> None:
    """A random sequence of live edits leaves the module behaving like a fresh import of the
    final source, and references captured at the start run the final code."""
    seq = Sequence.start(random.Random(seed))
    #: functions a note said `_REG.by_name` still holds though their decorator changed
    retained: set[str] = set()
    mod = project.name("rand")
    path = project.write(mod, render(seq.items))
    project.write(f"{mod}_fast", FAST)  # what the module's later statement binds Epsilon to
    module = importlib.import_module(mod)
    user = project.module(USER.format(mod=mod), name=f"{mod}_user")
    star = project.module(STAR.format(mod=mod), name=f"{mod}_star")
    captured = Captured.take(module)
    rt = Runtime(project_root=project.root)
    rt.source(mod)  # the runtime takes the module's source as it was imported
    context = f"seed {seed}; edits:\n  "
    shape = factory_shape(seq.items)
    for _ in range(EDITS_PER_SEQUENCE):
        before = identities(seq.items)
        noted_before = {c.id: len(c.notes) for c in rt.history()}
        try:
            edit(seq, rt, mod, path.write_text)
        except Exception as exc:
            raise AssertionError(
                f"edit failed ({type(exc).__name__}: {exc}); {context}" + "\n  ".join(seq.log)
            ) from exc
        after = identities(seq.items)
        seq.broken |= {n for n, kind in before.items() if after.get(n) != kind}
        if factory_shape(seq.items) != shape:
            seq.noted.add("callbacks")  # the change named them in a note; they stay old
        shape = factory_shape(seq.items)
        # the notes this step added: a new change's, and those a rollback gave the changes
        # it undid (the newest or any earlier one)
        notes = [n for c in rt.history() for n in c.notes[noted_before.get(c.id, 0) :]]
        seq.noted |= {n.partition(":")[0] for n in notes if "still holds the removed" in n}
        # a change that could not reach references taken before says so, naming them
        seq.stale |= {n.partition(":")[0] for n in notes if "still held by" in n}
        seq.kept |= {n.partition(":")[0] for n in notes if "removed from the source, but" in n}
        retained |= {
            n.partition(":")[0]
            for n in notes
            if ("its decorators changed, but" in n and "_REG.by_name still" in n)
            # a rolled-back change defined it, and the registry's dict keeps it
            or ("rolling it back leaves it in" in n and "_REG.by_name[" in n)
        }
    context += "\n  ".join(seq.log)
    final = render(seq.items)
    assert rt.source(mod) == final, f"in-memory source differs from the model; {context}"
    fresh = fresh_import(mod, final, tmp_path / f"fresh{seed}")
    kept_by_name = frozenset(retained)
    fresh_seen = behaviour(fresh, lambda n: getattr(fresh, n)(), seq.noted, None, kept_by_name)
    live_seen = behaviour(module, lambda n: getattr(module, n)(), seq.noted, seq.kept, kept_by_name)
    differences = _diff(live_seen, fresh_seen)
    differences += captured.differences(
        module,
        fresh,
        fresh_seen,
        seq.broken | seq.noted | seq.stale,
        seq.noted,
        seq.kept,
        kept_by_name,
    )
    differences += importer_differences(module, fresh, user, star)
    sys.modules.pop(mod, None)
    assert not differences, (
        "live module differs from a fresh import:\n" + "\n".join(differences) + f"\n{context}"
    )
