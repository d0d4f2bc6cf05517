"""Network chunks holding several events (or parts of one), encoded bodies, stream tails.

A small loopback server sends a prepared SSE body in the given pieces, each written and
flushed as its own HTTP chunk, optionally gzip-encoded (flushed per piece, so the client
can decode each piece as it arrives).
"""

from __future__ import annotations

import threading
import zlib
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import pytest
from provider_support import FAST, collect, final, provider, request, run

from liveforge.declarations.messages import (
    Done,
    StreamEvent,
    TextDelta,
    ThinkingDelta,
    ToolCallDelta,
    ToolCallEnd,
)
from liveforge.declarations.provider import Route
from liveforge.declarations.provider_errors import MalformedResponse
from liveforge.testing import anthropic_format, openai_format, reply

ANSWER = (
    reply.thinking("weigh it", signature="sig==")
    .text("Héllo ✓ wörld " * 3)
    .tool_call("view_source", {"path": "a.b"}, id="c1")
    .tool_call("run", {}, id="c2")
    .chunked(3)
)


def _events(protocol: str) -> list[bytes]:
    if protocol == "anthropic":
        return anthropic_format.stream_events(ANSWER, "m", 10, "msg_1")
    return openai_format.chunk_stream(ANSWER, "m", 10, "openai", "c_1", True)


class _PieceServer:
    """Serves `pieces` as the body of every POST, one HTTP chunk per piece."""

    def __init__(self, pieces: list[bytes], *, gzip: bool = False) -> None:
        owner = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, format: str, *args: Any) -> None:
                """Silence the access log."""

            def do_POST(self) -> None:
                self.rfile.read(int(self.headers.get("content-length") or 0))
                self.send_response(200)
                self.send_header("content-type", "text/event-stream")
                self.send_header("transfer-encoding", "chunked")
                if owner.gzip:
                    self.send_header("content-encoding", "gzip")
                self.end_headers()
                for piece in owner.encoded():
                    self.wfile.write(b"%x\r\n%s\r\n" % (len(piece), piece))
                    self.wfile.flush()
                self.wfile.write(b"0\r\n\r\n")

        self.pieces, self.gzip = pieces, gzip
        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.server.daemon_threads = True
        threading.Thread(target=self.server.serve_forever, args=(0.01,), daemon=True).start()

    def encoded(self) -> Iterator[bytes]:
        if not self.gzip:
            yield from self.pieces
            return
        compressor = zlib.compressobj(wbits=31)  # gzip container
        for piece in self.pieces:
            yield compressor.compress(piece) + compressor.flush(zlib.Z_SYNC_FLUSH)
        yield compressor.flush()

    def route(self, protocol: str) -> Route:
        return Route(
            name=f"{protocol}:m",
            protocol=protocol,
            model="m",
            base_url=f"http://127.0.0.1:{self.server.server_port}",
        )

    def close(self) -> None:
        self.server.shutdown()
        self.server.server_close()


def _stream(pieces: list[bytes], protocol: str, *, gzip: bool = False) -> list[StreamEvent]:
    server = _PieceServer(pieces, gzip=gzip)
    try:
        return run(collect(provider(server.route(protocol)), request()))
    finally:
        server.close()


def _every(data: bytes, size: int) -> list[bytes]:
    return [data[i : i + size] for i in range(0, len(data), size)]


@pytest.mark.parametrize("protocol", ["anthropic", "openai"])
def test_events_sharing_or_splitting_network_chunks_give_the_same_sequence(protocol: str) -> None:
    """Whole body in one chunk, one event per chunk, or 5-byte chunks: identical events."""
    events = _events(protocol)
    apart = _stream(events, protocol)
    together = _stream([b"".join(events)], protocol)
    pairs = _stream([b"".join(events[i : i + 2]) for i in range(0, len(events), 2)], protocol)
    split = _stream(_every(b"".join(events), 5), protocol)
    assert together == apart == pairs == split
    assert final(apart).text == "Héllo ✓ wörld " * 3
    assert [c.id for c in final(apart).tool_calls] == ["c1", "c2"]


@pytest.mark.parametrize("protocol", ["anthropic", "openai"])
def test_gzip_encoded_stream_decodes_like_a_plain_one(protocol: str) -> None:
    """A content-encoded body is decompressed before SSE parsing, piece by piece."""
    events = _events(protocol)
    assert _stream(events, protocol, gzip=True) == _stream(events, protocol)


def test_events_in_a_tail_without_final_blank_line_are_delivered() -> None:
    """A last event with no blank line after it still yields its events before Done."""
    events = [e for e in _events("anthropic") if b"content_block_stop" not in e]
    events[-1] = events[-1].rstrip(b"\n")  # message_stop, which closes the tool calls
    streamed = _stream(events, "anthropic")
    ends = [e.call.id for e in streamed if isinstance(e, ToolCallEnd)]
    assert ends == ["c1", "c2"]
    assert isinstance(streamed[-1], Done) and not final(streamed).incomplete


@pytest.mark.parametrize("protocol", ["anthropic", "openai"])
def test_a_text_delta_that_is_not_a_string_is_a_malformed_response(protocol: str) -> None:
    """A wrongly typed field in a delta raises MalformedResponse naming the field."""
    good = _events(protocol)
    bad_delta = (
        b'event: content_block_delta\ndata: {"type": "content_block_delta", '
        b'"index": 1, "delta": {"type": "text_delta", "text": 5}}\n\n'
        if protocol == "anthropic"
        else b'data: {"id": "c_1", "object": "chat.completion.chunk", "model": "m", '
        b'"choices": [{"index": 0, "delta": {"content": 5}}]}\n\n'
    )
    server = _PieceServer([*good[:1], bad_delta, *good[1:]])
    once = FAST.model_copy(update={"max_attempts": 1})
    try:
        with pytest.raises(MalformedResponse, match=r"\(text: .*string") as caught:
            run(collect(provider(server.route(protocol), retry=once), request()))
    finally:
        server.close()
    assert "ValidationError" not in str(caught.value)


def test_hot_path_deltas_match_their_constructor_built_twins() -> None:
    """Text, thinking and tool-argument deltas equal the constructor's, fields set included."""
    streamed = _stream(_events("anthropic"), "anthropic")
    deltas = [e for e in streamed if isinstance(e, TextDelta | ThinkingDelta | ToolCallDelta)]
    assert {type(e) for e in deltas} == {TextDelta, ThinkingDelta, ToolCallDelta}
    for event in deltas:
        twin = type(event)(**{name: getattr(event, name) for name in event.model_fields_set})
        assert event == twin
        assert event.model_fields_set == twin.model_fields_set
        assert event.model_dump_json(exclude_unset=True) == twin.model_dump_json(exclude_unset=True)
