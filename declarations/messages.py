"""Provider-neutral conversation data: messages, content blocks, tool specs, usage, events.

Every model provider converts these to and from its own wire format
(`liveforge.impls.providers.anthropic_wire`, `openai_wire`, `gemini_wire`), so the
agent, sessions and tools only ever see the types below.

    Message(role, content=[blocks])          roles: system | user | assistant
      TextBlock(text)
      ThinkingBlock(thinking, signature)     kept verbatim, sent back unchanged
      RedactedThinkingBlock(data)            Anthropic's encrypted thinking, kept verbatim
      ToolUseBlock(id, name, input, signature)   a tool call, in an assistant turn
      ToolResultBlock(tool_use_id, content, is_error)   its answer, in the next user turn
    ToolSpec(name, description, input_schema)
    ModelRequest(messages, tools, max_tokens, ...)
    ModelResponse(content, stop_reason, usage, model, incomplete)
    Usage(input_tokens, output_tokens, cache_read_tokens, cache_write_tokens)
    StreamEvent = TextDelta | ThinkingDelta | ToolCallStart | ToolCallDelta | ToolCallEnd
                | UsageUpdate | Retrying | FailedOver | Done

Pairing rule (both APIs reject a violation with HTTP 400): every `ToolUseBlock` of an
assistant message is answered by a `ToolResultBlock` in the very next user message. Use
`liveforge.impls.providers.pairing.repair_pairing` before sending a conversation that may
have been interrupted.

Example::

    request = ModelRequest(
        messages=[Message.system("Be brief."), Message.user("What is 2+2?")],
        tools=[ToolSpec(name="calc", description="Evaluate", input_schema={"type": "object"})],
    )
"""

from __future__ import annotations

from typing import Annotated, Any, Literal

from pydantic import BaseModel, ConfigDict, Field

__all__ = [
    "ContentBlock",
    "Done",
    "FailedOver",
    "Message",
    "ModelRequest",
    "ModelResponse",
    "RedactedThinkingBlock",
    "Retrying",
    "Role",
    "StopReason",
    "StreamEvent",
    "TextBlock",
    "TextDelta",
    "ThinkingBlock",
    "ThinkingDelta",
    "ToolCallDelta",
    "ToolCallEnd",
    "ToolCallStart",
    "ToolResultBlock",
    "ToolSpec",
    "ToolUseBlock",
    "Usage",
    "UsageUpdate",
]

Role = Literal["system", "user", "assistant"]

StopReason = Literal[
    "end_turn",  # the model finished its answer (OpenAI "stop")
    "tool_use",  # the model wants tool results (OpenAI "tool_calls")
    "max_tokens",  # output limit reached (OpenAI "length")
    "stop_sequence",  # a stop sequence matched
    "refusal",  # refused or filtered (OpenAI "content_filter")
    "pause_turn",  # Anthropic paused a long turn; send the response back to continue
    "context_window_exceeded",  # the context window filled during generation
    "cancelled",  # the caller cancelled; the response is incomplete
    "other",  # anything else; see ModelResponse.raw_stop_reason
]


class _Model(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")


class TextBlock(_Model):
    """Plain text from a user or the model."""

    type: Literal["text"] = "text"
    text: str


class ThinkingBlock(_Model):
    """Model reasoning. `signature` (Anthropic) proves it unchanged; never edit either field.

    Blocks without a signature come from OpenAI-compatible servers (`reasoning_content` /
    `reasoning`); the Anthropic wire format drops them because Anthropic would reject them.
    """

    type: Literal["thinking"] = "thinking"
    thinking: str
    signature: str | None = None


class RedactedThinkingBlock(_Model):
    """Encrypted thinking (Anthropic `redacted_thinking`), passed back verbatim."""

    type: Literal["redacted_thinking"] = "redacted_thinking"
    data: str


class ToolUseBlock(_Model):
    """A tool call made by the model: call `name` with `input`; answer it by `id`."""

    type: Literal["tool_use"] = "tool_use"
    id: str
    name: str
    input: dict[str, Any] = Field(default_factory=dict)
    signature: str | None = None
    """Opaque token the provider attached to the call (Gemini's thought signature), sent
    back unchanged with it; None for providers that have none."""


class ToolResultBlock(_Model):
    """The answer to the tool call `tool_use_id`, sent in the next user message."""

    type: Literal["tool_result"] = "tool_result"
    tool_use_id: str
    content: str
    is_error: bool = False


ContentBlock = Annotated[
    TextBlock | ThinkingBlock | RedactedThinkingBlock | ToolUseBlock | ToolResultBlock,
    Field(discriminator="type"),
]


class Message(_Model):
    """One conversation turn. System messages are hoisted by wire formats that need it."""

    role: Role
    content: list[ContentBlock]

    @classmethod
    def system(cls, text: str) -> Message:
        """A system instruction message."""
        return cls(role="system", content=[TextBlock(text=text)])

    @classmethod
    def user(cls, text: str) -> Message:
        """A user message holding one text block."""
        return cls(role="user", content=[TextBlock(text=text)])

    @classmethod
    def assistant(cls, text: str) -> Message:
        """An assistant message holding one text block."""
        return cls(role="assistant", content=[TextBlock(text=text)])

    @classmethod
    def tool_results(cls, results: list[ToolResultBlock]) -> Message:
        """The user message that answers the previous assistant turn's tool calls."""
        return cls(role="user", content=list(results))

    @property
    def text(self) -> str:
        """All text blocks joined (thinking and tool blocks excluded)."""
        return "".join(b.text for b in self.content if isinstance(b, TextBlock))

    @property
    def tool_calls(self) -> list[ToolUseBlock]:
        """The tool calls in this message, in order."""
        return [b for b in self.content if isinstance(b, ToolUseBlock)]


class ToolSpec(_Model):
    """A tool the model may call; `input_schema` is a JSON schema with root type object."""

    name: str
    description: str
    input_schema: dict[str, Any]


class Usage(_Model):
    """Token usage, normalised across providers.

    `input_tokens` counts uncached input only (Anthropic's meaning); OpenAI's
    `prompt_tokens` includes cached tokens, so its wire format subtracts them.
    """

    input_tokens: int = 0
    output_tokens: int = 0
    cache_read_tokens: int = 0
    cache_write_tokens: int = 0

    @property
    def total_input_tokens(self) -> int:
        """All input tokens, cached or not."""
        return self.input_tokens + self.cache_read_tokens + self.cache_write_tokens

    def __add__(self, other: Usage) -> Usage:
        return Usage(
            input_tokens=self.input_tokens + other.input_tokens,
            output_tokens=self.output_tokens + other.output_tokens,
            cache_read_tokens=self.cache_read_tokens + other.cache_read_tokens,
            cache_write_tokens=self.cache_write_tokens + other.cache_write_tokens,
        )


class ModelRequest(_Model):
    """What to ask a model. `model`, when set, is sent instead of the route's model name."""

    messages: list[Message]
    tools: list[ToolSpec] = Field(default_factory=list)
    max_tokens: int = 4096
    temperature: float | None = None
    tool_choice: Literal["auto", "any", "none"] | str = "auto"
    """"auto", "any" (must call some tool), "none", or a tool name that must be called."""
    stop_sequences: list[str] = Field(default_factory=list)
    thinking_budget: int | None = None
    """Token budget for extended thinking (Anthropic); None disables it."""
    model: str | None = None


class ModelResponse(_Model):
    """A model's complete answer (or what arrived before cancellation, `incomplete=True`)."""

    content: list[ContentBlock] = Field(default_factory=list)
    stop_reason: StopReason = "end_turn"
    raw_stop_reason: str | None = None
    usage: Usage = Field(default_factory=Usage)
    model: str = ""
    provider: str = ""
    id: str = ""
    incomplete: bool = False

    @property
    def text(self) -> str:
        """All text blocks joined."""
        return "".join(b.text for b in self.content if isinstance(b, TextBlock))

    @property
    def tool_calls(self) -> list[ToolUseBlock]:
        """The tool calls, in order; each needs a ToolResultBlock in the next user turn."""
        return [b for b in self.content if isinstance(b, ToolUseBlock)]

    def to_message(self) -> Message:
        """This response as the assistant message to append to the conversation."""
        return Message(role="assistant", content=list(self.content))


class TextDelta(_Model):
    """A piece of text for content block `index`."""

    type: Literal["text_delta"] = "text_delta"
    index: int
    text: str


class ThinkingDelta(_Model):
    """A piece of thinking/reasoning for content block `index`."""

    type: Literal["thinking_delta"] = "thinking_delta"
    index: int
    thinking: str


class ToolCallStart(_Model):
    """The model started tool call `id` to `name` (block `index`)."""

    type: Literal["tool_call_start"] = "tool_call_start"
    index: int
    id: str
    name: str


class ToolCallDelta(_Model):
    """A fragment of tool call `index`'s JSON arguments (not parseable on its own)."""

    type: Literal["tool_call_delta"] = "tool_call_delta"
    index: int
    partial_json: str


class ToolCallEnd(_Model):
    """Tool call `index` is complete; `call` holds the parsed input."""

    type: Literal["tool_call_end"] = "tool_call_end"
    index: int
    call: ToolUseBlock


class UsageUpdate(_Model):
    """Usage so far (cumulative for this response)."""

    type: Literal["usage"] = "usage"
    usage: Usage


class Retrying(_Model):
    """A transient failure before any content arrived; the call is retried after `delay` s."""

    type: Literal["retrying"] = "retrying"
    attempt: int
    delay: float
    error: str


class FailedOver(_Model):
    """The call moved from one model (or credential) to the next in the failover chain."""

    type: Literal["failed_over"] = "failed_over"
    from_model: str
    to_model: str
    reason: str


class Done(_Model):
    """The last event of a stream: the assembled response."""

    type: Literal["done"] = "done"
    response: ModelResponse


StreamEvent = Annotated[
    TextDelta
    | ThinkingDelta
    | ToolCallStart
    | ToolCallDelta
    | ToolCallEnd
    | UsageUpdate
    | Retrying
    | FailedOver
    | Done,
    Field(discriminator="type"),
]
