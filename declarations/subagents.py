# mypy: disable-error-code="empty-body"
"""Sub-agents: an agent hands a task to another agent and reads back its answer.

Each sub-agent is a whole agent of its own — its own session transcript (linked both ways:
the child's transcript names its parent, the parent's records the child), its own tool
worker and event loop on a thread — on the same live runtime as its parent, so what it
patches the parent sees at once. Limits keep it bounded:

    depth           a sub-agent may spawn sub-agents down to `max_depth` (default 3) levels;
                    past it `spawn` is refused with a message the model can act on
    concurrency     at most `max_concurrent` (default 4) run at once per parent
    time            each has a timeout; past it the sub-agent is cancelled
    cancellation    cancelling the parent's turn cancels the children it spawned in that
                    turn; `cancel_all()` (the parent's end) cancels every one still running

A sub-agent's tools are its parent's, or with profile "read" only the tools whose effect is
read or check (`liveforge.declarations.permissions`); it works under its parent's tool
settings (profile, allow/deny lists) and permission rules, forked or not, and never gets a
tool its parent does not have. Its result is its final answer,
clipped to a bound with a pointer to its transcript, so the parent's context stays small.
`send(id, text)` steers one: the text becomes its next turn, right after the current one.

A *forked* sub-agent (`fork=True`) runs in a process of its own, on a copy of the parent's
live state (the parent's unpersisted changes applied to a fresh runtime), without the tools
that write files or run shells. Its patches stay there: its result lists the modules it
changed, and they reach the parent only through `accept(id)`, all in one transaction, and
only if the parent has not changed those modules since the fork.

    agents = SubAgents(parent, factory, depth=0)
    first = agents.spawn("Find every caller of pkg.mod.f", profile="read")
    agents.result(first, wait=60).answer
"""

from __future__ import annotations

import builtins
from collections.abc import Callable
from typing import TYPE_CHECKING, Any, Literal

import forwardpy
from pydantic import BaseModel, ConfigDict

from liveforge.kernel.errors import LiveforgeError

if TYPE_CHECKING:
    from liveforge.declarations.agent import Agent

__all__ = ["ChildSpec", "SubAgentError", "SubAgentInfo", "SubAgentStatus", "SubAgents"]

SubAgentStatus = Literal["running", "done", "failed", "cancelled", "timed out"]
Profile = Literal["full", "read"]


class ChildSpec(BaseModel):
    """What a factory needs to build one sub-agent."""

    model_config = ConfigDict(frozen=True)
    agent_id: str
    depth: int
    profile: Profile = "full"
    model: str | None = None
    """A model name of the parent's provider to use instead of the parent's, or None."""


class SubAgentInfo(BaseModel):
    """What the parent can see of one sub-agent."""

    model_config = ConfigDict(frozen=True)
    id: str
    task: str
    status: SubAgentStatus
    depth: int
    profile: Profile
    session_id: str = ""
    transcript: str = ""
    answer: str = ""
    """The final answer of its latest turn ("" while none)."""
    error: str = ""
    turns: int = 0
    tokens: int = 0
    pending: int = 0
    """Messages sent with `send` that have not started yet."""
    fork: bool = False
    proposal: list[str] = []
    """Modules a forked sub-agent changed, waiting for `accept`."""
    accepted: bool = False


class SubAgentError(LiveforgeError, ValueError):
    """A sub-agent request that cannot be served (limit reached, unknown id); the message
    says what to do instead."""


class SubAgents(forwardpy.Object):
    """The sub-agents one agent spawned (see the module docstring)."""

    parent: Agent
    factory: Callable[[ChildSpec], Agent]
    depth: int
    max_depth: int
    max_concurrent: int
    answer_limit: int
    children: dict[str, Any]
    """The sub-agents spawned so far, by id (their implementation's own objects)."""

    def __init__(
        self,
        parent: Agent,
        factory: Callable[[ChildSpec], Agent],
        *,
        depth: int = 0,
        max_depth: int = 3,
        max_concurrent: int = 4,
        answer_limit: int = 4000,
    ) -> None:
        """`factory` builds a child agent for a spec; `depth` is the parent's own depth."""
        self.parent = parent
        self.factory = factory
        self.depth = depth
        self.max_depth = max_depth
        self.max_concurrent = max_concurrent
        self.answer_limit = answer_limit
        self.children = {}

    def spawn(
        self,
        task: str,
        *,
        profile: Profile = "full",
        model: str | None = None,
        timeout: float = 600,
        fork: bool = False,
    ) -> str:
        """Start a sub-agent on `task`; its id. SubAgentError past a limit."""
        ...

    def list(self) -> list[SubAgentInfo]:
        """Every sub-agent spawned here, oldest first."""
        ...

    def send(self, agent_id: str, text: str) -> SubAgentInfo:
        """Queue `text` as the sub-agent's next turn (it runs again if it had finished)."""
        ...

    def result(self, agent_id: str, *, wait: float = 0) -> SubAgentInfo:
        """The sub-agent's state, after waiting up to `wait` seconds for it to finish."""
        ...

    def accept(self, agent_id: str) -> builtins.list[str]:
        """Apply a finished forked sub-agent's changes here; the ids of the new changes.
        SubAgentError when there is nothing to accept or the modules changed here since."""
        ...

    def cancel_all(self, *, wait: float = 10) -> None:
        """Cancel every running sub-agent and wait up to `wait` s for their threads to end."""
        ...
