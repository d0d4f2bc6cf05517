"""Cancelling a call mid-stream closes the connection and returns what arrived."""

from __future__ import annotations

import asyncio
import threading
import time
from collections.abc import Callable
from contextlib import aclosing

import pytest
from provider_support import FAST, complete, provider, request, run

from liveforge.declarations.messages import Done, ModelResponse, TextDelta, ToolCallEnd
from liveforge.declarations.provider import CancelToken, Provider
from liveforge.testing import FakeProvider, fault, reply

SLOW_TEXT = "0123456789" * 20  # 200 events of one character, 50 ms apart: 10 s in full


async def _cancel_after_first_delta(prov: Provider, token: CancelToken) -> ModelResponse:
    async for event in prov.stream(request(), cancel=token):
        if isinstance(event, TextDelta) and event.text:
            token.cancel()
        if isinstance(event, Done):
            await prov.aclose()
            return event.response
    raise AssertionError("no Done event")


@pytest.mark.parametrize("protocol", ["anthropic", "openai"])
def test_cancel_mid_stream_returns_partial_response_marked_incomplete(
    fake: FakeProvider, protocol: str
) -> None:
    """Cancel after the first delta: Done arrives with the text so far, incomplete."""
    fake.add(reply.text(SLOW_TEXT).chunked(1).slow(0.05))
    started = time.monotonic()
    response = run(_cancel_after_first_delta(provider(fake.route(protocol)), CancelToken()))
    assert response.incomplete and response.stop_reason == "cancelled"
    assert response.text and SLOW_TEXT.startswith(response.text)
    assert len(response.text) < len(SLOW_TEXT)
    assert time.monotonic() - started < 5.0  # the full stream would take 10 s
    _wait_for(lambda: fake.requests[0].outcome == "client disconnected")


def _wait_for(condition: Callable[[], bool], limit: float = 5.0) -> None:
    """Poll until `condition` holds (the server notices a close at its next write)."""
    deadline = time.monotonic() + limit
    while not condition():
        assert time.monotonic() < deadline, "condition not reached"
        time.sleep(0.01)


def test_consumer_stopping_early_with_aclosing_closes_the_connection(fake: FakeProvider) -> None:
    """Leaving `async with aclosing(provider.stream(...))` early drops the connection."""
    fake.add(reply.text(SLOW_TEXT).chunked(1).slow(0.05))
    prov = provider(fake.route("openai"))

    async def call() -> None:
        async with aclosing(prov.stream(request())) as events:
            async for event in events:
                if isinstance(event, TextDelta) and event.text:
                    break
        await prov.aclose()

    run(call())
    _wait_for(lambda: fake.requests[0].outcome == "client disconnected")


def test_cancel_from_another_thread_interrupts_a_silent_wait(fake: FakeProvider) -> None:
    """A token fired by another thread ends a stream that is waiting for its next chunk."""
    fake.add(reply.text("ab").chunked(1).slow(3.0))
    token = CancelToken()

    async def call() -> ModelResponse:
        prov = provider(fake.route("anthropic"))
        events = [event async for event in prov.stream(request(), cancel=token)]
        await prov.aclose()
        assert isinstance(events[-1], Done)
        return events[-1].response

    timer = threading.Timer(0.2, token.cancel)
    timer.start()
    started = time.monotonic()
    response = run(call())
    timer.join()
    assert response.incomplete and response.stop_reason == "cancelled"
    assert time.monotonic() - started < 2.5


@pytest.mark.parametrize("protocol", ["anthropic", "openai"])
def test_cancel_keeps_closed_tool_calls_and_drops_unfinished_ones(
    fake: FakeProvider, protocol: str
) -> None:
    """A tool call completed before cancelling is kept; one still streaming is dropped."""
    fake.add(
        reply.tool_call("a", {"x": 1}, id="done1")
        .tool_call("b", {"long": "y" * 200}, id="open2")
        .chunked(4)
        .slow(0.02)
    )
    token = CancelToken()
    prov = provider(fake.route(protocol))

    async def call() -> ModelResponse:
        async for event in prov.stream(request(), cancel=token):
            if isinstance(event, ToolCallEnd):
                token.cancel()
            if isinstance(event, Done):
                await prov.aclose()
                return event.response
        raise AssertionError

    response = run(call())
    assert response.incomplete
    assert [c.id for c in response.tool_calls] == ["done1"]


def test_cancel_of_a_non_streaming_call_waiting_for_its_answer(fake: FakeProvider) -> None:
    """complete() waiting on a silent server returns an incomplete response when cancelled."""
    fake.add(fault.hang(3.0))
    token = CancelToken()
    threading.Timer(0.2, token.cancel).start()
    started = time.monotonic()
    response = run(complete(provider(fake.route("openai")), request(), cancel=token))
    assert response.incomplete and response.content == []
    assert time.monotonic() - started < 2.5


def test_cancel_during_retry_wait_returns_at_once(fake: FakeProvider) -> None:
    """A cancel while waiting out a retry-after ends the call without another request."""
    fake.add(fault.overloaded(retry_after=5.0), reply.text("never"))
    token = CancelToken()
    threading.Timer(0.2, token.cancel).start()
    policy = FAST.model_copy(update={"total_budget": 10.0})
    response = run(
        complete(provider(fake.route("anthropic"), retry=policy), request(), cancel=token)
    )
    assert response.incomplete and response.content == []
    assert len(fake.requests) == 1


def test_cancelled_token_before_the_call_sends_nothing(fake: FakeProvider) -> None:
    """An already-cancelled token returns an empty incomplete response, no request made."""
    token = CancelToken()
    token.cancel()
    response = run(complete(provider(fake.route("openai")), request(), cancel=token))
    assert response.incomplete and fake.requests == []


def test_consumer_awaits_are_not_interrupted_by_cancel(fake: FakeProvider) -> None:
    """Cancelling while the consumer itself awaits leaves the consumer's await alone."""
    fake.add(reply.text("abcdef").chunked(1))
    token = CancelToken()
    prov = provider(fake.route("anthropic"))

    async def call() -> tuple[bool, ModelResponse]:
        slept = False
        async for event in prov.stream(request(), cancel=token):
            if isinstance(event, TextDelta) and event.text and not slept:
                token.cancel()
                await asyncio.sleep(0.05)  # would raise CancelledError if wrongly cancelled
                slept = True
            if isinstance(event, Done):
                await prov.aclose()
                return slept, event.response
        raise AssertionError

    slept, response = run(call())
    assert slept and response.incomplete


def test_plain_task_cancellation_propagates(fake: FakeProvider) -> None:
    """Cancelling the asyncio task (not the token) raises CancelledError as usual."""
    fake.add(fault.hang(2.0))

    async def call() -> None:
        task = asyncio.create_task(provider(fake.route("openai")).complete(request()))
        await asyncio.sleep(0.2)
        task.cancel()
        with pytest.raises(asyncio.CancelledError):
            await task

    run(call())


def test_cancel_reaches_a_stream_read_from_a_new_task_for_each_event(fake: FakeProvider) -> None:
    """Reading each event through asyncio.wait_for (a task per read), a cancel fired during
    a network wait interrupts that wait: nothing after the last delivered delta arrives."""
    fake.add(reply.text("abc").chunked(1).slow(0.3))
    token = CancelToken()

    async def call() -> list[str]:
        prov = provider(fake.route("anthropic"))
        texts: list[str] = []
        async with aclosing(prov.stream(request(), cancel=token)) as stream:
            while True:
                event = await asyncio.wait_for(anext(stream), 10)
                if isinstance(event, TextDelta) and event.text:
                    texts.append(event.text)
                    asyncio.get_running_loop().call_later(0.02, token.cancel)
                if isinstance(event, Done):
                    await prov.aclose()
                    assert event.response.incomplete
                    return [*texts, event.response.text]
        raise AssertionError("no Done event")

    assert run(call()) == ["a", "a"]
