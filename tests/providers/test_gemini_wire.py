"""The Gemini wire format: request shape, thought signatures, Gemini-only replies, RetryInfo."""

from __future__ import annotations

import json

import pytest
from provider_support import collect, provider, request, run, stream_response

from liveforge.declarations.messages import (
    Message,
    ModelRequest,
    ModelResponse,
    Retrying,
    ThinkingBlock,
    ToolResultBlock,
    ToolSpec,
)
from liveforge.declarations.provider import GeminiWire, Route
from liveforge.declarations.provider_errors import MalformedResponse
from liveforge.impls.providers.gemini_wire import model_url
from liveforge.testing import FakeProvider, fault, reply

ROUTE = Route(name="gemini:m", protocol="gemini", model="m", base_url="http://x")


def test_thought_signature_and_tool_results_go_back_as_gemini_expects(
    fake: FakeProvider,
) -> None:
    """The call's thoughtSignature returns with it; its result is a named functionResponse."""
    fake.add(
        reply.thinking("Look first.", signature="U0lH")
        .tool_call("view_source", {"path": "m"}, id="g1")
        .tool_call("view_source", {"path": "n"}, id="g2"),
        reply.text("done"),
    )
    prov = provider(fake.route("gemini", keys=["AIza-secret-1234"]))
    first = stream_response(prov, request())
    assert first.content[0] == ThinkingBlock(thinking="Look first.")
    assert [c.signature for c in first.tool_calls] == ["U0lH", None]
    follow = ModelRequest(
        messages=[
            Message.system("Be brief."),
            Message.user("hello"),
            first.to_message(),
            Message.tool_results(
                [
                    ToolResultBlock(tool_use_id="g1", content="source"),
                    ToolResultBlock(tool_use_id="g2", content="no such module", is_error=True),
                ]
            ),
        ],
        tools=[ToolSpec(name="view_source", description="Show", input_schema={"type": "object"})],
        tool_choice="view_source",
        temperature=0.2,
        stop_sequences=["END"],
    )
    assert stream_response(prov, follow).text == "done"
    sent = fake.requests[-1]
    assert sent.path == "/v1beta/models/test-model:streamGenerateContent?alt=sse"
    assert sent.headers["x-goog-api-key"] == "<redacted>" and sent.key_suffix == "1234"
    body = sent.body
    assert body["systemInstruction"] == {"parts": [{"text": "Be brief."}]}
    assert [c["role"] for c in body["contents"]] == ["user", "model", "user"]
    model_parts = body["contents"][1]["parts"]
    assert model_parts[0] == {
        "functionCall": {"name": "view_source", "args": {"path": "m"}, "id": "g1"},
        "thoughtSignature": "U0lH",
    }
    assert "thoughtSignature" not in model_parts[1]
    assert body["contents"][2]["parts"] == [
        {"functionResponse": {"name": "view_source", "id": "g1", "response": {"result": "source"}}},
        {
            "functionResponse": {
                "name": "view_source",
                "id": "g2",
                "response": {"error": "no such module"},
            }
        },
    ]
    assert body["toolConfig"] == {
        "functionCallingConfig": {"mode": "ANY", "allowedFunctionNames": ["view_source"]}
    }
    assert body["tools"][0]["functionDeclarations"][0]["parametersJsonSchema"] == {"type": "object"}
    assert body["generationConfig"] == {
        "maxOutputTokens": 4096,
        "temperature": 0.2,
        "stopSequences": ["END"],
    }


def test_retry_delay_from_retryinfo_is_honoured(fake: FakeProvider) -> None:
    """A 429 whose RetryInfo says 0.02s is retried after exactly that delay."""
    fake.add(fault.rate_limit(retry_after=0.02), reply.text("ok"))
    events = run(collect(provider(fake.route("gemini")), request()))
    retries = [e for e in events if isinstance(e, Retrying)]
    assert [r.delay for r in retries] == [0.02]
    assert "retry-after" not in fake.requests[0].headers


def _parse(raw: dict[str, object]) -> ModelResponse:
    return GeminiWire().parse_response(json.dumps(raw).encode(), ROUTE)


def test_calls_without_ids_get_distinct_ids_and_stop_as_tool_use() -> None:
    """The Developer API may send calls without an id: each gets its own, stop is tool_use."""
    calls = [{"functionCall": {"name": "a", "args": {}}}, {"functionCall": {"name": "b"}}]
    raw = {"candidates": [{"content": {"role": "model", "parts": calls}, "finishReason": "STOP"}]}
    response = _parse(raw)
    ids = [c.id for c in response.tool_calls]
    assert len(set(ids)) == 2 and all(ids)
    assert response.stop_reason == "tool_use"


def test_blocked_prompt_is_a_refusal_with_its_reason() -> None:
    """promptFeedback.blockReason without candidates ends as a refusal, not a crash."""
    response = _parse({"promptFeedback": {"blockReason": "PROHIBITED_CONTENT"}})
    assert response.stop_reason == "refusal"
    assert response.raw_stop_reason == "PROHIBITED_CONTENT"


@pytest.mark.parametrize("body", [b"<html>502</html>", b'{"choices": []}', b"[]"])
def test_a_body_that_is_not_a_gemini_response_is_malformed(body: bytes) -> None:
    """HTML, another API's body or a bare list raise MalformedResponse naming the protocol."""
    with pytest.raises(MalformedResponse, match="GenerateContentResponse"):
        GeminiWire().parse_response(body, ROUTE)


@pytest.mark.parametrize(
    ("base", "model", "url"),
    [
        ("https://h", "gemini-2.5-flash", "https://h/v1beta/models/gemini-2.5-flash:"),
        ("https://h/v1beta/", "models/g", "https://h/v1beta/models/g:"),
        ("https://h/v1", "g", "https://h/v1/models/g:"),
    ],
)
def test_model_url_adds_the_api_version_only_when_missing(base: str, model: str, url: str) -> None:
    """A base with a version keeps it; a "models/" prefix on the model is not doubled."""
    assert model_url(base, model, stream=False) == url + "generateContent"
    assert model_url(base, model, stream=True) == url + "streamGenerateContent?alt=sse"


def test_usage_repeated_on_every_event_is_reported_once_per_change() -> None:
    """Usage repeated on every event yields one UsageUpdate per change, not per event."""
    decoder = GeminiWire().stream_decoder(ROUTE)
    usage = {"promptTokenCount": 10, "candidatesTokenCount": 1}
    part = {"content": {"role": "model", "parts": [{"text": "a"}]}}
    events = decoder.feed(None, json.dumps({"candidates": [part], "usageMetadata": usage}))
    events += decoder.feed(None, json.dumps({"candidates": [part], "usageMetadata": usage}))
    last = {**part, "finishReason": "MAX_TOKENS"}
    usage = {**usage, "candidatesTokenCount": 2, "thoughtsTokenCount": 5}
    events += decoder.feed(None, json.dumps({"candidates": [last], "usageMetadata": usage}))
    assert sum(e.type == "usage" for e in events) == 2
    assert decoder.finished
    response = decoder.finish()
    assert response.text == "aaa" and response.stop_reason == "max_tokens"
    assert (response.usage.input_tokens, response.usage.output_tokens) == (10, 7)
