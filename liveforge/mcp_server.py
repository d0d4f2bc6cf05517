"""The tool catalogue as an MCP server over stdio: other agents drive one live Runtime.

One server process holds one `Runtime` over the project and one `Toolbox` over it, so state
carries across calls: a patch made by one call is what the next call sees, verifies and
persists. Tool definitions are the Toolbox's own specs (name, description, JSON schema),
read afresh on every `tools/list`, so tools the agent adds in memory appear without a restart
(clients are told with `notifications/tools/list_changed`). Calls run one at a time in a
worker thread, leaving the event loop free to answer pings during long sandbox runs. The
values of key-like environment variables are redacted from results, as from transcripts.

Each tool carries MCP annotations derived from its effect (`readOnlyHint`,
`destructiveHint`, `idempotentHint`, `openWorldHint`), so a client knows which calls to ask
its user about. The permission policy still applies on this side: `--mode read-only`
refuses every call that is not a look or a check; in `ask` and `auto-edit` a call the
client sent counts as approved by the client's user.

Needs the `mcp` extra (`missing_mcp()` says how to install it); mcp 1.x is pinned because 2.x
renames the server API.

    liveforge mcp --project path/to/project [--mode read-only]
"""

from __future__ import annotations

import sys
import threading
from typing import TYPE_CHECKING, Any

import liveforge
from liveforge.agent_setup import known_secrets, open_toolbox
from liveforge.impls.session_store import scrub_text, secret_values
from liveforge.installed import pip_install
from liveforge.kernel.errors import ConfigError

if TYPE_CHECKING:
    from mcp import types
    from mcp.server.lowlevel import Server

    from liveforge.declarations.permissions import ApprovalRequest, Effect, Policy
    from liveforge.declarations.toolbox import Toolbox
    from liveforge.kernel import Runtime

__all__ = ["build_server", "missing_mcp", "require_mcp", "serve_stdio", "tool_annotations"]


def missing_mcp() -> str:
    """What to do when the MCP SDK is missing: install this liveforge's `mcp` extra."""
    return (
        "`liveforge mcp` needs the MCP SDK, which is an optional extra of liveforge: install "
        f"it with `{pip_install('mcp', python=sys.executable)}`, then run the command again."
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
        raise ConfigError(missing_mcp()) from exc


#: effect -> (readOnlyHint, destructiveHint, idempotentHint, openWorldHint)
_HINTS: dict[str, tuple[bool, bool, bool, bool]] = {
    "read": (True, False, True, False),
    "check": (True, False, True, False),
    "memory": (False, False, False, False),
    "write": (False, True, False, False),
    "execute": (False, True, False, True),
    "shell": (False, True, False, True),
    "unbounded": (False, True, False, True),
}


def tool_annotations(effect: Effect) -> types.ToolAnnotations:
    """The MCP annotations of a tool with this effect."""
    from mcp import types

    read_only, destructive, idempotent, open_world = _HINTS[effect]
    return types.ToolAnnotations(
        readOnlyHint=read_only,
        destructiveHint=destructive,
        idempotentHint=idempotent,
        openWorldHint=open_world,
    )


def _client_approved(request: ApprovalRequest) -> bool:
    """MCP clients ask their user before a call they send; the call is that approval."""
    return True


def build_server(rt: Runtime, policy: Policy | None = None) -> Server[Any, Any]:
    """An MCP server exposing the Toolbox over `rt` under `policy` (default: ask, answered
    by the client), not yet connected to a transport."""
    require_mcp()
    import anyio.to_thread
    from mcp import types
    from mcp.server.lowlevel import Server

    toolbox = open_toolbox(rt, policy=policy, approver=_client_approved)
    secrets = secret_values(known_secrets(None))
    server: Server[Any, Any] = Server(
        "liveforge", version=liveforge.__version__, instructions=INSTRUCTIONS
    )
    one_at_a_time = threading.Lock()
    known: list[set[str]] = [set()]

    @server.list_tools()
    async def list_tools() -> list[types.Tool]:
        tools = await anyio.to_thread.run_sync(toolbox.tools)
        known[0] = {tool.name for tool in tools}
        return [
            types.Tool(
                name=tool.name,
                description=tool.schema.description,
                inputSchema=tool.schema.input_schema,
                annotations=tool_annotations(tool.effect),
            )
            for tool in tools
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


def serve_stdio(rt: Runtime, policy: Policy | None = None) -> None:
    """Serve `rt`'s tools over stdin/stdout under `policy` until the client disconnects."""
    server = build_server(rt, policy)
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
