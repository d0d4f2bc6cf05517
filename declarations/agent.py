# mypy: disable-error-code="empty-body"
"""The agent: one user turn at a time, model -> tool calls -> results -> model ... -> answer.

`Agent.run(user_input)` drives one turn and yields typed events as they happen, for whoever
drives it (the chat front end, `run -p`, the demo, tests). Every turn ends with exactly one
`TurnEnded`, preceded by what ended it:

    TurnStarted
      TextDelta* / Thinking*                streamed model output
      ToolStarted -> ToolFinished           one pair per tool call (result summarised)
        PatchApplied*                       changes the call made (with their diff)
        VerificationResult*                 sandbox runs the call made
      SelfPatchesApplied                    queued self-patches took effect (step boundary)
      SelfPatchesRolledBack                 they broke the loop and were undone
      Compacted                             older turns were summarised
      Notice*                               retries, failover, restored changes, ...
    FinalAnswer | TurnLimit | Runaway | Cancelled | ErrorEvent
    TurnEnded(reason)

Example::

    agent = build_agent(".")                  # liveforge.agent_setup
    async for event in agent.run("Make area() exact"):
        if isinstance(event, TextDelta):
            print(event.text, end="")
    agent.cancel()                            # from a signal handler: stops the turn only
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from typing import TYPE_CHECKING, Annotated, Any, Literal

import forwardpy
from pydantic import BaseModel, ConfigDict, Field

from liveforge.declarations.messages import Usage

if TYPE_CHECKING:
    from liveforge.declarations.compaction import Compactor
    from liveforge.declarations.prompt import SystemPrompt
    from liveforge.declarations.provider import Provider
    from liveforge.declarations.session import Session
    from liveforge.declarations.toolbox import Toolbox
    from liveforge.kernel import Runtime

__all__ = [
    "Agent",
    "AgentEvent",
    "AgentSettings",
    "Cancelled",
    "Compacted",
    "ErrorEvent",
    "FinalAnswer",
    "Notice",
    "PatchApplied",
    "Runaway",
    "SelfPatchesApplied",
    "SelfPatchesRolledBack",
    "TextDelta",
    "Thinking",
    "ToolFinished",
    "ToolStarted",
    "TurnEndReason",
    "TurnEnded",
    "TurnLimit",
    "TurnStarted",
    "VerificationResult",
]


class AgentSettings(BaseModel):
    """How the loop behaves. Context sizes live in `ContextSettings` (compaction)."""

    model_config = ConfigDict(frozen=True, extra="forbid")
    max_steps: int = Field(default=40, ge=1)
    """Model requests per user turn. The last one is asked to answer without tools."""
    runaway_repeats: int = Field(default=3, ge=2)
    """The same tool with the same arguments this many times (with no change to the program
    in between) stops the turn and tells the model."""
    tool_timeout: float = Field(default=120.0, gt=0)
    """Seconds one tool call may take (a tool's own `timeout` argument stretches it)."""
    max_tokens: int = Field(default=8192, gt=0)
    """Output token limit per model request."""
    temperature: float | None = None
    """Sampling temperature; None leaves the provider's default."""
    self_packages: tuple[str, ...] = ("liveforge.",)
    """Module prefixes that make up the agent itself. Patches to them are queued and take
    effect at the next step boundary; persisting them requires `self_tests` to pass."""
    self_tests: tuple[str, ...] | None = None
    """pytest arguments for liveforge's own suite, run in the sandbox with the overlay before
    a self-patch is persisted. None: the `tests` folder next to the liveforge sources."""
    self_test_timeout: float = Field(default=1200.0, gt=0)
    """Seconds the self-test run may take."""


class _Event(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")


class TurnStarted(_Event):
    """A turn began: the user's input is in the conversation."""

    type: Literal["turn_started"] = "turn_started"
    session_id: str
    turn: int
    user_input: str


class TextDelta(_Event):
    """A piece of the model's answer text."""

    type: Literal["text_delta"] = "text_delta"
    text: str


class Thinking(_Event):
    """A piece of the model's reasoning."""

    type: Literal["thinking"] = "thinking"
    text: str


class ToolStarted(_Event):
    """The model called a tool; it is running now."""

    type: Literal["tool_started"] = "tool_started"
    call_id: str
    name: str
    arguments: dict[str, Any]


class ToolFinished(_Event):
    """A tool call returned. `summary` is the first lines of what the model receives."""

    type: Literal["tool_finished"] = "tool_finished"
    call_id: str
    name: str
    is_error: bool
    summary: str
    duration: float
    chars: int
    """Length of the full result the model receives."""
    deferred: bool = False
    """A self-patch queued until the step boundary (its outcome follows there)."""


class PatchApplied(_Event):
    """A change to the live program, with the diff of its module."""

    type: Literal["patch_applied"] = "patch_applied"
    change_id: str
    target: str
    kind: str
    diff: str
    self_patch: bool = False


class VerificationResult(_Event):
    """A sandbox run (verify / run_tests) finished."""

    type: Literal["verification"] = "verification"
    run_id: str
    kind: str
    """"snippet" or "tests"."""
    ok: bool
    headline: str


class SelfPatchesApplied(_Event):
    """Queued patches to liveforge itself took effect at the step boundary (or failed as a
    batch, `ok=False`, leaving nothing applied)."""

    type: Literal["self_patches_applied"] = "self_patches_applied"
    change_ids: list[str]
    ok: bool
    message: str


class SelfPatchesRolledBack(_Event):
    """Self-patches broke the loop machinery and were undone; the turn continues."""

    type: Literal["self_patches_rolled_back"] = "self_patches_rolled_back"
    change_ids: list[str]
    reason: str


class Compacted(_Event):
    """Older turns were summarised to make room in the context window."""

    type: Literal["compacted"] = "compacted"
    tokens_before: int
    tokens_after: int
    messages_summarised: int
    outputs_truncated: int


class Notice(_Event):
    """Something worth showing that needs no action (a retry, a failover, a restore)."""

    type: Literal["notice"] = "notice"
    kind: str
    text: str


class ErrorEvent(_Event):
    """The turn failed for a reason outside the model's control (provider, context)."""

    type: Literal["error"] = "error"
    error_type: str
    message: str


class FinalAnswer(_Event):
    """The model answered without calling tools: the turn's result."""

    type: Literal["final_answer"] = "final_answer"
    text: str


class TurnLimit(_Event):
    """The turn used its step budget."""

    type: Literal["turn_limit"] = "turn_limit"
    steps: int


class Runaway(_Event):
    """The model repeated a call; the turn was stopped and the model told so."""

    type: Literal["runaway"] = "runaway"
    name: str
    arguments: dict[str, Any]
    repeats: int


class Cancelled(_Event):
    """The turn was cancelled; `open_calls` got a "cancelled" result."""

    type: Literal["cancelled"] = "cancelled"
    open_calls: list[str]


TurnEndReason = Literal["answer", "turn_limit", "runaway", "cancelled", "error"]


class TurnEnded(_Event):
    """The last event of every turn."""

    type: Literal["turn_ended"] = "turn_ended"
    reason: TurnEndReason
    steps: int
    usage: Usage
    """Tokens used by this turn's model requests (compaction included)."""
    context_tokens: int
    """Estimated size of the conversation now."""


AgentEvent = Annotated[
    TurnStarted
    | TextDelta
    | Thinking
    | ToolStarted
    | ToolFinished
    | PatchApplied
    | VerificationResult
    | SelfPatchesApplied
    | SelfPatchesRolledBack
    | Compacted
    | Notice
    | ErrorEvent
    | FinalAnswer
    | TurnLimit
    | Runaway
    | Cancelled
    | TurnEnded,
    Field(discriminator="type"),
]


class Agent(forwardpy.Object):
    """Runs turns of a session against a live runtime, through a provider and a toolbox.

    Construct with keyword arguments (all required): `runtime`, `provider`, `toolbox`,
    `session`, `compactor`, `prompt`, `settings`. `liveforge.agent_setup.build_agent` wires
    them from a project's configuration.
    """

    runtime: Runtime
    provider: Provider
    toolbox: Toolbox
    session: Session
    compactor: Compactor
    prompt: SystemPrompt
    settings: AgentSettings

    def run(self, user_input: str) -> AsyncIterator[AgentEvent]:
        """Run one turn for `user_input`; yields events, the last one `TurnEnded`.

        Raises `SessionBusy` when another front end holds the project's turn lock. Faults of
        liveforge itself propagate (after the conversation is made consistent); provider
        failures end the turn with an `ErrorEvent`. Closing the iterator early, or
        cancelling the task, leaves the session valid for the next turn.
        """
        ...

    def cancel(self) -> None:
        """Stop the running turn (thread- and signal-safe); the session stays usable."""
        ...

    async def compact(self) -> Compacted | None:
        """Summarise older turns now (between turns); None when there is nothing to do."""
        ...

    def system_prompt(self) -> str:
        """The system prompt the next request will carry."""
        ...

    def context_tokens(self) -> int:
        """Estimated tokens of the next request's conversation (system prompt included)."""
        ...

    async def aclose(self) -> None:
        """Release the provider's connections and the tool worker."""
        ...
