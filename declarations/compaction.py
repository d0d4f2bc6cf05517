# mypy: disable-error-code="empty-body"
"""Context management: token estimates, bounded tool results, and compaction.

Before each model request the agent asks the `Compactor` whether the conversation still
fits. When it passes `threshold` of the usable window, `compact` summarises the older part
of the conversation with the model and keeps, verbatim: the recent messages, the list of
unpersisted changes, and the user's recent instructions. The system prompt is not part of
the conversation and is always kept.

Overflow rules (each request after an overflow is strictly smaller than the one before):

* the summarisation request is sized before sending; old tool outputs in it are cut first,
  then the oldest messages are left out (with a note saying so);
* a `ContextOverflowError` from the summarisation request shrinks it and retries;
* a conversation that still overflows has its tool outputs cut (`shrink`), never padded
  with error text.

Example::

    compactor = Compactor(settings=ContextSettings(window=32_000))
    if compactor.needs_compaction(session.context_tokens()):
        result = await compactor.compact(messages, provider, pinned=notes)
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from pydantic import BaseModel, ConfigDict, Field

from liveforge.declarations.contract import Contract
from liveforge.declarations.messages import Message, Usage
from liveforge.kernel.errors import LiveforgeError

if TYPE_CHECKING:
    from liveforge.declarations.provider import CancelToken, Provider

__all__ = ["Compaction", "CompactionError", "Compactor", "ContextSettings"]


class CompactionError(LiveforgeError):
    """The conversation cannot be made to fit (e.g. one message alone is too large)."""

    def __init__(self, message: str, *, tokens: int = 0, window: int = 0) -> None:
        super().__init__(message)
        self.tokens = tokens
        self.window = window


class ContextSettings(BaseModel):
    """Context window sizes and what compaction keeps."""

    model_config = ConfigDict(frozen=True, extra="forbid")
    window: int = Field(default=200_000, gt=0)
    """The model's context window in tokens."""
    reserve: int = Field(default=8192, ge=0)
    """Tokens kept free for the model's answer."""
    threshold: float = Field(default=0.8, gt=0, le=1)
    """Compact when the conversation passes this fraction of `window - reserve`."""
    keep_fraction: float = Field(default=0.3, gt=0, lt=1)
    """Share of the usable window the verbatim recent messages may take after compacting."""
    keep_instructions: int = Field(default=6, ge=0)
    """How many of the user's most recent instructions are kept word for word."""
    tool_result_limit: int = Field(default=16_000, gt=200)
    """Characters of one tool result before it is cut (with a marker) on entering the
    context."""
    summary_tokens: int = Field(default=2048, gt=0)
    """Output budget of the summarisation request."""
    chars_per_token: float = Field(default=3.5, gt=0)
    """Characters per token for estimates where the provider reported nothing."""

    @property
    def usable(self) -> int:
        """Tokens the conversation and system prompt may take."""
        return max(1, self.window - self.reserve)


class Compaction(BaseModel):
    """The outcome of one compaction: the new conversation and what it cost."""

    model_config = ConfigDict(frozen=True)
    messages: list[Message]
    tokens: list[int]
    """Estimate per new message."""
    summary: str
    tokens_before: int
    tokens_after: int
    messages_summarised: int
    outputs_truncated: int
    usage: Usage = Field(default_factory=Usage)
    """Tokens the summarisation requests used."""
    requests: int = 0
    """Summarisation requests sent (more than one after an overflow)."""


class Compactor(Contract):
    """Estimates sizes, bounds tool results and summarises old turns. Construct with
    `settings=ContextSettings(...)`."""

    settings: ContextSettings

    def estimate(self, message: Message) -> int:
        """Estimated tokens of one message (characters / `chars_per_token`, plus overhead)."""
        ...

    def needs_compaction(self, tokens: int) -> bool:
        """True when a conversation of `tokens` should be compacted before the next request."""
        ...

    def clip_result(self, text: str) -> str:
        """A tool result bounded to `tool_result_limit` characters, with a marker if cut."""
        ...

    def shrink(self, messages: list[Message], limit: int) -> tuple[list[Message], int]:
        """Tool outputs longer than `limit` characters cut (oldest messages first, the newest
        tool results kept whole when possible); returns the messages and how many were cut."""
        ...

    async def compact(
        self,
        messages: list[Message],
        provider: Provider,
        *,
        pinned: list[str],
        cancel: CancelToken | None = None,
        force: bool = False,
    ) -> Compaction | None:
        """Summarise the older part of `messages` with the model.

        `pinned` are texts kept verbatim in the summary message (e.g. the unpersisted
        changes). None when there is nothing old enough to summarise (and not `force`), when
        the result would not be smaller than `messages` (compaction never grows the
        context), or when `cancel` fired before the summary was complete (nothing is
        changed then).
        Raises `CompactionError` when even the summarisation cannot be made to fit.
        """
        ...
