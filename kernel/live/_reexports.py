"""Re-exported names: where a name a module binds by `from .x import *` or
`from .x import y` is defined, and which names a module's star imports bind.

`more_itertools.chunked` is bound in `more_itertools/__init__.py` by `from .more import *`;
its source lives in `more_itertools.more`. Viewing or patching the re-exported name must
reach that definition, not add a shadowing one to the package.
"""

from __future__ import annotations

import ast
import importlib.util
import sys
import types
from typing import Any

from liveforge.kernel.live._revert import MISSING
from liveforge.kernel.source._stmts import Index, Stmt, is_star

_MISSING = object()


def origin(
    index: Index, module: types.ModuleType, name: str, *, bound_now: bool = False
) -> tuple[str, str] | None:
    """(module, name) where the value `module` binds to `name` through an import is
    defined, or None when `module` defines it itself (or it is not bound). With
    `bound_now`, a definition of the module that a later import re-binds (`class X` then
    `try: from ._fast import X`) does not count: the name is where the value bound now is
    defined (what to show; a patch still goes to the module's own definition)."""
    value = module.__dict__.get(name, _MISSING)
    if value is _MISSING or (_defines(index, name) and not bound_now):
        return None
    home = getattr(value, "__module__", None)
    own = getattr(value, "__qualname__", None)
    if (
        isinstance(home, str)
        and home != module.__name__
        and own == getattr(value, "__name__", None)
        and getattr(sys.modules.get(home), own or "", None) is value
    ):
        return home, own or name
    if bound_now and _defines(index, name):
        return None
    return _imported_from(index, module, name, value)


def _defines(index: Index, name: str) -> bool:
    """True when a def, class or assignment of the module binds `name` itself."""
    return any(
        name in stmt.binds and not isinstance(stmt.node, (ast.Import, ast.ImportFrom))
        for stmt in index.stmts
    )


def _imported_from(
    index: Index, module: types.ModuleType, name: str, value: Any
) -> tuple[str, str] | None:
    """The module a `from m import name` / `from m import *` statement took `value` from
    (values without a home of their own, such as constants)."""
    found = None
    for stmt in index.stmts:
        node = stmt.node
        if not isinstance(node, ast.ImportFrom):
            continue
        source = _resolve(node, module)
        if source is None:
            continue
        for alias in node.names:
            attr = name if alias.name == "*" else alias.name
            bound = name if alias.name == "*" else (alias.asname or alias.name)
            if bound == name and getattr(source, attr, _MISSING) is value:
                found = (source.__name__, attr)
    return found


def _resolve(node: ast.ImportFrom, module: types.ModuleType) -> types.ModuleType | None:
    package = module.__name__ if hasattr(module, "__path__") else module.__package__
    try:
        name = importlib.util.resolve_name("." * node.level + (node.module or ""), package)
    except (ImportError, ValueError):
        return None
    return sys.modules.get(name)


def removed_names(
    module: types.ModuleType, index: Index, removed: set[str], dropped_stars: list[Stmt]
) -> tuple[set[str], dict[str, Any]]:
    """Names the new source no longer binds, and names whose removed definition hid what a
    star import binds (they take the imported value). A star import's names are known only
    at run time: those of its `from m import *` statements in the new source stay; those only
    a dropped one bound (and that are still the very objects of its module) go."""
    if not index.stars and not dropped_stars:
        return removed, {}
    stars = [s for s in index.stmts if is_star(s.node)]
    kept = {n: v for s in stars for n, v in _exported(module, s.node).items()}
    namespace = module.__dict__
    dropped = {
        name
        for stmt in dropped_stars
        for name, value in _exported(module, stmt.node).items()
        if name not in index.bound and namespace.get(name, _MISSING) is value
    }
    fallback = {n: kept[n] for n in removed & kept.keys()}
    return (removed | dropped) - kept.keys(), fallback


def _exported(module: types.ModuleType, node: ast.stmt) -> dict[str, Any]:
    """What `from m import *` (node) binds, read from `m` as it is loaded now."""
    assert isinstance(node, ast.ImportFrom)
    try:
        name = importlib.util.resolve_name(
            "." * node.level + (node.module or ""), module.__package__ or None
        )
    except (ImportError, ValueError):
        return {}
    source = sys.modules.get(name)
    if source is None:
        return {}
    public = getattr(source, "__all__", None)
    names = public if public is not None else [n for n in vars(source) if n[:1] != "_"]
    return {n: getattr(source, n) for n in names if hasattr(source, n)}


def export_changes(
    module: types.ModuleType, changes: dict[str, tuple[Any, Any]]
) -> dict[str, tuple[Any, Any]]:
    """How what `from module import *` binds changed with `changes` (the bindings a change
    made: name -> (value before, value after), `MISSING` for unbound): each name exported
    before or after whose value differs -> (before, after), `MISSING` on the side where it
    was not exported. Exported means listed in `__all__`, or public (no leading underscore)
    when there is none."""
    namespace = module.__dict__

    def before(name: str) -> Any:
        change = changes.get(name)
        return change[0] if change is not None else namespace.get(name, MISSING)

    all_before, all_after = before("__all__"), namespace.get("__all__", MISSING)
    if all_before is MISSING and all_after is MISSING:
        return {n: c for n, c in changes.items() if n[:1] != "_"}
    if "__all__" not in changes:
        listed = _listed(all_after)
        return {n: c for n, c in changes.items() if n in listed}
    old_names = [n for n in namespace if n not in changes] + [
        n for n, (b, _) in changes.items() if b is not MISSING
    ]
    exported_before = _listed(all_before) if all_before is not MISSING else _public(old_names)
    exported_after = _listed(all_after) if all_after is not MISSING else _public(namespace)
    found = {}
    for name in exported_before | exported_after:
        if name == "__all__":
            continue
        value_before = before(name) if name in exported_before else MISSING
        value_after = namespace.get(name, MISSING) if name in exported_after else MISSING
        if value_before is not value_after:
            found[name] = (value_before, value_after)
    return found


def _listed(names: Any) -> set[str]:
    try:
        return {n for n in names if isinstance(n, str)}
    except TypeError:
        return set()


def _public(names: Any) -> set[str]:
    return {n for n in names if n[:1] != "_"}


def star_value(module: types.ModuleType, node: ast.stmt, name: str) -> Any:
    """What the star import `node` of `module` binds to `name` (read as loaded now), or
    `MISSING` when `node` is no star import or does not bind it."""
    return _exported(module, node).get(name, MISSING) if is_star(node) else MISSING
