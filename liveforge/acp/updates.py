"""The agent's events as ACP session updates: message chunks, tool calls and their diffs.

    TextDelta            agent_message_chunk
    Thinking, Compacted  agent_thought_chunk
    Notice, ErrorEvent   agent_message_chunk (a line of its own)
    ToolStarted          tool_call (status in_progress, kind from the tool's effect,
                         a file tool's diff as diff content)
    PatchApplied         tool_call_update: the module's file before and after, as a diff
    VerificationResult   tool_call_update: the check's headline as text
    ToolFinished         tool_call_update (completed or failed, the result's first lines)
    Cancelled            tool_call_update (failed, "cancelled") for every call left open

The ACP kinds: a look is ``read`` (``search`` for find and references), a change in memory or
to files is ``edit``, running code, checks and shells are ``execute``.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from acp import (
    start_tool_call,
    text_block,
    tool_content,
    tool_diff_content,
    update_agent_message_text,
    update_agent_thought_text,
    update_tool_call,
)
from acp.schema import ToolCallLocation, ToolCallStatus, ToolKind

from liveforge.declarations.agent import Agent, AgentEvent

__all__ = ["ToolCalls", "tool_kind"]

_KINDS: dict[str, ToolKind] = {
    "read": "read",
    "memory": "edit",
    "write": "edit",
    "check": "execute",
    "execute": "execute",
    "shell": "execute",
    "unbounded": "execute",
}
_SEARCH = ("find", "references", "memory_search")


def tool_kind(name: str, effect: str) -> ToolKind:
    """The ACP kind of a call of tool `name`, whose effect is `effect`."""
    return "search" if name in _SEARCH else _KINDS.get(effect, "other")


class ToolCalls:
    """Turns one session's events into ACP updates; knows the call now running.

    A call's changes (`PatchApplied`) and checks (`VerificationResult`) follow its
    `ToolFinished`, so they go to the newest call; since an update's ``content`` replaces
    what the call shows, each update carries all of it: diffs, then texts."""

    def __init__(self, agent: Agent) -> None:
        self.agent = agent
        self.current = ""
        """The id of the call that is running (a permission request belongs to it)."""
        self.last = ""
        """The id of the newest call (its changes and checks come after it finished)."""
        self.open: set[str] = set()
        self.shown: dict[str, tuple[list[Any], list[Any]]] = {}
        """What each call shows: its diffs and its texts."""

    def updates(self, event: AgentEvent) -> list[Any]:
        """The session updates `event` makes (none for the turn's bookkeeping events)."""
        kind = event.type
        if kind == "text_delta":
            return [update_agent_message_text(event.text)]  # type: ignore[union-attr]
        if kind == "thinking":
            return [update_agent_thought_text(event.text)]  # type: ignore[union-attr]
        if kind == "notice":
            return [update_agent_message_text(f"\n\n_{event.text}_\n\n")]  # type: ignore[union-attr]
        if kind == "error":
            text = f"\n\n**error ({event.error_type})**: {event.message}\n"  # type: ignore[union-attr]
            return [update_agent_message_text(text)]
        if kind == "compacted":
            return [update_agent_thought_text("compacted older turns to fit the context")]
        handler = getattr(self, f"_on_{kind}", None)
        return handler(event) if handler is not None else []

    def _on_tool_started(self, event: Any) -> list[Any]:
        effects = {tool.name: tool.effect for tool in self.agent.toolbox.tools()}
        kind = tool_kind(event.name, effects.get(event.name, "execute"))
        self.current = self.last = event.call_id
        self.open.add(event.call_id)
        diffs, locations = self._file_diff(event.name, event.arguments)
        self.shown[event.call_id] = (diffs, [])
        return [
            start_tool_call(
                event.call_id,
                title(event.name, event.arguments),
                kind=kind,
                status="in_progress",
                content=diffs or None,
                locations=locations,
                raw_input=event.arguments,
            )
        ]

    def _show(self, call: str, *, diff: Any = None, text: str = "") -> Any:
        diffs, texts = self.shown.setdefault(call, ([], []))
        if diff is not None:
            diffs.append(diff)
        if text:
            texts.append(tool_content(text_block(text)))
        return [*diffs, *texts]

    def _on_patch_applied(self, event: Any) -> list[Any]:
        change = next((c for c in self.agent.runtime.history() if c.id == event.change_id), None)
        if change is None or not self.last:
            return []
        path = change.filename or f"{change.module} (in memory)"
        diff = tool_diff_content(path, change.after, change.before)
        return [
            update_tool_call(
                self.last,
                content=self._show(self.last, diff=diff),
                locations=[ToolCallLocation(path=path)] if change.filename else None,
            )
        ]

    def _on_verification(self, event: Any) -> list[Any]:
        if not self.last:
            return []
        state = "passed" if event.ok else "failed"
        text = f"{event.kind} {event.run_id} {state}: {event.headline}"
        return [update_tool_call(self.last, content=self._show(self.last, text=text))]

    def _on_tool_finished(self, event: Any) -> list[Any]:
        self.open.discard(event.call_id)
        self.current = ""
        status: ToolCallStatus = "failed" if event.is_error else "completed"
        content = self._show(event.call_id, text=event.summary)
        return [
            update_tool_call(
                event.call_id,
                status=status,
                content=content,
                raw_output={"summary": event.summary},
            )
        ]

    def _on_cancelled(self, event: Any) -> list[Any]:
        closed = [*self.open, *event.open_calls]
        self.open.clear()
        self.current = ""
        return [
            update_tool_call(call, status="failed", raw_output={"summary": "cancelled"})
            for call in dict.fromkeys(closed)
        ]

    def _file_diff(
        self, name: str, arguments: dict[str, Any]
    ) -> tuple[list[Any], list[ToolCallLocation] | None]:
        """A write_file or edit_file call's change of its file, as ACP diff content."""
        if name not in ("write_file", "edit_file") or not isinstance(arguments.get("path"), str):
            return [], None
        path = Path(self.agent.runtime.project_root, arguments["path"])
        try:
            old = path.read_text(encoding="utf-8") if path.exists() else None
        except (OSError, UnicodeDecodeError):
            return [], [ToolCallLocation(path=str(path))]
        if name == "write_file":
            new = str(arguments.get("content", ""))
        elif old is not None and isinstance(arguments.get("old_string"), str):
            count = -1 if arguments.get("replace_all") else 1
            new = old.replace(arguments["old_string"], str(arguments.get("new_string", "")), count)
        else:
            return [], [ToolCallLocation(path=str(path))]
        return [tool_diff_content(str(path), new, old)], [ToolCallLocation(path=str(path))]


def title(name: str, arguments: dict[str, Any]) -> str:
    """A short title for a call: the tool and its main argument."""
    for key in ("path", "target", "module", "command", "query", "code"):
        value = arguments.get(key)
        if isinstance(value, str) and value:
            first = value.splitlines()[0] if value.strip() else value
            return f"{name} {first[:80]}"
    return name
