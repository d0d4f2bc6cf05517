"""`SubAgents` bodies: each sub-agent runs its turns on a thread with its own event loop.

A child is built in the caller's thread (so its session exists, and is linked, before
`spawn` returns), then a thread drives its turns: the task, then every message `send`
queued, until none is left. Cancellation goes through `Agent.cancel` (thread-safe: it fires
the turn's CancelToken), so a cancelled child ends its turn the normal way, its open tool
calls answered, its transcript closed. The timeout is a timer that cancels the same way.
Both also interrupt the tool call the child is running (`interrupt_tool`: a shell command's
processes are killed), and the child's thread ends only once that call is over, so its
limits hold while a tool runs, not only between calls.

A forked child (`subagent_fork.ForkChild`) is a process on a copy of the parent's live state;
`accept` applies what it proposes in one transaction.

Either kind works under its parent's tool settings (profile, allow/deny lists) and
permission rules, and gets no tool its parent does not have (`child_tools`).
"""

from __future__ import annotations

import asyncio
import threading
from collections import deque
from typing import TYPE_CHECKING, Any

import forwardpy

from liveforge.declarations.permissions import effect_of
from liveforge.declarations.provider import Route
from liveforge.declarations.subagents import (
    ChildSpec,
    Profile,
    SubAgentError,
    SubAgentInfo,
    SubAgents,
    SubAgentStatus,
)
from liveforge.impls.agent_tools import interrupt_tool
from liveforge.impls.live_program import released
from liveforge.impls.session_store import close_transcript
from liveforge.impls.subagent_fork import ForkChild, child_info, fork_conflicts

if TYPE_CHECKING:
    from liveforge.declarations.agent import Agent

__all__ = ["child_tools", "close_subagents", "routes_for"]

_CALL_END = 10.0
"""Seconds a stopped child waits for its interrupted tool call to end (a shell command gets
a SIGTERM, then a SIGKILL after 2 s)."""
_READ_EFFECTS = ("read", "check")
"""The effects of the tools a sub-agent with profile "read" gets."""


def routes_for(routes: list[Route], model: str | None) -> list[Route]:
    """`routes` with `model` as every route's model (unchanged when None)."""
    if not model:
        return list(routes)
    return [
        r.model_copy(update={"model": model, "name": f"{r.name.partition(':')[0]}:{model}"})
        for r in routes
    ]


def child_tools(parent: Agent, profile: Profile) -> list[str] | None:
    """The names of the tools a sub-agent of `parent` with `profile` may have; None: every
    tool the parent's tool settings let through (the child works under the same settings).
    Never a tool the parent's own list leaves out."""
    if profile == "full":
        return None if parent.toolbox.only is None else list(parent.toolbox.only)
    return [t.name for t in parent.toolbox.tools() if effect_of(t.func) in _READ_EFFECTS]


class _Child:
    """One sub-agent: its agent, its inbox and what its turns produced."""

    fork = False
    accepted = False

    def __init__(self, spec: ChildSpec, task: str, agent: Agent, timeout: float) -> None:
        self.spec, self.task, self.agent, self.timeout = spec, task, agent, timeout
        self.status: SubAgentStatus = "running"
        self.answer = self.error = ""
        self.turns = self.tokens = 0
        self.inbox: deque[str] = deque([task])
        self.cancelled = self.timed_out = False
        self.lock = threading.Lock()
        self.thread: threading.Thread | None = None
        self.proposal: dict[str, Any] = {}

    def start(self) -> None:
        self.status = "running"
        self.thread = threading.Thread(
            target=asyncio.run, args=(self._drive(),), name=f"subagent-{self.spec.agent_id}"
        )
        self.thread.daemon = True
        self.thread.start()

    def cancel(self) -> None:
        self.cancelled = True
        self._stop()

    def _time_out(self) -> None:
        self.timed_out = True
        self._stop()

    def _stop(self) -> None:
        """End the turn now, and the tool call it is running."""
        self.agent.cancel()
        interrupt_tool(self.agent)

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
        state = self.agent.state
        running = state.running
        if running is not None and not running.done() and (self.cancelled or self.timed_out):
            # the interrupted call is ending (its processes being killed): wait for that, so
            # a status other than "running" means nothing of this child runs any more
            await asyncio.wait([running], timeout=_CALL_END)
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

    @property
    def session_id(self) -> str:
        return self.agent.session.id

    @property
    def transcript(self) -> str:
        return str(self.agent.session.path)

    def info(self, limit: int) -> SubAgentInfo:
        return child_info(self, limit)


def _children(agents: SubAgents) -> dict[str, _Child | ForkChild]:
    return agents.children


def _child(agents: SubAgents, agent_id: str) -> _Child | ForkChild:
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


def _payload(agents: SubAgents, spec: ChildSpec, task: str) -> dict[str, Any]:
    """What a forked child needs: the project, the provider (keys in clear: a pipe only),
    the settings (the parent's tool settings and permission rules too, and the tools it may
    have) and the parent's unpersisted modules."""
    parent = agents.parent
    policy = parent.toolbox.policy
    routes = [
        {
            **r.model_dump(mode="json", exclude={"credentials"}),
            "credentials": [
                {"name": c.name, "key": c.key.get_secret_value()} for c in r.credentials
            ],
        }
        for r in routes_for(parent.provider.routes, spec.model)
    ]
    return {
        "project_root": str(parent.runtime.project_root),
        "task": task,
        "spec": spec.model_dump(mode="json"),
        # the fork patches its own copy (the parent accepts or not): memory is free there,
        # unless the parent may not change anything at all
        "mode": "read-only" if policy.mode == "read-only" else "auto-edit",
        "rules": {"allow": policy.rules.allow, "ask": policy.rules.ask, "deny": policy.rules.deny},
        "tool_settings": parent.toolbox.settings.model_dump(mode="json"),
        "tools": child_tools(parent, spec.profile),
        "routes": routes,
        "retry": parent.provider.retry.model_dump(mode="json"),
        "settings": parent.settings.model_dump(mode="json"),
        "context": parent.compactor.settings.model_dump(mode="json"),
        "overlay": {
            r.name: {"source": r.source, "is_package": r.is_package}
            for r in parent.runtime.changed_modules()
        },
        "parent_session": parent.session.id,
        "parent_transcript": str(parent.session.path),
    }


def _start_child(
    agents: SubAgents, spec: ChildSpec, task: str, timeout: float, fork: bool
) -> _Child | ForkChild:
    if fork:
        return ForkChild(spec, task, _payload(agents, spec, task), timeout)
    agent = agents.factory(spec)
    return _Child(spec, task, agent, timeout)


@forwardpy.impl(SubAgents.spawn)
def spawn(
    self: SubAgents,
    task: str,
    *,
    profile: Profile = "full",
    model: str | None = None,
    timeout: float = 600,
    fork: bool = False,
) -> str:
    if not task.strip():
        raise SubAgentError("a sub-agent needs a task: say what it should do and report.")
    _check_limits(self)
    number = len(_children(self)) + 1
    prefix = self.parent.session.live.subagent_id or "a"
    spec = ChildSpec(
        agent_id=f"{prefix}.{number}", depth=self.depth + 1, profile=profile, model=model
    )
    child = _start_child(self, spec, task, timeout, fork)
    _children(self)[spec.agent_id] = child
    self.parent.session.note(
        "subagent",
        f"sub-agent {spec.agent_id} started{' (forked)' if fork else ''}: {task[:200]}",
        agent_id=spec.agent_id,
        session_id=child.session_id,
        transcript=child.transcript,
    )
    turn = self.parent.state.turn
    if turn is not None:  # cancelling the parent's turn cancels what it spawned
        turn.token.add_callback(child.cancel)
    child.start()
    return spec.agent_id


@forwardpy.impl(SubAgents.list)
def list_(self: SubAgents) -> list[SubAgentInfo]:
    return [child.info(self.answer_limit) for child in _children(self).values()]


@forwardpy.impl(SubAgents.send)
def send(self: SubAgents, agent_id: str, text: str) -> SubAgentInfo:
    child = _child(self, agent_id)
    if isinstance(child, ForkChild):
        raise SubAgentError(
            f"{agent_id} is forked and takes its first task only; spawn another with the rest."
        )
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
        with released():  # the child's tool calls need the live program this call holds
            child.thread.join(wait)
    return child.info(self.answer_limit)


@forwardpy.impl(SubAgents.accept)
def accept(self: SubAgents, agent_id: str) -> list[str]:
    child = _child(self, agent_id)
    if not isinstance(child, ForkChild):
        raise SubAgentError(f"{agent_id} is not forked: its changes are in this program already.")
    if child.status == "running" or child.accepted or not child.proposal:
        state = "still running" if child.status == "running" else "accepted already"
        why = state if child.status == "running" or child.accepted else "proposes no change"
        raise SubAgentError(f"nothing to accept from {agent_id}: it is {why}.")
    conflicts = fork_conflicts(self.parent.runtime, child)
    if conflicts:
        raise SubAgentError(
            f"{', '.join(conflicts)} changed here since {agent_id} was forked; accepting would "
            "undo that. View its transcript and apply what you want with patch."
        )
    with self.parent.runtime.transaction() as changes:
        for name, module in sorted(child.proposal.items()):
            self.parent.runtime.patch_module(
                name, module["source"], is_package=module["is_package"]
            )
    child.accepted = True
    return [change.id for change in changes]


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
