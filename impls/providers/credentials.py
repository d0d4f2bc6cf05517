"""Key rotation and cooldowns, as functions over the inspectable `RouteState` data.

A key that hits a rate limit (when another key can take over) or an authentication or
billing error is put in cooldown: `cooldown_base * 2**(failures-1)` seconds, capped at
`cooldown_max`, and at least the server's retry-after. A success resets its count. A route
(model) that failed past its retry budget cools down the same way and is tried after the
routes that are ready.
"""

from __future__ import annotations

import time

from liveforge.declarations.provider import Provider, RetryPolicy, RouteState
from liveforge.declarations.provider_errors import ProviderError

__all__ = [
    "cool_credential",
    "cool_route",
    "cooldown_for",
    "credential_ok",
    "describe_state",
    "pick_credential",
    "route_order",
]

NO_KEY = -1
"""Credential index of a route without keys (local servers)."""


def cooldown_for(policy: RetryPolicy, failures: int, retry_after: float | None) -> float:
    """Cooldown after the `failures`-th consecutive failure."""
    grown = policy.cooldown_base * 2 ** max(0, failures - 1)
    return max(min(grown, policy.cooldown_max), retry_after or 0.0)


def pick_credential(state: RouteState, now: float, *, exclude: int | None = None) -> int | None:
    """Index of the first ready key from the active one on; NO_KEY without keys; else None."""
    count = len(state.credentials)
    if count == 0:
        return NO_KEY
    for step in range(count):
        index = (state.active_credential + step) % count
        if index != exclude and state.credentials[index].cooldown_until <= now:
            return index
    return None


def cool_credential(
    state: RouteState, index: int, error: ProviderError, policy: RetryPolicy, now: float
) -> None:
    """Put key `index` in cooldown and make the next key active."""
    if index == NO_KEY:
        return
    credential = state.credentials[index]
    credential.failures += 1
    credential.cooldown_until = now + cooldown_for(policy, credential.failures, error.retry_after)
    credential.last_error = f"{type(error).__name__}: {error.detail}"
    state.active_credential = (index + 1) % len(state.credentials)


def credential_ok(state: RouteState, index: int) -> None:
    """A call with key `index` succeeded: it stays active and its failures reset."""
    state.failures = 0
    state.unavailable_until = 0.0
    if index != NO_KEY:
        state.active_credential = index
        state.credentials[index].failures = 0


def cool_route(state: RouteState, error: ProviderError, policy: RetryPolicy, now: float) -> None:
    """The route's model is unavailable for now: cool it down (growing on repeat)."""
    state.failures += 1
    state.unavailable_until = now + cooldown_for(policy, state.failures, error.retry_after)
    state.last_error = f"{type(error).__name__}: {error.detail}"


def route_order(states: list[RouteState], now: float) -> list[int]:
    """Ready routes in chain order, then cooling ones by earliest recovery."""
    ready = [i for i, s in enumerate(states) if s.unavailable_until <= now]
    cooling = sorted(
        (i for i, s in enumerate(states) if s.unavailable_until > now),
        key=lambda i: states[i].unavailable_until,
    )
    return ready + cooling


def describe_state(provider: Provider, now: float | None = None) -> str:
    """Text table of routes, keys and cooldowns; key names only, never key values."""
    now = time.monotonic() if now is None else now
    lines = []
    for index, state in enumerate(provider.states):
        mark = "*" if index == provider.active_route else " "
        wait = state.unavailable_until - now
        status = f"cooling {wait:.1f}s ({state.last_error})" if wait > 0 else "ready"
        lines.append(f"{mark} {state.route.name}  [{state.route.protocol}]  {status}")
        for k, cred in enumerate(state.credentials):
            active = "*" if k == state.active_credential else " "
            left = cred.cooldown_until - now
            cstatus = f"cooling {left:.1f}s ({cred.last_error})" if left > 0 else "ready"
            lines.append(f"    {active} key {cred.name}: {cstatus}")
    return "\n".join(lines)
