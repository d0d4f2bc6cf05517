"""`--profile` on `run` and `chat` against the fake provider: what the model is offered."""

from __future__ import annotations

from pathlib import Path

import pexpect
from cli_support import run_cli
from test_chat import PROMPT, _say, _shown, _spawn

from liveforge.testing import FakeProvider, reply

MINIMAL = {"read_file", "inspect_module", "view_source", "find", "references", "complete"}


def _env(fake: FakeProvider) -> dict[str, str]:
    return {
        "ANTHROPIC_BASE_URL": fake.base_url,
        "ANTHROPIC_API_KEY": "test-key",
        "LIVEFORGE_MODEL": "anthropic:test-model",
    }


def _offered(fake: FakeProvider) -> set[str]:
    """The tool names the first model request carried, as the server received them."""
    return {tool["name"] for tool in fake.requests[0].body["tools"]}


def test_run_with_profile_minimal_offers_only_the_minimal_tools(sample: Path):
    """`run -p ... --profile minimal`: the request the provider receives lists exactly the
    minimal profile's tools, though the project configures none."""
    with FakeProvider(script=[reply.text("Looked.")]) as fake:
        result = run_cli(
            "run", "-p", "look around", "--profile", "minimal", cwd=sample, **_env(fake)
        )
        offered = _offered(fake)
    assert result.returncode == 0, result.stderr
    assert offered == MINIMAL


def test_chat_with_profile_coding_offers_the_coding_tools(sample: Path):
    """`chat --profile coding`: files, shell and memory tools are offered, the live-patching
    ones (patch, persist, execute) are not."""
    with FakeProvider(script=[reply.text("Hello.")]) as fake:
        child = _spawn(sample, fake, "--profile", "coding")
        _say(child, "hi")
        _shown(child, "Hello.")
        child.expect_exact(PROMPT)
        child.sendcontrol("d")
        child.expect(pexpect.EOF)
        child.close()
        offered = _offered(fake)
    assert {"read_file", "edit_file", "exec", "process", "memory_search", "verify"} <= offered
    assert not {"patch", "persist", "execute", "spawn_agent"} & offered
