"""Helpers for provider tests: run a Provider against a FakeProvider, collect events."""

from __future__ import annotations

import asyncio
from collections.abc import Coroutine
from typing import Any, TypeVar

import liveforge.impls  # noqa: F401  (registers the Provider bodies)
from liveforge.declarations.messages import (
    Done,
    Message,
    ModelRequest,
    ModelResponse,
    StreamEvent,
    ToolSpec,
)
from liveforge.declarations.provider import CancelToken, Provider, RetryPolicy, Route

T = TypeVar("T")

FAST = RetryPolicy(
    base_delay=0.001,
    max_delay=0.005,
    jitter=0.0,
    total_budget=5.0,
    cooldown_base=30.0,
    read_timeout=5.0,
    connect_timeout=2.0,
)

VIEW = ToolSpec(
    name="view_source",
    description="Show source",
    input_schema={"type": "object", "properties": {"path": {"type": "string"}}},
)


def run(coro: Coroutine[Any, Any, T]) -> T:
    """Run a coroutine on a fresh event loop."""
    return asyncio.run(coro)


def request(text: str = "hello", **fields: Any) -> ModelRequest:
    """A one-user-message request offering the view_source tool."""
    return ModelRequest(messages=[Message.user(text)], tools=[VIEW], **fields)


def provider(*routes: Route, retry: RetryPolicy = FAST) -> Provider:
    """A Provider over `routes` with millisecond backoff."""
    return Provider(list(routes), retry=retry)


async def collect(
    prov: Provider, req: ModelRequest, cancel: CancelToken | None = None
) -> list[StreamEvent]:
    """All stream events of one call, Done last."""
    events = [event async for event in prov.stream(req, cancel=cancel)]
    await prov.aclose()
    return events


async def complete(
    prov: Provider, req: ModelRequest, cancel: CancelToken | None = None
) -> ModelResponse:
    """One non-streaming call."""
    try:
        return await prov.complete(req, cancel=cancel)
    finally:
        await prov.aclose()


def final(events: list[StreamEvent]) -> ModelResponse:
    """The response of the last event, which must be Done."""
    last = events[-1]
    assert isinstance(last, Done), f"stream ended with {last!r}"
    return last.response


def stream_response(prov: Provider, req: ModelRequest) -> ModelResponse:
    """Stream one call and return the assembled response."""
    return final(run(collect(prov, req)))
