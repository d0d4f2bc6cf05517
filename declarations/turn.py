"""The state of one turn in progress, and what an agent keeps between turns.

Both are plain typed data owned by the `Agent` declaration (`agent.state`), so the loop's
bodies, the safety net and front ends read the same fields instead of hidden attributes.
"""

from __future__ import annotations

import asyncio
import collections
import concurrent.futures
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from liveforge.declarations.messages import ToolResultBlock, ToolUseBlock, Usage
from liveforge.declarations.provider import CancelToken

if TYPE_CHECKING:
    from liveforge.kernel._safety import SafetyNet

__all__ = ["AgentState", "Turn"]


@dataclass
class Turn:
    """One user turn in progress."""

    number: int
    token: CancelToken = field(default_factory=CancelToken)
    steps: int = 0
    usage: Usage = field(default_factory=Usage)
    repeats: collections.Counter[str] = field(default_factory=collections.Counter)
    open_calls: list[ToolUseBlock] = field(default_factory=list)
    results: dict[str, ToolResultBlock] = field(default_factory=dict)
    seen_runs: set[str] | None = None

    def unanswered(self) -> list[str]:
        """Ids of open calls with no result yet."""
        return [c.id for c in self.open_calls if c.id not in self.results]


@dataclass
class AgentState:
    """What an agent keeps between turns."""

    turn: Turn | None = None
    """The turn in progress, if any."""
    net: SafetyNet | None = None
    """The self-patch safety net (`Agent.safety_net()` creates it)."""
    executor: concurrent.futures.ThreadPoolExecutor | None = None
    running: asyncio.Future[object] | None = None
    """The newest tool call handed to the worker (it may outlive a cancelled turn)."""
    unreported: list[str] = field(default_factory=list)
    """Changes found between steps (e.g. a cancelled call that finished in the background),
    not yet told to the model."""
    restore_told: bool = False
    """The session's restore report went out with a turn already."""

    def tool_running(self) -> bool:
        """True while a tool call is still running in the worker (say, after a cancel)."""
        return self.running is not None and not self.running.done()

    def tool_worker(self) -> concurrent.futures.ThreadPoolExecutor:
        """One worker thread: tool calls never overlap, even one left running by a cancel."""
        if self.executor is None:
            self.executor = concurrent.futures.ThreadPoolExecutor(
                max_workers=1, thread_name_prefix="liveforge-tool"
            )
        return self.executor
