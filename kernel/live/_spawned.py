"""Functions made earlier by a function that changed: closures, inner `def`s and lambdas.

A factory (`def make(tag): return lambda x: (tag, x)`), a decorator's `wrapper`, a method
returning a callback: each made function objects from its old code, and they live on in
registries, `functools.partial`s, attributes and defaults. When the maker changes, each of
them gets the matching nested code object of the new version in place — matched by
qualified name and, for several of one name (lambdas), by their order, as jurigged does
for nested code — when its free variables are the same. Otherwise it keeps its old code,
and a note names it, says where it is held and how to make it anew. Never silently.

Finding them means searching the heap (`gc.get_referrers`), so that happens only when one
of them is alive at all: a function made from a nested code object holds a reference to it,
so a code object referenced only by its maker's constants has no such function, and the
common patch — of a function that makes none, or whose closures were called and dropped,
like `sorted(key=lambda ...)` — costs no search. A maker whose lines moved (lines were
inserted above it) gets new code objects; the earlier ones its functions may still hold are
remembered when it moves (`moved`), again without a search.
"""

from __future__ import annotations

import functools
import sys
import types
import weakref
from collections.abc import Callable

from liveforge.kernel.live import _holders
from liveforge.kernel.live._undo import UndoLog

Key = tuple[str, int]


def nested(code: types.CodeType) -> dict[Key, types.CodeType]:
    """Code objects `code` makes functions from (nested ones too), keyed by qualified name
    and the order among code objects of that name."""
    found: dict[Key, types.CodeType] = {}
    _walk(code, found)
    return found


def _walk(code: types.CodeType, found: dict[Key, types.CodeType]) -> None:
    for const in code.co_consts:
        if isinstance(const, types.CodeType):
            order = sum(1 for name, _ in found if name == const.co_qualname)
            found[(const.co_qualname, order)] = const
            _walk(const, found)


def moved(before: types.CodeType, after: types.CodeType) -> dict[int, types.CodeType]:
    """`after` is `before` with its lines moved: returns id of each nested code object of
    `before` -> its counterpart in `after`, and remembers, for each counterpart, the earlier
    code objects functions made before the move may still hold (no heap search here)."""
    live = {id(c) for c in _alive_own(before)}
    new = nested(after)
    pairs = {}
    for key, code in nested(before).items():
        if key not in new:
            continue
        pairs[id(code)] = new[key]
        earlier = _earlier(code)
        if id(code) in live:
            earlier = [code, *earlier]
        if earlier:
            target = new[key]
            _EARLIER[id(target)] = (weakref.ref(target, _forget(id(target))), earlier)
    return pairs


#: id of a moved maker's nested code object -> (a weak reference to it, the code objects
#: before the move that functions made earlier may still hold); see `moved`. Keyed by
#: identity: equal code objects of other functions (code compares by value) are others.
_EARLIER: dict[int, tuple[weakref.ref[types.CodeType], list[types.CodeType]]] = {}


def _earlier(code: types.CodeType) -> list[types.CodeType]:
    entry = _EARLIER.get(id(code))
    return entry[1] if entry is not None and entry[0]() is code else []


def _forget(key: int) -> Callable[[object], None]:
    def drop(ref: object) -> None:
        entry = _EARLIER.get(key)
        if entry is not None and entry[0] is ref:
            del _EARLIER[key]

    return drop


def _counts(codes: list[types.CodeType]) -> list[int]:
    return [sys.getrefcount(code) for code in codes]


def _calibrate() -> int:
    """References to a nested code object no live function was made from, as `_counts`
    sees them: its maker's constants, the list passed in, and the call's own."""

    def maker() -> object:
        return lambda: None

    return _counts(list(nested(maker.__code__).values()))[0]


_BASELINE = _calibrate()


def alive(code: types.CodeType) -> list[types.CodeType]:
    """The nested code objects of `code` that some object besides `code` refers to (a
    function made from it, a running generator's frame), and those they stood for before
    `code` moved."""
    found = _alive_own(code)
    if _EARLIER:
        for inner in nested(code).values():
            found += _earlier(inner)
    return found


def _alive_own(code: types.CodeType) -> list[types.CodeType]:
    codes = list(nested(code).values())
    return [c for c, n in zip(codes, _counts(codes), strict=True) if n > _BASELINE]


def made_from(code: types.CodeType) -> list[types.FunctionType]:
    """The live functions made from `code`'s nested code objects (searched for only when
    one is alive)."""
    codes = alive(code)
    if not codes:
        return []
    ids = {id(c) for c in codes}
    found = _holders.referrers(tuple(codes))
    return [f for f in found if isinstance(f, types.FunctionType) and id(f.__code__) in ids]


def update(
    old_code: types.CodeType, new_code: types.CodeType, log: UndoLog, same_defaults: bool = True
) -> list[str]:
    """Give the functions made earlier from `old_code`'s nested code the new nested code;
    returns notes naming those that keep the old one, and those whose captured values the
    old code computed (the maker's own code or defaults changed, not only the nested code)."""
    funcs = made_from(old_code)
    if not funcs:
        return []
    old_nested, new_nested = nested(old_code), nested(new_code)
    key_of = {id(c): key for key, c in old_nested.items()}
    for key, inner in old_nested.items():
        key_of.update((id(c), key) for c in _earlier(inner))
    same_maker = same_defaults and _own_part(old_code) == _own_part(new_code)
    whys: list[str] = []
    codes: list[types.CodeType | None] = []
    for func in funcs:
        key = key_of[id(func.__code__)]
        code = new_nested.get(key)
        why = _mismatch(key, code, func, old_nested, new_nested)
        if why:
            why, code = f"it keeps its old code: {why}", None
        elif code is not None and not same_maker and code.co_freevars:
            why = (
                f"it runs the new code, but the values it captured "
                f"({', '.join(code.co_freevars)}) were computed by the old "
                f"{old_code.co_name}, whose own code or defaults changed"
            )
        whys.append(why)
        codes.append(code)
    # Where the noted ones are held: one search of the heap, before any of them changes.
    held = iter(_holders.describe_each([f for f, why in zip(funcs, whys) if why], [funcs]))
    notes = []
    for index, why in enumerate(whys):
        if why:
            notes.append(_note(funcs[index], old_code, why, next(held)))
        code = codes[index]
        if code is not None:
            log.add(functools.partial(setattr, funcs[index], "__code__", funcs[index].__code__))
            funcs[index].__code__ = code
    return notes


def _own_part(code: types.CodeType) -> tuple[object, ...]:
    """What a function's own code does, nested code objects and docstring left out."""
    consts = [c for c in code.co_consts if not isinstance(c, types.CodeType)]
    if consts and isinstance(consts[0], str):
        consts = consts[1:]
    return (code.co_code, code.co_names, code.co_varnames, code.co_cellvars, consts)


def _mismatch(
    key: Key,
    code: types.CodeType | None,
    func: types.FunctionType,
    old_nested: dict[Key, types.CodeType],
    new_nested: dict[Key, types.CodeType],
) -> str:
    if code is None:
        return "the new code makes no such function"
    if _how_many(old_nested, key[0]) != _how_many(new_nested, key[0]):
        return f"the new code makes another number of {key[0].rpartition('.')[2]} functions"
    if code.co_freevars != func.__code__.co_freevars:
        return (
            f"its free variables changed ({', '.join(func.__code__.co_freevars) or 'none'} "
            f"-> {', '.join(code.co_freevars) or 'none'})"
        )
    return ""


def _how_many(codes: dict[Key, types.CodeType], qualname: str) -> int:
    return sum(1 for name, _ in codes if name == qualname)


def _note(func: types.FunctionType, maker: types.CodeType, why: str, held: list[str]) -> str:
    where = ", ".join(held) or "nothing found besides local variables"
    return (
        f"{func.__qualname__} (made by {maker.co_qualname} before this change; held by "
        f"{where}): {why}. Call {maker.co_qualname} again to make it "
        "anew, and put the result where the old one is (or patch the statement that made "
        "it, so it runs again)"
    )
