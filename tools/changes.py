"""Changing the live program: patch, reload, roll back, and review what changed.

Every change is applied in memory at once, recorded, and reversible; files change only
through ``persist``. Results are compact: what was added (+), updated (~) and removed (-),
and any note about object identity (e.g. a function that had to be rebound).
"""

from __future__ import annotations

from liveforge.declarations.permissions import effect
from liveforge.kernel import Change
from liveforge.kernel.errors import NotProjectCode, NotProjectModule
from liveforge.tools._context import runtime, service
from liveforge.tools._output import clip

__all__ = ["diff", "history", "patch", "persist", "reload", "rollback"]


@effect("memory")
def patch(path: str, source: str, module: bool = False, outside_project: bool = False) -> str:
    """Replace one definition, or a whole module, in the running program (memory only).

    A declared forwardpy method patches its active @impl body; a missing name is added at
    the end of its module or class. Modules that are not the project's own code (standard
    library, site-packages) are refused unless outside_project.

    Args:
        path: dotted target: pkg.mod.func, pkg.mod.Class.method, or pkg.mod
        source: the complete new definition (or module source), unindented
        module: path is a module: replace its whole source, or create it in memory
        outside_project: the user wants a module outside the project's code patched
            (standard library, site-packages); it changes liveforge's own process too
    """
    rt = runtime()
    try:
        if module:
            change = rt.patch_module(path, source, outside_project=outside_project)
        else:
            change = rt.patch(path, source, outside_project=outside_project)
    except NotProjectModule as exc:
        raise exc.with_advice(
            "Patch it only if the user asked for it: call patch again with "
            "outside_project=true (or the user sets outside_project = true under "
            "[tool.liveforge] in pyproject.toml)."
        ) from None
    return _applied(change)


@effect("memory")
def reload(module: str, force: bool = False) -> str:
    """Re-read a module from its file and apply it in place (names other modules imported
    from it with `from ... import` are re-bound too).

    Args:
        module: dotted module name
        force: drop the module's unpersisted in-memory changes
    """
    return _applied(runtime().reload(module, force=force))


@effect("memory")
def rollback(change_id: str | None = None) -> str:
    """Undo your newest change, or change_id with the later changes of its module.

    Args:
        change_id: id shown by patch/history (e.g. c3); omit for your newest change (other
            sessions working on this program keep theirs)
    """
    own = service("own_changes")
    if change_id is None and callable(own):
        mine = own()
        if not mine:
            return "nothing to roll back: no change of yours is in effect (history lists all)"
        change_id = mine[-1]
    rt = runtime()
    undone = rt.rollback(change_id)
    # each change's own line, then what the rollback could not take back (the notes of the
    # patch it undid are history now)
    return "rolled back:\n" + "\n".join(
        change.summary().splitlines()[0] + "".join(f"\n  note: {n}" for n in change.rollback_notes)
        for change in undone
    )


@effect("read")
def history(limit: int = 20) -> str:
    """Recorded changes, newest last: id, kind, target, status, names touched.

    Args:
        limit: how many of the newest changes to list
    """
    changes = runtime().history()
    if not changes:
        return "no changes yet"
    shown = changes[-limit:] if limit > 0 else []
    skipped = len(changes) - len(shown)
    head = [f"({skipped} older changes not shown; pass a larger limit)"] if skipped else []
    return "\n".join(head + [_line(change) for change in shown])


@effect("read")
def diff(module: str | None = None) -> str:
    """Unified diff of in-memory source against the files (what persist would write), and
    of the files written this session (write_file, edit_file, apply_patch).

    Args:
        module: one module; omit for every changed module and written file
    """
    text = runtime().diff(module) + ("" if module else runtime().written_diff())
    if not text:
        return f"{module}: memory matches disk" if module else "no changes"
    return clip(text, None, lambda n: "ask for one module at a time: diff(module)")


@effect("write")
def persist(modules: list[str] | None = None, force: bool = False) -> str:
    """Write changed modules' in-memory source to their files, all or nothing.

    Refuses changes with no passing verify/run_tests since their last edit, divergent
    changes (the live process and a fresh import disagreed on a check), and files changed
    on disk since they were loaded, unless force.

    Args:
        modules: dotted module names; omit for every changed module
        force: write unverified or divergent changes, or over files changed on disk
    """
    try:
        return runtime().persist(modules, force=force).summary()
    except NotProjectCode as exc:
        raise exc.with_advice(
            "Only the user can allow it: adding {folder} to allow_paths under "
            "[tool.liveforge] in pyproject.toml."
        ) from None


def _line(change: Change) -> str:
    first, *notes = change.summary().splitlines()
    return first + "".join(f" ({n.strip()})" for n in notes)


def _applied(change: Change) -> str:
    if not change.id:  # a reload that found the file equal to memory records nothing
        return f"{change.target}: nothing changed ({'; '.join(change.notes)})"
    verb = "created" if change.before is None else "applied"
    return f"{verb} {change.summary()}\nin memory only: verify or run_tests, then persist"
