"""`liveforge acp`: run as an Agent Client Protocol agent over stdio, for editors (see
liveforge.acp). The editor starts it; each session's cwd is its project."""

from __future__ import annotations

import argparse
from typing import Any

from liveforge.cli._common import ExitCode, add_mode, chosen_mode, examples

__all__ = ["register"]


EXAMPLES_ACP = """\
  liveforge acp                       (from an editor's agent settings, e.g. Zed's agent_servers)
  liveforge acp --mode auto-edit      patches to the running program without a question
"""


def register(commands: Any) -> None:
    """Add `acp` to the `liveforge` sub-command set."""
    parser = commands.add_parser(
        "acp",
        help="serve editors as an ACP agent over stdio (Zed and other ACP clients)",
        description="An Agent Client Protocol agent over stdin/stdout: the editor opens "
        "sessions on its project (one live program per project, shared by its sessions), "
        "sends prompts, sees message chunks and tool calls with their diffs, answers "
        "permission questions and cancels turns; it lists the project's liveforge sessions "
        "and loads, resumes or forks them (docs/mcp-and-acp.md). Needs the optional ACP "
        "SDK (liveforge's `acp` extra; without it the command says how to install it).",
        epilog=examples(EXAMPLES_ACP),
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument("--model", help="provider:model for every session (default: configured)")
    add_mode(parser, yes=False)
    parser.set_defaults(handler=_serve)


def _serve(args: argparse.Namespace) -> int:
    from liveforge.acp import require_acp, serve_stdio

    require_acp()
    serve_stdio(mode=chosen_mode(args), model=args.model)
    return ExitCode.OK
