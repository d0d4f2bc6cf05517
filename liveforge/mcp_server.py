"""The tool catalogue as an MCP server over stdio: other agents drive one live Runtime.

One server process holds one `Runtime` over the project and one `Toolbox` over it, so state
carries across calls: a patch made by one call is what the next call sees, verifies and
persists. Tool definitions are the Toolbox's own specs (name, description, JSON schema),
read afresh on every `tools/list`, so tools the agent adds in memory appear without a restart
(clients are told with `notifications/tools/list_changed`). Calls run one at a time in a
worker thread, leaving the event loop free to answer pings during long sandbox runs. The
values of key-like environment variables are redacted from results, as from transcripts.

Needs the `mcp` extra (`pip install "liveforge[mcp]"`); mcp 1.x is pinned because 2.x
renames the server API.

    liveforge mcp --project path/to/project
"""

from __future__ import annotations

import threading
from typing import TYPE_CHECKING, Any

import liveforge
from liveforge.agent_setup import known_secrets, open_toolbox
from liveforge.impls.session_store import scrub_text, secret_values
from liveforge.kernel.errors import ConfigError

if TYPE_CHECKING:
    from mcp.server.lowlevel import Server

    from liveforge.declarations.toolbox import Toolbox
    from liveforge.kernel import Runtime

__all__ = ["MISSING_MCP", "build_server", "require_mcp", "serve_stdio"]

MISSING_MCP = (
    "`liveforge mcp` needs the MCP SDK, which is an optional extra: install it with "
    'pip install "liveforge[mcp]"'
)
INSTRUCTIONS = (
    "liveforge: a live Python runtime. Address code by dotted path (pkg.mod.Class.method). "
    "inspect_module and view_source read the in-memory program; patch changes it in memory "
    "(later calls see the change); verify and run_tests check it in a sandbox; persist writes "
    "verified changes to files; rollback undoes."
)


def require_mcp() -> None:
    """Raise a configuration error naming the extra to install when the MCP SDK is missing."""
    try:
        import mcp.server.lowlevel  # noqa: F401
    except ImportError as exc:
        raise ConfigError(MISSING_MCP) from exc


def build_server(rt: Runtime) -> Server[Any, Any]:
    """An MCP server exposing the Toolbox over `rt` (not yet connected to a transport)."""
    require_mcp()
    import anyio.to_thread
    from mcp import types
    from mcp.server.lowlevel import Server

    toolbox = open_toolbox(rt)
    secrets = secret_values(known_secrets(None))
    server: Server[Any, Any] = Server(
        "liveforge", version=liveforge.__version__, instructions=INSTRUCTIONS
    )
    one_at_a_time = threading.Lock()
    known: list[set[str]] = [set()]

    @server.list_tools()
    async def list_tools() -> list[types.Tool]:
        specs = await anyio.to_thread.run_sync(toolbox.specs)
        known[0] = {spec.name for spec in specs}
        return [
            types.Tool(name=spec.name, description=spec.description, inputSchema=spec.input_schema)
            for spec in specs
        ]

    @server.call_tool(validate_input=False)
    async def call_tool(name: str, arguments: dict[str, Any]) -> types.CallToolResult:
        result = await anyio.to_thread.run_sync(_call, toolbox, one_at_a_time, name, arguments)
        names = await anyio.to_thread.run_sync(_names, toolbox)
        if known[0] and names != known[0]:
            known[0] = names
            await server.request_context.session.send_tool_list_changed()
        text = scrub_text(result[0], secrets)  # key values never leave for another agent
        return types.CallToolResult(
            content=[types.TextContent(type="text", text=text)], isError=result[1]
        )

    return server


def _call(
    toolbox: Toolbox, lock: threading.Lock, name: str, arguments: dict[str, Any]
) -> tuple[str, bool]:
    with lock:
        result = toolbox.call(name, arguments)
    return result.text, result.is_error


def _names(toolbox: Toolbox) -> set[str]:
    return {spec.name for spec in toolbox.specs()}


def serve_stdio(rt: Runtime) -> None:
    """Serve `rt`'s tools over stdin/stdout until the client disconnects."""
    server = build_server(rt)
    import anyio
    from mcp.server.stdio import stdio_server

    async def _main() -> None:
        async with stdio_server() as (read, write):
            await server.run(
                read,
                write,
                server.create_initialization_options(notification_options=_notifications()),
            )

    anyio.run(_main)


def _notifications() -> Any:
    from mcp.server.lowlevel import NotificationOptions

    return NotificationOptions(tools_changed=True)
