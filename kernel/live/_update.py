"""In-place update of live function objects — the risky core of patching, kept small.

`update_function(old, new)` makes the existing function object `old` behave like `new`, so
every reference captured earlier (from-imports, callbacks, bound methods, registries) runs the
new code. The attributes are swapped in one C-level pass so another thread calling `old`
sees either the old or the new function, never a mix of code and defaults.

When the free variables differ (a closure changed, or a method newly uses zero-argument
`super()`), `__code__` cannot be swapped: `old` becomes a forwarder to `new` instead
(`__wrapped__` points at `new`, so inspect shows the new source and signature) and the update
says so in its note. `retarget` does the same when a changed decorator makes the name hold
another kind of callable (a function gains or loses `functools.lru_cache`): the name takes
the new object and the old one forwards to it.

Every mutation is recorded in an `UndoLog` so a failed patch restores the exact previous state.
"""

from __future__ import annotations

import functools
import gc
import inspect
import types
import weakref
from typing import Any

from liveforge.kernel.live import _spawned
from liveforge.kernel.live._holders import wraps
from liveforge.kernel.live._undo import UndoLog


class IdentityMap:
    """New objects of one patch -> the live objects they were merged into.

    A patch executes changed statements, which build new objects (classes, functions, enum
    members), and merges each into the live object it stands for. While merging, what the new
    objects refer to (a closure's cell, a `__wrapped__`, a base class, a member added to a class)
    is looked up here, so that live objects end up referring to live objects. Only identity
    tells objects apart, and an id is unique only among objects alive at the same time, so the
    map holds every object it is keyed by until the patch is done. Otherwise one that dies
    halfway hands its id on to an object a later statement builds, which is then taken for it:
    a nested class built again, which the live class replaced in the new outer class, is freed
    with its methods whenever the collector runs, and a later statement's new function could be
    merged as one of the live methods they stood for.
    """

    def __init__(self) -> None:
        self._pairs: dict[int, tuple[Any, Any]] = {}

    def link(self, new: Any, live: Any) -> None:
        """Remember that `new` was merged into `live` (and keep `new` alive)."""
        self._pairs[id(new)] = (new, live)

    def live(self, value: Any) -> Any:
        """The live object `value` was merged into, or `value` itself."""
        pair = self._pairs.get(id(value))
        return pair[1] if pair is not None and pair[0] is value else value


_FORWARD_KEY = "__liveforge_target__"
_SWAPPED = (
    "__code__",
    "__defaults__",
    "__kwdefaults__",
    "__doc__",
    "__annotations__",
    "__name__",
    "__qualname__",
    "__module__",
)


def _state(func: types.FunctionType) -> list[Any]:
    return [getattr(func, name) for name in _SWAPPED]


def _assign(func: types.FunctionType, values: list[Any]) -> None:
    # map() over C-level setattr runs without executing Python bytecode in between, so the
    # interpreter cannot switch threads halfway through the swap.
    list(map(setattr, [func] * len(_SWAPPED), _SWAPPED, values))


def _cells(func: types.FunctionType) -> tuple[types.CellType, ...]:
    return func.__closure__ or ()


def _cell_value(cell: types.CellType) -> Any:
    try:
        return cell.cell_contents
    except ValueError:
        return _EMPTY


_EMPTY = object()


def is_forwarder(func: Any) -> bool:
    """True for a function turned into a forwarder by an earlier closure change."""
    return isinstance(func, types.FunctionType) and _FORWARD_KEY in (func.__kwdefaults__ or {})


def _make_forwarder_code(nfree: int, template: types.CodeType) -> types.CodeType:
    names = [f"_lf_free{i}" for i in range(nfree)]
    keep = f"({', '.join(names)},); " if names else ""
    # The forwarder's body stands on its `def` line, so a traceback through it points at the
    # first line of the definition it stands for, not at some line inside its body.
    inner = "\n".join(
        ["def _outer():"]
        + [f"    {n} = None" for n in names]
        + [
            f"    def forward(*args, {_FORWARD_KEY}, **kwargs): "
            f"{keep}return {_FORWARD_KEY}(*args, **kwargs)",
            "    return forward",
        ]
    )
    namespace: dict[str, Any] = {}
    exec(compile(inner, "<liveforge-forwarder>", "exec"), namespace)
    code: types.CodeType = namespace["_outer"]().__code__
    return code.replace(
        co_name=template.co_name,
        co_qualname=template.co_qualname,
        co_filename=template.co_filename,
        co_firstlineno=template.co_firstlineno,
    )


def _become_forwarder(old: types.FunctionType, new: Any, new_dict: dict[str, Any]) -> None:
    """Turn `old` into a function that calls `new` (any callable) with its arguments."""
    # Named and numbered after the definition itself (through any decorator's wrapper; a
    # callable object with no code of its own keeps the old function's names).
    template = inspect.unwrap(new)
    module = getattr(new, "__module__", old.__module__)
    if not isinstance(getattr(template, "__code__", None), types.CodeType):
        # and its module: a `functools.partial` says it is `functools`'s
        template, module = old, old.__module__
    code = _make_forwarder_code(len(old.__code__.co_freevars), template.__code__)
    _assign(
        old,
        [
            code,
            None,
            {_FORWARD_KEY: new},
            getattr(new, "__doc__", None),
            getattr(new, "__annotations__", {}),
            getattr(new, "__name__", old.__name__),
            getattr(new, "__qualname__", old.__qualname__),
            module,
        ],
    )
    old.__dict__.clear()
    old.__dict__.update(new_dict)
    old.__wrapped__ = new  # type: ignore[attr-defined]


def forward(old: types.FunctionType, new: Any, log: UndoLog) -> None:
    """Make the live function `old` forward every call to the callable `new` (undone by
    `log`): references to `old`, or to an object holding it, run the new code."""
    _save(old, log)
    _become_forwarder(old, new, dict(old.__dict__))


def _save(old: types.FunctionType, log: UndoLog) -> None:
    before, before_dict = _state(old), dict(old.__dict__)
    before_cells = [_cell_value(c) for c in _cells(old)]

    def undo() -> None:
        for cell, value in zip(_cells(old), before_cells, strict=True):
            if value is _EMPTY:
                del cell.cell_contents
            else:
                cell.cell_contents = value
        _assign(old, before)
        old.__dict__.clear()
        old.__dict__.update(before_dict)

    log.add(undo)


def update_function(
    old: types.FunctionType, new: types.FunctionType, log: UndoLog, idmap: IdentityMap
) -> str | None:
    """Make `old` run `new`'s code in place; returns an identity note, or None."""
    clear_fronts(old)
    if is_forwarder(old):
        target = old.__kwdefaults__[_FORWARD_KEY]  # type: ignore[index]
        if mergeable(target, new):
            return update_callable(target, new, log, idmap)
        return retarget(old, new, log)
    _fix_cells(new, idmap, log)
    inner_note = _join(_update_wrapped(old, new, log, idmap), _spawned_notes(old, new, log))
    _save(old, log)
    new_dict = {k: idmap.live(v) for k, v in new.__dict__.items()}
    old_free, new_free = old.__code__.co_freevars, new.__code__.co_freevars
    if old_free == new_free:
        for old_cell, new_cell in zip(_cells(old), _cells(new), strict=True):
            value = _cell_value(new_cell)
            if value is not _EMPTY:
                old_cell.cell_contents = idmap.live(value)
        _assign(old, [getattr(new, name) for name in _SWAPPED])
        old.__dict__.clear()
        old.__dict__.update(new_dict)
        return inner_note
    _become_forwarder(old, new, new_dict)
    return _join(
        inner_note,
        f"{new.__qualname__}: its free variables changed "
        f"({', '.join(old_free) or 'none'} -> {', '.join(new_free) or 'none'}); the "
        "existing function object now forwards every call to the new one, so earlier "
        "references stay live",
    )


def _spawned_notes(old: types.FunctionType, new: Any, log: UndoLog) -> str | None:
    """Functions `old` made earlier (closures, lambdas) take the new nested code."""
    inner = inspect.unwrap(new) if not isinstance(new, types.FunctionType) else new
    if not isinstance(inner, types.FunctionType):
        return None
    same = _same(old.__defaults__, inner.__defaults__) and _same(
        old.__kwdefaults__, inner.__kwdefaults__
    )
    return _join(*_spawned.update(old.__code__, inner.__code__, log, same))


def _same(old: Any, new: Any) -> bool:
    try:
        return bool(old == new)
    except Exception:  # a value whose comparison fails: take it as changed
        return False


def _join(*notes: str | None) -> str | None:
    return "; ".join(n for n in notes if n) or None


def retarget(old: Any, new: Any, log: UndoLog) -> str | None:
    """When `new` cannot be merged into `old` because a changed decorator made the name hold
    another kind of callable (e.g. `functools.lru_cache` added or removed), make the function
    behind `old` forward to `new`, so references captured earlier run the new code. A cache
    in front of `old` is cleared, and cleared again whenever the code behind it is updated.
    Returns a note, or None when `old` is no such callable."""
    func = old if isinstance(old, types.FunctionType) else getattr(old, "__wrapped__", None)
    if not isinstance(func, types.FunctionType) or not _plain_callable(new):
        return None
    spawned = _spawned_notes(func, new, log)
    _save(func, log)
    _become_forwarder(func, new, dict(func.__dict__))
    fronts = set(_FRONT_CACHES.get(func, ()))
    if func is not old and isinstance(old, functools._lru_cache_wrapper):
        fronts.add(old)
    _front(new, fronts, log)
    for cache in fronts:
        cache.cache_clear()
        log.add(cache.cache_clear)  # undone, results of the new code must not stay
    return _join(
        spawned,
        f"{new.__qualname__}: its decorators changed what kind of object it is "
        f"({type(old).__name__} -> {type(new).__name__}); the name now holds the new "
        "object and the old one forwards every call to it",
    )


# Caches that stand in front of a function through forwarders: an old `lru_cache` wrapper
# captured before its decorator was removed still answers from its cache, so every in-place
# update of the function its calls now end in must clear it too.
_FRONT_CACHES: weakref.WeakKeyDictionary[types.FunctionType, weakref.WeakSet[Any]] = (
    weakref.WeakKeyDictionary()
)


def _front(new: Any, fronts: set[Any], log: UndoLog) -> None:
    """Register `fronts` as caches in front of the function that updates of `new` change."""
    if not fronts:
        return
    target = new if isinstance(new, types.FunctionType) else new.__wrapped__
    registered = _FRONT_CACHES.setdefault(target, weakref.WeakSet())
    added = fronts - set(registered)
    registered.update(added)

    def undo() -> None:
        for cache in added:
            registered.discard(cache)

    log.add(undo)


def clear_fronts(func: types.FunctionType) -> None:
    """Empty the caches registered as standing in front of `func` (see `_FRONT_CACHES`)."""
    for cache in list(_FRONT_CACHES.get(func, ())):
        cache.cache_clear()


def _plain_callable(value: Any) -> bool:
    return isinstance(value, types.FunctionType) or (
        callable(value)
        and not isinstance(value, (type, classmethod, staticmethod))
        and isinstance(getattr(value, "__wrapped__", None), types.FunctionType)
    )


def _fix_cells(new: types.FunctionType, idmap: IdentityMap, log: UndoLog | None = None) -> None:
    """Point the new function's cells (e.g. `__class__` for super()) at live objects."""
    for cell in _cells(new):
        value = _cell_value(cell)
        live = idmap.live(value)
        if live is not value:
            cell.cell_contents = live


def fix_cells(funcs: list[types.FunctionType], idmap: IdentityMap) -> None:
    """Point the cells of functions the new source created (e.g. `__class__`, which
    zero-argument `super()` reads) at the live objects their new counterparts merged into."""
    for func in funcs:
        _fix_cells(func, idmap)


def _update_wrapped(old: Any, new: Any, log: UndoLog, idmap: IdentityMap) -> str | None:
    old_inner = getattr(old, "__wrapped__", None)
    new_inner = getattr(new, "__wrapped__", None)
    if (
        isinstance(old_inner, types.FunctionType)
        and isinstance(new_inner, types.FunctionType)
        and old_inner is not new_inner
        and not wraps(new_inner, old_inner)  # `f = deco(deco(f))`: made around it
    ):
        note = update_function(old_inner, new_inner, log, idmap)
        idmap.link(new_inner, old_inner)
        return note
    return None


def mergeable(old: Any, new: Any) -> bool:
    """True when `new` can be merged into the live `old` as a function update."""
    if isinstance(old, types.FunctionType) and isinstance(new, types.FunctionType):
        return True
    return _wrapper_pair(old, new) or _decorator_pair(old, new)


def _decorator_pair(old: Any, new: Any) -> bool:
    """Two instances of one class-based decorator (`class curry: __call__`, a
    `cachedproperty`): objects of the same plain class whose attributes hold the function
    they decorate under the same name."""
    if type(old) is not type(new) or isinstance(
        old, (type, types.ModuleType, functools._lru_cache_wrapper)
    ):
        return False
    old_vars, new_vars = getattr(old, "__dict__", None), getattr(new, "__dict__", None)
    if not isinstance(old_vars, dict) or not isinstance(new_vars, dict):
        return False
    return any(
        isinstance(value, types.FunctionType) and isinstance(old_vars.get(key), types.FunctionType)
        for key, value in new_vars.items()
    )


def _merge_instance(old: Any, new: Any, log: UndoLog, idmap: IdentityMap) -> str | None:
    """Make the decorator instance `old` hold what `new` holds: the functions it wraps are
    updated in place, every other attribute takes the new value (as a fresh import's)."""
    state = old.__dict__
    before = dict(state)
    notes = []
    for key, value in list(new.__dict__.items()):
        current = state.get(key)
        if isinstance(value, types.FunctionType) and isinstance(current, types.FunctionType):
            notes.append(update_function(current, value, log, idmap))
            idmap.link(value, current)
        elif key != "__wrapped__":
            state[key] = idmap.live(value)
    for key in [k for k in state if k not in new.__dict__]:
        del state[key]
    log.add(functools.partial(_reset_state, state, before))
    return "; ".join(n for n in notes if n) or None


def _reset_state(state: dict[str, Any], before: dict[str, Any]) -> None:
    state.clear()
    state.update(before)


def takes_state(obj: Any) -> bool:
    """`obj` keeps all it holds where Python code can set it: a function (code, cells and
    attributes), or an object that refers to nothing but its type, its attributes and its
    slots (an instance of classes written in Python) — not one holding more in C fields,
    as `functools.partial` or an `lru_cache` wrapper do."""
    if isinstance(obj, types.FunctionType):
        return True
    if isinstance(obj, (type, types.ModuleType)):
        return False
    state = getattr(obj, "__dict__", None)
    known = {id(type(obj)), id(state)}
    if isinstance(state, dict):
        known.update(map(id, state.values()))
    known.update(id(getattr(obj, s)) for s in _slot_names(type(obj)) if hasattr(obj, s))
    return all(id(r) in known for r in gc.get_referents(obj))


def become(old: Any, new: Any, log: UndoLog, idmap: IdentityMap) -> str | None:
    """Make `old` (see `takes_state`) what `new`, an object of its type, is: a function
    runs the new code with the new cells and attributes; an instance takes the new one's
    attributes and slots, all of them, as they are. Returns a note, or None."""
    if isinstance(old, types.FunctionType):
        return update_function(old, new, log, idmap)
    state = getattr(old, "__dict__", None)
    if isinstance(state, dict):
        log.add(functools.partial(_reset_state, state, dict(state)))
        state.clear()
        state.update({k: idmap.live(v) for k, v in new.__dict__.items()})
    for slot in _slot_names(type(old)):
        before, after = getattr(old, slot, _EMPTY), getattr(new, slot, _EMPTY)
        log.add(functools.partial(_set_slot, old, slot, before))
        _set_slot(old, slot, idmap.live(after))
    return None


def _slot_names(cls: type) -> list[str]:
    """The attribute names of the slots the classes of `cls`'s MRO declare."""
    names = []
    for owner in cls.__mro__[:-1]:
        slots = owner.__dict__.get("__slots__", ())
        for slot in (slots,) if isinstance(slots, str) else slots:
            if slot in ("__dict__", "__weakref__"):
                continue
            if slot.startswith("__") and not slot.endswith("__"):
                slot = f"_{owner.__name__.lstrip('_')}{slot}"  # the name Python mangled it to
            names.append(slot)
    return names


def _set_slot(obj: Any, slot: str, value: Any) -> None:
    if value is not _EMPTY:
        setattr(obj, slot, value)
    elif hasattr(obj, slot):
        delattr(obj, slot)


def _dispatchers(old: Any, new: Any) -> bool:
    """Two `functools.singledispatch` functions around plain functions."""
    return all(
        isinstance(f, types.FunctionType)
        and isinstance(getattr(f, "__wrapped__", None), types.FunctionType)
        and isinstance(getattr(f, "registry", None), types.MappingProxyType)
        and callable(getattr(f, "_clear_cache", None))
        for f in (old, new)
    )


def _wrapper_pair(old: Any, new: Any) -> bool:
    return (
        type(old) is type(new)
        and not isinstance(old, type)
        and isinstance(getattr(old, "__wrapped__", None), types.FunctionType)
        and isinstance(getattr(new, "__wrapped__", None), types.FunctionType)
        and _same_cache(old, new)
    )


def _same_cache(old: Any, new: Any) -> bool:
    """False for two `lru_cache` wrappers with other parameters (maxsize, typed): those are
    fixed when the wrapper is made, so the name must take the new one (see `retarget`)."""
    if not isinstance(old, functools._lru_cache_wrapper):
        return True
    same: bool = old.cache_parameters() == new.cache_parameters()
    return same


def update_callable(old: Any, new: Any, log: UndoLog, idmap: IdentityMap) -> str | None:
    """Update a function, or a C-level wrapper (e.g. `functools.lru_cache`) through the
    function it wraps; a cache in front of the function is cleared so no stale result stays."""
    if _dispatchers(old, new):
        # Two `functools.singledispatch` functions: the live one keeps its registry (the
        # overloads registered on it, which their own statements update) and takes the new
        # base function in place.
        note = update_function(old.__wrapped__, new.__wrapped__, log, idmap)
        idmap.link(new.__wrapped__, old.__wrapped__)
        old._clear_cache()
        log.add(old._clear_cache)
        return note
    if isinstance(old, types.FunctionType):
        return update_function(old, new, log, idmap)
    if not _wrapper_pair(old, new):
        return _merge_instance(old, new, log, idmap)
    note = update_function(old.__wrapped__, new.__wrapped__, log, idmap)
    idmap.link(new.__wrapped__, old.__wrapped__)
    if isinstance(old, functools._lru_cache_wrapper):
        old.cache_clear()
        log.add(old.cache_clear)  # undone, results of the new code must not stay
    return note


# -- line numbers -----------------------------------------------------------------------------


def shift_code(code: types.CodeType, delta: int) -> types.CodeType:
    """The same code object with every line number (nested code included) moved by `delta`."""
    if types.CodeType not in map(type, code.co_consts):
        # No nested code (the common case): the line table is relative to co_firstlineno.
        return code.replace(co_firstlineno=code.co_firstlineno + delta)
    consts = tuple(shift_code(c, delta) if type(c) is types.CodeType else c for c in code.co_consts)
    return code.replace(co_firstlineno=code.co_firstlineno + delta, co_consts=consts)


def refile_code(code: types.CodeType, filename: str) -> types.CodeType:
    """The same code object (nested code included) compiled, as it were, from `filename`."""
    consts = tuple(
        refile_code(c, filename) if isinstance(c, types.CodeType) else c for c in code.co_consts
    )
    return code.replace(co_filename=filename, co_consts=consts)


def shift_function(func: types.FunctionType, delta: int, filename: str) -> None:
    """Move a function's line numbers after lines were inserted or removed above it."""
    if func.__code__.co_filename == filename:
        func.__code__ = shift_code(func.__code__, delta)
    inner = getattr(func, "__wrapped__", None)
    if isinstance(inner, types.FunctionType) and inner is not func:
        shift_function(inner, delta, filename)
