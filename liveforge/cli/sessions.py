"""`liveforge history` and `liveforge diff`: the changes a chat session holds (one-shot).

A chat (or `run`) session keeps its changes in its transcript under `.liveforge/sessions/`;
what it did not persist lives only in memory, and `liveforge chat --resume ID` applies it
again. These commands read the transcript without opening the session (nothing is written,
a chat running in it is not disturbed): `history` lists its changes, `diff` shows the modules
as the session left them in memory against their files now.
"""

from __future__ import annotations

import argparse
import difflib
from pathlib import Path
from typing import TYPE_CHECKING, Any

from liveforge.cli._common import ExitCode, add_common, emit, examples, project_dir

if TYPE_CHECKING:
    from liveforge.declarations.session import ChangeRecord, Session
    from liveforge.kernel.source._roots import ImportRoots

__all__ = ["register"]

EXAMPLES_HISTORY = """\
  liveforge history                               the latest session's changes
  liveforge history --resume 20250101-120000-ab12 --json
"""

EXAMPLES_DIFF = """\
  liveforge diff                                  what the latest session holds in memory
  liveforge diff --resume 20250101-120000-ab12    that session's (ids: /sessions in chat)
"""


def register(commands: Any) -> None:
    """Add `history` and `diff` to the `liveforge` sub-command set."""
    history = commands.add_parser(
        "history",
        help="the changes of a chat session, from its transcript",
        description="List the changes a chat or run session made (newest last), with their "
        "status: applied, verified, persisted, rolled back, superseded (applied again on a "
        "resume). Nothing is written to the session.",
        epilog=examples(EXAMPLES_HISTORY),
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    _session_arg(history)
    add_common(history)
    history.set_defaults(handler=_history)

    diff = commands.add_parser(
        "diff",
        help="what a chat session holds in memory, against the files",
        description="Show, as a unified diff, each module a session changed and did not "
        "persist, as the session left it in memory, against its file now. `liveforge chat "
        "--resume ID` applies those changes again. Nothing is written.",
        epilog=examples(EXAMPLES_DIFF),
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    _session_arg(diff)
    add_common(diff)
    diff.set_defaults(handler=_diff)


def _session_arg(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--resume",
        metavar="ID",
        default="latest",
        help="the session (default: the latest; the ids are in chat's /sessions)",
    )


def _session(args: argparse.Namespace) -> Session:
    from liveforge.impls.session_store import read_session

    return read_session(project_dir(args), args.resume)


def _history(args: argparse.Namespace) -> int:
    session = _session(args)
    rows = [_row(record) for record in session.changes]
    text = "\n".join(
        f"{row['change_id']:>4}  {row['status']:<11} {row['kind']} {row['target']}"
        + ("  (a change to liveforge itself)" if row["self_patch"] else "")
        for row in rows
    )
    payload = {
        "ok": True,
        "command": "history",
        "project": str(session.root),
        "session_id": session.id,
        "changes": rows,
    }
    emit(args, payload, f"session {session.id}\n" + (text or "no changes"))
    return ExitCode.OK


def _row(record: ChangeRecord) -> dict[str, Any]:
    return {
        "key": record.key,
        "change_id": record.change_id,
        "target": record.target,
        "module": record.module,
        "kind": record.kind,
        "status": record.status,
        "live": record.live,
        "self_patch": record.self_patch,
    }


def _diff(args: argparse.Namespace) -> int:
    from liveforge.kernel.source._roots import discover

    session = _session(args)
    roots = discover(session.root)
    live: dict[str, list[ChangeRecord]] = {}
    for record in session.changes:
        if record.live and record.kind != "reload":
            live.setdefault(record.module, []).append(record)
    chunks, notes = [], []
    for module, records in live.items():
        path = _module_file(roots, module)
        disk = path.read_text(encoding="utf-8") if path is not None else None
        label = str(path.relative_to(session.root)) if path is not None else module
        chunks.append(_unified(disk or "", records[-1].after, label, new=disk is None))
        if disk != records[0].before:
            notes.append(
                f"{label} changed since the session's first change to {module}; a resume "
                "applies the changes again by definition, or says they no longer apply"
            )
    diff = "".join(chunks)
    payload = {
        "ok": True,
        "command": "diff",
        "project": str(session.root),
        "session_id": session.id,
        "modules": list(live),
        "diff": diff,
        "notes": notes,
    }
    text = diff.rstrip("\n") or f"session {session.id} holds no unpersisted changes"
    emit(args, payload, "\n".join([text, *(f"note: {n}" for n in notes)]))
    return ExitCode.OK


def _unified(before: str, after: str, label: str, *, new: bool) -> str:
    return "".join(
        difflib.unified_diff(
            before.splitlines(keepends=True),
            after.splitlines(keepends=True),
            "/dev/null" if new else f"a/{label}",
            f"b/{label}",
        )
    )


def _module_file(roots: ImportRoots, module: str) -> Path | None:
    """The file of `module` under the project's import roots (None: only in memory)."""
    parts = module.split(".")
    bases = [
        (folder, parts[len(name.split(".")) :])
        for name, folder in roots.packages.items()
        if module == name or module.startswith(name + ".")
    ]
    bases += [(base, parts) for base in roots.paths]
    for base, rest in bases:
        package = base.joinpath(*rest, "__init__.py")
        candidates = [package, base.joinpath(*rest).with_suffix(".py")] if rest else [package]
        found = next((path for path in candidates if path.is_file()), None)
        if found is not None:
            return found
    return None
