"""Credential rotation with cooldowns, and failover down the model chain."""

from __future__ import annotations

import math
import re
import time

import pytest
from provider_support import FAST, collect, complete, final, provider, request, run

from liveforge.declarations.messages import FailedOver
from liveforge.declarations.provider import RetryPolicy
from liveforge.declarations.provider_errors import (
    AuthenticationError,
    ContextOverflowError,
    OverloadedError,
    RateLimitError,
)
from liveforge.impls.providers.credentials import cooldown_for
from liveforge.testing import FakeProvider, fault, reply


def test_rate_limit_rotates_to_the_next_key_and_cools_the_first(fake: FakeProvider) -> None:
    """A 429 on key one switches to key two at once; key one is cooling, key two active."""
    fake.add(fault.rate_limit(retry_after=5), reply.text("ok"), reply.text("again"))
    prov = provider(fake.route("anthropic", keys=["key-one", "key-two"]))
    assert run(complete(prov, request())).text == "ok"
    assert [r.key_suffix for r in fake.requests] == ["-one", "-two"]
    state = prov.states[0]
    assert state.active_credential == 1
    assert state.credentials[0].failures == 1
    assert state.credentials[0].cooldown_until - time.monotonic() > 4
    assert "RateLimitError" in state.credentials[0].last_error
    run(complete(prov, request()))
    assert fake.requests[-1].key_suffix == "-two"


def test_invalid_key_rotates_to_a_valid_one() -> None:
    """A server rejecting key one (401) is answered with key two, with no backoff wait."""
    with FakeProvider([reply.text("ok")], keys={"good-key"}) as fake:
        prov = provider(fake.route("openai", keys=["bad--key", "good-key"]))
        assert run(complete(prov, request())).text == "ok"
        assert [r.key_suffix for r in fake.requests] == ["-key", "-key"]
        assert prov.states[0].credentials[0].failures == 1
        assert "AuthenticationError" in prov.states[0].credentials[0].last_error


def test_cooldown_grows_on_repeated_failures() -> None:
    """Each consecutive failure doubles the cooldown up to the cap; retry-after is a floor."""
    policy = RetryPolicy(cooldown_base=10, cooldown_max=35)
    assert [cooldown_for(policy, n, None) for n in (1, 2, 3, 4)] == [10, 20, 35, 35]
    assert cooldown_for(policy, 1, 60) == 60


def test_repeated_rate_limits_on_the_same_key_lengthen_its_cooldown(fake: FakeProvider) -> None:
    """Key one fails twice (once per call); its second cooldown is twice the first."""
    fake.add(fault.rate_limit(), reply.text("a"), fault.rate_limit(), reply.text("b"))
    policy = FAST.model_copy(update={"cooldown_base": 100.0})
    prov = provider(fake.route("anthropic", keys=["key-one", "key-two"]), retry=policy)
    run(complete(prov, request()))
    first = prov.states[0].credentials[0].cooldown_until - time.monotonic()
    prov.states[0].credentials[0].cooldown_until = 0.0  # key one is ready again
    prov.states[0].active_credential = 0
    run(complete(prov, request()))
    second = prov.states[0].credentials[0].cooldown_until - time.monotonic()
    assert prov.states[0].credentials[0].failures == 2
    assert 90 < first <= 100 and 190 < second <= 200


def test_all_keys_failing_auth_fails_over_to_the_next_model(fake: FakeProvider) -> None:
    """Both keys rejected: the chain moves to the next route and says so."""
    fake.add(fault.auth(), fault.auth(), reply.text("from fallback"))
    prov = provider(
        fake.route("anthropic", keys=["key-one", "key-two"]),
        fake.route("openai", model="backup", keys=["key-three"]),
    )
    events = run(collect(prov, request()))
    assert final(events).text == "from fallback"
    notices = [e for e in events if isinstance(e, FailedOver)]
    assert [(n.from_model, n.to_model) for n in notices] == [
        ("anthropic:test-model", "openai:backup")
    ]
    assert prov.active_route == 1
    assert fake.requests[-1].protocol == "openai" and fake.requests[-1].body["model"] == "backup"
    assert prov.states[0].unavailable_until > time.monotonic()


def test_model_not_found_fails_over_without_retrying(fake: FakeProvider) -> None:
    """A 404 model moves on at once to the next model in the chain."""
    fake.add(fault.not_found(), reply.text("second model"))
    prov = provider(fake.route("openai", model="gone"), fake.route("openai", model="there"))
    assert run(complete(prov, request())).text == "second model"
    assert [r.body["model"] for r in fake.requests] == ["gone", "there"]


def test_overload_past_the_retry_budget_fails_over(fake: FakeProvider) -> None:
    """Overloaded on every attempt of the primary: the fallback answers."""
    fake.add(fault.overloaded(), fault.overloaded(), reply.text("fallback"))
    policy = FAST.model_copy(update={"max_attempts": 2})
    prov = provider(
        fake.route("anthropic", model="primary"),
        fake.route("anthropic", model="fallback"),
        retry=policy,
    )
    assert run(complete(prov, request())).text == "fallback"
    assert [r.body["model"] for r in fake.requests] == ["primary", "primary", "fallback"]


def test_cooling_primary_is_skipped_until_it_recovers(fake: FakeProvider) -> None:
    """After failing over, the next call starts at the fallback while the primary cools."""
    fake.add(fault.not_found(), reply.text("one"), reply.text("two"))
    prov = provider(fake.route("openai", model="primary"), fake.route("openai", model="backup"))
    run(complete(prov, request()))
    run(complete(prov, request()))
    assert [r.body["model"] for r in fake.requests] == ["primary", "backup", "backup"]
    prov.states[0].unavailable_until = 0.0
    fake.add(reply.text("three"))
    run(complete(prov, request()))
    assert fake.requests[-1].body["model"] == "primary"


def test_every_route_failing_raises_the_last_error_with_history(fake: FakeProvider) -> None:
    """When the whole chain fails, the last error is raised and lists the earlier ones."""
    fake.add(fault.auth(), *[fault.overloaded()] * 2)
    policy = FAST.model_copy(update={"max_attempts": 2})
    prov = provider(
        fake.route("anthropic", model="a"), fake.route("openai", model="b"), retry=policy
    )
    with pytest.raises(OverloadedError) as info:
        run(complete(prov, request()))
    assert len(info.value.failover_history) == 1
    assert "AuthenticationError" in str(info.value)


def test_rate_limited_keys_all_cooling_fail_over(fake: FakeProvider) -> None:
    """Two keys both rate limited past the budget: the fallback model takes the call."""
    fake.add(fault.rate_limit(), fault.rate_limit(), reply.text("ok"))
    policy = FAST.model_copy(update={"max_attempts": 2})
    prov = provider(
        fake.route("anthropic", keys=["key-one", "key-two"]),
        fake.route("openai", model="spare"),
        retry=policy,
    )
    assert run(complete(prov, request())).text == "ok"
    assert [c.failures for c in prov.states[0].credentials] == [1, 1]
    assert [r.key_suffix for r in fake.requests] == ["-one", "-two", "-key"]


def test_every_key_cooling_is_reported_without_a_request(fake: FakeProvider) -> None:
    """A single route whose keys all cool down fails at once, saying when one is ready."""
    fake.add(fault.rate_limit(), fault.rate_limit())
    policy = FAST.model_copy(update={"max_attempts": 1})
    prov = provider(fake.route("anthropic", keys=["key-one", "key-two"]), retry=policy)
    with pytest.raises(RateLimitError):
        run(complete(prov, request()))
    assert len(fake.requests) == 2
    with pytest.raises(RateLimitError) as info:
        run(complete(prov, request()))
    assert len(fake.requests) == 2
    left = info.value.retry_after
    assert left is not None and 25 < left <= policy.cooldown_base
    said = re.search(r"every API key is cooling down \(next ready in (\d+\.\d)s;", str(info.value))
    assert said is not None and abs(float(said.group(1)) - left) < 0.1, str(info.value)
    assert f"Try again in {math.ceil(left)}s, lower the request rate" in str(info.value)


def test_bad_requests_do_not_fail_over(fake: FakeProvider) -> None:
    """A context overflow is raised as is; the fallback would fail the same way."""
    fake.add(fault.context_overflow(), reply.text("never"))
    prov = provider(fake.route("openai", model="a"), fake.route("openai", model="b"))
    with pytest.raises(ContextOverflowError):
        run(complete(prov, request()))
    assert len(fake.requests) == 1


def test_state_description_names_keys_but_never_shows_them(fake: FakeProvider) -> None:
    """describe() shows routes, key names and cooldowns, never a key value."""
    fake.add(fault.rate_limit(retry_after=5), reply.text("ok"))
    prov = provider(
        fake.route("anthropic", keys=["sk-ant-secret-1", "sk-ant-secret-2"]),
        fake.route("openai", model="b", keys=["sk-oa-secret-3"]),
    )
    run(complete(prov, request()))
    text = prov.describe()
    assert "* anthropic:test-model" in text and "openai:b" in text
    assert "key key1: cooling" in text and "* key key2: ready" in text
    assert "secret" not in text and "secret" not in repr(prov) and "secret" not in repr(prov.states)


def test_auth_errors_on_a_single_route_raise_authentication_error(fake: FakeProvider) -> None:
    """One route, one bad key: AuthenticationError naming the key variables to check."""
    fake.add(fault.auth())
    with pytest.raises(AuthenticationError, match="ANTHROPIC_API_KEY"):
        run(complete(provider(fake.route("anthropic")), request()))
