"""The statement index of a module's source: top-level statements with their lines, text and
the names they bind, kept up to date incrementally.

A patch usually touches one definition of a large module. Parsing the whole module again
would cost milliseconds, so `reindex` compares the new text with the indexed old text, finds
the smallest run of whole top-level statements that changed, parses only that run and shifts
the rest. The result is exactly what a full parse would give (anything ambiguous falls back to
one).
"""

from __future__ import annotations
import __future__

import ast
import bisect
import operator
from dataclasses import dataclass, field
from typing import Any

from liveforge.kernel.errors import PatchSyntaxError

_DEFS = (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)


@dataclass(slots=True)
class Stmt:
    """One top-level statement: 1-based inclusive line range, exact text, bound names."""

    start: int
    end: int
    text: str
    node: ast.stmt
    binds: frozenset[str]
    #: lines the AST node's positions are behind the statement's real position.
    lag: int = 0
    #: the function objects this statement defined, found the first time it moved and
    #: carried along after (see `_engine._shift_moved`).
    functions: list[Any] | None = None
    #: whether those functions make functions when called (closures such as a decorator's
    #: wrappers), which then live elsewhere in the module.
    spawns: bool = False
    #: the classes it made (with their nested classes), kept as `functions` are.
    classes: list[Any] | None = None
    #: what its names held when `functions` was found: the two lists stand while they
    #: hold the same objects (a statement run again, or a change undone, binds others).
    owners: tuple[Any, ...] | None = None
    #: the text is this statement alone (no other statement shares its lines), so it compiles
    #: from the text, with no AST built (see `_plans.compile_stmt`).
    alone: bool = False

    @property
    def name(self) -> str | None:
        """The defined name for def/class statements, else None."""
        return self.node.name if isinstance(self.node, _DEFS) else None

    def fresh_node(self) -> ast.stmt:
        """The statement's AST with correct line numbers (re-parsed when it was shifted)."""
        if self.lag:
            tree = ast.parse(self.text)
            # The text may hold other statements on its lines (`a = 1; b = 2`): this one is
            # where the lagging node is, relative to the text.
            place = (self.node.lineno + self.lag - self.start + 1, self.node.col_offset)
            node = next(n for n in tree.body if (n.lineno, n.col_offset) == place)
            ast.increment_lineno(node, self.start - 1)
            self.node, self.lag = node, 0
        return self.node

    def moved(self, delta: int) -> Stmt:
        """The same statement `delta` lines further down (its node is re-parsed if needed)."""
        if not delta:
            return self
        return Stmt(
            self.start + delta,
            self.end + delta,
            self.text,
            self.node,
            self.binds,
            self.lag + delta,
            self.functions,
            self.spawns,
            self.classes,
            self.owners,
            self.alone,
        )


@dataclass
class Index:
    """All top-level statements of one source text."""

    lines: list[str]
    stmts: list[Stmt]
    future_flags: int = 0
    bound: set[str] = field(default_factory=set)
    #: how many `from m import *` statements it has.
    stars: int = 0

    @property
    def source(self) -> str:
        """The indexed source text."""
        return "".join(self.lines)


def bindings(stmts: list[ast.stmt]) -> set[str]:
    """Names that executing `stmts` binds in their namespace (not inside nested scopes)."""
    names: set[str] = set()
    for stmt in stmts:
        _collect(stmt, names)
    return names


def _collect(node: ast.AST, names: set[str]) -> None:
    if isinstance(node, _DEFS):
        names.add(node.name)
    elif isinstance(node, (ast.Import, ast.ImportFrom)):
        for alias in node.names:
            if alias.name != "*":
                names.add(alias.asname or alias.name.split(".")[0])
    elif isinstance(node, ast.Assign):
        for target in node.targets:
            _targets(target, names)
    elif isinstance(node, (ast.AugAssign, ast.For, ast.AsyncFor)):
        _targets(node.target, names)
    elif isinstance(node, ast.AnnAssign) and node.value is not None:
        _targets(node.target, names)
    elif isinstance(node, (ast.With, ast.AsyncWith)):
        for item in node.items:
            if item.optional_vars is not None:
                _targets(item.optional_vars, names)
    if isinstance(
        node,
        (ast.If, ast.For, ast.AsyncFor, ast.While, ast.With, ast.AsyncWith, ast.Try, ast.TryStar),
    ):
        for child in ast.iter_child_nodes(node):
            if isinstance(child, ast.stmt):
                _collect(child, names)
            elif isinstance(child, ast.ExceptHandler):
                if child.name:
                    names.add(child.name)
                for inner in child.body:
                    _collect(inner, names)


def _targets(node: ast.AST, names: set[str]) -> None:
    if isinstance(node, ast.Name):
        names.add(node.id)
    elif isinstance(node, (ast.Tuple, ast.List)):
        for elt in node.elts:
            _targets(elt, names)
    elif isinstance(node, ast.Starred):
        _targets(node.value, names)


def first_line(node: ast.stmt) -> int:
    """The first line of a statement, its decorators included."""
    decorators: list[ast.expr] = getattr(node, "decorator_list", None) or []
    return min([node.lineno] + [d.lineno for d in decorators])


def _parse(text: str, filename: str, offset: int = 0) -> ast.Module:
    try:
        tree = ast.parse(text, filename)
    except SyntaxError as exc:
        line = (exc.lineno or 1) + offset
        raise PatchSyntaxError(
            f"the new source does not compile: {exc.msg} (line {line}). Fix the syntax and "
            "patch again; nothing was changed.",
            line=line,
            filename=filename,
            text=exc.text,
            offset=exc.offset,
        ) from None
    if offset:
        ast.increment_lineno(tree, offset)
    return tree


def _stmts_from(tree: ast.Module, lines: list[str]) -> list[Stmt]:
    result = []
    for node in tree.body:
        start, end = first_line(node), node.end_lineno or node.lineno
        result.append(
            Stmt(start, end, "".join(lines[start - 1 : end]), node, frozenset(bindings([node])))
        )
    return result


def _future_flags(stmts: list[Stmt]) -> int:
    flags = 0
    for stmt in stmts:
        if _is_future(stmt):
            for alias in stmt.node.names:  # type: ignore[attr-defined]
                feature = getattr(__future__, alias.name, None)
                if feature is not None:
                    flags |= feature.compiler_flag
    return flags


def _is_future(stmt: Stmt) -> bool:
    node = stmt.node
    return isinstance(node, ast.ImportFrom) and node.module == "__future__"


def is_star(node: ast.stmt) -> bool:
    """True for a `from m import *` statement."""
    return isinstance(node, ast.ImportFrom) and any(a.name == "*" for a in node.names)


def _finish(lines: list[str], stmts: list[Stmt]) -> Index:
    bound: set[str] = set()
    for stmt in stmts:
        bound |= stmt.binds
    stars = sum(1 for s in stmts if is_star(s.node))
    return Index(lines, stmts, _future_flags(stmts), bound, stars)


def _follow(
    old: Index,
    lines: list[str],
    head: list[Stmt],
    run: tuple[list[Stmt], list[Stmt]],
    tail: list[Stmt],
) -> Index:
    """The index after `old`'s statements `run[0]` became `run[1]`: the future flags and the
    bound names worked out from the run alone (a patch touches a few statements of many)."""
    old_run, new_run = run
    stmts = head + new_run + tail
    if any(_is_future(s) for s in old_run) or any(_is_future(s) for s in new_run):
        flags = _future_flags(stmts)
    else:
        flags = old.future_flags
    before: frozenset[str] = frozenset().union(*(s.binds for s in old_run))
    after: frozenset[str] = frozenset().union(*(s.binds for s in new_run))
    if before == after:
        bound = old.bound
    else:
        maybe = before - after
        bound = (old.bound - before) | after
        bound |= {n for s in head for n in s.binds & maybe}
        bound |= {n for s in tail for n in s.binds & maybe}
    stars = old.stars - sum(1 for s in old_run if is_star(s.node))
    stars += sum(1 for s in new_run if is_star(s.node))
    return Index(lines, stmts, flags, bound, stars)


def split_lines(source: str) -> list[str]:
    """Lines with their endings, the last one terminated."""
    lines = source.splitlines(keepends=True)
    if lines and not lines[-1].endswith(("\n", "\r")):
        lines[-1] += "\n"
    return lines


def index(source: str, filename: str = "<unknown>") -> Index:
    """Index a whole source text (a full parse)."""
    lines = split_lines(source)
    return _finish(lines, _stmts_from(_parse(source, filename), lines))


@dataclass
class Reindexed:
    """The new index, the old statements of the changed run, the statements replacing them,
    and the unchanged statements after the run that moved by `delta` lines."""

    index: Index
    old_run: list[Stmt]
    new_run: list[Stmt]
    tail: list[Stmt]
    delta: int


def reindex(
    old: Index,
    source: str,
    filename: str,
    *,
    lines: list[str] | None = None,
    changed: tuple[int, int] | None = None,
    given: Stmt | None = None,
) -> Reindexed:
    """Index `source`, reusing `old` where the text is unchanged.

    A caller that knows more passes it: `lines` (the source split by `split_lines`),
    `changed` (the 0-based half-open range of old lines that were replaced), and `given`, the
    one statement the new text has in that range, already parsed (its node may lag, see
    `Stmt.lag`), taken when the range is exactly whole statements."""
    lines = split_lines(source) if lines is None else lines
    if changed is None:
        changed = _changed_run(old.lines, lines)
        if changed is None:
            same = Index(lines, list(old.stmts), old.future_flags, old.bound, old.stars)
            return Reindexed(same, [], [], [], 0)
    first, last, lo, hi = _widen(old, *changed)
    delta = len(lines) - len(old.lines)
    head, old_run = old.stmts[:first], old.stmts[first:last]
    if given is not None and (lo, hi) == changed and given.start == lo + 1:
        new_run = [given]
    else:
        try:
            # Blank lines in front give the run's nodes their real line numbers, at a fraction
            # of the cost of ast.increment_lineno.
            tree = ast.parse("\n" * lo + "".join(lines[lo : hi + delta]), filename)
        except SyntaxError:
            # Either a real syntax error (the full parse reports it with true line numbers) or
            # a change that moved statement boundaries: then the whole module is the run.
            full = index(source, filename)
            return Reindexed(full, list(old.stmts), list(full.stmts), [], 0)
        new_run = _stmts_from(tree, lines)
    tail = [s.moved(delta) for s in old.stmts[last:]]
    new = _follow(old, lines, head, (old_run, new_run), tail)
    return Reindexed(new, old_run, new_run, tail, delta)


def _changed_run(old: list[str], new: list[str]) -> tuple[int, int] | None:
    """The 0-based half-open range of `old` lines that differ from `new` (None if equal)."""
    if old == new:
        return None
    n = min(len(old), len(new))
    prefix = _common(old, new, 0, 0, n)
    suffix = _common(old, new, len(old), len(new), n - prefix)
    return prefix, len(old) - suffix


def _common(
    old: list[str], new: list[str], old_at: int, new_at: int, limit: int, step: int = 32
) -> int:
    """How many lines agree going forward from index 0 (when `old_at` is 0) or backward from
    the ends `old_at`/`new_at`, up to `limit`. Whole chunks are compared first: list-slice
    comparison runs in C, several times faster than a Python loop over a thousand lines."""
    sign = 1 if old_at == 0 else -1
    count = 0
    while count + step <= limit:
        if sign > 0:
            same = old[count : count + step] == new[count : count + step]
        else:
            same = (
                old[old_at - count - step : old_at - count]
                == new[new_at - count - step : new_at - count]
            )
        if not same:
            break
        count += step
    while count < limit and (
        old[count] == new[count] if sign > 0 else old[old_at - 1 - count] == new[new_at - 1 - count]
    ):
        count += 1
    return count


_END = operator.attrgetter("end")


def _widen(index_: Index, lo: int, hi: int) -> tuple[int, int, int, int]:
    """Widen the 0-based line range [lo, hi) to whole top-level statements of `index_`: the
    positions of the first statement in it and of the first after it, and the widened range."""
    stmts = index_.stmts
    first = bisect.bisect_right(stmts, lo, key=_END)  # the first ending after `lo`
    last = first
    while last < len(stmts) and stmts[last].start - 1 < max(hi, lo + 1):
        lo, hi = min(lo, stmts[last].start - 1), max(hi, stmts[last].end)
        last += 1
    while first > 0 and stmts[first - 1].end > lo:  # `a = 1; b = (...` share a line
        first -= 1
        lo = min(lo, stmts[first].start - 1)
    return first, last, lo, hi
