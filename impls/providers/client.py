"""`Provider` bodies: the call policy shared by every wire format.

For each call: walk the failover chain (ready routes first); on each route pick a ready key,
make the attempt, and react to its error:

    AuthenticationError, BillingError   cool the key, switch key at once; none left: next route
    RateLimitError                      another key ready: cool this one and switch at once;
                                        otherwise back off on this key (retry-after honoured)
    Overloaded/Server/Timeout/Connection/Malformed   back off and retry on this route
    ModelNotFound                       next route
    BadRequest, ContextOverflow         raise (another model would fail alike)
    StreamInterrupted                   raise (content was delivered; never replayed)

Backoff: retry-after-ms / retry-after when given, else base_delay * 2**(n-1) capped at
max_delay with jitter. A route whose attempts or `total_budget` run out is cooled down and
the next route is tried, with a `FailedOver` notice; when every route failed, the last
error is raised with `failover_history` listing the earlier ones.
"""

from __future__ import annotations

import asyncio
import functools
import random
import ssl
import time
from collections.abc import AsyncGenerator, AsyncIterator
from contextlib import aclosing

import forwardpy
import httpx

from liveforge.declarations.messages import (
    Done,
    FailedOver,
    ModelRequest,
    ModelResponse,
    Retrying,
    StreamEvent,
)
from liveforge.declarations.provider import (
    AnthropicWire,
    CancelToken,
    OpenAIWire,
    Provider,
    RetryPolicy,
    RouteState,
    WireFormat,
)
from liveforge.declarations.provider_errors import (
    AuthenticationError,
    BillingError,
    ModelNotFound,
    ProviderError,
    RateLimitError,
    StreamInterrupted,
)
from liveforge.impls.providers import credentials as keys
from liveforge.impls.providers.cancel import CallCancelled, CancelScope, sleep
from liveforge.impls.providers.transport import Batch, attempt

__all__ = ["backoff_delay"]

WIRES: dict[str, WireFormat] = {"anthropic": AnthropicWire(), "openai": OpenAIWire()}


class _RouteFailed(Exception):
    """Internal: this route cannot serve the call now; try the next one."""

    def __init__(self, error: ProviderError) -> None:
        super().__init__(str(error))
        self.error = error


def backoff_delay(
    policy: RetryPolicy, attempt_number: int, retry_after: float | None, rand: float | None = None
) -> float:
    """Seconds before retry `attempt_number` (1-based): retry-after, else jittered backoff."""
    if retry_after is not None:
        return retry_after
    delay = min(policy.max_delay, policy.base_delay * 2 ** (attempt_number - 1))
    return delay * (1 - policy.jitter * (random.random() if rand is None else rand))


@functools.cache
def _ssl_context() -> ssl.SSLContext:
    """One verified TLS context for every client (loading CA certificates is slow)."""
    return httpx.create_ssl_context()


def _http(provider: Provider) -> httpx.AsyncClient:
    """The caller's client, or one owned by the provider for the running event loop."""
    if provider.http is not None:
        return provider.http
    loop = asyncio.get_running_loop()
    owned = provider.owned_http
    if owned is None or owned[0] is not loop or owned[1].is_closed:
        owned = provider.owned_http = (loop, httpx.AsyncClient(verify=_ssl_context()))
    return owned[1]


async def _route_calls(
    provider: Provider,
    state: RouteState,
    request: ModelRequest,
    scope: CancelScope,
    streaming: bool,
) -> AsyncGenerator[Batch, None]:
    """Attempts on one route until success; raises _RouteFailed to move on."""
    policy, wire = provider.retry, WIRES[state.route.protocol]
    waited, number = 0.0, 0
    while True:
        number += 1
        index = keys.pick_credential(state, time.monotonic())
        if index is None:
            raise _RouteFailed(_keys_cooling(state))
        secret = None if index == keys.NO_KEY else state.route.credentials[index].key
        call = wire.build_request(
            request, state.route, secret.get_secret_value() if secret else None, stream=streaming
        )
        try:
            async with aclosing(
                attempt(
                    _http(provider), wire, state.route, call, policy, scope, streaming=streaming
                )
            ) as batches:
                async for batch in batches:
                    yield batch
            keys.credential_ok(state, index)
            return
        except ProviderError as error:
            delay = _react(provider, state, index, error, number, waited)
            notice = Retrying(attempt=number, delay=delay or 0.0, error=str(error))
        if delay is None:
            continue
        yield [notice]
        waited += delay
        try:
            await sleep(delay, scope)
        except CallCancelled:
            yield [
                Done(
                    response=ModelResponse(
                        stop_reason="cancelled", incomplete=True, model=state.route.model
                    )
                )
            ]
            return


def _react(
    provider: Provider,
    state: RouteState,
    index: int,
    error: ProviderError,
    number: int,
    waited: float,
) -> float | None:
    """Decide after a failed attempt: None = retry now, float = retry after that delay.

    `waited` is the backoff time already spent on this route; with the next delay it must
    stay within `total_budget` (attempt durations are bounded by max_attempts × timeout).

    Raises the error itself, or _RouteFailed to move to the next route.
    """
    policy, now = provider.retry, time.monotonic()
    if isinstance(error, StreamInterrupted):
        raise error
    if isinstance(error, AuthenticationError | BillingError):
        keys.cool_credential(state, index, error, policy, now)
        if keys.pick_credential(state, now) is None or index == keys.NO_KEY:
            raise _RouteFailed(error)
        return None
    if isinstance(error, RateLimitError) and keys.pick_credential(
        state, now, exclude=index
    ) not in (None, index):
        keys.cool_credential(state, index, error, policy, now)
        return None
    if isinstance(error, ModelNotFound):
        raise _RouteFailed(error)
    if not error.retryable:
        raise error
    delay = backoff_delay(policy, number, error.retry_after)
    if number >= policy.max_attempts or waited + delay > policy.total_budget:
        if isinstance(error, RateLimitError):
            keys.cool_credential(state, index, error, policy, now)
        raise _RouteFailed(error)
    return delay


def _keys_cooling(state: RouteState) -> ProviderError:
    now = time.monotonic()
    soonest = min(c.cooldown_until for c in state.credentials) - now
    reasons = "; ".join(f"{c.name}: {c.last_error}" for c in state.credentials)
    cls = AuthenticationError if "AuthenticationError" in reasons else RateLimitError
    return cls(
        f"every API key is cooling down (next ready in {soonest:.1f}s; {reasons})",
        provider=state.route.name.partition(":")[0],
        model=state.route.model,
        retry_after=max(0.0, soonest),
    )


async def _events(
    provider: Provider, request: ModelRequest, cancel: CancelToken | None, streaming: bool
) -> AsyncGenerator[Batch, None]:
    """The whole call: failover over routes; yields event batches ending in Done."""
    scope = CancelScope(cancel)
    history: list[str] = []
    last: ProviderError | None = None
    try:
        for index in keys.route_order(provider.states, time.monotonic()):
            state = provider.states[index]
            if last is not None:
                previous = provider.states[provider.active_route].route.name
                yield [
                    FailedOver(from_model=previous, to_model=state.route.name, reason=last.detail)
                ]
            provider.active_route = index
            try:
                async with aclosing(
                    _route_calls(provider, state, request, scope, streaming)
                ) as batches:
                    async for batch in batches:
                        yield batch
                return
            except _RouteFailed as failed:
                keys.cool_route(state, failed.error, provider.retry, time.monotonic())
                last = failed.error
                history.append(f"{state.route.name}: {type(last).__name__}: {last.detail}")
    finally:
        scope.close()
    assert last is not None
    last.failover_history = history[:-1]
    raise last


@forwardpy.impl(Provider.stream)
async def stream(
    self: Provider, request: ModelRequest, *, cancel: CancelToken | None = None
) -> AsyncIterator[StreamEvent]:
    # aclosing: a consumer that stops early closes the connection at once, not at GC.
    async with aclosing(_events(self, request, cancel, True)) as batches:
        async for batch in batches:
            for event in batch:
                yield event


@forwardpy.impl(Provider.complete)
async def complete(
    self: Provider, request: ModelRequest, *, cancel: CancelToken | None = None
) -> ModelResponse:
    response: ModelResponse | None = None
    async with aclosing(_events(self, request, cancel, False)) as batches:
        async for batch in batches:
            for event in batch:
                if isinstance(event, Done):
                    response = event.response
    assert response is not None, "a provider call ended without a Done event"
    return response


@forwardpy.impl(Provider.describe)
def describe(self: Provider) -> str:
    return keys.describe_state(self)


@forwardpy.impl(Provider.aclose)
async def aclose(self: Provider) -> None:
    owned, self.owned_http = self.owned_http, None
    if owned is not None:
        await owned[1].aclose()
