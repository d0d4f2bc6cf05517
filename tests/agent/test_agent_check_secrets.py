"""A key printed by a check the agent runs never reaches the model: the agent's `verify`
tool result, as the provider receives it in the next request, holds no form of it."""

from __future__ import annotations

import json
from typing import Any

import pytest
from agent_support import FAST_RETRY, of_type, run_turn
from secret_leaks import KEY, LEAKS, leaked

from liveforge.agent_setup import build_agent
from liveforge.declarations.permissions import Policy
from liveforge.declarations.provider import Provider
from liveforge.testing import reply


def _strings(value: Any) -> list[str]:
    """Every string in a JSON body (as the model reads them, unescaped)."""
    if isinstance(value, str):
        return [value]
    if isinstance(value, dict):
        return [s for item in value.values() for s in _strings(item)]
    if isinstance(value, list):
        return [s for item in value for s in _strings(item)]
    return []


@pytest.mark.parametrize("protocol", ["anthropic", "openai"])
def test_a_key_printed_by_a_verify_check_reaches_no_request_to_the_model(
    project, fake, protocol: str
) -> None:
    """The project keeps the agent's own model key in `.env`; the model has the agent run
    a snippet that prints it repr-, JSON-, URL-, base64- and hex-encoded and returns it.
    The tool result the provider then receives says [redacted] and holds none of them."""
    root, _ = project
    (root / ".env").write_text(f"FAKE_API_KEY={KEY}\n")
    fake.add(reply.tool_call("verify", {"code": LEAKS}), reply.text("checked"))
    route = fake.route(protocol, keys=[KEY])  # type: ignore[arg-type]
    agent = build_agent(
        root,
        provider=Provider([route], retry=FAST_RETRY),
        env={},
        policy=Policy(mode="full-auto"),
    )
    events = run_turn(agent, "run the check")
    (finished,) = of_type(events, "tool_finished")
    assert finished.name == "verify" and not finished.is_error
    assert [v.ok for v in of_type(events, "verification")] == [True]
    assert len(fake.requests) == 2
    body = fake.requests[1].body
    sent = "\n".join(_strings(body))
    assert "live process: passed" in sent and "[redacted]" in sent, sent
    assert not leaked(sent) and not leaked(json.dumps(body))
    assert not leaked(agent.session.path.read_text())
