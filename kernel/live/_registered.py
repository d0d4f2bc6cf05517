"""Registrations: what a decorator (or a base's `__init_subclass__`, a metaclass) stored when a
definition ran, followed when the definition runs again or goes.

A fresh import holds one entry per definition, where its current source stores it. So when a
definition runs again:

- where the new object was stored, the live one it was merged into takes its place
  (`replace_held`); a dict loses the entries under which the old definition stored the live
  one when the new one went under another key (`@register('UP')` after
  `@register('upper')`), and the new key takes the old one's place in the dict's order;
- a registry of the module that held the live object, and was not given the new one while
  the decorators changed (the new decorator does not register), loses the live one;
- a removed definition leaves the registries of its module (`forget`).

Registries are found by searching the heap (`gc.get_referrers`) only when needed: for a
decorated function something beyond its module holds (its reference count tells), for a
class with hooks, for a new object that could not be merged. What they held before the
definition ran is kept (`before_rerun`), so undoing the change — a rollback, or a later
statement failing — restores each of them exactly, keys and order.
"""

from __future__ import annotations

import ast
import functools
import gc
import sys
import types
from typing import Any

from liveforge.kernel.live import _holders
from liveforge.kernel.live._classes import MergeContext
from liveforge.kernel.live._reach import (
    class_hooks,
    drop,
    holders,
    home,
    is_namespace,
    references,
    registries,
    registry_containers,
    replace_in,
)
from liveforge.kernel.live._undo import UndoLog

_CONTAINERS = (list, dict, set)


def before_rerun(node: ast.stmt, old: ast.stmt | None, live: Any, ctx: MergeContext) -> None:
    """Before a function's definition (`old` before the change, `node` now: either one
    decorated), or a class whose building may store it, runs again: the lists, dicts and
    sets that hold the live object, as they are."""
    if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
        if not (_decorators(node) or _decorators(old)) or not _decorated(live):
            return
        if references(live) <= _HELD_BY_MODULE:
            return
    elif not isinstance(node, ast.ClassDef) or not isinstance(live, type):
        return
    elif not class_hooks(live, node):
        return
    skip = {id(ctx.idmap), id(ctx.registered), id(ctx.searched)}
    found = ctx.searched.setdefault(id(live), [])
    for holder in _holders.referrers((live,)):
        if not isinstance(holder, _CONTAINERS) or id(holder) in skip:
            continue
        if isinstance(holder, dict) and is_namespace(holder):
            continue
        found.append(holder)
        ctx.registered.setdefault(id(holder), holder.copy())


def _decorated(live: Any) -> bool:
    """What a decorated definition may have left in registries: a function, or an object a
    decorator made around one (click's `Command`), not a module or a class."""
    return callable(live) and not isinstance(live, (type, types.ModuleType))


def _held_by_module() -> int:
    """What `references` gives, inside `before_rerun`, for a function only its module (and
    the engine's copy of the module namespace) holds."""
    namespace = {"f": _sample()}
    saved = dict(namespace)

    def probe(live: Any) -> int:
        return references(live)

    count = probe(saved["f"])
    del saved
    return count


def _sample() -> Any:
    def sample() -> None: ...

    return sample


_HELD_BY_MODULE = _held_by_module()


def rehome(name: str, new: type, live: type, node: ast.stmt | None, ctx: MergeContext) -> None:
    """After `new` was merged into `live`: where what ran while building `new` (a base's
    `__init_subclass__`, a metaclass, a class decorator) stored it, the live class takes
    its place; where nothing was found, a note says what was not replayed."""
    hooks = class_hooks(new, node or ast.Pass())
    if hooks:
        replace_held(name, holders(new, [ctx.created]), new, live, ctx, hooks)


def replace_held(
    name: str, held: list[Any], new: Any, live: Any, ctx: MergeContext, hooks: list[str]
) -> None:
    """What ran while the new object was built (`hooks`: a decorator, a base's
    `__init_subclass__`) stored it: the live one takes its place. Where nothing was found
    that holds it, the note says which class hooks (`__init_subclass__`, a metaclass: code
    run for its side effects) ran and were not replayed for the live class."""
    who = " or ".join(hooks)
    # A closure the decorator made around the new object (a `__conform__` that recodes
    # it) holds the live one instead, as a fresh import's would hold it: nothing to say.
    cells = [h for h in held if isinstance(h, types.CellType)]
    if cells:
        replace_in(cells, new, live, ctx.log)
        held = [h for h in held if not isinstance(h, types.CellType)]
        if not held:
            return
    if held:
        gone: list[str] = []
        for holder in held:
            if isinstance(holder, dict):
                before = ctx.registered.pop(id(holder), None)
                searched = id(live) in ctx.searched
                gone += [repr(k) for k in move_entry(holder, new, live, ctx.log, before, searched)]
            else:
                ctx.registered.pop(id(holder), None)
                replace_in([holder], new, live, ctx.log)
        kinds = ", ".join(type(h).__name__ for h in held)
        left = (
            f"; its entry under {', '.join(gone)}, where the old definition stored it, was "
            "taken out"
            if gone
            else ""
        )
        ctx.notes.append(
            f"{name}: the new definition was also stored by {who} ({kinds}); the live object "
            f"took its place there, as one entry, like a fresh import's{left}"
        )
        return
    ran = " and ".join(h for h in hooks if not h.startswith("its decorator"))
    if not ran:
        return  # a class decorator that stored nothing: it only changed the class
    ctx.notes.append(
        f"{name}: {ran} ran again for the new class object, which was then merged into the "
        "live class; it stored it in no list, dict or set liveforge could find, so anything "
        f"else it did (a weak registry, a counter, a call elsewhere) was done for that "
        f"object and not replayed for the live {name}. Check it, and redo that for {name} "
        "where needed"
    )


def move_entry(
    holder: dict[Any, Any],
    new: Any,
    live: Any,
    log: UndoLog,
    before: dict[Any, Any] | None,
    searched: bool,
) -> list[Any]:
    """A decorator stored `new` in `holder` (under one or more keys): `live` takes those
    places, and the entries holding `live` under other keys — where the old definition
    stored it — go, as in a fresh import. `before` is the dict as it was before the
    definition ran (None: not known, or — when `searched` — `live` was not in it). Undone,
    the keys touched are as in `before`. Returns the keys that went."""
    keys = [k for k, v in holder.items() if v is new]
    if not keys:
        # No longer there: what stored it put the live object back itself (forwardpy's
        # registries, re-pointed by `_forward.rebind`), so the live one's entries stay.
        return []
    old = [k for k, v in holder.items() if v is live and k not in keys]
    if "__module__" in holder and "__doc__" in holder:
        old = []  # a class's own dict: only its entries for `new` change
    if before is None:
        # Not looked for: the decorator stored it again under the same key, unless it is
        # still under another one.
        same = not old and not searched
        before = {k: live if v is new else v for k, v in holder.items() if v is not new or same}
    _log_restore(holder, before, {*keys, *old}, log)
    if old and not any(k in before for k in keys):
        # The new keys take the first old one's place, where a fresh import puts them.
        now = dict(holder)
        holder.clear()
        for key, value in now.items():
            if key == old[0]:
                holder.update(dict.fromkeys(keys, live))
            elif key not in old and key not in keys:
                holder[key] = value
        return old
    for key in old:
        del holder[key]
    for key in keys:
        holder[key] = live
    return old


def after_rerun(
    name: str, live: Any, now: Any, old: ast.stmt | None, new: ast.stmt, ctx: MergeContext
) -> None:
    """After a decorated definition ran again and was merged: `live` is what the name held
    before, `now` what it holds (`live` itself when merged), `old`/`new` the statements.
    Registries of the module that held `live` and were not given the new object lose it
    when the decorators changed; a new object that could not be merged keeps the entries
    its decorator made, and undoing the change puts back what they replaced."""
    held = ctx.searched.pop(id(live), None)
    if now is not live and _decorators(new):
        for holder in holders(now, [ctx.created, *ctx.searched.values()]):
            before = ctx.registered.get(id(holder))
            if isinstance(holder, dict):
                keys = {k for k, v in holder.items() if v is now}
                for clear in _dispatch_caches(holder, now):
                    ctx.log.add(clear)  # undone after the entry: no stale dispatch stays
                _log_restore(holder, before or _without(holder, now), keys, ctx.log)
            elif isinstance(holder, list):
                restore = before if before is not None else [v for v in holder if v is not now]
                ctx.log.add(functools.partial(holder.__setitem__, slice(None), restore))
    if not held:
        return
    own = registries([live])
    changed = _decorators(old) != _decorators(new)
    if not isinstance(live, types.FunctionType):
        own = _of_decorators(own, home(live), old)
    else:  # a framework's table may know it by name too (see `forget`)
        tables = {
            k: label
            for k, (label, container, held) in registry_containers([live]).items()
            if held and isinstance(container, dict)
        }
        own = {k: label for k, label in own.items() if k not in tables}
        if changed:
            _still_in_tables(name, live, held, (tables, new), ctx)
    gone = []
    for holder in held:
        if ctx.registered.pop(id(holder), None) is None or id(holder) not in own:
            continue  # given the new definition (`replace_held`), or no registry of the module
        stored = now is not live and _holds(holder, now)
        if (stored or changed) and _holds(holder, live):
            drop(holder, live, ctx.log)
            gone.append(own[id(holder)])
    if gone:
        ctx.notes.append(
            f"{name}: taken out of {', '.join(sorted(gone))}, where the old definition's "
            "decorator stored it; the new one does not, so a fresh import would not have it "
            "there"
        )


def _still_in_tables(
    name: str,
    live: Any,
    held: list[Any],
    where: tuple[dict[int, str], ast.stmt],
    ctx: MergeContext,
) -> None:
    """A function whose decorators changed stays in the frameworks' tables the old ones
    stored it in (taking it out would break what knows it by name, as Flask's URL rules
    do), where it now runs the new code: a note names them, unless a new decorator stores
    it there again."""
    tables, new = where
    again = _of_decorators(tables, home(live), new)
    kept = sorted(
        tables[id(h)] for h in held if id(h) in tables and id(h) not in again and _holds(h, live)
    )
    if kept:
        ctx.notes.append(
            f"{name}: its decorators changed, but {', '.join(kept)} still "
            f"{'holds' if len(kept) == 1 else 'hold'} it, where the old decorator stored it, "
            "and it runs the new code there (a fresh import would not have it there). "
            "Restart the program to drop it"
        )


def _of_decorators(
    own: dict[int, str], module: str | None, node: ast.stmt | None
) -> dict[int, str]:
    """For an object a decorator made (click's `Command`): only the containers of the
    objects its decorators are reached through (`cli.commands` for `@cli.command()`) are
    where a decorator stored it; a module list built from the name (`PIPELINE = [add]`) is
    not."""
    roots = set()
    for decorator in getattr(node, "decorator_list", []):
        while isinstance(decorator, (ast.Call, ast.Attribute)):
            decorator = decorator.func if isinstance(decorator, ast.Call) else decorator.value
        if isinstance(decorator, ast.Name):
            roots.add(f"{module}.{decorator.id}.")
    return {k: label for k, label in own.items() if label.startswith(tuple(roots))}


def _decorators(node: ast.stmt | None) -> list[str]:
    return [ast.dump(d) for d in getattr(node, "decorator_list", [])]


def _without(holder: dict[Any, Any], value: Any) -> dict[Any, Any]:
    return {k: v for k, v in holder.items() if v is not value}


def _log_restore(
    holder: dict[Any, Any], before: dict[Any, Any], keys: set[Any], log: UndoLog
) -> None:
    """Undone, `holder` has `keys` as in `before` (absent when not there)."""
    order = list(before)
    values = {k: before[k] for k in keys if k in before}
    log.add(functools.partial(_restore_keys, holder, order, values, keys))


def _restore_keys(
    holder: dict[Any, Any], order: list[Any], values: dict[Any, Any], keys: set[Any]
) -> None:
    """`holder` with `keys` as in `values` (absent when not there), every other entry as it
    is now, in `order` (entries added since after them)."""
    now = dict(holder)
    holder.clear()
    for key in order:
        if key in values:
            holder[key] = values[key]
        elif key in now and key not in keys:
            holder[key] = now[key]
    for key, value in now.items():
        if key not in holder and key not in keys:
            holder[key] = value


def forget(name: str, value: Any, ctx: MergeContext, decorated: bool = False) -> None:
    """A class the new source no longer defines leaves the registries its bases'
    `__init_subclass__` (or its metaclass) stored it in, as a fresh import would not have
    it there: lists, dicts and sets bound in its module or its bases' modules, directly or
    as class attributes; a `decorated` function leaves the lists, dicts and sets bound in its
    module (where its decorator stored it; looked through, not searched for). Other
    containers are left alone."""
    if decorated and _decorated(value):
        # Where its decorator stored it: containers bound in its module, or, for an object
        # the decorator made (a click `Command`), held there by an object's attribute (a
        # click group's `commands`); looked through, not searched for.
        containers = registry_containers([value])
        if isinstance(value, types.FunctionType):
            # A function the decorator returned as it was is also known to its framework by
            # name (Flask's URL rules name their view): taking it out of the framework's
            # dict would break the name; it is said instead (`_still_held`). An object's
            # list or set names nothing: the function leaves it.
            containers = {
                k: v for k, v in containers.items() if not (v[2] and isinstance(v[1], dict))
            }
        found = {key: label for key, (label, _, _) in containers.items()}
        held = [c for _, c, _ in containers.values() if _holds(c, value)]
        if isinstance(value, types.FunctionType):
            held += _dispatch_registries(value, found, ctx.log)
            _still_held(name, value, held, ctx)
    elif isinstance(value, type) and class_hooks(value, ast.Pass()):
        found = registries([value])
        held = [h for h in holders(value, [ctx.created]) if id(h) in found]
    else:
        return
    if not held:
        return
    for holder in held:
        drop(holder, value, ctx.log)
    ctx.notes.append(
        f"{name}: removed, and taken out of {', '.join(sorted(found[id(h)] for h in held))}"
        ", where what ran when it was defined stored it, as a fresh import would not have it"
    )


def unregister_overloads(made: list[Any], namespace: dict[str, Any]) -> None:
    """The functions an undone change made leave the registries of the module's
    `functools.singledispatch` functions (`namespace`), where their `register` put them
    (an added `def _` overload, which no name holds), each cache emptied."""
    ids = {id(f) for f in made}
    for _, mapping, clear in _dispatchers_in(namespace):
        gone = [k for k, v in mapping.items() if id(v) in ids]
        for key in gone:
            del mapping[key]
        if gone:
            clear()


def _dispatchers(value: Any) -> list[tuple[str, dict[Any, Any], Any]]:
    """The `functools.singledispatch` functions of `value`'s module: each one's name, the
    dict behind its `registry` and its `_clear_cache`."""
    module = sys.modules.get(home(value) or "")
    return _dispatchers_in(getattr(module, "__dict__", {}))


def _dispatchers_in(namespace: dict[str, Any]) -> list[tuple[str, dict[Any, Any], Any]]:
    """`_dispatchers` of the module whose namespace is `namespace`."""
    found = []
    for key, dispatcher in list(namespace.items()):
        registry = getattr(dispatcher, "registry", None)
        clear = getattr(dispatcher, "_clear_cache", None)
        if not isinstance(registry, types.MappingProxyType) or not callable(clear):
            continue
        mapping = next(iter(gc.get_referents(registry)), None)
        if isinstance(mapping, dict):
            found.append((f"{namespace.get('__name__')}.{key}", mapping, clear))
    return found


def _dispatch_caches(holder: dict[Any, Any], value: Any) -> list[Any]:
    """The `_clear_cache` of each singledispatch function whose registry is `holder`."""
    return [clear for _, mapping, clear in _dispatchers(value) if mapping is holder]


def _dispatch_registries(value: Any, found: dict[int, str], log: UndoLog) -> list[Any]:
    """The registries of its module's `functools.singledispatch` functions that hold
    `value` (an overload): each one's dict, named in `found`, its dispatch cache emptied
    now and when the change is undone."""
    held = []
    for label, mapping, clear in _dispatchers(value):
        if _holds(mapping, value):
            found[id(mapping)] = f"{label}.registry"
            held.append(mapping)
            clear()
            log.add(clear)
    return held


def _still_held(name: str, value: Any, dropped: list[Any], ctx: MergeContext) -> None:
    """A removed decorated function that containers other than its module's registries
    still hold (a framework's table of views): a note names them (one heap search; removals
    are rare)."""
    labels = registries([value])
    kept = [h for h in holders(value, [ctx.created]) if not any(h is d for d in dropped)]
    where = [labels.get(id(h)) or f"a {type(h).__name__}" for h in kept]
    if where:
        ctx.notes.append(
            f"{name}: removed from the source, but still held by {', '.join(sorted(where))}, "
            "where what ran when it was defined stored it; it may still be called there (a "
            "fresh import would not have it). Restart the program to drop it"
        )


def _holds(container: Any, value: Any) -> bool:
    items = container.values() if isinstance(container, dict) else container
    return any(item is value for item in items)
