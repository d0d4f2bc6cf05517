"""The script a FakeProvider plays: one item per request it receives, in order.

An item is either a `Reply` (a model answer) or a `Fault` (an HTTP-level failure). Both are
immutable; builder methods return new objects, so partial builds can be shared.

    reply.text("hi")                                   a text answer
    reply.thinking("let me see").text("42")            thinking, then text
    reply.redacted_thinking("EncRypTed").text("42")    redacted thinking (Anthropic)
    reply.tool_call("view_source", {"path": "x"})      a tool call (id generated)
    reply.tool_call("a", {}).tool_call("b", {})        parallel tool calls
    reply.text("long answer").chunked(3).slow(0.01)    3-character deltas, 10 ms apart
    reply.text("partial").error_after(4)               SSE error event after 4 events (200 OK)
    reply.text("partial").disconnect_after(4)          connection dropped mid-stream
    reply.text("x").malformed_after(2)                 an unparseable event after 2 events
    reply.text("x").truncate_after(2)                  body ends cleanly, final event missing
    fault.rate_limit(retry_after=0.05)                 429 with retry-after
    fault.overloaded(retry_after_ms=20)                529 (Anthropic) / 503 (OpenAI, Gemini)
    fault.auth() / fault.quota() / fault.not_found() / fault.context_overflow()
    fault.server_error() / fault.bad_request("why") / fault.error("rate_limit", status=429)
    fault.bare_string("Model unloaded")                LM Studio's {"error": "<string>"}
    fault.hang(2.0)                                    answer nothing for 2 s, then close
    fault.disconnect()                                 close the connection, no response

Items are taken by requests as they arrive. A call cancelled before its request reached the
server takes none, so the item answers the next request instead: to cancel a call while the
server holds it, wait for its arrival first with `FakeProvider.wait_for_requests(n)`.
"""

from __future__ import annotations

import hashlib
import itertools
from dataclasses import dataclass, field, replace
from typing import Any, Literal

__all__ = [
    "Fault",
    "Part",
    "RedactedThinkingPart",
    "Reply",
    "StreamFault",
    "TextPart",
    "ThinkingPart",
    "ToolCallPart",
    "fault",
    "reply",
]

_ids = itertools.count(1)


@dataclass(frozen=True)
class TextPart:
    """Text in the answer."""

    text: str


@dataclass(frozen=True)
class ThinkingPart:
    """Thinking/reasoning; `signature` defaults to a deterministic fake one."""

    text: str
    signature: str


@dataclass(frozen=True)
class RedactedThinkingPart:
    """Encrypted thinking (Anthropic only; OpenAI-compatible dialects omit it)."""

    data: str


@dataclass(frozen=True)
class ToolCallPart:
    """A tool call with its arguments."""

    name: str
    input: dict[str, Any]
    id: str


Part = TextPart | ThinkingPart | RedactedThinkingPart | ToolCallPart


@dataclass(frozen=True)
class StreamFault:
    """A failure injected into a streamed 200 response after `after_events` events."""

    kind: Literal["error", "disconnect", "malformed", "truncate"]
    after_events: int
    error_kind: str = "overloaded"
    message: str = ""
    same_chunk: bool = False
    """Send the events before the fault and the fault itself as one network chunk."""


@dataclass(frozen=True)
class Reply:
    """A scripted model answer; see the module docstring for the builder methods."""

    parts: tuple[Part, ...] = ()
    stop: str | None = None
    usage: dict[str, int] = field(default_factory=dict)
    chunk: int = 8
    delay: float = 0.0
    fault: StreamFault | None = None
    model: str | None = None

    def resolved_stop(self) -> str:
        """The neutral stop reason: as set, else tool_use when calling tools, else end_turn."""
        if self.stop:
            return self.stop
        return "tool_use" if any(isinstance(p, ToolCallPart) for p in self.parts) else "end_turn"

    def token_counts(self, request_bytes: int) -> dict[str, int]:
        """Reported usage: as set, else input ~ request size / 4, output ~ answer size / 4."""
        size = sum(
            len(str(p.input)) + 10
            if isinstance(p, ToolCallPart)
            else len(p.data)
            if isinstance(p, RedactedThinkingPart)
            else len(p.text)
            for p in self.parts
        )
        counts = {
            "input": max(1, request_bytes // 4),
            "output": max(1, size // 4),
            "cache_read": 0,
            "cache_write": 0,
        }
        counts.update(self.usage)
        return counts

    def text(self, text: str) -> Reply:
        """Append text."""
        return replace(self, parts=(*self.parts, TextPart(text)))

    def thinking(self, text: str, signature: str | None = None) -> Reply:
        """Append a thinking block (signed; pass `signature` to choose the value)."""
        sig = signature or "sig-" + hashlib.sha256(text.encode()).hexdigest()[:24]
        return replace(self, parts=(*self.parts, ThinkingPart(text, sig)))

    def redacted_thinking(self, data: str) -> Reply:
        """Append an encrypted (redacted) thinking block."""
        return replace(self, parts=(*self.parts, RedactedThinkingPart(data)))

    def tool_call(
        self, name: str, input: dict[str, Any] | None = None, *, id: str | None = None
    ) -> Reply:
        """Append a tool call; several in one reply are parallel calls."""
        call_id = id or f"call_{next(_ids):04d}"
        return replace(self, parts=(*self.parts, ToolCallPart(name, dict(input or {}), call_id)))

    def stop_reason(self, reason: str) -> Reply:
        """Override the neutral stop reason (end_turn, tool_use, max_tokens, refusal, ...)."""
        return replace(self, stop=reason)

    def with_usage(
        self,
        *,
        input: int | None = None,
        output: int | None = None,
        cache_read: int | None = None,
        cache_write: int | None = None,
    ) -> Reply:
        """Fix reported token counts (by default derived from request and answer sizes)."""
        given = {
            "input": input,
            "output": output,
            "cache_read": cache_read,
            "cache_write": cache_write,
        }
        return replace(
            self, usage={**self.usage, **{k: v for k, v in given.items() if v is not None}}
        )

    def chunked(self, size: int) -> Reply:
        """Split text, thinking and tool arguments into deltas of `size` characters."""
        return replace(self, chunk=max(1, size))

    def slow(self, seconds: float) -> Reply:
        """Pace streamed events `seconds` apart (event n goes out at n * seconds)."""
        return replace(self, delay=seconds)

    def as_model(self, model: str) -> Reply:
        """Report `model` instead of the requested model name."""
        return replace(self, model=model)

    def error_after(
        self, events: int, kind: str = "overloaded", message: str = "", *, same_chunk: bool = False
    ) -> Reply:
        """Send an in-stream error event (after HTTP 200) once `events` events went out;
        `same_chunk` sends those events and the error in one network chunk."""
        return replace(self, fault=StreamFault("error", events, kind, message, same_chunk))

    def disconnect_after(self, events: int) -> Reply:
        """Drop the connection once `events` events went out."""
        return replace(self, fault=StreamFault("disconnect", events))

    def truncate_after(self, events: int) -> Reply:
        """End the response cleanly once `events` events went out (no final event)."""
        return replace(self, fault=StreamFault("truncate", events))

    def malformed_after(self, events: int) -> Reply:
        """Send an event whose data is not JSON once `events` events went out."""
        return replace(self, fault=StreamFault("malformed", events))


def pieces(text: str, size: int) -> list[str]:
    """`text` cut into `size`-character pieces (at least one piece, possibly empty)."""
    return [text[i : i + size] for i in range(0, len(text), size)] or [""]


@dataclass(frozen=True)
class Fault:
    """An HTTP-level failure answering one request."""

    kind: str
    status: int | None = None
    message: str = ""
    retry_after: float | None = None
    retry_after_ms: float | None = None
    bare_string: bool = False
    hang: float = 0.0
    disconnect: bool = False


class _FaultBuilders:
    """Constructors of Faults; `kind` is a neutral error kind mapped per protocol."""

    def error(
        self,
        kind: str,
        *,
        status: int | None = None,
        message: str = "",
        retry_after: float | None = None,
        retry_after_ms: float | None = None,
    ) -> Fault:
        """An error response of `kind`: rate_limit, overloaded, auth, permission, quota,
        not_found, context_overflow, bad_request, server_error."""
        return Fault(kind, status, message, retry_after, retry_after_ms)

    def rate_limit(
        self, *, retry_after: float | None = None, retry_after_ms: float | None = None
    ) -> Fault:
        """429 rate limited, optionally with retry-after / retry-after-ms headers."""
        return self.error("rate_limit", retry_after=retry_after, retry_after_ms=retry_after_ms)

    def overloaded(
        self, *, retry_after: float | None = None, retry_after_ms: float | None = None
    ) -> Fault:
        """529 overloaded_error (Anthropic) / 503 (OpenAI, Gemini UNAVAILABLE)."""
        return self.error("overloaded", retry_after=retry_after, retry_after_ms=retry_after_ms)

    def auth(self) -> Fault:
        """401 invalid API key."""
        return self.error("auth")

    def quota(self) -> Fault:
        """Billing / insufficient_quota (not retryable)."""
        return self.error("quota")

    def not_found(self) -> Fault:
        """404 model not found."""
        return self.error("not_found")

    def context_overflow(self) -> Fault:
        """400 with the provider's context-window wording."""
        return self.error("context_overflow")

    def server_error(self) -> Fault:
        """500 internal error."""
        return self.error("server_error")

    def bad_request(self, message: str = "invalid request") -> Fault:
        """400 invalid request."""
        return self.error("bad_request", message=message)

    def bare_string(self, message: str, *, status: int = 400) -> Fault:
        """LM Studio style body: {"error": "<message>"}."""
        return Fault("bad_request", status, message, bare_string=True)

    def hang(self, seconds: float) -> Fault:
        """Send nothing for `seconds`, then close the connection (client timeouts)."""
        return Fault("hang", hang=seconds, disconnect=True)

    def disconnect(self) -> Fault:
        """Close the connection without any response."""
        return Fault("disconnect", disconnect=True)


reply = Reply()
"""The empty reply to build from: `reply.text("hi")`."""

fault = _FaultBuilders()
"""Fault constructors: `fault.rate_limit(retry_after=0.05)`."""
