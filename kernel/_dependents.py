"""Dependents of a reloaded module: `from mod import NAME` bindings made elsewhere."""

from __future__ import annotations

import ast
import sys
import types

from liveforge.kernel._sources import ModuleRecord, ModuleRegistry


def rebind_dependents(registry: ModuleRegistry, name: str) -> list[str]:
    """Re-bind names other managed modules imported from `name`; returns notes.

    Functions and classes are updated in place and need no re-binding; constants and other
    rebound values do.
    """
    source_module = sys.modules[name]
    notes = []
    for other in list(sys.modules.values()):
        if not isinstance(other, types.ModuleType) or other is source_module:
            continue
        record = registry.get(other.__name__)
        if record is None or record.index is None:
            continue
        for alias_name, attr in _from_imports(record, name):
            if hasattr(source_module, attr) and \
                    other.__dict__.get(alias_name) is not getattr(source_module, attr):
                other.__dict__[alias_name] = getattr(source_module, attr)
                notes.append(f"re-bound {other.__name__}.{alias_name} to {name}.{attr}")
    return notes


def _from_imports(record: ModuleRecord, source_name: str) -> list[tuple[str, str]]:
    """(bound name, attribute) pairs of `from <source_name> import ...` in `record`."""
    assert record.index is not None
    package = record.name if record.is_package else record.name.rpartition(".")[0]
    pairs: list[tuple[str, str]] = []
    for stmt in record.index.stmts:
        node = stmt.node
        if not isinstance(node, ast.ImportFrom):
            continue
        base = node.module or ""
        if node.level:
            anchor = package.split(".")
            anchor = anchor[:len(anchor) - node.level + 1]
            base = ".".join([*anchor, base] if base else anchor)
        if base == source_name:
            pairs.extend((a.asname or a.name, a.name) for a in node.names if a.name != "*")
    return pairs
