"""build_agent wires an agent from the project's configuration and environment."""

from __future__ import annotations

from agent_support import run_turn

from liveforge.agent_setup import build_agent, known_secrets
from liveforge.testing import reply

KEY = "sk-ant-configured-key-987654321"


def test_agent_from_configuration_reaches_the_configured_model(project, fake):
    """Without an explicit provider, the configured model and the environment's key and
    base URL are used; the key is scrubbed from the transcript."""
    root, _ = project
    (root / "liveforge.toml").write_text('model = "anthropic:claude-test"\nmax_tokens = 1234\n')
    fake.add(reply.text(f"the key was {KEY}"))
    env = {"ANTHROPIC_API_KEY": KEY, "ANTHROPIC_BASE_URL": fake.base_url}
    agent = build_agent(root, env=env)
    try:
        assert run_turn(agent, "hello")[-1].reason == "answer"
    finally:
        agent.runtime.close()
    body = fake.requests[0].body
    assert body["model"] == "claude-test" and body["max_tokens"] == 1234
    assert fake.requests[0].key_suffix == KEY[-4:]
    assert KEY not in agent.session.path.read_text()


def test_known_secrets_cover_route_keys_and_key_like_variables():
    """Values of *_API_KEY(S) and *_TOKEN variables are secrets; other variables are not."""
    env = {
        "OPENAI_API_KEYS": "sk-one-aaaaaaaa, sk-two-bbbbbbbb",
        "GH_TOKEN": "ghp_cccccccc",
        "HOME": "/home/someone",
    }
    assert sorted(known_secrets(None, env)) == [
        "ghp_cccccccc",
        "sk-one-aaaaaaaa",
        "sk-two-bbbbbbbb",
    ]
