"""The incremental SSE parser."""

from __future__ import annotations

from liveforge.impls.providers.sse import SSEParser


def test_events_split_across_arbitrary_chunks_are_reassembled() -> None:
    """Feeding a stream byte by byte yields the same events as feeding it whole."""
    stream = b"event: a\ndata: {\"x\": 1}\n\nevent: b\ndata: 2\n\ndata: [DONE]\n\n"
    whole = SSEParser().feed(stream)
    parser = SSEParser()
    pieces = [e for i in range(len(stream)) for e in parser.feed(stream[i:i + 1])]
    assert whole == pieces == [("a", '{"x": 1}'), ("b", "2"), (None, "[DONE]")]


def test_crlf_and_cr_line_endings_including_crlf_split_between_chunks() -> None:
    """CRLF (even split across chunks) and bare CR end lines like LF."""
    parser = SSEParser()
    assert parser.feed(b"event: a\r\ndata: 1\r") == []
    assert parser.feed(b"\n\r\ndata: 2\r\r\n") == [("a", "1"), (None, "2")]


def test_comments_ids_and_multiline_data() -> None:
    """Comment lines and id/retry fields are ignored; data lines join with newlines."""
    parser = SSEParser()
    events = parser.feed(b": keepalive\n\nid: 7\nretry: 10\ndata: one\ndata:two\n\n")
    assert events == [(None, "one\ntwo")]


def test_flush_returns_an_event_without_final_blank_line() -> None:
    """A stream that ends right after a data line still yields that event on flush."""
    parser = SSEParser()
    assert parser.feed(b"data: tail") == []
    assert parser.flush() == [(None, "tail")]
    assert parser.flush() == []


def test_utf8_split_inside_a_character() -> None:
    """A multi-byte character split between chunks is decoded intact."""
    data = "data: héllo ✓\n\n".encode()
    parser = SSEParser()
    cut = data.index("✓".encode()) + 1
    assert parser.feed(data[:cut]) == []
    assert parser.feed(data[cut:]) == [(None, "héllo ✓")]
