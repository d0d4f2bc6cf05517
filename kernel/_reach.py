"""What else holds the objects a patch replaced: registries and closures made earlier.

Re-executing a definition builds new objects and the engine merges them into the live ones,
so every reference to the live object runs the new code. Two kinds of reference escape that:

- a decorator that *stores* what it decorates (`REGISTRY.append(f)`, `routes[path] = f`),
  or a base's `__init_subclass__` that stores the subclasses, stored the new object too.
  A fresh import would hold one entry; the new object is replaced by the live one it was
  merged into (and dropped where the live one already is).
- a function that *makes* functions (a decorator's `wrapper`, a factory's closure) made
  them earlier from its old code. Those closures get the new nested code in place when
  their free variables are the same; otherwise a note names them.

Both look at the heap (`gc.get_referrers`), so both run only when needed: the first when
the new function has references nobody in the engine made (its reference count tells) or
the new class may have been stored (`may_register`), the second when the changed function
has nested functions at all.
"""

from __future__ import annotations

import abc
import ast
import enum
import functools
import gc
import sys
import types
from typing import Any

from liveforge.kernel._classes import MergeContext
from liveforge.kernel._update import UndoLog


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


def may_register(cls: type, node: ast.stmt) -> bool:
    """True when building `cls` may have stored it somewhere: a base's `__init_subclass__`,
    a metaclass of its own, or a class decorator other than `dataclass`. (Classes refer to
    themselves in many ways, so their reference count tells nothing; the heap is searched
    only in these cases.)"""
    if type(cls) not in _PLAIN_METACLASSES:
        return True
    if any("__init_subclass__" in vars(base) for base in cls.__mro__[1:-1]):
        return True
    decorators = getattr(node, "decorator_list", [])
    return any("dataclass" not in ast.unparse(d) for d in decorators)


def holders(obj: Any, skip: list[Any]) -> list[Any]:
    """The lists, dicts (not namespaces) and sets that hold `obj`, except those in `skip`.
    Asked before the engine links `obj` to anything itself (forwarders, `__wrapped__`)."""
    skipped = {id(s) for s in skip}
    return [
        h
        for h in gc.get_referrers(obj)
        if id(h) not in skipped
        and (isinstance(h, (list, set)) or (isinstance(h, dict) and not _is_namespace(h)))
    ]


def replace_in(containers: list[Any], new: Any, live: Any, log: UndoLog) -> list[str]:
    """Put `live` where `containers` hold `new`; a list or set that already holds `live`
    just loses `new`. Returns the kind of each container changed."""
    for holder in containers:
        if isinstance(holder, list):
            _fix_list(holder, new, live, log)
        elif isinstance(holder, dict):
            _fix_dict(holder, new, live, log)
        else:
            holder.discard(new)
            log.add(functools.partial(_reset_set, holder, set(holder)))
            holder.add(live)
    return [type(h).__name__ for h in containers]


def _is_namespace(holder: dict[str, Any]) -> bool:
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


def _reset_set(holder: set[Any], before: set[Any]) -> None:
    holder.clear()
    holder.update(before)


_ANONYMOUS = {"<genexpr>", "<listcomp>", "<setcomp>", "<dictcomp>", "<lambda>"}


def nested_codes(code: types.CodeType) -> dict[str, types.CodeType]:
    """Code of the named functions `code` makes when it runs (nested ones too), by qualified
    name. Lambdas are left out: nearly always called at once, and looking for the ones that
    were kept would cost a scan of the heap on every patch of a function using one."""
    found: dict[str, types.CodeType] = {}
    for const in code.co_consts:
        if isinstance(const, types.CodeType) and const.co_name not in _ANONYMOUS:
            found[const.co_qualname] = const
            found.update(nested_codes(const))
    return found


def update_spawned(old_code: types.CodeType, new_code: types.CodeType, log: UndoLog) -> list[str]:
    """Give closures made earlier by a changed function (`old_code`) the new nested code.

    Returns notes for closures that keep their old code (their free variables changed, or
    the new code no longer makes them)."""
    old_nested = nested_codes(old_code)
    if not old_nested:
        return []
    new_nested = nested_codes(new_code)
    by_code = {id(c): name for name, c in old_nested.items()}
    notes = []
    for holder in gc.get_referrers(*old_nested.values()):
        if not isinstance(holder, types.FunctionType) or id(holder.__code__) not in by_code:
            continue
        name = by_code[id(holder.__code__)]
        code = new_nested.get(name)
        if code is None or code.co_freevars != holder.__code__.co_freevars:
            notes.append(
                f"{name} (made by {old_code.co_qualname} before this change, e.g. a "
                f"decorator's wrapper) keeps its old code: "
                + (
                    "the new code makes no such function"
                    if code is None
                    else "its free variables changed"
                )
                + "; re-run what made it to rebuild it"
            )
            continue
        log.add(functools.partial(setattr, holder, "__code__", holder.__code__))
        holder.__code__ = code
    return notes


def own_code(func: Any) -> types.CodeType | None:
    """The code of a function, or of the function a wrapper (lru_cache) holds."""
    inner = func if isinstance(func, types.FunctionType) else getattr(func, "__wrapped__", None)
    return inner.__code__ if isinstance(inner, types.FunctionType) else None


def replace_held(name: str, held: list[Any], new: Any, live: Any, ctx: MergeContext) -> None:
    """A decorator stored the new object (a registry): the live one takes its place."""
    kinds = replace_in(held, new, live, ctx.log)
    ctx.notes.append(
        f"{name}: the new definition was also stored by its decorator ({', '.join(kinds)}); "
        "the live object took its place there, as one entry, like a fresh import's"
    )
