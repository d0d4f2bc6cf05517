"""Dependents of a changed module: `from mod import NAME` bindings made elsewhere, and the
references to objects the change could not update in place."""

from __future__ import annotations

import ast
import sys
import types
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from liveforge.kernel import _reach
from liveforge.kernel._sources import ModuleRegistry
from liveforge.kernel._undo import UndoLog

if TYPE_CHECKING:
    from liveforge.kernel._engine import Outcome

_MISSING = object()


def follow_up(registry: ModuleRegistry, name: str, outcome: Outcome, root: str | None) -> list[str]:
    """After module `name` ran new source: re-bind what other modules imported from it, then
    name what still holds objects the change could not update in place. Returns notes."""
    revert = outcome.revert
    if revert is None:
        return []
    notes = []
    rebound = revert.rebound()
    if rebound:
        notes += rebind_dependents(registry, name, rebound, revert.log, root)
    del rebound  # it holds the old objects, which are looked up next
    if outcome.unmerged:
        records = [*revert.bindings.values(), *outcome.unmerged, outcome.unmerged]
        notes += _reach.unmerged_notes(outcome.unmerged, records)
    return notes


def rebind_dependents(
    registry: ModuleRegistry,
    name: str,
    before: dict[str, Any] | None = None,
    log: UndoLog | None = None,
    root: str | None = None,
) -> list[str]:
    """Re-bind names other modules imported from `name` (`from name import X [as Y]`, and
    `from name import *` for names it still holds the old value of); returns notes. Each
    re-binding is recorded in `log` so the change that caused it undoes it too.

    Functions and classes are updated in place and need no re-binding; constants and other
    rebound values do. Managed modules are always checked; any other loaded module (with
    its file under `root`, when given) is checked when it still holds one of the values
    `name` bound `before` the change.
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
        body = _statements(registry, other, replaced, root)
        for alias_name, attr in _from_imports(body, other, name, before or {}):
            if hasattr(source_module, attr) and other.__dict__.get(alias_name) is not getattr(
                source_module, attr
            ):
                namespace = other.__dict__
                if log is not None:
                    log.add(_rebinder(namespace, alias_name, namespace.get(alias_name, _MISSING)))
                namespace[alias_name] = getattr(source_module, attr)
                notes.append(f"re-bound {other.__name__}.{alias_name} to {name}.{attr}")
    return notes


def _rebinder(namespace: dict[str, Any], name: str, value: Any) -> Callable[[], None]:
    def undo() -> None:
        if value is _MISSING:
            namespace.pop(name, None)
        else:
            namespace[name] = value

    return undo


def _statements(
    registry: ModuleRegistry, module: types.ModuleType, replaced: set[int], root: str | None
) -> list[ast.stmt]:
    """The top-level statements of a module that may import from the changed one."""
    record = registry.get(module.__name__)
    if record is not None and record.index is not None:
        return [s.node for s in record.index.stmts]
    filename = getattr(module, "__file__", None)
    if (
        not replaced
        or not isinstance(filename, str)
        or not filename.endswith(".py")
        or (root is not None and not filename.startswith(root))
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
    body: list[ast.stmt], module: types.ModuleType, source_name: str, before: dict[str, Any]
) -> list[tuple[str, str]]:
    """(bound name, attribute) pairs of `from <source_name> import ...` in `body`; a star
    import stands for the names of `before` that `module` still binds to the old value."""
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
        if base != source_name:
            continue
        for alias in node.names:
            if alias.name != "*":
                pairs.append((alias.asname or alias.name, alias.name))
                continue
            namespace = module.__dict__
            pairs.extend(
                (attr, attr)
                for attr, value in before.items()
                if not attr.startswith("_") and namespace.get(attr, _MISSING) is value
            )
    return pairs
