"""`liveforge memory ...`: the agent's memories of a project, as plain data to look at and fix.

liveforge memory list                     newest first: #id [tags] text
liveforge memory search WORDS...          best match first
liveforge memory show ID                  one memory in full
liveforge memory add TEXT [--tag T]...    write one yourself
liveforge memory edit ID TEXT [--tag T]   replace its text (and tags)
liveforge memory rm ID...                 delete
"""

from __future__ import annotations

import argparse
import datetime
from typing import Any

from liveforge.cli._common import (
    CommandError,
    ExitCode,
    add_common,
    emit,
    examples,
    project_dir,
)
from liveforge.declarations.memory import Memory, MemoryItem, MemoryNotFound, memory_path

__all__ = ["register"]


def register(commands: Any) -> None:
    """Add `memory` and its sub-commands to the `liveforge` sub-command set."""
    parser = commands.add_parser(
        "memory",
        help="list, search, show, add, edit and delete the agent's memories of the project",
        description="The agent's memories of --project (kept in .liveforge/memory.sqlite).",
        epilog=examples(
            "  liveforge memory list\n"
            "  liveforge memory search release steps\n"
            '  liveforge memory add "tests need the local Redis on 6380"\n'
            "  liveforge memory rm 3 7\n"
        ),
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    actions = parser.add_subparsers(dest="action", metavar="ACTION", required=True)
    listing = _action(actions, "list", "memories, newest first")
    listing.add_argument("--limit", type=int, default=50, help="how many (default 50)")
    search = _action(actions, "search", "memories matching words, best first")
    search.add_argument("query", nargs="+", help="words to look for")
    search.add_argument("--limit", type=int, default=10, help="how many (default 10)")
    show = _action(actions, "show", "one memory in full")
    show.add_argument("id", type=int, help="the memory's number (#N in the list)")
    add = _action(actions, "add", "write a memory yourself")
    add.add_argument("text", help="the memory's text")
    add.add_argument("--tag", action="append", default=[], help="a tag (repeatable)")
    edit = _action(actions, "edit", "replace a memory's text")
    edit.add_argument("id", type=int, help="the memory's number")
    edit.add_argument("text", help="the new text")
    edit.add_argument("--tag", action="append", help="replace the tags (repeatable)")
    remove = _action(actions, "rm", "delete memories")
    remove.add_argument("ids", type=int, nargs="+", metavar="ID", help="memory numbers")
    for sub in (listing, search, show, add, edit, remove):
        add_common(sub)
        sub.set_defaults(handler=_memory)


EXAMPLES = {
    "list": """\
  liveforge memory list                       newest first: #id [tags] text
  liveforge memory list --limit 5 --json
""",
    "search": """\
  liveforge memory search release steps       best match first
  liveforge memory search redis --limit 3
""",
    "show": """\
  liveforge memory show 3                     text, tags, when written and changed
""",
    "add": """\
  liveforge memory add "tests need the local Redis on 6380" --tag tests
  liveforge memory add "release: bump the version in pyproject.toml first"
""",
    "edit": """\
  liveforge memory edit 3 "tests need the local Redis on 6381"
  liveforge memory edit 3 "run make docs before a release" --tag release --tag docs
""",
    "rm": """\
  liveforge memory rm 3                       delete #3
  liveforge memory rm 3 7                     delete both, or neither if one is unknown
""",
}


def _action(actions: Any, name: str, text: str) -> argparse.ArgumentParser:
    """One `memory` sub-command, with its examples in --help."""
    parser: argparse.ArgumentParser = actions.add_parser(
        name,
        help=text,
        description=text[0].upper() + text[1:] + ".",
        epilog=examples(EXAMPLES[name]),
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    return parser


def _open(args: argparse.Namespace) -> Memory:
    import liveforge.impls  # noqa: F401  (registers the Memory bodies)
    from liveforge.config import load_config

    root = project_dir(args)
    settings = load_config(root).tools.memory
    return Memory(path=memory_path(root, settings), settings=settings)


def _memory(args: argparse.Namespace) -> int:
    memory = _open(args)
    try:
        items = _act(memory, args)
    except MemoryNotFound as exc:
        raise CommandError(
            f"no memory #{exc.memory_id}; `liveforge memory list` shows them.",
            exit_code=ExitCode.FAILED,
        ) from None
    except ValueError as exc:
        raise CommandError(str(exc)) from None
    full = args.action == "show"
    text = "\n".join(_full(i) if full else i.line() for i in items)
    if not items:
        text = "no memories" if args.action != "search" else "no memories match"
    elif args.action in ("add", "edit", "rm"):
        verb = {"add": "remembered", "edit": "changed", "rm": "deleted"}[args.action]
        text = "\n".join(f"{verb} {i.line()}" for i in items)
    payload = {
        "ok": True,
        "command": "memory",
        "action": args.action,
        "project": str(project_dir(args)),
        "memories": [i.model_dump(exclude_none=True) for i in items],
    }
    emit(args, payload, text)
    return ExitCode.OK


def _act(memory: Memory, args: argparse.Namespace) -> list[MemoryItem]:
    action = args.action
    if action == "list":
        return memory.items(args.limit)
    if action == "search":
        return memory.search(" ".join(args.query), args.limit)
    if action == "show":
        return [memory.get(args.id)]
    if action == "add":
        return [memory.write(args.text, args.tag)]
    if action == "edit":
        return [memory.edit(args.id, args.text, args.tag)]
    for memory_id in args.ids:  # every id must exist before anything is deleted
        memory.get(memory_id)
    return [memory.forget(memory_id) for memory_id in args.ids]


def _full(item: MemoryItem) -> str:
    def when(stamp: float) -> str:
        return datetime.datetime.fromtimestamp(stamp).isoformat(sep=" ", timespec="seconds")

    tags = ", ".join(item.tags) or "-"
    return (
        f"#{item.id}\ntags: {tags}\ncreated: {when(item.created)}\n"
        f"updated: {when(item.updated)}\n\n{item.text}"
    )
