"""The patch engine: make a live module run a new source text, in place, all or nothing.

Only the top-level statements whose text changed are executed again (in the module's own
namespace, so new functions get the right globals); unchanged statements are not re-run, so
module state — caches, registries, connections — survives, and top-level side effects do not
repeat. After each executed statement the objects it created are merged into the live ones
(functions and classes updated in place, see `_update` and `_classes`), so identity is
preserved throughout. Names the new source no longer binds are removed; forwardpy `@impl`
registrations of replaced or removed definitions are dropped first so the new source alone
decides what is implemented. Code of unchanged statements that moved (and of the closures
their functions made, such as a decorator's wrappers) gets its line numbers shifted, so
tracebacks and `inspect` stay exact (see `_moves`). A change of `from __future__` flags
runs every definition again, since each compiles differently.

Any failure — a syntax error, an exception while executing, a change that cannot be made in
place — restores the module namespace, every live object, forwardpy's registries and
linecache exactly as they were, and raises a `PatchError`.
"""

from __future__ import annotations

import ast
import functools
import linecache
import traceback
import types
from collections.abc import Callable, Container
from dataclasses import dataclass, field
from typing import Any

from liveforge.kernel.errors import PatchError, PatchExecutionError
from liveforge.kernel.live import (
    _bodies,
    _classes,
    _forward,
    _holders,
    _plans,
    _reach,
    _registered,
)
from liveforge.kernel.live import _follow as _follow_
from liveforge.kernel.live._moves import shift_moved
from liveforge.kernel.live._reexports import removed_names
from liveforge.kernel.live._revert import Revert, changed_bindings
from liveforge.kernel.live._undo import UndoLog
from liveforge.kernel.live._update import (
    become,
    forward,
    mergeable,
    retarget,
    takes_state,
    update_callable,
)
from liveforge.kernel.source._sources import register_source
from liveforge.kernel.source._stmts import Index, Stmt

_MISSING = object()


@dataclass
class Outcome:
    """What one application of new source did to the module."""

    added: list[str] = field(default_factory=list)
    updated: list[str] = field(default_factory=list)
    removed: list[str] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    #: names whose new object could not be merged into the old one: (name, old, new).
    unmerged: list[tuple[str, Any, Any]] = field(default_factory=list)
    #: names among `unmerged` that are aliases computed again (`g = f`): alias -> name.
    aliases: dict[str, str] = field(default_factory=dict)
    #: undoes exactly this application (see `Revert`).
    revert: Revert | None = None
    #: statements that read a rebound name when the module ran and were not run again.
    stale: list[Stmt] = field(default_factory=list)
    #: texts of the unchanged statements that ran anyway (`again`).
    ran_again: frozenset[str] = frozenset()
    #: names given back what their unchanged definition made, their wrapping statement gone.
    unwrapped: set[str] = field(default_factory=set)


def apply(
    module: types.ModuleType,
    old: Index,
    source: str,
    filename: str,
    target: str = "",
    *,
    rerun_definitions: bool = False,
    skip: Callable[[ast.stmt], bool] | None = None,
    again: frozenset[str] = frozenset(),
    known: _plans.Known | None = None,
) -> tuple[Index, Outcome]:
    """Make `module` (whose current source is indexed by `old`) run `source`.

    `rerun_definitions` executes every def and class statement, changed or not: for a module
    whose running code may not match `old` (its file changed before liveforge saw it).
    `skip` picks changed statements other than definitions not to execute (a loop, a call
    that serves): the source still takes them, and the outcome's notes name each one.
    `again` are texts of unchanged statements to execute anyway (stale ones, see
    `ModuleRecord.stale`). `known` is what the caller knows of the new text (see `_plans`).
    """
    plan = _plans.plan(old, source, filename, target, rerun_definitions, skip, again, known)
    ctx = _classes.MergeContext(UndoLog(), filename, rehome=_registered.rehome)
    namespace = module.__dict__
    saved = dict(namespace)
    registries = _forward.Snapshot()
    cached = linecache.cache.get(filename)
    register_source(filename, source, plan.index.lines)
    # Body-only edits of decorated functions are made in place, without running their
    # decorators again (see `_bodies`), unless every definition must run again.
    in_place = not rerun_definitions and plan.index.future_flags == old.future_flags
    try:
        outcome = _execute(module, plan, saved, ctx, in_place)
    except BaseException as exc:
        ctx.log.undo()
        registries.restore()
        restore_namespace(namespace, saved)
        # what a framework's table keeps of what the failed source defined is said
        kept = _reach.discard_created(ctx.created, saved, anywhere=True)
        detail = _describe(exc, filename, kept)  # the new source's line, still in linecache
        _restore_linecache(filename, cached)
        if isinstance(exc, PatchError):
            raise
        if not isinstance(exc, Exception):
            raise
        raise PatchExecutionError(
            detail, target=target or module.__name__, line=_failing_line(exc, filename)
        ) from exc
    outcome.notes.extend(ctx.notes)
    thawed = _holders.thawed_note()  # a search of the heap unfroze the program's objects
    if thawed:
        outcome.notes.append(thawed)
    outcome.notes.extend(
        f"not re-run: line {s.start} `{s.text.strip().splitlines()[0]}`" for s in plan.skipped
    )
    outcome.revert = Revert(
        ctx.log,
        namespace,
        changed_bindings(namespace, saved),
        # What changed in the registries is worked out when (if ever) the change is undone.
        functools.partial(_forward.Snapshot.revert_between, _forward.Snapshot(), registries),
        # functions it made that were merged into none (an added overload `_`)
        made=[o for o in ctx.created if type(o) is types.FunctionType and ctx.idmap.live(o) is o],
        given_back=frozenset(outcome.unwrapped),
    )
    return plan.index, outcome


def _execute(
    module: types.ModuleType,
    plan: _plans.Plan,
    saved: dict[str, Any],
    ctx: _classes.MergeContext,
    in_place: bool = False,
) -> Outcome:
    namespace = module.__dict__
    outcome = Outcome(ran_again=frozenset(s.text for s, _ in plan.run) & plan.again)
    every_pair = _bodies.pair(plan.old_run, [s for s, _ in plan.run])
    pairs = every_pair if in_place else {}
    # forwardpy's `@impl` registrations follow a definition run again (dropped just below):
    # in a module that registers impl bodies, decorated definitions run again.
    decorated = {s.name for s in pairs.values() if s.node.decorator_list}  # type: ignore[attr-defined]
    if decorated and _forward.registers_impls(module.__name__):
        pairs, in_place = {}, False
    impls = {n for n in decorated if n and _registers_impl(saved.get(n))}
    existing = _Ids(saved)
    old_nodes = {s.name: s for s in plan.old_run if s.name}
    rerun = {s.name for s, _ in plan.run if s.name}
    for stmt in plan.old_run:
        if stmt.name in rerun or stmt.binds & plan.removed:
            _drop_registrations(stmt, saved)
    # Before anything runs, every function's code still carries its old lines, so a moved
    # statement's old line range names exactly the functions it made.
    shift_moved(namespace, plan.moved, ctx)
    created = ctx.created
    bindings = _Bindings(plan, namespace, ctx.filename, every_pair, ctx.shifted)
    # a name whose wrapping statement went holds the function again, before the statements
    # that run read it (`alias = f` added where `f = deco(f)` was); what did not run follows
    unwrapped = outcome.unwrapped = bindings.unwrap_removed(saved, outcome)
    for stmt, code in plan.run:
        paired = pairs.get(id(stmt)) if stmt.name not in impls else None
        updated = _body_in_place(namespace, stmt, paired, plan, saved, ctx)
        if updated is not None:
            outcome.updated += updated
            continue
        earlier = old_nodes.get(stmt.name or "")
        old_node = earlier.node if earlier is not None else None
        live = bindings.owned(stmt, saved)
        if stmt.name:
            _registered.before_rerun(stmt.node, old_node, live, ctx)
        bindings.unwrap_read(stmt)
        # what an assignment's names held as it ran (`f = deco(f)` reads what is just above)
        prior = {n: namespace.get(n, _MISSING) for n in stmt.binds} if not stmt.name else {}
        exec(code, namespace)
        created.extend(namespace.get(name) for name in stmt.binds)
        if live is not saved.get(stmt.name or "", live):
            # the name holds what another statement made: the new function is merged into
            # the one this statement made before, or stands alone (see `_Bindings`)
            bindings.merge_def(stmt, live, saved, ctx, outcome)
            continue
        ctx.reread = stmt.text in plan.again
        for name in sorted(stmt.binds):
            # only a definition of that very name stands for an old definition of it
            earlier = old_nodes.get(name) if stmt.name == name else None
            _merge_name(
                namespace, name, stmt, earlier, saved, existing, ctx, outcome, prior.get(name)
            )
        ctx.reread = False
        if stmt.name and stmt.name in saved:
            live, now = saved[stmt.name], namespace.get(stmt.name)
            _registered.after_rerun(stmt.name, live, now, old_node, stmt.node, ctx)
    rebound = unwrapped | {
        n
        for s, _ in plan.run
        for n in s.binds
        if n in saved and namespace.get(n, _MISSING) is not saved[n]
    }
    ran = [s for s, _ in plan.run] + bindings.rerun
    if rebound:
        _follow(namespace, ran, plan, rebound, saved, existing, ctx, outcome, unwrapped)
    if in_place:
        gone_defs = _bodies.unpaired(plan.old_run, pairs, bindings.stayed)
        for name, func in _bodies.gone(gone_defs, saved, namespace, ctx):
            if namespace.get(name, func) is func:
                bindings.rebind_to_last(name, func, gone_defs)
            if namespace.get(name, func) is not func:  # another definition binds the name
                _registered.forget(name, func, ctx, decorated=True)
    ctx.notes += _follow_.still_bound(plan.index.stmts, ran, plan.removed_defs, namespace)
    gone, fallback = removed_names(module, plan.index, plan.removed, plan.dropped_stars)
    decorated = {s.name for s in plan.old_run if getattr(s.node, "decorator_list", None)}
    for name in sorted(gone):
        if name in namespace:
            value = namespace.pop(name)
            if any(v is value for v in namespace.values()):
                outcome.removed.append(name)  # an alias went: what it named stays
                continue
            _registered.forget(name, value, ctx, name in decorated)
            # what the removed `def` made, inside what a later statement wrapped it in
            inner = bindings.made_inside(old_nodes.get(name), value)
            if inner is not None:
                _registered.forget(name, inner, ctx, name in decorated)
            outcome.removed.append(name)
    for name, value in sorted(fallback.items()):
        namespace[name] = value  # a removed definition no longer hides a star import's name
        outcome.updated.append(name)
    if outcome.unmerged:
        _unmerged_aliases(outcome, ran, namespace, saved)
    return outcome


def _unmerged_aliases(
    outcome: Outcome, ran: list[Stmt], namespace: dict[str, Any], saved: dict[str, Any]
) -> None:
    """Aliases of a name whose new object could not be merged into the old one (`al = f`,
    computed again, see `_follow`) now hold the new object too, while references taken
    from them before still hold the old one: each is named like the name itself."""
    bound = {n for s in ran for n in s.binds}
    names = {n for n, _, _ in outcome.unmerged}
    for name, old, _ in list(outcome.unmerged):
        now = namespace.get(name, _MISSING)
        for alias, value in saved.items():
            if (
                value is old
                and alias not in names
                and alias not in bound
                and namespace.get(alias, _MISSING) is now
            ):
                outcome.unmerged.append((alias, old, now))
                outcome.aliases[alias] = name
                names.add(alias)


class _Bindings:
    """A name bound by several statements: a `def` and a later statement wrapping what it
    made (`f = deco(f)`), or several `def`s of one name (singledispatch overloads `_`).
    What the name holds was made by one of them; each statement's new object is merged
    into what *that statement* made before, never into another statement's object."""

    def __init__(
        self,
        plan: _plans.Plan,
        namespace: dict[str, Any],
        filename: str,
        pairs: dict[int, Stmt],
        moved: set[int] | None = None,
    ) -> None:
        self.plan, self.namespace, self.filename = plan, namespace, filename
        #: ids of the code objects moved statements' functions took (see `_moves`)
        self.moved = moved
        self.ran = {id(s) for s, _ in plan.run}
        #: each new `def` -> the old one it stands for (see `_bodies.pair`)
        self.pairs = pairs
        self.taken = {id(s) for s in self.pairs.values()}
        #: unchanged statements run again around a definition they wrap (see `rewrap`)
        self.rerun: list[Stmt] = []

    @functools.cached_property
    def later(self) -> dict[str, Stmt]:
        """Names a later statement that does not run binds again."""
        run = [s for s, _ in self.plan.run]
        return _follow_.bound_later(self.plan.index.stmts, run, {s.name for s in run if s.name})

    def stayed(self) -> set[str]:
        """Texts of the statements of the new source that did not run (unchanged)."""
        return {s.text for s in self.plan.index.stmts if id(s) not in self.ran}

    def owned(self, stmt: Stmt, saved: dict[str, Any]) -> Any:
        """The live object the definition `stmt` stands for: what its name holds, unless
        that was made by another statement (then the function that the old definition
        `stmt` stands for made, found inside it; `_MISSING` when there is none)."""
        name = stmt.name or ""
        live = saved.get(name, _MISSING)
        if live is _MISSING or not isinstance(stmt.node, _bodies._FUNCTION_DEFS):
            return live
        earlier = self._earlier(stmt)
        if id(stmt) not in self.pairs and self._made_by_other(live, stmt, earlier):
            # a `def` of the name added beside others (an overload `_`): the function the
            # name holds is another's, though it may lie on lines the new one now takes
            return _MISSING
        if earlier is not None and _bodies.made_by(live, earlier, self.filename):
            return live
        # a wrapping the new source adds has not run yet: the name holds what `stmt` made
        rewrapped = self._wrapped_later(stmt, new=False) or name in self._rewrapped()
        if rewrapped or self._made_by_other(live, stmt, earlier):
            inner = _bodies.inside(live, earlier, self.filename, made=True) if earlier else None
            if inner is None and not rewrapped:
                # another `def` of the name took the name (an overload `_`): what this one
                # made is where the module's objects hold it (the dispatch registry)
                first, last = earlier.start, earlier.end
                held = _bodies.held_in_module(
                    self.namespace, name, self.filename, first, last, self.moved
                )
                inner = held[0] if len(held) == 1 else None
            return inner if inner is not None else _MISSING
        return live

    def _wrapped_later(self, stmt: Stmt, *, new: bool = True) -> bool:
        """A later statement that is no definition binds the name of `stmt` again (with
        `new` false, one that did not run: it wrapped what the name holds)."""
        stmts = self.plan.index.stmts
        after = stmts[stmts.index(stmt) + 1 :]
        return any(
            stmt.name in s.binds and not s.name and (new or id(s) not in self.ran) for s in after
        )

    def _earlier(self, stmt: Stmt) -> Stmt:
        """The old definition `stmt` stands for; itself when it ran again unchanged (every
        definition runs again when `from __future__` flags change)."""
        return self.pairs.get(id(stmt)) or stmt

    def _made_by_other(self, live: Any, stmt: Stmt, earlier: Stmt | None) -> bool:
        """`live` is a function another definition of the same name made: one that did
        not change, or an old one another new definition stands for."""
        unchanged = [s for s in self.plan.index.stmts if id(s) not in self.ran]
        taken = [s for s in self.plan.old_run if id(s) in self.taken and s is not earlier]
        return any(
            other.name == stmt.name and _bodies.made_by(live, other, self.filename)
            for other in [*unchanged, *taken]
        )

    def merge_def(
        self,
        stmt: Stmt,
        live: Any,
        saved: dict[str, Any],
        ctx: _classes.MergeContext,
        outcome: Outcome,
    ) -> None:
        """After `stmt` ran: its new function takes the place of `live` (what it made
        before; `_MISSING`: nothing, it stands alone), and the name holds what a later
        unchanged statement bound, if any."""
        name = stmt.name or ""
        new = self.namespace.get(name)
        outcome.updated.append(name)
        bound = saved.get(name)
        if live is _MISSING:  # registrations of the new object are undone with the change
            _registered.after_rerun(name, None, new, None, stmt.node, ctx)
        else:
            merged = _merge_inner(name, new, live, self._earlier(stmt), stmt, ctx)
            self.namespace[name] = merged
            wrapper = saved.get(name)
            if merged is not live and wrapper is not live and wrapper is not None:
                rewrapped = self.rewrap(stmt, wrapper, ctx, outcome)
                if rewrapped is None:
                    _swap_inside(wrapper, live, merged, ctx.log)
                bound = wrapper if rewrapped is None else rewrapped
            if not self._wrapped_later(stmt) and _holders.wraps(wrapper, live):
                # the statement that wrapped it is gone: references to the wrapper are named
                outcome.unmerged.append((name, wrapper, self.namespace[name]))
        if name in self.later:
            self.namespace[name] = bound

    def rewrap(self, stmt: Stmt, wrapper: Any, ctx: _classes.MergeContext, outcome: Outcome) -> Any:
        """The definition `stmt` made another object than the one later statements that
        did not change wrapped (`f = Twice(f)`), and the name holds it: those statements
        run again around it, as in a fresh import (where they may take more than the
        object: `functools.update_wrapper` copies its attributes), and what they make is
        merged into `wrapper`, what the name held, so the name and every reference to it
        hold what a fresh import's does. Where `wrapper` cannot take what the new one holds
        (a C object such as `functools.partial`, or another kind of object) the name takes
        the new one, and what still holds the old one is named. Returns what the name holds
        then; None (nothing run) when no such statement binds the name."""
        name = stmt.name or ""
        chain = self._wrappings(stmt)
        if not chain:
            return None
        for later in chain:
            flags = self.plan.index.future_flags
            exec(_plans.compile_stmt(later, self.filename, flags, ""), self.namespace)
        self.rerun += chain
        new = self.namespace.get(name)
        ctx.created.append(new)
        first = chain[0]
        text = f"line {first.start} `{first.text.strip().splitlines()[0]}`"
        if new is wrapper:
            return wrapper
        if type(new) is not type(wrapper) or not takes_state(wrapper):
            ctx.notes.append(
                f"{name}: {text} ran again around the new definition, as a fresh import runs "
                f"it; the {_bodies._kind(wrapper)} it made before cannot take what it made "
                f"now, so {name} holds the new one"
            )
            outcome.unmerged.append((name, wrapper, new))
            return new
        held = (
            _reach.holders(new, [ctx.created], cells=True)
            if _reach.references(new) > _reach.BASELINE
            else []
        )
        note = become(wrapper, new, ctx.log, ctx.idmap)
        ctx.idmap.link(new, wrapper)
        if held:
            _registered.replace_held(name, held, new, wrapper, ctx, [text])
        self.namespace[name] = wrapper
        ctx.notes += [n for n in [note] if n]
        ctx.notes.append(
            f"{name}: {text} ran again around the new definition, as a fresh import runs it, "
            f"and the {_bodies._kind(wrapper)} it made before took what it made now, so "
            f"{name} and references taken before hold what a fresh import's does"
        )
        return wrapper

    def _wrappings(self, stmt: Stmt) -> list[Stmt]:
        """The later statements binding the name of `stmt`, when each only wraps it again
        (`f = Twice(f)`, binding nothing else) and none ran; else empty."""
        name = stmt.name or ""
        stmts = self.plan.index.stmts
        later = [s for s in stmts[stmts.index(stmt) + 1 :] if name in s.binds]
        wrapping = all(
            id(s) not in self.ran
            and not s.name
            and s.binds == {name}
            and name in _follow_.definition_reads(s.fresh_node())
            for s in later
        )
        return later if wrapping else []

    def unwrap_read(self, stmt: Stmt) -> None:
        """A statement that wraps a name again (`f = deco(f)`) reads what the definition
        before it made, not the wrapper its earlier run left in the name."""
        for name in _follow_.definition_reads(stmt.node) & stmt.binds & self._rewrapped():
            value = self._defined_before(stmt, name)
            if value is not None:
                self.namespace[name] = value

    def _rewrapped(self) -> set[str]:
        """Names an old statement that is no definition wrapped again (`f = deco(f)`)."""
        return {
            n
            for s in self.plan.old_run
            if not s.name
            for n in s.binds & _follow_.definition_reads(s.fresh_node())
        }

    def made_inside(self, earlier: Stmt | None, value: Any) -> Any:
        """What the old definition `earlier` made, when `value` is something a later
        statement made around it (else None)."""
        if earlier is None or _bodies.made_by(value, earlier, self.filename):
            return None
        inner = _bodies.inside(value, earlier, self.filename, made=True)
        return inner if inner is not value else None

    def _defined_before(self, stmt: Stmt, name: str) -> Any:
        """The function the unchanged `def` of `name` before `stmt` made, when the name
        holds something else made around it."""
        stmts = self.plan.index.stmts
        before = [s for s in stmts[: stmts.index(stmt)] if name in s.binds]
        if not before or id(before[-1]) in self.ran:
            return None
        return self._unwrapped(before[-1], name)

    def unwrap_removed(self, saved: dict[str, Any], outcome: Outcome) -> set[str]:
        """A statement that wrapped a name again is gone: the name holds what the unchanged
        `def` now binding it last made (found inside the old wrapper); references to the
        wrapper are named in a note (see `_holders.unmerged`). Returns the names that
        changed so."""
        gone = [s for s in self.plan.old_run if not s.name and s.binds]
        changed: set[str] = set()
        if not gone:
            return changed
        kept = {s.text for s in self.plan.index.stmts}
        names = {n for s in gone if s.text not in kept for n in s.binds}
        for name in sorted(names & set(self.namespace)):
            binders = [s for s in self.plan.index.stmts if name in s.binds]
            if not binders or id(binders[-1]) in self.ran:
                continue
            value = self._unwrapped(binders[-1], name)
            if value is not None:
                old = self.namespace[name]
                self.namespace[name] = value
                outcome.updated.append(name)
                if name in saved and saved[name] is old:
                    outcome.unmerged.append((name, old, value))
                    changed.add(name)
        return changed

    def rebind_to_last(self, name: str, func: Any, gone: list[Stmt]) -> None:
        """The gone definition that made `func`, which the name holds, was the last of
        several `def`s of the name (an overload `_`): the name holds what the last one left
        made, as in a fresh import, when its decorators are those that returned `func`
        itself (a registry's `register`); that function is found where the module holds it."""
        made = [s for s in gone if _bodies.made_by(func, s, self.filename)]
        binders = [s for s in self.plan.index.stmts if name in s.binds]
        if len(made) != 1 or not binders or not isinstance(func, types.FunctionType):
            return
        last = binders[-1]
        if not isinstance(last.node, _bodies._FUNCTION_DEFS) or _bodies._dumps(
            last.node.decorator_list
        ) != _bodies._dumps(made[0].node.decorator_list):  # type: ignore[attr-defined]
            return
        found = [
            f
            for f in _bodies.held_in_module(
                self.namespace, name, self.filename, last.start, last.end
            )
            if f is not func
        ]
        if len(found) == 1:
            self.namespace[name] = found[0]

    def _unwrapped(self, last: Stmt, name: str) -> Any:
        """The function the `def` statement `last` made, found inside what `name` holds
        when that is something else made around it (else None)."""
        current = self.namespace.get(name)
        if not isinstance(last.node, _bodies._FUNCTION_DEFS) or _bodies.made_by(
            current, last, self.filename
        ):
            return None
        return _bodies.inside(current, last, self.filename, made=True)


def _merge_inner(
    name: str, new: Any, live: Any, earlier: Stmt, stmt: Stmt, ctx: _classes.MergeContext
) -> Any:
    """Merge `new`, which the definition `stmt` just made, into `live`, what its old
    version `earlier` made (found inside a later statement's wrapper); registries its old
    decorators filled and its new ones do not lose it. Returns what the name holds now."""
    if _bodies.made_by(new, stmt, ctx.filename):
        held = (
            _reach.holders(new, [ctx.created], cells=True)
            if _reach.references(new) > _reach.BASELINE
            else []
        )
        if held:  # first, so that what `__conform__` keeps to undo holds no new object
            _registered.replace_held(name, held, new, live, ctx, ["its decorator"])
        _bodies.update_inside(live, new, earlier, ctx)
        new = live
    elif mergeable(live, new):  # a decorator's new wrapper
        note = update_callable(live, new, ctx.log, ctx.idmap)
        if note:
            ctx.notes.append(note)
        ctx.idmap.link(new, live)
        new = live
    elif _same_decoration(live, new, earlier, stmt) and _merged_inside(
        live, new, (earlier, stmt), ctx
    ):
        # The same decorators made the same kind of object around the new function (a
        # `@curry` run again): the function inside the live one takes the new code.
        ctx.idmap.link(new, live)
        new = live
    elif isinstance(live, types.FunctionType) and callable(new):
        # A new decorator made an object where the later wrapper holds a plain function:
        # that function forwards every call to the object, as a fresh import's wrapper
        # would call it.
        forward(live, new, ctx.log)
        ctx.notes.append(
            f"{name}: the new definition is a {type(new).__qualname__} where the old one was "
            "a function; the function the later statement wrapped now forwards every call to "
            "it, so the wrapper and references taken before run the new code"
        )
    else:
        note = _bodies.forward_old(name, live, new, earlier, stmt, ctx)
        if note:
            ctx.notes.append(note)
    _registered.after_rerun(name, live, new, earlier.node, stmt.node, ctx)
    return new


def _same_decoration(live: Any, new: Any, earlier: Stmt, stmt: Stmt) -> bool:
    """`new` is the object the same decorators made as `live` was, around a new function."""
    before = [ast.dump(d) for d in getattr(earlier.node, "decorator_list", [])]
    after = [ast.dump(d) for d in getattr(stmt.node, "decorator_list", [])]
    return type(live) is type(new) and bool(after) and before == after


def _merged_inside(
    live: Any, new: Any, stmts: tuple[Stmt, Stmt], ctx: _classes.MergeContext
) -> bool:
    """The function the definition (`stmts`: old and new) made inside `new` updates the one
    the old definition made inside `live`."""
    earlier, stmt = stmts
    function = _bodies.inside(new, stmt, ctx.filename)
    if not isinstance(function, types.FunctionType):
        return False
    return _bodies.update_inside(live, function, earlier, ctx) is not None


def _swap_inside(wrapper: Any, old: Any, new: Any, log: UndoLog) -> None:
    """The wrapper object a later statement made holds `new` where it held `old` (in its
    attributes or slots), as that statement would wrap the new object in a fresh import."""
    state = getattr(wrapper, "__dict__", None)
    if isinstance(state, dict) and not isinstance(wrapper, (type, types.ModuleType)):
        for key, value in list(state.items()):
            if value is old:
                state[key] = new
                log.add(functools.partial(state.__setitem__, key, old))
    for cls in type(wrapper).__mro__[:-1]:
        slots = cls.__dict__.get("__slots__", ())
        for slot in (slots,) if isinstance(slots, str) else slots:
            if isinstance(slot, str) and getattr(wrapper, slot, None) is old:
                setattr(wrapper, slot, new)
                log.add(functools.partial(setattr, wrapper, slot, old))


def _wrapped_inside(stmts: list[Stmt], stmt: Stmt, value: Any, filename: str) -> Any:
    """What the unchanged definition `stmt` made, when a later statement that is no
    definition binds its name again and `value` (what the name holds) is that wrapper."""
    after = stmts[stmts.index(stmt) + 1 :]
    if not any(stmt.name in s.binds and not s.name for s in after):
        return None
    if _bodies.made_by(value, stmt, filename):
        return None
    return _bodies.inside(value, stmt, filename, made=True)


def _body_in_place(
    namespace: dict[str, Any],
    stmt: Stmt,
    earlier: Stmt | None,
    plan: _plans.Plan,
    saved: dict[str, Any],
    ctx: _classes.MergeContext,
) -> list[str] | None:
    """A body-only edit of a decorated function, or of methods of a class whose other
    statements did not change, made in place (see `_bodies`): the names it updated; None
    when the statement must run as it is."""
    if earlier is None or stmt.text in plan.again:
        return None
    live = saved.get(stmt.name or "", _MISSING)
    if live is _MISSING:
        return None
    flags = plan.index.future_flags
    if isinstance(stmt.node, ast.ClassDef):
        if _forward.is_declaration(live):
            return None  # forwardpy builds declarations: they run as they are
        return _bodies.update_members(namespace, stmt, earlier, live, flags, ctx)
    if not _bodies.body_only(stmt, earlier):
        return None
    if not _bodies.update_body(namespace, stmt, earlier, live, flags, ctx):
        return None
    return [stmt.name or ""] if stmt.text != earlier.text else []


def _registers_impl(value: Any) -> bool:
    return value is not None and bool(
        _forward.registrations_of(value)
        or _forward.registrations_of(getattr(value, "__wrapped__", None))
    )


def _follow(
    namespace: dict[str, Any],
    ran: list[Stmt],
    plan: _plans.Plan,
    rebound: set[str],
    saved: dict[str, Any],
    existing: Container[int],
    ctx: _classes.MergeContext,
    outcome: Outcome,
    unwrapped: Container[str] = (),
) -> None:
    """Make what follows from the rebound names what a fresh import would have (see
    `_follow`); `unwrapped`: names the later statement that wrapped them no longer binds
    (their unchanged definition binds them last); `ran`: the statements that ran."""
    # Only a value from elsewhere (an import) tells that the later statement bound the name.
    imported = {
        n
        for n in rebound
        if n not in unwrapped and _home(saved[n]) not in (None, namespace.get("__name__"))
    }
    for name, later in sorted(_follow_.bound_later(plan.index.stmts, ran, imported).items()):
        namespace[name] = saved[name]
        rebound.discard(name)
        if name in outcome.updated:
            outcome.updated.remove(name)
        ctx.notes.append(
            f"{name}: line {later.start} binds it again after the patched definition, and "
            f"that statement did not change; {name} stays what it bound "
            f"({_describe_value(saved[name])}), as in a fresh import, so the patched "
            "definition is not what the name holds"
        )
    advice = "patch the module with it changed (or persist it, then reload it)"
    outcome.stale += follow_readers(
        plan.index, ran, rebound, namespace, saved, existing, ctx, advice=advice
    )


def follow_readers(
    index: Index,
    ran: list[Stmt],
    rebound: set[str],
    namespace: dict[str, Any],
    saved: dict[str, Any],
    existing: Container[int],
    ctx: _classes.MergeContext,
    *,
    where: str = "",
    advice: str,
) -> list[Stmt]:
    """What a fresh import would make anew from the `rebound` names of a module (indexed by
    `index`, its statements `ran` just executed): pure values are computed again, functions
    whose defaults or decorators read them are defined again in place, every other statement
    reading them is named in a note (`where` prefixes notes, `advice` says what to do).
    Returns those other statements."""
    recomputed, changed, notes = _follow_.recompute(
        index.stmts, ran, rebound, namespace, ctx.filename, index.future_flags
    )
    ctx.notes.extend(where + note for note in notes)
    rebound = rebound | changed
    defs, others = _follow_.readers(index.stmts, ran + recomputed, rebound)
    for stmt in defs:
        name = stmt.name or ""
        wrapper = namespace.get(name)
        inner = _wrapped_inside(index.stmts, stmt, wrapper, ctx.filename)
        _registered.before_rerun(stmt.node, stmt.node, inner or wrapper, ctx)
        exec(_plans.compile_stmt(stmt, ctx.filename, index.future_flags, ""), namespace)
        ctx.created.append(namespace.get(name))
        if inner is not None:  # `f = deco(f)` after it: the function inside takes the new code
            _merge_inner(name, namespace[name], inner, stmt, stmt, ctx)
            namespace[name] = wrapper
        else:
            _merge_name(namespace, name, stmt, stmt, saved, existing, ctx, Outcome())
            _registered.after_rerun(
                name, saved.get(name), namespace.get(name), stmt.node, stmt.node, ctx
            )
        ctx.notes.append(
            f"{where}{stmt.name}: defined again (line {stmt.start}), since its defaults or "
            f"decorators read {', '.join(sorted(_follow_.definition_reads(stmt.node) & rebound))}"
        )
    for stmt in others:
        names = ", ".join(sorted(stmt.binds))
        reads = ", ".join(sorted(_follow_.definition_reads(stmt.node) & rebound))
        ctx.notes.append(
            f"{where}{names} (line {stmt.start}) read {reads} when the module ran and was not "
            f"run again; it keeps the value made from the old {reads} (a fresh import would "
            f"make it anew). Patch it too, or {advice}"
        )
    return others


def _home(value: Any) -> str | None:
    module = getattr(value, "__module__", None)
    return module if isinstance(module, str) else None


def _describe_value(value: Any) -> str:
    module = getattr(value, "__module__", None)
    name = getattr(value, "__qualname__", None)
    return f"{module}.{name}" if module and name else type(value).__name__


def _drop_registrations(stmt: Stmt, saved: dict[str, Any]) -> None:
    for name in stmt.binds:
        value = saved.get(name)
        for cls, key in _forward.registrations_of(value) if value is not None else ():
            _forward.unregister(cls, key)


def _merge_name(
    module_ns: dict[str, Any],
    name: str,
    stmt: Stmt,
    old_stmt: Stmt | None,
    saved: dict[str, Any],
    existing: Container[int],
    ctx: _classes.MergeContext,
    outcome: Outcome,
    prior: Any = None,
) -> None:
    """Merge what the statement `stmt` bound to `name` into what it held (`saved`), or name
    what still holds the old object. `prior`: what the name held as the statement ran."""
    old = saved.get(name, _MISSING)
    new = module_ns.get(name, _MISSING)
    if new is _MISSING:
        return
    if old is _MISSING:
        outcome.added.append(name)
        return
    if new is old:
        return
    outcome.updated.append(name)
    if id(new) in existing:
        return
    if _holders.wraps(new, old):  # `f = deco(f)`: the old object is inside the new one
        outcome.unmerged.append((name, old, new))
        return
    module = module_ns.get("__name__")
    if getattr(old, "__module__", None) != module and not _wraps_own(old, new, stmt, module):
        if _reach.unrelated(old, new, stmt.node, module_ns.get("__name__")):
            _unmerged(name, old, new, (old_stmt, stmt), ctx, outcome)
        return
    if mergeable(old, new):
        held = (
            _reach.holders(new, [ctx.created], cells=True)
            if _reach.references(new) > _reach.BASELINE
            else []
        )
        note = update_callable(old, new, ctx.log, ctx.idmap)
        if note:
            ctx.notes.append(note)
        ctx.idmap.link(new, old)
        for cls, key in _forward.registrations_of(getattr(new, "__wrapped__", new)):
            _forward.rebind(cls, key, old)
        for cls, key in _forward.registrations_of(new):
            _forward.rebind(cls, key, old)
        if held:
            _registered.replace_held(name, held, new, old, ctx, ["its decorator"])
        module_ns[name] = old
    elif isinstance(old, type) and isinstance(new, type) and old.__qualname__ == new.__qualname__:
        old_node = old_stmt.fresh_node() if old_stmt is not None else None
        first = len(ctx.members)
        _classes.merge(old, new, _classdef(old_node), _classdef(stmt.node), ctx)
        module_ns[name] = old
        _report_members(outcome, name, ctx.members[first:])
        _registered.rehome(name, new, old, stmt.node, ctx)
    else:
        note = retarget(old, new, ctx.log)
        if note:
            ctx.notes.append(note)
        elif _reach.unrelated(old, new, stmt.node, module_ns.get("__name__")):
            _unmerged(name, old, new, (old_stmt, stmt), ctx, outcome)
        elif prior is not None and prior is not old and _holders.wraps(new, prior):
            # `f = deco(f)` added under a definition that ran again and made another object
            # than the old one: that one is wrapped, the old one cannot become the wrapper
            outcome.unmerged.append((name, old, new))


def _unmerged(
    name: str,
    old: Any,
    new: Any,
    stmts: tuple[Stmt | None, Stmt],
    ctx: _classes.MergeContext,
    outcome: Outcome,
) -> None:
    """`new` cannot be merged into `old`: the function inside `old` forwards to `new` where
    there is one (see `_bodies.forward_old`); else the name takes `new` and a note names
    what still holds `old`."""
    old_stmt, stmt = stmts
    note = None
    if old_stmt is not None:
        note = _bodies.forward_old(name, old, new, old_stmt, stmt, ctx)
    if note:
        ctx.notes.append(note)
    else:
        outcome.unmerged.append((name, old, new))


def _wraps_own(old: Any, new: Any, stmt: Stmt, module: Any) -> bool:
    """Two objects of one class a decorator made around this module's function (click's
    `Command` for a `def` whose decorator changed), or two functions of another module
    made around it (`toolz.memoize`'s, run again when the module's compiler flags
    changed): merged like a class-based decorator's instances, though their code lives
    elsewhere."""
    return (
        isinstance(stmt.node, (ast.FunctionDef, ast.AsyncFunctionDef))
        and _reach.home(old) == module
        and _reach.home(new) == module
        and mergeable(old, new)
    )


def _report_members(outcome: Outcome, name: str, members: list[tuple[str, str]]) -> None:
    """Name the members a class patch touched (`C.m`) instead of the whole class."""
    if not members:
        return
    outcome.updated.remove(name)
    lists = {"+": outcome.added, "~": outcome.updated, "-": outcome.removed}
    for sign, qualname in members:
        lists[sign].append(qualname)


def _classdef(node: ast.stmt | None) -> ast.ClassDef | None:
    return node if isinstance(node, ast.ClassDef) else None


def restore_namespace(namespace: dict[str, Any], saved: dict[str, Any]) -> None:
    for key in [k for k in namespace if k not in saved]:
        del namespace[key]
    for key, value in saved.items():
        if namespace.get(key, _MISSING) is not value:
            namespace[key] = value


def _restore_linecache(filename: str, cached: Any) -> None:
    if cached is None:
        linecache.cache.pop(filename, None)
    else:
        linecache.cache[filename] = cached


def _failing_line(exc: BaseException, filename: str) -> int | None:
    line = None
    for frame, lineno in traceback.walk_tb(exc.__traceback__):
        if frame.f_code.co_filename == filename:
            line = lineno
    return line


def _describe(exc: BaseException, filename: str, kept: list[str]) -> str:
    """What a failed application says: the exception and the line of the new source that
    raised it, and that nothing was changed — but what a framework's table `kept`."""
    if isinstance(exc, PatchError):
        return str(exc)
    line = _failing_line(exc, filename)
    where = f" at line {line}" if line else ""
    text = linecache.getline(filename, line).strip() if line else ""
    shown = f" ({text})" if text else ""
    changed = f"Nothing was changed but this: {'; '.join(kept)}" if kept else "Nothing was changed"
    return (
        f"executing the new source raised {type(exc).__name__}: {exc}{where}{shown}. "
        f"{changed}; fix the source and patch again."
    )


class _Ids:
    """The identities of a namespace's values before the application. Each question scans
    the values in C (most applications ask once, if at all)."""

    def __init__(self, values: dict[str, Any]) -> None:
        self._values = values

    def __contains__(self, key: object) -> bool:
        return isinstance(key, int) and key in map(id, self._values.values())
