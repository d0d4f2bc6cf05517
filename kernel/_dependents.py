"""Dependents of a reloaded module: `from mod import NAME` bindings made elsewhere."""

from __future__ import annotations

import ast
import sys
import types
from typing import Any

from liveforge.kernel._sources import ModuleRegistry

_MISSING = object()


def rebind_dependents(
    registry: ModuleRegistry, name: str, before: dict[str, Any] | None = None
) -> list[str]:
    """Re-bind names other modules imported from `name`; returns notes.

    Functions and classes are updated in place and need no re-binding; constants and other
    rebound values do. Managed modules are always checked; any other loaded module is
    checked when it still holds one of the values `name` bound `before` the reload.
    """
    source_module = sys.modules[name]
    replaced = {
        id(value)
        for attr, value in (before or {}).items()
        if source_module.__dict__.get(attr, _MISSING) is not value
    }
    notes = []
    for other in list(sys.modules.values()):
        if not isinstance(other, types.ModuleType) or other is source_module:
            continue
        body = _statements(registry, other, replaced)
        for alias_name, attr in _from_imports(body, other, name):
            if hasattr(source_module, attr) and other.__dict__.get(alias_name) is not getattr(
                source_module, attr
            ):
                other.__dict__[alias_name] = getattr(source_module, attr)
                notes.append(f"re-bound {other.__name__}.{alias_name} to {name}.{attr}")
    return notes


def _statements(
    registry: ModuleRegistry, module: types.ModuleType, replaced: set[int]
) -> list[ast.stmt]:
    """The top-level statements of a module that may import from the reloaded one."""
    record = registry.get(module.__name__)
    if record is not None and record.index is not None:
        return [s.node for s in record.index.stmts]
    filename = getattr(module, "__file__", None)
    if (
        not replaced
        or not isinstance(filename, str)
        or not filename.endswith(".py")
        or not any(id(v) in replaced for v in list(module.__dict__.values()))
    ):
        return []
    try:
        if record is not None:
            return ast.parse(record.source, filename).body
        with open(filename, "rb") as handle:
            return ast.parse(handle.read(), filename).body
    except (OSError, SyntaxError, ValueError):
        return []


def _from_imports(
    body: list[ast.stmt], module: types.ModuleType, source_name: str
) -> list[tuple[str, str]]:
    """(bound name, attribute) pairs of `from <source_name> import ...` in `body`."""
    name = module.__name__
    package = name if hasattr(module, "__path__") else name.rpartition(".")[0]
    pairs: list[tuple[str, str]] = []
    for node in body:
        if not isinstance(node, ast.ImportFrom):
            continue
        base = node.module or ""
        if node.level:
            anchor = package.split(".")
            anchor = anchor[: len(anchor) - node.level + 1]
            base = ".".join([*anchor, base] if base else anchor)
        if base == source_name:
            pairs.extend((a.asname or a.name, a.name) for a in node.names if a.name != "*")
    return pairs
