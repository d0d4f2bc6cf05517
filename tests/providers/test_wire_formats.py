"""The wire formats over loopback HTTP: assembly, conversion, thinking, usage."""

from __future__ import annotations

import asyncio

import pytest
from provider_support import collect, complete, final, provider, request, run, stream_response

from liveforge.declarations.messages import (
    Message,
    ModelRequest,
    RedactedThinkingBlock,
    TextBlock,
    TextDelta,
    ThinkingBlock,
    ToolCallDelta,
    ToolCallEnd,
    ToolCallStart,
    ToolResultBlock,
    ToolUseBlock,
    UsageUpdate,
)
from liveforge.testing import FakeProvider, reply

PROTOCOLS = ["anthropic", "openai", "gemini"]
FRAGMENTED = ["anthropic", "openai"]  # Gemini sends each tool call whole


@pytest.mark.parametrize("protocol", FRAGMENTED)
def test_streamed_parallel_tool_calls_are_assembled_from_fragments(
    fake: FakeProvider, protocol: str
) -> None:
    """Two tool calls whose JSON arrives in 3-character fragments parse to their inputs."""
    fake.add(
        reply.text("Looking.")
        .tool_call("view_source", {"path": "pkg.mod"}, id="c1")
        .tool_call("view_source", {"path": "pkg.other", "n": [1, 2]}, id="c2")
        .chunked(3)
    )
    events = run(collect(provider(fake.route(protocol)), request()))
    starts = [e for e in events if isinstance(e, ToolCallStart)]
    ends = [e for e in events if isinstance(e, ToolCallEnd)]
    assert [(s.id, s.name) for s in starts] == [("c1", "view_source"), ("c2", "view_source")]
    assert [e.call.input for e in ends] == [{"path": "pkg.mod"}, {"path": "pkg.other", "n": [1, 2]}]
    assert sum(isinstance(e, ToolCallDelta) for e in events) > 4
    response = final(events)
    assert response.text == "Looking."
    assert [c.id for c in response.tool_calls] == ["c1", "c2"]
    assert response.stop_reason == "tool_use"
    assert not response.incomplete


@pytest.mark.parametrize("protocol", PROTOCOLS)
def test_non_streaming_tool_calls_and_text(fake: FakeProvider, protocol: str) -> None:
    """A non-streaming body yields the same blocks as the stream would."""
    fake.add(reply.text("Two calls.").tool_call("a", {"x": 1}, id="t1").tool_call("b", {}, id="t2"))
    response = run(complete(provider(fake.route(protocol)), request()))
    assert response.text == "Two calls."
    assert [(c.id, c.name, c.input) for c in response.tool_calls] == [
        ("t1", "a", {"x": 1}),
        ("t2", "b", {}),
    ]
    assert response.stop_reason == "tool_use"
    assert fake.requests[-1].stream is False


@pytest.mark.parametrize("protocol", PROTOCOLS)
def test_text_deltas_concatenate_to_the_final_text(fake: FakeProvider, protocol: str) -> None:
    """Every text delta is delivered in order and the response text is their join."""
    text = "The quick brown fox jumps over the lazy dog. " * 5
    fake.add(reply.text(text).chunked(5))
    events = run(collect(provider(fake.route(protocol)), request()))
    deltas = "".join(e.text for e in events if isinstance(e, TextDelta))
    assert deltas == text == final(events).text
    assert final(events).stop_reason == "end_turn"


def test_ollama_dialect_sends_whole_tool_calls_in_one_chunk() -> None:
    """Ollama's one-chunk tool calls (arguments complete at once) assemble correctly."""
    with FakeProvider(
        [reply.tool_call("a", {"k": "v"}, id="o1").tool_call("b", {"z": 2}, id="o2")],
        dialect="ollama",
    ) as fake:
        response = stream_response(provider(fake.route("openai")), request())
    assert [(c.id, c.input) for c in response.tool_calls] == [("o1", {"k": "v"}), ("o2", {"z": 2})]


@pytest.mark.parametrize("dialect", ["openai", "ollama", "vllm"])
def test_openai_reasoning_becomes_a_thinking_block(dialect: str) -> None:
    """reasoning_content (vLLM/DeepSeek) and reasoning (Ollama) arrive as thinking."""
    with FakeProvider([reply.thinking("step by step").text("42")] * 2, dialect=dialect) as fake:
        streamed = stream_response(provider(fake.route("openai")), request())
        whole = run(complete(provider(fake.route("openai")), request()))
    for response in (streamed, whole):
        assert response.content[0] == ThinkingBlock(thinking="step by step")
        assert response.text == "42"


def test_anthropic_thinking_is_preserved_and_sent_back_unchanged(fake: FakeProvider) -> None:
    """A signed thinking block returns verbatim in the next request, before the tool call."""
    fake.add(
        reply.thinking("I should look.", signature="SIG==").tool_call(
            "view_source", {"path": "m"}, id="tu1"
        ),
        reply.text("done"),
    )
    prov = provider(fake.route("anthropic"))
    first = stream_response(prov, request())
    assert first.content[0] == ThinkingBlock(thinking="I should look.", signature="SIG==")
    follow = ModelRequest(
        messages=[
            Message.user("hello"),
            first.to_message(),
            Message.tool_results([ToolResultBlock(tool_use_id="tu1", content="source")]),
        ]
    )
    assert stream_response(prov, follow).text == "done"
    sent = fake.requests[-1].body["messages"]
    assert sent[1]["content"][0] == {
        "type": "thinking",
        "thinking": "I should look.",
        "signature": "SIG==",
    }
    assert sent[1]["content"][1]["type"] == "tool_use"
    assert sent[2]["content"][0] == {
        "type": "tool_result",
        "tool_use_id": "tu1",
        "content": "source",
        "is_error": False,
    }


def test_anthropic_request_hoists_system_and_maps_options(fake: FakeProvider) -> None:
    """System messages become the top-level system field; options use the API's names."""
    fake.add(reply.text("ok"))
    req = ModelRequest(
        messages=[Message.system("Be brief."), Message.user("hi")],
        tools=[],
        max_tokens=99,
        temperature=0.5,
        stop_sequences=["END"],
        tool_choice="any",
        thinking_budget=1024,
    )
    run(complete(provider(fake.route("anthropic")), req))
    body = fake.requests[-1].body
    assert body["system"] == "Be brief."
    assert body["messages"] == [{"role": "user", "content": [{"type": "text", "text": "hi"}]}]
    assert (body["max_tokens"], body["temperature"], body["stop_sequences"]) == (99, 0.5, ["END"])
    assert body["thinking"] == {"type": "enabled", "budget_tokens": 1024}
    headers = fake.requests[-1].headers
    assert headers["anthropic-version"] == "2023-06-01"
    assert headers["x-api-key"] == "<redacted>"


def test_openai_request_uses_tool_messages_and_function_tools(fake: FakeProvider) -> None:
    """Tool results become role=tool messages; arguments travel as JSON strings."""
    fake.add(reply.text("ok"))
    call = ToolUseBlock(id="c9", name="view_source", input={"path": "a"})
    req = ModelRequest(
        messages=[
            Message.system("sys"),
            Message.user("go"),
            Message(role="assistant", content=[TextBlock(text="calling"), call]),
            Message(
                role="user",
                content=[
                    ToolResultBlock(tool_use_id="c9", content="boom", is_error=True),
                    TextBlock(text="and?"),
                ],
            ),
        ],
        tools=request().tools,
        tool_choice="view_source",
    )
    run(collect(provider(fake.route("openai")), req))
    body = fake.requests[-1].body
    assert body["messages"] == [
        {"role": "system", "content": "sys"},
        {"role": "user", "content": "go"},
        {
            "role": "assistant",
            "content": "calling",
            "tool_calls": [
                {
                    "id": "c9",
                    "type": "function",
                    "function": {"name": "view_source", "arguments": '{"path": "a"}'},
                }
            ],
        },
        {"role": "tool", "tool_call_id": "c9", "content": "Error: boom"},
        {"role": "user", "content": "and?"},
    ]
    assert body["tools"][0]["function"]["name"] == "view_source"
    assert body["tool_choice"] == {"type": "function", "function": {"name": "view_source"}}
    assert body["stream_options"] == {"include_usage": True}
    assert fake.requests[-1].headers["authorization"] == "<redacted>"


@pytest.mark.parametrize("protocol", PROTOCOLS)
@pytest.mark.parametrize("streaming", [True, False])
def test_usage_is_normalised_with_cache_tokens(
    fake: FakeProvider, protocol: str, streaming: bool
) -> None:
    """Input counts uncached tokens only; cache reads (and Anthropic cache writes) separate."""
    fake.add(reply.text("hi").with_usage(input=100, output=7, cache_read=40, cache_write=5))
    prov = provider(fake.route(protocol))
    response = stream_response(prov, request()) if streaming else run(complete(prov, request()))
    usage = response.usage
    assert (usage.input_tokens, usage.output_tokens, usage.cache_read_tokens) == (100, 7, 40)
    assert usage.cache_write_tokens == (5 if protocol == "anthropic" else 0)


def test_anthropic_stream_reports_usage_updates(fake: FakeProvider) -> None:
    """message_start and message_delta each produce a cumulative UsageUpdate."""
    fake.add(reply.text("hello").with_usage(input=12, output=3))
    events = run(collect(provider(fake.route("anthropic")), request()))
    updates = [e.usage for e in events if isinstance(e, UsageUpdate)]
    assert [(u.input_tokens, u.output_tokens) for u in updates] == [(12, 1), (12, 3)]


@pytest.mark.parametrize("protocol", PROTOCOLS)
def test_stop_reasons_are_normalised(fake: FakeProvider, protocol: str) -> None:
    """max_tokens (OpenAI "length") maps to the neutral max_tokens."""
    fake.add(reply.text("cut").stop_reason("max_tokens"))
    response = stream_response(provider(fake.route(protocol)), request())
    assert response.stop_reason == "max_tokens"
    raw = {"anthropic": "max_tokens", "openai": "length", "gemini": "MAX_TOKENS"}[protocol]
    assert response.raw_stop_reason == raw


@pytest.mark.parametrize("streaming", [True, False])
def test_anthropic_redacted_thinking_round_trips_verbatim(
    fake: FakeProvider, streaming: bool
) -> None:
    """A redacted_thinking block is kept and sent back exactly as received."""
    fake.add(reply.redacted_thinking("EnCrYpTeD==").text("ok"), reply.text("next"))
    prov = provider(fake.route("anthropic"))
    first = stream_response(prov, request()) if streaming else run(complete(prov, request()))
    assert first.content[0] == RedactedThinkingBlock(data="EnCrYpTeD==")
    follow = ModelRequest(
        messages=[Message.user("hello"), first.to_message(), Message.user("more")]
    )
    run(complete(prov, follow))
    assert fake.requests[-1].body["messages"][1]["content"][0] == {
        "type": "redacted_thinking",
        "data": "EnCrYpTeD==",
    }


def test_concurrent_streams_on_one_provider_do_not_mix(fake: FakeProvider) -> None:
    """Three simultaneous calls through one Provider each assemble their own answer."""
    fake.add(*[reply.text(f"answer {i} " * 20).chunked(3).slow(0.001) for i in range(3)])
    prov = provider(fake.route("openai"))

    async def three() -> list[str]:
        async def one() -> str:
            events = [e async for e in prov.stream(request())]
            return final(events).text

        texts = await asyncio.gather(one(), one(), one())
        await prov.aclose()
        return list(texts)

    texts = run(three())
    assert sorted(texts) == [f"answer {i} " * 20 for i in range(3)]
