"""`liveforge serve`: the gateway over HTTP and WebSocket (see liveforge.gateway)."""

from __future__ import annotations

import argparse
import os
from typing import Any

from liveforge.cli._common import CommandError, ExitCode, add_mode, chosen_mode, project_dir

__all__ = ["register"]

MISSING = (
    "`liveforge serve` needs the gateway's optional packages: "
    'pip install "liveforge[serve]" (from a checkout: pip install -e ".[serve]")'
)


def register(commands: Any) -> None:
    """Add `serve` to the `liveforge` sub-command set."""
    parser = commands.add_parser(
        "serve",
        help="serve the project over HTTP and WebSocket (gateway and web UI)",
        description="The gateway: one live runtime for --project, many sessions, the JSON "
        "protocol at /ws and a web UI at /. Loopback only unless LIVEFORGE_GATEWAY_TOKEN "
        "is set.",
        epilog="example: liveforge serve --project . --port 8765   (then open the printed URL)",
    )
    parser.add_argument("--project", default=".", help="project folder (default: current)")
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
    add_mode(parser)
    parser.set_defaults(handler=_serve, json=False)


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
        raise CommandError(MISSING) from None
    from liveforge.gateway import serve
    from liveforge.gateway.serving import TOKEN_VARIABLE

    serve(
        project_dir(args),
        host=args.host,
        port=args.port,
        token=os.environ.get(TOKEN_VARIABLE, ""),
        allowed_origins=tuple(args.allow_origin),
        mode=chosen_mode(args) or "",
    )
    return ExitCode.OK
