"""`liveforge run -p`: one agent task against the fake provider; JSON report and exit codes."""

from __future__ import annotations

import json
from importlib import resources
from pathlib import Path

import jsonschema
from cli_support import FIX, run_cli

from liveforge.testing import FakeProvider, fault, reply

SCHEMA = json.loads((resources.files("liveforge.cli") / "schema.json").read_text())


def _env(fake: FakeProvider) -> dict[str, str]:
    return {
        "ANTHROPIC_BASE_URL": fake.base_url,
        "ANTHROPIC_API_KEY": "test-key",
        "LIVEFORGE_MODEL": "anthropic:test-model",
    }


def test_run_answers_with_patch_and_exit_0(sample: Path):
    """A task that patches and answers exits 0; --json lists the answer and the change."""
    script = [
        reply.tool_call("patch", {"path": "pricing.cart.Line.subtotal", "source": FIX}),
        reply.text("Fixed the boundary in memory."),
    ]
    with FakeProvider(script=script) as fake:
        result = run_cli("run", "-p", "fix the bulk discount", "--json", cwd=sample, **_env(fake))
    assert result.returncode == 0, result.stderr
    data = json.loads(result.stdout)  # nothing but the one object on stdout
    jsonschema.validate(data, SCHEMA)
    assert data["ok"] is True and data["reason"] == "answer"
    assert data["answer"] == "Fixed the boundary in memory."
    assert [p["target"] for p in data["patches"]] == ["pricing.cart.Line.subtotal"]
    assert data["persisted"] == [] and "+        if self.quantity >= BULK_QUANTITY:" in data["diff"]
    assert data["cost_usd"] is None and data["usage"]["output_tokens"] > 0
    assert "tokens:" in result.stderr
    assert Path(data["transcript"]).is_file()
    assert "quantity > BULK" in (sample / "pricing" / "cart.py").read_text()


def test_persist_without_yes_is_declined_and_the_file_kept(sample: Path):
    """Without --yes the persist call is declined; the model is told and the file is unchanged."""
    script = [
        reply.tool_call("patch", {"path": "pricing.cart.Line.subtotal", "source": FIX}),
        reply.tool_call("persist", {}),
        reply.text("I could not save it."),
    ]
    with FakeProvider(script=script) as fake:
        result = run_cli("run", "-p", "fix and save", "--json", cwd=sample, **_env(fake))
        declined = fake.requests[2].body["messages"][-1]["content"][0]
    assert result.returncode == 0
    assert declined["is_error"] is True and "declined" in str(declined["content"])
    assert "quantity > BULK" in (sample / "pricing" / "cart.py").read_text()


def test_persist_through_execute_without_yes_is_declined_too(sample: Path):
    """`rt.persist()` inside execute asks for approval like the persist tool does."""
    code = "rt.persist(force=True)"
    script = [
        reply.tool_call("patch", {"path": "pricing.cart.Line.subtotal", "source": FIX}),
        reply.tool_call("execute", {"code": code}),
        reply.text("Not saved."),
    ]
    with FakeProvider(script=script) as fake:
        result = run_cli("run", "-p", "fix and save", "--json", cwd=sample, **_env(fake))
        answered = fake.requests[2].body["messages"][-1]["content"][0]
    assert result.returncode == 0
    assert "declined" in str(answered["content"])
    assert "quantity > BULK" in (sample / "pricing" / "cart.py").read_text()


def test_provider_failure_ends_with_exit_1(sample: Path):
    """An authentication failure ends the turn with an error: exit 1, reason error."""
    with FakeProvider(script=[fault.auth()]) as fake:
        result = run_cli("run", "-p", "hello", "--json", cwd=sample, **_env(fake))
    data = json.loads(result.stdout)
    jsonschema.validate(data, SCHEMA)
    assert result.returncode == 1 and data["ok"] is False and data["reason"] == "error"
    assert data["errors"] and data["error"]["exit_code"] == 1
    assert data["error"]["message"] == "; ".join(data["errors"])


def test_text_answer_on_stdout_and_the_token_line_on_stderr(sample: Path):
    """Without --json, stdout carries the answer; the token count goes to stderr."""
    with FakeProvider(script=[reply.text("All good.")]) as fake:
        result = run_cli("run", "-p", "hello", cwd=sample, **_env(fake))
    assert result.returncode == 0, result.stderr
    assert "All good." in result.stdout and "tokens:" not in result.stdout
    assert "tokens:" in result.stderr


def test_no_provider_configured_names_what_to_set(sample: Path):
    """With no key in the environment: exit 2, naming ANTHROPIC_API_KEY and `liveforge demo`."""
    result = run_cli("run", "-p", "hello", cwd=sample)
    assert result.returncode == 2
    assert "ANTHROPIC_API_KEY" in result.stderr and "liveforge demo" in result.stderr
