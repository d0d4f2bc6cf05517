"""Property: however the network splits a stream, the decoded response is the same."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

import liveforge.impls  # noqa: F401
from liveforge.declarations.messages import ModelResponse
from liveforge.declarations.provider import (
    AnthropicWire,
    GeminiWire,
    OpenAIWire,
    Route,
    WireFormat,
)
from liveforge.impls.providers.sse import SSEParser
from liveforge.testing import anthropic_format, gemini_format, openai_format, reply

ANSWER = (
    reply.thinking("weigh options", signature="sig==")
    .text("Héllo wörld ✓ " * 4)
    .tool_call("view_source", {"path": "a.b", "n": [1, {"k": "v"}]}, id="c1")
    .tool_call("run", {}, id="c2")
    .chunked(3)
)
ROUTE = {
    "anthropic": Route(name="anthropic:m", protocol="anthropic", model="m", base_url="http://x"),
    "openai": Route(name="openai:m", protocol="openai", model="m", base_url="http://x"),
    "gemini": Route(name="gemini:m", protocol="gemini", model="m", base_url="http://x"),
}
STREAMS = {
    "anthropic": b"".join(anthropic_format.stream_events(ANSWER, "m", 100, "msg_1")),
    "openai": b"".join(openai_format.chunk_stream(ANSWER, "m", 100, "openai", "c_1", True)),
    "gemini": b"".join(gemini_format.stream_events(ANSWER, "m", 100, "r_1")),
}
WIRE: dict[str, WireFormat] = {
    "anthropic": AnthropicWire(),
    "openai": OpenAIWire(),
    "gemini": GeminiWire(),
}


def _decode(protocol: str, pieces: list[bytes]) -> ModelResponse:
    parser, decoder = SSEParser(), WIRE[protocol].stream_decoder(ROUTE[protocol])
    for piece in pieces:
        for name, data in parser.feed(piece):
            decoder.feed(name, data)
    assert decoder.finished
    return decoder.finish()


def _split(data: bytes, cuts: list[int]) -> list[bytes]:
    points = sorted({c % (len(data) + 1) for c in cuts})
    return [data[a:b] for a, b in zip([0, *points], [*points, len(data)])]


@settings(max_examples=60, deadline=None)
@given(
    protocol=st.sampled_from(sorted(STREAMS)),
    cuts=st.lists(st.integers(min_value=0, max_value=10**6), max_size=40),
)
def test_any_chunking_decodes_to_the_same_response(protocol: str, cuts: list[int]) -> None:
    """Random byte splits (inside UTF-8 characters too) never change the response."""
    whole = _decode(protocol, [STREAMS[protocol]])
    assert _decode(protocol, _split(STREAMS[protocol], cuts)) == whole
    assert whole.text == "Héllo wörld ✓ " * 4
    assert [c.input for c in whole.tool_calls] == [{"path": "a.b", "n": [1, {"k": "v"}]}, {}]
