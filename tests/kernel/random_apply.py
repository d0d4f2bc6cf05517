"""Applying random edits of the module model live: through `Runtime.patch` (one definition),
`Runtime.patch_module`, `Runtime.reload` from a written file, `Runtime.rollback`, and patches
that must fail and change nothing. Each application is logged for replay."""

from __future__ import annotations

import copy
from collections.abc import Callable
from typing import Any

from random_items import (
    Assign,
    Cls,
    Data,
    Def,
    Dispatch,
    EnumDef,
    Filler,
    Future,
    Item,
    named,
    render,
)
from random_module import (
    CLASS_CONSTS,
    CLASSES,
    CONSTS,
    DATA,
    DISPATCH,
    EDITS,
    ENUMS,
    FIRST,
    FUNCS,
    METHODS,
    Sequence,
    changed,
    filler,
    make,
    method_def,
    repair,
)

from liveforge import PatchError, Runtime
from liveforge.kernel.errors import UnsupportedChange


def edit(seq: Sequence, rt: Runtime, mod: str, write: Callable[[str], None]) -> None:
    """Make one random edit to the model and apply it live, or roll changes back: the
    newest, one with every later one (`rollback(id)`), or all after one (`rollback_to`)."""
    if seq.undo and seq.rng.random() < 0.12:
        _rollback(seq, rt)
        return
    if seq.rng.random() < 0.08:
        _failing_edit(seq, rt, mod, write)
        return
    before, recorded = copy.deepcopy(seq.items), len(rt.history())
    try:
        _edit(seq, rt, mod, write)
    except UnsupportedChange:
        # e.g. the fields of a slotted dataclass changed: refused, and nothing changed
        seq.log.append("  -> refused (UnsupportedChange); the model is as before")
        seq.items = before
        return
    if len(rt.history()) > recorded:
        seq.undo.append((before, rt.history()[-1].id))


def _rollback(seq: Sequence, rt: Runtime) -> None:
    """Roll back the newest change, several, or back to a point; the model follows."""
    how = seq.rng.choice(["newest", "newest", "several", "to"])
    if how == "newest":
        seq.items = seq.undo.pop()[0]
        seq.log.append("rt.rollback()")
        rt.rollback()
        return
    at = seq.rng.randrange(len(seq.undo))
    change_id = seq.undo[at][1]
    if how == "several":  # that change and every later one
        seq.items = seq.undo[at][0]
        del seq.undo[at:]
        seq.log.append(f"rt.rollback({change_id!r}) (change {at} and later)")
        rt.rollback(change_id)
        return
    if at + 1 < len(seq.undo):  # every change after it; it stays
        seq.items = seq.undo[at + 1][0]
        del seq.undo[at + 1 :]
    seq.log.append(f"rt.rollback_to({change_id!r}) (after change {at})")
    rt.rollback_to(change_id)


def _failing_edit(seq: Sequence, rt: Runtime, mod: str, write: Callable[[str], None]) -> None:
    """Changed definitions plus a statement that raises (or does not compile), applied live:
    the patch must fail and leave the module exactly as it was (the model is not touched)."""
    rng = seq.rng
    items = copy.deepcopy(seq.items)
    for _ in range(rng.randint(1, 3)):
        defs = [i for i, item in enumerate(items) if isinstance(item, (Def, Cls, Data, EnumDef))]
        if defs:
            at = rng.choice(defs)
            items[at] = changed(rng, items[at])
    bad = rng.choice(["BROKEN = 1 // 0\n", "BROKEN = (\n", "Root.hook(None, 1)\n"])
    items.insert(rng.randint(2, len(items)), Filler(f"\n{bad}"))
    source = render(items)
    how = rng.choice(["patch_module", "reload", "class"])
    classes = [c for c in items if isinstance(c, Cls)]
    try:
        if how == "class" and classes:
            cls = rng.choice(classes)
            seq.log.append(f"failing class patch of {cls.name}")
            rt.patch(f"{mod}.{cls.name}", cls.text().replace("\n", f"\n    {bad}", 1))
        elif how == "reload":
            seq.log.append(f"failing reload of {source!r}")
            write(source)
            rt.reload(mod, force=True)
        else:
            seq.log.append(f"failing rt.patch_module({source!r})")
            rt.patch_module(mod, source)
    except PatchError:
        return
    raise AssertionError("a patch with a failing statement was applied")


def _edit(seq: Sequence, rt: Runtime, mod: str, write: Callable[[str], None]) -> None:
    rng, items = seq.rng, seq.items
    present = named(items)
    kinds = ["change", "change", "change", "add", "remove", "reorder", "filler", "member", "future"]
    kind = rng.choice([*kinds, "alias"] if EDITS["aliases"] else kinds)
    editable = [n for n in present if n not in ("SCALE", "tag", "make")]
    if kind == "change" and present:
        name = rng.choice(list(present))
        old = present[name]
        new = changed(rng, old)
        items[items.index(old)] = new
        _apply_definition(seq, rt, mod, write, name, new)
    elif kind == "alias":
        done = seq.alias_edit()
        if done:
            _whole(seq, rt, mod, write, done)
    elif kind == "add":
        names = FUNCS + CLASSES + CONSTS + DATA + ENUMS + (DISPATCH if EDITS["dispatch"] else [])
        free = [n for n in names if n not in present]
        if not free:
            return
        name = rng.choice(free)
        new = make(rng, name)
        if rng.random() < 0.5 and not isinstance(new, Dispatch):
            if not render(items).endswith("\n\n"):
                items.append(Filler("\n\n"))
            items.append(new)
            _log_patch(seq, rt, f"{mod}.{name}", new.text(), f"add {name}")
        else:
            at = seq.spot()
            items[at:at] = [Filler("\n\n"), new]
            _whole(seq, rt, mod, write, f"add {name} at item {at}")
    elif kind == "remove" and editable:
        name = rng.choice(editable)
        items.remove(present[name])
        _whole(seq, rt, mod, write, f"remove {name}")
    elif kind == "reorder" and len(items) > 4:
        i = rng.randint(FIRST, len(items) - 2)
        items[i], items[i + 1] = items[i + 1], items[i]
        _whole(seq, rt, mod, write, f"swap items {i},{i + 1}")
    elif kind == "future":
        futures = [item for item in items if isinstance(item, Future)]
        if futures:
            items.remove(futures[0])
        else:
            items.append(Future())
        _whole(seq, rt, mod, write, "toggle from __future__ import annotations")
    elif kind == "filler":
        if rng.random() < 0.5 or len(items) < 4:
            at = seq.spot()
            items.insert(at, filler(rng))
            _whole(seq, rt, mod, write, f"insert filler at {at}")
        else:
            fillers = [i for i, item in enumerate(items[2:], 2) if isinstance(item, Filler)]
            if fillers:
                del items[rng.choice(fillers)]
                _whole(seq, rt, mod, write, "delete filler")
    elif kind == "member":
        classes = [c for c in items if isinstance(c, Cls)]
        if classes:
            _member_edit(seq, rt, mod, write, rng.choice(classes))


def _member_edit(
    seq: Sequence, rt: Runtime, mod: str, write: Callable[[str], None], cls: Cls
) -> None:
    rng = seq.rng
    path = cls.name
    inner = [m for m in cls.members if isinstance(m, Cls)]
    if inner and rng.random() < 0.4:
        cls = rng.choice(inner)
        path = f"{path}.{cls.name}"
    present = named(cls.members)
    choice = rng.choice(["change", "change", "add", "remove", "filler"])
    target = f"{mod}.{path}"
    if choice == "change":
        name = rng.choice(list(present))
        old = present[name]
        new: Any = (
            type(old)(name, old.value + 1)
            if isinstance(old, Assign)
            else changed(rng, old)
            if isinstance(old, Cls)
            else method_def(rng, name)
        )
        cls.members[cls.members.index(old)] = new
        # A property with a setter is two statements: only class and module patches fit.
        if rng.random() < 0.6 and not (
            getattr(old, "setter", False) or getattr(new, "setter", False)
        ):
            _log_patch(seq, rt, f"{target}.{name}", new.text(), f"change {path}.{name}")
            return
    elif choice == "add":
        free = [n for n in METHODS + CLASS_CONSTS if n not in present]
        if not free:
            return
        name = rng.choice(free)
        new = method_def(rng, name) if name in METHODS else Assign(name, rng.randint(10, 99))
        cls.members += [Filler("\n"), new]
        if rng.random() < 0.6 and not getattr(new, "setter", False):
            _log_patch(seq, rt, f"{target}.{name}", new.text(), f"add {path}.{name}")
            return
    elif choice == "remove" and len(present) > 1:
        name = rng.choice([n for n in present if n != "BASE"])
        at = cls.members.index(present[name])
        del cls.members[at]
        if at > 0 and isinstance(cls.members[at - 1], Filler):
            del cls.members[at - 1]
        while isinstance(cls.members[-1], Filler):
            cls.members.pop()
    elif choice == "filler" and len(cls.members) > 1:
        at = rng.randint(1, len(cls.members) - 1)
        cls.members.insert(at, Filler(rng.choice(["\n", "# inside\n", "\n\n"])))
    else:
        return
    if rng.random() < 0.5:
        _log_patch(seq, rt, target, cls.text(), f"{choice} member of {path} (class patch)")
    else:
        _whole(seq, rt, mod, write, f"{choice} member of {path}")


def _apply_definition(
    seq: Sequence, rt: Runtime, mod: str, write: Callable[[str], None], name: str, new: Item
) -> None:
    # A dispatch function's overloads are statements of their own (`def _`): whole module.
    if seq.rng.random() < 0.6 and not isinstance(new, Dispatch):
        _log_patch(seq, rt, f"{mod}.{name}", new.text(), f"change {name}")
    else:
        _whole(seq, rt, mod, write, f"change {name}")


def _log_patch(seq: Sequence, rt: Runtime, target: str, text: str, what: str) -> None:
    seq.log.append(f"{what}: rt.patch({target!r}, {text!r})")
    rt.patch(target, text)


def _whole(seq: Sequence, rt: Runtime, mod: str, write: Callable[[str], None], what: str) -> None:
    repair(seq.items)
    source = render(seq.items)
    if seq.rng.random() < 0.25:
        seq.log.append(f"{what}: write file + rt.reload(force=True)")
        write(source)
        if rt.reload(mod, force=True).id:
            seq.undo.clear()  # a forced reload supersedes the earlier in-memory changes
    else:
        seq.log.append(f"{what}: rt.patch_module")
        rt.patch_module(mod, source)
