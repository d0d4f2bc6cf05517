"""What else holds the objects a patch replaced: registries, and old references.

Re-executing a definition builds new objects and the engine merges them into the live ones,
so every reference to the live object runs the new code. Two kinds of reference escape that:

- a decorator that *stores* what it decorates (`REGISTRY.append(f)`, `routes[path] = f`),
  or a base's `__init_subclass__` that stores the subclasses, stored the new object too.
  A fresh import would hold one entry; `_registered` follows such registrations with the
  helpers here.
- a new object that cannot be merged into the old one (a decorator now returns an object
  of another kind, with no `__wrapped__` to forward through): the name takes the new one,
  and a note names the references that still hold the old one.

(Functions made earlier by a changed function are `_spawned`'s.) Both look at the heap
(`gc.get_referrers`), so both run only when needed: the first when the new function has
references nobody in the engine made (its reference count tells) or the new class may have
been stored (`class_hooks`), the second only for such an unmergeable pair.
"""

from __future__ import annotations

import abc
import ast
import enum
import functools
import gc
import sys
import types
from collections.abc import Iterable
from typing import Any

from liveforge.kernel.live import _holders
from liveforge.kernel.live._undo import UndoLog


def references(obj: Any) -> int:
    """How many references hold `obj` (this call's own included)."""
    return sys.getrefcount(obj)


def _calibrate() -> int:
    """The count `references` gives for a new function held only the way the engine holds
    one while merging it: by the module namespace, the list of created objects and one
    local variable of the caller."""
    namespace = {"f": _sample()}
    created = [namespace["f"]]
    new = namespace["f"]
    count = references(new)
    del created, new
    return count


def _sample() -> Any:
    def sample() -> None: ...

    return sample


#: More references than this to a function the engine just made: something else (a
#: decorator's registry, say) holds it too.
BASELINE = _calibrate()


_PLAIN_METACLASSES = (type, abc.ABCMeta, enum.EnumMeta)
#: modules whose class hooks store nothing a patch could leave behind (`Generic`, protocols).
_STDLIB_HOOKS = frozenset({"typing", "abc", "enum", "collections.abc", "builtins"})


def class_hooks(cls: type, node: ast.stmt) -> list[str]:
    """What ran when `cls` was built and may have stored it somewhere, in words: a base's
    `__init_subclass__`, a metaclass of its own, a class decorator other than `dataclass`.
    (Classes refer to themselves in many ways, so their reference count tells nothing; the
    heap is searched only when there is one.)"""
    hooks = []
    if type(cls) not in _PLAIN_METACLASSES and type(cls).__module__ not in _STDLIB_HOOKS:
        hooks.append(f"its metaclass {type(cls).__qualname__}")
    hooks += [
        f"{base.__qualname__}.__init_subclass__"
        for base in cls.__mro__[1:-1]
        if "__init_subclass__" in vars(base) and base.__module__ not in _STDLIB_HOOKS
    ][:1]
    decorators = [ast.unparse(d) for d in getattr(node, "decorator_list", [])]
    hooks += [f"its decorator @{d}" for d in decorators if "dataclass" not in d]
    return hooks


def unrelated(old: Any, new: Any, node: ast.stmt, module: Any) -> bool:
    """True when a definition statement made `new`, which cannot be merged into the live
    `old` (a decorator now returns another kind of object), and references to `old` would
    keep the old behaviour: `old` is callable and not something imported from elsewhere."""
    if not isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
        return False
    if isinstance(old, (types.FunctionType, type)) and old.__module__ != module:
        return False
    return callable(old) and old is not new


def discard_created(created: list[Any], namespace: dict[str, Any], anywhere: bool) -> list[str]:
    """The functions and classes a failed or undone application created, which something
    stored (a decorator's registry, a base's `__init_subclass__`), leave those containers
    again, or give way to the object `namespace` (as restored) binds to that name. After a
    failure the objects are moments old, so every list, dict and set that holds them is
    theirs; after a rollback (`anywhere` false) only registries bound in their module or
    their bases' modules are. One search of the heap, when there is anything to look for.

    Returns a note for each function left in a framework's table (see below): a fresh
    import of the restored source would not have it there."""
    existed = {id(v) for v in namespace.values()}
    made = {
        id(o): o
        for o in created
        if not isinstance(o, types.ModuleType)
        and callable(o)
        and home(o) == namespace.get("__name__")
        and id(o) not in existed
    }
    if not made:
        return []
    allowed = None if anywhere else registries(made.values())
    # A function is also known by name to the framework holding it in an object's dict
    # (Flask's URL rules name their view): it stays there, and a note says so (see
    # `_registered.forget`). A list or set names nothing: the function leaves it.
    by_name = {
        k: label
        for k, (label, container, held) in registry_containers(made.values()).items()
        if held and isinstance(container, dict)
    }
    kept: list[str] = []
    skip = {id(created), id(namespace), id(made)}
    for holder in _holders.referrers(tuple(made.values())):
        if id(holder) in skip or not isinstance(holder, (list, dict, set)):
            continue
        if (isinstance(holder, dict) and is_namespace(holder)) or (
            allowed is not None and id(holder) not in allowed
        ):
            continue
        items = holder.values() if isinstance(holder, dict) else holder
        for obj in [made[id(v)] for v in list(items) if id(v) in made]:
            before = namespace.get(getattr(obj, "__name__", None) or "")
            if before is not None and not isinstance(holder, list):
                replace_in([holder], obj, before, UndoLog())
            elif not (id(holder) in by_name and isinstance(obj, types.FunctionType)):
                drop(holder, obj, UndoLog())
            elif isinstance(holder, dict):
                note = _left_in_table(obj, holder, by_name[id(holder)], anywhere)
                kept += [note] if note not in kept else []
    return kept


def _left_in_table(func: Any, table: dict[Any, Any], label: str, failed: bool) -> str:
    """The note for a function an undone change (or a `failed` application) made, which a
    framework's table (`label`) keeps: where, that it may still be called there, and what
    drops it."""
    keys = ", ".join(f"{label}[{k!r}]" for k, v in list(table.items()) if v is func)
    if failed:
        return (
            f"{func.__name__}, which the new source defined before it failed, stays in {keys}, "
            "where its decorator stored it, and may still be called there. Restart the "
            "program to drop it"
        )
    return (
        f"{func.__name__}: this change defined it, and rolling it back leaves it in {keys}, "
        "where its decorator stored it; it may still be called there (a fresh import of the "
        "restored source would not have it). Restart the program to drop it"
    )


def registries(objects: Iterable[Any]) -> dict[int, str]:
    """Containers bound in the modules of `objects` (and of their bases, for classes; for a
    wrapper a decorator made, the module of the function it holds), directly, as class
    attributes or as attributes of the objects bound there (a click group's `commands`, a
    Flask app's `view_functions`): id -> where, in words."""
    return {key: label for key, (label, _, _) in registry_containers(objects).items()}


def registry_containers(objects: Iterable[Any]) -> dict[int, tuple[str, Any, bool]]:
    """`registries`, each with the container itself and whether an object bound in the
    module holds it as an attribute (a group's, an app's)."""
    modules = set()
    for obj in objects:
        mro = obj.__mro__[:-1] if isinstance(obj, type) else [obj]
        modules |= {home(c) for c in mro}
    found: dict[int, tuple[str, Any, bool]] = {}
    for module_name in modules - {None}:
        module = sys.modules.get(module_name or "")
        for key, value in list(getattr(module, "__dict__", {}).items()):
            owners = [(f"{module_name}.{key}", value, False)]
            if isinstance(value, type) and value.__module__ == module_name:
                owners += [(f"{module_name}.{key}.{k}", v, False) for k, v in vars(value).items()]
            elif not isinstance(value, (type, types.ModuleType, types.FunctionType)):
                state = getattr(value, "__dict__", None)
                if isinstance(state, dict) and key[:2] != "__":
                    owners += [
                        (f"{module_name}.{key}.{k}", v, True) for k, v in list(state.items())
                    ]
            for label, item, held in owners:
                if isinstance(item, (list, dict, set)):
                    found.setdefault(id(item), (label, item, held))
    return found


def home(obj: Any) -> str | None:
    """The module `obj` was defined in: a function's or class's own; for an object a
    decorator made around a function (click's `Command`, `toolz.curry`), or a function it
    made there without `functools.wraps` (toolz's `memoize`, which sets only
    `__wrapped__`), the function's."""
    seen: set[int] = set()
    while isinstance(obj, types.FunctionType) and id(obj) not in seen:
        seen.add(id(obj))
        wrapped = obj.__dict__.get("__wrapped__")
        if not isinstance(wrapped, types.FunctionType):
            return obj.__module__
        obj = wrapped
    if isinstance(obj, (type, types.FunctionType)):
        return obj.__module__
    state = getattr(obj, "__dict__", None)
    if isinstance(state, dict):
        for value in list(state.values()):
            if isinstance(value, types.FunctionType):
                return value.__module__
    module = getattr(obj, "__module__", None)
    return module if isinstance(module, str) else None


def drop(holder: Any, value: Any, log: UndoLog) -> None:
    if isinstance(holder, list):
        before = list(holder)
        holder[:] = [item for item in holder if item is not value]
        log.add(functools.partial(holder.__setitem__, slice(None), before))
        return
    log.add(functools.partial(_reset, holder, holder.copy()))
    if isinstance(holder, dict):
        for key in [k for k, v in holder.items() if v is value]:
            del holder[key]
    else:
        holder.discard(value)


def still_held(unmerged: list[tuple[str, Any, Any]], skip: list[Any]) -> list[list[str]]:
    """What holds the old object of each name whose new object could not be merged into it
    (looked up after from-import copies were re-bound; `skip` are liveforge's own
    records), in words. One search of the heap for all of them."""
    # a new object made around the old one (`f = deco(f)`) holds it too: not a reference
    # left behind
    wrappers = [new for _, old, new in unmerged if _holders.wraps(new, old)]
    inside = [r for new in wrappers for r in [*gc.get_referents(new), *_cells(new)]]
    return _holders.describe_each([old for _, old, _ in unmerged], [*skip, *inside])


def _cells(obj: Any) -> tuple[Any, ...]:
    return getattr(obj, "__closure__", None) or ()


def unmerged_notes(
    unmerged: list[tuple[str, Any, Any]],
    held: list[list[str]],
    aliases: dict[str, str] | None = None,
) -> list[str]:
    """Notes for names whose new object could not be merged into the old one (`held`: what
    holds each old one, see `still_held`; `aliases`: those computed again from another of
    the names, see `_holders.unmerged`)."""
    aliases = aliases or {}
    return [
        _holders.unmerged(name, old, new, held=where, alias_of=aliases.get(name))
        for (name, old, new), where in zip(unmerged, held)
    ]


def holders(obj: Any, skip: list[Any], *, cells: bool = False) -> list[Any]:
    """The lists, dicts (not namespaces) and sets that hold `obj`, except those in `skip`;
    with `cells`, also the closure cells (a decorator's `lambda new: recode(fn, new)` stored
    on the function it made). Asked before the engine links `obj` to anything itself
    (forwarders, `__wrapped__`)."""
    skipped = {id(s) for s in skip}
    return [
        h
        for h in _holders.referrers((obj,))
        if id(h) not in skipped
        and (
            isinstance(h, (list, set))
            or (cells and isinstance(h, types.CellType))
            or (isinstance(h, dict) and not is_namespace(h) and not _class_namespace(h))
        )
    ]


def _class_namespace(holder: dict[str, Any]) -> bool:
    """A class's own namespace (a nested class sits in its outer class's): not a registry,
    and never written to but through the class."""
    return "__module__" in holder and any(
        isinstance(owner, type) and any(d is holder for d in gc.get_referents(owner.__dict__))
        for owner in _holders.referrers((holder,))
    )


def replace_in(containers: list[Any], new: Any, live: Any, log: UndoLog) -> list[str]:
    """Put `live` where `containers` (or closure cells) hold `new`; a list or set that
    already holds `live` just loses `new`. Returns the kind of each container changed."""
    for holder in containers:
        if isinstance(holder, types.CellType):
            holder.cell_contents = live
            log.add(functools.partial(setattr, holder, "cell_contents", new))
        elif isinstance(holder, list):
            _fix_list(holder, new, live, log)
        elif isinstance(holder, dict):
            _fix_dict(holder, new, live, log)
        else:
            holder.discard(new)
            log.add(functools.partial(_reset, holder, set(holder)))
            holder.add(live)
    return [type(h).__name__ for h in containers]


def is_namespace(holder: dict[str, Any]) -> bool:
    """A module's or an instance's own namespace, or a frame's locals (not a registry)."""
    return "__name__" in holder and "__builtins__" in holder


def _fix_list(holder: list[Any], new: Any, live: Any, log: UndoLog) -> None:
    # Undone, the container is as it was before the patch stored `new` in it.
    before = [item for item in holder if item is not new]
    if any(item is live for item in holder):
        holder[:] = before
    else:
        holder[:] = [live if item is new else item for item in holder]
    log.add(functools.partial(holder.__setitem__, slice(None), before))


def _fix_dict(holder: dict[Any, Any], new: Any, live: Any, log: UndoLog) -> None:
    for key, value in list(holder.items()):
        if value is new:
            holder[key] = live


def _reset(holder: Any, before: Any) -> None:
    holder.clear()
    holder.update(before)
