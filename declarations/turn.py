"""The state of one turn in progress, and what an agent keeps between turns.

Both are plain typed data owned by the `Agent` declaration (`agent.state`), so the loop's
bodies, the safety net and front ends read the same fields instead of hidden attributes.
"""

from __future__ import annotations

import asyncio
import collections
import concurrent.futures
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from liveforge.declarations.messages import ToolResultBlock, ToolUseBlock, Usage
from liveforge.declarations.provider import CancelToken

if TYPE_CHECKING:
    from liveforge.kernel.history._safety import SafetyNet

__all__ = ["AgentState", "ModelProgress", "Turn"]


@dataclass
class ModelProgress:
    """The model request in flight: when it began and what has streamed back so far.

    Front ends read it while they wait (elapsed time, tokens so far); the loop's model call
    updates it as events arrive. `output_tokens` is counted from the characters streamed
    (text, thinking, tool arguments), or the provider's count when it reported a larger one
    (Anthropic reports 1 output token at the start and the real count only at the end).
    """

    chars_per_token: float = 3.5
    started: float = field(default_factory=time.monotonic)
    chars: int = 0
    reported: Usage | None = None
    """The usage the provider reported during the stream (cumulative), if any."""

    @property
    def elapsed(self) -> float:
        """Seconds since the request was sent."""
        return time.monotonic() - self.started

    @property
    def counted(self) -> int:
        """Output tokens estimated from the characters streamed."""
        return int(self.chars / self.chars_per_token)

    @property
    def estimated(self) -> bool:
        """True while `output_tokens` is the estimate, not the provider's count."""
        return self.reported is None or self.reported.output_tokens < self.counted

    @property
    def output_tokens(self) -> int:
        """Output tokens so far: the larger of the estimate and the provider's count."""
        reported = self.reported.output_tokens if self.reported is not None else 0
        return max(reported, self.counted)

    @property
    def input_tokens(self) -> int:
        """Input tokens of the request as reported (cached ones included); 0 until then."""
        return self.reported.total_input_tokens if self.reported is not None else 0


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
    model: ModelProgress | None = None
    """The model request in flight (None between requests)."""

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
    interrupt: Callable[[], None] | None = None
    """Stops the tool call running in the worker now (`agent_tools.interrupt_tool`); None
    when none runs."""
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
