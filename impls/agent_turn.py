"""How a turn ends, and keeping the conversation valid whatever ended it.

A step says what happened as a `StepOutcome`; `ending` is the one place that decides whether
that ends the turn, and how:

    the turn's token was cancelled      -> "cancelled"   Cancelled(open calls)
    Answered: no tool calls             -> "answer"      FinalAnswer
    Failed: provider / context error    -> "error"       ErrorEvent
    Failed: any other exception         -> raised: a fault of liveforge itself
    Repeated: the same call again       -> "runaway"     Runaway
    the step budget is used up          -> "turn_limit"  TurnLimit
    otherwise                           -> None: the turn goes on

A fault while self-patches are on probation never gets here: the loop hands it to the
safety net first, which rolls them back, and the turn goes on (see `agent_loop`).
Whatever ends a turn, `close_open_calls` answers every tool call of the newest assistant
message, keeping results that came back and marking the rest cancelled, so the next
request satisfies the pairing rule.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from liveforge.declarations.agent import (
    AgentEvent,
    Cancelled,
    ErrorEvent,
    FinalAnswer,
    Runaway,
    TurnEndReason,
    TurnLimit,
)
from liveforge.declarations.compaction import CompactionError
from liveforge.declarations.messages import ContentBlock, Message, TextBlock, ToolResultBlock
from liveforge.declarations.provider_errors import ProviderError
from liveforge.declarations.turn import Turn
from liveforge.impls.providers.pairing import CANCELLED_RESULT

if TYPE_CHECKING:
    from liveforge.declarations.agent import Agent

__all__ = [
    "STEP_OUTCOMES",
    "Answered",
    "Ending",
    "Failed",
    "Going",
    "Repeated",
    "StepOutcome",
    "add_note",
    "close_open_calls",
    "ending",
]

TURN_ERRORS = (ProviderError, CompactionError)
"""Failures outside the model's and liveforge's control: they end the turn with an error."""


@dataclass(frozen=True)
class Going:
    """The step ran (tool calls, a paused answer): nothing in it ends the turn."""


@dataclass(frozen=True)
class Answered:
    """The model answered without calling tools."""

    text: str


@dataclass(frozen=True)
class Failed:
    """The step raised `error` (and no self-patch on probation explains it)."""

    error: Exception


@dataclass(frozen=True)
class Repeated:
    """The model repeated a call `repeats` times; it was not run."""

    name: str
    arguments: dict[str, Any]
    repeats: int


StepOutcome = Going | Answered | Failed | Repeated
STEP_OUTCOMES = (Going, Answered, Failed, Repeated)


@dataclass(frozen=True)
class Ending:
    """How the turn ended: the reason, and the event that says it."""

    reason: TurnEndReason
    event: AgentEvent


def ending(agent: Agent, turn: Turn, outcome: StepOutcome) -> Ending | None:
    """The end of the turn after a step with `outcome`, or None when it goes on."""
    if turn.token.cancelled:
        return Ending("cancelled", Cancelled(open_calls=turn.unanswered()))
    match outcome:
        case Answered(text=text):
            return Ending("answer", FinalAnswer(text=text))
        case Failed(error=error) if isinstance(error, TURN_ERRORS):
            return Ending("error", ErrorEvent(error_type=type(error).__name__, message=str(error)))
        case Failed(error=error):
            raise error
        case Repeated(name=name, arguments=arguments, repeats=repeats):
            return Ending("runaway", Runaway(name=name, arguments=arguments, repeats=repeats))
    if turn.steps >= agent.settings.max_steps:
        return Ending("turn_limit", TurnLimit(steps=turn.steps))
    return None


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
