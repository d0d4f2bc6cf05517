"""The functions a value holds: through class bodies, nested classes, descriptors and
`__wrapped__` chains; those a statement defined, and those a module's objects hold."""

from __future__ import annotations

import functools
import types
from typing import Any


def defined_functions(value: Any, filename: str, first: int, last: int) -> list[types.FunctionType]:
    """Functions reachable from `value` (through class bodies, nested classes, descriptors
    and `__wrapped__` chains) whose code was compiled from lines `first`..`last` of
    `filename` — the functions a statement standing at those lines defined. Functions it
    merely references (a decorator's wrapper, a helper from elsewhere) are left out."""
    found: dict[int, types.FunctionType] = {}
    collect_functions(value, found)
    return [
        f
        for f in found.values()
        if f.__code__.co_filename == filename and first <= f.__code__.co_firstlineno <= last
    ]


def module_functions(namespace: dict[str, Any], filename: str) -> list[types.FunctionType]:
    """Every function reachable from a module's own functions and classes whose code comes
    from `filename` (closures bound at module or class level included)."""
    found: dict[int, types.FunctionType] = {}
    name = namespace.get("__name__")
    for value in list(namespace.values()):
        if getattr(value, "__module__", None) == name:
            collect_functions(value, found)
    return [f for f in found.values() if f.__code__.co_filename == filename]


_TRANSIENT = {"<genexpr>", "<listcomp>", "<setcomp>", "<dictcomp>"}


def makes_functions(code: types.CodeType) -> bool:
    """True when running `code` can create functions that outlive the call (nested defs and
    lambdas; comprehensions are called at once and dropped)."""
    return any(
        isinstance(c, types.CodeType) and (c.co_name not in _TRANSIENT or makes_functions(c))
        for c in code.co_consts
    )


def collect_functions(value: Any, found: dict[int, types.FunctionType]) -> None:
    """Add to `found` the functions reachable from `value` (through class bodies, nested
    classes, descriptors and `__wrapped__` chains), by id."""
    if isinstance(value, type):
        for member in list(value.__dict__.values()):
            if not isinstance(member, type) or member.__qualname__.startswith(
                value.__qualname__ + "."
            ):
                collect_functions(member, found)
        return
    for func in _functions_in(value):
        while isinstance(func, types.FunctionType) and id(func) not in found:
            found[id(func)] = func
            func = getattr(func, "__wrapped__", None)


def _functions_in(value: Any) -> list[Any]:
    if isinstance(value, types.ModuleType):
        return []
    if isinstance(value, (classmethod, staticmethod)):
        value = value.__func__
    if isinstance(value, property):
        return [value.fget, value.fset, value.fdel]
    if isinstance(value, types.FunctionType):
        return [value]
    wrapped = getattr(value, "__wrapped__", None)
    if wrapped is not None:
        return [wrapped]
    if isinstance(value, functools.partial):
        return [value.func]
    # A class-based decorator's instance (`curry`) that keeps its function as an attribute,
    # in its `__dict__` or in a slot, or through a `functools.partial` there (toolz's curry).
    state = getattr(value, "__dict__", None)
    held = list(state.values()) if isinstance(state, dict) else []
    for cls in type(value).__mro__[:-1]:
        slots = cls.__dict__.get("__slots__", ())
        for slot in (slots,) if isinstance(slots, str) else slots:
            held.append(getattr(value, slot, None) if isinstance(slot, str) else None)
    held = [v.func if isinstance(v, functools.partial) else v for v in held]
    return [v for v in held if isinstance(v, types.FunctionType)]


def classes_in(roots: list[Any], module: Any) -> list[type]:
    """The classes of `module` among `roots`, with the classes nested in them."""
    found: dict[int, type] = {}
    todo = [r for r in roots if isinstance(r, type) and r.__module__ == module]
    while todo:
        cls = todo.pop()
        if id(cls) in found:
            continue
        found[id(cls)] = cls
        todo += [
            m
            for m in list(cls.__dict__.values())
            if isinstance(m, type) and m.__qualname__.startswith(cls.__qualname__ + ".")
        ]
    return list(found.values())
