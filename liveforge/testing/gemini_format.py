"""Gemini API bodies and `data:` streams for the fake provider.

Like the Gemini Developer API: every streamed event is a whole GenerateContentResponse with
the next parts, function calls arrive whole (with the script's call id), the first call
carries the
thought signature of a reply that thought, the last event has `finishReason` and the
usage, and there is no end marker. Errors are google.rpc.Status objects; a retry delay
travels in a RetryInfo detail, not in a header.
"""

from __future__ import annotations

import json
from typing import Any

from liveforge.testing.script import Fault, Reply, TextPart, ThinkingPart, ToolCallPart, pieces

__all__ = ["error_body", "error_event", "response_body", "stream_events"]

_HELP = "https://ai.google.dev/gemini-api/docs/troubleshooting"

# neutral kind -> (HTTP status, google.rpc status, ErrorInfo reason, default message)
ERRORS: dict[str, tuple[int, str, str | None, str]] = {
    "rate_limit": (
        429,
        "RESOURCE_EXHAUSTED",
        None,
        "Resource has been exhausted (e.g. check quota).",
    ),
    "overloaded": (503, "UNAVAILABLE", None, "The model is overloaded. Please try again later."),
    "auth": (
        400,
        "INVALID_ARGUMENT",
        "API_KEY_INVALID",
        "API key not valid. Please pass a valid API key.",
    ),
    "permission": (
        403,
        "PERMISSION_DENIED",
        None,
        "Method doesn't allow unregistered callers. Please use an API Key.",
    ),
    "quota": (
        400,
        "FAILED_PRECONDITION",
        None,
        "Gemini API free tier is not available in your country. Please enable billing on "
        "your project in Google AI Studio.",
    ),
    "not_found": (
        404,
        "NOT_FOUND",
        None,
        "models/no-such-model is not found for API version v1beta, or is not supported for "
        "generateContent.",
    ),
    "context_overflow": (
        400,
        "INVALID_ARGUMENT",
        None,
        "The input token count (2500000) exceeds the maximum number of tokens allowed (1048576).",
    ),
    "bad_request": (400, "INVALID_ARGUMENT", None, "Request contains an invalid argument."),
    "server_error": (
        500,
        "INTERNAL",
        None,
        f"An internal error has occurred. Please retry or report in {_HELP}",
    ),
}

_FINISH = {"max_tokens": "MAX_TOKENS", "refusal": "SAFETY"}


def _usage(counts: dict[str, int]) -> dict[str, Any]:
    prompt = counts["input"] + counts["cache_read"]
    usage = {
        "promptTokenCount": prompt,
        "candidatesTokenCount": counts["output"],
        "totalTokenCount": prompt + counts["output"],
        "promptTokensDetails": [{"modality": "TEXT", "tokenCount": prompt}],
    }
    if counts["cache_read"]:
        usage["cachedContentTokenCount"] = counts["cache_read"]
    return usage


def _signature(reply: Reply) -> str | None:
    return next((p.signature for p in reply.parts if isinstance(p, ThinkingPart)), None)


def _call(part: ToolCallPart, signature: str | None) -> dict[str, Any]:
    out: dict[str, Any] = {"functionCall": {"id": part.id, "name": part.name, "args": part.input}}
    if signature:
        out["thoughtSignature"] = signature
    return out


def _parts(reply: Reply, size: int) -> list[dict[str, Any]]:
    """The reply's parts as Gemini sends them, text cut in `size` pieces."""
    signature = _signature(reply)
    out: list[dict[str, Any]] = []
    for part in reply.parts:
        if isinstance(part, ThinkingPart):
            out += [{"text": p, "thought": True} for p in pieces(part.text, size)]
        elif isinstance(part, TextPart):
            out += [{"text": p} for p in pieces(part.text, size)]
        elif isinstance(part, ToolCallPart):
            out.append(_call(part, signature))
            signature = None  # only the first call of a turn carries it
    return out


def _response(
    parts: list[dict[str, Any]], model: str, msg_id: str, finish: str | None = None
) -> dict[str, Any]:
    candidate: dict[str, Any] = {"content": {"parts": parts, "role": "model"}, "index": 0}
    if finish:
        candidate["finishReason"] = finish
    return {"candidates": [candidate], "modelVersion": model, "responseId": msg_id}


def response_body(reply: Reply, model: str, request_bytes: int, msg_id: str) -> dict[str, Any]:
    """A non-streaming GenerateContentResponse."""
    whole = [p for p in _parts(reply, 1 << 30) if p.get("text") != ""]
    body = _response(whole, reply.model or model, msg_id, _finish(reply))
    body["usageMetadata"] = _usage(reply.token_counts(request_bytes))
    return body


def _finish(reply: Reply) -> str:
    return _FINISH.get(reply.resolved_stop(), "STOP")


def _data(obj: dict[str, Any]) -> bytes:
    return b"data: " + json.dumps(obj).encode() + b"\r\n\r\n"


def stream_events(reply: Reply, model: str, request_bytes: int, msg_id: str) -> list[bytes]:
    """The full `data:` sequence; the last event has finishReason and usageMetadata."""
    model = reply.model or model
    out = [_data(_response([part], model, msg_id)) for part in _parts(reply, reply.chunk)]
    last = _response([{"text": ""}], model, msg_id, _finish(reply))
    last["usageMetadata"] = _usage(reply.token_counts(request_bytes))
    out.append(_data(last))
    return out


def _status(kind: str, message: str, status: int | None = None) -> dict[str, Any]:
    code, name, reason, default = ERRORS.get(kind, ERRORS["bad_request"])
    error: dict[str, Any] = {"code": status or code, "message": message or default, "status": name}
    if reason:
        error["details"] = [
            {
                "@type": "type.googleapis.com/google.rpc.ErrorInfo",
                "reason": reason,
                "domain": "googleapis.com",
                "metadata": {"service": "generativelanguage.googleapis.com"},
            }
        ]
    return error


def error_event(kind: str, message: str) -> bytes:
    """A mid-stream error: a data object with a top-level `error`."""
    return _data({"error": _status(kind, message)})


def _duration(seconds: float) -> str:
    """A protobuf Duration in JSON: "7s", "0.05s"."""
    return f"{seconds:.6f}".rstrip("0").rstrip(".") + "s"


def error_body(item: Fault) -> tuple[int, bytes]:
    """(status, body) of an HTTP error response; a retry delay becomes a RetryInfo detail."""
    error = _status(item.kind, item.message, item.status)
    delay = item.retry_after
    if delay is None and item.retry_after_ms is not None:
        delay = item.retry_after_ms / 1000
    if delay is not None:
        details = error.setdefault("details", [])
        details.append(
            {"@type": "type.googleapis.com/google.rpc.RetryInfo", "retryDelay": _duration(delay)}
        )
    return int(error["code"]), json.dumps({"error": error}).encode()
