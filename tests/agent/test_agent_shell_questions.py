"""Scripted sessions in `ask` and `read-only` mode around the shell tools: what is asked
(with which preview), what is not, what is refused, and what the transcript keeps."""

from __future__ import annotations

import json
import sys

import pytest
from agent_support import make_agent, of_type, run_turn

from liveforge.declarations.permissions import Policy
from liveforge.testing import reply

SERVER = f"{sys.executable} -c \"import time; print('up', flush=True); time.sleep(60)\""
PROTOCOLS = ["anthropic", "openai"]


@pytest.fixture
def protocol() -> str:
    """The fake provider's wire protocol; tests that hold for both parametrize it."""
    return "anthropic"


@pytest.fixture
def asked_agent(project, fake, protocol):
    """An agent in ask mode whose approver says yes and keeps every request."""
    root, _ = project
    agent = make_agent(root, fake, protocol=protocol, policy=Policy(mode="ask"))
    asked: list = []

    def approve(request):
        asked.append(request)
        return True

    agent.toolbox.approver = approve
    yield agent, asked
    agent.runtime.close()


def test_process_start_and_kill_are_asked_poll_read_and_list_are_not(asked_agent, fake):
    """In ask mode only the process actions that change something ask; poll, read and list
    run at once (they are read effects) and all of it reaches the model."""
    agent, asked = asked_agent
    fake.add(
        reply.tool_call("process", {"action": "start", "command": SERVER}),
        reply.tool_call("process", {"action": "poll", "process_id": "p1"}),
        reply.tool_call("process", {"action": "read", "process_id": "p1"}),
        reply.tool_call("process", {"action": "list"}),
        reply.tool_call("process", {"action": "kill", "process_id": "p1"}),
        reply.text("Started, looked at, stopped."),
    )
    events = run_turn(agent, "start the server, look at it, stop it")
    assert not [f for f in of_type(events, "tool_finished") if f.is_error]
    assert [(r.tool, r.effect, r.arguments["action"]) for r in asked] == [
        ("process", "shell", "start"),
        ("process", "shell", "kill"),
    ]
    assert SERVER in asked[0].preview
    sent = json.dumps(fake.requests[-1].body)
    assert "p1 pid" in sent and "exited -15" in sent


NOTES = "# Notes\nspeed: slow\nsize: small\n"
PATCH = """\
--- a/notes.md
+++ b/notes.md
@@ -1,3 +1,3 @@
 # Notes
 speed: slow
-size: small
+size: large
"""


def _transcript_questions(agent) -> list[dict]:
    records = [json.loads(line) for line in agent.session.path.read_text().splitlines()]
    return [r for r in records if r.get("t") == "note" and r.get("what") == "approval"]


@pytest.mark.parametrize("protocol", PROTOCOLS)
def test_questions_show_the_diff_or_the_command_and_the_transcript_keeps_them(
    asked_agent, fake, project
):
    """Each question shows what will happen — the unified diff of a file write, the exact
    command with its folder, boundary and network — and the transcript records the same
    text with the answer; a declined command does not run."""
    root, _ = project
    (root / "notes.md").write_text(NOTES)
    (root / "sub").mkdir()
    agent, asked = asked_agent
    answers = iter([True, True, True, True, False])
    keep = agent.toolbox.approver

    def approve(request):
        keep(request)
        return next(answers)

    agent.toolbox.approver = approve
    command = f'echo "it\'s $HOME" > {root}/ran.txt'
    fake.add(
        reply.tool_call(
            "edit_file", {"path": "notes.md", "old_string": "slow", "new_string": "fast"}
        ),
        reply.tool_call("write_file", {"path": "new.txt", "content": "one\n"}),
        reply.tool_call("apply_patch", {"patch": PATCH.replace("slow", "fast")}),
        reply.tool_call("exec", {"command": "ls", "cwd": "sub", "network": True}),
        reply.tool_call("exec", {"command": command, "boundary": False}),
        reply.text("Done what I was allowed to."),
    )
    run_turn(agent, "edit, write, patch, list, and write outside")
    edit, write, patch, listing, outside = (r.preview for r in asked)
    assert edit.startswith("--- a/notes.md\n+++ b/notes.md\n")
    assert "-speed: slow\n+speed: fast\n" in edit
    assert write.startswith("--- /dev/null\n+++ b/new.txt\n") and "+one" in write
    assert "-size: small\n+size: large" in patch
    assert listing.splitlines()[:3] == ["run in bash:", "ls", f"in: sub ({root / 'sub'})"]
    assert "inside the check boundary" in listing and "network on" in listing
    assert command in outside and "OUTSIDE the check boundary" in outside
    assert not (root / "ran.txt").exists()
    assert "the user declined exec" in json.dumps(fake.requests[-1].body)
    assert (root / "notes.md").read_text() == "# Notes\nspeed: fast\nsize: large\n"
    kept = _transcript_questions(agent)
    assert [(q["tool"], q["text"], q["answer"]) for q in kept] == [
        (r.tool, r.preview, "allowed" if i < 4 else "declined") for i, r in enumerate(asked)
    ]


def test_an_edit_that_will_not_apply_says_so_in_the_question(asked_agent, fake, project):
    """The person is told the edit does not apply (and that nothing will be written)."""
    root, _ = project
    (root / "notes.md").write_text(NOTES)
    agent, asked = asked_agent
    fake.add(
        reply.tool_call(
            "edit_file", {"path": "notes.md", "old_string": "missing", "new_string": "x"}
        ),
        reply.text("It did not apply."),
    )
    run_turn(agent, "edit")
    (request,) = asked
    assert request.preview.startswith("edit_file will not apply, and writes nothing if allowed")
    assert "old_string was not found in notes.md" in request.preview


@pytest.mark.parametrize("protocol", PROTOCOLS)
def test_read_only_refuses_the_command_and_nothing_runs(project, fake, protocol):
    """In read-only mode exec is refused without a question; the model reads why."""
    root, _ = project
    agent = make_agent(root, fake, protocol=protocol, policy=Policy(mode="read-only"))
    try:
        fake.add(
            reply.tool_call("exec", {"command": f"touch {root / 'ran'}"}),
            reply.text("I may not run commands here."),
        )
        events = run_turn(agent, "touch a file")
    finally:
        agent.runtime.close()
    (finished,) = of_type(events, "tool_finished")
    assert finished.is_error and "refused by 'read-only' mode" in finished.summary
    assert "exec (shell) is refused by 'read-only' mode" in json.dumps(fake.requests[-1].body)
    assert not (root / "ran").exists()
