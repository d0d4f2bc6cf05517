"""The Anthropic Messages API wire format (`AnthropicWire` bodies).

Request: system messages are hoisted into the top-level `system` field; thinking blocks go
back verbatim (those without a signature came from another protocol and are dropped,
since Anthropic rejects them). Streaming: message_start → content_block_start /
content_block_delta / content_block_stop per block → message_delta → message_stop, `ping`
anywhere, and an `error` event after HTTP 200 raises the matching ProviderError.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

import forwardpy
from pydantic import ValidationError

from liveforge.declarations.messages import (
    ContentBlock,
    Message,
    ModelRequest,
    ModelResponse,
    RedactedThinkingBlock,
    StopReason,
    StreamEvent,
    TextBlock,
    ThinkingBlock,
    ToolUseBlock,
    Usage,
    UsageUpdate,
)
from liveforge.declarations.provider import AnthropicWire, HttpCall, Route, StreamDecoder
from liveforge.declarations.provider_errors import MalformedResponse, ProviderError
from liveforge.impls.providers.assembly import ResponseBuilder
from liveforge.impls.providers.classify import body_message, make_error, malformed_reason
from liveforge.impls.providers.sse import decode_json

API_VERSION = "2023-06-01"

_STOP: dict[str, StopReason] = {
    "end_turn": "end_turn",
    "tool_use": "tool_use",
    "max_tokens": "max_tokens",
    "stop_sequence": "stop_sequence",
    "pause_turn": "pause_turn",
    "refusal": "refusal",
    "model_context_window_exceeded": "context_window_exceeded",
}


def messages_url(base_url: str) -> str:
    """`{base}/v1/messages`, accepting a base that already ends in /v1."""
    base = base_url.rstrip("/")
    return base + ("/messages" if base.endswith("/v1") else "/v1/messages")


def _block_to_wire(block: ContentBlock) -> dict[str, Any] | None:
    if isinstance(block, TextBlock):
        return {"type": "text", "text": block.text}
    if isinstance(block, ThinkingBlock):
        if block.signature is None:
            return None
        return {"type": "thinking", "thinking": block.thinking, "signature": block.signature}
    if isinstance(block, RedactedThinkingBlock):
        return {"type": "redacted_thinking", "data": block.data}
    if isinstance(block, ToolUseBlock):
        return {"type": "tool_use", "id": block.id, "name": block.name, "input": block.input}
    return {
        "type": "tool_result",
        "tool_use_id": block.tool_use_id,
        "content": block.content,
        "is_error": block.is_error,
    }


def _messages_to_wire(messages: list[Message]) -> tuple[str, list[dict[str, Any]]]:
    system: list[str] = []
    out: list[dict[str, Any]] = []
    for message in messages:
        if message.role == "system":
            system.append(message.text)
            continue
        blocks = [w for w in map(_block_to_wire, message.content) if w is not None]
        if blocks:
            out.append({"role": message.role, "content": blocks})
    return "\n\n".join(system), out


def _tool_choice(choice: str) -> dict[str, Any]:
    if choice in ("auto", "any", "none"):
        return {"type": choice}
    return {"type": "tool", "name": choice}


@forwardpy.impl(AnthropicWire.build_request)
def build_request(
    self: AnthropicWire, request: ModelRequest, route: Route, api_key: str | None, *, stream: bool
) -> HttpCall:
    system, messages = _messages_to_wire(request.messages)
    body: dict[str, Any] = {
        "model": request.model or route.model,
        "max_tokens": request.max_tokens,
        "messages": messages,
    }
    if system:
        body["system"] = system
    if request.tools:
        body["tools"] = [
            {"name": t.name, "description": t.description, "input_schema": t.input_schema}
            for t in request.tools
        ]
        body["tool_choice"] = _tool_choice(request.tool_choice)
    if request.temperature is not None:
        body["temperature"] = request.temperature
    if request.stop_sequences:
        body["stop_sequences"] = list(request.stop_sequences)
    if request.thinking_budget:
        body["thinking"] = {"type": "enabled", "budget_tokens": request.thinking_budget}
    if stream:
        body["stream"] = True
    headers = {
        "anthropic-version": API_VERSION,
        "content-type": "application/json",
        "accept": "text/event-stream" if stream else "application/json",
        **route.extra_headers,
    }
    if api_key:
        headers["x-api-key"] = api_key
    return HttpCall(url=messages_url(route.base_url), headers=headers, body=body)


def _usage(raw: Mapping[str, Any], base: Usage | None = None) -> Usage:
    """Anthropic usage -> Usage; fields absent from `raw` keep `base`'s values."""
    base = base or Usage()
    return Usage(
        input_tokens=raw.get("input_tokens") or base.input_tokens,
        output_tokens=raw.get("output_tokens") or base.output_tokens,
        cache_read_tokens=raw.get("cache_read_input_tokens") or base.cache_read_tokens,
        cache_write_tokens=raw.get("cache_creation_input_tokens") or base.cache_write_tokens,
    )


def _block_from_wire(raw: Mapping[str, Any]) -> ContentBlock | None:
    kind = raw.get("type")
    if kind == "text":
        return TextBlock(text=raw["text"])
    if kind == "thinking":
        return ThinkingBlock(thinking=raw["thinking"], signature=raw.get("signature"))
    if kind == "redacted_thinking":
        return RedactedThinkingBlock(data=raw["data"])
    if kind == "tool_use":
        return ToolUseBlock(id=raw["id"], name=raw["name"], input=raw.get("input") or {})
    return None  # server-side blocks (e.g. web search results) are not ours to replay


def _json(body: bytes) -> Any:
    try:
        return json.loads(body)
    except (json.JSONDecodeError, UnicodeDecodeError):
        text = body.decode("utf-8", "replace")
        raise MalformedResponse(
            f"expected JSON, got {text[:200]!r}", provider="anthropic"
        ) from None


@forwardpy.impl(AnthropicWire.parse_response)
def parse_response(self: AnthropicWire, body: bytes, route: Route) -> ModelResponse:
    raw = _json(body)
    try:
        blocks = [b for b in map(_block_from_wire, raw["content"]) if b is not None]
        stop = raw.get("stop_reason") or "end_turn"
        return ModelResponse(
            content=blocks,
            stop_reason=_STOP.get(stop, "other"),
            raw_stop_reason=stop,
            usage=_usage(raw.get("usage") or {}),
            model=raw.get("model", route.model),
            provider="anthropic",
            id=raw.get("id", ""),
        )
    except (KeyError, TypeError, ValueError) as exc:
        raise MalformedResponse(
            f"not a Messages API response ({exc!r})", provider="anthropic", model=route.model
        ) from None


@forwardpy.impl(AnthropicWire.classify_error)
def classify_error(
    self: AnthropicWire, status: int, headers: Mapping[str, str], body: bytes, route: Route
) -> ProviderError:
    try:
        raw = json.loads(body)
        error = raw["error"]
        error_type, message = error.get("type"), str(error.get("message", ""))
        request_id = raw.get("request_id")
    except (json.JSONDecodeError, UnicodeDecodeError, KeyError, TypeError, AttributeError):
        error_type, request_id = None, None
        message = body_message(body, status)
    return make_error(
        route,
        status=status,
        error_type=error_type,
        message=message,
        request_id=request_id or headers.get("request-id"),
        headers=headers,
    )


class AnthropicStreamDecoder:
    """Decodes one Messages API event stream (see the module docstring)."""

    def __init__(self, route: Route) -> None:
        self.route = route
        self.builder = ResponseBuilder(provider="anthropic", model=route.model)
        self.stop_reason: str | None = None
        self.finished = False

    @property
    def has_content(self) -> bool:
        return self.builder.has_content

    def feed(self, event: str | None, data: str) -> list[StreamEvent]:
        if event == "ping":
            return []
        try:
            raw = decode_json(data)
        except json.JSONDecodeError:
            raise MalformedResponse(
                f"expected JSON, got {data[:200]!r}", provider="anthropic"
            ) from None
        kind = event
        try:
            kind = kind or raw.get("type")
            if kind == "content_block_delta":
                return self._delta(raw["index"], raw["delta"])
            handler = getattr(self, "_on_" + str(kind), None)
            # Unknown events are skipped, as the API's versioning policy asks of clients.
            return handler(raw) if handler is not None else []
        except (KeyError, TypeError, AttributeError, ValidationError) as exc:
            raise MalformedResponse(
                f"malformed {kind} event ({malformed_reason(exc)})",
                provider="anthropic",
                model=self.route.model,
            ) from None

    def _delta(self, index: int, delta: Mapping[str, Any]) -> list[StreamEvent]:
        kind = delta.get("type")
        builder = self.builder
        if kind == "text_delta":
            return [builder.text(index, delta["text"])]
        if kind == "input_json_delta":
            return [builder.tool_json(index, delta["partial_json"])]
        if kind == "thinking_delta":
            return [builder.thinking(index, delta["thinking"])]
        if kind == "signature_delta":
            builder.signature(index, delta["signature"])
        return []

    def _on_message_start(self, raw: Mapping[str, Any]) -> list[StreamEvent]:
        message = raw["message"]
        self.builder.id = message.get("id", "")
        self.builder.model = message.get("model") or self.route.model
        self.builder.usage = _usage(message.get("usage") or {})
        return [UsageUpdate(usage=self.builder.usage)]

    def _on_content_block_start(self, raw: Mapping[str, Any]) -> list[StreamEvent]:
        index, block = raw["index"], raw["content_block"]
        kind = block.get("type")
        if kind == "tool_use":
            return [self.builder.tool_start(index, block["id"], block["name"])]
        if kind == "thinking":
            self.builder.thinking(index, block.get("thinking", ""))
            if block.get("signature"):
                self.builder.signature(index, block["signature"])
            return []
        if kind == "redacted_thinking":
            self.builder.whole_block(index, RedactedThinkingBlock(data=block["data"]))
            return []
        if kind == "text":
            delta = self.builder.text(index, block.get("text", ""))
            return [delta] if delta.text else []
        return []

    def _on_content_block_stop(self, raw: Mapping[str, Any]) -> list[StreamEvent]:
        end = self.builder.close(raw["index"])
        return [end] if end is not None else []

    def _on_message_delta(self, raw: Mapping[str, Any]) -> list[StreamEvent]:
        self.stop_reason = raw.get("delta", {}).get("stop_reason") or self.stop_reason
        self.builder.usage = _usage(raw.get("usage") or {}, self.builder.usage)
        return [UsageUpdate(usage=self.builder.usage)]

    def _on_message_stop(self, raw: Mapping[str, Any]) -> list[StreamEvent]:
        self.finished = True
        return list(self.builder.close_all())

    def _on_error(self, raw: Mapping[str, Any]) -> list[StreamEvent]:
        error = raw.get("error") or {}
        raise make_error(
            self.route,
            status=None,
            error_type=error.get("type"),
            message=str(error.get("message", "")),
            request_id=raw.get("request_id"),
        )

    def finish(self, *, incomplete: bool = False) -> ModelResponse:
        stop = self.stop_reason or "end_turn"
        return self.builder.finish(
            stop_reason=_STOP.get(stop, "other"), raw_stop_reason=stop, incomplete=incomplete
        )


@forwardpy.impl(AnthropicWire.stream_decoder)
def stream_decoder(self: AnthropicWire, route: Route) -> StreamDecoder:
    return AnthropicStreamDecoder(route)
