"""`liveforge serve`: the gateway over HTTP and WebSocket (see liveforge.gateway)."""

from __future__ import annotations

import argparse
import os
import sys
from typing import Any

from liveforge.cli._common import (
    CommandError,
    ExitCode,
    add_mode,
    chosen_mode,
    examples,
    project_dir,
)

__all__ = ["register"]


def register(commands: Any) -> None:
    """Add `serve` to the `liveforge` sub-command set."""
    parser = commands.add_parser(
        "serve",
        help="serve the project over HTTP and WebSocket (gateway and web UI)",
        description="The gateway: one live runtime per --project, many sessions, the JSON "
        "protocol at /ws and a web UI at /. Loopback only unless LIVEFORGE_GATEWAY_TOKEN "
        "is set.",
        epilog=examples(
            "  liveforge serve --project .                  then open the printed URL\n"
            "  liveforge serve --port 0 --mode auto-edit    any free port; patches need no yes\n"
            "  liveforge serve --project shop --project api=../backend   two projects\n"
            "  LIVEFORGE_GATEWAY_TOKEN=s3cret liveforge serve --host 0.0.0.0\n"
        ),
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument(
        "--project",
        action="append",
        default=argparse.SUPPRESS,  # none after the command: the one before it, or "."
        metavar="[NAME=]DIR",
        help="a project folder (default: current); repeat to serve several, each with its own "
        "worker and live runtime (named after the folder, or NAME)",
    )
    parser.add_argument(
        "--host", default="127.0.0.1", help="address to listen on (default loopback)"
    )
    parser.add_argument("--port", type=_port, default=8765, help="port (0 picks a free one)")
    parser.add_argument(
        "--allow-origin",
        action="append",
        default=[],
        metavar="ORIGIN",
        help="a browser origin allowed besides the gateway's own (repeatable)",
    )
    parser.add_argument(
        "--allow-host",
        action="append",
        default=[],
        metavar="NAME",
        help="a name the gateway answers to besides loopback names and --host, e.g. the "
        "machine's name behind a proxy (repeatable; needs LIVEFORGE_GATEWAY_TOKEN); requests "
        "addressed to any other name are refused",
    )
    add_mode(parser)
    parser.set_defaults(handler=_serve)


def _port(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"not a port number: {text!r}") from None
    if not 0 <= value <= 65535:
        raise argparse.ArgumentTypeError(f"port {value} is outside 0-65535")
    return value


def _serve(args: argparse.Namespace) -> int:
    try:
        import starlette  # noqa: F401
        import uvicorn  # noqa: F401
    except ImportError:
        from liveforge.installed import pip_install

        raise CommandError(
            "`liveforge serve` needs the gateway's optional packages: install them with "
            f"`{pip_install('serve', python=sys.executable)}`, then run the command again."
        ) from None
    from liveforge.gateway import serve
    from liveforge.gateway.hub import project_names
    from liveforge.gateway.serving import TOKEN_VARIABLE

    try:
        given = args.project  # a list after the command, one folder before it
        projects = project_names(given if isinstance(given, list) else [given])
    except ValueError as exc:
        raise CommandError(str(exc)) from None
    for _name, folder in projects:
        project_dir(argparse.Namespace(project=str(folder)))  # a usage error if not a folder
    serve(
        projects,
        host=args.host,
        port=args.port,
        token=os.environ.get(TOKEN_VARIABLE, ""),
        allowed_origins=tuple(args.allow_origin),
        allowed_hosts=tuple(args.allow_host),
        mode=chosen_mode(args) or "",
    )
    return ExitCode.OK
