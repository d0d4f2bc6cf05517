"""Reading a save the way `liveforge watch` needs it: whole, and in words.

- `Saved` is one file's bytes with the stamp that tells one save from the next, read again
  until it stops changing (`settle`): an editor that truncates then writes shows an empty file
  for a moment, and that moment must never be applied.
- `suspect` says when a save that parses still looks half-written (it empties the module or
  removes most of its definitions), so the watcher holds it until it is saved again.
- `edits` names what a save changes compared with the running source (`~updated +added
  -removed`), also for a save that is refused, so its line can say what was not applied.
- `shape_notes` names what a change did to signatures and dataclass fields, which a bare
  `~Item.label` under-states (callers of `Item(...)` may now raise `TypeError`).
- `OldCode` remembers the code objects of a module's functions before a change, and names
  the threads and coroutines still executing the old code of a function the change updated
  (a running `while True:` loop keeps its old body until it returns).
"""

from __future__ import annotations

import ast
import functools
import gc
import hashlib
import inspect
import io
import os
import sys
import threading
import time
import tokenize
import types
from collections.abc import Callable, Iterable
from dataclasses import dataclass

__all__ = [
    "OldCode",
    "Saved",
    "edits",
    "read_saved",
    "read_settled",
    "shape_notes",
    "suspect",
    "top_level",
]

_POLL = 0.01
"""Seconds between two reads of a file that is still being written."""
_GIVE_UP = 2.0
"""Seconds past the hold after which a file that never stops changing is read as it is."""


@dataclass(frozen=True)
class Saved:
    """One file as read after a save: its text (None when unreadable or gone) and a stamp
    (modification time, size, digest) that differs between two saves, even of equal text."""

    path: str
    text: str | None
    stamp: tuple[int, int, str]


def read_saved(path: str) -> Saved:
    """The file at `path` as it is now (text None when it is gone or does not decode)."""
    try:
        with open(path, "rb") as handle:
            data = handle.read()
            stat = os.fstat(handle.fileno())
    except OSError:
        return Saved(path, None, (0, -1, ""))
    try:
        encoding, _ = tokenize.detect_encoding(io.BytesIO(data).readline)
        text: str | None = data.decode(encoding)
    except (SyntaxError, UnicodeDecodeError, LookupError):
        text = None
    return Saved(path, text, (stat.st_mtime_ns, stat.st_size, hashlib.sha1(data).hexdigest()))


def read_settled(
    paths: Iterable[str], settle: float, hold: float, doubtful: Callable[[Saved], bool]
) -> list[Saved]:
    """Each file once it stopped changing for `settle` seconds; while `doubtful` finds one
    half-written (unreadable, empty, most definitions gone) it is read again for up to
    `hold` seconds, as the rest of an editor's write may still be coming."""
    files = {p: read_saved(p) for p in paths}
    start = quiet_since = time.monotonic()
    while True:
        now = time.monotonic()
        if now - quiet_since >= settle:
            if now - start >= hold or not any(doubtful(s) for s in files.values()):
                return list(files.values())
        elif now - start >= hold + settle + _GIVE_UP:  # rewritten without a pause: take it
            return list(files.values())
        time.sleep(_POLL)
        again = {p: read_saved(p) for p in files}
        if any(again[p].stamp != files[p].stamp for p in files):
            files, quiet_since = again, time.monotonic()


@functools.lru_cache(maxsize=8)
def _tree(source: str) -> ast.Module | None:
    """`source` parsed, or None; remembered, as one save is looked at several times (is it
    half-written, what does it change) and each parse of a large module takes milliseconds.
    Callers only read the tree."""
    try:
        return ast.parse(source)
    except (SyntaxError, ValueError):
        return None


def top_level(source: str) -> dict[str, str] | None:
    """The definitions of a module (functions, classes and their methods as `Class.name`,
    assigned names) each with a dump of its node; None when `source` does not parse."""
    tree = _tree(source)
    if tree is None:
        return None
    found: dict[str, str] = {}
    for node in tree.body:
        for name in _binds(node):
            found[name] = ast.dump(node)
        if isinstance(node, ast.ClassDef):
            for member in node.body:
                for name in _binds(member):
                    found[f"{node.name}.{name}"] = ast.dump(member)
    return found


def _binds(node: ast.stmt) -> list[str]:
    if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef):
        return [node.name]
    targets: list[ast.expr] = []
    if isinstance(node, ast.Assign):
        targets = node.targets
    elif isinstance(node, ast.AnnAssign | ast.AugAssign):
        targets = [node.target]
    return [t.id for t in targets if isinstance(t, ast.Name)]


def edits(before: str, after: str) -> str:
    """What `after` changes in `before`, as `~updated +added -removed` ("" when nothing or
    when either does not parse)."""
    old, new = top_level(before), top_level(after)
    if old is None or new is None:
        return ""
    groups = (
        ("~", [n for n in new if n in old and new[n] != old[n] and _outer_kept(n, old, new)]),
        ("+", [n for n in new if n not in old]),
        ("-", [n for n in old if n not in new]),
    )
    return " ".join(label + ",".join(names) for label, names in groups if names)


def _outer_kept(name: str, old: dict[str, str], new: dict[str, str]) -> bool:
    """A class whose only change is in its methods is named by the methods, not itself."""
    if "." in name:
        return True
    members = [n for n in new if n.startswith(name + ".")]
    changed = [n for n in members if old.get(n) != new[n]] + [
        n for n in old if n.startswith(name + ".") and n not in new
    ]
    return not changed


def suspect(before: str, after: str) -> str | None:
    """Why a save that parses looks half-written — it empties a module that has definitions,
    or removes more than half of them (at least two) — else None."""
    old, new = top_level(before), top_level(after)
    if not old or new is None:
        return None
    outer = [n for n in old if "." not in n]
    gone = [n for n in outer if n not in new]
    if not after.strip():
        return f"the file is empty: it would remove {_names(gone)}"
    if len(gone) >= 2 and len(gone) * 2 > len(outer):
        return f"it removes {len(gone)} of {len(outer)} definitions ({_names(gone)})"
    return None


def _names(names: list[str], limit: int = 6) -> str:
    shown = ", ".join(names[:limit])
    return shown + (f" and {len(names) - limit} more" if len(names) > limit else "")


def shape_notes(before: str | None, after: str, names: Iterable[str] | None = None) -> list[str]:
    """Signatures and dataclass fields that `after` changed, one note each, in words; only
    for `names` (a change's updated names, classes of updated methods included) if given —
    writing out every signature of a large module would cost more than applying it."""
    wanted = None if names is None else {p for n in names for p in (n, n.partition(".")[0])}
    old, new = _shapes(before or "", wanted), _shapes(after, wanted)
    notes = []
    for name, shape in new.items():
        was = old.get(name)
        if was is None or was == shape:
            continue
        kind, text = shape
        if kind == "fields":
            notes.append(
                f"{name} fields ({was[1]}) -> ({text}): {name}.__init__ changed, calls made "
                "for the old fields raise TypeError"
            )
        else:
            notes.append(f"signature {name}({was[1]}) -> {name}({text})")
    return notes


def _shapes(source: str, wanted: set[str] | None) -> dict[str, tuple[str, str]]:
    """Each wanted function's parameters and dataclass's fields, written out."""
    tree = _tree(source)
    if tree is None:
        return {}
    shapes: dict[str, tuple[str, str]] = {}
    for node in tree.body:
        if wanted is not None and getattr(node, "name", None) not in wanted:
            continue
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
            shapes[node.name] = ("signature", ast.unparse(node.args))
        elif isinstance(node, ast.ClassDef):
            if any("dataclass" in ast.unparse(d) for d in node.decorator_list):
                shapes[node.name] = ("fields", _fields(node))
            for member in node.body:
                qualname = f"{node.name}.{getattr(member, 'name', '')}"
                if isinstance(member, ast.FunctionDef | ast.AsyncFunctionDef) and (
                    wanted is None or qualname in wanted
                ):
                    shapes[qualname] = ("signature", ast.unparse(member.args))
    return shapes


def _fields(node: ast.ClassDef) -> str:
    """A dataclass's fields as `name` or `name=…` (with a default), in order."""
    return ", ".join(
        ast.unparse(m.target) + ("" if m.value is None else "=…")
        for m in node.body
        if isinstance(m, ast.AnnAssign) and "ClassVar" not in ast.unparse(m.annotation)
    )


_SUSPENDABLE = inspect.CO_GENERATOR | inspect.CO_COROUTINE | inspect.CO_ASYNC_GENERATOR


class OldCode:
    """The code objects of a module's functions and methods at one moment, by name."""

    def __init__(self, module: types.ModuleType | None) -> None:
        self.codes: dict[str, types.CodeType] = {}
        namespace = vars(module) if module is not None else {}
        for name, value in list(namespace.items()):
            self._add(name, value, module)
            if isinstance(value, type) and value.__module__ == getattr(module, "__name__", None):
                for member, attr in list(vars(value).items()):
                    self._add(f"{name}.{member}", attr, module)

    def _add(self, name: str, value: object, module: types.ModuleType | None) -> None:
        if isinstance(value, staticmethod | classmethod):
            value = value.__func__
        if isinstance(value, property):
            value = value.fget
        code = getattr(value, "__code__", None)
        if isinstance(code, types.CodeType) and getattr(value, "__module__", None) == getattr(
            module, "__name__", None
        ):
            self.codes[name] = code

    def still_running(self, updated: Iterable[str], now: OldCode) -> list[str]:
        """Where the old code of the `updated` functions still executes: "name (thread T)"
        for a frame on a thread's stack, "name (a suspended coroutine/generator)" else."""
        old = {
            self.codes[n]: n
            for n in updated
            if n in self.codes and now.codes.get(n) is not self.codes[n]
        }
        if not old:
            return []
        found: dict[str, None] = {}
        names = {t.ident: t.name for t in threading.enumerate()}
        me = threading.get_ident()
        for ident, frame in sys._current_frames().items():
            walker: types.FrameType | None = frame
            while walker is not None and ident != me:
                if walker.f_code in old:
                    found[f"{old[walker.f_code]} (thread {names.get(ident, ident)!r})"] = None
                walker = walker.f_back
        if any(code.co_flags & _SUSPENDABLE for code in old):
            for obj in gc.get_objects():
                code = _suspended_code(obj)
                if code is not None and code in old:
                    found[f"{old[code]} (a suspended {type(obj).__name__})"] = None
        return list(found)


def _suspended_code(obj: object) -> types.CodeType | None:
    if isinstance(obj, types.GeneratorType):
        return obj.gi_code if obj.gi_frame is not None else None
    if isinstance(obj, types.CoroutineType):
        return obj.cr_code if obj.cr_frame is not None else None
    if isinstance(obj, types.AsyncGeneratorType):
        return obj.ag_code if obj.ag_frame is not None else None
    return None
