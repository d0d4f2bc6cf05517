"""Google's own `google-genai` SDK accepts the fake provider's Gemini bodies, streams, errors.

`google-genai` is a test-only dependency; liveforge never imports it. If the SDK parses what
FakeProvider sends on the Gemini endpoints, the fake speaks the real protocol.
"""

from __future__ import annotations

import pytest
from google import genai
from google.genai import errors, types

from liveforge.testing import FakeProvider, fault, reply

RICH = (
    reply.thinking("Let me look.", signature="c2lnbmF0dXJl")
    .text("Looking at both.")
    .tool_call("view_source", {"path": "pkg.a"}, id="call_1")
    .tool_call("view_source", {"path": "pkg.b", "depth": 2}, id="call_2")
    .chunked(5)
    .with_usage(input=120, output=33, cache_read=50)
)
TOOLS = types.GenerateContentConfig(
    tools=[
        types.Tool(
            function_declarations=[
                types.FunctionDeclaration(
                    name="view_source",
                    description="Show source",
                    parameters_json_schema={
                        "type": "object",
                        "properties": {"path": {"type": "string"}},
                    },
                )
            ]
        )
    ],
    automatic_function_calling=types.AutomaticFunctionCallingConfig(disable=True),
)


def _client(fake: FakeProvider) -> genai.Client:
    options = types.HttpOptions(base_url=fake.base_url, retry_options=None)
    return genai.Client(api_key="AIza-test-key", http_options=options)


def _parts(response: types.GenerateContentResponse) -> list[types.Part]:
    assert response.candidates and response.candidates[0].content
    return response.candidates[0].content.parts or []


def test_sdk_parses_the_whole_response(fake: FakeProvider) -> None:
    """generate_content() sees thought, text, two calls with args, signature and usage."""
    fake.add(RICH)
    client = _client(fake)  # held: the SDK closes its HTTP client when the Client goes
    response = client.models.generate_content(model="gemini-test", contents="hi", config=TOOLS)
    parts = _parts(response)
    assert [bool(p.thought) for p in parts] == [True, False, False, False]
    assert parts[1].text == "Looking at both."
    calls = response.function_calls or []
    assert [(c.id, c.name, c.args) for c in calls] == [
        ("call_1", "view_source", {"path": "pkg.a"}),
        ("call_2", "view_source", {"path": "pkg.b", "depth": 2}),
    ]
    assert parts[2].thought_signature == b"signature"  # base64 on the wire
    assert response.candidates and response.candidates[0].finish_reason == "STOP"
    usage = response.usage_metadata
    assert usage is not None
    assert (usage.prompt_token_count, usage.candidates_token_count) == (170, 33)
    assert usage.cached_content_token_count == 50
    recorded = fake.requests[-1]
    assert recorded.path.endswith("/models/gemini-test:generateContent")
    assert recorded.key_suffix == "-key" and "AIza" not in str(recorded.headers)


def test_sdk_reads_the_stream_event_by_event(fake: FakeProvider) -> None:
    """generate_content_stream() yields typed chunks; text joins, calls and usage arrive."""
    fake.add(RICH)
    client = _client(fake)
    chunks = list(
        client.models.generate_content_stream(model="gemini-test", contents="hi", config=TOOLS)
    )
    parts = [p for chunk in chunks for p in _parts(chunk)]
    text = "".join(p.text or "" for p in parts if not p.thought)
    assert text == "Looking at both."
    assert [p.function_call.name for p in parts if p.function_call] == ["view_source"] * 2
    last = chunks[-1]
    assert last.candidates and last.candidates[0].finish_reason == "STOP"
    assert last.usage_metadata and last.usage_metadata.total_token_count == 203
    assert fake.requests[-1].path.endswith(":streamGenerateContent?alt=sse")


@pytest.mark.parametrize(
    ("item", "sdk_error", "code", "status"),
    [
        (fault.auth(), errors.ClientError, 400, "INVALID_ARGUMENT"),
        (fault.rate_limit(retry_after=7), errors.ClientError, 429, "RESOURCE_EXHAUSTED"),
        (fault.overloaded(), errors.ServerError, 503, "UNAVAILABLE"),
        (fault.context_overflow(), errors.ClientError, 400, "INVALID_ARGUMENT"),
        (fault.not_found(), errors.ClientError, 404, "NOT_FOUND"),
        (fault.quota(), errors.ClientError, 400, "FAILED_PRECONDITION"),
        (fault.server_error(), errors.ServerError, 500, "INTERNAL"),
    ],
)
def test_sdk_raises_its_own_error_for_each_fault(
    fake: FakeProvider, item: object, sdk_error: type, code: int, status: str
) -> None:
    """Error statuses and google.rpc.Status bodies map to the SDK's errors and codes."""
    fake.add(item)
    client = _client(fake)
    with pytest.raises(sdk_error) as info:
        client.models.generate_content(model="m", contents="hi")
    assert (info.value.code, info.value.status) == (code, status)


def test_sdk_sees_the_retry_delay_and_the_key_reason(fake: FakeProvider) -> None:
    """RetryInfo and ErrorInfo details reach the SDK's error as Google sends them."""
    fake.add(fault.rate_limit(retry_after=7), fault.auth())
    client = _client(fake)
    with pytest.raises(errors.ClientError) as limited:
        client.models.generate_content(model="m", contents="hi")
    assert limited.value.details["error"]["details"][0]["retryDelay"] == "7s"
    with pytest.raises(errors.ClientError) as bad_key:
        client.models.generate_content(model="m", contents="hi")
    assert bad_key.value.details["error"]["details"][0]["reason"] == "API_KEY_INVALID"


def test_sdk_sees_the_mid_stream_error(fake: FakeProvider) -> None:
    """An error object inside the stream makes the SDK raise the server error."""
    fake.add(reply.text("abcdef").chunked(1).error_after(3))
    client = _client(fake)
    with pytest.raises(errors.APIError) as info:
        list(client.models.generate_content_stream(model="m", contents="hi"))
    assert info.value.code == 503
