"""Scripted sessions around shell commands outside the check boundary (`boundary=false`):
asked about in every mode, full-auto included; refused in read-only and with nobody to ask;
run unasked only when the configuration names "unbounded" in its allow list."""

from __future__ import annotations

import json

import pytest
from agent_support import make_agent, of_type, run_turn

from liveforge.config import load_config
from liveforge.declarations.permissions import Policy
from liveforge.testing import reply


@pytest.fixture
def agent_in(project, fake):
    """`agent_in(policy, answers)`: an agent whose approver answers from `answers` (None:
    no approver) and keeps every request in `agent.asked`."""
    root, _ = project
    agents = []

    def make(policy: Policy, answers: list[bool] | None = None):
        agent = make_agent(root, fake, policy=policy)
        agent.asked = []
        if answers is not None:
            replies = iter(answers)

            def approve(request):
                agent.asked.append(request)
                return next(replies)

            agent.toolbox.approver = approve
        agents.append(agent)
        return agent

    yield make
    for agent in agents:
        agent.runtime.close()


def _results(fake) -> str:
    return json.dumps(fake.requests[-1].body)


def test_full_auto_asks_before_a_command_outside_the_boundary_and_not_inside(
    project, fake, agent_in
):
    """In full-auto a command inside the boundary runs unasked; exec and a process start
    outside it are asked about (effect unbounded, the preview says OUTSIDE); a yes runs the
    command, a no starts nothing."""
    root, _ = project
    agent = agent_in(Policy(mode="full-auto"), answers=[True, False])
    fake.add(
        reply.tool_call("exec", {"command": "echo inside"}),
        reply.tool_call("exec", {"command": f"touch {root / 'ran'}", "boundary": False}),
        reply.tool_call(
            "process",
            {"action": "start", "command": f"touch {root / 'started'}", "boundary": False},
        ),
        reply.text("One ran outside, one was declined."),
    )
    events = run_turn(agent, "run inside, then outside twice")
    assert [(r.tool, r.effect, r.arguments.get("action")) for r in agent.asked] == [
        ("exec", "unbounded", None),
        ("process", "unbounded", "start"),
    ]
    assert all("OUTSIDE the check boundary" in r.preview for r in agent.asked)
    assert [f.is_error for f in of_type(events, "tool_finished")] == [False, False, True]
    assert (root / "ran").exists() and not (root / "started").exists()
    assert "the user declined process" in _results(fake)


def test_with_nobody_to_ask_full_auto_refuses_it_and_says_how_to_allow_it(project, fake, agent_in):
    """Full-auto without an approver (a non-interactive run): the command outside the
    boundary does not run, and the model reads how the user can allow such commands."""
    root, _ = project
    agent = agent_in(Policy(mode="full-auto"))
    fake.add(
        reply.tool_call("exec", {"command": f"touch {root / 'ran'}", "boundary": False}),
        reply.text("That needs your approval."),
    )
    events = run_turn(agent, "touch a file outside")
    (finished,) = of_type(events, "tool_finished")
    assert finished.is_error and not (root / "ran").exists()
    sent = _results(fake)
    assert "exec outside the check boundary needs the user's approval" in sent
    assert '\\"unbounded\\" to the `allow` list under [tool.liveforge.permissions]' in sent


def test_ask_mode_asks_for_it_even_when_the_tool_is_allowed(project, fake, agent_in):
    """`allow = ["exec"]` lets commands inside the boundary run unasked in ask mode; one
    outside it is still asked about."""
    root, _ = project
    (root / "pyproject.toml").write_text('[tool.liveforge.permissions]\nallow = ["exec"]\n')
    agent = agent_in(load_config(root, {}).permissions.policy("ask"), answers=[True])
    fake.add(
        reply.tool_call("exec", {"command": "echo inside"}),
        reply.tool_call("exec", {"command": f"touch {root / 'ran'}", "boundary": False}),
        reply.text("Both ran."),
    )
    events = run_turn(agent, "run inside, then outside")
    assert [(r.tool, r.effect) for r in agent.asked] == [("exec", "unbounded")]
    assert not [f for f in of_type(events, "tool_finished") if f.is_error]
    assert (root / "ran").exists()


def test_the_unbounded_rule_in_the_config_lets_it_run_unasked(project, fake, agent_in):
    """`allow = ["unbounded"]` under [tool.liveforge.permissions]: exec and a process start
    outside the boundary run in full-auto without a question."""
    root, _ = project
    (root / "pyproject.toml").write_text(
        '[tool.liveforge.permissions]\nmode = "full-auto"\nallow = ["unbounded"]\n'
    )
    agent = agent_in(load_config(root, {}).permissions.policy(), answers=[])
    # the exec waits for the started process's file, so the kill never comes before it ran
    waits = f"while [ ! -e {root / 'started'} ]; do sleep 0.05; done; touch {root / 'ran'}"
    fake.add(
        reply.tool_call(
            "process",
            {"action": "start", "command": f"touch {root / 'started'}", "boundary": False},
        ),
        reply.tool_call("exec", {"command": waits, "boundary": False, "timeout": 60}),
        reply.tool_call("process", {"action": "kill", "process_id": "p1"}),
        reply.text("Both ran."),
    )
    events = run_turn(agent, "run outside twice")
    assert agent.asked == []
    assert not [f for f in of_type(events, "tool_finished") if f.is_error]
    assert (root / "ran").exists() and (root / "started").exists()


def test_read_only_refuses_exec_and_process_start_outside_the_boundary(project, fake, agent_in):
    """Read-only refuses both without a question; nothing runs and the model reads why."""
    root, _ = project
    agent = agent_in(Policy(mode="read-only"), answers=[])
    fake.add(
        reply.tool_call("exec", {"command": f"touch {root / 'ran'}", "boundary": False}),
        reply.tool_call(
            "process",
            {"action": "start", "command": f"touch {root / 'started'}", "boundary": False},
        ),
        reply.text("I may not run commands here."),
    )
    events = run_turn(agent, "run outside twice")
    finished = of_type(events, "tool_finished")
    assert [f.is_error for f in finished] == [True, True] and agent.asked == []
    for f in finished:
        assert "outside the check boundary is refused by 'read-only' mode" in f.summary
    assert not (root / "ran").exists() and not (root / "started").exists()
