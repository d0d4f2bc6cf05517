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

__all__ = ["SSEParser", "decode_json"]

_raw_decode = json.JSONDecoder().raw_decode


def decode_json(data: str) -> Any:
    """Parse one event's JSON data (faster than json.loads for small strings).

    Raises json.JSONDecodeError for invalid JSON or trailing garbage.
    """
    value, end = _raw_decode(data)
    if end != len(data):
        raise json.JSONDecodeError("extra data", data, end)
    return value


class SSEParser:
    """Splits a byte stream into SSE events without waiting for the end of the stream."""

    def __init__(self) -> None:
        self._buffer = b""

    def feed(self, chunk: bytes) -> list[tuple[str | None, str]]:
        """Add bytes; return every event completed by them, in order."""
        buffer = self._buffer + chunk
        if b"\r" in buffer:
            buffer = self._normalise(buffer)
        if b"\n\n" not in buffer:
            self._buffer = buffer
            return []
        *blocks, self._buffer = buffer.split(b"\n\n")
        events = []
        for block in blocks:
            parsed = _parse_block(block)
            if parsed is not None:
                events.append(parsed)
        return events

    def flush(self) -> list[tuple[str | None, str]]:
        """Events left when the stream ended without a final blank line."""
        rest, self._buffer = self._buffer.rstrip(b"\r"), b""
        parsed = _parse_block(rest) if rest.strip() else None
        return [parsed] if parsed is not None else []

    @staticmethod
    def _normalise(buffer: bytes) -> bytes:
        # A trailing CR may be the first half of a CRLF split across chunks: keep it raw.
        tail = b"\r" if buffer.endswith(b"\r") else b""
        body = buffer[:-1] if tail else buffer
        return body.replace(b"\r\n", b"\n").replace(b"\r", b"\n") + tail


def _parse_block(block: bytes) -> tuple[str | None, str] | None:
    """One event block -> (event, data); None for a block of comments only."""
    # Fast path for the shapes model APIs send: "event: X\ndata: Y" and "data: Y".
    if block.startswith(b"event: "):
        newline = block.find(b"\n")
        if newline > 0 and block.startswith(b"data: ", newline + 1) \
                and block.find(b"\n", newline + 1) < 0:
            return (block[7:newline].decode("utf-8", "replace"),
                    block[newline + 7:].decode("utf-8", "replace"))
    elif block.startswith(b"data: ") and b"\n" not in block:
        return None, block[6:].decode("utf-8", "replace")
    return _parse_general(block)


def _parse_general(block: bytes) -> tuple[str | None, str] | None:
    event: str | None = None
    data: list[str] = []
    for raw in block.decode("utf-8", errors="replace").split("\n"):
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
