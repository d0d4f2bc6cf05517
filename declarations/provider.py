# mypy: disable-error-code="empty-body"
"""The model provider contract: `Provider` (what the agent calls) and `WireFormat` (per API).

Design. Talking to a model has two concerns that change for different reasons:

* **Policy** — which model and key to use, retries with backoff, key cooldowns, failover
  down a chain of models, cancellation. This is the same for every API, so it is declared
  once as `Provider` and implemented once (`liveforge.impls.providers.client`).
* **Wire format** — how a neutral `ModelRequest` becomes an HTTP request, how a body or an
  SSE stream becomes `ModelResponse` / stream events, how an error body is classified. This
  differs per API, so `WireFormat` is declared with one declared subclass per protocol,
  `AnthropicWire` and `OpenAIWire`, each re-declaring the stubs so forwardpy registers one
  `@impl` body per protocol (`liveforge.impls.providers.anthropic_wire` / `openai_wire`).

A `Provider` holds a failover chain of `Route`s (model + protocol + base URL + credentials);
routes on different protocols can be mixed, and each call picks the wire format of its
route. Patch a wire module to change one protocol; patch the client to change the policy.

Example::

    provider = Provider([Route(name="anthropic:claude-sonnet-4-5", protocol="anthropic",
                               model="claude-sonnet-4-5", base_url="https://api.anthropic.com",
                               credentials=[Credential(name="ANTHROPIC_API_KEY", key=k)])])
    async for event in provider.stream(request):
        ...                                          # TextDelta, ToolCallEnd, ..., Done
    response = await provider.complete(request)      # non-streaming
"""

from __future__ import annotations

import asyncio
import threading
from collections.abc import AsyncIterator, Callable, Mapping
from dataclasses import dataclass, field
from typing import Any, Literal, Protocol

import forwardpy
import httpx
from pydantic import BaseModel, ConfigDict, Field, SecretStr

from liveforge.declarations.messages import ModelRequest, ModelResponse, StreamEvent
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

__all__ = [
    "AnthropicWire",
    "AuthenticationError",
    "BadRequestError",
    "BillingError",
    "CancelToken",
    "ContextOverflowError",
    "Credential",
    "CredentialState",
    "HttpCall",
    "MalformedResponse",
    "ModelNotFound",
    "OpenAIWire",
    "OverloadedError",
    "Provider",
    "ProviderConnectionError",
    "ProviderError",
    "ProviderTimeout",
    "RateLimitError",
    "RetryPolicy",
    "Route",
    "RouteState",
    "ServerError",
    "StreamDecoder",
    "StreamInterrupted",
    "WireFormat",
]

Protocol_ = Literal["anthropic", "openai"]


class Credential(BaseModel):
    """One API key profile. `name` (e.g. the env var) is shown; `key` never is."""

    model_config = ConfigDict(frozen=True)
    name: str
    key: SecretStr


class Route(BaseModel):
    """One model in the failover chain: where and how to reach it."""

    model_config = ConfigDict(frozen=True)
    name: str
    """Display name, "provider:model" (e.g. "ollama:llama3.1")."""
    protocol: Protocol_
    model: str
    base_url: str
    """Anthropic: the host root (…/v1/messages is appended). OpenAI: up to /v1."""
    credentials: list[Credential] = Field(default_factory=list)
    """Key profiles tried in order; empty means no auth header (local servers)."""
    extra_headers: dict[str, str] = Field(default_factory=dict)


class RetryPolicy(BaseModel):
    """Retry, cooldown and timeout settings. Times in seconds."""

    model_config = ConfigDict(frozen=True, extra="forbid")
    max_attempts: int = Field(default=4, ge=1)
    """Attempts per route (first try included)."""
    base_delay: float = Field(default=0.5, ge=0)
    """First backoff delay; doubles per attempt, with jitter."""
    max_delay: float = Field(default=8.0, ge=0)
    """Cap of one backoff delay (a longer retry-after is honoured up to `total_budget`)."""
    jitter: float = Field(default=0.25, ge=0, le=1)
    """Fraction of each delay randomised (delay * (1 - jitter*random()))."""
    total_budget: float = Field(default=60.0, ge=0)
    """Bound on the time spent waiting between retries of one call on one route."""
    cooldown_base: float = Field(default=30.0, ge=0)
    """First cooldown of a failed key or model; doubles on each repeat."""
    cooldown_max: float = Field(default=3600.0, ge=0)
    connect_timeout: float = Field(default=10.0, gt=0)
    read_timeout: float = Field(default=120.0, gt=0)
    """Longest wait for the response or for the next stream chunk."""


@dataclass
class CredentialState:
    """Live state of one key profile (inspectable; holds no secret)."""

    name: str
    failures: int = 0
    cooldown_until: float = 0.0
    """time.monotonic() until which the key is skipped."""
    last_error: str = ""


@dataclass
class RouteState:
    """Live state of one route: its keys, which is active, whether the model is cooling."""

    route: Route
    credentials: list[CredentialState]
    active_credential: int = 0
    failures: int = 0
    unavailable_until: float = 0.0
    last_error: str = ""


@dataclass
class HttpCall:
    """A fully built HTTP request. `headers` may hold a key: never log or repr it."""

    url: str
    headers: dict[str, str] = field(repr=False)
    body: dict[str, Any]


class StreamDecoder(Protocol):
    """Turns one response's SSE events into neutral stream events, then the response."""

    def feed(self, event: str | None, data: str) -> list[StreamEvent]:
        """Decode one SSE event; raises ProviderError for an in-stream error event."""
        ...

    @property
    def finished(self) -> bool:
        """True once the protocol's end-of-message marker arrived."""
        ...

    @property
    def has_content(self) -> bool:
        """True once any text, thinking or tool call was delivered."""
        ...

    def finish(self, *, incomplete: bool = False) -> ModelResponse:
        """The assembled response (open blocks closed, `incomplete` as given)."""
        ...


class CancelToken:
    """Cancels a provider call from anywhere (a signal handler, another thread or task).

    A cancelled call closes its connection promptly and returns (or ends its stream with)
    the response received so far, marked `incomplete=True`.
    """

    def __init__(self) -> None:
        self._cancelled = False
        self._callbacks: list[Callable[[], None]] = []
        self._lock = threading.Lock()

    @property
    def cancelled(self) -> bool:
        """True once `cancel()` was called."""
        return self._cancelled

    def cancel(self) -> None:
        """Request cancellation; idempotent and thread-safe."""
        with self._lock:
            if self._cancelled:
                return
            self._cancelled = True
            callbacks = list(self._callbacks)
        for callback in callbacks:
            callback()

    def add_callback(self, callback: Callable[[], None]) -> None:
        """Call `callback` on cancel (at once if already cancelled)."""
        with self._lock:
            if not self._cancelled:
                self._callbacks.append(callback)
                return
        callback()

    def remove_callback(self, callback: Callable[[], None]) -> None:
        """Forget a callback added earlier (no error if absent)."""
        with self._lock:
            if callback in self._callbacks:
                self._callbacks.remove(callback)


class WireFormat(forwardpy.Object):
    """Converts between neutral models and one HTTP API. Stateless."""

    def build_request(
        self, request: ModelRequest, route: Route, api_key: str | None, *, stream: bool
    ) -> HttpCall:
        """The HTTP call for `request` to `route` (URL, headers with auth, JSON body)."""
        ...

    def parse_response(self, body: bytes, route: Route) -> ModelResponse:
        """Parse a non-streaming 200 body; MalformedResponse if it is not the protocol's."""
        ...

    def stream_decoder(self, route: Route) -> StreamDecoder:
        """A fresh decoder for one streamed response."""
        ...

    def classify_error(
        self, status: int, headers: Mapping[str, str], body: bytes, route: Route
    ) -> ProviderError:
        """The ProviderError subclass for an HTTP error response."""
        ...


class AnthropicWire(WireFormat):
    """The Anthropic Messages API (POST {base}/v1/messages)."""

    def build_request(
        self, request: ModelRequest, route: Route, api_key: str | None, *, stream: bool
    ) -> HttpCall:
        """Messages API request: system hoisted, x-api-key + anthropic-version headers."""
        ...

    def parse_response(self, body: bytes, route: Route) -> ModelResponse:
        """Parse a `message` object."""
        ...

    def stream_decoder(self, route: Route) -> StreamDecoder:
        """Decoder for message_start … message_stop event sequences."""
        ...

    def classify_error(
        self, status: int, headers: Mapping[str, str], body: bytes, route: Route
    ) -> ProviderError:
        """Classify `{type: error, error: {type, message}}` bodies."""
        ...


class OpenAIWire(WireFormat):
    """OpenAI-compatible chat completions (OpenAI, Ollama, vLLM, LM Studio, llama.cpp)."""

    def build_request(
        self, request: ModelRequest, route: Route, api_key: str | None, *, stream: bool
    ) -> HttpCall:
        """Chat-completions request: tool results as role=tool messages, Bearer auth."""
        ...

    def parse_response(self, body: bytes, route: Route) -> ModelResponse:
        """Parse a `chat.completion` object."""
        ...

    def stream_decoder(self, route: Route) -> StreamDecoder:
        """Decoder for `chat.completion.chunk` data lines up to `[DONE]`."""
        ...

    def classify_error(
        self, status: int, headers: Mapping[str, str], body: bytes, route: Route
    ) -> ProviderError:
        """Classify `{error: {...}}` bodies, vLLM integer codes and LM Studio strings."""
        ...


class Provider(forwardpy.Object):
    """Calls models through a failover chain of routes with retries and key rotation.

    State (`states`, `active_route`) is plain data, inspectable at any time; `describe()`
    renders it for people.
    """

    routes: list[Route]
    retry: RetryPolicy
    states: list[RouteState]
    active_route: int
    http: httpx.AsyncClient | None
    owned_http: tuple[asyncio.AbstractEventLoop, httpx.AsyncClient] | None
    """The client this provider made itself (for `http` None), with the loop it serves."""

    def __init__(
        self,
        routes: list[Route],
        *,
        retry: RetryPolicy | None = None,
        http: httpx.AsyncClient | None = None,
    ) -> None:
        if not routes:
            raise ValueError("Provider needs at least one Route (a model to call).")
        self.routes = list(routes)
        self.retry = retry or RetryPolicy()
        self.states = [
            RouteState(route=r, credentials=[CredentialState(name=c.name) for c in r.credentials])
            for r in self.routes
        ]
        self.active_route = 0
        self.http = http
        self.owned_http = None

    def __repr__(self) -> str:
        return f"Provider(routes={[r.name for r in self.routes]!r})"

    def stream(
        self, request: ModelRequest, *, cancel: CancelToken | None = None
    ) -> AsyncIterator[StreamEvent]:
        """Stream events for `request`; the last event is `Done(response)`.

        Emits `Retrying` / `FailedOver` notices. Raises a ProviderError subclass when every
        route failed, or `StreamInterrupted` when a failure follows delivered content. To
        stop early, iterate inside `async with contextlib.aclosing(provider.stream(...))`
        so the connection closes at once; to stop and keep the partial answer, fire
        `cancel` and read the final `Done`.
        """
        ...

    async def complete(
        self, request: ModelRequest, *, cancel: CancelToken | None = None
    ) -> ModelResponse:
        """Non-streaming call with the same retry/failover policy; returns the response."""
        ...

    def describe(self) -> str:
        """Human-readable state: active route and key, cooldowns (no secrets)."""
        ...

    async def aclose(self) -> None:
        """Close the HTTP client this provider created (not one passed in)."""
        ...
