"""What tools sub-agents get, in scripted sessions over the fake provider: the session's
tool profile and deny list, and its permission rules, reach in-process and forked
sub-agents, and their own sub-agents; none gets a tool its parent lacks."""

from __future__ import annotations

import json

from agent_support import make_agent, run_turn

from liveforge.declarations.permissions import Policy, Rules
from liveforge.declarations.tool_settings import ToolSettings
from liveforge.testing import reply


def _offered(fake, model: str) -> set[str]:
    """The tool names of the first request made with `model`, as the server received it."""
    first = next(r for r in fake.requests if r.body["model"] == model)
    return {tool["name"] for tool in first.body["tools"]}


def _spawn_and_wait(model: str, *, fork: bool = False, agent_id: str = "a.1") -> list:
    return [
        reply.tool_call("spawn_agent", {"task": "look", "model": model, "fork": fork}),
        reply.tool_call("agent_result", {"agent_id": agent_id, "wait": 120}),
        reply.text("Done."),
    ]


def test_an_in_process_sub_agent_gets_the_sessions_profile_and_deny_list(project, fake):
    """A session on the coding profile (plus the agent tools) with exec denied: its
    sub-agent is offered exactly the parent's tools, so no exec and no patch."""
    root, _ = project
    settings = ToolSettings(profile="coding", allow=["group:agents"], deny=["exec"])
    fake.add(*_spawn_and_wait("kid"))
    fake.add(reply.text("Looked."), model="kid")
    agent = make_agent(root, fake, tool_settings=settings)
    try:
        run_turn(agent, "hand it over")
    finally:
        agent.runtime.close()
    parent, kid = _offered(fake, fake.requests[0].body["model"]), _offered(fake, "kid")
    assert kid == parent and "spawn_agent" in kid
    assert not {"exec", "patch", "persist"} & kid


def test_a_forked_sub_agent_gets_the_sessions_deny_list_and_permission_rules(project, fake):
    """A session that denies the patch tool and whose rules deny run_tests: its forked
    sub-agent is not offered patch, and its run_tests call is refused by the deny rule."""
    root, _ = project
    settings = ToolSettings(deny=["patch", "memory_write"])
    policy = Policy(mode="full-auto", rules=Rules(deny=("run_tests",)))
    fake.add(*_spawn_and_wait("fork", fork=True))
    fake.add(reply.tool_call("run_tests", {}), reply.text("Not allowed."), model="fork")
    agent = make_agent(root, fake, tool_settings=settings, policy=policy)
    try:
        run_turn(agent, "fork it")
    finally:
        agent.runtime.close()
    offered = _offered(fake, "fork")
    assert "view_source" in offered and "verify" in offered
    assert not {"patch", "memory_write", "exec", "write_file"} & offered
    fork = [r for r in fake.requests if r.body["model"] == "fork"]
    answered = fork[-1].body["messages"][-1]["content"][0]
    assert answered["is_error"] and "run_tests (check) is refused by a deny rule" in json.dumps(
        answered["content"]
    )


def test_a_forked_sub_agents_own_sub_agent_gets_no_tool_the_fork_lacks(project, fake):
    """A fork allowed by the rules to spawn: its in-process sub-agent is offered the fork's
    tools only, so neither the file-writing and shell tools nor a tool the session denied."""
    root, _ = project
    settings = ToolSettings(deny=["memory_write"])
    policy = Policy(mode="full-auto", rules=Rules(allow=("spawn_agent",)))
    fake.add(*_spawn_and_wait("fork", fork=True))
    fake.add(*_spawn_and_wait("grandchild", agent_id="a.1.1"), model="fork")
    fake.add(reply.text("Looked."), model="grandchild")
    agent = make_agent(root, fake, tool_settings=settings, policy=policy)
    try:
        run_turn(agent, "fork it")
    finally:
        agent.runtime.close()
    fork, grandchild = _offered(fake, "fork"), _offered(fake, "grandchild")
    assert grandchild == fork and "view_source" in grandchild
    assert not {"exec", "process", "write_file", "persist", "memory_write"} & grandchild
