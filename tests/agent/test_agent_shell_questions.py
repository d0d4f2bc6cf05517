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


@pytest.fixture
def asked_agent(project, fake):
    """An agent in ask mode whose approver says yes and keeps every request."""
    root, _ = project
    agent = make_agent(root, fake, policy=Policy(mode="ask"))
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
