"""Sub-agents' limits hold while a tool runs: a child's timeout interrupts its shell command
(the command's processes killed), and `agent_result(wait)` returns when its wait is up even
while the child's command runs (tests/cli/test_run_subagents.py: a forked child and its
parent's SIGKILL).

The child's command is `sleep N; touch FILE`: a command that was killed never writes FILE,
so these tests tell "stopped" from "finished in the end" without timing the machine."""

from __future__ import annotations

from pathlib import Path

from agent_support import make_agent, of_type, run_turn

from liveforge.impls.subagents import close_subagents
from liveforge.testing import reply


def _slow_command(root: Path, seconds: int) -> tuple[dict, Path]:
    """An exec call sleeping `seconds` (a unique marker) and then writing a file."""
    done = root / f"finished-{seconds}"
    return {"command": f"sleep {seconds}.17; touch {done}", "timeout": 300}, done


def _result_call(events: list, name: str = "agent_result"):
    return [e for e in of_type(events, "tool_finished") if e.name == name][-1]


def test_a_child_timeout_stops_its_running_command(project, fake, marked):
    """A child with timeout=3 busy in a 40 s command is stopped in that command: the parent's
    agent_result(wait=30) comes back before its wait with "timed out", the command's
    process is gone and the command never finished."""
    root, _ = project
    command, done = _slow_command(root, 40)
    fake.add(reply.tool_call("exec", command), reply.text("never reached"), model="child")
    fake.add(
        reply.tool_call("spawn_agent", {"task": "run it", "model": "child", "timeout": 3}),
        reply.tool_call("agent_result", {"agent_id": "a.1", "wait": 30}),
        reply.text("the child timed out"),
    )
    agent = make_agent(root, fake)
    try:
        events = run_turn(agent, "delegate")
        waited = _result_call(events)
        assert "timed out" in waited.summary, waited.summary
        assert waited.duration < 30, "agent_result waited past the child's timeout"
        assert marked("40.17") == set() and not done.exists()
        assert events[-1].reason == "answer"
    finally:
        close_subagents(agent)
        agent.runtime.close()
    assert not done.exists()


def test_agent_result_wait_returns_while_the_child_runs_a_long_command(project, fake, marked):
    """agent_result(wait=2) on a child in a 30 s command returns "running" while the command
    still runs; closing the parent stops the child and kills the command."""
    root, _ = project
    command, done = _slow_command(root, 30)
    fake.add(reply.tool_call("exec", command), reply.text("never reached"), model="child")
    fake.add(
        reply.tool_call("spawn_agent", {"task": "run it", "model": "child"}),
        reply.tool_call("agent_result", {"agent_id": "a.1", "wait": 2}),
        reply.text("still running"),
    )
    agent = make_agent(root, fake)
    try:
        events = run_turn(agent, "delegate")
        waited = _result_call(events)
        assert "running" in waited.summary and not done.exists(), waited.summary
        assert marked("30.17"), "the child's command should still run after the wait"
    finally:
        close_subagents(agent)
        agent.runtime.close()
    assert marked("30.17") == set() and not done.exists()
