"""The tool calls of one model answer: dispatch, watch, report, answer.

Calls run one at a time in the agent's tool worker thread, each holding the live program
(`live_program.holding`: other sessions' calls wait, their streaming does not), so the event
loop stays free to notice a cancellation: a cancelled turn stops waiting at once and the
open calls get a
"cancelled" result (a call already running finishes in the background; its changes are
picked up by the next `Session.track` and told to the model with the next turn). The
model's mistakes come back from the toolbox as error results; an exception escaping the
toolbox is a liveforge fault and propagates.

A call identical to earlier ones of this turn (`runaway_repeats` times, with no change to
the program in between) is not run: the model is told why, and `run_tools` reports it
(`Repeated`) for the loop's `ending` to stop the turn. A cancelled turn simply stops
running calls; `ending` sees the token.
"""

from __future__ import annotations

import asyncio
import json
import time
from collections.abc import AsyncIterator, Callable
from typing import TYPE_CHECKING, Any, TypeVar, cast

from liveforge.declarations.agent import (
    AgentEvent,
    PatchApplied,
    SelfPatchesApplied,
    ToolFinished,
    ToolStarted,
    VerificationResult,
)
from liveforge.declarations.messages import Message, ToolResultBlock, ToolUseBlock
from liveforge.declarations.toolbox import ToolResult
from liveforge.declarations.turn import Turn
from liveforge.impls import plugins
from liveforge.impls.agent_turn import Repeated, close_open_calls
from liveforge.impls.approvals import approval_wait
from liveforge.impls.live_program import holding, lane_of
from liveforge.impls.self_patches import apply_batch, is_self_patch
from liveforge.impls.session_changes import is_self_module
from liveforge.kernel.runtime._deadline import AsyncTimer

if TYPE_CHECKING:
    from liveforge.declarations.agent import Agent
    from liveforge.declarations.turn import AgentState

__all__ = ["VERIFY_TOOLS", "ToolInterrupted", "interrupt_tool", "run_tools", "summary_of"]

VERIFY_TOOLS = frozenset({"verify", "run_tests", "persist"})
"""Tools after which new sandbox runs are reported (persist may run liveforge's tests)."""
_SUMMARY_LINES = 6
T = TypeVar("T")


def summary_of(text: str) -> str:
    """The first lines of a result, for people watching the turn; of a traceback, the
    innermost call and the error, which say what went wrong."""
    lines = text.splitlines()
    if len(lines) <= _SUMMARY_LINES:
        return "\n".join(lines)
    shown = lines[:_SUMMARY_LINES]
    if lines[0].startswith("Traceback (most recent call last)"):
        error = next((i for i, line in enumerate(lines[1:], 1) if not line.startswith(" ")), 1)
        innermost = [line for line in lines[1:error] if line.startswith("  File ")][-1:]
        shown = [lines[0], *innermost, *lines[error:]][:_SUMMARY_LINES]
    return "\n".join(shown) + f"\n… ({len(lines) - len(shown)} more lines)"


class ToolInterrupted(BaseException):
    """Raised in the tool worker to stop the call running there (`interrupt_tool`). Like a
    tool's deadline, it is a BaseException: a tool's `except Exception` cannot keep it."""


def interrupt_tool(agent: Agent) -> bool:
    """Stop the tool call running in `agent`'s worker now (thread-safe): an exception is
    raised in it, so a shell command's process group is killed on the way out. For limits
    that must hold while a call runs (a sub-agent's timeout); cancel the turn first, so the
    call's result is not waited for. True if a call was running."""
    stop = agent.state.interrupt
    if stop is None:
        return False
    stop()
    return True


def _interruptible(state: AgentState, func: Callable[..., T], *args: Any) -> T:
    """`func(*args)` in the worker, stoppable by `interrupt_tool`."""
    timer = AsyncTimer(0, ToolInterrupted)  # never started: only `interrupt_tool` fires it
    state.interrupt = timer.fire
    try:
        return func(*args)
    finally:
        timer.stop()  # first: a stop that comes after this raises nothing
        state.interrupt = None


async def in_worker(agent: Agent, turn: Turn, func: Callable[..., T], *args: Any) -> T | None:
    """Run `func` in the tool worker; None when the turn is cancelled first (the call may
    go on in the background, unless `interrupt_tool` stops it)."""
    loop = asyncio.get_running_loop()
    worker = agent.state.tool_worker()
    future = loop.run_in_executor(worker, _interruptible, agent.state, func, *args)
    agent.state.running = cast("asyncio.Future[object]", future)
    future.add_done_callback(lambda f: None if f.cancelled() else f.exception())
    stop: asyncio.Future[None] = loop.create_future()

    def settle() -> None:
        if not stop.done():
            stop.set_result(None)

    def wake() -> None:
        loop.call_soon_threadsafe(settle)

    turn.token.add_callback(wake)
    try:
        waiters: set[asyncio.Future[Any]] = {future, stop}
        await asyncio.wait(waiters, return_when=asyncio.FIRST_COMPLETED)
    finally:
        turn.token.remove_callback(wake)
        stop.cancel()
    if not future.done() or (not future.cancelled() and _interrupted(future)):
        return None
    return future.result()


def _interrupted(future: asyncio.Future[Any]) -> bool:
    return isinstance(future.exception(), ToolInterrupted)


def _call_tool(agent: Agent, call: ToolUseBlock) -> ToolResult:
    """One call as the model asked for it, unless a plugin vetoes it (in the worker)."""
    arguments, veto = plugins.agent_before_tool(agent, call.name, call.input)
    if veto is not None:
        return ToolResult(
            f"{call.name} was refused by a plugin: {veto.reason}", is_error=True, refused="plugin"
        )
    result = agent.toolbox.call(call.name, arguments, agent.settings.tool_timeout)
    plugins.agent_after_tool(agent, call.name, arguments, result.text, result.is_error)
    return result


def _timed_call(agent: Agent, call: ToolUseBlock, waited: list[float]) -> ToolResult:
    """`_call_tool`, putting into `waited[0]` the seconds it spent waiting for the user to
    answer approval questions (a tool's time leaves them out)."""
    before = approval_wait()
    try:
        return _call_tool(agent, call)
    finally:
        waited[0] = approval_wait() - before


def _live(agent: Agent, turn: Turn, func: Callable[..., T], *args: Any) -> T | None:
    """`func` holding the live program (other sessions' tool calls wait; None when the turn
    is cancelled while this one waits), its changes attributed to this session's lane."""
    with holding(agent.runtime, lane_of(agent.session), lambda: turn.token.cancelled) as held:
        return func(*args) if held else None


def _runaway(agent: Agent, turn: Turn, call: ToolUseBlock) -> bool:
    key = call.name + json.dumps(call.input, sort_keys=True, default=str)
    turn.repeats[key] += 1
    return turn.repeats[key] >= agent.settings.runaway_repeats


def _stop_runaway(agent: Agent, turn: Turn, call: ToolUseBlock) -> Repeated:
    repeats = agent.settings.runaway_repeats
    turn.results[call.id] = ToolResultBlock(
        tool_use_id=call.id,
        is_error=True,
        content=(
            f"Stopped: this is call number {repeats} of {call.name} with these same arguments in "
            "this turn, with nothing changed in between, so the result would be the same. The "
            "turn was stopped here. Tell the user what you were trying to do and what blocks "
            "you, or take a different approach."
        ),
    )
    close_open_calls(agent, turn, "not run: the turn was stopped (a repeated call)")
    return Repeated(name=call.name, arguments=call.input, repeats=repeats)


def _keep(agent: Agent, turn: Turn, call: ToolUseBlock, result: ToolResult) -> str:
    text = agent.compactor.clip_result(agent.session.scrub(result.text))
    turn.results[call.id] = ToolResultBlock(
        tool_use_id=call.id, content=text, is_error=result.is_error
    )
    return text


def _changes(agent: Agent, turn: Turn) -> list[AgentEvent]:
    """Events for the changes made since the last look; a change resets repeat counts."""
    new = agent.session.track(agent.runtime, agent.settings.self_packages)
    if new:
        turn.repeats.clear()
    new = [c for c in new if c.status.value != "rolled_back"]
    selves = [
        c.id
        for c in new
        if c.kind != "reload" and is_self_module(c.module, agent.settings.self_packages)
    ]
    return [
        PatchApplied(
            change_id=c.id, target=c.target, kind=c.kind, diff=c.diff(), self_patch=c.id in selves
        )
        for c in new
    ]


def _runs(agent: Agent, turn: Turn) -> list[AgentEvent]:
    """Events for sandbox runs not reported yet (newest first from the runtime)."""
    rows = agent.runtime.runs()
    if turn.seen_runs is None:
        turn.seen_runs = set()
    fresh = [r for r in rows if r.run_id not in turn.seen_runs]
    turn.seen_runs.update(r.run_id for r in rows)
    return [
        VerificationResult(
            run_id=r.run_id, kind=r.kind, ok=r.ok, headline=r.headline, value=_value(agent, r)
        )
        for r in reversed(fresh)
    ]


def _value(agent: Agent, summary: Any) -> str | None:
    """The value a passing snippet returned, from its run record (None when pruned)."""
    if summary.kind != "snippet" or not summary.ok:
        return None
    try:
        value: str | None = agent.runtime.run(summary.run_id).value_repr
    except Exception:  # a pruned record: the headline still says what ran
        return None
    return value


async def _one(agent: Agent, turn: Turn, call: ToolUseBlock) -> AsyncIterator[AgentEvent]:
    if call.name in VERIFY_TOOLS and turn.seen_runs is None:
        _runs(agent, turn)  # what existed before this turn is not news
    started, waited = time.monotonic(), [0.0]
    result = await in_worker(agent, turn, _live, agent, turn, _timed_call, agent, call, waited)
    if result is None:
        return
    text = _keep(agent, turn, call, result)
    yield ToolFinished(
        call_id=call.id,
        name=call.name,
        is_error=result.is_error,
        summary=summary_of(text),
        duration=max(0.0, time.monotonic() - started - waited[0]),
        chars=len(text),
        refused=result.refused,
    )
    for event in _changes(agent, turn) + (_runs(agent, turn) if call.name in VERIFY_TOOLS else []):
        yield event
    for notice in plugins.notices(agent):
        yield notice


async def _boundary(
    agent: Agent, turn: Turn, queued: list[ToolUseBlock]
) -> AsyncIterator[AgentEvent]:
    batch = await in_worker(agent, turn, _live, agent, turn, apply_batch, agent, queued)
    if batch is None:
        return
    results, ids, ok = batch
    for call in queued:
        text = _keep(agent, turn, call, results[call.id])
        if results[call.id].is_error:  # its deferred ToolFinished said "queued": say how it ended
            yield ToolFinished(
                call_id=call.id,
                name=call.name,
                is_error=True,
                summary=summary_of(text),
                duration=0.0,
                chars=len(text),
                refused=results[call.id].refused,
            )
    message = (
        f"{len(ids)} self-patch change(s) in effect"
        if ok
        else "the self-patch batch failed; nothing applied"
    )
    yield SelfPatchesApplied(change_ids=ids, ok=ok, message=message)
    for event in _changes(agent, turn):
        yield event


async def run_tools(
    agent: Agent, turn: Turn, calls: list[ToolUseBlock]
) -> AsyncIterator[AgentEvent | Repeated]:
    """Run the calls of the newest assistant message and append their results message.

    Stops early, leaving the calls open, when the turn is cancelled; the last item is a
    `Repeated` when a call was a runaway (the calls are closed then)."""
    turn.open_calls, turn.results = list(calls), {}
    queued: list[ToolUseBlock] = []
    for call in calls:
        if turn.token.cancelled:
            return
        if _runaway(agent, turn, call):
            yield _stop_runaway(agent, turn, call)
            return
        yield ToolStarted(call_id=call.id, name=call.name, arguments=call.input)
        if is_self_patch(agent, call):
            queued.append(call)
            yield ToolFinished(
                call_id=call.id,
                name=call.name,
                is_error=False,
                duration=0.0,
                summary="queued: applied at the end of this step",
                chars=0,
                deferred=True,
            )
            continue
        async for event in _one(agent, turn, call):
            yield event
    if queued and not turn.token.cancelled:
        async for event in _boundary(agent, turn, queued):
            yield event
    if turn.token.cancelled:
        return
    blocks = [turn.results[c.id] for c in calls]
    message = Message.tool_results(blocks)
    turn.open_calls, turn.results = [], {}
    agent.session.append(message, tokens=agent.compactor.estimate(message))
