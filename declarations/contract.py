"""The base of liveforge's declarations: fields checked when an object is built.

forwardpy's own constructor sets the keyword arguments it recognises and ignores the rest,
so `Toolbox(runtim=rt)` would build a toolbox without a runtime. A `Contract` knows its
declared fields (annotations, over the class hierarchy) and refuses a constructor call with
an unknown field or without a required one, naming both and the fields it has.

Implementation state has a declared home too: a field whose default is `fresh(Factory)` gets
a new `Factory()` per object, typed like any field, instead of a hidden attribute::

    class Session(Contract):
        id: str                                  # required
        title: str = ""                          # optional, default ""
        live: SessionLive = fresh(SessionLive)   # impl state: a new one per session
"""

from __future__ import annotations

import difflib
import inspect
from collections.abc import Callable
from typing import Any, Generic, TypeVar, cast

import forwardpy

from liveforge.kernel.errors import LiveforgeError

__all__ = ["Contract", "ContractFieldError", "fresh"]

T = TypeVar("T")
_REQUIRED = object()


class ContractFieldError(LiveforgeError, TypeError):
    """A declaration was built with an unknown field, or without a required one."""

    def __init__(self, cls: type, unknown: list[str], missing: list[str], fields: list[str]):
        self.cls, self.unknown, self.missing = cls.__name__, unknown, missing
        parts = []
        for name in unknown:
            close = difflib.get_close_matches(name, fields, n=1)
            parts.append(
                f"unknown field {name!r}" + (f" (did you mean {close[0]!r}?)" if close else "")
            )
        if missing:
            parts.append("missing " + ", ".join(repr(m) for m in missing))
        super().__init__(
            f"{cls.__name__}(): {'; '.join(parts)}. Its fields are: {', '.join(fields)}."
        )


class _Fresh(Generic[T]):
    """Marks a field whose default is a new `factory()` for every object."""

    def __init__(self, factory: Callable[[], T]) -> None:
        self.factory = factory

    def __repr__(self) -> str:
        return f"fresh({getattr(self.factory, '__name__', self.factory)})"


def fresh(factory: Callable[[], T]) -> T:
    """A field default made anew for every object: `fresh(list)`, `fresh(SessionLive)`."""
    return cast(T, _Fresh(factory))


class Contract(forwardpy.Object):
    """A forwardpy declaration whose constructor checks its keyword fields."""

    # not annotated: forwardpy would make a declared attribute of it
    _contract_fields = cast("dict[str, Any]", {})

    def __init_subclass__(cls, **kwargs: Any) -> None:
        # runs inside type.__new__, before forwardpy turns the defaults into descriptors
        super().__init_subclass__(**kwargs)
        fields: dict[str, Any] = {}
        for base in reversed(cls.__bases__):  # each base's fields are complete already
            fields.update(getattr(base, "_contract_fields", {}))
        for name in inspect.get_annotations(cls):
            if not name.startswith("_"):
                fields[name] = cls.__dict__.get(name, _REQUIRED)
        cls._contract_fields = fields

    def __init__(self, **values: Any) -> None:
        fields = type(self)._contract_fields
        unknown = [n for n in values if n not in fields]
        missing = [n for n, d in fields.items() if d is _REQUIRED and n not in values]
        if unknown or missing:
            raise ContractFieldError(type(self), unknown, missing, list(fields))
        for name, default in fields.items():
            if name in values:
                setattr(self, name, values[name])
            elif isinstance(default, _Fresh):
                setattr(self, name, default.factory())
