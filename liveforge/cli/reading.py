"""`liveforge inspect`, `view` and `find`: read the program by dotted path (one-shot).

Each runs the catalogue tool of the same purpose (inspect_module, view_source, find) on a
fresh runtime over `--project`, so the text is exactly what a model would see; `inspect`
and `view` take `--patch TARGET=FILE` to show the program with a change made in memory. With
`--json` the same facts come as data (`_structured`): a tree, numbered lines, a list of hits.
"""

from __future__ import annotations

import argparse
from typing import Any

from liveforge.cli._common import (
    CommandError,
    ExitCode,
    add_common,
    emit,
    examples,
    project_dir,
    run_structured,
    run_tool,
)
from liveforge.cli._patches import add_patch_option

__all__ = ["register"]


EXAMPLES_INSPECT = """\
  liveforge inspect                               the project's packages
  liveforge inspect pricing.cart --depth 3
  liveforge inspect pricing --json                a tree of objects
  liveforge inspect pricing.cart --patch pricing.cart.Line.subtotal=fix.py
                                                  the tree with that change (marked *)
"""


EXAMPLES_VIEW = """\
  liveforge view pricing.cart.Line.subtotal
  liveforge view pricing.cart --start 10 --end 40
  liveforge view pricing.cart.Line.subtotal --patch pricing.cart.Line.subtotal=fix.py --json
                                                  the patched lines, origin "memory"
"""


EXAMPLES_FIND = """\
  liveforge find subtotal
  liveforge find Line.subtotal --kind function --json
"""


def register(commands: Any) -> None:
    """Add the reading commands to the `liveforge` sub-command set."""
    inspect = commands.add_parser(
        "inspect",
        help="tree of packages, modules, classes and functions",
        description="Show the tree under a dotted path (the project's packages when omitted).",
        epilog=examples(EXAMPLES_INSPECT),
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    inspect.add_argument("path", nargs="?", default="", help="dotted path, e.g. pkg.mod")
    inspect.add_argument("--depth", type=int, default=2, help="levels to expand (default 2)")
    add_patch_option(inspect, then="show the tree")
    add_common(inspect)
    inspect.set_defaults(handler=_inspect)

    view = commands.add_parser(
        "view",
        help="in-memory source of a module, class or function",
        description="Show the source of a dotted path with line numbers.",
        epilog=examples(EXAMPLES_VIEW),
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    view.add_argument("path", help="dotted path, e.g. pkg.mod.Class.method")
    view.add_argument("--start", type=int, help="first line to show")
    view.add_argument("--end", type=int, help="last line to show")
    add_patch_option(view, then="show the source")
    add_common(view)
    view.set_defaults(handler=_view)

    find = commands.add_parser(
        "find",
        help="find definitions by name",
        description="Find definitions by name or dotted tail across the project.",
        epilog=examples(EXAMPLES_FIND),
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    find.add_argument("query", help="a name or dotted tail, e.g. area or Square.area")
    find.add_argument(
        "--kind",
        choices=["class", "function", "module", "variable"],
        help="only this kind of definition",
    )
    add_common(find)
    find.set_defaults(handler=_find)


def _inspect(args: argparse.Namespace) -> int:
    if args.json:
        from liveforge.cli._structured import inspect_tree

        return run_structured(args, lambda rt: {"tree": inspect_tree(rt, args.path, args.depth)})
    return run_tool(
        args,
        "inspect_module",
        {"path": args.path, "depth": args.depth},
        {"path": args.path, "depth": args.depth},
    )


def _view(args: argparse.Namespace) -> int:
    if args.json:
        from liveforge.cli._structured import source_lines

        return run_structured(
            args, lambda rt: {"source": source_lines(rt, args.path, args.start, args.end)}
        )
    arguments = {"path": args.path, "start": args.start, "end": args.end}
    return run_tool(
        args,
        "view_source",
        {k: v for k, v in arguments.items() if v is not None},
        {"path": args.path},
    )


def _find(args: argparse.Namespace) -> int:
    """Answer from the index kept under `.liveforge/index/` (no runtime, no import of the
    project): only files changed since the last command are read again."""
    from liveforge.kernel.source._roots import discover
    from liveforge.tools._find import hits, query_problem, render, search
    from liveforge.tools._index import stored_index

    problem = query_problem(args.query)
    if problem is not None:
        raise CommandError(problem + ".")
    root = project_dir(args)
    index = stored_index(discover(root), root)
    found = search(index, args.query, args.kind)
    payload = {
        "ok": True,
        "command": "find",
        "project": str(root),
        "query": args.query,
        "kind": args.kind,
        "hits": hits(found, index),
    }
    problems = index.problems()
    payload["problems"] = [{"file": path, "problem": what} for path, what in problems]
    emit(args, payload, render(found, args.query, args.kind, problems))
    return ExitCode.OK
