"""In-place update of live classes.

A class statement that changed is executed again, which builds a *new* class object; `merge`
then moves what the new source says into the existing class, so instances, subclasses and
every reference keep working:

- methods (plain, class, static, property accessors, wrapped) are updated in place;
- class-level values whose defining statement is unchanged keep their current value (a
  registry or cache in the class body is not reset); changed ones take the new value;
- names the new body no longer binds are removed;
- nested classes are merged recursively, enum members keep their identity (added members are
  real members), dataclass-generated methods are taken from the re-decorated class;
- changes that cannot be made in place (`__slots__`, metaclass, incompatible bases) are
  refused with `UnsupportedChange`.
"""

from __future__ import annotations

import ast
import enum
import functools
import types
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from liveforge.kernel.errors import UnsupportedChange
from liveforge.kernel.live import _forward, _holders
from liveforge.kernel.live._functions import collect_functions
from liveforge.kernel.live._undo import UndoLog
from liveforge.kernel.live._update import (
    IdentityMap,
    fix_cells,
    mergeable,
    retarget,
    update_callable,
)
from liveforge.kernel.source._stmts import bindings

_MISSING = object()
_NEVER_COPIED = {"__dict__", "__weakref__", "__module__", "__qualname__", "__slots__"}
_ENUM_BOOKKEEPING = {"_member_names_", "_member_map_", "_value2member_map_", "_unhashable_values_"}


@dataclass
class MergeContext:
    """Shared state of one patch: undo log, new->live identity map, notes."""

    log: UndoLog
    filename: str
    #: the live object each new object was merged into; it holds the new ones until the
    #: patch is done, nested ones included (see `IdentityMap`).
    idmap: IdentityMap = field(default_factory=IdentityMap)
    notes: list[str] = field(default_factory=list)
    #: class members the new source added (+), changed (~) or removed (-), qualified.
    members: list[tuple[str, str]] = field(default_factory=list)
    #: the objects the changed statements bound: the heap searches skip this list (and the
    #: reference counts `_reach` compares count it), and a failed patch takes them out of
    #: the registries that stored them.
    created: list[Any] = field(default_factory=list)
    #: called after a class was merged (name, new class, live class, class statement), to
    #: put the live class where building the new one stored it (see `_registered.rehome`).
    rehome: Callable[[str, type, type, ast.stmt | None, MergeContext], None] | None = None
    #: containers that held a live object before its definition ran again, as they were
    #: then, by id (see `_registered.before_rerun`).
    registered: dict[int, Any] = field(default_factory=dict)
    #: the lists, dicts and sets found holding a live object then, by its id.
    searched: dict[int, list[Any]] = field(default_factory=dict)
    #: a stale class statement runs again: class-level values computed from names are taken
    #: anew even where their text did not change (see `_stale`).
    reread: bool = False
    #: ids of the code objects the functions of moved statements took (their new lines,
    #: see `_moves`), or functions updated in place took (see `_bodies`), which an old
    #: statement's line range must not take for its own.
    shifted: set[int] = field(default_factory=set)


def _set(cls: type, name: str, value: Any, ctx: MergeContext) -> None:
    before = cls.__dict__.get(name, _MISSING)
    if before is value:
        return

    ctx.log.add(functools.partial(_put_back, cls, name, before))
    type.__setattr__(cls, name, value)


def _delete(cls: type, name: str, ctx: MergeContext) -> None:
    before = cls.__dict__[name]
    ctx.log.add(lambda: type.__setattr__(cls, name, before))
    type.__delattr__(cls, name)


def _body_info(node: ast.ClassDef | None) -> tuple[set[str], set[str], dict[str, ast.ClassDef]]:
    """(names bound by the body, names bound by non-def statements as dumps, nested classes)."""
    if node is None:
        return set(), set(), {}
    plain = {
        ast.dump(s)
        for s in node.body
        if not isinstance(s, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef))
    }
    nested = {s.name: s for s in node.body if isinstance(s, ast.ClassDef)}
    return bindings(node.body), plain, nested


def _unchanged_names(
    old_node: ast.ClassDef | None, new_node: ast.ClassDef | None, reread: bool = False
) -> set[str]:
    """Names bound by class-level statements (not definitions) whose text did not change:
    the live class keeps their values (its state). With `reread`, those that read a name
    are left out: their values are taken anew."""
    if old_node is None or new_node is None:
        return set()
    _, old_plain, _ = _body_info(old_node)
    names: set[str] = set()
    for stmt in new_node.body:
        if (
            not isinstance(stmt, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef))
            and ast.dump(stmt) in old_plain
            and not (reread and any(isinstance(n, ast.Name) for n in ast.walk(stmt)))
        ):
            names |= bindings([stmt])
    return names


def _check_layout(old: type, new: type, ctx: MergeContext) -> None:
    if type(old) is not type(new):
        raise UnsupportedChange(
            f"the metaclass of {old.__qualname__} changed ({type(old).__name__} -> "
            f"{type(new).__name__}); a live class cannot change its metaclass. Keep the "
            "metaclass, or rename the class to create a new one.",
            target=old.__qualname__,
        )
    if old.__dict__.get("__slots__", _MISSING) != new.__dict__.get("__slots__", _MISSING):
        raise UnsupportedChange(
            f"the __slots__ of {old.__qualname__} changed; existing instances have the old "
            "memory layout, so this cannot be applied in place. Keep __slots__ unchanged, or "
            "rename the class and migrate callers.",
            target=old.__qualname__,
        )
    bases = tuple(ctx.idmap.live(b) for b in new.__bases__)
    if bases != old.__bases__:
        before = old.__bases__
        try:
            old.__bases__ = bases
        except TypeError as exc:
            raise UnsupportedChange(
                f"the bases of {old.__qualname__} cannot change in place ({exc}). Keep the "
                "bases, or rename the class.",
                target=old.__qualname__,
            ) from None
        ctx.log.add(lambda: setattr(old, "__bases__", before))


def merge(
    old: type,
    new: type,
    old_node: ast.ClassDef | None,
    new_node: ast.ClassDef | None,
    ctx: MergeContext,
) -> None:
    """Make the live class `old` what the re-executed class statement built as `new`."""
    if old is new:
        return
    _check_layout(old, new, ctx)
    _report_members(old.__qualname__, old_node, new_node, ctx)
    ctx.idmap.link(new, old)
    keep: set[str] = set()
    if _forward.is_declaration(old):
        keep = _forward.merge_declaration(old, new)
    if isinstance(old, enum.EnumMeta):
        keep |= _merge_enum(old, new, ctx)
    old_bound, _, old_nested = _body_info(old_node)
    new_bound, _, new_nested = _body_info(new_node)
    unchanged = _unchanged_names(old_node, new_node, ctx.reread)
    for name, value in list(new.__dict__.items()):
        if name in _NEVER_COPIED or name in keep or _own_slot(new, value):
            continue
        if name in unchanged and name in old.__dict__:
            continue
        _merge_member(old, name, value, ctx, (old_nested.get(name), new_nested.get(name)))
    for name in list(old.__dict__):
        if name in new.__dict__ or name in new_bound:
            continue
        if name in old_bound or _generated_for(old, old.__dict__[name]):
            _delete(old, name, ctx)


def _own_slot(cls: type, value: Any) -> bool:
    """A slot's member descriptor, bound to the memory layout of `cls` alone: the live class
    keeps its own (equal `__slots__` are checked first), or every instance would break."""
    return isinstance(value, types.MemberDescriptorType) and value.__objclass__ is cls


def _generated_for(cls: type, value: Any) -> bool:
    """A method made for `cls` by a class decorator (a dataclass's `__setattr__` when frozen,
    its ordering methods, ...): named as a member of `cls` but not bound by the class body.
    When the re-decorated class no longer has it, a fresh import would not either."""
    func = getattr(value, "__func__", value)
    return isinstance(func, types.FunctionType) and (
        func.__qualname__ == f"{cls.__qualname__}.{func.__name__}"
        or func.__module__ == "dataclasses"  # a slotted frozen dataclass's __getstate__
    )


def _report_members(
    qualname: str, old_node: ast.ClassDef | None, new_node: ast.ClassDef | None, ctx: MergeContext
) -> None:
    """Record which members the class body added, changed or removed (nested classes that
    exist on both sides report their own members when they are merged)."""
    if old_node is None or new_node is None:
        return
    before, after = _dumps_by_name(old_node), _dumps_by_name(new_node)
    for name, dumps in after.items():
        if name not in before:
            ctx.members.append(("+", f"{qualname}.{name}"))
        elif before[name] != dumps and not dumps[-1].startswith("ClassDef("):
            ctx.members.append(("~", f"{qualname}.{name}"))
    ctx.members.extend(("-", f"{qualname}.{n}") for n in sorted(set(before) - set(after)))


def _dumps_by_name(node: ast.ClassDef) -> dict[str, list[str]]:
    """Each name of a class body with every statement that binds it (a property's getter
    and setter are two statements of one member)."""
    dumps: dict[str, list[str]] = {}
    for stmt in node.body:
        for name in sorted(bindings([stmt])):
            dumps.setdefault(name, []).append(ast.dump(stmt))
    return dumps


def _merge_member(
    cls: type,
    name: str,
    value: Any,
    ctx: MergeContext,
    nodes: tuple[ast.ClassDef | None, ast.ClassDef | None],
) -> None:
    current = cls.__dict__.get(name, _MISSING)
    if current is not _MISSING and _merge_in_place(current, value, ctx, nodes):
        _replay_set_name(cls, name, current, ctx)
        return
    if current is not _MISSING:
        note = retarget(current, value, ctx.log)
        if not note and _unrelated(current, value, nodes[1]):
            note = _holders.unmerged(f"{cls.__qualname__}.{name}", current, value)
        _note(note, ctx)
    found: dict[int, types.FunctionType] = {}
    collect_functions(value, found)
    fix_cells(list(found.values()), ctx.idmap)
    live = ctx.idmap.live(value)
    _set(cls, name, live, ctx)
    _replay_set_name(cls, name, live, ctx)


def _unrelated(current: Any, value: Any, nested: ast.ClassDef | None) -> bool:
    """A callable member or a descriptor (not a class, not a plain value) replaced by an
    object it cannot be merged into: a decorator of a method now makes another kind of
    object (a `cachedproperty` dropped, a `staticmethod` added)."""
    if isinstance(current, type) or nested is not None:
        return False
    return callable(current) or hasattr(type(current), "__get__")


def _replay_set_name(cls: type, name: str, value: Any, ctx: MergeContext) -> None:
    """Call `__set_name__` as type creation would for the live class: the new class
    statement called it with the new class object, which was merged into `cls`. What it
    sets on the class is undone with the change."""
    hook = getattr(type(value), "__set_name__", None)
    if hook is None:
        return
    before = dict(cls.__dict__)
    hook(value, cls, name)
    for key, now in list(cls.__dict__.items()):
        if before.get(key, _MISSING) is not now:
            ctx.log.add(functools.partial(_put_back, cls, key, before.get(key, _MISSING)))


def _put_back(cls: type, name: str, value: Any) -> None:
    if value is not _MISSING:
        type.__setattr__(cls, name, value)
    elif name in cls.__dict__:
        type.__delattr__(cls, name)


def _merge_in_place(
    current: Any,
    value: Any,
    ctx: MergeContext,
    nodes: tuple[ast.ClassDef | None, ast.ClassDef | None],
) -> bool:
    """Update `current` from `value` without replacing it; False when it must be replaced."""
    if mergeable(current, value):
        _note(update_callable(current, value, ctx.log, ctx.idmap), ctx)
        ctx.idmap.link(value, current)
        return True
    if (
        isinstance(current, (classmethod, staticmethod))
        and type(current) is type(value)
        and mergeable(current.__func__, value.__func__)
    ):
        _note(update_callable(current.__func__, value.__func__, ctx.log, ctx.idmap), ctx)
        return True
    if isinstance(current, property) and isinstance(value, property):
        return _merge_property(current, value, ctx)
    if (
        isinstance(current, type)
        and isinstance(value, type)
        and nodes[1] is not None
        and value.__qualname__.endswith("." + nodes[1].name)
    ):
        merge(current, value, nodes[0], nodes[1], ctx)
        if ctx.rehome is not None:
            ctx.rehome(current.__qualname__, value, current, nodes[1], ctx)
        return True
    return False


def _merge_property(current: property, value: property, ctx: MergeContext) -> bool:
    pairs = [(current.fget, value.fget), (current.fset, value.fset), (current.fdel, value.fdel)]
    if any((a is None) != (b is None) or (a is not None and not mergeable(a, b)) for a, b in pairs):
        return False
    for a, b in pairs:
        if a is not None:
            _note(update_callable(a, b, ctx.log, ctx.idmap), ctx)
    return True


def _note(note: str | None, ctx: MergeContext) -> None:
    if note:
        ctx.notes.append(note)


def _merge_enum(old: Any, new: Any, ctx: MergeContext) -> set[str]:
    """Keep existing members (identity), add real new members and aliases, drop removed
    ones."""
    saved = {k: old.__dict__[k] for k in _ENUM_BOOKKEEPING if k in old.__dict__}
    saved_lists = {k: (v.copy() if isinstance(v, (dict, list)) else v) for k, v in saved.items()}

    def undo() -> None:
        for key, value in saved_lists.items():
            container = old.__dict__[key]
            if isinstance(container, dict):
                container.clear()
                container.update(value)
            elif isinstance(container, list):
                container[:] = value

    ctx.log.add(undo)
    member_map: dict[str, Any] = old._member_map_
    members = {}
    for name in new._member_names_:
        fresh = new._member_map_[name]
        member = member_map.get(name)
        if member is None or member._name_ != name:  # new, or only an alias until now
            member = fresh
            member.__class__ = old
        elif member._value_ != fresh._value_:
            _reassign_value(member, fresh._value_, ctx)
        ctx.idmap.link(fresh, member)
        members[name] = member
    # Every name, aliases (a second name for an equal value) included, in definition order.
    named = {name: ctx.idmap.live(fresh) for name, fresh in new._member_map_.items()}
    for name, member in named.items():
        _set(old, name, member, ctx)
    for name in list(member_map):
        if name not in named:
            _delete(old, name, ctx)
    member_map.clear()
    member_map.update(named)
    old._member_names_[:] = list(members)
    old._value2member_map_.clear()
    old._value2member_map_.update({m._value_: m for m in members.values()})
    return set(named) | _ENUM_BOOKKEEPING


def _reassign_value(member: Any, value: Any, ctx: MergeContext) -> None:
    before = member._value_
    ctx.log.add(lambda: object.__setattr__(member, "_value_", before))
    object.__setattr__(member, "_value_", value)
