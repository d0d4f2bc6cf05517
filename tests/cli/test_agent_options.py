"""`--profile` on `run` and `chat`, and `run -p` with a shell command outside the check
boundary, against the fake provider: what the model is offered, and what it is told."""

from __future__ import annotations

import json
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


def test_run_refuses_a_command_outside_the_boundary_even_with_yes(sample: Path):
    """`run -p --yes`: exec with boundary=false has nobody to approve it; it does not run,
    and the model is told how the user allows such commands."""
    command = f"touch {sample / 'ran'}"
    script = [
        reply.tool_call("exec", {"command": command, "boundary": False}),
        reply.text("That needs your approval."),
    ]
    with FakeProvider(script=script) as fake:
        result = run_cli("run", "-p", "touch it", "--yes", cwd=sample, **_env(fake))
        answered = fake.requests[1].body["messages"][-1]["content"][0]
    assert result.returncode == 4, result.stderr  # refused: the command did not run
    assert answered["is_error"] is True and not (sample / "ran").exists()
    text = json.dumps(answered["content"])
    assert "needs the user's approval in 'full-auto' mode" in text
    assert '\\"unbounded\\" to the `allow` list under [tool.liveforge.permissions]' in text


def test_run_lets_it_through_when_the_config_allows_unbounded(sample: Path):
    """With `allow = ["unbounded"]` in [tool.liveforge.permissions], `run -p --yes` runs the
    command outside the boundary."""
    with (sample / "pyproject.toml").open("a") as config:
        config.write('\n[tool.liveforge.permissions]\nallow = ["unbounded"]\n')
    script = [
        reply.tool_call("exec", {"command": f"touch {sample / 'ran'}", "boundary": False}),
        reply.text("Done."),
    ]
    with FakeProvider(script=script) as fake:
        result = run_cli("run", "-p", "touch it", "--yes", cwd=sample, **_env(fake))
        answered = fake.requests[1].body["messages"][-1]["content"][0]
    assert result.returncode == 0, result.stderr
    assert not answered.get("is_error") and (sample / "ran").exists()
