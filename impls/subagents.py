"""`SubAgents` bodies: each sub-agent runs its turns on a thread with its own event loop.

A child is built in the caller's thread (so its session exists, and is linked, before
`spawn` returns), then a thread drives its turns: the task, then every message `send`
queued, until none is left. Cancellation goes through `Agent.cancel` (thread-safe: it fires
the turn's CancelToken), so a cancelled child ends its turn the normal way, its open tool
calls answered, its transcript closed. The timeout is a timer that cancels the same way.
"""

from __future__ import annotations

import asyncio
import threading
from collections import deque
from typing import TYPE_CHECKING

import forwardpy

from liveforge.declarations.subagents import (
    ChildSpec,
    Profile,
    SubAgentError,
    SubAgentInfo,
    SubAgents,
    SubAgentStatus,
)
from liveforge.impls.agent_turn import agent_state
from liveforge.impls.session_store import close_transcript

if TYPE_CHECKING:
    from liveforge.declarations.agent import Agent

__all__ = ["close_subagents"]


class _Child:
    """One sub-agent: its agent, its inbox and what its turns produced."""

    def __init__(self, spec: ChildSpec, task: str, agent: Agent, timeout: float) -> None:
        self.spec, self.task, self.agent, self.timeout = spec, task, agent, timeout
        self.status: SubAgentStatus = "running"
        self.answer = self.error = ""
        self.turns = self.tokens = 0
        self.inbox: deque[str] = deque([task])
        self.cancelled = self.timed_out = False
        self.lock = threading.Lock()
        self.thread: threading.Thread | None = None

    def start(self) -> None:
        self.status = "running"
        self.thread = threading.Thread(
            target=asyncio.run, args=(self._drive(),), name=f"subagent-{self.spec.agent_id}"
        )
        self.thread.daemon = True
        self.thread.start()

    def cancel(self) -> None:
        self.cancelled = True
        self.agent.cancel()

    def _time_out(self) -> None:
        self.timed_out = True
        self.agent.cancel()

    def _next(self) -> str | None:
        with self.lock:
            if self.cancelled or self.timed_out or not self.inbox:
                return None
            return self.inbox.popleft()

    async def _drive(self) -> None:
        timer = asyncio.get_running_loop().call_later(self.timeout, self._time_out)
        reason = "answer"
        try:
            while (text := self._next()) is not None:
                reason = await self._turn(text)
        except Exception as exc:  # a fault in the machinery, not the model's
            reason, self.error = "error", f"{type(exc).__name__}: {exc}"
        finally:
            timer.cancel()
            await self._release()
        self.status = self._final_status(reason)

    async def _release(self) -> None:
        """What `Agent.aclose` frees, except the runtime: it is the parent's. A later
        `send` opens them again."""
        state = agent_state(self.agent)
        if state.executor is not None:
            state.executor.shutdown(wait=False, cancel_futures=True)
            state.executor = None
        close_transcript(self.agent.session)
        await self.agent.provider.aclose()

    async def _turn(self, text: str) -> str:
        reason = "answer"
        async for event in self.agent.run(text):
            if event.type == "turn_started" and (self.cancelled or self.timed_out):
                self.agent.cancel()  # cancelled before the turn existed: stop it now
            elif event.type == "final_answer":
                self.answer = event.text
            elif event.type == "error":
                self.error = event.message
            elif event.type == "turn_ended":
                self.turns += 1
                self.tokens += event.usage.total_input_tokens + event.usage.output_tokens
                reason = event.reason
        return reason

    def _final_status(self, reason: str) -> SubAgentStatus:
        if self.timed_out:
            return "timed out"
        if self.cancelled:
            return "cancelled"
        return "failed" if reason == "error" else "done"

    def info(self, limit: int) -> SubAgentInfo:
        answer = self.answer
        if len(answer) > limit:
            answer = (
                answer[:limit] + f"\n[... cut; the whole answer is in {self.agent.session.path}]"
            )
        return SubAgentInfo(
            id=self.spec.agent_id,
            task=self.task,
            status=self.status,
            depth=self.spec.depth,
            profile=self.spec.profile,
            session_id=self.agent.session.id,
            transcript=str(self.agent.session.path),
            answer=answer,
            error=self.error,
            turns=self.turns,
            tokens=self.tokens,
            pending=len(self.inbox),
        )


def _children(agents: SubAgents) -> dict[str, _Child]:
    found: dict[str, _Child] | None = agents.__dict__.get("_children")
    if found is None:
        found = agents.__dict__["_children"] = {}
    return found


def _child(agents: SubAgents, agent_id: str) -> _Child:
    child = _children(agents).get(agent_id.strip())
    if child is None:
        known = ", ".join(_children(agents)) or "none yet"
        raise SubAgentError(f"no sub-agent {agent_id!r}; the ids are: {known} (see agents_list)")
    return child


def _check_limits(agents: SubAgents) -> None:
    if agents.depth + 1 > agents.max_depth:
        raise SubAgentError(
            f"sub-agents nest at most {agents.max_depth} levels and this agent is at depth "
            f"{agents.depth}: do this part of the task yourself, with your own tools, or "
            "answer with what you have so the agent above can decide."
        )
    running = [c for c in _children(agents).values() if c.status == "running"]
    if len(running) >= agents.max_concurrent:
        raise SubAgentError(
            f"{len(running)} sub-agents are running, the limit: wait for one with "
            f"agent_result (ids: {', '.join(c.spec.agent_id for c in running)}), then spawn."
        )


@forwardpy.impl(SubAgents.spawn)
def spawn(
    self: SubAgents,
    task: str,
    *,
    profile: Profile = "full",
    model: str | None = None,
    timeout: float = 600,
) -> str:
    if not task.strip():
        raise SubAgentError("a sub-agent needs a task: say what it should do and report.")
    _check_limits(self)
    number = len(_children(self)) + 1
    prefix = self.parent.session.extra.get("subagent_id", "a")
    spec = ChildSpec(
        agent_id=f"{prefix}.{number}", depth=self.depth + 1, profile=profile, model=model
    )
    agent = self.factory(spec)
    child = _Child(spec, task, agent, timeout)
    _children(self)[spec.agent_id] = child
    self.parent.session.note(
        "subagent",
        f"sub-agent {spec.agent_id} started: {task[:200]}",
        agent_id=spec.agent_id,
        session_id=agent.session.id,
        transcript=str(agent.session.path),
    )
    turn = getattr(agent_state(self.parent), "turn", None)
    token = getattr(turn, "token", None)
    if token is not None:  # cancelling the parent's turn cancels what it spawned
        token.add_callback(child.cancel)
    child.start()
    return spec.agent_id


@forwardpy.impl(SubAgents.list)
def list_(self: SubAgents) -> list[SubAgentInfo]:
    return [child.info(self.answer_limit) for child in _children(self).values()]


@forwardpy.impl(SubAgents.send)
def send(self: SubAgents, agent_id: str, text: str) -> SubAgentInfo:
    child = _child(self, agent_id)
    if child.cancelled or child.timed_out:
        raise SubAgentError(f"sub-agent {agent_id} was {child.status}; spawn a new one.")
    with child.lock:
        child.inbox.append(text)
        restart = child.thread is not None and not child.thread.is_alive()
    if restart:
        child.start()
    return child.info(self.answer_limit)


@forwardpy.impl(SubAgents.result)
def result(self: SubAgents, agent_id: str, *, wait: float = 0) -> SubAgentInfo:
    child = _child(self, agent_id)
    if wait > 0 and child.thread is not None:
        child.thread.join(wait)
    return child.info(self.answer_limit)


@forwardpy.impl(SubAgents.cancel_all)
def cancel_all(self: SubAgents, *, wait: float = 10) -> None:
    children = list(_children(self).values())
    for child in children:
        if child.thread is not None and child.thread.is_alive():
            child.cancel()
    for child in children:
        if child.thread is not None:
            child.thread.join(wait)


def close_subagents(agent: Agent) -> None:
    """Cancel the sub-agents `agent` spawned that still run (its front end is closing)."""
    agents = (getattr(agent.toolbox, "services", None) or {}).get("subagents")
    if isinstance(agents, SubAgents):
        agents.cancel_all()
