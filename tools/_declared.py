"""forwardpy facts about live objects: which methods a class declares and where each active
``@impl`` body lives."""

from __future__ import annotations

import sys
from typing import Any

from liveforge.kernel.live._forwardpy import active_impl, declared_names, method_registry

__all__ = ["active_impl", "declared_names", "impl_location", "is_active_impl", "live_attr"]


def impl_location(func: Any) -> tuple[str, int]:
    """``(module, first line)`` of an implementation function, decorators included."""
    code = getattr(func, "__code__", None)
    return getattr(func, "__module__", "?") or "?", code.co_firstlineno if code else 0


def is_active_impl(func: Any) -> bool | None:
    """For an ``@impl`` function: whether it is the registered body (None if not an impl)."""
    cls = getattr(func, "__forwardpy_class__", None)
    if not isinstance(cls, type) or getattr(func, "__forwardpy_is_classmethod__", False):
        return None
    registered = method_registry.get(cls, {}).get(getattr(func, "__name__", ""))
    return registered is func


def live_attr(module_name: str, names: list[str]) -> Any:
    """The live object at ``module.names...``, or None."""
    obj: Any = sys.modules.get(module_name)
    for name in names:
        obj = getattr(obj, name, None) if obj is not None else None
    return obj
