"""What follows from rebinding a name: the statements of the module that a fresh import would
run differently although their text did not change.

- A name bound again by a later statement (`class X: ...` then `try: from ._fast import X`)
  keeps what that later statement bound: re-running the earlier definition must not leave
  the name on the unused fallback.
- A function whose default values or decorators read a rebound name (`def f(n=LIMIT)`)
  is defined again, in place, so its defaults are the new value's, as in a fresh import.
- Other statements that read a rebound name when the module ran (`DOUBLE = LIMIT * 2`, a
  class body) are not run again — that would repeat their side effects — and are named in
  a note instead (pure values are computed again: `recompute`, below).
- A removed definition whose name another statement, before it, binds too (`try: from
  ._fast import X` then `class X`) leaves the name on the removed object until that
  statement runs again; a note says so.

## Pure values, computed again

Values a module computed at import from names a change rebound, computed again.

`LIMIT = 10` then `DOUBLE = LIMIT * 2`: after `LIMIT` is patched, a fresh import would have
`DOUBLE == 2 * LIMIT`. The statement did not change, so the engine does not run it again —
unless running it is exactly what a fresh import would do and has no effect beyond binding
its names. That holds for an assignment to plain names whose value is a pure expression:
literals, operators, comparisons, f-strings, subscripts and calls of a few pure builtins,
over module names that

- hold plain immutable values (numbers, strings, bytes, None, tuples and frozensets of
  them), so every operator is the builtin one and nothing can have changed them since, and
- are bound only by statements before it, so their current value is the one a fresh import
  would see at that point.

Such statements are run again in order, each seeing the ones before (`QUAD = DOUBLE * 2`
follows `DOUBLE`). Every other statement reading a rebound name is left to the engine's note.
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


_PURE_BUILTINS = frozenset(
    "abs all any bin bool bytes chr complex divmod float format frozenset hex int len max "
    "min oct ord pow repr round sorted str sum tuple".split()
)
_PLAIN = (int, float, complex, str, bytes, bool, type(None))
_NODES = (
    ast.Constant,
    ast.Name,
    ast.BinOp,
    ast.UnaryOp,
    ast.BoolOp,
    ast.Compare,
    ast.IfExp,
    ast.Tuple,
    ast.List,
    ast.Set,
    ast.Dict,
    ast.JoinedStr,
    ast.FormattedValue,
    ast.Subscript,
    ast.Slice,
    ast.Starred,
    ast.Call,
    ast.keyword,
    ast.operator,
    ast.unaryop,
    ast.cmpop,
    ast.boolop,
    ast.expr_context,
)


def recompute(
    stmts: list[Stmt],
    ran: Iterable[Stmt],
    rebound: set[str],
    namespace: dict[str, Any],
    filename: str,
    flags: int,
) -> tuple[list[Stmt], set[str], list[str]]:
    """Run again the pure assignments that read `rebound` names (see the module's doc).
    Returns the statements run, the names whose value changed, and notes."""
    ran_ids = {id(s) for s in ran}
    last = _last_bindings(stmts)
    changed = set(rebound)
    done: list[Stmt] = []
    notes = []
    for position, stmt in enumerate(stmts):
        if id(stmt) in ran_ids or not stmt.binds:
            continue
        node = stmt.fresh_node()
        reads = definition_reads(node)
        if not reads & changed or not _rerunnable(node, reads, position, last, namespace):
            continue
        before = {name: namespace.get(name) for name in stmt.binds}
        tree = ast.Module(body=[node], type_ignores=[])
        exec(compile(tree, filename, "exec", flags=flags, dont_inherit=True), namespace)
        done.append(stmt)
        changed |= {name for name in stmt.binds if namespace.get(name) is not before[name]}
        notes.append(
            f"{', '.join(sorted(stmt.binds))} (line {stmt.start}): computed again from the "
            f"new {', '.join(sorted(reads & changed))}, as a fresh import would"
        )
    return done, changed - rebound, notes


def _last_bindings(stmts: list[Stmt]) -> dict[str, int]:
    """For each name, the position of the last statement binding it."""
    last: dict[str, int] = {}
    for position, stmt in enumerate(stmts):
        for name in stmt.binds:
            last[name] = position
    return last


def _rerunnable(
    node: ast.stmt, reads: set[str], position: int, last: dict[str, int], namespace: dict[str, Any]
) -> bool:
    if isinstance(node, ast.Assign):
        targets, value = node.targets, node.value
    elif isinstance(node, ast.AnnAssign) and node.value is not None and node.simple:
        targets, value = [node.target], node.value
    else:
        return False
    if not all(_names_only(t) for t in targets) or not _pure(value):
        return False
    # `alias = name` binds a second name to whatever the first holds, as a fresh import would
    alias = isinstance(value, ast.Name)
    for name in reads:
        if name in last:
            if last[name] >= position or not (alias or _plain(namespace.get(name))):
                return False
        elif name in namespace or name not in _PURE_BUILTINS:
            return False
    return True


def _names_only(target: ast.expr) -> bool:
    if isinstance(target, ast.Name):
        return True
    return isinstance(target, (ast.Tuple, ast.List)) and all(_names_only(t) for t in target.elts)


def _pure(expr: ast.expr) -> bool:
    for node in ast.walk(expr):
        if not isinstance(node, _NODES):
            return False
        if isinstance(node, ast.Call) and not (
            isinstance(node.func, ast.Name) and node.func.id in _PURE_BUILTINS
        ):
            return False
    return True


def _plain(value: Any) -> bool:
    if isinstance(value, (tuple, frozenset)) and type(value) in (tuple, frozenset):
        return all(_plain(v) for v in value)
    return type(value) in _PLAIN
