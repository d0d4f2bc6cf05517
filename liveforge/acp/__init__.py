"""`liveforge acp`: liveforge as an Agent Client Protocol agent over stdio (Zed and others).

An editor starts ``liveforge acp`` and speaks JSON-RPC over its stdin/stdout, through the
maintained Python SDK (`agent-client-protocol`, imported as ``acp``; liveforge's ``acp``
extra). `LiveforgeAcpAgent` (``agent.py``) holds the sessions; ``updates.py`` turns the
agent's events into session updates. Standard output belongs to the protocol: anything else
written to file descriptor 1 (a print in the program, a child process) goes to stderr.

    liveforge acp [--mode ask] [--model anthropic:claude-sonnet-4-5]
"""

from __future__ import annotations

import asyncio
import os
import sys
from typing import TYPE_CHECKING, Any, cast

from liveforge.installed import pip_install
from liveforge.kernel.errors import ConfigError

if TYPE_CHECKING:
    from liveforge.declarations.permissions import Mode

__all__ = ["missing_acp", "require_acp", "serve_stdio"]


def missing_acp() -> str:
    """What to do when the ACP SDK is missing: install this liveforge's `acp` extra."""
    return (
        "`liveforge acp` needs the Agent Client Protocol SDK, an optional extra of liveforge: "
        f"install it with `{pip_install('acp', python=sys.executable)}`, then run it again."
    )


def require_acp() -> None:
    """Raise a configuration error naming the extra to install when the SDK is missing."""
    try:
        import acp  # noqa: F401
    except ImportError as exc:
        raise ConfigError(missing_acp()) from exc


def serve_stdio(*, mode: Mode | None = None, model: str | None = None) -> None:
    """Serve ACP on stdin/stdout until the editor closes the connection."""
    require_acp()
    channel = os.fdopen(os.dup(1), "wb", buffering=0)
    os.dup2(2, 1)  # stray writes to fd 1 would corrupt the protocol: they go to stderr
    sys.stdout = sys.stderr
    asyncio.run(_serve(channel, mode, model))


async def _serve(channel: Any, mode: Mode | None, model: str | None) -> None:
    import acp.interfaces
    from acp import run_agent
    from acp.stdio import stdio_streams

    from liveforge.acp.agent import LiveforgeAcpAgent

    agent = LiveforgeAcpAgent(mode=mode, model=model)
    saved, sys.stdout = sys.stdout, channel
    try:
        reader, writer = await stdio_streams(limit=50 * 1024 * 1024)
    finally:
        sys.stdout = saved
    try:
        # the SDK's router answers "method not found" for the optional methods left out;
        # session/resume, session/fork and session/close are routed only with the SDK's
        # unstable protocol switched on
        await run_agent(
            cast("acp.interfaces.Agent", agent), writer, reader, use_unstable_protocol=True
        )
    finally:
        await agent.close()
