"""Which statements of a module's new source run: the plan of one application.

The changed run of top-level statements (see `_stmts.reindex`) is compared with the old one:
definitions whose text did not change, and other statements met again unchanged, only move
(their line numbers shift); the rest is compiled to run. A change of `from __future__` flags,
or a module whose running code may not match its source, runs every definition again.
"""

from __future__ import annotations

import ast
import types
from collections.abc import Callable
from dataclasses import dataclass, field

from liveforge.kernel.source._stmts import Index, Reindexed, Stmt, index, is_star, reindex


@dataclass
class Plan:
    """Which statements of the new source run, which only moved, which names go."""

    index: Index
    old_run: list[Stmt]
    run: list[tuple[Stmt, types.CodeType]]
    moved: list[tuple[Stmt, int]]
    removed: set[str]
    #: `from m import *` statements the new source no longer has (their names are dynamic).
    dropped_stars: list[Stmt] = field(default_factory=list)
    #: changed statements left unexecuted (the caller's `skip` chose them).
    skipped: list[Stmt] = field(default_factory=list)
    #: names of def and class statements the new source no longer has.
    removed_defs: set[str] = field(default_factory=set)
    #: texts of unchanged statements run anyway (stale ones).
    again: frozenset[str] = frozenset()


@dataclass(frozen=True)
class Known:
    """What a patch knows of its module's new text: its lines, the old lines it replaced
    (0-based, half-open) and the one statement standing there, already parsed."""

    lines: list[str]
    changed: tuple[int, int]
    given: Stmt | None = None


def plan(
    old: Index,
    source: str,
    filename: str,
    target: str,
    rerun: bool,
    skip: Callable[[ast.stmt], bool] | None = None,
    again: frozenset[str] = frozenset(),
    known: Known | None = None,
) -> Plan:
    """The plan of making the module indexed by `old` run `source`; `known` is what the
    caller already knows of the new text (see `_stmts.reindex`)."""
    if known is None:
        result = reindex(old, source, filename)
    else:
        result = reindex(
            old, source, filename, lines=known.lines, changed=known.changed, given=known.given
        )
    force_defs = rerun or result.index.future_flags != old.future_flags
    if force_defs or again:
        # Every definition compiles differently under the new future flags (or may differ
        # from what is running), not only those in the changed run.
        full = index(source, filename)
        result = Reindexed(full, list(old.stmts), list(full.stmts), [], 0)
    index_, old_run, new_run = result.index, result.old_run, result.new_run
    old_defs = {s.name: s for s in old_run if s.name}
    old_plain: dict[str, list[Stmt]] = {}
    for s in old_run:
        if not s.name:
            old_plain.setdefault(s.text, []).append(s)
    run, moved, skipped = [], [], []
    old_order, new_order = old_run, new_run
    if skip is not None:  # statements never run are no part of the order of binding
        old_order = [s for s in old_run if s.name or not skip(s.node)]
        new_order = []
        for stmt in new_run:
            if stmt.name or not skip(stmt.node):
                new_order.append(stmt)
            elif not old_plain.get(stmt.text):
                compile_stmt(stmt, filename, index_.future_flags, target)  # it must still compile
                skipped.append(stmt)
            elif (earlier := old_plain[stmt.text].pop(0)).start != stmt.start:
                moved.append((stmt, stmt.start - earlier.start))
    reordered = _reordered(old_order, new_order)
    for stmt in new_order:
        if stmt.binds & reordered:
            # Statements binding one name now run in another order: the last one decides.
            run.append((stmt, compile_stmt(stmt, filename, index_.future_flags, target)))
            continue
        before = old_defs.get(stmt.name) if stmt.name else None
        if not stmt.name and old_plain.get(stmt.text):
            before = old_plain[stmt.text].pop(0)
        unchanged = before is not None and before.text == stmt.text and stmt.text not in again
        if unchanged and not (stmt.name and force_defs):
            assert before is not None
            if before.start != stmt.start:
                moved.append((stmt, stmt.start - before.start))
            continue
        run.append((stmt, compile_stmt(stmt, filename, index_.future_flags, target)))
    if result.delta:
        moved.extend((s, result.delta) for s in result.tail)
    removed: set[str] = set()
    for stmt in old_run:
        removed |= stmt.binds
    dropped = [s for left in old_plain.values() for s in left if is_star(s.node)]
    gone_defs = set(old_defs) - {s.name for s in new_run if s.name}
    gone = removed - index_.bound
    return Plan(index_, old_run, run, moved, gone, dropped, skipped, gone_defs, again)


def _reordered(old_run: list[Stmt], new_run: list[Stmt]) -> set[str]:
    """Names bound by several statements of the changed run whose order of binding changed."""
    if len(new_run) < 2:
        return set()

    def order(stmts: list[Stmt]) -> dict[str, list[str]]:
        found: dict[str, list[str]] = {}
        for stmt in stmts:
            for name in stmt.binds:
                found.setdefault(name, []).append(stmt.text)
        return found

    before, after = order(old_run), order(new_run)
    return {n for n, texts in after.items() if len(texts) > 1 and before.get(n) != texts}


def compile_stmt(stmt: Stmt, filename: str, flags: int, target: str) -> types.CodeType:
    """The code of one statement, with its real line numbers."""
    tree: ast.Module | str
    if stmt.alone and stmt.lag:
        # Blank lines in front give the code its real line numbers; compiling the text
        # costs less than re-parsing it and compiling the tree.
        tree = "\n" * (stmt.start - 1) + stmt.text
    else:
        tree = ast.Module(body=[stmt.fresh_node()], type_ignores=[])
    try:
        code: types.CodeType = compile(tree, filename, "exec", flags=flags, dont_inherit=True)
        return code
    except SyntaxError as exc:
        from liveforge.kernel.errors import PatchSyntaxError

        raise PatchSyntaxError(
            f"the new source does not compile: {exc.msg} (line {exc.lineno}). Fix it and "
            "patch again; nothing was changed.",
            target=target,
            line=exc.lineno,
            filename=filename,
            text=exc.text,
            offset=exc.offset,
        ) from None
