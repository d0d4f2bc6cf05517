"""The incremental SSE parser and the JSON decoder for event data."""

from __future__ import annotations

import json

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from liveforge.impls.providers.sse import SSEParser, decode_json


def test_events_split_across_arbitrary_chunks_are_reassembled() -> None:
    """Feeding a stream byte by byte yields the same events as feeding it whole."""
    stream = b'event: a\ndata: {"x": 1}\n\nevent: b\ndata: 2\n\ndata: [DONE]\n\n'
    whole = SSEParser().feed(stream)
    parser = SSEParser()
    pieces = [e for i in range(len(stream)) for e in parser.feed(stream[i : i + 1])]
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


def test_runs_of_blank_lines_cut_anywhere_give_the_same_events() -> None:
    """Extra blank lines between events, split at every byte, change nothing."""
    stream = b"event: a\ndata: 1\n\n\n\n\ndata: 2\n\n\nevent: b\n\n\n: c\n\ndata: 3\n\n"
    whole = SSEParser().feed(stream)
    for cut in range(len(stream) + 1):
        parser = SSEParser()
        assert parser.feed(stream[:cut]) + parser.feed(stream[cut:]) == whole
    assert whole == [("a", "1"), (None, "2"), ("b", ""), (None, "3")]


def test_several_events_in_one_chunk_come_back_in_order() -> None:
    """A chunk that completes many events (and starts the next) returns them all, in order."""
    parser = SSEParser()
    events = parser.feed(b"data: 1\n\nevent: x\ndata: 2\n\ndata: 3\ndata: 4\n\ndata: 5")
    assert events == [(None, "1"), ("x", "2"), (None, "3\n4")]
    assert parser.feed(b"\n\n") == [(None, "5")]


def test_invalid_utf8_is_replaced_alike_in_one_chunk_or_split() -> None:
    """Invalid bytes become U+FFFD the same way however the events are grouped."""
    stream = b"data: a\xff\n\ndata: \xe2\x9c\n\ndata: ok \xe2\x9c\x93\n\n"
    whole = SSEParser().feed(stream)
    parser = SSEParser()
    pieces = [e for i in range(len(stream)) for e in parser.feed(stream[i : i + 1])]
    assert whole == pieces == [(None, "a\ufffd"), (None, "\ufffd"), (None, "ok ✓")]


def test_decode_json_accepts_what_json_loads_accepts() -> None:
    """Lone surrogate escapes and surrounding whitespace parse as with json.loads."""
    for text in [
        '"\\ud800"',
        ' {"a": [1, 2.5, null]} ',
        '{"a": 1, "a": 2}',
        "NaN",
        '"\\ud83d\\ude00"',
        "12345678901234567890123",
    ]:
        value, expected = decode_json(text), json.loads(text)
        assert value == expected or (value != value and expected != expected)  # NaN


def test_decode_json_rejects_invalid_json_with_the_standard_error() -> None:
    """Invalid JSON raises json.JSONDecodeError, as the wire decoders expect."""
    for text in ["{not json", "[1] x", "", "[1,]"]:
        with pytest.raises(json.JSONDecodeError):
            decode_json(text)


JSON = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False) | st.text(),
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(), inner, max_size=4),
    max_leaves=20,
)


@settings(max_examples=200, deadline=None)
@given(value=JSON, ascii_only=st.booleans())
def test_decode_json_equals_json_loads_on_random_documents(value: object, ascii_only: bool) -> None:
    """Any JSON document, escaped or not, decodes to what json.loads returns."""
    text = json.dumps(value, ensure_ascii=ascii_only)
    assert decode_json(text) == json.loads(text)
