"""The ACP agent: editors' sessions on liveforge agents over one live program per project.

    initialize          protocol version 1; sessions can be loaded, listed, resumed,
                        forked and closed; prompts take text, resource links and embedded
                        text resources; MCP servers over stdio and HTTP
    session/new         cwd is the project; the agent is built as `liveforge chat` builds it
                        (the project's model, tools, permissions), on the project's one
                        `Runtime`, shared by all its sessions (as the gateway shares it)
    session/load        a liveforge session (its id as `liveforge chat --resume` takes it):
                        its conversation is sent back as message chunks, its unpersisted
                        changes are applied again
    session/list        the project's sessions (the cwd's), newest first, 50 a page: id,
                        cwd, title (the first prompt, shortened), last activity; sessions
                        with no message yet and sub-agents' sessions are left out
    session/resume      as session/load, without sending the conversation back: the model
                        gets the whole of it (compactions included) at the next prompt
    session/fork        a new session whose conversation (and title) is a copy of the
                        given one's; prompts in either do not reach the other
    session/close       ends the session (its turn, its MCP servers, its transcript)
    session/prompt      one turn: message chunks, tool calls and their diffs as they happen
                        (the first one also a session_info_update with the session's title);
                        the stop reason (end_turn, max_turn_requests, cancelled)
    session/cancel      stops the turn as Ctrl-C does: open tool calls are closed
    session/set_mode    the permission mode (read-only, ask, auto-edit, full-auto)

Errors are JSON-RPC errors whose message says what happened and what to do: an unknown
session id (-32002, with how to list them), a session whose turn another process is running
(the project's turn lock: which process), a cwd that is not a folder.

Every call the permission policy asks about becomes a `session/request_permission` with
allow once / always (for this session) / reject once / always, and the preview (a diff, the
code to run) as its content. MCP servers the editor offers join those of `.mcp.json`.
"""

from __future__ import annotations

import asyncio
import base64
import binascii
import concurrent.futures
import json
import textwrap
import threading
from dataclasses import dataclass, field, replace
from datetime import UTC, datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any

from acp import (
    PROTOCOL_VERSION,
    InitializeResponse,
    LoadSessionResponse,
    NewSessionResponse,
    PromptResponse,
    RequestError,
    SetSessionModeResponse,
    start_tool_call,
    text_block,
    tool_content,
    update_agent_message_text,
    update_tool_call,
    update_user_message_text,
)
from acp.interfaces import Client
from acp.schema import (
    AgentCapabilities,
    AuthenticateResponse,
    CloseSessionResponse,
    ForkSessionResponse,
    Implementation,
    ListSessionsResponse,
    McpCapabilities,
    PermissionOption,
    PermissionOptionKind,
    PromptCapabilities,
    ResumeSessionResponse,
    SessionCapabilities,
    SessionCloseCapabilities,
    SessionForkCapabilities,
    SessionInfoUpdate,
    SessionListCapabilities,
    SessionMode,
    SessionModeState,
    SessionResumeCapabilities,
    StopReason,
    ToolCallUpdate,
)
from acp.schema import SessionInfo as AcpSessionInfo

import liveforge
from liveforge.acp.updates import ToolCalls, title, tool_kind
from liveforge.declarations.agent import Agent
from liveforge.declarations.permissions import MODES, ApprovalRequest, Mode, Policy, Rules
from liveforge.kernel import Runtime
from liveforge.kernel.errors import ConfigError

if TYPE_CHECKING:
    from liveforge.declarations.session import SessionInfo

__all__ = ["PAGE_SIZE", "LiveforgeAcpAgent"]

PAGE_SIZE = 50
"""Sessions in one page of `session/list` (`nextCursor` leads to the next)."""
_TITLE_WIDTH = 60
_NOT_FOUND = -32002  # ACP's "resource not found"
_FAILED = -32603

_STOP: dict[str, StopReason] = {
    "answer": "end_turn",
    "turn_limit": "max_turn_requests",
    "runaway": "end_turn",
    "error": "end_turn",
    "cancelled": "cancelled",
}
_MODE_WORDS = {
    "read-only": "Look and check only; nothing is changed.",
    "ask": "Ask before changing the program, files, or running code.",
    "auto-edit": "Patch the running program freely; ask before files and code.",
    "full-auto": "Run everything inside the check boundary without asking.",
}
_OPTIONS: list[tuple[str, str, PermissionOptionKind]] = [
    ("allow_once", "Allow once", "allow_once"),
    ("allow_always", "Always allow {tool} in this session", "allow_always"),
    ("reject_once", "Reject", "reject_once"),
    ("reject_always", "Always reject {tool} in this session", "reject_always"),
]


@dataclass
class _Session:
    agent: Agent
    calls: ToolCalls
    pending: set[concurrent.futures.Future[bool]] = field(default_factory=set)
    stopping: bool = False
    """A cancel came for the running prompt (perhaps before its turn began)."""
    notice: str = ""
    """Said before the next prompt's answer: what resuming re-applied, and how."""


class LiveforgeAcpAgent:
    """An ACP agent (the SDK's `acp.interfaces.Agent`) serving liveforge sessions.

    `mode` (default: the project's `[tool.liveforge.permissions]`) and `model` (default: the
    configured one) apply to every session it creates."""

    def __init__(self, *, mode: Mode | None = None, model: str | None = None) -> None:
        self.mode, self.model = mode, model
        self.conn: Client | None = None
        self.sessions: dict[str, _Session] = {}
        self.runtimes: dict[Path, Runtime] = {}
        self.loop: asyncio.AbstractEventLoop | None = None
        self._loop_thread = 0

    def on_connect(self, conn: Client) -> None:
        """Keep the connection to the editor (`session/update`, permission requests)."""
        self.conn = conn

    async def initialize(self, protocol_version: int, **_: Any) -> InitializeResponse:
        """What this agent speaks and supports."""
        self.loop = asyncio.get_running_loop()
        self._loop_thread = threading.get_ident()
        return InitializeResponse(
            protocol_version=min(protocol_version, PROTOCOL_VERSION),
            agent_capabilities=AgentCapabilities(
                load_session=True,
                prompt_capabilities=PromptCapabilities(embedded_context=True),
                mcp_capabilities=McpCapabilities(http=True, sse=False),
                session_capabilities=SessionCapabilities(
                    list=SessionListCapabilities(),
                    resume=SessionResumeCapabilities(),
                    fork=SessionForkCapabilities(),
                    close=SessionCloseCapabilities(),
                ),
            ),
            agent_info=Implementation(
                name="liveforge", title="liveforge", version=liveforge.__version__
            ),
            auth_methods=[],
        )

    async def authenticate(self, method_id: str, **_: Any) -> AuthenticateResponse:
        """Keys come from the environment; there is nothing to authenticate."""
        return AuthenticateResponse()

    async def new_session(
        self, cwd: str, mcp_servers: list[Any] | None = None, **_: Any
    ) -> NewSessionResponse:
        """A new liveforge session on the project at `cwd`."""
        session = await self._open(cwd, None, mcp_servers or [])
        return NewSessionResponse(session_id=session.agent.session.id, modes=_modes(session))

    async def load_session(
        self, cwd: str, session_id: str, mcp_servers: list[Any] | None = None, **_: Any
    ) -> LoadSessionResponse:
        """Resume liveforge session `session_id`; its conversation is sent as updates."""
        session = self.sessions.get(session_id) or await self._open(
            cwd, session_id, mcp_servers or []
        )
        for update in _replay(session.agent):
            await self._send(session.agent.session.id, update)
        if session.notice:
            await self._send(session_id, update_agent_message_text(session.notice))
            session.notice = ""
        return LoadSessionResponse(modes=_modes(session))

    async def list_sessions(
        self, cwd: str | None = None, cursor: str | None = None, **_: Any
    ) -> ListSessionsResponse:
        """The sessions of the project at `cwd` (default: this process's projects), newest
        first, a page at a time; sub-agents' sessions and ones with no message are left out."""
        import liveforge.impls  # noqa: F401  (registers the Session bodies)
        from liveforge.declarations.session import Session

        roots = [_root(cwd)] if cwd else list(dict.fromkeys([Path.cwd(), *self.runtimes]))
        rows = [
            (root, info)
            for root in roots
            for info in await asyncio.to_thread(Session.list_sessions, root)
            if info.messages and not info.parent
        ]
        rows.sort(key=lambda row: (row[1].updated, row[1].id), reverse=True)
        if cursor:
            after = _read_cursor(cursor)
            rows = [row for row in rows if (row[1].updated, row[1].id) < after]
        page = rows[:PAGE_SIZE]
        more = len(rows) > PAGE_SIZE
        return ListSessionsResponse(
            sessions=[_listed(root, info) for root, info in page],
            next_cursor=_cursor(page[-1][1]) if more else None,
        )

    async def resume_session(
        self, cwd: str, session_id: str, mcp_servers: list[Any] | None = None, **_: Any
    ) -> ResumeSessionResponse:
        """Reopen liveforge session `session_id` without sending its conversation back; the
        model gets the whole of it at the next prompt."""
        session = self.sessions.get(session_id) or await self._open(
            cwd, session_id, mcp_servers or []
        )
        return ResumeSessionResponse(modes=_modes(session))

    async def fork_session(
        self, cwd: str, session_id: str, mcp_servers: list[Any] | None = None, **_: Any
    ) -> ForkSessionResponse:
        """A new session whose conversation starts as a copy of `session_id`'s. Open here,
        the original's unpersisted changes stay its own (the program is shared already); a
        session not open here brings them along, re-applied as a resume does."""
        from liveforge.declarations.session import sessions_dir
        from liveforge.impls.session_store import fork_transcript

        root, source = _root(cwd), self.sessions.get(session_id)
        _check_id(session_id)
        if source is not None and source.agent.session.open_turn:
            raise RequestError(
                _FAILED,
                f"session {session_id} is in a turn; fork it once the turn has ended (or "
                "cancel the turn first).",
                {"sessionId": session_id},
            )
        try:
            fork_id = await asyncio.to_thread(
                fork_transcript, root, session_id, changes=source is None
            )
        except Exception as exc:
            raise _error(exc, session_id, root) from None
        try:
            session = await self._open(cwd, fork_id, mcp_servers or [])
        except BaseException:
            (sessions_dir(root) / f"{fork_id}.jsonl").unlink(missing_ok=True)  # no half fork
            raise
        if source is not None:  # the same permissions, "always" answers included
            session.agent.toolbox.policy = source.agent.toolbox.policy
        return ForkSessionResponse(session_id=fork_id, modes=_modes(session))

    async def set_session_mode(
        self, mode_id: str, session_id: str, **_: Any
    ) -> SetSessionModeResponse:
        """Switch the session's permission mode."""
        session = self._session(session_id)
        if mode_id not in MODES:
            raise _invalid(f"unknown mode {mode_id!r}; the modes are {', '.join(MODES)}")
        toolbox = session.agent.toolbox
        toolbox.policy = replace(toolbox.policy, mode=mode_id)
        return SetSessionModeResponse()

    async def prompt(self, prompt: list[Any], session_id: str, **_: Any) -> PromptResponse:
        """Run one turn; stream its events; say why it stopped."""
        from liveforge.declarations.session import SessionBusy

        session = self._session(session_id)
        session.stopping = False
        reason = "error"
        if session.notice:
            await self._send(session_id, update_agent_message_text(session.notice))
            session.notice = ""
        untitled = not session.agent.session.title
        try:
            async for event in session.agent.run(_prompt_text(prompt)):
                if session.stopping:  # a cancel that came before the turn began
                    session.agent.cancel()
                if untitled and session.agent.session.title:  # the first prompt names it
                    untitled = False
                    await self._send(session_id, _titled(session.agent.session.title))
                for update in session.calls.updates(event):
                    await self._send(session_id, update)
                if event.type == "turn_ended":
                    reason = event.reason
        except SessionBusy as exc:
            raise _error(exc, session_id, session.agent.runtime.project_root) from None
        return PromptResponse(stop_reason=_STOP[reason])

    async def cancel(self, session_id: str, **_: Any) -> None:
        """Stop the session's turn; a question it is waiting on counts as rejected."""
        session = self.sessions.get(session_id)
        if session is None:
            return
        session.stopping = True
        session.agent.cancel()
        for future in list(session.pending):
            future.cancel()

    async def close_session(self, session_id: str, **_: Any) -> CloseSessionResponse:
        """End one session: its turn, its MCP servers, its transcript."""
        session = self.sessions.pop(session_id, None)
        if session is not None:
            session.agent.cancel()
            await session.agent.aclose()
        return CloseSessionResponse()

    async def close(self) -> None:
        """End every session: its MCP servers, its transcript; then the runtimes."""
        for session in list(self.sessions.values()):
            await session.agent.aclose()
        self.sessions.clear()
        for runtime in self.runtimes.values():
            runtime.close()

    # -- building sessions ------------------------------------------------------------------

    async def _open(self, cwd: str, resume: str | None, offered: list[Any]) -> _Session:
        from liveforge.declarations.session import SessionError

        root = _root(cwd)
        if resume is not None:
            _check_id(resume)
        holder: list[_Session] = []
        try:
            agent = await asyncio.to_thread(self._build, root, resume, offered, holder)
        except SessionError as exc:
            raise _error(exc, resume or "", root) from None
        except (ConfigError, ValueError, LookupError) as exc:
            raise RequestError(_FAILED, f"{exc}", {"message": f"{exc}"}) from None
        session = _Session(agent, ToolCalls(agent))
        if agent.session.live.restored:
            lines = "\n".join(f"- {line}" for line in agent.session.live.restored)
            heading = "_This session's unpersisted changes, on reopening it:_"
            session.notice = f"{heading}\n{lines}\n\n"
        holder.append(session)
        self.sessions[agent.session.id] = session
        return session

    def _build(
        self, root: Path, resume: str | None, offered: list[Any], holder: list[Any]
    ) -> Agent:
        from liveforge.agent_setup import build_agent
        from liveforge.config import build_provider, load_config
        from liveforge.impls.mcp_client import McpServers
        from liveforge.impls.mcp_config import load_mcp_config

        config = load_config(root)
        if self.model:
            config = config.model_copy(update={"model": self.model, "fallback_models": []})
        runtime = self.runtimes.get(root)
        if runtime is None:
            runtime = Runtime(project_root=root, check_settings=config.sandbox.settings(root))
            self.runtimes[root] = runtime
        servers = load_mcp_config(root)
        _add_offered(servers, offered)
        return build_agent(
            root,
            resume=resume,
            provider=build_provider(config),
            runtime=runtime,
            settings=config.agent_settings(),
            context=config.context,
            policy=config.permissions.policy(self.mode),
            approver=lambda request: self._approve(holder, request),
            tool_sources=[McpServers(servers, project_root=root)],
        )

    def _session(self, session_id: str) -> _Session:
        session = self.sessions.get(session_id)
        if session is None:
            raise RequestError(
                _NOT_FOUND,
                f"session {session_id!r} is not open in this liveforge agent: open it with "
                "session/resume or session/load first (session/list gives the project's "
                "sessions).",
                {"sessionId": session_id},
            )
        return session

    async def _send(self, session_id: str, update: Any) -> None:
        assert self.conn is not None
        await self.conn.session_update(session_id=session_id, update=update)

    # -- permission questions ---------------------------------------------------------------

    def _approve(self, holder: list[_Session], request: ApprovalRequest) -> bool:
        """The policy asks (in the tool worker): the editor's person answers."""
        loop = self.loop
        if loop is None or not holder or threading.get_ident() == self._loop_thread:
            return False  # nobody to ask, or asked on the loop that would carry the answer
        session = holder[0]
        future = asyncio.run_coroutine_threadsafe(self._ask(session, request), loop)
        session.pending.add(future)
        try:
            return future.result()
        except concurrent.futures.CancelledError:
            return False  # the turn was cancelled while the question was open
        finally:
            session.pending.discard(future)

    async def _ask(self, session: _Session, request: ApprovalRequest) -> bool:
        assert self.conn is not None
        sid = session.agent.session.id
        call = session.calls.current
        if not call:  # a question outside a tool call (a persist made by executed code)
            call = f"question-{id(request)}"
            await self._send(sid, start_tool_call(call, request.tool, status="pending"))
        kind = tool_kind(request.tool, request.effect)
        preview = f"```diff\n{request.preview}\n```" if request.preview else request.tool
        response = await self.conn.request_permission(
            session_id=sid,
            tool_call=ToolCallUpdate(
                tool_call_id=call,
                title=f"{title(request.tool, request.arguments)} ({request.effect})",
                kind=kind,
                status="pending",
                content=[tool_content(text_block(preview))],
                raw_input=request.arguments,
            ),
            options=[
                PermissionOption(option_id=oid, name=name.format(tool=request.tool), kind=k)
                for oid, name, k in _OPTIONS
            ],
        )
        outcome = response.outcome
        choice = getattr(outcome, "option_id", "") if outcome.outcome == "selected" else ""
        _remember(session.agent, request.tool, choice)
        allowed = choice.startswith("allow")
        await self._send(sid, update_tool_call(call, status="in_progress" if allowed else None))
        return allowed


def _root(cwd: str) -> Path:
    """The project folder `cwd` names; an error the editor shows when there is none."""
    root = Path(cwd).expanduser().resolve()
    if not root.is_dir():
        raise _invalid(f"cwd {cwd!r} is not a folder")
    return root


def _check_id(session_id: str) -> None:
    """A session id is a file name in the project's sessions folder, never a path."""
    if not session_id or Path(session_id).name != session_id or session_id.startswith("."):
        raise _invalid(f"{session_id!r} is not a liveforge session id (see session/list)")


def _invalid(text: str) -> RequestError:
    """An "invalid params" error whose message is `text` (what editors show)."""
    return RequestError(-32602, text, {"message": text})


def _error(exc: BaseException, session_id: str, root: Path) -> RequestError:
    """A session's problem as the JSON-RPC error the editor shows: its message is the
    sentence, its data the particulars."""
    from liveforge.declarations.session import SessionBusy, SessionError

    if isinstance(exc, SessionBusy):
        data = {"sessionId": exc.session_id or session_id, "holderPid": exc.holder_pid}
        return RequestError(_FAILED, str(exc), data)
    if isinstance(exc, SessionError) and not Path(exc.path or "/").exists():
        return RequestError(
            _NOT_FOUND,
            f"no liveforge session {session_id!r} in {root}: session/list gives this "
            "project's sessions (the editor's history of liveforge threads; `liveforge chat` "
            "lists them with /sessions).",
            {"sessionId": session_id, "cwd": str(root)},
        )
    return RequestError(_FAILED, f"{exc}", {"sessionId": session_id})


def _listed(root: Path, info: SessionInfo) -> AcpSessionInfo:
    """One row of `session/list`; liveforge's own particulars go under `_meta`."""
    return AcpSessionInfo(
        session_id=info.id,
        cwd=str(root),
        title=_short(info.title),
        updated_at=datetime.fromtimestamp(info.updated, UTC).isoformat(),
        field_meta={
            "liveforge": {
                "turns": info.turns,
                "state": info.state,
                "unpersistedChanges": info.unpersisted,
            }
        },
    )


def _short(title: str) -> str:
    """`title` in at most `_TITLE_WIDTH` characters, cut at a word where it can be."""
    short = textwrap.shorten(title, _TITLE_WIDTH, placeholder=" …")
    if short.strip(" …"):
        return short
    return title[: _TITLE_WIDTH - 1] + "…"  # one long word


def _titled(title: str) -> SessionInfoUpdate:
    """The update that gives the editor a new session's title (as session/list has it)."""
    return SessionInfoUpdate(
        session_update="session_info_update",
        title=_short(title),
        updated_at=datetime.now(UTC).isoformat(),
    )


def _cursor(info: SessionInfo) -> str:
    """An opaque cursor: the next page holds what is older than this row."""
    raw = json.dumps([info.updated, info.id]).encode()
    return base64.urlsafe_b64encode(raw).decode()


def _read_cursor(cursor: str) -> tuple[float, str]:
    try:
        updated, session_id = json.loads(base64.urlsafe_b64decode(cursor.encode()))
        return float(updated), str(session_id)
    except (ValueError, TypeError, binascii.Error):
        raise _invalid(
            f"cursor {cursor!r} is not one session/list gave; list from the start"
        ) from None


def _remember(agent: Agent, tool: str, choice: str) -> None:
    """An "always" answer becomes a rule of this session's policy."""
    policy: Policy = agent.toolbox.policy
    rules = policy.rules
    if choice == "allow_always":
        rules = Rules(allow=(*rules.allow, tool), ask=rules.ask, deny=rules.deny)
    elif choice == "reject_always":
        rules = Rules(allow=rules.allow, ask=rules.ask, deny=(*rules.deny, tool))
    agent.toolbox.policy = replace(policy, rules=rules)


def _add_offered(config: Any, offered: list[Any]) -> None:
    """The editor's MCP servers, as `.mcp.json` entries (an offered name wins)."""
    from liveforge.impls.mcp_config import parse_servers

    entries: dict[str, Any] = {}
    for server in offered:
        data = server.model_dump(by_alias=False)
        name = str(data.get("name", "?"))
        if "command" in data:
            env = {item["name"]: item["value"] for item in data.get("env") or []}
            entries[name] = {"command": data["command"], "args": data["args"], "env": env}
        elif "url" in data:
            headers = {item["name"]: item["value"] for item in data.get("headers") or []}
            entries[name] = {"type": data.get("type"), "url": data["url"], "headers": headers}
        else:  # a transport liveforge does not speak: said, with the name
            entries[name] = {"type": data.get("type", "unknown")}
    # the editor's values are literal: nothing in them is a ${VAR} to fill in
    parse_servers(entries, None, config, origin="the editor")


def _modes(session: _Session) -> SessionModeState:
    return SessionModeState(
        current_mode_id=session.agent.toolbox.policy.mode,
        available_modes=[
            SessionMode(id=mode, name=mode, description=_MODE_WORDS[mode]) for mode in MODES
        ],
    )


def _prompt_text(blocks: list[Any]) -> str:
    """The user's input: text, resource links by their URI, embedded texts with theirs."""
    parts: list[str] = []
    for block in blocks:
        kind = getattr(block, "type", "")
        if kind == "text":
            parts.append(block.text)
        elif kind == "resource_link":
            parts.append(f"@{block.uri}")
        elif kind == "resource":
            resource = block.resource
            text = getattr(resource, "text", None)
            parts.append(f"\n{resource.uri}:\n```\n{text}\n```\n" if text else f"@{resource.uri}")
        else:
            parts.append(f"[{kind} content is not supported by liveforge; left out]")
    return "\n".join(parts)


def _replay(agent: Agent) -> list[Any]:
    """The session's conversation as the updates a live session would have sent."""
    updates: list[Any] = []
    effects = {tool.name: tool.effect for tool in agent.toolbox.tools()}
    for message in agent.session.messages:
        for block in message.content:
            kind = getattr(block, "type", "")
            if kind == "text" and message.role == "user":
                updates.append(update_user_message_text(block.text))  # type: ignore[union-attr]
            elif kind == "text" and message.role == "assistant":
                updates.append(update_agent_message_text(block.text))  # type: ignore[union-attr]
            elif kind == "tool_use":
                name, args = block.name, block.input  # type: ignore[union-attr]
                updates.append(
                    start_tool_call(
                        block.id,  # type: ignore[union-attr]
                        title(name, args),
                        kind=tool_kind(name, effects.get(name, "execute")),
                        status="completed",
                        raw_input=args,
                    )
                )
    return updates
