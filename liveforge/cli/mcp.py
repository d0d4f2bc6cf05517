"""`liveforge mcp`: MCP both ways — serve the tool catalogue (`mcp serve`, or `mcp` alone, see
mcp_server), and list the MCP servers the agent uses (`mcp list`, see impls/mcp_client).

`--mode` narrows what clients of `mcp serve` may run (`--mode read-only`: look and check
only); the client's own approval of each call answers the questions of `ask` and
`auto-edit`. `mcp list` starts each server of `.mcp.json` (and the user's `mcp.json`) once,
shows its state and tools, and stops it; the exit code is 1 when one failed."""

from __future__ import annotations

import argparse
from typing import Any

from liveforge.cli._common import (
    ExitCode,
    add_common,
    add_mode,
    chosen_mode,
    emit,
    examples,
    open_runtime,
    project_dir,
)

__all__ = ["register"]


EXAMPLES_MCP = """\
  liveforge mcp --project /abs/path/to/project    (from an MCP client's configuration)
  liveforge mcp serve --mode read-only            the same, looking and checking only
  liveforge mcp list                              the MCP servers the agent uses, their tools
"""

EXAMPLES_SERVE = """\
  liveforge mcp serve --project ~/src/shop        serve the live runtime over stdio
  liveforge mcp serve --mode read-only            looking and checking only
"""

EXAMPLES_LIST = """\
  liveforge mcp list                              each server of .mcp.json: state and tools
  liveforge mcp list --json                       the same as one JSON object
"""


def register(commands: Any) -> None:
    """Add `mcp` (with `serve` and `list`) to the `liveforge` sub-command set."""
    parser = commands.add_parser(
        "mcp",
        help="serve the tool catalogue over MCP (stdio); list the agent's MCP servers",
        description="An MCP server over stdio: one live runtime over --project for the whole "
        "session, so a patch made in one call is seen by the next. `mcp list` shows the MCP "
        "servers the agent itself uses (.mcp.json). Needs the optional MCP SDK (liveforge's "
        "`mcp` extra; without it the command says how to install it).",
        epilog=examples(EXAMPLES_MCP),
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    _serve_options(parser)
    parser.set_defaults(handler=_serve)
    actions = parser.add_subparsers(dest="mcp_command", metavar="ACTION")
    serve = actions.add_parser(
        "serve",
        help="serve the tool catalogue as an MCP server over stdio (the default)",
        description="An MCP server over stdio on one live runtime over --project.",
        epilog=examples(EXAMPLES_SERVE),
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    _serve_options(serve)
    serve.set_defaults(handler=_serve)
    listing = actions.add_parser(
        "list",
        help="the MCP servers the agent uses (.mcp.json): state and tools",
        description="Start each MCP server of the project's .mcp.json and the user's "
        "mcp.json once, show whether it works and its tools (read-only: runs unasked; may "
        "write: asked about in ask mode), then stop it. Exit code 1 when a server failed.",
        epilog=examples(EXAMPLES_LIST),
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    add_common(listing)
    listing.set_defaults(handler=_list)


def _serve_options(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--allow-kernel-patches",
        action="store_true",
        help="let clients patch liveforge.kernel itself (off by default)",
    )
    add_mode(parser, yes=False)
    add_common(parser, json_flag=False)


def _serve(args: argparse.Namespace) -> int:
    from liveforge.config import load_config
    from liveforge.mcp_server import require_mcp, serve_stdio

    require_mcp()
    with open_runtime(args, long_lived=True) as rt:
        rt.allow_kernel_patches = args.allow_kernel_patches
        policy = load_config(rt.project_root).permissions.policy(chosen_mode(args))
        serve_stdio(rt, policy)
    return ExitCode.OK


def _list(args: argparse.Namespace) -> int:
    from liveforge.impls.mcp_client import McpServers
    from liveforge.impls.mcp_config import PROJECT_FILE, load_mcp_config, user_file

    root = project_dir(args)
    servers = McpServers(load_mcp_config(root), project_root=root)
    try:
        servers.start()
        found = servers.status()
    finally:
        servers.close()
    problems = servers.config.problems
    failed = [s.name for s in found if s.state != "ready"]
    payload: dict[str, Any] = {
        "ok": not failed and not problems,
        "command": "mcp list",
        "project": str(root),
        "servers": [
            {
                "name": s.name,
                "transport": s.transport,
                "target": s.target,
                "origin": s.origin,
                "state": s.state,
                "error": s.error,
                "log": s.log,
                "tools": [{"name": name, "effect": effect} for name, effect in s.tools],
            }
            for s in found
        ],
        "problems": problems,
    }
    if not payload["ok"]:
        payload["error"] = {
            "type": "McpServerFailed",
            "message": "; ".join([*(f"{n} failed" for n in failed), *problems]),
            "exit_code": int(ExitCode.CHECK_FAILED),
        }
    lines = [s.describe() for s in found] + [f"! {line}" for line in problems]
    if not found and not problems:
        lines = [f"no MCP servers: list them in {root / PROJECT_FILE} or {user_file()}"]
    emit(args, payload, "\n".join(lines))
    return ExitCode.OK if payload["ok"] else ExitCode.CHECK_FAILED
