"""OpenAI-compatible chat-completions bodies and chunk streams for the fake provider.

`dialect` selects server habits: "openai" (tool arguments in fragments, reasoning in
`reasoning_content`), "vllm" (same, integer `code` in errors), "ollama" (each tool call
whole in one chunk, reasoning in `reasoning`), "lmstudio" (like openai; bare-string errors
come from `fault.bare_string`).
"""

from __future__ import annotations

import json
import time
from typing import Any

from liveforge.testing.script import Fault, Reply, TextPart, ThinkingPart, ToolCallPart, pieces

__all__ = ["chunk_stream", "completion_body", "error_body", "error_chunk"]

# neutral kind -> (HTTP status, error type, code, default message)
ERRORS: dict[str, tuple[int, str, str | None, str]] = {
    "rate_limit": (
        429,
        "requests",
        "rate_limit_exceeded",
        "Rate limit reached for requests. Please try again later.",
    ),
    "overloaded": (
        503,
        "server_error",
        None,
        "The engine is currently overloaded, please try again later",
    ),
    "auth": (401, "invalid_request_error", "invalid_api_key", "Incorrect API key provided."),
    "permission": (403, "invalid_request_error", None, "You are not allowed to do this."),
    "quota": (
        429,
        "insufficient_quota",
        "insufficient_quota",
        "You exceeded your current quota, please check your plan and billing details.",
    ),
    "not_found": (
        404,
        "invalid_request_error",
        "model_not_found",
        "The model `no-such-model` does not exist or you do not have access to it.",
    ),
    "context_overflow": (
        400,
        "invalid_request_error",
        "context_length_exceeded",
        "This model's maximum context length is 128000 tokens. However, your "
        "messages resulted in 250000 tokens. Please reduce the length.",
    ),
    "bad_request": (400, "invalid_request_error", None, "invalid request"),
    "server_error": (500, "server_error", None, "The server had an error processing your request."),
}

_FINISH = {
    "end_turn": "stop",
    "max_tokens": "length",
    "tool_use": "tool_calls",
    "refusal": "content_filter",
    "stop_sequence": "stop",
}


def _usage(counts: dict[str, int]) -> dict[str, Any]:
    prompt = counts["input"] + counts["cache_read"]
    return {
        "prompt_tokens": prompt,
        "completion_tokens": counts["output"],
        "total_tokens": prompt + counts["output"],
        "prompt_tokens_details": {"cached_tokens": counts["cache_read"]},
    }


def _reasoning_key(dialect: str) -> str:
    return "reasoning" if dialect == "ollama" else "reasoning_content"


def completion_body(
    reply: Reply, model: str, request_bytes: int, dialect: str, msg_id: str
) -> dict[str, Any]:
    """A non-streaming `chat.completion` object."""
    text = "".join(p.text for p in reply.parts if isinstance(p, TextPart))
    message: dict[str, Any] = {"role": "assistant", "content": text or None, "refusal": None}
    thinking = "".join(p.text for p in reply.parts if isinstance(p, ThinkingPart))
    if thinking:
        message[_reasoning_key(dialect)] = thinking
    calls = [p for p in reply.parts if isinstance(p, ToolCallPart)]
    if calls:
        message["tool_calls"] = [
            {
                "id": c.id,
                "type": "function",
                "function": {"name": c.name, "arguments": json.dumps(c.input)},
            }
            for c in calls
        ]
    return {
        "id": msg_id,
        "object": "chat.completion",
        "created": int(time.time()),
        "model": reply.model or model,
        "system_fingerprint": "fp_fake",
        "choices": [
            {
                "index": 0,
                "message": message,
                "logprobs": None,
                "finish_reason": _FINISH.get(reply.resolved_stop(), "stop"),
            }
        ],
        "usage": _usage(reply.token_counts(request_bytes)),
    }


class _Chunks:
    """Builds `data:` lines sharing id, created and model."""

    def __init__(self, msg_id: str, model: str) -> None:
        self.base = {
            "id": msg_id,
            "object": "chat.completion.chunk",
            "created": int(time.time()),
            "model": model,
            "system_fingerprint": "fp_fake",
        }

    def delta(self, delta: dict[str, Any], finish: str | None = None) -> bytes:
        choice = {"index": 0, "delta": delta, "logprobs": None, "finish_reason": finish}
        return _data({**self.base, "choices": [choice]})

    def usage(self, counts: dict[str, int]) -> bytes:
        return _data({**self.base, "choices": [], "usage": _usage(counts)})


def _data(obj: dict[str, Any]) -> bytes:
    return b"data: " + json.dumps(obj).encode() + b"\n\n"


def _tool_chunks(
    chunks: _Chunks, position: int, call: ToolCallPart, size: int, dialect: str
) -> list[bytes]:
    arguments = json.dumps(call.input)
    head = {"index": position, "id": call.id, "type": "function"}
    if dialect == "ollama":
        return [
            chunks.delta(
                {"tool_calls": [{**head, "function": {"name": call.name, "arguments": arguments}}]}
            )
        ]
    out = [
        chunks.delta({"tool_calls": [{**head, "function": {"name": call.name, "arguments": ""}}]})
    ]
    out += [
        chunks.delta({"tool_calls": [{"index": position, "function": {"arguments": p}}]})
        for p in pieces(arguments, size)
    ]
    return out


def chunk_stream(
    reply: Reply, model: str, request_bytes: int, dialect: str, msg_id: str, include_usage: bool
) -> list[bytes]:
    """The full `data:` sequence up to and including `[DONE]`."""
    chunks = _Chunks(msg_id, reply.model or model)
    out = [chunks.delta({"role": "assistant", "content": ""})]
    position = 0
    for part in reply.parts:
        if isinstance(part, ThinkingPart):
            key = _reasoning_key(dialect)
            out += [chunks.delta({key: p}) for p in pieces(part.text, reply.chunk)]
        elif isinstance(part, TextPart):
            out += [chunks.delta({"content": p}) for p in pieces(part.text, reply.chunk)]
        elif isinstance(part, ToolCallPart):
            out += _tool_chunks(chunks, position, part, reply.chunk, dialect)
            position += 1
    out.append(chunks.delta({}, _FINISH.get(reply.resolved_stop(), "stop")))
    if include_usage:
        out.append(chunks.usage(reply.token_counts(request_bytes)))
    out.append(b"data: [DONE]\n\n")
    return out


def _error_object(kind: str, message: str, dialect: str) -> dict[str, Any]:
    status, error_type, code, default = ERRORS.get(kind, ERRORS["bad_request"])
    return {
        "message": message or default,
        "type": error_type,
        "param": None,
        "code": status if dialect == "vllm" else code,
    }


def error_chunk(kind: str, message: str, dialect: str) -> bytes:
    """A mid-stream error: a data object with a top-level `error`."""
    return _data({"error": _error_object(kind, message, dialect)})


def error_body(item: Fault, dialect: str) -> tuple[int, bytes]:
    """(status, body) of an HTTP error response."""
    status = item.status or ERRORS.get(item.kind, ERRORS["bad_request"])[0]
    if item.bare_string:
        return status, json.dumps({"error": item.message}).encode()
    return status, json.dumps({"error": _error_object(item.kind, item.message, dialect)}).encode()
