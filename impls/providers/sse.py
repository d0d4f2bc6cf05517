"""Incremental Server-Sent Events parser (the subset model APIs use).

Bytes arrive in arbitrary pieces; `SSEParser.feed` returns the complete events so far as
`(event, data)` pairs: `event` is the `event:` field or None, `data` the `data:` lines joined
with newlines. Comment lines (`: ping`) and `id:` / `retry:` fields are ignored. Line endings
may be LF, CRLF or CR.

Example::

    parser = SSEParser()
    parser.feed(b"event: ping\\ndata: {}\\n\\nda")   # -> [("ping", "{}")]
    parser.feed(b"ta: [DONE]\\n\\n")                  # -> [(None, "[DONE]")]
"""

from __future__ import annotations

import json
from typing import Any

from pydantic_core import from_json

__all__ = ["SSEParser", "decode_json"]


def decode_json(data: str) -> Any:
    """Parse one event's JSON data; raises json.JSONDecodeError for invalid JSON.

    pydantic-core's parser (already a dependency) takes half the time of the standard
    library's. Whatever it rejects goes to `json.loads`, so every input the standard library
    accepts gives the same value (lone surrogate escapes included, which pydantic-core
    refuses) and bad input fails with the standard library's error and message.
    """
    try:
        return from_json(data, cache_strings="keys")
    except ValueError:
        return json.loads(data)


class SSEParser:
    """Splits a byte stream into SSE events without waiting for the end of the stream."""

    def __init__(self) -> None:
        self._buffer = b""

    def feed(self, chunk: bytes) -> list[tuple[str | None, str]]:
        """Add bytes; return every event completed by them, in order."""
        buffer = self._buffer + chunk
        if b"\r" in buffer:
            buffer = self._normalise(buffer)
        end = buffer.rfind(b"\n\n")
        if end < 0:
            self._buffer = buffer
            return []
        self._buffer = buffer[end + 2 :]
        # One decode for all complete events: a blank line never falls inside a UTF-8
        # character, so the prefix before it decodes exactly as its blocks would one by one.
        text = buffer[:end].decode("utf-8", "replace")
        if "\n\n" not in text:  # the usual case: one event per network chunk
            event = _parse_block(text)
            return [event] if event is not None else []
        return [event for event in map(_parse_block, text.split("\n\n")) if event is not None]

    def flush(self) -> list[tuple[str | None, str]]:
        """Events left when the stream ended without a final blank line."""
        rest, self._buffer = self._buffer.rstrip(b"\r"), b""
        text = rest.decode("utf-8", "replace")
        parsed = _parse_block(text) if text.strip() else None
        return [parsed] if parsed is not None else []

    @staticmethod
    def _normalise(buffer: bytes) -> bytes:
        # A trailing CR may be the first half of a CRLF split across chunks: keep it raw.
        tail = b"\r" if buffer.endswith(b"\r") else b""
        body = buffer[:-1] if tail else buffer
        return body.replace(b"\r\n", b"\n").replace(b"\r", b"\n") + tail


def _parse_block(block: str) -> tuple[str | None, str] | None:
    """One event block -> (event, data); None for a block of comments only."""
    # Fast path for the shapes model APIs send: "event: X\ndata: Y" and "data: Y".
    head, _, rest = block.partition("\n")
    if head[:7] == "event: ":
        if rest[:6] == "data: " and "\n" not in rest:
            return head[7:], rest[6:]
    elif head[:6] == "data: " and not rest:
        return None, head[6:]
    return _parse_general(block)


def _parse_general(block: str) -> tuple[str | None, str] | None:
    event: str | None = None
    data: list[str] = []
    for raw in block.split("\n"):
        if not raw or raw[0] == ":":
            continue
        name, _, value = raw.partition(":")
        if value[:1] == " ":
            value = value[1:]
        if name == "data":
            data.append(value)
        elif name == "event":
            event = value
    if event is None and not data:
        return None
    return event, "\n".join(data)
