"""Errors are classified into the ProviderError tree, for HTTP and in-stream failures."""

from __future__ import annotations

import socket

import pytest
from provider_support import FAST, collect, complete, final, provider, request, run

from liveforge.declarations.provider import Route
from liveforge.declarations.provider_errors import (
    AuthenticationError,
    BadRequestError,
    BillingError,
    ContextOverflowError,
    MalformedResponse,
    ModelNotFound,
    OverloadedError,
    ProviderConnectionError,
    ProviderError,
    ProviderTimeout,
    RateLimitError,
    ServerError,
    StreamInterrupted,
)
from liveforge.testing import FakeProvider, fault, reply

PROTOCOLS = ["anthropic", "openai", "gemini"]
PREAMBLE = {"anthropic": 1, "openai": 1, "gemini": 0}
"""Events each protocol sends before the first content (Gemini's first event has text)."""
ONE_TRY = FAST.model_copy(update={"max_attempts": 1})

CASES = [
    (fault.auth(), AuthenticationError),
    (fault.error("permission"), AuthenticationError),
    (fault.quota(), BillingError),
    (fault.rate_limit(), RateLimitError),
    (fault.overloaded(), OverloadedError),
    (fault.server_error(), ServerError),
    (fault.not_found(), ModelNotFound),
    (fault.context_overflow(), ContextOverflowError),
    (fault.bad_request("messages: field required"), BadRequestError),
]


@pytest.mark.parametrize("protocol", PROTOCOLS)
@pytest.mark.parametrize(
    ("item", "expected"), CASES, ids=[c[1].__name__ + "-" + c[0].kind for c in CASES]
)
def test_http_error_bodies_map_to_their_class(
    fake: FakeProvider, protocol: str, item: object, expected: type
) -> None:
    """Each provider's error status and body raise the matching ProviderError subclass."""
    fake.add(item)
    with pytest.raises(ProviderError) as info:
        run(
            collect(
                provider(fake.route(protocol, keys=["sk-secret-value-1234"]), retry=ONE_TRY),
                request(),
            )
        )
    error = info.value
    assert type(error) is expected
    assert error.status is not None and error.status >= 400
    assert error.provider == protocol and error.model == "test-model"
    assert "sk-secret" not in str(error) and "sk-secret" not in repr(error)
    assert error.hint in str(error)


def test_anthropic_error_carries_request_id_and_message(fake: FakeProvider) -> None:
    """The body's request_id and message appear on the error and in its text."""
    fake.add(fault.context_overflow())
    with pytest.raises(ContextOverflowError) as info:
        run(complete(provider(fake.route("anthropic")), request()))
    assert info.value.request_id and info.value.request_id.startswith("req_fake_")
    assert "prompt is too long" in str(info.value)
    assert "Compact the conversation" in str(info.value)


def test_lmstudio_bare_string_error_body_is_understood() -> None:
    """{"error": "<string>"} becomes a classified error with that message."""
    with FakeProvider(
        [
            fault.bare_string("Model is unloaded.", status=404),
            fault.bare_string(
                "Trying to keep the first 9000 tokens when context "
                "the overflows. However, the model is loaded with "
                "context length of only 4096 tokens, which is not "
                "enough. Try to load the model with a larger "
                "context size"
            ),
        ],
        dialect="lmstudio",
    ) as fake:
        prov = provider(fake.route("openai"), retry=ONE_TRY)
        with pytest.raises(ModelNotFound, match="Model is unloaded"):
            run(collect(prov, request()))
        with pytest.raises(ContextOverflowError):
            run(collect(prov, request()))


def test_vllm_integer_code_in_stream_error_is_classified() -> None:
    """A vLLM mid-stream error with an integer code (429) is a RateLimitError."""
    with FakeProvider([reply.text("x").error_after(1, "rate_limit")], dialect="vllm") as fake:
        with pytest.raises(RateLimitError):
            run(collect(provider(fake.route("openai"), retry=ONE_TRY), request()))


@pytest.mark.parametrize("protocol", PROTOCOLS)
def test_sse_error_after_200_before_content_is_retried(fake: FakeProvider, protocol: str) -> None:
    """An overloaded error event before any content is retried like HTTP 529."""
    fake.add(reply.text("first").error_after(PREAMBLE[protocol]), reply.text("second"))
    response = final(run(collect(provider(fake.route(protocol)), request())))
    assert response.text == "second"
    assert len(fake.requests) == 2


@pytest.mark.parametrize("protocol", PROTOCOLS)
def test_sse_error_after_content_raises_stream_interrupted_with_partial(
    fake: FakeProvider, protocol: str
) -> None:
    """An error event after text arrived is not replayed: StreamInterrupted keeps the text."""
    fake.add(reply.text("abcdefghijklmnop").chunked(2).error_after(5), reply.text("never"))
    with pytest.raises(StreamInterrupted) as info:
        run(collect(provider(fake.route(protocol)), request()))
    partial = info.value.partial
    assert partial.incomplete and partial.text and "abcdefghijklmnop".startswith(partial.text)
    assert isinstance(info.value.__cause__, OverloadedError)
    assert len(fake.requests) == 1


@pytest.mark.parametrize("protocol", PROTOCOLS)
def test_disconnect_mid_stream_after_content_is_stream_interrupted(
    fake: FakeProvider, protocol: str
) -> None:
    """A connection cut after content raises StreamInterrupted caused by a connection error."""
    fake.add(reply.text("abcdefghijkl").chunked(2).disconnect_after(5))
    with pytest.raises(StreamInterrupted) as info:
        run(collect(provider(fake.route(protocol)), request()))
    assert isinstance(info.value.__cause__, ProviderConnectionError)


@pytest.mark.parametrize("protocol", PROTOCOLS)
def test_disconnect_before_content_is_retried(fake: FakeProvider, protocol: str) -> None:
    """A connection cut before any content counts as a connection error and is retried."""
    lost = reply.text("lost").disconnect_after(PREAMBLE[protocol])
    fake.add(lost, fault.disconnect(), reply.text("ok"))
    assert final(run(collect(provider(fake.route(protocol)), request()))).text == "ok"
    assert len(fake.requests) == 3


@pytest.mark.parametrize("protocol", PROTOCOLS)
def test_malformed_event_is_a_malformed_response(fake: FakeProvider, protocol: str) -> None:
    """A data line that is not JSON raises MalformedResponse (retried, then reported)."""
    fake.add(reply.text("x").malformed_after(PREAMBLE[protocol]))
    with pytest.raises(MalformedResponse, match=r"not json|malformed|expected JSON"):
        run(collect(provider(fake.route(protocol), retry=ONE_TRY), request()))


def test_timeout_waiting_for_a_response_is_provider_timeout(fake: FakeProvider) -> None:
    """No answer within read_timeout raises ProviderTimeout (a TimeoutError)."""
    fake.add(fault.hang(1.0))
    policy = ONE_TRY.model_copy(update={"read_timeout": 0.2})
    with pytest.raises(ProviderTimeout) as info:
        run(collect(provider(fake.route("openai"), retry=policy), request()))
    assert isinstance(info.value, TimeoutError)


def test_connection_refused_is_provider_connection_error() -> None:
    """Nothing listening at the base URL raises ProviderConnectionError with a hint."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    route = Route(
        name="ollama:llama3.1",
        protocol="openai",
        model="llama3.1",
        base_url=f"http://127.0.0.1:{port}/v1",
    )
    with pytest.raises(ProviderConnectionError, match="base URL") as info:
        run(collect(provider(route, retry=ONE_TRY), request()))
    assert isinstance(info.value, ConnectionError)
    assert info.value.provider == "ollama"


def test_stream_ending_without_message_stop_is_a_connection_error(fake: FakeProvider) -> None:
    """A cleanly closed stream that never sent its final event is not a success."""
    fake.add(reply.text("x").truncate_after(2))
    with pytest.raises(ProviderConnectionError):
        run(collect(provider(fake.route("anthropic"), retry=ONE_TRY), request()))
