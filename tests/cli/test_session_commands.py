"""`liveforge history` and `liveforge diff`: a session's changes read from its transcript,
without opening (or writing to) the session."""

from __future__ import annotations

import json
import os
from importlib import resources
from pathlib import Path

import jsonschema
from cli_support import FIX, run_cli

from liveforge.testing import FakeProvider, reply


def _session_with_a_patch(sample: Path) -> str:
    """A `run` session that patched pricing.cart.Line.subtotal in memory; its id."""
    script = [
        reply.tool_call("patch", {"path": "pricing.cart.Line.subtotal", "source": FIX}),
        reply.text("Patched in memory."),
    ]
    env = {"ANTHROPIC_API_KEY": "test-key", "LIVEFORGE_MODEL": "anthropic:test-model"}
    with FakeProvider(script=script) as fake:
        result = run_cli(
            "run",
            "-p",
            "fix it",
            "--json",
            "--mode",
            "auto-edit",
            cwd=sample,
            ANTHROPIC_BASE_URL=fake.base_url,
            **env,
        )
    assert result.returncode == 0, result.stderr
    return json.loads(result.stdout)["session_id"]


def test_history_and_diff_show_what_a_session_holds_in_memory(sample: Path):
    """history lists the session's change with its status; diff shows the module as the
    session left it against the file; the transcript is left byte for byte as it was."""
    session_id = _session_with_a_patch(sample)
    transcript = sample / ".liveforge" / "sessions" / f"{session_id}.jsonl"
    before = transcript.read_bytes()
    history = run_cli("history", "--json", cwd=sample)
    schema = json.loads((resources.files("liveforge.cli") / "schema.json").read_text())
    jsonschema.validate(json.loads(history.stdout), schema)
    changes = json.loads(history.stdout)["changes"]
    assert [(c["change_id"], c["target"], c["live"]) for c in changes] == [
        ("c1", "pricing.cart.Line.subtotal", True)
    ]
    diff = run_cli("diff", "--resume", session_id, cwd=sample)
    assert diff.returncode == 0, diff.stderr
    assert diff.stdout.startswith("--- a/pricing/cart.py\n+++ b/pricing/cart.py\n")
    assert "+        if self.quantity >= BULK_QUANTITY:" in diff.stdout
    data = json.loads(run_cli("diff", "--json", cwd=sample).stdout)
    jsonschema.validate(data, schema)
    assert data["modules"] == ["pricing.cart"] and data["notes"] == []
    assert transcript.read_bytes() == before
    missing = run_cli("diff", "--resume", "nope", cwd=sample)
    assert missing.returncode == 3 and f"recent: {session_id}" in missing.stderr


def test_history_without_any_session_says_none_is_there_yet(sample: Path):
    """`liveforge history` and `diff` in a project no chat or run has used: exit 3, saying
    there is no session yet and what starts one (there is nothing to resume)."""
    for command in ("history", "diff"):
        result = run_cli(command, cwd=sample)
        assert result.returncode == 3
        assert "no sessions in" in result.stderr and "yet: a chat, a `run`" in result.stderr
        assert "to resume" not in result.stderr


def test_the_latest_session_is_the_user_s_not_a_sub_agent_s_cancelled_last(sample: Path):
    """A run whose sub-agent is still working when it answers cancels it, so the sub-agent's
    transcript is written last; `liveforge history` (the latest session) still reads the
    run's own session, not the sub-agent's."""
    with FakeProvider() as fake:
        fake.add(
            reply.tool_call("spawn_agent", {"task": "look", "model": "kid", "tools": "read"}),
            reply.text("Answered without waiting."),
        )
        fake.add(reply.text("late").slow(5), model="kid")
        env = {
            "OPENAI_API_KEY": "sk-test",
            "OPENAI_BASE_URL": fake.openai_base_url,
            "LIVEFORGE_MODEL": "openai:main",
        }
        ran = run_cli("run", "-p", "spawn and answer", "--yes", "--json", cwd=sample, **env)
    assert ran.returncode == 0, ran.stderr
    own = json.loads(ran.stdout)["session_id"]
    transcripts = list((sample / ".liveforge" / "sessions").glob("*.jsonl"))
    [sub] = [p for p in transcripts if p.stem != own]
    own_time = (sample / ".liveforge" / "sessions" / f"{own}.jsonl").stat().st_mtime
    later = own_time + 5  # the sub-agent's cancelled turn written last, whatever the timing
    os.utime(sub, (later, later))
    shown = run_cli("history", "--json", cwd=sample)
    assert json.loads(shown.stdout)["session_id"] == own
