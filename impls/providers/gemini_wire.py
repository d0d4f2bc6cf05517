"""The Gemini API wire format (`GeminiWire` bodies), over plain HTTP like the others.

Request: `contents` with roles `user` / `model` (consecutive turns of one role merged),
system messages hoisted into `systemInstruction`, tools as `functionDeclarations` with
their JSON Schema in `parametersJsonSchema`, tool results as `functionResponse` parts
(named after the call they answer). A tool call's `thoughtSignature` (Gemini's proof of its
reasoning, required back with the call by thinking models) travels in
`ToolUseBlock.signature`; thought summaries (`thought: true`) become ThinkingBlocks without
a signature and are not sent back. The key goes in `x-goog-api-key`.

Streaming (`:streamGenerateContent?alt=sse`): every `data:` event is a whole
GenerateContentResponse holding the next parts; function calls arrive whole; the event
with `finishReason` (and the final `usageMetadata`) ends the message — there is no
`[DONE]`. An `{"error": …}` object inside the stream raises the matching ProviderError.
Errors are google.rpc.Status bodies; `RetryInfo.retryDelay` counts as retry-after.
"""

from __future__ import annotations

import itertools
import json
import re
from collections.abc import Mapping
from typing import Any

import forwardpy
from pydantic import ValidationError

from liveforge.declarations.messages import (
    Message,
    ModelRequest,
    ModelResponse,
    StopReason,
    StreamEvent,
    TextBlock,
    ToolResultBlock,
    ToolUseBlock,
    Usage,
    UsageUpdate,
)
from liveforge.declarations.provider import GeminiWire, HttpCall, Route, StreamDecoder
from liveforge.declarations.provider_errors import MalformedResponse, ProviderError
from liveforge.impls.providers.assembly import ResponseBuilder
from liveforge.impls.providers.classify import body_message, make_error, malformed_reason
from liveforge.impls.providers.sse import decode_json

__all__ = ["GeminiStreamDecoder", "model_url"]

_REFUSALS = {
    "SAFETY",
    "RECITATION",
    "BLOCKLIST",
    "PROHIBITED_CONTENT",
    "SPII",
    "IMAGE_SAFETY",
    "LANGUAGE",
    "OTHER",
}
_MODES = {"auto": "AUTO", "any": "ANY", "none": "NONE"}
_ids = itertools.count(1)


def model_url(base_url: str, model: str, *, stream: bool) -> str:
    """`{base}/v1beta/models/{model}:generateContent` (or the streaming method).

    A base that already names an API version (…/v1beta, …/v1) is kept as it is.
    """
    base = base_url.rstrip("/")
    if not re.search(r"/v1(alpha|beta)?\d*$", base):
        base += "/v1beta"
    method = "streamGenerateContent?alt=sse" if stream else "generateContent"
    return f"{base}/models/{model.removeprefix('models/')}:{method}"


def _call_to_wire(call: ToolUseBlock) -> dict[str, Any]:
    part: dict[str, Any] = {"functionCall": {"name": call.name, "args": call.input, "id": call.id}}
    if call.signature:
        part["thoughtSignature"] = call.signature
    return part


def _result_to_wire(block: ToolResultBlock, names: Mapping[str, str]) -> dict[str, Any]:
    key = "error" if block.is_error else "result"
    response = {
        "name": names.get(block.tool_use_id, block.tool_use_id),
        "id": block.tool_use_id,
        "response": {key: block.content},
    }
    return {"functionResponse": response}


def _parts(message: Message, names: Mapping[str, str]) -> list[dict[str, Any]]:
    parts: list[dict[str, Any]] = []
    for block in message.content:
        if isinstance(block, TextBlock) and block.text:
            parts.append({"text": block.text})
        elif isinstance(block, ToolUseBlock):
            parts.append(_call_to_wire(block))
        elif isinstance(block, ToolResultBlock):
            parts.append(_result_to_wire(block, names))
    return parts


def contents_to_wire(messages: list[Message]) -> tuple[str, list[dict[str, Any]]]:
    """(system instruction text, `contents`) for `messages`."""
    names = {c.id: c.name for m in messages for c in m.tool_calls}
    system: list[str] = []
    out: list[dict[str, Any]] = []
    for message in messages:
        if message.role == "system":
            system.append(message.text)
            continue
        role = "model" if message.role == "assistant" else "user"
        parts = _parts(message, names)
        if not parts:
            continue
        if out and out[-1]["role"] == role:
            out[-1]["parts"].extend(parts)
        else:
            out.append({"role": role, "parts": parts})
    return "\n\n".join(system), out


def _tool_config(choice: str) -> dict[str, Any]:
    if choice in _MODES:
        return {"functionCallingConfig": {"mode": _MODES[choice]}}
    return {"functionCallingConfig": {"mode": "ANY", "allowedFunctionNames": [choice]}}


def _generation_config(request: ModelRequest) -> dict[str, Any]:
    config: dict[str, Any] = {"maxOutputTokens": request.max_tokens}
    if request.temperature is not None:
        config["temperature"] = request.temperature
    if request.stop_sequences:
        config["stopSequences"] = list(request.stop_sequences)
    if request.thinking_budget:
        config["thinkingConfig"] = {
            "thinkingBudget": request.thinking_budget,
            "includeThoughts": True,
        }
    return config


@forwardpy.impl(GeminiWire.build_request)
def build_request(
    self: GeminiWire, request: ModelRequest, route: Route, api_key: str | None, *, stream: bool
) -> HttpCall:
    system, contents = contents_to_wire(request.messages)
    body: dict[str, Any] = {"contents": contents}
    if system:
        body["systemInstruction"] = {"parts": [{"text": system}]}
    if request.tools:
        declarations = [
            {"name": t.name, "description": t.description, "parametersJsonSchema": t.input_schema}
            for t in request.tools
        ]
        body["tools"] = [{"functionDeclarations": declarations}]
        body["toolConfig"] = _tool_config(request.tool_choice)
    body["generationConfig"] = _generation_config(request)
    headers = {
        "content-type": "application/json",
        "accept": "text/event-stream" if stream else "application/json",
        **route.extra_headers,
    }
    if api_key:
        headers[route.key_header or "x-goog-api-key"] = api_key
    url = model_url(route.base_url, request.model or route.model, stream=stream)
    return HttpCall(url=url, headers=headers, body=body)


def _usage(raw: Mapping[str, Any]) -> Usage:
    cached = raw.get("cachedContentTokenCount") or 0
    return Usage(
        input_tokens=max(0, (raw.get("promptTokenCount") or 0) - cached),
        output_tokens=(raw.get("candidatesTokenCount") or 0) + (raw.get("thoughtsTokenCount") or 0),
        cache_read_tokens=cached,
    )


def _stop(finish: str | None, has_tools: bool) -> StopReason:
    if finish in (None, "STOP", "FINISH_REASON_UNSPECIFIED"):
        return "tool_use" if has_tools else "end_turn"
    if finish == "MAX_TOKENS":
        return "max_tokens"
    return "refusal" if finish in _REFUSALS else "other"


def _blocked(raw: Mapping[str, Any]) -> str | None:
    """The block reason when the prompt itself was refused (no candidates at all)."""
    feedback = raw.get("promptFeedback") or {}
    return feedback.get("blockReason") if not raw.get("candidates") else None


@forwardpy.impl(GeminiWire.parse_response)
def parse_response(self: GeminiWire, body: bytes, route: Route) -> ModelResponse:
    decoder = GeminiStreamDecoder(route)
    try:
        raw = json.loads(body)
        if not isinstance(raw, dict) or not ("candidates" in raw or "promptFeedback" in raw):
            raise KeyError("candidates")
    except (json.JSONDecodeError, UnicodeDecodeError, KeyError) as exc:
        raise MalformedResponse(
            f"not a GenerateContentResponse ({exc!r}): {body[:200]!r}",
            provider=decoder.builder.provider,
            model=route.model,
        ) from None
    decoder.decode(raw, body.decode("utf-8", "replace"))
    if decoder.finish_reason is None:
        decoder.finish_reason = "STOP"
    return decoder.finish()


def _retry_delay(details: Any) -> str | None:
    """Seconds from a google.rpc.RetryInfo detail ("7s", "0.5s"), as a header value."""
    for detail in details if isinstance(details, list) else ():
        delay = detail.get("retryDelay") if isinstance(detail, dict) else None
        found = re.fullmatch(r"(\d+(?:\.\d+)?)s", str(delay or ""))
        if found:
            return found.group(1)
    return None


def error_fields(raw: Any) -> tuple[str | None, str, int | None, str | None]:
    """(type, message, code, retry delay) of a google.rpc.Status error body.

    The type is the detail's `reason` when one is given (API_KEY_INVALID arrives as a 400
    INVALID_ARGUMENT), else the status name (RESOURCE_EXHAUSTED, UNAVAILABLE, ...).
    """
    error = raw.get("error", raw) if isinstance(raw, dict) else raw
    if not isinstance(error, dict):
        return None, str(error), None, None
    details = error.get("details")
    reasons = [d.get("reason") for d in details or () if isinstance(d, dict) and d.get("reason")]
    kind = reasons[0] if reasons else error.get("status")
    code = error.get("code") if isinstance(error.get("code"), int) else None
    return kind, str(error.get("message", "")), code, _retry_delay(details)


@forwardpy.impl(GeminiWire.classify_error)
def classify_error(
    self: GeminiWire, status: int, headers: Mapping[str, str], body: bytes, route: Route
) -> ProviderError:
    delay: str | None = None
    try:
        kind, message, _, delay = error_fields(json.loads(body))
    except (json.JSONDecodeError, UnicodeDecodeError):
        kind, message = None, body_message(body, status)
    merged = dict(headers)
    if delay and "retry-after" not in headers:
        merged["retry-after"] = delay
    return make_error(
        route,
        status=status,
        error_type=kind,
        message=message,
        request_id=headers.get("x-request-id"),
        headers=merged,
    )


class GeminiStreamDecoder:
    """Decodes GenerateContentResponse events (see the module docstring); also serves the
    non-streaming body, which is one such event."""

    def __init__(self, route: Route) -> None:
        self.route = route
        self.builder = ResponseBuilder(provider=route.name.partition(":")[0], model=route.model)
        self.finish_reason: str | None = None
        self._segment = 0  # text after a function call opens a new text block
        self._calls = 0

    @property
    def has_content(self) -> bool:
        return self.builder.has_content

    @property
    def finished(self) -> bool:
        return self.finish_reason is not None

    def feed(self, event: str | None, data: str) -> list[StreamEvent]:
        try:
            raw = decode_json(data)
        except json.JSONDecodeError as exc:
            raise self._malformed(exc, data) from None
        return self.decode(raw, data)

    def decode(self, raw: Any, data: str) -> list[StreamEvent]:
        """Decode one GenerateContentResponse object (`data`: its text, for messages)."""
        try:
            if "error" in raw:
                kind, message, code, _ = error_fields(raw)
                raise make_error(self.route, status=code, error_type=kind, message=message)
            return self._chunk(raw)
        except (KeyError, TypeError, AttributeError, ValidationError) as exc:
            raise self._malformed(exc, data) from None

    def _malformed(self, exc: Exception, data: str) -> MalformedResponse:
        return MalformedResponse(
            f"malformed stream chunk ({malformed_reason(exc)}): {data[:200]!r}",
            provider=self.builder.provider,
            model=self.route.model,
        )

    def _chunk(self, raw: Mapping[str, Any]) -> list[StreamEvent]:
        events: list[StreamEvent] = []
        builder = self.builder
        builder.id = builder.id or raw.get("responseId") or ""
        builder.model = raw.get("modelVersion") or builder.model
        candidates = raw.get("candidates") or ()
        for candidate in candidates[:1]:
            for part in (candidate.get("content") or {}).get("parts") or ():
                events.extend(self._part(part))
            if candidate.get("finishReason"):
                self.finish_reason = candidate["finishReason"]
        blocked = _blocked(raw)
        if blocked:
            self.finish_reason = blocked
        if self.finish_reason is not None:
            events.extend(builder.close_all())
        if raw.get("usageMetadata"):
            usage = _usage(raw["usageMetadata"])
            if usage != builder.usage:
                builder.usage = usage
                events.append(UsageUpdate(usage=usage))
        return events

    def _part(self, part: Mapping[str, Any]) -> list[StreamEvent]:
        call = part.get("functionCall")
        if call is not None:
            return self._call(call, part.get("thoughtSignature"))
        text = part.get("text")
        if not text:
            return []
        if part.get("thought"):
            return [self.builder.thinking(("thought", self._segment), text)]
        return [self.builder.text(("text", self._segment), text)]

    def _call(self, call: Mapping[str, Any], signature: str | None) -> list[StreamEvent]:
        self._calls += 1
        self._segment += 1
        key = ("tool", self._calls)
        call_id = call.get("id") or f"call_gemini_{next(_ids)}"
        start = self.builder.tool_start(key, call_id, call["name"])
        if signature:
            self.builder.signature(key, signature)
        args = call.get("args") or {}
        if not isinstance(args, dict):
            raise MalformedResponse(f"tool call {call['name']!r} args are not a JSON object")
        delta = self.builder.tool_json(key, json.dumps(args))
        events: list[StreamEvent] = [start, delta]
        end = self.builder.close(key)
        return events + ([end] if end is not None else [])

    def finish(self, *, incomplete: bool = False) -> ModelResponse:
        return self.builder.finish(
            stop_reason=_stop(self.finish_reason, self._calls > 0),
            raw_stop_reason=self.finish_reason,
            incomplete=incomplete,
        )


@forwardpy.impl(GeminiWire.stream_decoder)
def stream_decoder(self: GeminiWire, route: Route) -> StreamDecoder:
    return GeminiStreamDecoder(route)
