"""`Agent` bodies: the turn loop.

    run(input):  lock the project's turns, record the input, then step until TurnOver:
      step:      check limits -> model request (streamed) -> no tool calls: FinalAnswer
                 -> run the tool calls -> apply queued self-patches at the boundary
      fault:     an exception in the loop machinery with unconfirmed self-patches rolls them
                 back, tells the model and steps again; otherwise it propagates
      always:    open tool calls are answered, changes tracked, the turn's end recorded

The model's own mistakes never reach this level: the toolbox turns them into tool results.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator

import forwardpy

from liveforge.declarations.agent import (
    Agent,
    AgentEvent,
    Cancelled,
    Compacted,
    FinalAnswer,
    Notice,
    SelfPatchesRolledBack,
    TurnEnded,
    TurnEndReason,
    TurnLimit,
    TurnStarted,
)
from liveforge.declarations.messages import (
    Message,
    ModelResponse,
    TextBlock,
    ToolResultBlock,
)
from liveforge.impls.agent_model import call_model, compact_now
from liveforge.impls.agent_tools import run_tools
from liveforge.impls.agent_turn import (
    Turn,
    TurnOver,
    add_note,
    agent_state,
    close_open_calls,
)
from liveforge.impls.self_patches import fault_summary, roll_back_unconfirmed
from liveforge.impls.session_store import close_transcript

__all__: list[str] = []


@forwardpy.impl(Agent.run)
async def run(self: Agent, user_input: str) -> AsyncIterator[AgentEvent]:
    with self.session.turn_lock():
        turn = _begin(self, user_input)
        reason: TurnEndReason = "error"
        try:
            yield TurnStarted(session_id=self.session.id, turn=turn.number, user_input=user_input)
            for line in self.session.extra.pop("restored", None) or []:
                yield Notice(kind="restored", text=line)
            while True:
                try:
                    async for event in _step(self, turn):
                        yield event
                except TurnOver:
                    raise
                except Exception as fault:
                    yield _recover(self, turn, fault)
        except TurnOver as over:
            reason = over.reason
            yield over.event
        except (asyncio.CancelledError, GeneratorExit, KeyboardInterrupt):
            reason = "cancelled"
            raise
        finally:
            _end(self, turn, reason)
        yield TurnEnded(
            reason=reason, steps=turn.steps, usage=turn.usage, context_tokens=self.context_tokens()
        )


async def _step(agent: Agent, turn: Turn) -> AsyncIterator[AgentEvent]:
    """One model request and the tool calls it asks for; raises TurnOver to end the turn."""
    if turn.token.cancelled:
        raise TurnOver("cancelled", Cancelled(open_calls=[]))
    turn.steps += 1
    if turn.steps > agent.settings.max_steps:
        raise TurnOver("turn_limit", TurnLimit(steps=turn.steps - 1))
    last = turn.steps == agent.settings.max_steps
    agent_state(agent).start_trial()
    response: ModelResponse | None = None
    async for item in call_model(agent, turn, last_step=last):
        if isinstance(item, ModelResponse):
            response = item
        else:
            yield item
    assert response is not None
    if response.stop_reason == "pause_turn" and not response.tool_calls:
        return  # the provider paused a long answer: the next request continues it
    if not response.tool_calls:
        agent_state(agent).confirm()
        raise TurnOver("answer", FinalAnswer(text=response.text))
    turn.open_calls = response.tool_calls
    if last:
        close_open_calls(agent, turn, "not run: the turn's step limit was reached")
        raise TurnOver("turn_limit", TurnLimit(steps=turn.steps))
    async for event in run_tools(agent, turn, response.tool_calls):
        yield event


def _recover(agent: Agent, turn: Turn, fault: Exception) -> AgentEvent:
    """Roll back unconfirmed self-patches after a loop fault; re-raise when there are none."""
    if not agent_state(agent).unconfirmed:
        raise fault
    reason = fault_summary(fault)
    close_open_calls(agent, turn, f"interrupted: the agent loop failed ({reason})")
    undone = roll_back_unconfirmed(agent)
    if not undone:
        raise fault
    agent.session.track(agent.runtime, agent.settings.self_packages)
    agent.session.note("self_patch_rollback", reason, change_ids=undone)
    add_note(
        agent,
        f"[liveforge] Your self-patches {', '.join(undone)} broke the agent loop "
        f"({reason}) and were rolled back automatically. The session goes on without "
        "them; fix the cause before patching liveforge again.",
    )
    return SelfPatchesRolledBack(change_ids=undone, reason=reason)


def _track_unreported(agent: Agent) -> None:
    """Record changes made outside this turn's tool calls; the model hears of them next."""
    new = agent.session.track(agent.runtime, agent.settings.self_packages)
    agent_state(agent).unreported += [f"{c.id} {c.kind} {c.target} [{c.status.value}]" for c in new]


def _report_unreported(agent: Agent) -> None:
    state = agent_state(agent)
    if state.unreported:
        add_note(
            agent,
            "[liveforge] Changes made since your last step that no tool result "
            "reported (a cancelled call may have finished in the background): "
            f"{'; '.join(state.unreported)}. They are in effect now.",
        )
        state.unreported = []


def _begin(agent: Agent, user_input: str) -> Turn:
    _track_unreported(agent)
    number = agent.session.turn_started(user_input)
    turn = Turn(number=number)
    agent_state(agent).turn = turn
    agent.prompt.focus(user_input)  # memories relevant to this turn join the prompt
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
    _report_unreported(agent)
    return turn


def _end(agent: Agent, turn: Turn, reason: TurnEndReason) -> None:
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
    agent_state(agent).turn = None


@forwardpy.impl(Agent.cancel)
def cancel(self: Agent) -> None:
    turn = agent_state(self).turn
    if turn is not None:
        turn.token.cancel()


@forwardpy.impl(Agent.compact)
async def compact(self: Agent) -> Compacted | None:
    if agent_state(self).turn is not None:
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
    state = agent_state(self)
    if state.executor is not None:
        state.executor.shutdown(wait=False, cancel_futures=True)
        state.executor = None
    close_transcript(self.session)
    close = getattr(self.runtime, "close", None)
    if close is not None:
        close()  # the sandbox's template process; it restarts if the runtime is used again
    await self.provider.aclose()
