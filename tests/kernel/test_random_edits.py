"""Seeded random edit sequences applied live leave a module that behaves like a fresh import
of the final source.

A small model of a module (functions, classes with methods and class constants, constants,
blank lines and comments) is edited at random; each edit is applied to a real module on
sys.path through `Runtime.patch` (one definition), `Runtime.patch_module` (whole module) or
`Runtime.reload` (whole module written to disk), and now and then the newest change is
rolled back with `Runtime.rollback`. After the sequence the live module is compared with a
fresh import of the final text from another folder: public names, class members, results
of calling everything with sample arguments, `inspect.getsource` and the lines a traceback
points at. References captured before the sequence (from-imports, an instance, bound
methods) must run the final code, and module state must survive. A failure prints the seed
and the edit sequence; replay one seed with
`pytest tests/kernel/test_random_edits.py -k "seed_37-"`.
"""

from __future__ import annotations

import copy
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
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest
from kernel_support import Project

from liveforge import Runtime

SEEDS = range(100)
EDITS_PER_SEQUENCE = 20
FUNCS = [f"f{i}" for i in range(7)]
CLASSES = ["Alpha", "Beta", "Gamma", "Delta"]
CONSTS = ["K0", "K1", "K2", "K3"]
METHODS = ["m0", "m1", "m2", "m3", "m4"]
CLASS_CONSTS = ["CK0", "CK1", "CK2"]
SAMPLE_CALLS: list[tuple[tuple[Any, ...], dict[str, Any]]] = [
    ((5,), {}), ((13,), {}), ((2,), {"y": 1}), ((4, 6), {})]

HEADER = '''import functools

STATE = {"calls": 0}


def deco(fn):
    @functools.wraps(fn)
    def wrapper(*args, **kwargs):
        return ("deco", fn(*args, **kwargs))
    return wrapper


class Root:
    def __init__(self, v=5):
        self.v = v

    def hook(self, x):
        return x + self.v
'''


# -- the module model -----------------------------------------------------------------------

@dataclass
class Def:
    """A function or method: decorator, parameters, body expression, optional extras."""

    name: str
    deco: str
    params: str
    expr: str
    guard: bool = False
    note: bool = False

    def text(self, indent: str = "") -> str:
        lines = [f"@{self.deco}"] if self.deco else []
        lines.append(f"def {self.name}{self.params}:")
        if self.note:
            lines.append(f"    # {self.name} keeps a note")
        if self.guard:
            lines += ["    if x == 13:", f"        raise ValueError('{self.name} refuses 13')"]
        lines.append(f"    return {self.expr}")
        return "".join(f"{indent}{line}\n" for line in lines)


@dataclass
class Assign:
    """`NAME = value` at module or class level."""

    name: str
    value: int

    def text(self, indent: str = "") -> str:
        return f"{indent}{self.name} = {self.value}\n"


@dataclass
class Filler:
    """Blank lines and comments between definitions."""

    raw: str

    name = ""

    def text(self, indent: str = "") -> str:
        return "".join(f"{indent}{line}" if line.strip() else line
                       for line in self.raw.splitlines(keepends=True))


@dataclass
class Cls:
    """A class deriving from Root; its first member is the constant BASE (never removed)."""

    name: str
    members: list[Any]

    def text(self, indent: str = "") -> str:
        return f"class {self.name}(Root):\n" + "".join(m.text("    ") for m in self.members)


Item = Def | Assign | Filler | Cls


def render(items: list[Item]) -> str:
    return HEADER + "".join(item.text() for item in items)


def named(items: list[Any]) -> dict[str, Any]:
    return {item.name: item for item in items if not isinstance(item, Filler)}


# -- random definitions ---------------------------------------------------------------------

def function_def(rng: random.Random, name: str) -> Def:
    params = rng.choice(["(x)", "(x, y=2)", "(x, y=SCALE)", "(x, *, y=3)", "(x, y=1, *rest)"])
    deco = rng.choice(["", "", "deco", "functools.lru_cache(maxsize=None)"])
    return Def(name, deco, params, function_expr(rng, name, params), rng.random() < 0.4,
               rng.random() < 0.3)


def function_expr(rng: random.Random, name: str, params: str) -> str:
    terms = [f"x * {rng.randint(1, 9)}"]
    if "y" in params:
        terms.append("y")
    if "rest" in params:
        terms.append("len(rest)")
    lower = FUNCS[:FUNCS.index(name)] if name in FUNCS else []
    extras = ["SCALE", rng.choice(CONSTS), str(rng.randint(0, 50))]
    extras += [f"{f}(x)" if rng.random() < 0.5 else f"{f}(1)[-1]" for f in lower[-2:]]
    terms += rng.sample(extras, k=min(len(extras), rng.randint(0, 2)))
    expr = " + ".join(terms)
    return f"({expr},)" if rng.random() < 0.5 else expr


def method_def(rng: random.Random, name: str) -> Def:
    kind = rng.choice(["", "", "deco", "staticmethod", "classmethod", "property"])
    first = {"staticmethod": "", "classmethod": "cls, ", "property": "self"}.get(kind, "self, ")
    if kind == "property":
        params, terms = "(self)", ["self.v", "self.BASE", "super().hook(3)"]
    else:
        params = "(" + first + rng.choice(["x", "x, y=BASE", "x, *, y=4"]) + ")"
        terms = [f"x * {rng.randint(1, 9)}"] + (["y"] if "y" in params else [])
        terms += {"": ["self.v", "super().hook(x)", "self.BASE", "type(self).CK0"],
                  "deco": ["self.v", "self.BASE"], "classmethod": ["cls.BASE", "cls.CK1"],
                  "staticmethod": ["SCALE"]}[kind]
    terms.append(rng.choice(["K1", f"{rng.choice(FUNCS)}(2)", "1"]))
    expr = " + ".join(rng.sample(terms, k=rng.randint(1, min(3, len(terms)))))
    guard = kind != "property" and rng.random() < 0.4
    return Def(name, kind, params, expr, guard, rng.random() < 0.3)


def class_def(rng: random.Random, name: str) -> Cls:
    members: list[Any] = [Assign("BASE", rng.randint(1, 9))]
    for mname in sorted(rng.sample(METHODS, k=rng.randint(1, 3))):
        members += [Filler("\n"), method_def(rng, mname)]
    if rng.random() < 0.5:
        members.insert(1, Assign(rng.choice(CLASS_CONSTS), rng.randint(10, 99)))
    return Cls(name, members)


def filler(rng: random.Random) -> Filler:
    return Filler(rng.choice(["\n", "\n\n", "\n# a comment\n", "# note\n\n", "\n\n\n"]))


# -- the sequence ---------------------------------------------------------------------------

@dataclass
class Sequence:
    """One random run: the model, how each edit was applied, and what continuity broke."""

    rng: random.Random
    items: list[Item]
    log: list[str] = field(default_factory=list)
    broken: set[str] = field(default_factory=set)
    #: the model before each applied change, newest last (for rollback).
    undo: list[list[Item]] = field(default_factory=list)

    @classmethod
    def start(cls, rng: random.Random) -> Sequence:
        items: list[Item] = [Filler("\n\n"), Assign("SCALE", 3)]
        pool = [*rng.sample(CONSTS, 2), *rng.sample(FUNCS, 3), *rng.sample(CLASSES, 2)]
        for name in pool:
            items.append(filler(rng) if rng.random() < 0.5 else Filler("\n\n"))
            items.append(make(rng, name))
        return cls(rng, items)

    def spot(self) -> int:
        """An insertion index after SCALE (which defaults name, so it stays first)."""
        return self.rng.randint(2, len(self.items))


def make(rng: random.Random, name: str) -> Item:
    if name in CONSTS:
        return Assign(name, rng.randint(0, 99))
    if name in FUNCS:
        return function_def(rng, name)
    return class_def(rng, name)


Applier = Callable[[str, str], None]


def edit(seq: Sequence, rt: Runtime, mod: str, write: Callable[[str], None]) -> None:
    """Make one random edit to the model and apply it live, or roll the newest change back."""
    if seq.undo and seq.rng.random() < 0.1:
        seq.items = seq.undo.pop()
        seq.log.append("rt.rollback()")
        rt.rollback()
        return
    before, recorded = copy.deepcopy(seq.items), len(rt.history())
    _edit(seq, rt, mod, write)
    if len(rt.history()) > recorded:
        seq.undo.append(before)


def _edit(seq: Sequence, rt: Runtime, mod: str, write: Callable[[str], None]) -> None:
    rng, items = seq.rng, seq.items
    present = named(items)
    kinds = ["change", "change", "change", "add", "remove", "reorder", "filler", "member"]
    kind = rng.choice(kinds)
    editable = [n for n in present if n != "SCALE"]
    if kind == "change" and editable:
        name = rng.choice(editable)
        old = present[name]
        new = _changed(rng, old)
        items[items.index(old)] = new
        _apply_definition(seq, rt, mod, write, name, new)
    elif kind == "add":
        free = [n for n in FUNCS + CLASSES + CONSTS if n not in present]
        if not free:
            return
        name = rng.choice(free)
        new = make(rng, name)
        if rng.random() < 0.5:
            if not render(items).endswith("\n\n"):
                items.append(Filler("\n\n"))
            items.append(new)
            _log_patch(seq, rt, f"{mod}.{name}", new.text(), f"add {name}")
        else:
            at = seq.spot()
            items[at:at] = [Filler("\n\n"), new]
            _whole(seq, rt, mod, write, f"add {name} at item {at}")
    elif kind == "remove" and editable:
        name = rng.choice(editable)
        items.remove(present[name])
        _whole(seq, rt, mod, write, f"remove {name}")
    elif kind == "reorder" and len(items) > 4:
        i = rng.randint(2, len(items) - 2)
        items[i], items[i + 1] = items[i + 1], items[i]
        _whole(seq, rt, mod, write, f"swap items {i},{i + 1}")
    elif kind == "filler":
        if rng.random() < 0.5 or len(items) < 4:
            at = seq.spot()
            items.insert(at, filler(rng))
            _whole(seq, rt, mod, write, f"insert filler at {at}")
        else:
            fillers = [i for i, item in enumerate(items[2:], 2) if isinstance(item, Filler)]
            if fillers:
                del items[rng.choice(fillers)]
                _whole(seq, rt, mod, write, "delete filler")
    elif kind == "member":
        classes = [c for c in items if isinstance(c, Cls)]
        if classes:
            _member_edit(seq, rt, mod, write, rng.choice(classes))


def _changed(rng: random.Random, old: Item) -> Item:
    if isinstance(old, Assign):
        return Assign(old.name, old.value + rng.randint(1, 9))
    if isinstance(old, Cls):
        new = class_def(rng, old.name)
        if rng.random() < 0.5 and new.members[-1].name not in named(old.members):
            new.members = [*old.members, Filler("\n"), new.members[-1]]
        return new
    assert isinstance(old, Def)
    fresh = function_def(rng, old.name)
    aspect = rng.choice(["expr", "params", "deco", "extras", "all"])
    return Def(old.name,
               fresh.deco if aspect in ("deco", "all") else old.deco,
               fresh.params if aspect in ("params", "all") else old.params,
               fresh.expr if aspect in ("expr", "params", "all") else old.expr,
               fresh.guard if aspect in ("extras", "all") else old.guard,
               fresh.note if aspect in ("extras", "all") else old.note)


def _member_edit(seq: Sequence, rt: Runtime, mod: str, write: Callable[[str], None],
                 cls: Cls) -> None:
    rng = seq.rng
    present = named(cls.members)
    choice = rng.choice(["change", "change", "add", "remove", "filler"])
    target = f"{mod}.{cls.name}"
    if choice == "change":
        name = rng.choice(list(present))
        old = present[name]
        new: Any = Assign(name, old.value + 1) if isinstance(old, Assign) \
            else method_def(rng, name)
        cls.members[cls.members.index(old)] = new
        if rng.random() < 0.6:
            _log_patch(seq, rt, f"{target}.{name}", new.text(), f"change {cls.name}.{name}")
            return
    elif choice == "add":
        free = [n for n in METHODS + CLASS_CONSTS if n not in present]
        if not free:
            return
        name = rng.choice(free)
        new = method_def(rng, name) if name in METHODS else Assign(name, rng.randint(10, 99))
        cls.members += [Filler("\n"), new]
        if rng.random() < 0.6:
            _log_patch(seq, rt, f"{target}.{name}", new.text(), f"add {cls.name}.{name}")
            return
    elif choice == "remove" and len(present) > 1:
        name = rng.choice([n for n in present if n != "BASE"])
        at = cls.members.index(present[name])
        del cls.members[at]
        if at > 0 and isinstance(cls.members[at - 1], Filler):
            del cls.members[at - 1]
        while isinstance(cls.members[-1], Filler):
            cls.members.pop()
    elif choice == "filler" and len(cls.members) > 1:
        at = rng.randint(1, len(cls.members) - 1)
        cls.members.insert(at, Filler(rng.choice(["\n", "# inside\n", "\n\n"])))
    else:
        return
    if rng.random() < 0.5:
        _log_patch(seq, rt, target, cls.text(), f"{choice} member of {cls.name} (class patch)")
    else:
        _whole(seq, rt, mod, write, f"{choice} member of {cls.name}")


def identities(items: list[Item]) -> dict[str, str]:
    """What kind of object each name is bound to (changing it breaks captured references)."""
    found = {}
    for item in items:
        if isinstance(item, Cls):
            found[item.name] = "class"
            for member in item.members:
                if isinstance(member, Def):
                    special = member.deco in ("staticmethod", "classmethod", "property")
                    found[f"{item.name}.{member.name}"] = member.deco if special else "method"
        elif not isinstance(item, Filler):
            found[item.name] = type(item).__name__
    return found


def _apply_definition(seq: Sequence, rt: Runtime, mod: str, write: Callable[[str], None],
                      name: str, new: Item) -> None:
    if seq.rng.random() < 0.6:
        _log_patch(seq, rt, f"{mod}.{name}", new.text(), f"change {name}")
    else:
        _whole(seq, rt, mod, write, f"change {name}")


def _log_patch(seq: Sequence, rt: Runtime, target: str, text: str, what: str) -> None:
    seq.log.append(f"{what}: rt.patch({target!r}, {text!r})")
    rt.patch(target, text)


def _whole(seq: Sequence, rt: Runtime, mod: str, write: Callable[[str], None],
           what: str) -> None:
    source = render(seq.items)
    if seq.rng.random() < 0.25:
        seq.log.append(f"{what}: write file + rt.reload(force=True)")
        write(source)
        if rt.reload(mod, force=True).id:
            seq.undo.clear()  # a forced reload supersedes the earlier in-memory changes
    else:
        seq.log.append(f"{what}: rt.patch_module")
        rt.patch_module(mod, source)


# -- observing behaviour --------------------------------------------------------------------

def outcome(call: Callable[[], Any], filename: str) -> str:
    """What a call returns, or the exception and the lines of `filename` its traceback passed
    through (frames of liveforge's forwarders, which the fresh import has not, left out)."""
    try:
        return re.sub(r" at 0x[0-9a-f]+", "", repr(call()))
    except Exception as exc:
        frames = [(f.f_code.co_filename, n) for f, n in traceback.walk_tb(exc.__traceback__)
                  if "__liveforge_target__" not in f.f_code.co_varnames]
        where = "".join(f" @ {n}: {linecache.getline(filename, n).strip()}"
                        for fname, n in frames if fname == filename)
        return f"{type(exc).__name__}: {exc}{where}"


def probe(value: Any, filename: str) -> list[str]:
    if not callable(value) or isinstance(value, type):
        return [repr(value)]
    return [outcome(functools.partial(value, *a, **k), filename) for a, k in SAMPLE_CALLS]


def members(cls: type) -> list[str]:
    return sorted(n for n in vars(cls) if not (n.startswith("__") and n.endswith("__")))


def behaviour(module: types.ModuleType, instance: Callable[[str], Any]) -> dict[str, Any]:
    """Everything observable about the generated part of `module`."""
    filename = module.__file__ or ""
    seen: dict[str, Any] = {"names": sorted(n for n in vars(module) if not n.startswith("_"))}
    for name in seen["names"]:
        value = getattr(module, name)
        if isinstance(value, types.ModuleType) or name == "STATE":
            continue
        if isinstance(value, type):
            seen[name] = members(value)
            obj = instance(name)
            for member in members(value):
                seen[f"{name}.{member}"] = outcome(functools.partial(getattr, obj, member),
                                                   filename) \
                    if isinstance(vars(value)[member], property) \
                    else probe(getattr(obj, member), filename)
                seen[f"{name}.{member} source"] = _source(vars(value)[member])
            seen[f"{name} source"] = inspect.getsource(value)
        else:
            seen[name] = probe(value, filename)
            seen[f"{name} source"] = _source(value)
    return seen


def _source(value: Any) -> str | None:
    func = getattr(value, "__func__", None) or getattr(value, "fget", None) or value
    return inspect.getsource(func) if callable(func) else None


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
    return [f"  {key}:\n    live : {live.get(key)!r}\n    fresh: {fresh.get(key)!r}"
            for key in sorted(set(live) | set(fresh)) if live.get(key) != fresh.get(key)]


# -- the test -------------------------------------------------------------------------------

@pytest.mark.parametrize("seed", SEEDS, ids=lambda s: f"seed_{s}-")
def test_random_edit_sequence_matches_fresh_import(project: Project, tmp_path: Path,
                                                   seed: int) -> None:
    """A random sequence of live edits leaves the module behaving like a fresh import of the
    final source, and references captured at the start run the final code."""
    rng = random.Random(seed)
    seq = Sequence.start(rng)
    mod = project.name("rand")
    path = project.write(mod, render(seq.items))
    module = importlib.import_module(mod)
    captured = {n: v for n, v in vars(module).items() if n in FUNCS}
    state = module.STATE
    state["calls"] = 42
    instances = {n: getattr(module, n)() for n in CLASSES if hasattr(module, n)}
    bound = {f"{c}.{m}": getattr(obj, m) for c, obj in instances.items()
             for m in members(type(obj)) if isinstance(vars(type(obj))[m], types.FunctionType)}
    rt = Runtime(project_root=project.root)
    rt.source(mod)  # the runtime takes the module's source as it was imported

    def write(source: str) -> None:
        path.write_text(source)

    def context() -> str:
        return f"seed {seed}; edits:\n  " + "\n  ".join(seq.log)

    for _ in range(EDITS_PER_SEQUENCE):
        before = identities(seq.items)
        try:
            edit(seq, rt, mod, write)
        except Exception as exc:
            raise AssertionError(f"edit failed ({type(exc).__name__}: {exc}); "
                                 f"{context()}") from exc
        after = identities(seq.items)
        seq.broken |= {n for n, kind in before.items() if after.get(n) != kind}
    final = render(seq.items)
    assert rt.source(mod) == final, f"in-memory source differs from the model; {context()}"
    fresh = fresh_import(mod, final, tmp_path / f"fresh{seed}")
    live_seen = behaviour(module, lambda n: getattr(module, n)())
    fresh_seen = behaviour(fresh, lambda n: getattr(fresh, n)())
    differences = _diff(live_seen, fresh_seen)
    old_seen = behaviour(module, lambda n: instances[n] if n in instances and n not in seq.broken
                         else getattr(module, n)())
    differences += [f"(instance made at the start) {d}" for d in _diff(old_seen, fresh_seen)]
    for name, func in captured.items():
        if name not in seq.broken and hasattr(fresh, name):
            got, want = probe(func, module.__file__ or ""), fresh_seen[name]
            if got != want:
                differences.append(f"  from-import of {name} captured at the start:\n"
                                    f"    live : {got!r}\n    fresh: {want!r}")
    for key, method in bound.items():
        cls, meth = key.split(".")
        if not {cls, key} & seq.broken and hasattr(fresh, cls) and \
                meth in vars(getattr(fresh, cls)):
            got, want = probe(method, module.__file__ or ""), fresh_seen[key]
            if got != want:
                differences.append(f"  bound method {key} captured at the start:\n"
                                    f"    live : {got!r}\n    fresh: {want!r}")
    if module.STATE is not state or state != {"calls": 42}:
        differences.append(f"  module state was reset: {module.STATE!r}")
    assert not differences, "live module differs from a fresh import:\n" + \
        "\n".join(differences) + f"\n{context()}"
    sys.modules.pop(mod, None)
