"""`liveforge run -p` when the agent breaks its own loop: the JSON report still comes, the
self-patch is rolled back, and `--resume` starts from the last state that worked."""

from __future__ import annotations

import json
from pathlib import Path

from cli_support import run_cli

from liveforge.testing import FakeProvider, reply

ENDING = "liveforge.impls.agent_turn.ending"
BROKEN = "def ending(agent, turn, outcome):\n    raise RuntimeError('broken on purpose')\n"
CRASHING = "def ending(agent, turn, outcome):\n    import os\n    os._exit(70)\n"


def _run(sample: Path, fake: FakeProvider, *args: str) -> tuple[int, dict, str]:
    env = {
        "ANTHROPIC_BASE_URL": fake.base_url,
        "ANTHROPIC_API_KEY": "test-key",
        "LIVEFORGE_MODEL": "anthropic:test-model",
    }
    # memory patches run without a question in auto-edit; `run` has nobody to ask
    result = run_cli("run", *args, "--mode", "auto-edit", "--json", cwd=sample, **env)
    data = json.loads(result.stdout) if result.stdout.strip() else {}
    return result.returncode, data, result.stderr


def test_a_self_patch_that_breaks_the_turn_is_reported_rolled_back_and_resumable(sample: Path):
    """The rollback is a step: the turn goes on, the model is asked again in it (told what
    was rolled back) and answers (exit 0); --json names the rollback; the resumed session
    does not bring the patch back and answers."""
    script = [
        reply.tool_call("patch", {"path": ENDING, "source": BROKEN}),
        reply.text("answered after the rollback"),
        reply.text("resumed fine"),
    ]
    with FakeProvider(script=script) as fake:
        code, data, err = _run(sample, fake, "-p", "break your loop")
        assert code == 0, err
        assert data["ok"] is True and data["reason"] == "answer" and data["fault"] is None
        assert data["answer"] == "answered after the rollback"
        assert [r for r in data["rolled_back"] if "broken on purpose" in r["reason"]]
        assert "rolled back automatically" in json.dumps(fake.requests[1].body["messages"])
        code, again, err = _run(sample, fake, "--resume", "-p", "are you ok?")
    assert code == 0, err
    assert again["ok"] is True and again["answer"] == "resumed fine"
    assert again["session_id"] == data["session_id"] and again["restored"] == []


def test_after_a_crash_in_a_self_patch_resume_leaves_it_out(sample: Path):
    """A self-patch that kills the process mid-turn is on probation in the transcript:
    the resumed session reports it as not re-applied and works."""
    script = [
        reply.tool_call("patch", {"path": ENDING, "source": CRASHING}),
        reply.text("after the crash"),
    ]
    with FakeProvider(script=script) as fake:
        code, _, _ = _run(sample, fake, "-p", "crash yourself")
        assert code == 70
        code, data, err = _run(sample, fake, "--resume", "-p", "still there?")
    assert code == 0, err
    assert data["answer"] == "after the crash"
    assert [line for line in data["restored"] if f"{ENDING}: not re-applied" in line]


def test_a_fault_no_self_patch_explains_still_gives_the_json_report(sample: Path):
    """With the safety net given nothing to watch, the loop's fault propagates: exit 3, and
    --json still reports it (under `fault`) with the session it happened in."""
    (sample / "liveforge.toml").write_text("[agent]\nself_packages = []\n")
    script = [reply.tool_call("patch", {"path": ENDING, "source": BROKEN})]
    with FakeProvider(script=script) as fake:
        code, data, err = _run(sample, fake, "-p", "break your loop")
    assert code == 3, err
    assert data["ok"] is False and data["fault"]["type"] == "RuntimeError"
    assert "broken on purpose" in data["fault"]["message"] and data["session_id"]
    assert "Traceback" in err
