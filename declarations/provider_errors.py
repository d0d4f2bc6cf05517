"""Errors raised by model providers, classified so callers can react by type.

    LiveforgeError
     └── ProviderError              status, provider, model, request_id, error_type, retry_after
          ├── AuthenticationError   401/403: the key is wrong or lacks permission
          ├── BillingError          402 / insufficient_quota: credit or quota exhausted
          ├── RateLimitError        429: too many requests           (retryable)
          ├── OverloadedError       529/503 / overloaded_error        (retryable)
          ├── ServerError           500/502/504 / api_error           (retryable)
          ├── ProviderTimeout       no answer in time                 (retryable, + TimeoutError)
          ├── ProviderConnectionError  connect failed / stream cut    (retryable, + ConnectionError)
          ├── MalformedResponse     unparseable body or SSE event     (retryable)
          ├── ModelNotFound         404 / model_not_found: try another model
          ├── BadRequestError       400: the request itself is wrong
          │    └── ContextOverflowError  the conversation exceeds the context window
          └── StreamInterrupted     failed after content was delivered; `partial` holds it

Retryable errors are retried with backoff before any content reached the caller. A stream
that fails after content was delivered raises `StreamInterrupted` instead of replaying
silently. No error ever holds an API key: messages are built from status, type and the
provider's message text only.
"""

from __future__ import annotations

import math
import re
from typing import TYPE_CHECKING, ClassVar

from liveforge.kernel.errors import LiveforgeError

if TYPE_CHECKING:
    from liveforge.declarations.messages import ModelResponse

__all__ = [
    "AuthenticationError",
    "BadRequestError",
    "BillingError",
    "ContextOverflowError",
    "MalformedResponse",
    "ModelNotFound",
    "OverloadedError",
    "ProviderConnectionError",
    "ProviderError",
    "ProviderTimeout",
    "RateLimitError",
    "ServerError",
    "StreamInterrupted",
    "overflow_counts",
]


class ProviderError(LiveforgeError):
    """A model API call failed. Fields say where; `str()` says what to do next."""

    retryable: ClassVar[bool] = False
    hint: ClassVar[str] = "Check the provider's status and the request, then try again."

    def __init__(
        self,
        message: str,
        *,
        provider: str = "",
        model: str = "",
        status: int | None = None,
        request_id: str | None = None,
        error_type: str | None = None,
        retry_after: float | None = None,
    ) -> None:
        self.detail = message
        self.provider = provider
        self.model = model
        self.status = status
        self.request_id = request_id
        self.error_type = error_type
        self.retry_after = retry_after
        self.failover_history: list[str] = []
        super().__init__(self._render())

    def _render(self) -> str:
        where = ":".join(p for p in (self.provider, self.model) if p) or "model provider"
        facts = ", ".join(str(f) for f in (self.status, self.error_type) if f)
        text = f"{where} failed" + (f" ({facts})" if facts else "") + f": {self.detail}"
        if self.request_id:
            text += f" [request id {self.request_id}]"
        return f"{text}. {self._hint()}"

    def _hint(self) -> str:
        """What to do next (the class's `hint`; a subclass may fill in this error's facts)."""
        return self.hint

    def __str__(self) -> str:
        text = str(self.args[0])
        if self.failover_history:
            text += " Earlier attempts: " + "; ".join(self.failover_history)
        return text


class AuthenticationError(ProviderError):
    """The API key was rejected (401) or lacks permission (403)."""

    hint = (
        "Check the API key in the environment (e.g. ANTHROPIC_API_KEY / OPENAI_API_KEY) "
        "and that it may use this model."
    )


class BillingError(ProviderError):
    """Credit or quota is exhausted; retrying the same key cannot help."""

    hint = "Add credit or raise the quota for this account, or configure another key."


class RateLimitError(ProviderError):
    """Too many requests or tokens per minute."""

    retryable = True
    hint = "Wait a moment, lower the request rate, or configure more API keys."

    def _hint(self) -> str:
        """The wait the provider (or the keys' cooldown) asks for, when it is known."""
        if not self.retry_after or self.retry_after <= 0:
            return self.hint
        return (
            f"Try again in {_duration(self.retry_after)}, lower the request rate, or "
            "configure more API keys."
        )


def _duration(seconds: float) -> str:
    """`seconds` rounded up for a person: "30s", "2 min"."""
    whole = math.ceil(seconds)
    return f"{whole}s" if whole < 120 else f"{math.ceil(whole / 60)} min"


class OverloadedError(ProviderError):
    """The provider is temporarily overloaded (Anthropic 529, HTTP 503)."""

    retryable = True
    hint = "The provider is busy; try again shortly or configure fallback models."


class ServerError(ProviderError):
    """The provider failed internally (5xx)."""

    retryable = True
    hint = "This is on the provider's side; try again shortly or configure fallback models."


class ProviderTimeout(ProviderError, TimeoutError):
    """No response (or no next chunk) arrived within the timeout."""

    retryable = True
    hint = "Check the network or raise the request timeout in [tool.liveforge]."


class ProviderConnectionError(ProviderError, ConnectionError):
    """The connection could not be made, or it broke before the response was complete."""

    retryable = True
    hint = "Check the network and the base URL (e.g. OPENAI_BASE_URL); is the server running?"

    def _hint(self) -> str:
        if not self.provider:
            return self.hint
        variable = f"{self.provider.upper().replace('-', '_')}_BASE_URL"
        return f"Check the network and the base URL ({variable}); is the server running?"


class MalformedResponse(ProviderError):
    """The provider sent a body or stream event that does not follow its protocol."""

    retryable = True
    hint = "The server did not follow its API protocol; check the base URL and server version."


class ModelNotFound(ProviderError):
    """The model does not exist or is not available to this key (404)."""

    hint = "Check the model name (e.g. 'anthropic:claude-sonnet-4-5') or configure fallbacks."


class BadRequestError(ProviderError, ValueError):
    """The provider rejected the request as invalid (400)."""

    hint = "The request was invalid; the message above names the problem."


_OVERFLOW_COUNTS = (
    # Anthropic: "prompt is too long: 208437 tokens > 200000 maximum"
    (re.compile(r"([\d,]+) tokens? > ([\d,]+)"), False),
    # OpenAI: "maximum context length is 128000 tokens. However, your messages resulted in
    # 250000 tokens" (or "... you requested 250000 tokens")
    (
        re.compile(
            r"maximum context length is ([\d,]+) tokens.*?(?:resulted in|requested) "
            r"([\d,]+) tokens",
            re.S,
        ),
        True,
    ),
    # Gemini: "The input token count (2500000) exceeds the maximum number of tokens allowed
    # (1048576)."
    (
        re.compile(
            r"input token count \(([\d,]+)\) exceeds the maximum number of tokens "
            r"allowed \(([\d,]+)\)"
        ),
        False,
    ),
)


def overflow_counts(message: str) -> tuple[int | None, int | None]:
    """(the request's tokens, the window) as a provider's overflow message states them, by
    the provider's own count; (None, None) when it does not say."""
    for pattern, limit_first in _OVERFLOW_COUNTS:
        found = pattern.search(message)
        if found:
            a, b = (int(g.replace(",", "")) for g in found.groups())
            return (b, a) if limit_first else (a, b)
    return None, None


class ContextOverflowError(BadRequestError):
    """The conversation no longer fits the model's context window. `tokens` and `limit` are
    the request's size and the window by the provider's own count, when its message says."""

    hint = "Compact the conversation (summarise old turns) or use a model with a larger window."

    def __init__(self, message: str, **fields: object) -> None:
        super().__init__(message, **fields)  # type: ignore[arg-type]
        self.tokens, self.limit = overflow_counts(message)


class StreamInterrupted(ProviderError):
    """The stream failed after content was delivered; it was not replayed.

    `partial` is what arrived (marked incomplete); the cause is in `__cause__`.
    """

    hint = "The partial answer was kept; ask again to continue."

    def __init__(self, message: str, *, partial: ModelResponse, **fields: object) -> None:
        self.partial = partial
        super().__init__(message, **fields)  # type: ignore[arg-type]
