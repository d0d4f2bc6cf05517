"""Seeded random edit sequences applied live leave a module that behaves like a fresh import
of the final source.

A small model of a module (functions with decorators, classes with methods of every kind,
class constants and nested classes, dataclasses, constants, blank lines and comments; see
`random_module`) is edited at random. Each edit is applied to a real module on sys.path
through `Runtime.patch` (one definition), `Runtime.patch_module` (whole module) or
`Runtime.reload` (whole module written to disk); now and then the newest change is rolled
back with `Runtime.rollback`, or a patch that must fail (a statement that raises or does
not compile) checks that nothing changed. After the sequence the live module is compared
with a fresh import of the final text from another folder: public names, class members,
results of calling everything with sample arguments, instance reprs, `inspect.getsource`
and the lines a traceback points at. References captured before the sequence
(from-imports, an instance, bound methods) must run the final code, and module state must
survive. A failure prints the seed and the edit sequence; replay one seed with
`pytest tests/kernel/test_random_edits.py -k "seed_37-"`.
"""

from __future__ import annotations

import copy
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

import pytest
from kernel_support import Project
from random_module import (
    CLASS_CONSTS,
    CLASSES,
    CONSTS,
    DATA,
    ENUMS,
    FUNCS,
    METHODS,
    Assign,
    Cls,
    Data,
    Def,
    EnumDef,
    Filler,
    Future,
    Item,
    Sequence,
    changed,
    filler,
    identities,
    make,
    method_def,
    named,
    render,
)

from liveforge import PatchError, Runtime

SEEDS = range(100)
EDITS_PER_SEQUENCE = 20
SAMPLE_CALLS: list[tuple[tuple[Any, ...], dict[str, Any]]] = [
    ((5,), {}), ((13,), {}), ((2,), {"y": 1}), ((4, 6), {})]


def edit(seq: Sequence, rt: Runtime, mod: str, write: Callable[[str], None]) -> None:
    """Make one random edit to the model and apply it live, or roll the newest change back."""
    if seq.undo and seq.rng.random() < 0.1:
        seq.items = seq.undo.pop()
        seq.log.append("rt.rollback()")
        rt.rollback()
        return
    if seq.rng.random() < 0.08:
        _failing_edit(seq, rt, mod, write)
        return
    before, recorded = copy.deepcopy(seq.items), len(rt.history())
    _edit(seq, rt, mod, write)
    if len(rt.history()) > recorded:
        seq.undo.append(before)


def _failing_edit(seq: Sequence, rt: Runtime, mod: str, write: Callable[[str], None]
                  ) -> None:
    """Changed definitions plus a statement that raises (or does not compile), applied live:
    the patch must fail and leave the module exactly as it was (the model is not touched)."""
    rng = seq.rng
    items = copy.deepcopy(seq.items)
    for _ in range(rng.randint(1, 3)):
        defs = [i for i, item in enumerate(items) if isinstance(item, (Def, Cls, Data, EnumDef))]
        if defs:
            at = rng.choice(defs)
            items[at] = changed(rng, items[at])
    bad = rng.choice(["BROKEN = 1 // 0\n", "BROKEN = (\n", "Root.hook(None, 1)\n"])
    items.insert(rng.randint(2, len(items)), Filler(f"\n{bad}"))
    source = render(items)
    how = rng.choice(["patch_module", "reload", "class"])
    classes = [c for c in items if isinstance(c, Cls)]
    try:
        if how == "class" and classes:
            cls = rng.choice(classes)
            seq.log.append(f"failing class patch of {cls.name}")
            rt.patch(f"{mod}.{cls.name}", cls.text().replace("\n", f"\n    {bad}", 1))
        elif how == "reload":
            seq.log.append(f"failing reload of {source!r}")
            write(source)
            rt.reload(mod, force=True)
        else:
            seq.log.append(f"failing rt.patch_module({source!r})")
            rt.patch_module(mod, source)
    except PatchError:
        return
    raise AssertionError("a patch with a failing statement was applied")


def _edit(seq: Sequence, rt: Runtime, mod: str, write: Callable[[str], None]) -> None:
    rng, items = seq.rng, seq.items
    present = named(items)
    kinds = ["change", "change", "change", "add", "remove", "reorder", "filler", "member",
             "future"]
    kind = rng.choice(kinds)
    editable = [n for n in present if n != "SCALE"]
    if kind == "change" and editable:
        name = rng.choice(editable)
        old = present[name]
        new = changed(rng, old)
        items[items.index(old)] = new
        _apply_definition(seq, rt, mod, write, name, new)
    elif kind == "add":
        free = [n for n in FUNCS + CLASSES + CONSTS + DATA + ENUMS if n not in present]
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
    elif kind == "future":
        futures = [item for item in items if isinstance(item, Future)]
        if futures:
            items.remove(futures[0])
        else:
            items.append(Future())
        _whole(seq, rt, mod, write, "toggle from __future__ import annotations")
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


def _member_edit(seq: Sequence, rt: Runtime, mod: str, write: Callable[[str], None],
                 cls: Cls) -> None:
    rng = seq.rng
    path = cls.name
    inner = [m for m in cls.members if isinstance(m, Cls)]
    if inner and rng.random() < 0.4:
        cls = rng.choice(inner)
        path = f"{path}.{cls.name}"
    present = named(cls.members)
    choice = rng.choice(["change", "change", "add", "remove", "filler"])
    target = f"{mod}.{path}"
    if choice == "change":
        name = rng.choice(list(present))
        old = present[name]
        new: Any = Assign(name, old.value + 1) if isinstance(old, Assign) \
            else changed(rng, old) if isinstance(old, Cls) else method_def(rng, name)
        cls.members[cls.members.index(old)] = new
        if rng.random() < 0.6:
            _log_patch(seq, rt, f"{target}.{name}", new.text(), f"change {path}.{name}")
            return
    elif choice == "add":
        free = [n for n in METHODS + CLASS_CONSTS if n not in present]
        if not free:
            return
        name = rng.choice(free)
        new = method_def(rng, name) if name in METHODS else Assign(name, rng.randint(10, 99))
        cls.members += [Filler("\n"), new]
        if rng.random() < 0.6:
            _log_patch(seq, rt, f"{target}.{name}", new.text(), f"add {path}.{name}")
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
        _log_patch(seq, rt, target, cls.text(), f"{choice} member of {path} (class patch)")
    else:
        _whole(seq, rt, mod, write, f"{choice} member of {path}")


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
        if isinstance(value, enum.EnumMeta):
            _observe_enum(name, value, filename, seen)
        elif isinstance(value, type):
            _observe_class(name, value, instance(name), filename, seen)
        else:
            seen[name] = probe(value, filename)
            seen[f"{name} source"] = _source(value)
            if callable(value):
                seen[f"{name} annotations"] = repr(inspect.unwrap(value).__annotations__)
    return seen


def _observe_class(path: str, cls: type, obj: Any, filename: str, seen: dict[str, Any]
                   ) -> None:
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
        seen[key] = outcome(functools.partial(getattr, obj, member), filename) \
            if isinstance(value, property) else probe(getattr(obj, member), filename)
        seen[f"{key} source"] = _source(value)


def _observe_enum(path: str, cls: Any, filename: str, seen: dict[str, Any]) -> None:
    """Members (aliases included), lookups by value, a method on each, and the source."""
    seen[path] = repr(list(cls))
    seen[f"{path} members"] = {k: repr(v) for k, v in cls.__members__.items()}
    seen[f"{path} by value"] = [outcome(functools.partial(cls, v), filename) for v in range(7)]
    seen[f"{path} describe"] = [outcome(m.describe, filename) for m in cls]
    seen[f"{path} source"] = inspect.getsource(cls)


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

@dataclass
class Captured:
    """References taken before the sequence, as a program would hold them."""

    functions: dict[str, Any]
    instances: dict[str, Any]
    bound: dict[str, Any]
    state: dict[str, int]

    @classmethod
    def take(cls, module: types.ModuleType) -> Captured:
        instances = {n: getattr(module, n)() for n in CLASSES if hasattr(module, n)}
        bound = {f"{c}.{m}": getattr(obj, m) for c, obj in instances.items()
                 for m in members(type(obj))
                 if isinstance(vars(type(obj))[m], types.FunctionType)}
        for obj in instances.values():
            type(obj).REG.append("start")  # class-level state that edits must not reset
        instances.update({f"{n}.{m}": member for n in ENUMS if hasattr(module, n)
                          for m, member in getattr(module, n).__members__.items()
                          if member.name == m})  # aliases name another member
        module.STATE["calls"] = 42
        return cls(functions={n: v for n, v in vars(module).items() if n in FUNCS},
                   instances=instances, bound=bound, state=module.STATE)

    def differences(self, module: types.ModuleType, fresh: types.ModuleType,
                    fresh_seen: dict[str, Any], broken: set[str]) -> list[str]:
        """Where the captured references do not run the final code."""
        found = [f"(instance made at the start) {d}" for d in _diff(behaviour(
            module, lambda n: self.instances[n] if n in self.instances and n not in broken
            else getattr(module, n)()), fresh_seen)]
        filename = module.__file__ or ""
        for name, func in self.functions.items():
            if name not in broken and hasattr(fresh, name):
                found += _compare(f"from-import of {name}", probe(func, filename),
                                  fresh_seen[name])
        for key, method in self.bound.items():
            cls, meth = key.split(".")
            if not {cls, key} & broken and meth in vars(getattr(fresh, cls, object)):
                found += _compare(f"bound method {key}", probe(method, filename),
                                  fresh_seen[key])
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


    def _enum_differences(self, module: types.ModuleType, fresh: types.ModuleType,
                          broken: set[str]) -> list[str]:
        found = []
        for key, member in self.instances.items():
            name, _, attr = key.partition(".")
            if not attr or {name, key} & broken or \
                    attr not in getattr(getattr(fresh, name, None), "__members__", {}):
                continue
            if getattr(getattr(module, name), attr) is not member:
                found.append(f"  enum member {key} lost its identity")
            found += _compare(f"enum member {key}", outcome(member.describe, ""),
                              outcome(getattr(getattr(fresh, name), attr).describe, ""))
        return found


def _compare(what: str, got: Any, want: Any) -> list[str]:
    if got == want:
        return []
    return [f"  {what} captured at the start:\n    live : {got!r}\n    fresh: {want!r}"]


@pytest.mark.parametrize("seed", SEEDS, ids=lambda s: f"seed_{s}-")
def test_random_edit_sequence_matches_fresh_import(project: Project, tmp_path: Path,
                                                   seed: int) -> None:
    """A random sequence of live edits leaves the module behaving like a fresh import of the
    final source, and references captured at the start run the final code."""
    seq = Sequence.start(random.Random(seed))
    mod = project.name("rand")
    path = project.write(mod, render(seq.items))
    module = importlib.import_module(mod)
    captured = Captured.take(module)
    rt = Runtime(project_root=project.root)
    rt.source(mod)  # the runtime takes the module's source as it was imported
    context = f"seed {seed}; edits:\n  "
    for _ in range(EDITS_PER_SEQUENCE):
        before = identities(seq.items)
        try:
            edit(seq, rt, mod, path.write_text)
        except Exception as exc:
            raise AssertionError(f"edit failed ({type(exc).__name__}: {exc}); {context}"
                                 + "\n  ".join(seq.log)) from exc
        after = identities(seq.items)
        seq.broken |= {n for n, kind in before.items() if after.get(n) != kind}
    context += "\n  ".join(seq.log)
    final = render(seq.items)
    assert rt.source(mod) == final, f"in-memory source differs from the model; {context}"
    fresh = fresh_import(mod, final, tmp_path / f"fresh{seed}")
    fresh_seen = behaviour(fresh, lambda n: getattr(fresh, n)())
    differences = _diff(behaviour(module, lambda n: getattr(module, n)()), fresh_seen)
    differences += captured.differences(module, fresh, fresh_seen, seq.broken)
    sys.modules.pop(mod, None)
    assert not differences, "live module differs from a fresh import:\n" + \
        "\n".join(differences) + f"\n{context}"
