"""`Agent` bodies: the turn loop.

    turn(input): lock the project's turns, record the input, then step until `ending` says
                 the turn is over (agent_turn: the one place that decides it)
      step:      model request (streamed) -> no tool calls: Answered
                 -> run the tool calls -> apply queued self-patches at the boundary
      fault:     the safety net rolls back the self-patches on probation, the model is told,
                 and the turn steps on; with none on probation the fault is a Failed step
      always:    open tool calls are answered, changes tracked, the turn's end recorded

`Agent.run` (the protected watchdog) drives `turn`; if a fault escapes it — say a
self-patch broke this module — the watchdog rolls back, calls `settle`, and runs `turn`
again with `going_on` (no new input), so the model is asked again in the same turn. The model's own
mistakes never reach this level: the toolbox turns them into tool results.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncGenerator, AsyncIterator

import forwardpy

from liveforge.declarations.agent import (
    Agent,
    AgentEvent,
    Compacted,
    Notice,
    SelfPatchesRolledBack,
    TurnEnded,
    TurnEndReason,
    TurnStarted,
    rolled_back_note,
)
from liveforge.declarations.messages import Message, ModelResponse, TextBlock, ToolResultBlock
from liveforge.declarations.turn import Turn
from liveforge.impls.agent_model import call_model, compact_now
from liveforge.impls.agent_tools import run_tools
from liveforge.impls.agent_turn import (
    STEP_OUTCOMES,
    Answered,
    Ending,
    Failed,
    Going,
    StepOutcome,
    add_note,
    close_open_calls,
    ending,
)
from liveforge.impls.session_store import close_transcript
from liveforge.kernel.history._safety import Rescue

__all__: list[str] = []


@forwardpy.impl(Agent.turn)
async def turn(
    self: Agent, user_input: str, *, going_on: bool = False
) -> AsyncGenerator[AgentEvent, None]:
    with self.session.turn_lock():
        current = _begin(self, user_input, going_on)
        reason: TurnEndReason = "error"
        try:
            if not going_on:  # a turn going on after a rollback started already
                yield TurnStarted(
                    session_id=self.session.id, turn=current.number, user_input=user_input
                )
            if not self.state.restore_told:
                self.state.restore_told = True
                for line in self.session.live.restored:
                    yield Notice(kind="restored", text=line)
            async for item in _steps(self, current):
                if isinstance(item, Ending):
                    reason = item.reason
                    yield item.event
                else:
                    yield item
        except (asyncio.CancelledError, GeneratorExit, KeyboardInterrupt):
            reason = "cancelled"
            raise
        finally:
            rolled_back = _end(self, current, reason)
        for event in rolled_back:
            yield event
        yield TurnEnded(
            reason=reason,
            steps=current.steps,
            usage=current.usage,
            context_tokens=self.context_tokens(),
        )


async def _steps(agent: Agent, turn: Turn) -> AsyncIterator[AgentEvent | Ending]:
    """Step until `ending` ends the turn; its `Ending` is the last item. A fault in a step or
    in `ending` itself goes to the safety net; after a rollback the turn steps on."""
    outcome: StepOutcome = Going()
    while True:
        stepping = False
        try:
            if (end := ending(agent, turn, outcome)) is not None:
                break
            stepping, outcome = True, Going()
            async for item in _step(agent, turn):
                if isinstance(item, STEP_OUTCOMES):
                    outcome = item
                else:
                    yield item
        except Exception as fault:
            rescue = agent.safety_net().rescue(fault)
            if rescue is None and not stepping:
                raise  # from `ending` (a step's fault it re-raised): liveforge's own
            outcome = Failed(fault) if rescue is None else Going()
            if rescue is not None:
                yield _report_rescue(agent, turn, rescue)
    yield end


async def _step(agent: Agent, turn: Turn) -> AsyncIterator[AgentEvent | StepOutcome]:
    """One model request and the tool calls it asks for; the last item is its outcome."""
    turn.steps += 1
    last = turn.steps == agent.settings.max_steps
    response: ModelResponse | None = None
    async for item in call_model(agent, turn, last_step=last):
        if isinstance(item, ModelResponse):
            response = item
        else:
            yield item
    assert response is not None
    if turn.token.cancelled or (response.stop_reason == "pause_turn" and not response.tool_calls):
        return  # cancelled, or the provider paused a long answer: the next request goes on
    if not response.tool_calls:
        yield Answered(response.text)
        return
    turn.open_calls = response.tool_calls
    if last:
        close_open_calls(agent, turn, "not run: the turn's step limit was reached")
        return
    async for event in run_tools(agent, turn, response.tool_calls):
        yield event


def _report_rescue(agent: Agent, turn: Turn, rescue: Rescue) -> SelfPatchesRolledBack:
    """After the safety net rolled back: close the open calls, record it, tell the model;
    the event that says it."""
    close_open_calls(agent, turn, f"interrupted: the agent loop failed ({rescue.reason})")
    agent.session.track(agent.runtime, agent.settings.self_packages)
    agent.session.note("self_patch_rollback", rescue.reason, change_ids=list(rescue.change_ids))
    add_note(agent, rolled_back_note(rescue))
    return SelfPatchesRolledBack(
        change_ids=list(rescue.change_ids), reason=rescue.reason, notes=list(rescue.notes)
    )


def _track_unreported(agent: Agent) -> None:
    """Record changes made outside this turn's tool calls; the model hears of them next."""
    new = agent.session.track(agent.runtime, agent.settings.self_packages)
    agent.state.unreported += [f"{c.id} {c.kind} {c.target} [{c.status.value}]" for c in new]


def _report_unreported(agent: Agent) -> None:
    state = agent.state
    if state.unreported:
        add_note(
            agent,
            "[liveforge] Changes made since your last step that no tool result "
            "reported (a cancelled call may have finished in the background): "
            f"{'; '.join(state.unreported)}. They are in effect now.",
        )
        state.unreported = []


def _begin(agent: Agent, user_input: str, going_on: bool) -> Turn:
    _track_unreported(agent)
    turn = Turn(number=agent.session.turn_started(user_input))
    agent.state.turn = turn
    agent.prompt.focus(user_input)  # memories relevant to this turn join the prompt
    if not going_on:  # going on after a rollback: the input is in the conversation already
        _record_input(agent, user_input)
    _report_unreported(agent)
    return turn


def _record_input(agent: Agent, user_input: str) -> None:
    last = agent.session.messages[-1] if agent.session.messages else None
    if (
        last is not None
        and last.role == "user"
        and not last.tool_calls
        and not any(isinstance(b, ToolResultBlock) for b in last.content)
    ):
        # the previous turn failed before the model answered: keep roles alternating
        agent.session.amend_last(
            Message(role="user", content=[*last.content, TextBlock(text=user_input)])
        )
    else:
        message = Message.user(user_input)
        agent.session.append(message, tokens=agent.compactor.estimate(message))


def _end(agent: Agent, turn: Turn, reason: TurnEndReason) -> list[AgentEvent]:
    """End the turn (`_finish`); a fault there goes to the safety net, and the restored
    bodies finish it. The rollback's event, if any."""
    try:
        _finish(agent, turn, reason)
        return []
    except Exception as fault:
        rescue = agent.safety_net().rescue(fault)
        if rescue is None:
            raise
        event = _report_rescue(agent, turn, rescue)
        _finish(agent, turn, reason)
        return [event]


def _finish(agent: Agent, turn: Turn, reason: TurnEndReason) -> None:
    """Make the conversation valid for the next request whatever ended the turn."""
    close_open_calls(agent, turn)
    if reason == "turn_limit":
        add_note(
            agent,
            f"[liveforge] The previous turn stopped at its limit of "
            f"{agent.settings.max_steps} steps.",
        )
    _track_unreported(agent)
    agent.session.turn_ended(reason)
    agent.state.turn = None


@forwardpy.impl(Agent.settle)
def settle(self: Agent, rescue: Rescue) -> None:
    turn = self.state.turn or Turn(number=self.session.turns)
    _report_rescue(self, turn, rescue)
    if self.session.open_turn:
        self.session.turn_ended("error")
    self.state.turn = None


@forwardpy.impl(Agent.cancel)
def cancel(self: Agent) -> None:
    turn = self.state.turn
    if turn is not None:
        turn.token.cancel()


@forwardpy.impl(Agent.compact)
async def compact(self: Agent) -> Compacted | None:
    if self.state.turn is not None:
        raise RuntimeError("compact() runs between turns; this agent is in a turn now.")
    with self.session.turn_lock():
        return await compact_now(self, None, force=True)


@forwardpy.impl(Agent.system_prompt)
def system_prompt(self: Agent) -> str:
    return self.prompt.render()


@forwardpy.impl(Agent.context_tokens)
def context_tokens(self: Agent) -> int:
    if self.session.last_usage is not None:
        return self.session.context_tokens()
    system = Message.system(self.prompt.render())
    tools = sum(len(s.description) + len(str(s.input_schema)) for s in self.toolbox.specs())
    return (
        self.session.context_tokens()
        + self.compactor.estimate(system)
        + int(tools / self.compactor.settings.chars_per_token)
    )


@forwardpy.impl(Agent.aclose)
async def aclose(self: Agent) -> None:
    state = self.state
    if state.executor is not None:
        state.executor.shutdown(wait=False, cancel_futures=True)
        state.executor = None
    close_transcript(self.session)
    if not self.session.live.parent_session:  # a sub-agent uses its parent's servers
        for source in self.toolbox.sources:
            await asyncio.to_thread(source.close)  # MCP servers: none outlives the session
    self.runtime.close()  # the sandbox's template process; it restarts if the runtime is used again
    await self.provider.aclose()
