"""Sub-agents: hand a task to another agent, steer it, read its answer.

Each sub-agent has its own transcript and works on the same live program; see
`liveforge.declarations.subagents` for its limits (depth, concurrency, time).
"""

from __future__ import annotations

from typing import Literal

from liveforge.declarations.permissions import effect
from liveforge.declarations.subagents import SubAgentError, SubAgentInfo, SubAgents
from liveforge.tools._context import service

__all__ = ["agent_accept", "agent_result", "agent_send", "agents_list", "spawn_agent"]


def _agents() -> SubAgents:
    found = service("subagents")
    if not isinstance(found, SubAgents):
        raise SubAgentError("sub-agents are available to agents only, not in this front end.")
    return found


def _line(info: SubAgentInfo) -> str:
    waiting = f", {info.pending} message(s) queued" if info.pending else ""
    return (
        f"{info.id} [{info.status}] depth {info.depth}, {info.profile} tools, "
        f"{info.turns} turn(s), {info.tokens} tokens{waiting}: {info.task[:80]}"
    )


def _report(info: SubAgentInfo) -> str:
    lines = [_line(info), f"transcript: {info.transcript}"]
    if info.error:
        lines.append(f"error: {info.error}")
    if info.proposal:
        verb = "applied here" if info.accepted else "proposed; apply them with agent_accept"
        lines.append(f"changed modules ({verb}): {', '.join(info.proposal)}")
    if info.answer:
        lines += ["answer:", info.answer]
    elif info.status == "running":
        lines.append("no answer yet: call agent_result again with wait, or do other work first")
    return "\n".join(lines)


@effect("execute")
def spawn_agent(
    task: str,
    tools: Literal["full", "read"] = "full",
    model: str = "",
    timeout: float = 600.0,
    fork: bool = False,
) -> str:
    """Start a sub-agent on a task in the background; returns its id at once.

    Spawn several for independent parts of a job, then collect each with agent_result.
    With fork, it works on a copy of the program: its patches reach you only through
    agent_accept.

    Args:
        task: the whole task, self-contained: the sub-agent sees nothing of this conversation
        tools: "full" (your tools) or "read" (only tools that look or run sandboxed checks)
        model: a model name of your provider to use instead of yours; empty for yours
        timeout: seconds before the sub-agent is stopped
        fork: run it in its own process on a copy of the live program (no file writes)
    """
    agent_id = _agents().spawn(task, profile=tools, model=model or None, timeout=timeout, fork=fork)
    return f"started sub-agent {agent_id}; collect its answer with agent_result"


@effect("read")
def agents_list() -> str:
    """Your sub-agents: id, status, depth, tools, turns, tokens and task."""
    infos = _agents().list()
    return "\n".join(_line(info) for info in infos) or "no sub-agents yet"


@effect("execute")
def agent_send(agent_id: str, message: str) -> str:
    """Steer a sub-agent: `message` becomes its next turn, right after its current one.

    Args:
        agent_id: the id spawn_agent returned
        message: what to tell it (more detail, a correction, a follow-up task)
    """
    return _line(_agents().send(agent_id, message))


@effect("read")
def agent_result(agent_id: str, wait: float = 120.0) -> str:
    """A sub-agent's status and answer, waiting up to `wait` seconds for it to finish.

    Args:
        agent_id: the id spawn_agent returned
        wait: seconds to wait for it to finish (0: look now)
    """
    return _report(_agents().result(agent_id, wait=wait))


@effect("memory")
def agent_accept(agent_id: str) -> str:
    """Apply a finished forked sub-agent's changes to this program, all or none.

    Args:
        agent_id: the id spawn_agent returned (a forked sub-agent)
    """
    ids = _agents().accept(agent_id)
    return f"applied {len(ids)} change(s) from {agent_id}: {', '.join(ids)}; verify them"
