# mypy: disable-error-code="empty-body"
"""The agent: one user turn at a time, model -> tool calls -> results -> model ... -> answer.

`Agent.run(user_input)` drives one turn and yields typed events as they happen, for whoever
drives it (the chat front end, `run -p`, the demo, tests). Every turn ends with exactly one
`TurnEnded`, preceded by what ended it:

    TurnStarted
      TextDelta* / Thinking*                streamed model output
      ToolStarted -> ToolFinished           one pair per tool call (result summarised)
        PatchApplied*                       changes the call made (with their diff)
        VerificationResult*                 sandbox runs the call made
      SelfPatchesApplied                    queued self-patches took effect (step boundary)
      SelfPatchesRolledBack                 they broke the loop and were undone
      Compacted                             older turns were summarised
      Notice*                               retries, failover, restored changes, ...
    FinalAnswer | TurnLimit | Runaway | Cancelled | ErrorEvent
    TurnEnded(reason)

Example::

    agent = build_agent(".")                  # liveforge.agent_setup
    async for event in agent.run("Make area() exact"):
        if isinstance(event, TextDelta):
            print(event.text, end="")
    agent.cancel()                            # from a signal handler: stops the turn only
"""

from __future__ import annotations

import contextlib
from collections.abc import AsyncGenerator, AsyncIterator
from typing import TYPE_CHECKING

from pydantic import BaseModel, ConfigDict, Field

from liveforge.declarations.contract import Contract, fresh
from liveforge.declarations.events import (
    AgentEvent,
    Cancelled,
    Compacted,
    ErrorEvent,
    FinalAnswer,
    Notice,
    PatchApplied,
    Runaway,
    SelfPatchesApplied,
    SelfPatchesRolledBack,
    TextDelta,
    Thinking,
    ToolFinished,
    ToolStarted,
    TurnEnded,
    TurnEndReason,
    TurnLimit,
    TurnStarted,
    VerificationResult,
)
from liveforge.declarations.messages import Usage
from liveforge.declarations.turn import AgentState
from liveforge.kernel.history._safety import Rescue, SafetyNet

if TYPE_CHECKING:
    from liveforge.declarations.compaction import Compactor
    from liveforge.declarations.prompt import SystemPrompt
    from liveforge.declarations.provider import Provider
    from liveforge.declarations.session import Session
    from liveforge.declarations.toolbox import Toolbox
    from liveforge.kernel import Runtime

__all__ = [
    "Agent",
    "AgentEvent",
    "AgentSettings",
    "Cancelled",
    "Compacted",
    "ErrorEvent",
    "FinalAnswer",
    "Notice",
    "PatchApplied",
    "Runaway",
    "SelfPatchesApplied",
    "SelfPatchesRolledBack",
    "TextDelta",
    "Thinking",
    "ToolFinished",
    "ToolStarted",
    "TurnEndReason",
    "TurnEnded",
    "TurnLimit",
    "TurnStarted",
    "VerificationResult",
    "rolled_back_note",
]


class AgentSettings(BaseModel):
    """How the loop behaves. Context sizes live in `ContextSettings` (compaction)."""

    model_config = ConfigDict(frozen=True, extra="forbid")
    max_steps: int = Field(default=40, ge=1)
    """Model requests per user turn. The last one is asked to answer without tools."""
    runaway_repeats: int = Field(default=3, ge=2)
    """The same tool with the same arguments this many times (with no change to the program
    in between) stops the turn and tells the model."""
    tool_timeout: float = Field(default=120.0, gt=0)
    """Seconds one tool call may take (a tool's own `timeout` argument stretches it)."""
    max_tokens: int = Field(default=8192, gt=0)
    """Output token limit per model request."""
    temperature: float | None = None
    """Sampling temperature; None leaves the provider's default."""
    self_packages: tuple[str, ...] = ("liveforge.",)
    """Module prefixes that make up the agent itself. Patches to them are queued and take
    effect at the next step boundary, on probation until a turn that began with them ends
    cleanly (rolled back if the agent machinery fails first); persisting them requires
    `self_tests` to pass."""
    self_tests: tuple[str, ...] | None = None
    """pytest arguments for liveforge's own suite, run in the sandbox with the overlay before
    a self-patch is persisted. None: the `tests` folder next to the liveforge sources."""
    self_test_timeout: float = Field(default=1200.0, gt=0)
    """Seconds the self-test run may take."""


class Agent(Contract):
    """Runs turns of a session against a live runtime, through a provider and a toolbox.

    Construct with keyword arguments (all required): `runtime`, `provider`, `toolbox`,
    `session`, `compactor`, `prompt`, `settings`. `liveforge.agent_setup.build_agent` wires
    them from a project's configuration.

    `run` is not a replaceable body: it is the turn-boundary watchdog (below) around the
    replaceable `turn`, and an agent's runtime refuses patches to this module, so a
    self-patch that breaks the loop — its recovery code included — is rolled back and the
    session goes on.
    """

    runtime: Runtime
    provider: Provider
    toolbox: Toolbox
    session: Session
    compactor: Compactor
    prompt: SystemPrompt
    settings: AgentSettings
    state: AgentState = fresh(AgentState)
    """The current turn, the tool worker and the safety net: the bodies' typed state."""

    def run(self, user_input: str) -> AsyncIterator[AgentEvent]:
        """Run one turn for `user_input`; yields events, the last one `TurnEnded`.

        Raises `SessionBusy` when another front end holds the project's turn lock. A fault
        while self-patches are on probation rolls them back (`SelfPatchesRolledBack`) and the
        turn goes on, the model asked again (once per turn from here; a second fault here
        ends the turn with an error); other faults of liveforge itself propagate (after the
        conversation is made consistent); provider failures end the turn with an
        `ErrorEvent`. Closing the iterator early, or cancelling the task, leaves the session
        valid for the next turn.
        """
        return _guarded_turn(self, user_input)

    def safety_net(self) -> SafetyNet:
        """The kernel's record of this agent's self-patches (created on first use): each is
        on probation until a turn that began with it ends cleanly, and is rolled back when
        the agent machinery fails before that."""
        if self.state.net is None:
            self.state.net = SafetyNet(self.runtime, self.settings.self_packages)
        return self.state.net

    def tool_running(self) -> bool:
        """True while a tool call is still running in the worker (say, after a cancel)."""
        return self.state.tool_running()

    def turn(self, user_input: str, *, going_on: bool = False) -> AsyncGenerator[AgentEvent, None]:
        """The replaceable body of a turn, as `run` describes it; `run` watches it.

        `going_on`: the watchdog rolled back self-patches that broke this turn after its
        input was recorded; carry on with the conversation as it is (no new input)."""
        ...

    def settle(self, rescue: Rescue) -> None:
        """After the watchdog rolled back self-patches because a fault escaped `turn`:
        answer the open tool calls, record the rollback and the turn's end, and tell the
        model with its next request."""
        ...

    def cancel(self) -> None:
        """Stop the running turn (thread- and signal-safe); the session stays usable."""
        ...

    async def compact(self) -> Compacted | None:
        """Summarise older turns now (between turns); None when there is nothing to do."""
        ...

    def system_prompt(self) -> str:
        """The system prompt the next request will carry."""
        ...

    def context_tokens(self) -> int:
        """Estimated tokens of the next request's conversation (system prompt included)."""
        ...

    async def aclose(self) -> None:
        """Release the provider's connections and the tool worker."""
        ...


# -- the turn-boundary watchdog ---------------------------------------------------------------
#
# The agent may patch every @impl body of its loop, the code that recovers from a fault
# included. What must survive that lives where its patches cannot reach: the kernel's
# SafetyNet (it reads self-patches from the runtime's history and rolls them back) and this
# module (an agent's runtime protects liveforge.declarations by file location). Nothing of
# the watched bodies runs here until after a rollback, when they are back to what worked:
#
#   begin   the turn starts: changes made before it are not its doing
#   turn    events pass through; TurnEnded is held back
#   clean   the turn ended: its self-patches leave probation (and the transcript says so)
#   fault   an exception escaped the turn: roll back every self-patch on probation, let
#           the restored bodies settle the conversation and go on with the turn (once: a
#           fault after that ends it with an error); with nothing on probation the fault is
#           liveforge's own and propagates


def rolled_back_note(rescue: Rescue) -> str:
    """What the model is told after its self-patches were undone."""
    return (
        f"[liveforge] Your self-patches {', '.join(rescue.change_ids)} broke the agent loop "
        f"({rescue.reason}) and were rolled back automatically. The session goes on without "
        "them; fix the cause before patching liveforge again."
    ) + "".join(f"\nNote: {n}" for n in rescue.notes)


async def _guarded_turn(
    agent: Agent, user_input: str, going_on: bool | None = None
) -> AsyncIterator[AgentEvent]:
    """`Agent.run`: one turn of the replaceable loop, inside the safety net. `going_on` is
    set for the turn's continuation after a rescue (None: the turn as the user asked it)."""
    net = agent.safety_net()
    net.begin()
    ended: TurnEnded | None = None
    recorded = agent.session.turns
    try:
        body = agent.turn(user_input, going_on=True) if going_on else agent.turn(user_input)
        async with contextlib.aclosing(body) as events:
            async for event in events:
                if isinstance(event, TurnEnded):
                    ended = event
                else:
                    yield event
        if ended is None:
            raise RuntimeError("the turn's body returned without ending the turn")
        agent.session.confirm(net.due())
        net.confirm()
    except Exception as fault:
        last = going_on is not None or ended is not None  # continued once, or over anyway
        for event in _recover(agent, net, fault, ended, end=last):
            yield event
        if not last:  # the restored bodies go on with the turn: the model is asked again
            async for event in _guarded_turn(
                agent, user_input, going_on=agent.session.turns > recorded
            ):
                yield event
        return
    yield ended


def _recover(
    agent: Agent, net: SafetyNet, fault: Exception, ended: TurnEnded | None, *, end: bool
) -> list[AgentEvent]:
    """Roll back the suspects of a fault that escaped the turn, settle the conversation,
    and (with `end`) end the turn cleanly.

    First the self-patches on probation; if the agent machinery still fails (a confirmed
    self-patch in a path that only faults take, say), every self-patch of this process.
    A fault that no self-patch explains is raised."""
    error, undone = fault, list[str]()
    for everything in (False, True):
        rescue = net.rescue(error, everything=everything)
        if rescue is None:
            continue
        undone += rescue.change_ids
        try:
            return _rescued(agent, Rescue(tuple(undone), rescue.reason), error, ended, end)
        except Exception as again:
            error = again
    raise error


def _rescued(
    agent: Agent, rescue: Rescue, fault: Exception, ended: TurnEnded | None, end: bool
) -> list[AgentEvent]:
    """The events of a turn whose self-patches the watchdog rolled back: that, and with
    `end` the turn's end."""
    turn = agent.state.turn
    agent.settle(rescue)
    events: list[AgentEvent] = [
        SelfPatchesRolledBack(
            change_ids=list(rescue.change_ids), reason=rescue.reason, notes=list(rescue.notes)
        )
    ]
    if not end:
        return events
    if ended is None:
        events.append(
            ErrorEvent(
                error_type=type(fault).__name__,
                message=f"the agent loop failed and the turn was stopped: {rescue.reason}. "
                "The self-patches that broke it were rolled back; the session goes on.",
            )
        )
        ended = TurnEnded(
            reason="error",
            steps=turn.steps if turn else 0,
            usage=turn.usage if turn else Usage(),
            context_tokens=agent.context_tokens(),
        )
    return [*events, ended]
