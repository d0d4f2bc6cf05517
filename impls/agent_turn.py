"""The state of one turn, and the exceptions that end it.

A turn ends by raising `TurnOver` carrying the event that says why (final answer, step
limit, runaway, cancellation, provider error). Whatever ends it, `close_open_calls` answers
every tool call of the newest assistant message, keeping results that came back and marking
the rest cancelled, so the next request satisfies the pairing rule.
"""

from __future__ import annotations

import asyncio
import collections
import concurrent.futures
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from liveforge.declarations.agent import AgentEvent, TurnEndReason
from liveforge.declarations.messages import (
    ContentBlock,
    Message,
    TextBlock,
    ToolResultBlock,
    ToolUseBlock,
    Usage,
)
from liveforge.declarations.provider import CancelToken
from liveforge.impls.providers.pairing import CANCELLED_RESULT

if TYPE_CHECKING:
    from liveforge.declarations.agent import Agent

__all__ = ["Turn", "TurnOver", "add_note", "agent_state", "close_open_calls"]


class TurnOver(Exception):
    """Ends the turn; `event` says why (FinalAnswer, TurnLimit, Runaway, ...)."""

    def __init__(self, reason: TurnEndReason, event: AgentEvent) -> None:
        super().__init__(f"turn over: {reason}")
        self.reason = reason
        self.event = event


@dataclass
class AgentState:
    """What an agent keeps between turns (not part of its declared contract)."""

    turn: Turn | None = None
    unconfirmed: list[str] = field(default_factory=list)
    """Self-patch change ids applied since the last step that completed with them."""
    trial: list[str] = field(default_factory=list)
    """The unconfirmed ids in effect when the current step started."""
    executor: concurrent.futures.ThreadPoolExecutor | None = None
    running: asyncio.Future[object] | None = None
    """The newest tool call handed to the worker (it may outlive a cancelled turn)."""
    unreported: list[str] = field(default_factory=list)
    """Changes found between steps (e.g. a cancelled call that finished in the background),
    not yet told to the model."""

    def start_trial(self) -> None:
        """A step starts: the self-patches in effect now are what it will confirm."""
        self.trial = list(self.unconfirmed)

    def confirm(self) -> None:
        """The step completed: the self-patches it ran with are good."""
        self.unconfirmed = [i for i in self.unconfirmed if i not in self.trial]
        self.trial = []

    def on_probation(self, change_ids: list[str]) -> None:
        """Self-changes made outside the queue (e.g. by `execute`) wait for confirmation."""
        self.unconfirmed += [i for i in change_ids if i not in self.unconfirmed]

    def tool_running(self) -> bool:
        """True while a tool call is still running in the worker (say, after a cancel)."""
        return self.running is not None and not self.running.done()

    def tool_worker(self) -> concurrent.futures.ThreadPoolExecutor:
        """One worker thread: tool calls never overlap, even one left running by a cancel."""
        if self.executor is None:
            self.executor = concurrent.futures.ThreadPoolExecutor(
                max_workers=1, thread_name_prefix="liveforge-tool"
            )
        return self.executor


def agent_state(agent: Agent) -> AgentState:
    """The agent's between-turn state, created on first use."""
    state: AgentState | None = agent.__dict__.get("_state")
    if state is None:
        state = AgentState()
        agent.__dict__["_state"] = state
    return state


@dataclass
class Turn:
    """One user turn in progress."""

    number: int
    token: CancelToken = field(default_factory=CancelToken)
    steps: int = 0
    usage: Usage = field(default_factory=Usage)
    repeats: collections.Counter[str] = field(default_factory=collections.Counter)
    open_calls: list[ToolUseBlock] = field(default_factory=list)
    results: dict[str, ToolResultBlock] = field(default_factory=dict)
    seen_runs: set[str] | None = None
    loop: asyncio.AbstractEventLoop | None = None

    def unanswered(self) -> list[str]:
        """Ids of open calls with no result yet."""
        return [c.id for c in self.open_calls if c.id not in self.results]


def close_open_calls(agent: Agent, turn: Turn, note: str = CANCELLED_RESULT) -> list[str]:
    """Append the results message for the open calls; returns the ids marked with `note`."""
    messages = agent.session.messages
    if not turn.open_calls or not messages or messages[-1].role != "assistant":
        turn.open_calls = []
        return []
    missing = turn.unanswered()
    blocks: list[ToolResultBlock] = [
        turn.results.get(c.id) or ToolResultBlock(tool_use_id=c.id, content=note, is_error=True)
        for c in turn.open_calls
    ]
    message = Message.tool_results(blocks)
    agent.session.append(message, tokens=agent.compactor.estimate(message))
    turn.open_calls, turn.results = [], {}
    return missing


def add_note(agent: Agent, text: str) -> None:
    """Tell the model something with its next request (appended to the last user message)."""
    session = agent.session
    block = TextBlock(text=text)
    if session.messages and session.messages[-1].role == "user":
        last = session.messages[-1]
        content: list[ContentBlock] = [*last.content, block]
        session.amend_last(Message(role="user", content=content))
    else:
        session.append(Message(role="user", content=[block]))
