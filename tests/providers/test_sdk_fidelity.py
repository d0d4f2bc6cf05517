"""The vendors' own SDKs accept the fake provider's responses, streams and errors.

The `anthropic` and `openai` packages are test-only dependencies; liveforge never imports
them. If they parse what FakeProvider sends, the fake speaks the real protocols.
"""

from __future__ import annotations

import json

import anthropic
import openai
import pytest

from liveforge.testing import FakeProvider, fault, reply

MESSAGES = [{"role": "user", "content": "hi"}]
TOOLS = [
    {
        "name": "view_source",
        "description": "Show source",
        "input_schema": {"type": "object", "properties": {"path": {"type": "string"}}},
    }
]
OPENAI_TOOLS = [
    {
        "type": "function",
        "function": {
            "name": t["name"],
            "description": t["description"],
            "parameters": t["input_schema"],
        },
    }
    for t in TOOLS
]

RICH = (
    reply.thinking("Let me look.", signature="c2lnbmF0dXJl")
    .text("Looking at both.")
    .tool_call("view_source", {"path": "pkg.a"}, id="toolu_1")
    .tool_call("view_source", {"path": "pkg.b", "depth": 2}, id="toolu_2")
    .chunked(5)
    .with_usage(input=120, output=33, cache_read=50, cache_write=7)
)


def _anthropic(fake: FakeProvider) -> anthropic.Anthropic:
    return anthropic.Anthropic(api_key="sk-ant-test", base_url=fake.base_url, max_retries=0)


def _openai(fake: FakeProvider) -> openai.OpenAI:
    return openai.OpenAI(api_key="sk-test", base_url=fake.openai_base_url, max_retries=0)


def test_anthropic_sdk_assembles_the_streamed_message(fake: FakeProvider) -> None:
    """messages.stream() yields thinking, text and parsed parallel tool inputs, with usage."""
    fake.add(RICH)
    with _anthropic(fake).messages.stream(
        model="claude-test", max_tokens=100, messages=MESSAGES, tools=TOOLS
    ) as stream:
        texts = [event.text for event in stream if event.type == "text"]
        message = stream.get_final_message()
    assert "".join(texts) == "Looking at both."
    kinds = [block.type for block in message.content]
    assert kinds == ["thinking", "text", "tool_use", "tool_use"]
    assert message.content[0].signature == "c2lnbmF0dXJl"
    assert [b.input for b in message.content[2:]] == [
        {"path": "pkg.a"},
        {"path": "pkg.b", "depth": 2},
    ]
    assert message.stop_reason == "tool_use" and message.model == "claude-test"
    assert (message.usage.input_tokens, message.usage.output_tokens) == (120, 33)
    assert message.usage.cache_read_input_tokens == 50
    assert message.usage.cache_creation_input_tokens == 7
    recorded = fake.requests[-1]
    assert recorded.key_suffix == "test"
    assert "sk-ant-test" not in json.dumps(recorded.headers)


def test_anthropic_sdk_parses_the_non_streaming_message(fake: FakeProvider) -> None:
    """messages.create() returns the same blocks from a whole body."""
    fake.add(RICH)
    message = _anthropic(fake).messages.create(
        model="claude-test", max_tokens=100, messages=MESSAGES, tools=TOOLS
    )
    assert [b.type for b in message.content] == ["thinking", "text", "tool_use", "tool_use"]
    assert message.content[3].input == {"path": "pkg.b", "depth": 2}
    assert message.id.startswith("msg_")


@pytest.mark.parametrize(
    ("item", "sdk_error", "error_type"),
    [
        (fault.auth(), anthropic.AuthenticationError, "authentication_error"),
        (fault.rate_limit(retry_after=7), anthropic.RateLimitError, "rate_limit_error"),
        (fault.overloaded(), anthropic.APIStatusError, "overloaded_error"),
        (fault.context_overflow(), anthropic.BadRequestError, "invalid_request_error"),
        (fault.not_found(), anthropic.NotFoundError, "not_found_error"),
        (fault.server_error(), anthropic.InternalServerError, "api_error"),
    ],
)
def test_anthropic_sdk_raises_its_own_error_for_each_fault(
    fake: FakeProvider, item: object, sdk_error: type, error_type: str
) -> None:
    """Error statuses and bodies map to the SDK's exception classes and error types."""
    fake.add(item)
    with pytest.raises(sdk_error) as info:
        _anthropic(fake).messages.create(model="m", max_tokens=10, messages=MESSAGES)
    body = info.value.body
    assert body["type"] == "error" and body["error"]["type"] == error_type
    assert info.value.request_id == body["request_id"]


def test_anthropic_sdk_sees_the_error_event_after_200(fake: FakeProvider) -> None:
    """An in-stream error event makes the SDK raise with the overloaded_error body."""
    fake.add(reply.text("abcdef").chunked(1).error_after(4))
    with (
        pytest.raises(anthropic.APIStatusError) as info,
        _anthropic(fake).messages.stream(model="m", max_tokens=10, messages=MESSAGES) as stream,
    ):
        list(stream)
    assert info.value.body["error"]["type"] == "overloaded_error"


def test_openai_sdk_accumulates_streamed_parallel_tool_calls(fake: FakeProvider) -> None:
    """chat.completions.stream() assembles fragments into two complete tool calls."""
    fake.add(RICH)
    with _openai(fake).chat.completions.stream(
        model="gpt-test",
        messages=MESSAGES,
        tools=OPENAI_TOOLS,
        stream_options={"include_usage": True},
    ) as stream:
        for _ in stream:
            pass
        completion = stream.get_final_completion()
    message = completion.choices[0].message
    assert message.content == "Looking at both."
    calls = message.tool_calls or []
    assert [(c.id, c.function.name, json.loads(c.function.arguments)) for c in calls] == [
        ("toolu_1", "view_source", {"path": "pkg.a"}),
        ("toolu_2", "view_source", {"path": "pkg.b", "depth": 2}),
    ]
    assert completion.choices[0].finish_reason == "tool_calls"
    assert completion.usage is not None and completion.usage.prompt_tokens == 170
    assert fake.requests[-1].headers["authorization"] == "<redacted>"


def test_openai_sdk_parses_raw_chunks_and_done(fake: FakeProvider) -> None:
    """create(stream=True) yields typed chunks ending with a usage-only chunk."""
    fake.add(reply.text("hello world").chunked(3))
    chunks = list(
        _openai(fake).chat.completions.create(
            model="m", messages=MESSAGES, stream=True, stream_options={"include_usage": True}
        )
    )
    text = "".join(c.choices[0].delta.content or "" for c in chunks if c.choices)
    assert text == "hello world"
    assert chunks[-1].choices == [] and chunks[-1].usage is not None
    assert all(c.object == "chat.completion.chunk" for c in chunks)


@pytest.mark.parametrize("dialect", ["openai", "ollama", "vllm"])
def test_openai_sdk_parses_the_non_streaming_completion(dialect: str) -> None:
    """create() returns message content and tool calls for every dialect."""
    with FakeProvider([RICH], dialect=dialect) as fake:
        completion = _openai(fake).chat.completions.create(
            model="m", messages=MESSAGES, tools=OPENAI_TOOLS
        )
    message = completion.choices[0].message
    assert message.content == "Looking at both."
    assert [c.id for c in message.tool_calls or []] == ["toolu_1", "toolu_2"]


def test_openai_sdk_accepts_ollama_whole_tool_call_chunks() -> None:
    """The SDK's stream accumulator handles Ollama's one-chunk tool calls."""
    with (
        FakeProvider([RICH], dialect="ollama") as fake,
        _openai(fake).chat.completions.stream(
            model="m",
            messages=MESSAGES,
            tools=OPENAI_TOOLS,
        ) as stream,
    ):
        for _ in stream:
            pass
        calls = stream.get_final_completion().choices[0].message.tool_calls or []
    assert [json.loads(c.function.arguments) for c in calls] == [
        {"path": "pkg.a"},
        {"path": "pkg.b", "depth": 2},
    ]


@pytest.mark.parametrize(
    ("item", "sdk_error", "code"),
    [
        (fault.auth(), openai.AuthenticationError, "invalid_api_key"),
        (fault.rate_limit(retry_after=3), openai.RateLimitError, "rate_limit_exceeded"),
        (fault.quota(), openai.RateLimitError, "insufficient_quota"),
        (fault.context_overflow(), openai.BadRequestError, "context_length_exceeded"),
        (fault.not_found(), openai.NotFoundError, "model_not_found"),
        (fault.overloaded(), openai.InternalServerError, None),
    ],
)
def test_openai_sdk_raises_its_own_error_for_each_fault(
    fake: FakeProvider, item: object, sdk_error: type, code: str | None
) -> None:
    """Error statuses and bodies map to the SDK's exception classes and codes."""
    fake.add(item)
    with pytest.raises(sdk_error) as info:
        _openai(fake).chat.completions.create(model="m", messages=MESSAGES)
    assert info.value.code == code


def test_openai_sdk_sees_the_mid_stream_error(fake: FakeProvider) -> None:
    """A data object with a top-level error makes the SDK raise APIError."""
    fake.add(reply.text("abcdef").chunked(1).error_after(3))
    with pytest.raises(openai.APIError, match="overloaded"):
        list(_openai(fake).chat.completions.create(model="m", messages=MESSAGES, stream=True))


def test_lmstudio_bare_string_error_reaches_the_openai_sdk() -> None:
    """LM Studio's {"error": "<string>"} body still raises the SDK's status error."""
    with (
        FakeProvider(
            [fault.bare_string("No models loaded.", status=400)], dialect="lmstudio"
        ) as fake,
        pytest.raises(openai.BadRequestError) as info,
    ):
        _openai(fake).chat.completions.create(model="m", messages=MESSAGES)
    assert info.value.body == "No models loaded."
