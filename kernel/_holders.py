"""Who holds an object, in words, for notes about references a change could not update:
module attributes by name, containers by kind (and by the module attribute holding them).
This searches the heap (`gc.get_referrers`), so it runs only on the rare paths that write
such a note, never on a plain patch."""

from __future__ import annotations

import functools
import gc
import sys
import types
from typing import Any


def unmerged(name: str, old: Any, new: Any, skip: list[Any] | None = None) -> str:
    """A note for a name whose new object cannot be merged into the old one (a decorator
    now returns another kind of object, with nothing to update in place or forward
    through), naming what still holds the old one."""
    where = ", ".join(describe(old, skip))
    held = (
        f"the old one is still held by {where}. Make those anew from the new definition"
        if where
        else "no other reference to the old one was found. Roll back to get it again"
    )
    return (
        f"{name}: the new definition is a {_kind(new)} where the old one was a {_kind(old)}, "
        f"with nothing to update in place or forward through; {name} (and its from-import "
        f"copies) now hold the new object, and {held}"
    )


def _kind(value: Any) -> str:
    kind = type(value)
    if kind.__module__ == "builtins":
        return kind.__qualname__
    return f"{kind.__module__}.{kind.__qualname__}"


def describe(obj: Any, skip: list[Any] | None = None) -> list[str]:
    """Where `obj` is held, in words: module attributes by name, containers by kind and,
    where a module attribute holds the container, by that name too. Frames, class
    namespaces and the objects in `skip` are left out."""
    skipped = {id(s) for s in skip or ()}
    found = []
    for holder in gc.get_referrers(obj):
        if (
            id(holder) in skipped
            or isinstance(holder, types.FrameType)
            or (isinstance(holder, dict) and "__qualname__" in holder and "__module__" in holder)
        ):
            continue
        if isinstance(holder, dict) and isinstance(holder.get("__name__"), str):
            if "__builtins__" in holder:
                # A loop, not a comprehension: a comprehension would make `obj` a cell,
                # which would be found holding it.
                for key, value in list(holder.items()):
                    if value is obj:
                        found.append(f"{holder['__name__']}.{key}")
                continue
        found.append(_container(holder))
    return sorted(set(found))


def _container(holder: Any) -> str:
    kind = type(holder).__qualname__
    if isinstance(holder, types.CellType):
        return "a closure cell"
    if isinstance(holder, (list, dict, set, tuple)):
        for module in list(sys.modules.values()):
            namespace = getattr(module, "__dict__", None)
            if not isinstance(namespace, dict):
                continue
            for name, value in list(namespace.items()):
                if value is holder:
                    return f"{module.__name__}.{name} (a {kind})"
    if isinstance(holder, functools.partial):
        return "a functools.partial"
    return f"a {kind}"
