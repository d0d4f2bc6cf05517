"""Retries: which errors are retried, backoff, retry-after honoured, total time bounded."""

from __future__ import annotations

import itertools

import pytest
from provider_support import FAST, collect, complete, final, provider, request, run

from liveforge.declarations.messages import Retrying
from liveforge.declarations.provider import RetryPolicy
from liveforge.declarations.provider_errors import (
    AuthenticationError,
    BadRequestError,
    BillingError,
    OverloadedError,
    RateLimitError,
)
from liveforge.impls.providers.classify import parse_retry_after
from liveforge.impls.providers.client import backoff_delay
from liveforge.testing import FakeProvider, fault, reply


def _gaps(fake: FakeProvider) -> list[float]:
    times = [r.received_at for r in fake.requests]
    return [b - a for a, b in itertools.pairwise(times)]


@pytest.mark.parametrize("protocol", ["anthropic", "openai"])
def test_retry_after_header_is_honoured(fake: FakeProvider, protocol: str) -> None:
    """After a 429 with retry-after 0.3 s the retry waits at least that long."""
    fake.add(fault.rate_limit(retry_after=0.3), reply.text("ok"))
    events = run(collect(provider(fake.route(protocol)), request()))
    assert final(events).text == "ok"
    notices = [e for e in events if isinstance(e, Retrying)]
    assert [(n.attempt, n.delay) for n in notices] == [(1, 0.3)]
    assert 0.3 * 0.95 <= _gaps(fake)[0] < 0.3 + 2.0


def test_retry_after_ms_takes_precedence_over_retry_after(fake: FakeProvider) -> None:
    """retry-after-ms 150 wins over retry-after 30 (which would exceed the budget)."""
    fake.add(fault.overloaded(retry_after=30, retry_after_ms=150), reply.text("ok"))
    policy = FAST.model_copy(update={"total_budget": 2.0})
    assert run(complete(provider(fake.route("anthropic"), retry=policy), request())).text == "ok"
    assert 0.15 * 0.95 <= _gaps(fake)[0] < 2.0


def test_retry_after_beyond_the_budget_gives_up_without_waiting(fake: FakeProvider) -> None:
    """A retry-after longer than total_budget ends the call at once with the error."""
    fake.add(fault.overloaded(retry_after=60), reply.text("never"))
    policy = FAST.model_copy(update={"total_budget": 1.0})
    with pytest.raises(OverloadedError) as info:
        run(complete(provider(fake.route("anthropic"), retry=policy), request()))
    assert info.value.retry_after == 60
    assert len(fake.requests) == 1


@pytest.mark.parametrize(
    "item",
    [fault.auth(), fault.quota(), fault.bad_request(), fault.context_overflow()],
    ids=["auth", "quota", "bad_request", "context_overflow"],
)
def test_auth_quota_and_bad_requests_are_never_retried(fake: FakeProvider, item: object) -> None:
    """Authentication, billing and bad-request errors are raised after one request."""
    fake.add(item, reply.text("never"))
    with pytest.raises((AuthenticationError, BillingError, BadRequestError)):
        run(collect(provider(fake.route("openai")), request()))
    assert len(fake.requests) == 1


def test_transient_errors_are_retried_up_to_max_attempts(fake: FakeProvider) -> None:
    """Overloaded, 500 and disconnects are retried; max_attempts bounds the attempts."""
    fake.add(
        fault.overloaded(),
        fault.server_error(),
        fault.disconnect(),
        fault.overloaded(),
        reply.text("too late"),
    )
    policy = FAST.model_copy(update={"max_attempts": 4})
    with pytest.raises(OverloadedError):
        run(collect(provider(fake.route("anthropic"), retry=policy), request()))
    assert len(fake.requests) == 4


def test_total_retry_time_is_bounded_by_the_budget(fake: FakeProvider) -> None:
    """With 0.1 s retry-afters and a 0.25 s budget, the call stops after 3 requests."""
    fake.add(*[fault.overloaded(retry_after=0.1)] * 10)
    policy = FAST.model_copy(update={"max_attempts": 100, "total_budget": 0.25})
    with pytest.raises(OverloadedError):
        run(collect(provider(fake.route("openai"), retry=policy), request()))
    assert len(fake.requests) == 3


def test_rate_limit_with_a_single_key_backs_off_on_that_key(fake: FakeProvider) -> None:
    """With one key a 429 is retried on the same key after its retry-after."""
    fake.add(
        fault.rate_limit(retry_after=0.05), fault.rate_limit(retry_after=0.05), reply.text("ok")
    )
    prov = provider(fake.route("anthropic", keys=["only-key"]))
    assert run(complete(prov, request())).text == "ok"
    assert [r.key_suffix for r in fake.requests] == ["-key"] * 3
    assert prov.states[0].credentials[0].failures == 0


def test_backoff_grows_exponentially_with_cap_and_jitter() -> None:
    """base * 2**(n-1), capped at max_delay, reduced by at most `jitter` of itself."""
    policy = RetryPolicy(base_delay=0.5, max_delay=8.0, jitter=0.25)
    assert [backoff_delay(policy, n, None, rand=0.0) for n in (1, 2, 3, 5, 9)] == [
        0.5,
        1.0,
        2.0,
        8.0,
        8.0,
    ]
    assert backoff_delay(policy, 3, None, rand=1.0) == 1.5
    assert backoff_delay(policy, 3, 0.7, rand=1.0) == 0.7


def test_retry_after_parsing_accepts_ms_seconds_and_http_dates() -> None:
    """retry-after-ms, numeric retry-after and HTTP-date retry-after are all understood."""
    assert parse_retry_after({"retry-after-ms": "250"}) == 0.25
    assert parse_retry_after({"retry-after": "3"}) == 3.0
    assert parse_retry_after({"retry-after": "Wed, 21 Oct 2015 07:28:00 GMT"}) == 0.0
    assert parse_retry_after({"retry-after": "soon"}) is None
    assert parse_retry_after({}) is None


def test_rate_limit_error_reports_retry_after(fake: FakeProvider) -> None:
    """The raised RateLimitError carries the server's retry-after."""
    fake.add(fault.rate_limit(retry_after=0.02), fault.rate_limit(retry_after=0.02))
    policy = FAST.model_copy(update={"max_attempts": 2})
    with pytest.raises(RateLimitError) as info:
        run(complete(provider(fake.route("openai"), retry=policy), request()))
    assert info.value.retry_after == 0.02 and info.value.status == 429
