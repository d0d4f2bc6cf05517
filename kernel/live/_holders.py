"""Who holds an object: the one search of the heap every part of the engine goes through
(`referrers`), and the holders in words, for notes about references a change could not
update: module attributes by name, containers by kind (and by the module attribute holding
them). Searching the heap costs, so it runs only on the rare paths that need it, never on a
plain patch.

`gc.get_referrers` does not see objects the program froze with `gc.freeze()` (a server that
forks workers, liveforge's own gateway): a registry or a closure made before the freeze
would be missed, and keep the old code without a word. So a search first unfreezes them
(`gc.unfreeze()`), and the change that searched says so in a note (`thawed_note`): the
collector visits those objects again from then on."""

from __future__ import annotations

import functools
import gc
import sys
import types
from collections.abc import Sequence
from typing import Any

#: objects a search unfroze since the last change said so (see `thawed_note`).
_thawed = 0
#: frozen objects that are never the program's doing: CPython 3.12 moves the interpreter's
#: immortal objects into the permanent generation whenever a collection visits them (375 on
#: 3.12.1, all of them parked by the collections at start: read when liveforge is imported),
#: so they are counted as frozen again after every full collection; other versions park
#: nothing. A search unfreezes them with the rest; no note counts them.
_IMMORTAL = gc.get_freeze_count() if sys.version_info[:2] == (3, 12) else 0
#: frozen objects that are not the program's doing either: all that liveforge's own server
#: froze (see `freeze_own`), until a search unfroze them.
_NOT_THE_PROGRAMS = _IMMORTAL


def freeze_own() -> None:
    """Collect, then leave every object alive now out of later collections (`gc.freeze()`),
    as liveforge's own servers do once started (the gateway and its project workers): a full
    pass over what startup made would stall every stream. A search that unfreezes these
    says nothing of them (they are liveforge's doing, not the program's); the collector
    visits them again from then on."""
    global _NOT_THE_PROGRAMS
    gc.collect()
    gc.freeze()
    _NOT_THE_PROGRAMS = gc.get_freeze_count()


def referrers(objs: tuple[Any, ...]) -> list[Any]:
    """The objects that refer to any of `objs` (`gc.get_referrers`), objects the program
    froze with `gc.freeze()` included: those are unfrozen first, and counted for
    `thawed_note`. The tuple itself is among them where the caller holds it (a tracked
    object from Python 3.12): a caller skips it by its id."""
    global _thawed, _NOT_THE_PROGRAMS
    frozen = gc.get_freeze_count()
    if frozen:
        gc.unfreeze()
        _thawed += max(frozen - _NOT_THE_PROGRAMS, 0)
        _NOT_THE_PROGRAMS = _IMMORTAL  # the next full collection parks those again
    return gc.get_referrers(*objs)


def thawed_note() -> str | None:
    """The note for the objects searches unfroze since it was last asked (None when none
    was): what the program had frozen is now in the collector's generations again."""
    global _thawed
    count, _thawed = _thawed, 0
    if not count:
        return None
    return (
        f"the program had frozen {count:,} objects with gc.freeze(); they were unfrozen so "
        "the search for what holds the old code could see them (the garbage collector "
        "visits them again; call gc.freeze() again to leave them out of its passes)"
    )


#: the containers `_container` names by the module attribute that holds them.
_BINDABLE = (list, dict, set, tuple)


def unmerged(
    name: str,
    old: Any,
    new: Any,
    skip: list[Any] | None = None,
    held: list[str] | None = None,
    *,
    alias_of: str | None = None,
) -> str:
    """A note for a name whose new object cannot be merged into the old one (a decorator
    now returns another kind of object, with nothing to update in place or forward
    through), naming what still holds the old one (`held`: `describe(old, skip)`, when the
    caller already looked it up). `alias_of`: the name is an alias (`g = f`) computed again
    from that name, which took the new object."""
    where = ", ".join(describe(old, skip) if held is None else held)
    held_by = (
        f"the old one is still held by {where}. Make those anew from the new definition"
        if where
        else "no other reference to the old one was found. Roll back to get it again"
    )
    if alias_of is not None:
        return (
            f"{name}: an alias of {alias_of}, computed again, so it holds what {alias_of} "
            f"holds now, a {_kind(new)} that the old {_kind(old)} could not become (see the "
            f"note on {alias_of}); {name} (and its from-import copies) now hold the new "
            f"object, and {held_by}"
        )
    if wraps(new, old):
        return (
            f"{name}: the new statement binds it to a {_kind(new)} made around the old "
            f"{_kind(old)}, which therefore stays as it was (it cannot become what wraps it); "
            f"{name} (and its from-import copies) now hold the new object, and {held_by}"
        )
    return (
        f"{name}: the new definition is a {_kind(new)} where the old one was a {_kind(old)}, "
        f"with nothing to update in place or forward through; {name} (and its from-import "
        f"copies) now hold the new object, and {held_by}"
    )


def wraps(outer: Any, obj: Any) -> bool:
    """True when `outer` holds `obj` itself: as its `__wrapped__`, in a closure cell, an
    attribute (instance dict or slot) or a `functools.partial`'s function — a later
    statement made `outer` around `obj` (`f = deco(f)`), so `obj` cannot take its place."""
    if outer is obj or isinstance(outer, (type, types.ModuleType)):
        return False
    held = list(getattr(outer, "__dict__", {}).values())
    if isinstance(outer, types.FunctionType):
        held += [_cell(c) for c in outer.__closure__ or ()]
    if isinstance(outer, functools.partial):
        held.append(outer.func)
    for cls in type(outer).__mro__:
        slots = cls.__dict__.get("__slots__", ())
        held += [getattr(outer, s, None) for s in ((slots,) if isinstance(slots, str) else slots)]
    return any(value is obj for value in held)


def _cell(cell: types.CellType) -> Any:
    try:
        return cell.cell_contents
    except ValueError:
        return None


def _kind(value: Any) -> str:
    kind = type(value)
    if kind.__module__ == "builtins":
        return kind.__qualname__
    return f"{kind.__module__}.{kind.__qualname__}"


def describe(obj: Any, skip: list[Any] | None = None) -> list[str]:
    """Where `obj` is held, in words: module attributes by name, containers by kind and,
    where a module attribute holds the container, by that name too. Frames, class
    namespaces and the objects in `skip` are left out."""
    return describe_each((obj,), skip)[0]


def describe_each(objs: Sequence[Any], skip: list[Any] | None = None) -> list[list[str]]:
    """`describe` for each of `objs`, with one search of the heap: a holder found holds
    those of `objs` among its referents (what `gc.get_referrers` answers for each), and
    is named once, with one pass over the modules for all holders."""
    skipped = {id(s) for s in skip or ()}
    skipped.add(id(objs))
    # Indexes by identity only: a container of the objects would be found holding them.
    wanted: dict[int, list[int]] = {}
    for index in range(len(objs)):
        wanted.setdefault(id(objs[index]), []).append(index)
    found: list[set[str]] = [set() for _ in range(len(objs))]
    containers: list[tuple[Any, set[int]]] = []
    # the call's own argument tuple holds them too (a tracked object on 3.12 and later)
    args = tuple(objs)
    skipped.add(id(args))
    for holder in referrers(args):
        if (
            id(holder) in skipped
            or isinstance(holder, types.FrameType)
            or (isinstance(holder, dict) and "__qualname__" in holder and "__module__" in holder)
        ):
            continue
        held: set[int] = set()
        for referent in gc.get_referents(holder):
            held.update(wanted.get(id(referent), ()))
        if isinstance(holder, dict) and isinstance(holder.get("__name__"), str):
            if "__builtins__" in holder:
                for index in held:
                    # Loops, not comprehensions: a comprehension would make the object a
                    # cell, which would be found holding it.
                    for key, value in list(holder.items()):
                        if value is objs[index]:
                            found[index].add(f"{holder['__name__']}.{key}")
                continue
        containers.append((holder, held))
    bound = _bound_in_modules({id(h) for h, _ in containers if isinstance(h, _BINDABLE)})
    for holder, held in containers:
        text = _container(holder, bound)
        for index in held:
            found[index].add(text)
    return [sorted(names) for names in found]


def _bound_in_modules(ids: set[int]) -> dict[int, tuple[types.ModuleType, str]]:
    """For each object in `ids` that a module attribute holds: the first module (in
    `sys.modules` order) and name that does. One pass over the modules' namespaces, each
    looked at name by name only when it holds one of them."""
    bound: dict[int, tuple[types.ModuleType, str]] = {}
    for module in list(sys.modules.values()):
        if len(bound) == len(ids):
            break
        namespace = getattr(module, "__dict__", None)
        if not isinstance(namespace, dict) or ids.isdisjoint(map(id, list(namespace.values()))):
            continue
        for name, value in list(namespace.items()):
            if id(value) in ids and id(value) not in bound:
                bound[id(value)] = (module, name)
    return bound


def _container(holder: Any, bound: dict[int, tuple[types.ModuleType, str]]) -> str:
    kind = type(holder).__qualname__
    if isinstance(holder, types.CellType):
        return "a closure cell"
    if isinstance(holder, _BINDABLE) and id(holder) in bound:
        module, name = bound[id(holder)]
        return f"{module.__name__}.{name} (a {kind})"
    if isinstance(holder, functools.partial):
        return "a functools.partial"
    return f"a {kind}"
