"""What follows from rebinding a name: the statements of the module that a fresh import would
run differently although their text did not change.

- A name bound again by a later statement (`class X: ...` then `try: from ._fast import X`)
  keeps what that later statement bound: re-running the earlier definition must not leave
  the name on the unused fallback.
- A function whose default values or decorators read a rebound name (`def f(n=LIMIT)`)
  is defined again, in place, so its defaults are the new value's, as in a fresh import.
- Other statements that read a rebound name when the module ran (`DOUBLE = LIMIT * 2`, a
  class body) are not run again — that would repeat their side effects — and are named in
  a note instead (pure values are computed again, see `_recompute`).
- A removed definition whose name another statement, before it, binds too (`try: from
  ._fast import X` then `class X`) leaves the name on the removed object until that
  statement runs again; a note says so.
"""

from __future__ import annotations

import ast
from collections.abc import Iterable
from typing import Any

from liveforge.kernel.source._stmts import Stmt

_FUNCS = (ast.FunctionDef, ast.AsyncFunctionDef)


def bound_later(stmts: list[Stmt], ran: Iterable[Stmt], names: set[str]) -> dict[str, Stmt]:
    """For each of `names` bound by a statement in `ran`, the last statement after it that
    binds the name again and was not run."""
    ran_ids = {id(s) for s in ran}
    found: dict[str, Stmt] = {}
    pending = set(names)
    for stmt in reversed(stmts):
        if not pending:
            break
        if id(stmt) in ran_ids:
            pending -= stmt.binds
        else:
            for name in stmt.binds & pending:
                found.setdefault(name, stmt)
    return {n: s for n, s in found.items() if n in names}


def readers(
    stmts: list[Stmt], ran: Iterable[Stmt], names: set[str]
) -> tuple[list[Stmt], list[Stmt]]:
    """Statements not run that read any of `names` when the module runs them: (functions to
    define again, other statements). Statements before the first rebinding are left out
    only when they cannot see it, so all are checked."""
    ran_ids = {id(s) for s in ran}
    defs: list[Stmt] = []
    others: list[Stmt] = []
    for stmt in stmts:
        if id(stmt) in ran_ids or not stmt.binds:
            continue
        node = stmt.fresh_node()
        if not definition_reads(node) & names:
            continue
        (defs if isinstance(node, _FUNCS) else others).append(stmt)
    return defs, others


def definition_reads(node: ast.stmt) -> set[str]:
    """Names a statement reads when it runs (a function's body is left out: it reads its
    globals when called, and sees new values anyway)."""
    if isinstance(node, _FUNCS):
        args = node.args
        parts: list[ast.AST] = [*node.decorator_list, *args.defaults]
        parts += [d for d in args.kw_defaults if d is not None]
    else:
        parts = [node]
    names: set[str] = set()
    for part in parts:
        _reads(part, names)
    return names


def _reads(node: ast.AST, names: set[str]) -> None:
    if isinstance(node, ast.Name) and isinstance(node.ctx, ast.Load):
        names.add(node.id)
        return
    if isinstance(node, _FUNCS):
        for inner in [*node.decorator_list, *node.args.defaults, *node.args.kw_defaults]:
            if inner is not None:
                _reads(inner, names)
        return
    if isinstance(node, ast.Lambda):
        for inner in [*node.args.defaults, *node.args.kw_defaults]:
            if inner is not None:
                _reads(inner, names)
        return
    for child in ast.iter_child_nodes(node):
        _reads(child, names)


def still_bound(
    stmts: list[Stmt], ran: Iterable[Stmt], removed: set[str], namespace: dict[str, Any]
) -> list[str]:
    """Notes for names whose definition was removed while a statement that did not run
    binds them too, and which still hold what the removed definition made."""
    notes = []
    ran_ids = {id(s) for s in ran}
    for name, stmt in sorted(bound_later(stmts, [], removed).items()):
        value = namespace.get(name)
        if id(stmt) in ran_ids or getattr(value, "__qualname__", None) != name:
            continue
        if getattr(value, "__module__", None) != namespace.get("__name__"):
            continue
        notes.append(
            f"{name}: its definition was removed, and line {stmt.start} binds it too but did "
            f"not run again; {name} still holds the removed definition (a fresh import would "
            f"hold what line {stmt.start} binds). Patch the module with line {stmt.start} "
            "changed so it runs again"
        )
    return notes
