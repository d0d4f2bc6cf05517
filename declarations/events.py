"""The events a turn yields, in the order `Agent.run` describes them.

Every turn ends with exactly one `TurnEnded`, preceded by what ended it (`FinalAnswer`,
`TurnLimit`, `Runaway`, `Cancelled` or `ErrorEvent`). Each event is a frozen pydantic model
with a `type` tag, so front ends can render them and `--json` reports can dump them.
"""

from __future__ import annotations

from typing import Annotated, Any, Literal

from pydantic import BaseModel, ConfigDict, Field

from liveforge.declarations.messages import Usage

__all__ = [
    "AgentEvent",
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
    refused: Literal["approval", "policy", "plugin"] | None = None
    """Set when the call was not run, and by what: "approval" (it needed the user's yes,
    which was not given), "policy" (the permission mode or a deny rule), "plugin"."""


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
    value: str | None = None
    """The repr of a passing snippet's last expression (None for tests, or no value)."""


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
    #: what the rollbacks could not take back (a function a framework's table still holds)
    notes: list[str] = Field(default_factory=list)


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
