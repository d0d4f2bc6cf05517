"""The agent as an MCP client: the tools of configured MCP servers, offered to the model.

`McpServers` is a `ToolSource` (`liveforge.declarations.toolbox`): the toolbox lists its tools
beside liveforge's own, as ``mcp__SERVER__TOOL`` with the server's input schema, and calls
them through the one permission policy. A tool whose server marks it ``readOnlyHint`` has
the effect ``read`` (it runs unasked in every mode); any other has the effect ``write``
(asked about in ``ask`` and ``auto-edit``, refused in ``read-only``, run in ``full-auto``),
because annotations are hints and only a read-only one is worth trusting.

Servers start lazily, at the first listing of tools, all at once and once per session; a
stdio server gets only the environment its entry names and writes its stderr to
``.liveforge/mcp/NAME.log``. A server that fails to start, or dies later, is reported by name
(`news`, shown by the front ends) and its tools are left out; the others keep working. Calls
have a timeout. `close` stops every server (stdin closed, then SIGTERM, then SIGKILL, as the
MCP SDK does), and is also run at interpreter exit, so no server outlives the session.

The MCP SDK is asynchronous; the toolbox is not. One daemon thread runs an event loop that
holds each server's connection open in a task of its own (the SDK's transports must be
entered and left in one task); calls from any thread are sent to that loop.

    servers = McpServers(load_mcp_config(root), project_root=root)
    toolbox.sources.append(servers)
    ...
    servers.close()
"""

from __future__ import annotations

import asyncio
import contextlib
import functools
import json
import re
import threading
import weakref
from collections.abc import Callable, Coroutine
from dataclasses import dataclass, field
from datetime import timedelta
from pathlib import Path
from typing import TYPE_CHECKING, Any, TextIO, TypeVar

from liveforge.declarations.permissions import Effect, effect
from liveforge.declarations.tool_schema import GivenSchema
from liveforge.declarations.toolbox import Tool, ToolResult
from liveforge.impls.mcp_config import HttpServer, McpConfig, ServerEntry, StdioServer
from liveforge.kernel.files._statefolder import make_parent

if TYPE_CHECKING:
    from mcp import ClientSession, types

__all__ = ["CALL_TIMEOUT", "START_TIMEOUT", "McpServers", "ServerStatus", "tool_name"]

CALL_TIMEOUT = 60.0
"""Seconds a tool call may take unless the server's entry says otherwise."""
START_TIMEOUT = 30.0
"""Seconds a server has to start and list its tools."""
_STOP_TIMEOUT = 6.0
"""Seconds `close` waits for the servers: the SDK gives a stdio server 2 s after closing its
stdin, then terminates it."""
_NAME_LIMIT = 64  # what OpenAI-compatible APIs accept as a tool name
T = TypeVar("T")
_Caller = Callable[[str, dict[str, Any]], ToolResult]


def tool_name(server: str, tool: str) -> str:
    """The name the model sees: ``mcp__SERVER__TOOL`` (characters APIs refuse become ``_``)."""
    return "mcp__" + re.sub(r"[^A-Za-z0-9_-]", "_", f"{server}__{tool}")


@dataclass
class ServerStatus:
    """One server as `liveforge mcp list` shows it."""

    name: str
    transport: str
    target: str
    origin: str
    state: str
    """``not started``, ``starting``, ``ready``, ``failed`` or ``stopped``."""
    error: str = ""
    tools: list[tuple[str, Effect]] = field(default_factory=list)
    log: str = ""

    def describe(self) -> str:
        """Lines for a person: the server, its state (and why), each tool and whether it is
        read-only (runs unasked) or may write (asked about in ``ask`` mode)."""
        head = f"{self.name}  [{self.transport}] {self.target}  — {self.state}"
        head += f": {self.error}" if self.error else ""
        words = {"read": "read-only"}
        lines = [f"  {name} ({words.get(effect, 'may write')})" for name, effect in self.tools]
        return "\n".join([head, *lines])


class _Loop:
    """A daemon thread running one event loop, for the servers' connections."""

    def __init__(self) -> None:
        self.loop = asyncio.new_event_loop()
        self.thread = threading.Thread(target=self.loop.run_forever, name="mcp-client", daemon=True)
        self.thread.start()

    def run(self, coro: Coroutine[Any, Any, T], timeout: float) -> T:
        future = asyncio.run_coroutine_threadsafe(coro, self.loop)
        try:
            return future.result(timeout)
        finally:
            future.cancel()  # a timeout or an interrupted caller: the call stops too

    def stop(self) -> None:
        self.loop.call_soon_threadsafe(self.loop.stop)
        self.thread.join(5)
        if not self.thread.is_alive():
            self.loop.close()


class _Server:
    """One server's connection, held open by a task on the loop."""

    def __init__(
        self, name: str, entry: ServerEntry, root: Path, log_dir: Path, caller: _Caller
    ) -> None:
        self.name, self.entry, self.root = name, entry, root
        self.caller = caller
        """Calls one of this server's tools from any thread (`McpServers.call`)."""
        self.log = log_dir / f"{name}.log"
        self.state = "not started"
        self.error = ""
        self.tools: list[Tool] = []
        self.skipped: list[str] = []
        self.session: ClientSession | None = None
        self._stop: asyncio.Event | None = None
        self._task: asyncio.Task[None] | None = None

    @property
    def timeout(self) -> float:
        return self.entry.timeout or CALL_TIMEOUT

    async def start(self) -> None:
        ready, self._stop = asyncio.Event(), asyncio.Event()
        self.state = "starting"
        self._task = asyncio.create_task(self._hold(ready))
        try:
            await asyncio.wait_for(ready.wait(), START_TIMEOUT)
        except TimeoutError:
            self.fail(f"it did not start and list its tools within {START_TIMEOUT:g} s")
            await self.stop()

    async def _hold(self, ready: asyncio.Event) -> None:
        """Open the connection, list the tools, and keep it open until `stop`."""
        from mcp import ClientSession

        try:
            async with contextlib.AsyncExitStack() as stack:
                read, write = await self._open(stack)
                wait = timedelta(seconds=START_TIMEOUT)
                session = await stack.enter_async_context(
                    ClientSession(read, write, read_timeout_seconds=wait)
                )
                await session.initialize()
                self._list(await _all_tools(session))
                self.session, self.state = session, "ready"
                ready.set()
                assert self._stop is not None
                await self._stop.wait()
        except asyncio.CancelledError:
            pass
        except BaseException as exc:  # any failure is this server's, said by its name
            if self.state in ("starting", "ready"):
                verb = "failed to start" if self.state == "starting" else "stopped working"
                self.fail(f"it {verb}: {_reason(exc)}")
        finally:
            self.session = None
            if self.state == "ready":
                self.state = "stopped"
            ready.set()

    async def _open(self, stack: contextlib.AsyncExitStack) -> tuple[Any, Any]:
        entry = self.entry
        if isinstance(entry, HttpServer):
            from mcp.client.streamable_http import streamable_http_client
            from mcp.shared._httpx_utils import create_mcp_http_client

            http = await stack.enter_async_context(create_mcp_http_client(headers=entry.headers))
            read, write, _ = await stack.enter_async_context(
                streamable_http_client(entry.url, http_client=http)
            )
            return read, write
        from mcp import StdioServerParameters
        from mcp.client.stdio import stdio_client

        assert isinstance(entry, StdioServer)
        make_parent(self.log)  # `.liveforge/` with its `.gitignore`: git status stays clean
        errlog: TextIO = stack.enter_context(self.log.open("a", encoding="utf-8"))
        errlog.write(f"--- liveforge starts: {entry.describe()}\n")
        errlog.flush()
        params = StdioServerParameters(
            command=entry.command,
            args=entry.args,
            env=dict(entry.env),  # merged by the SDK with HOME, PATH, USER, ... only
            cwd=str(self.root / entry.cwd) if entry.cwd else str(self.root),
        )
        read, write = await stack.enter_async_context(stdio_client(params, errlog=errlog))
        return read, write

    def _list(self, listed: list[types.Tool]) -> None:
        self.tools, self.skipped = [], []
        for item in listed:
            name = tool_name(self.name, item.name)
            if len(name) > _NAME_LIMIT:
                self.skipped.append(
                    f"MCP server {self.name!r}: tool {item.name!r} left out: {name} is longer "
                    f"than the {_NAME_LIMIT} characters model APIs accept"
                )
                continue
            self.tools.append(self._tool(name, item))

    def _tool(self, name: str, item: types.Tool) -> Tool:
        hints = item.annotations
        kind: Effect = "read" if hints is not None and hints.readOnlyHint else "write"
        description = item.description or item.title or item.name
        caller, remote = self.caller, item.name

        def call(**arguments: Any) -> ToolResult:
            return caller(remote, arguments)

        call.__name__, call.__doc__ = name, description
        effect(kind)(call)
        text = f"[MCP server {self.name}] {description}"
        return Tool(name, f"mcp:{self.name}", call, GivenSchema.given(name, text, item.inputSchema))

    async def call(self, tool: str, arguments: dict[str, Any]) -> ToolResult:
        session = self.session
        if session is None:
            return ToolResult(self.unavailable(tool), is_error=True)
        try:
            result = await session.call_tool(
                tool, arguments, read_timeout_seconds=timedelta(seconds=self.timeout)
            )
        except Exception as exc:
            reason = _reason(exc).rstrip(".")
            if "Connection closed" in reason or self.session is None:
                self.fail(f"it stopped working: {reason}")
            return ToolResult(
                f"MCP server {self.name!r}: {tool} failed: {reason}. " + _hint(self), is_error=True
            )
        return ToolResult(_text(result), is_error=bool(result.isError))

    def unavailable(self, tool: str) -> str:
        why = self.error or f"it is {self.state}"
        return f"MCP server {self.name!r} cannot run {tool}: {why}. " + _hint(self)

    def fail(self, why: str) -> None:
        self.state, self.error, self.tools = "failed", why, []
        if isinstance(self.entry, StdioServer):
            last = _last_line(self.log)
            self.error += f" (last line of its stderr, in {self.log}: {last})" if last else ""

    async def stop(self) -> None:
        if self._stop is not None:
            self._stop.set()
        if self._task is not None:
            try:
                await asyncio.wait_for(asyncio.shield(self._task), _STOP_TIMEOUT)
            except TimeoutError:
                self._task.cancel()
        if self.state != "failed":
            self.state = "stopped"

    def status(self, origin: str) -> ServerStatus:
        return ServerStatus(
            name=self.name,
            transport=self.entry.type,
            target=self.entry.describe(),
            origin=origin,
            state=self.state,
            error=self.error,
            tools=[(t.name, t.effect) for t in self.tools],
            log=str(self.log) if isinstance(self.entry, StdioServer) else "",
        )


class McpServers:
    """The configured MCP servers of one session, as a source of tools (see the module)."""

    def __init__(self, config: McpConfig, *, project_root: str | Path) -> None:
        root = Path(project_root)
        self.config = config
        logs = root / ".liveforge" / "mcp"
        self._servers = {
            name: _Server(name, entry, root, logs, functools.partial(self.call, name))
            for name, entry in config.servers.items()
        }
        self._lock = threading.Lock()
        self._loop: _Loop | None = None
        self._started = False
        self._closed = False
        self._told: set[str] = set()
        self._finalizer = weakref.finalize(self, _shutdown, self._servers, [None])

    def __bool__(self) -> bool:
        return bool(self._servers or self.config.problems)

    def start(self) -> None:
        """Start every server now (the first `tools` does it otherwise); returns when each
        has listed its tools or failed."""
        with self._lock:
            if self._started or self._closed or not self._servers:
                return
            self._started = True
            missing = _missing_sdk()
            if missing:
                for server in self._servers.values():
                    server.state, server.error = "failed", missing
                return
            self._loop = _Loop()
            self._finalizer.detach()
            self._finalizer = weakref.finalize(self, _shutdown, self._servers, [self._loop])
            servers = list(self._servers.values())
            self._loop.run(_start_all(servers), START_TIMEOUT + _STOP_TIMEOUT + 5)

    def tools(self) -> list[Tool]:
        """Every ready server's tools (starting the servers on first use); none once closed."""
        self.start()
        if self._closed:
            return []
        return [tool for server in self._servers.values() for tool in server.tools]

    def problems(self) -> list[str]:
        """The refused entries, the servers that failed and the tools left out."""
        lines = list(self.config.problems)
        for server in self._servers.values():
            if server.state == "failed":
                lines.append(f"MCP server {server.name!r}: {server.error}; its tools are left out")
            lines += server.skipped
        return lines

    def news(self) -> list[str]:
        """`problems` not returned before."""
        fresh = [line for line in self.problems() if line not in self._told]
        self._told.update(fresh)
        return fresh

    def status(self) -> list[ServerStatus]:
        """Each configured server, its state and tools (refused entries: `problems`)."""
        return [s.status(self.config.origins.get(s.name, "")) for s in self._servers.values()]

    def call(self, server: str, tool: str, arguments: dict[str, Any]) -> ToolResult:
        """Call `tool` of `server` and wait for its result (or its timeout)."""
        target = self._servers[server]
        if self._loop is None or self._closed:
            return ToolResult(target.unavailable(tool), is_error=True)
        try:
            return self._loop.run(target.call(tool, arguments), target.timeout + 5)
        except TimeoutError:
            return ToolResult(
                f"MCP server {server!r}: {tool} did not answer within {target.timeout:g} s. "
                + _hint(target),
                is_error=True,
            )

    def close(self) -> None:
        """Stop every server and the loop; later calls are refused with a message."""
        self._closed = True
        self._finalizer()


async def _start_all(servers: list[_Server]) -> None:
    await asyncio.gather(*(server.start() for server in servers))


def _shutdown(servers: dict[str, _Server], loop: list[_Loop | None]) -> None:
    """Stop the servers and the loop (at `close`, or when the interpreter exits)."""
    runner = loop[0]
    if runner is None:
        return
    try:
        runner.run(_stop_all(list(servers.values())), _STOP_TIMEOUT + 2)
    except (TimeoutError, RuntimeError):
        pass  # the loop is gone already (interpreter shutdown): the children get EOF
    runner.stop()


async def _stop_all(servers: list[_Server]) -> None:
    await asyncio.gather(*(server.stop() for server in servers))


async def _all_tools(session: ClientSession) -> list[types.Tool]:
    """Every page of the server's tool list."""
    found: list[types.Tool] = []
    cursor: str | None = None
    while True:
        page = await session.list_tools(cursor=cursor) if cursor else await session.list_tools()
        found += page.tools
        cursor = page.nextCursor
        if not cursor:
            return found


def _text(result: types.CallToolResult) -> str:
    """A tool result's content as text for the model."""
    parts: list[str] = []
    for block in result.content:
        kind = getattr(block, "type", "")
        if kind == "text":
            parts.append(block.text)  # type: ignore[union-attr]
        elif kind in ("image", "audio"):
            parts.append(f"[{kind} {block.mimeType}, {len(block.data) * 3 // 4} bytes]")  # type: ignore[union-attr]
        elif kind == "resource_link":
            parts.append(f"[resource {block.uri}]")  # type: ignore[union-attr]
        elif kind == "resource":
            resource = block.resource  # type: ignore[union-attr]
            parts.append(getattr(resource, "text", None) or f"[resource {resource.uri}]")
    if not parts and result.structuredContent is not None:
        parts.append(json.dumps(result.structuredContent, ensure_ascii=False))
    return "\n".join(parts) or "(no content)"


def _reason(exc: BaseException) -> str:
    """The innermost, most telling failure of `exc` (task groups wrap them)."""
    while isinstance(exc, BaseExceptionGroup) and exc.exceptions:
        exc = exc.exceptions[0]
    if isinstance(exc, FileNotFoundError) and exc.filename:
        return f"command not found: {exc.filename}"
    message = str(exc) or type(exc).__name__
    return message if type(exc).__name__ in ("McpError",) else f"{type(exc).__name__}: {message}"


def _hint(server: _Server) -> str:
    where = f"its stderr is in {server.log}" if isinstance(server.entry, StdioServer) else ""
    return f"Tell the user which MCP server failed{'; ' + where if where else ''}."


def _last_line(path: Path) -> str:
    try:
        lines = [line for line in path.read_text(errors="replace").splitlines() if line.strip()]
    except OSError:
        return ""
    last = lines[-1] if lines else ""
    return "" if last.startswith("--- liveforge starts") else last[-300:]


def _missing_sdk() -> str:
    try:
        import mcp.client.session  # noqa: F401
    except ImportError:
        # liveforge is on no package index: `liveforge mcp` prints the pip command that
        # installs the extra into the copy of liveforge that runs
        return (
            "the MCP SDK is not installed: it is liveforge's optional `mcp` extra, and "
            "`liveforge mcp` prints the command that installs it for this liveforge"
        )
    return ""
