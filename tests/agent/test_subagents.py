"""Sub-agents in scripted sessions over the fake provider: two in parallel combined, the
depth limit, cancellation reaching the children, and transcripts linked both ways."""

from __future__ import annotations

import asyncio
import json
import os
import threading
from pathlib import Path

import pytest
from agent_support import collect, make_agent, of_type, run_turn

from liveforge.declarations.permissions import Policy, Rules
from liveforge.declarations.subagents import SubAgents
from liveforge.testing import reply


def _records(path: str | Path) -> list[dict]:
    return [json.loads(line) for line in Path(path).read_text().splitlines() if line.strip()]


def _agents(agent) -> SubAgents:
    found = agent.toolbox.services["subagents"]
    assert isinstance(found, SubAgents)
    return found


def _subagent_threads() -> list[threading.Thread]:
    return [t for t in threading.enumerate() if t.name.startswith("subagent-")]


def test_two_sub_agents_work_in_parallel_and_the_parent_combines_them(project, fake):
    """Both start at once, each answers on its own model, the parent reads both answers and
    the transcripts point at each other."""
    root, _ = project
    fake.add(
        reply.tool_call("spawn_agent", {"task": "count the modules", "model": "kid-a"}).tool_call(
            "spawn_agent", {"task": "count the tests", "model": "kid-b", "tools": "read"}
        ),
        reply.tool_call("agent_result", {"agent_id": "a.1"}).tool_call(
            "agent_result", {"agent_id": "a.2"}
        ),
        reply.text("Two modules and one test."),
    )
    fake.add(reply.text("There are two modules."), model="kid-a")
    fake.add(reply.text("There is one test."), model="kid-b")
    agent = make_agent(root, fake)
    events = run_turn(agent, "count modules and tests, in parallel")
    assert events[-1].reason == "answer"
    assert [(f.name, f.is_error) for f in of_type(events, "tool_finished")] == [
        ("spawn_agent", False),
        ("spawn_agent", False),
        ("agent_result", False),
        ("agent_result", False),
    ]
    results = [b["content"] for b in fake.requests[-1].body["messages"][-1]["content"]]
    assert "a.1 [done]" in results[0] and "There are two modules." in results[0]
    assert "a.2 [done]" in results[1] and "There is one test." in results[1]
    kid_b = next(r for r in fake.requests if r.body["model"] == "kid-b")
    assert {t["name"] for t in kid_b.body["tools"]} >= {"view_source", "verify"}
    assert not {"patch", "persist", "spawn_agent"} & {t["name"] for t in kid_b.body["tools"]}
    infos = {i.id: i for i in _agents(agent).list()}
    spawned = [r for r in _records(agent.session.path) if r.get("what") == "subagent"]
    assert [r["session_id"] for r in spawned] == [infos["a.1"].session_id, infos["a.2"].session_id]
    child = _records(infos["a.1"].transcript)
    assert any(r.get("parent_session") == agent.session.id for r in child)
    agent.runtime.close()


def test_a_sub_agent_past_the_depth_limit_is_refused_with_a_way_forward(project, fake):
    """With sub-agents one level deep, the child's own spawn_agent is a tool error telling
    it to do the work itself; it does, and the parent gets that answer."""
    root, _ = project
    fake.add(
        reply.tool_call("spawn_agent", {"task": "dig deeper", "model": "kid"}),
        reply.tool_call("agent_result", {"agent_id": "a.1"}),
        reply.text("done"),
    )
    fake.add(
        reply.tool_call("spawn_agent", {"task": "even deeper"}),
        reply.text("I did it myself."),
        model="kid",
    )
    agent = make_agent(root, fake)
    _agents(agent).max_depth = 1
    run_turn(agent, "go")
    kid = [r for r in fake.requests if r.body["model"] == "kid"]
    refusal = kid[-1].body["messages"][-1]["content"][0]
    assert refusal["is_error"] and "nest at most 1 levels" in refusal["content"]
    assert "do this part of the task yourself" in refusal["content"]
    assert _agents(agent).list()[0].answer == "I did it myself."
    agent.runtime.close()


def _fork_processes() -> list[str]:
    """Processes of this machine running a forked sub-agent (Linux /proc)."""
    found = []
    for cmdline in Path("/proc").glob("[0-9]*/cmdline"):
        try:
            text = cmdline.read_bytes().replace(b"\0", b" ").decode()
        except OSError:
            continue
        if "liveforge.subagent_process" in text and _ppid(cmdline.parent) == str(os.getpid()):
            found.append(text)
    return found


def _ppid(proc: Path) -> str:
    try:
        return (proc / "stat").read_text().rsplit(")", 1)[1].split()[1]
    except (OSError, IndexError):
        return ""


@pytest.mark.parametrize("fork", [False, True], ids=["thread", "forked"])
def test_cancelling_the_parent_cancels_its_children(project, fake, fork):
    """The parent waits on a slow child; cancelling the parent's turn cancels the child,
    whose thread (and process, when forked) ends and whose status says so."""
    root, _ = project
    fake.add(
        reply.tool_call("spawn_agent", {"task": "take your time", "model": "slow", "fork": fork}),
        reply.tool_call("agent_result", {"agent_id": "a.1", "wait": 60}),
    )
    fake.add(reply.text("word " * 400).chunked(2).slow(0.05), model="slow")
    agent = make_agent(root, fake)

    async def turn_and_cancel() -> list:
        task = asyncio.create_task(collect(agent, "start it and wait"))
        while not any(r.body.get("model") == "slow" for r in fake.requests):
            await asyncio.sleep(0.01)  # until the child's request reached the server
        agent.cancel()
        return await task

    events = asyncio.run(turn_and_cancel())
    assert events[-1].reason == "cancelled"
    info = _agents(agent).result("a.1", wait=30)  # joins the child's thread, cancels nothing
    assert info.status == "cancelled" and info.answer == ""
    assert _subagent_threads() == [] and _fork_processes() == []
    agent.runtime.close()


EXACT = (
    "def area(radius: float) -> float:\n"
    '    """Area of a circle."""\n'
    "    import math\n"
    "    return math.pi * radius * radius\n"
)


def test_a_forked_sub_agents_patch_reaches_the_parent_only_when_accepted(project, fake):
    """The fork patches its copy of the program; the parent's program and files are as they
    were until agent_accept applies the proposal, which the next turn shows as a patch."""
    root, pkg = project
    target = f"{pkg}.geometry.area"
    fake.add(
        reply.tool_call("spawn_agent", {"task": "make area exact", "model": "fork", "fork": True}),
        reply.tool_call("agent_result", {"agent_id": "a.1", "wait": 120}),
        reply.text("A fix is proposed."),
    )
    fake.add(
        reply.tool_call("patch", {"path": target, "source": EXACT}),
        reply.text("area() uses math.pi in my copy."),
        model="fork",
    )
    agent = make_agent(root, fake)
    events = run_turn(agent, "fork and fix area")
    report = fake.requests[-1].body["messages"][-1]["content"][0]["content"]
    assert "a.1 [done]" in report and "area() uses math.pi in my copy." in report
    assert f"changed modules (proposed; apply them with agent_accept): {pkg}.geometry" in report
    assert "3 * radius" in agent.runtime.source(target) and not of_type(events, "patch_applied")
    fake.add(reply.tool_call("agent_accept", {"agent_id": "a.1"}), reply.text("Applied."))
    events = run_turn(agent, "accept it")
    assert [f.is_error for f in of_type(events, "tool_finished")] == [False]
    assert "math.pi" in agent.runtime.source(target) and of_type(events, "patch_applied")
    assert "3 * radius" in (root / pkg / "geometry.py").read_text()
    agent.runtime.close()


def test_a_fork_that_answers_while_its_own_sub_agent_works_ends_that_turn_cleanly(project, fake):
    """A forked sub-agent spawns one of its own and answers without waiting for it: before
    the fork's process exits, that sub-agent is cancelled and its transcript records the
    turn's end, instead of its thread being cut off mid-request by the exit."""
    root, _ = project
    fake.add(
        reply.tool_call("spawn_agent", {"task": "look", "model": "fork", "fork": True}),
        reply.tool_call("agent_result", {"agent_id": "a.1", "wait": 120}),
        reply.text("Done."),
    )
    fake.add(
        reply.tool_call("spawn_agent", {"task": "take your time", "model": "slow"}),
        reply.text("Left it working."),
        model="fork",
    )
    fake.add(reply.text("word " * 400).chunked(2).slow(0.05), model="slow")
    policy = Policy(mode="full-auto", rules=Rules(allow=("spawn_agent",)))  # forks may spawn
    agent = make_agent(root, fake, policy=policy)
    try:
        run_turn(agent, "fork it")
        fork = _agents(agent).result("a.1")
    finally:
        agent.runtime.close()
    assert fork.status == "done" and fork.answer == "Left it working."
    spawned = [r for r in _records(fork.transcript) if r.get("what") == "subagent"]
    turns = [r for r in _records(spawned[0]["transcript"]) if r["t"] == "turn"]
    assert [(r["event"], r.get("reason")) for r in turns] == [
        ("started", None),
        ("ended", "cancelled"),
    ]
