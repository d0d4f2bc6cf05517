"""The OpenAI-compatible chat-completions wire format (`OpenAIWire` bodies).

Serves OpenAI, Ollama, vLLM, LM Studio and llama.cpp. Tool results become `role: tool`
messages placed right after the assistant turn; tool arguments travel as JSON strings.
Thinking blocks are not sent back (these servers do not accept them); reasoning arrives as
`reasoning_content` (vLLM, DeepSeek) or `reasoning` (Ollama) and becomes a ThinkingBlock.
Streaming: `data:` chunks with `choices[0].delta`, tool-call fragments accumulated by
`index` (Ollama sends each call whole, sometimes all at index 0: a new `id` opens a new
call), a usage chunk with `choices: []`, then `data: [DONE]`. An error object inside the
stream raises the matching ProviderError.
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
    StopReason,
    StreamEvent,
    TextBlock,
    ThinkingBlock,
    ToolResultBlock,
    ToolUseBlock,
    Usage,
    UsageUpdate,
)
from liveforge.declarations.provider import HttpCall, OpenAIWire, Route, StreamDecoder
from liveforge.declarations.provider_errors import MalformedResponse, ProviderError
from liveforge.impls.providers.assembly import ResponseBuilder
from liveforge.impls.providers.classify import body_message, make_error, malformed_reason
from liveforge.impls.providers.sse import decode_json

_STOP: dict[str, StopReason] = {
    "stop": "end_turn",
    "length": "max_tokens",
    "tool_calls": "tool_use",
    "function_call": "tool_use",
    "content_filter": "refusal",
}


def _provider(route: Route) -> str:
    return route.name.partition(":")[0] or "openai"


def _assistant_to_wire(message: Message) -> dict[str, Any]:
    out: dict[str, Any] = {"role": "assistant", "content": message.text or None}
    calls = [
        {
            "id": c.id,
            "type": "function",
            "function": {"name": c.name, "arguments": json.dumps(c.input)},
        }
        for c in message.tool_calls
    ]
    if calls:
        out["tool_calls"] = calls
    return out


def _user_to_wire(message: Message) -> list[dict[str, Any]]:
    out: list[dict[str, Any]] = []
    for block in message.content:
        if isinstance(block, ToolResultBlock):
            content = f"Error: {block.content}" if block.is_error else block.content
            out.append({"role": "tool", "tool_call_id": block.tool_use_id, "content": content})
    if message.text:
        out.append({"role": message.role, "content": message.text})
    return out


def _messages_to_wire(messages: list[Message]) -> list[dict[str, Any]]:
    out: list[dict[str, Any]] = []
    for message in messages:
        if message.role == "assistant":
            if message.text or message.tool_calls:
                out.append(_assistant_to_wire(message))
        else:
            out.extend(_user_to_wire(message))
    return out


def _tool_choice(choice: str) -> Any:
    if choice in ("auto", "none"):
        return choice
    if choice == "any":
        return "required"
    return {"type": "function", "function": {"name": choice}}


@forwardpy.impl(OpenAIWire.build_request)
def build_request(
    self: OpenAIWire, request: ModelRequest, route: Route, api_key: str | None, *, stream: bool
) -> HttpCall:
    body: dict[str, Any] = {
        "model": request.model or route.model,
        "messages": _messages_to_wire(request.messages),
    }
    limit_key = "max_completion_tokens" if _provider(route) == "openai" else "max_tokens"
    body[limit_key] = request.max_tokens
    if request.tools:
        body["tools"] = [
            {
                "type": "function",
                "function": {
                    "name": t.name,
                    "description": t.description,
                    "parameters": t.input_schema,
                },
            }
            for t in request.tools
        ]
        body["tool_choice"] = _tool_choice(request.tool_choice)
    if request.temperature is not None:
        body["temperature"] = request.temperature
    if request.stop_sequences:
        body["stop"] = list(request.stop_sequences)
    if stream:
        body["stream"] = True
        body["stream_options"] = {"include_usage": True}
    headers = {
        "content-type": "application/json",
        "accept": "text/event-stream" if stream else "application/json",
        **route.extra_headers,
    }
    if api_key and route.key_header:
        headers[route.key_header] = api_key
    elif api_key:
        headers["authorization"] = f"Bearer {api_key}"
    url = route.base_url.rstrip("/") + "/chat/completions"
    return HttpCall(url=url, headers=headers, body=body)


def _usage(raw: Mapping[str, Any] | None) -> Usage:
    if not raw:
        return Usage()
    cached = (raw.get("prompt_tokens_details") or {}).get("cached_tokens") or 0
    return Usage(
        input_tokens=max(0, (raw.get("prompt_tokens") or 0) - cached),
        output_tokens=raw.get("completion_tokens") or 0,
        cache_read_tokens=cached,
    )


def _arguments(name: str, arguments: Any) -> dict[str, Any]:
    if isinstance(arguments, dict):
        return arguments
    try:
        value = json.loads(arguments or "{}")
    except (json.JSONDecodeError, TypeError):
        raise MalformedResponse(
            f"tool call {name!r} arguments are not valid JSON: {str(arguments)[:200]!r}"
        ) from None
    if not isinstance(value, dict):
        raise MalformedResponse(f"tool call {name!r} arguments are not a JSON object")
    return value


def _stop(finish: str | None, has_tools: bool) -> StopReason:
    # Ollama reports "stop" even when the turn ends in tool calls.
    if has_tools and finish in (None, "stop"):
        return "tool_use"
    return _STOP.get(finish or "stop", "other")


def _message_blocks(message: Mapping[str, Any]) -> list[ContentBlock]:
    blocks: list[ContentBlock] = []
    reasoning = message.get("reasoning_content") or message.get("reasoning")
    if reasoning:
        blocks.append(ThinkingBlock(thinking=reasoning))
    if message.get("content"):
        blocks.append(TextBlock(text=message["content"]))
    for call in message.get("tool_calls") or []:
        function = call["function"]
        blocks.append(
            ToolUseBlock(
                id=call.get("id") or f"call_{len(blocks)}",
                name=function["name"],
                input=_arguments(function["name"], function.get("arguments")),
            )
        )
    return blocks


@forwardpy.impl(OpenAIWire.parse_response)
def parse_response(self: OpenAIWire, body: bytes, route: Route) -> ModelResponse:
    try:
        raw = json.loads(body)
        choice = raw["choices"][0]
        blocks = _message_blocks(choice["message"])
    except (json.JSONDecodeError, UnicodeDecodeError, KeyError, IndexError, TypeError) as exc:
        raise MalformedResponse(
            f"not a chat completion ({exc!r}): {body[:200]!r}",
            provider=_provider(route),
            model=route.model,
        ) from None
    finish = choice.get("finish_reason")
    has_tools = any(isinstance(b, ToolUseBlock) for b in blocks)
    return ModelResponse(
        content=blocks,
        stop_reason=_stop(finish, has_tools),
        raw_stop_reason=finish,
        usage=_usage(raw.get("usage")),
        model=raw.get("model") or route.model,
        provider=_provider(route),
        id=raw.get("id") or "",
    )


def error_fields(raw: Any) -> tuple[str | None, str, int | None]:
    """(type, message, integer code) from an OpenAI-style, vLLM or LM Studio error body."""
    error = raw.get("error", raw) if isinstance(raw, dict) else raw
    if isinstance(error, str):  # LM Studio: {"error": "<message>"}
        return None, error, None
    if not isinstance(error, dict):
        return None, str(error), None
    code = error.get("code")
    kind = code if isinstance(code, str) and code else error.get("type")
    number = code if isinstance(code, int) else None
    return (str(kind) if kind else None), str(error.get("message", "")), number


@forwardpy.impl(OpenAIWire.classify_error)
def classify_error(
    self: OpenAIWire, status: int, headers: Mapping[str, str], body: bytes, route: Route
) -> ProviderError:
    try:
        kind, message, _ = error_fields(json.loads(body))
    except (json.JSONDecodeError, UnicodeDecodeError):
        kind, message = None, body_message(body, status)
    return make_error(
        route,
        status=status,
        error_type=kind,
        message=message,
        request_id=headers.get("x-request-id"),
        headers=headers,
    )


class OpenAIStreamDecoder:
    """Decodes one chat-completions chunk stream (see the module docstring)."""

    def __init__(self, route: Route) -> None:
        self.route = route
        self.builder = ResponseBuilder(provider=_provider(route), model=route.model)
        self.finish_reason: str | None = None
        self.done = False
        self._tools: dict[int, tuple[int, str]] = {}  # wire index -> (our key, call id)
        self._calls = 0

    @property
    def has_content(self) -> bool:
        return self.builder.has_content

    @property
    def finished(self) -> bool:
        # Some servers omit [DONE]; a finish_reason also ends the message.
        return self.done or self.finish_reason is not None

    def feed(self, event: str | None, data: str) -> list[StreamEvent]:
        if data == "[DONE]":
            self.done = True
            return list(self.builder.close_all())
        try:
            raw = decode_json(data)
            if "error" in raw:
                self._raise(raw)
            return self._chunk(raw)
        except (
            json.JSONDecodeError,
            KeyError,
            TypeError,
            AttributeError,
            IndexError,
            ValidationError,
        ) as exc:
            raise MalformedResponse(
                f"malformed stream chunk ({malformed_reason(exc)}): {data[:200]!r}",
                provider=self.builder.provider,
                model=self.route.model,
            ) from None

    def _raise(self, raw: Any) -> None:
        kind, message, code = error_fields(raw)
        raise make_error(self.route, status=code, error_type=kind, message=message)

    def _chunk(self, raw: Mapping[str, Any]) -> list[StreamEvent]:
        events: list[StreamEvent] = []
        builder = self.builder
        builder.id = builder.id or raw.get("id") or ""
        builder.model = raw.get("model") or builder.model
        for choice in raw.get("choices") or ():
            delta = choice.get("delta") or {}
            reasoning = delta.get("reasoning_content") or delta.get("reasoning")
            if reasoning:
                events.append(builder.thinking("reasoning", reasoning))
            if delta.get("content"):
                events.append(builder.text("text", delta["content"]))
            for fragment in delta.get("tool_calls") or ():
                events.extend(self._tool_fragment(fragment))
            if choice.get("finish_reason"):
                self.finish_reason = choice["finish_reason"]
                events.extend(builder.close_all())
        if raw.get("usage"):
            builder.usage = _usage(raw["usage"])
            events.append(UsageUpdate(usage=builder.usage))
        return events

    def _tool_fragment(self, fragment: Mapping[str, Any]) -> list[StreamEvent]:
        index = fragment.get("index", len(self._tools))
        call_id = fragment.get("id")
        function = fragment.get("function") or {}
        events: list[StreamEvent] = []
        known = self._tools.get(index)
        if known is None or (call_id and call_id != known[1]):
            # Calls stream one after another: a new call means the previous one is whole.
            if self._calls:
                end = self.builder.close(("tool", self._calls))
                events.extend([end] if end is not None else [])
            self._calls += 1
            known = (self._calls, call_id or f"call_{self._calls}")
            self._tools[index] = known
            events.append(
                self.builder.tool_start(("tool", known[0]), known[1], function.get("name") or "")
            )
        arguments = function.get("arguments")
        if isinstance(arguments, dict):
            arguments = json.dumps(arguments)
        if arguments:
            events.append(self.builder.tool_json(("tool", known[0]), arguments))
        return events

    def finish(self, *, incomplete: bool = False) -> ModelResponse:
        has_tools = self._calls > 0
        return self.builder.finish(
            stop_reason=_stop(self.finish_reason, has_tools),
            raw_stop_reason=self.finish_reason,
            incomplete=incomplete,
        )


@forwardpy.impl(OpenAIWire.stream_decoder)
def stream_decoder(self: OpenAIWire, route: Route) -> StreamDecoder:
    return OpenAIStreamDecoder(route)
