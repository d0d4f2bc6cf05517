"""One HTTP attempt against one route with one key: request, decode, classify.

Yields batches (lists) of stream events, the last batch ending in `Done`; batching keeps
the per-event cost of the generator chain low. Errors come out as ProviderError subclasses:
HTTP errors classified by the wire format, httpx timeouts and transport failures as
ProviderTimeout / ProviderConnectionError, a stream that ends without its end-of-message
marker as ProviderConnectionError. Any failure after content was delivered becomes
`StreamInterrupted` carrying the partial response, so it is never replayed silently.
Cancellation ends the attempt with `Done(response)` marked incomplete, after closing the
connection.
"""

from __future__ import annotations

import urllib.parse
from collections.abc import AsyncGenerator, AsyncIterator, Callable
from contextlib import aclosing
from typing import NoReturn

import httpx

from liveforge.declarations.messages import Done, ModelResponse, StreamEvent
from liveforge.declarations.provider import (
    HttpCall,
    RetryPolicy,
    Route,
    StreamDecoder,
    WireFormat,
)
from liveforge.declarations.provider_errors import (
    ProviderConnectionError,
    ProviderError,
    ProviderTimeout,
    StreamInterrupted,
)
from liveforge.impls.providers.cancel import CallCancelled, CancelScope
from liveforge.impls.providers.sse import SSEParser

__all__ = ["attempt"]

Batch = list[StreamEvent]


def _cancelled(route: Route, decoder: StreamDecoder | None) -> Batch:
    if decoder is not None:
        return [Done(response=decoder.finish(incomplete=True))]
    return [
        Done(
            response=ModelResponse(
                stop_reason="cancelled",
                incomplete=True,
                model=route.model,
                provider=route.name.partition(":")[0],
            )
        )
    ]


def _transport_error(exc: Exception, route: Route, url: str) -> ProviderError:
    provider = route.name.partition(":")[0]
    detail = f"{type(exc).__name__}: {exc}".rstrip(".") if str(exc) else type(exc).__name__
    detail += f" (POST {_shown_url(url)})"
    if isinstance(exc, httpx.TimeoutException):
        return ProviderTimeout(detail, provider=provider, model=route.model)
    return ProviderConnectionError(detail, provider=provider, model=route.model)


def _shown_url(url: str) -> str:
    """`url` as it may be shown: without a password or a query (either may hold a key)."""
    try:
        parts = urllib.parse.urlsplit(url)
        host = parts.hostname or ""
        port = f":{parts.port}" if parts.port else ""
    except ValueError:  # a base URL malformed beyond parsing: shown as given, key-free part
        return repr(url.partition("?")[0])
    if not parts.scheme or not host:
        return repr(url.partition("?")[0])
    return f"{parts.scheme}://{host}{port}{parts.path}"


async def attempt(
    client: httpx.AsyncClient,
    wire: WireFormat,
    route: Route,
    call: HttpCall,
    policy: RetryPolicy,
    scope: CancelScope,
    *,
    streaming: bool,
) -> AsyncGenerator[Batch, None]:
    """Run one HTTP call; see the module docstring for what comes out."""
    decoder: StreamDecoder | None = None
    timeout = httpx.Timeout(policy.read_timeout, connect=policy.connect_timeout)
    try:
        request = client.build_request(
            "POST", call.url, headers=call.headers, json=call.body, timeout=timeout
        )
        response = await scope.wait(client.send(request, stream=True))
    except CallCancelled:
        yield _cancelled(route, None)
        return
    except (httpx.HTTPError, httpx.InvalidURL) as exc:
        raise _transport_error(exc, route, call.url) from None
    try:
        if response.status_code >= 400 or not streaming:
            body = await scope.wait(response.aread())
            if response.status_code >= 400:
                raise wire.classify_error(response.status_code, response.headers, body, route)
            yield [Done(response=wire.parse_response(body, route))]
            return
        decoder = wire.stream_decoder(route)
        async with aclosing(_decode(response, decoder, scope, route)) as batches:
            async for batch in batches:
                yield batch
    except CallCancelled:
        yield _cancelled(route, decoder)
    except httpx.HTTPError as exc:
        _reraise(_transport_error(exc, route, call.url), decoder)
    except ProviderError as exc:
        _reraise(exc, decoder)
    finally:
        await response.aclose()


def _body(response: httpx.Response) -> AsyncIterator[bytes]:
    """The body's chunks as they arrive; no decoding layer unless the body is encoded."""
    if "content-encoding" in response.headers:
        return response.aiter_bytes()
    return response.aiter_raw()


async def _decode(
    response: httpx.Response, decoder: StreamDecoder, scope: CancelScope, route: Route
) -> AsyncGenerator[Batch, None]:
    """One batch per network chunk that completed events; the last batch ends in Done."""
    parser = SSEParser()
    feed, decode = parser.feed, decoder.feed
    with scope.interruptible():
        async for chunk in _body(response):
            batch: Batch = []
            failure = _decode_into(batch, feed(chunk), decode)
            if batch:
                # The consumer runs while this generator is suspended at `yield`: its awaits
                # must not be interrupted; arm() then raises if the token fired meanwhile.
                scope.disarm()
                yield batch
                scope.arm()
            if failure is not None:
                raise failure
    tail: Batch = []
    failure = _decode_into(tail, parser.flush(), decode)
    if failure is not None:
        if tail:
            yield tail
        raise failure
    if not decoder.finished:
        raise ProviderConnectionError(
            "the stream ended before the end-of-message event",
            provider=route.name.partition(":")[0],
            model=route.model,
        )
    yield [*tail, Done(response=decoder.finish())]


def _decode_into(
    batch: Batch,
    events: list[tuple[str | None, str]],
    decode: Callable[[str | None, str], list[StreamEvent]],
) -> ProviderError | None:
    """Decode `events` into `batch`; a decoding error stops there and is returned, so the
    events before it still reach the consumer (what was shown is what the response keeps)."""
    for name, data in events:
        try:
            batch += decode(name, data)
        except ProviderError as exc:
            return exc
    return None


def _reraise(error: ProviderError, decoder: StreamDecoder | None) -> NoReturn:
    """Raise `error`, or StreamInterrupted (caused by it) once content was delivered.

    httpx exceptions are never chained: they hold the request, whose headers hold the key.
    """
    if decoder is None or not decoder.has_content or isinstance(error, StreamInterrupted):
        raise error from None
    partial = decoder.finish(incomplete=True)
    raise StreamInterrupted(
        f"the stream broke after content arrived ({error.detail})",
        partial=partial,
        provider=error.provider,
        model=error.model,
        status=error.status,
        request_id=error.request_id,
        error_type=error.error_type,
    ) from error
