"""Shared error classification: status + error type -> ProviderError class, retry-after.

Every wire format extracts (status, type, message, request id) from their error bodies and
call `make_error`; classification is by status and type first, message text last (context
overflow wordings differ per server). Messages never contain request headers, so no key.
"""

from __future__ import annotations

import email.utils
import re
import time
from collections.abc import Mapping

from pydantic import ValidationError

from liveforge.declarations.provider import Route
from liveforge.declarations.provider_errors import (
    AuthenticationError,
    BadRequestError,
    BillingError,
    ContextOverflowError,
    ModelNotFound,
    OverloadedError,
    ProviderError,
    ProviderTimeout,
    RateLimitError,
    ServerError,
)

__all__ = [
    "body_message",
    "is_context_overflow",
    "make_error",
    "malformed_reason",
    "parse_retry_after",
]

_TYPE_CLASSES: dict[str, type[ProviderError]] = {
    "authentication_error": AuthenticationError,
    "permission_error": AuthenticationError,
    "invalid_api_key": AuthenticationError,
    "billing_error": BillingError,
    "insufficient_quota": BillingError,
    "not_found_error": ModelNotFound,
    "model_not_found": ModelNotFound,
    "rate_limit_error": RateLimitError,
    "rate_limit_exceeded": RateLimitError,
    "overloaded_error": OverloadedError,
    "api_error": ServerError,
    "server_error": ServerError,
    "timeout_error": ProviderTimeout,
    "request_too_large": ContextOverflowError,
    "context_length_exceeded": ContextOverflowError,
    "exceed_context_size_error": ContextOverflowError,
    # Gemini: google.rpc status names, and the ErrorInfo reasons that say more
    "API_KEY_INVALID": AuthenticationError,
    "UNAUTHENTICATED": AuthenticationError,
    "PERMISSION_DENIED": AuthenticationError,
    "FAILED_PRECONDITION": BillingError,
    "NOT_FOUND": ModelNotFound,
    "RESOURCE_EXHAUSTED": RateLimitError,
    "UNAVAILABLE": OverloadedError,
    "DEADLINE_EXCEEDED": ProviderTimeout,
    "INTERNAL": ServerError,
}

_STATUS_CLASSES: dict[int, type[ProviderError]] = {
    401: AuthenticationError,
    403: AuthenticationError,
    402: BillingError,
    404: ModelNotFound,
    408: ProviderTimeout,
    409: ServerError,
    413: ContextOverflowError,
    429: RateLimitError,
    503: OverloadedError,
    504: ProviderTimeout,
    529: OverloadedError,
}

_OVERFLOW = re.compile(
    r"prompt is too long|exceed context limit|input is too long|maximum context length"
    r"|exceeds the context window|context[_ ]length[_ ]exceeded|exceeds the available context"
    r"|context size|exceeds the maximum number of tokens allowed",
    re.IGNORECASE,
)


def is_context_overflow(message: str) -> bool:
    """True if a provider's message says the input does not fit the context window."""
    return bool(_OVERFLOW.search(message))


_GENERIC_TYPES = {"api_error", "server_error", "invalid_request_error", "INTERNAL"}


def _classify(status: int | None, error_type: str | None, message: str) -> type[ProviderError]:
    if is_context_overflow(message) and (status is None or status in (400, 413, 422)):
        return ContextOverflowError
    by_type = _TYPE_CLASSES.get(error_type or "")
    # Generic types ("server_error" on a 503) say less than the status does.
    if by_type is not None and (error_type not in _GENERIC_TYPES or status is None):
        return by_type
    if status is None:
        return by_type or ServerError
    if status in _STATUS_CLASSES:
        return _STATUS_CLASSES[status]
    return ServerError if status >= 500 else BadRequestError


def make_error(
    route: Route,
    *,
    status: int | None,
    error_type: str | None,
    message: str,
    request_id: str | None = None,
    headers: Mapping[str, str] | None = None,
) -> ProviderError:
    """Build the classified error for `route` (status None: an error event inside a stream)."""
    cls = _classify(status, error_type, message)
    if cls is ServerError and "overloaded" in message.lower():
        cls = OverloadedError
    provider = route.name.partition(":")[0]
    return cls(
        message or "no error message",
        provider=provider,
        model=route.model,
        status=status,
        request_id=request_id,
        error_type=error_type,
        retry_after=parse_retry_after(headers or {}),
    )


def body_message(body: bytes, status: int) -> str:
    """The message of an error body that is not the protocol's JSON: its text, cut."""
    return body.decode("utf-8", "replace")[:500] or f"HTTP {status}"


def parse_retry_after(headers: Mapping[str, str]) -> float | None:
    """Seconds to wait from `retry-after-ms`, else `retry-after` (seconds or HTTP date)."""
    millis = headers.get("retry-after-ms")
    if millis:
        try:
            return max(0.0, float(millis) / 1000)
        except ValueError:
            pass
    value = headers.get("retry-after")
    if not value:
        return None
    try:
        return max(0.0, float(value))
    except ValueError:
        pass
    try:
        moment = email.utils.parsedate_to_datetime(value)
    except (TypeError, ValueError):
        return None
    return max(0.0, moment.timestamp() - time.time())


def malformed_reason(exc: Exception) -> str:
    """Why a stream event was malformed, in one line (pydantic's first error, or the repr)."""
    if isinstance(exc, ValidationError):
        first = exc.errors()[0]
        return f"{'.'.join(map(str, first['loc']))}: {first['msg']}"
    return repr(exc)
