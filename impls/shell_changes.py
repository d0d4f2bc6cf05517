"""What a shell command changed in the project, brought back from its copy-on-write view.

A command inside the boundary runs on a view of the project (`liveforge.kernel.boundary._overlay`):
what it writes there lands in the view's upper folder. Afterwards — for a background
process at every poll, and when it ends or is killed — those changes are applied to the
project as one undoable step labelled with the command (`Runtime.apply_files`: `/diff`
shows it, `/undo` puts the files back; a managed module's file patches the running module
too). Version-control data, virtualenvs, dependency folders and caches (``.git``,
``.venv``, ``node_modules``, ``__pycache__``, ...) and links are copied over as they are,
not undoably, and the summary says so. Where no view could be made the command wrote the
project itself, and the summary says those changes are not undoable.
"""

from __future__ import annotations

import os
import shutil
import stat
from pathlib import Path
from typing import TYPE_CHECKING, Any

from liveforge.declarations.permissions import approved
from liveforge.impls.shell_boundary import view_unavailable
from liveforge.kernel.boundary._overlay import Changes, View, changes, discard
from liveforge.kernel.errors import LiveforgeError

if TYPE_CHECKING:
    from liveforge.kernel import Runtime

__all__ = ["DIRECT", "Seen", "apply_view", "remove_scratch", "what_changed"]

DIRECT = frozenset(
    ".git .hg .svn .venv venv .tox .nox node_modules __pycache__ .pytest_cache .mypy_cache "
    ".ruff_cache .cache".split()
)
"""Folders whose changes are copied over as they are (large, machine-made), not undoably."""
_NAMED = 5

Seen = dict[str, tuple[int, int, int] | None]
"""What was applied already, per path: the upper file's (mtime_ns, size, mode), None for a
deletion (a background process's view is applied again at every poll)."""


def apply_view(rt: Runtime, upper: Path, label: str, seen: Seen | None = None) -> str:
    """Apply what a view with this upper folder wrote (what `seen` does not hold yet) to
    the project; one line saying what changed and how to undo it."""
    root = Path(rt.project_root).resolve()
    found = changes(upper)
    written = {rel: upper / rel for rel in found.written}
    deleted = [*found.deleted, *_hidden_by_opaque(root, upper, found)]
    if seen is not None:
        written = {r: p for r, p in written.items() if seen.get(r, 0) != _key(p)}
        deleted = [r for r in deleted if r not in seen or seen[r] is not None]
    special = sorted(r for r, p in written.items() if not _regular_or_link(p))
    direct = {r for r in [*written, *deleted] if _is_direct(r, upper)} - set(special)
    kept = {r: p for r, p in written.items() if r not in direct and r not in special}
    gone = [r for r in deleted if r not in direct]
    try:
        with approved():  # allowed with the command: the guards do not ask again
            applied = rt.apply_files(kept, gone, label=label) if kept or gone else None
    except (LiveforgeError, OSError) as exc:
        return f"its file changes in the project were not applied: {exc}"
    _apply_direct(root, {r: written[r] for r in direct if r in written}, deleted, direct)
    _make_folders(root, found.folders)
    if seen is not None:
        seen.update({r: _key(p) for r, p in written.items()})
        seen.update(dict.fromkeys(deleted))
    return _summary(applied.paths if applied else [], sorted(direct), special)


def what_changed(
    rt: Runtime,
    scratch: Path,
    report: dict[str, Any] | None,
    label: str,
    *,
    boundary: bool,
    seen: Seen | None = None,
) -> str:
    """The files a command (its scratch folder and boundary report) changed, applied from
    its view when it had one; one line saying what became of them."""
    if not boundary:
        return _not_undoable("it ran outside the check boundary")
    if report is None:
        return ""
    view = report.get("view") or {}
    if view.get("state") == "copy-on-write":
        return apply_view(rt, scratch / "view" / "upper", label, seen)
    return _not_undoable(view_unavailable() or view.get("reason") or "no copy-on-write view")


def remove_scratch(scratch: Path) -> None:
    """Remove a command's scratch folder, its view's folders included."""
    view = scratch / "view"
    if view.exists():
        discard(View("", str(view / "upper"), str(view / "work")))
    shutil.rmtree(scratch, ignore_errors=True)


def _not_undoable(reason: str) -> str:
    return f"any files it changed in the project are not undoable ({reason})"


def _regular_or_link(path: Path) -> bool:
    mode = os.lstat(path).st_mode
    return stat.S_ISREG(mode) or stat.S_ISLNK(mode)


def _key(path: Path) -> tuple[int, int, int]:
    info = os.lstat(path)
    return (info.st_mtime_ns, info.st_size, info.st_mode)


def _is_direct(rel: str, upper: Path) -> bool:
    return bool(DIRECT.intersection(rel.split("/"))) or os.path.islink(upper / rel)


def _hidden_by_opaque(root: Path, upper: Path, found: Changes) -> list[str]:
    """Files of the real project beneath a folder the view replaced as a whole, which the
    view no longer has."""
    hidden = []
    for folder in found.opaque:
        for inner, _, files in os.walk(root / folder):
            for name in files:
                rel = os.path.relpath(os.path.join(inner, name), root).replace(os.sep, "/")
                if not os.path.lexists(upper / rel):
                    hidden.append(rel)
    return hidden


def _apply_direct(
    root: Path, written: dict[str, Path], deleted: list[str], direct: set[str]
) -> None:
    for rel in deleted:
        if rel in direct:
            target = root / rel
            if target.is_dir() and not target.is_symlink():
                shutil.rmtree(target, ignore_errors=True)
            elif os.path.lexists(target):
                target.unlink()
    for rel, source in written.items():
        target = root / rel
        target.parent.mkdir(parents=True, exist_ok=True)
        if os.path.lexists(target) and (target.is_symlink() or not target.is_dir()):
            target.unlink()
        if source.is_symlink():
            os.symlink(os.readlink(source), target)
        else:
            shutil.copy2(source, target)


def _make_folders(root: Path, folders: list[str]) -> None:
    """New empty folders the view made (folders holding files come with them)."""
    for rel in folders:
        (root / rel).mkdir(parents=True, exist_ok=True)


def _summary(paths: list[str], direct: list[str], special: list[str]) -> str:
    if not paths and not direct and not special:
        return ""
    parts = []
    if special:
        named = ", ".join(special[:_NAMED])
        parts.append(f"not applied: {named} (pipes, sockets and devices stay in the view)")
    if paths:
        more = f" (+{len(paths) - _NAMED} more)" if len(paths) > _NAMED else ""
        named = ", ".join(paths[:_NAMED]) + more
        parts.append(f"changed {named}: /diff shows them, /undo puts them back")
    if direct:
        where = sorted({next((p for p in r.split("/") if p in DIRECT), r) for r in direct})
        parts.append(
            f"{len(direct)} paths in {', '.join(where[:_NAMED])} copied over as they are "
            "(not undoable)"
        )
    return "; ".join(parts)
