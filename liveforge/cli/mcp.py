"""`liveforge mcp`: serve the tool catalogue to MCP clients over stdio (see mcp_server).

`--mode` narrows what clients may run (`--mode read-only`: look and check only); the
client's own approval of each call answers the questions of `ask` and `auto-edit`."""

from __future__ import annotations

import argparse
from typing import Any

from liveforge.cli._common import (
    ExitCode,
    add_common,
    add_mode,
    chosen_mode,
    examples,
    open_runtime,
)

__all__ = ["register"]


EXAMPLES_MCP = """\
  liveforge mcp --project /abs/path/to/project    (from an MCP client's configuration)
"""


def register(commands: Any) -> None:
    """Add `mcp` to the `liveforge` sub-command set."""
    parser = commands.add_parser(
        "mcp",
        help="serve the tool catalogue as an MCP server over stdio",
        description="An MCP server over stdio: one live runtime over --project for the whole "
        "session, so a patch made in one call is seen by the next. Needs the optional "
        "MCP SDK (liveforge's `mcp` extra; without it the command says how to install it).",
        epilog=examples(EXAMPLES_MCP),
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument(
        "--allow-kernel-patches",
        action="store_true",
        help="let clients patch liveforge.kernel itself (off by default)",
    )
    add_mode(parser, yes=False)
    add_common(parser, json_flag=False)
    parser.set_defaults(handler=_serve)


def _serve(args: argparse.Namespace) -> int:
    from liveforge.config import load_config
    from liveforge.mcp_server import require_mcp, serve_stdio

    require_mcp()
    with open_runtime(args) as rt:
        rt.allow_kernel_patches = args.allow_kernel_patches
        policy = load_config(rt.project_root).permissions.policy(chosen_mode(args))
        serve_stdio(rt, policy)
    return ExitCode.OK
