"""Statements that moved without changing: their functions' and classes' line numbers follow.

Lines inserted or removed above a definition move it; the definition is not run again, so the
code of the functions it made (and of the closures those made, such as a decorator's
wrappers) gets its line numbers shifted, so tracebacks and `inspect` stay exact. From Python
3.13 a class records its first line too (`__firstlineno__`, where `inspect` finds its
source); the classes a moved statement made have it shifted the same way.
"""

from __future__ import annotations

import functools
import sys
import types
from operator import is_
from typing import Any

from liveforge.kernel.live import _bodies, _classes, _spawned
from liveforge.kernel.live._functions import (
    classes_in,
    defined_functions,
    makes_functions,
    module_functions,
)
from liveforge.kernel.live._update import shift_code
from liveforge.kernel.source._stmts import Stmt

#: classes record their first line from Python 3.13 (`__firstlineno__`).
_CLASS_LINES = sys.version_info >= (3, 13)
_CODE = types.CodeType


def shift_moved(
    namespace: dict[str, Any], moved: list[tuple[Stmt, int]], ctx: _classes.MergeContext
) -> None:
    """Move the line numbers of the functions each moved statement made (and of the closures
    those made) by its delta, recording the change in `ctx.log` (one entry for all)."""
    seen: set[types.FunctionType] = set()
    seen_classes: set[int] = set()
    in_module: list[types.FunctionType] | None = None
    codes: list[tuple[types.FunctionType, types.CodeType]] = []
    plain: dict[int, list[types.FunctionType]] = {}  # by delta: shifted in one pass each
    for stmt, delta in moved:
        first, last = stmt.start - delta, stmt.end - delta
        owners = tuple(map(namespace.get, stmt.binds))
        held = stmt.owners
        if stmt.functions is None or held is None or not all(map(is_, held, owners)):
            # Found once by line range; the objects keep their identity while the statement
            # is not executed again (its names hold what they held), so later moves reuse
            # the list.
            stmt.owners, stmt.classes = owners, None
            stmt.functions = [
                f
                for name in stmt.binds
                for f in defined_functions(namespace.get(name), ctx.filename, first, last)
            ]
            if not stmt.functions and isinstance(stmt.node, _bodies._FUNCTION_DEFS):
                # its name holds another statement's object: found where the module holds it
                name = stmt.node.name
                stmt.functions = _bodies.held_in_module(namespace, name, ctx.filename, first, last)
            stmt.spawns = any(makes_functions(f.__code__) for f in stmt.functions)
        funcs = stmt.functions
        if _CLASS_LINES and (stmt.classes != [] or stmt.spawns):
            _shift_classes(namespace, stmt, (first, last, delta), seen_classes, ctx)
        if not stmt.spawns:
            plain.setdefault(delta, []).extend(funcs)
            continue
        # Closures made at run time by the statement's functions (a decorator's wrappers)
        # are bound elsewhere in the module; they are found by their line range.
        if in_module is None:
            in_module = module_functions(namespace, ctx.filename)
        funcs = funcs + [f for f in in_module if first <= f.__code__.co_firstlineno <= last]
        # A closure found here takes the very nested code object its shifted maker holds;
        # those held elsewhere (a registry, a partial) keep theirs, which the maker's new code
        # remembers, so its next patch still finds them (see `_spawned.moved`).
        shifted: dict[int, types.CodeType] = {}
        for func in funcs:
            if func in seen:
                continue
            seen.add(func)
            before = func.__code__
            codes.append((func, before))
            func.__code__ = shifted.get(id(before)) or shift_code(before, delta)
            ctx.shifted.add(id(func.__code__))
            shifted.update(_spawned.moved(before, func.__code__))
    for delta, funcs in plain.items():
        # The common case (a patch above moves every definition below it), done in as few
        # Python steps per function as possible: each function once, the first move wins.
        funcs = [f for f in dict.fromkeys(funcs) if f not in seen]
        seen.update(funcs)
        olds = [f.__code__ for f in funcs]
        news = [
            c.replace(co_firstlineno=c.co_firstlineno + delta)
            if _CODE not in map(type, c.co_consts)
            else shift_code(c, delta)
            for c in olds
        ]
        for func, code in zip(funcs, news):
            func.__code__ = code
        codes.extend(zip(funcs, olds))
        ctx.shifted.update(map(id, news))
    if codes:
        ctx.log.add(functools.partial(_put_back, codes))


def _put_back(codes: list[tuple[types.FunctionType, types.CodeType]]) -> None:
    for func, code in reversed(codes):
        func.__code__ = code


def _shift_classes(
    namespace: dict[str, Any],
    stmt: Stmt,
    move: tuple[int, int, int],
    seen: set[int],
    ctx: _classes.MergeContext,
) -> None:
    """Move `__firstlineno__` (Python 3.13+) of the classes the statement made at lines
    `first`..`last` by `delta`: the classes it binds, their nested classes, and classes its
    functions made when called (a class factory's products, bound elsewhere)."""
    first, last, delta = move
    module = namespace.get("__name__")
    if stmt.spawns:
        found = classes_in(
            [namespace.get(n) for n in stmt.binds] + list(namespace.values()), module
        )
    else:
        if stmt.classes is None:  # kept, as the functions are (see `shift_moved`)
            stmt.classes = classes_in([namespace.get(n) for n in stmt.binds], module)
        found = stmt.classes
    for cls in found:
        line = cls.__dict__.get("__firstlineno__")
        if id(cls) in seen or not isinstance(line, int) or not first <= line <= last:
            continue
        seen.add(id(cls))
        ctx.log.add(functools.partial(type.__setattr__, cls, "__firstlineno__", line))
        type.__setattr__(cls, "__firstlineno__", line + delta)
