"""Anthropic Messages API bodies and event streams for the fake provider."""

from __future__ import annotations

import json
from typing import Any

from liveforge.testing.script import (
    Fault,
    Part,
    RedactedThinkingPart,
    Reply,
    TextPart,
    ThinkingPart,
    pieces,
)

__all__ = ["error_body", "error_event", "message_body", "stream_events"]

# neutral kind -> (HTTP status, Anthropic error type, default message)
ERRORS: dict[str, tuple[int, str, str]] = {
    "rate_limit": (
        429,
        "rate_limit_error",
        "Number of request tokens has exceeded your per-minute rate limit",
    ),
    "overloaded": (529, "overloaded_error", "Overloaded"),
    "auth": (401, "authentication_error", "invalid x-api-key"),
    "permission": (403, "permission_error", "Your API key does not have permission"),
    "quota": (402, "billing_error", "Your credit balance is too low to access the API"),
    "not_found": (404, "not_found_error", "model: no-such-model"),
    "context_overflow": (
        400,
        "invalid_request_error",
        "prompt is too long: 250000 tokens > 200000 maximum",
    ),
    "bad_request": (400, "invalid_request_error", "invalid request"),
    "server_error": (500, "api_error", "Internal server error"),
}


def _sse(event: str, data: dict[str, Any]) -> bytes:
    return f"event: {event}\ndata: {json.dumps(data)}\n\n".encode()


def _usage(counts: dict[str, int], output: int) -> dict[str, int]:
    return {
        "input_tokens": counts["input"],
        "output_tokens": output,
        "cache_creation_input_tokens": counts["cache_write"],
        "cache_read_input_tokens": counts["cache_read"],
    }


def _block(part: Part) -> dict[str, Any]:
    if isinstance(part, TextPart):
        return {"type": "text", "text": part.text}
    if isinstance(part, ThinkingPart):
        return {"type": "thinking", "thinking": part.text, "signature": part.signature}
    if isinstance(part, RedactedThinkingPart):
        return {"type": "redacted_thinking", "data": part.data}
    return {"type": "tool_use", "id": part.id, "name": part.name, "input": part.input}


def message_body(reply: Reply, model: str, request_bytes: int, msg_id: str) -> dict[str, Any]:
    """A non-streaming `message` object."""
    counts = reply.token_counts(request_bytes)
    return {
        "id": msg_id,
        "type": "message",
        "role": "assistant",
        "model": reply.model or model,
        "content": [_block(p) for p in reply.parts],
        "stop_reason": reply.resolved_stop(),
        "stop_sequence": None,
        "usage": _usage(counts, counts["output"]),
    }


def _block_events(index: int, part: Part, size: int) -> list[bytes]:
    start: dict[str, Any]
    deltas: list[dict[str, Any]]
    if isinstance(part, TextPart):
        start = {"type": "text", "text": ""}
        deltas = [{"type": "text_delta", "text": p} for p in pieces(part.text, size)]
    elif isinstance(part, ThinkingPart):
        start = {"type": "thinking", "thinking": ""}
        deltas = [{"type": "thinking_delta", "thinking": p} for p in pieces(part.text, size)]
        deltas.append({"type": "signature_delta", "signature": part.signature})
    elif isinstance(part, RedactedThinkingPart):
        start, deltas = _block(part), []
    else:
        start = {"type": "tool_use", "id": part.id, "name": part.name, "input": {}}
        # The API's first input_json_delta is often empty; clients must cope.
        deltas = [
            {"type": "input_json_delta", "partial_json": p}
            for p in ["", *pieces(json.dumps(part.input), size)]
        ]
    events = [
        _sse(
            "content_block_start",
            {"type": "content_block_start", "index": index, "content_block": start},
        )
    ]
    events += [
        _sse("content_block_delta", {"type": "content_block_delta", "index": index, "delta": d})
        for d in deltas
    ]
    events.append(_sse("content_block_stop", {"type": "content_block_stop", "index": index}))
    return events


def stream_events(reply: Reply, model: str, request_bytes: int, msg_id: str) -> list[bytes]:
    """The full SSE event sequence, message_start to message_stop."""
    counts = reply.token_counts(request_bytes)
    start: dict[str, Any] = {
        "id": msg_id,
        "type": "message",
        "role": "assistant",
        "model": reply.model or model,
        "content": [],
        "stop_reason": None,
        "stop_sequence": None,
        "usage": _usage(counts, 1),
    }
    events = [
        _sse("message_start", {"type": "message_start", "message": start}),
        _sse("ping", {"type": "ping"}),
    ]
    for index, part in enumerate(reply.parts):
        events += _block_events(index, part, reply.chunk)
    events.append(
        _sse(
            "message_delta",
            {
                "type": "message_delta",
                "delta": {"stop_reason": reply.resolved_stop(), "stop_sequence": None},
                "usage": {"output_tokens": counts["output"]},
            },
        )
    )
    events.append(_sse("message_stop", {"type": "message_stop"}))
    return events


def error_event(kind: str, message: str, request_id: str) -> bytes:
    """An in-stream `error` event (sent after HTTP 200)."""
    _, error_type, default = ERRORS.get(kind, ERRORS["overloaded"])
    return _sse(
        "error",
        {
            "type": "error",
            "error": {"type": error_type, "message": message or default},
            "request_id": request_id,
        },
    )


def error_body(item: Fault, request_id: str) -> tuple[int, bytes]:
    """(status, body) of an HTTP error response."""
    status, error_type, default = ERRORS.get(item.kind, ERRORS["bad_request"])
    message = item.message or default
    if item.bare_string:
        return item.status or status, json.dumps({"error": message}).encode()
    body = {
        "type": "error",
        "error": {"type": error_type, "message": message},
        "request_id": request_id,
    }
    return item.status or status, json.dumps(body).encode()
