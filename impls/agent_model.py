"""One model request of a turn: size the context, stream the answer, keep it.

Before the request the conversation is compacted when the `Compactor` says it must be.
After a `ContextOverflowError` the conversation is compacted (or its tool outputs cut) and
the request is sent again only if it became strictly smaller; nothing is ever appended to a
retried request. The answer's text and thinking stream out as events; the assembled
response is appended to the session with its reported usage.
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import AsyncIterator
from typing import TYPE_CHECKING

from liveforge.declarations.agent import (
    AgentEvent,
    Compacted,
    Notice,
    TextDelta,
    Thinking,
)
from liveforge.declarations.compaction import CompactionError
from liveforge.declarations.messages import (
    Done,
    FailedOver,
    Message,
    ModelRequest,
    ModelResponse,
    Retrying,
    TextBlock,
    ThinkingDelta,
    ToolCallDelta,
    UsageUpdate,
)
from liveforge.declarations.messages import TextDelta as ModelText
from liveforge.declarations.provider_errors import (
    ContextOverflowError,
    StreamInterrupted,
)
from liveforge.declarations.turn import ModelProgress, Turn
from liveforge.impls import plugins

if TYPE_CHECKING:
    from liveforge.declarations.agent import Agent

__all__ = ["LAST_STEP_NOTE", "build_request", "call_model", "compact_now", "pinned_notes"]

LAST_STEP_NOTE = (
    "\n\nThis is the last step of the current turn: answer the user now, "
    "without calling tools, saying what is done and what is left."
)
_SHRINK_LIMITS = (4000, 1000, 200)


def build_request(agent: Agent, *, last_step: bool = False) -> ModelRequest:
    """The request for the session's conversation as it is now."""
    system = agent.prompt.render() + (LAST_STEP_NOTE if last_step else "")
    settings = agent.settings
    return ModelRequest(
        messages=[Message.system(system), *agent.session.messages],
        tools=agent.toolbox.specs(),
        max_tokens=settings.max_tokens,
        temperature=settings.temperature,
        tool_choice="none" if last_step else "auto",
    )


def _size(request: ModelRequest) -> int:
    return len(json.dumps([m.model_dump(mode="json") for m in request.messages]))


def pinned_notes(agent: Agent) -> list[str]:
    """Texts compaction must keep verbatim: the unpersisted changes."""
    changes = agent.session.unpersisted()
    if not changes:
        return []
    lines = [f"- {c.change_id} {c.kind} {c.target} [{c.status}]" for c in changes]
    return ["Unpersisted changes in memory (persist or roll back):\n" + "\n".join(lines)]


async def compact_now(agent: Agent, turn: Turn | None, *, force: bool) -> Compacted | None:
    """Compact the session's conversation; None when there was nothing to summarise."""
    result = await agent.compactor.compact(
        list(agent.session.messages),
        agent.provider,
        pinned=pinned_notes(agent),
        cancel=turn.token if turn else None,
        force=force,
    )
    if result is None:
        return None
    agent.session.replace_messages(
        result.messages,
        result.tokens,
        {
            "summary": result.summary,
            "tokens_before": result.tokens_before,
            "summarised": result.messages_summarised,
        },
    )
    if turn is not None:
        turn.usage = turn.usage + result.usage
    plugins.agent_compacted(agent, result.summary, result.tokens_before, result.tokens_after)
    return Compacted(
        tokens_before=result.tokens_before,
        tokens_after=result.tokens_after,
        messages_summarised=result.messages_summarised,
        outputs_truncated=result.outputs_truncated,
    )


async def _make_room(agent: Agent, turn: Turn, previous: int) -> AsyncIterator[AgentEvent]:
    """After an overflow: compact, else cut tool outputs, until the request is smaller."""
    event = await compact_now(agent, turn, force=True)
    if event is not None:
        yield event
    for limit in _SHRINK_LIMITS:
        if _size(build_request(agent)) < previous:
            return
        messages, cut = agent.compactor.shrink(list(agent.session.messages), limit)
        if cut:
            tokens = [agent.compactor.estimate(m) for m in messages]
            agent.session.replace_messages(messages, tokens, {"truncated_outputs": cut})
            yield Notice(
                kind="context",
                text=f"cut {cut} long tool outputs to {limit} characters to fit the context window",
            )
    if _size(build_request(agent)) >= previous:
        raise CompactionError(
            "the conversation overflows the context window and cannot be "
            "made smaller; start a new session or use a larger model."
        )


async def call_model(
    agent: Agent, turn: Turn, *, last_step: bool
) -> AsyncIterator[AgentEvent | ModelResponse]:
    """Stream one request; the last item yielded is the response (already in the session).

    Provider and compaction failures propagate: the loop's `ending` decides what they mean.
    A cancelled answer keeps its text only, and the turn's token says it was cancelled."""
    for source in agent.toolbox.sources:  # MCP servers start at the first request, in a
        await asyncio.to_thread(source.start)  # thread: other sessions' streams go on
    if agent.compactor.needs_compaction(agent.context_tokens()):
        event = await compact_now(agent, turn, force=False)
        if event is not None:
            yield event
    while True:
        request = plugins.agent_before_request(agent, build_request(agent, last_step=last_step))
        for notice in plugins.notices(agent):
            yield notice
        for source in agent.toolbox.sources:  # an MCP server that failed, said once
            for line in source.news():
                yield Notice(kind="tools", text=line)
        try:
            async for item in _stream(agent, turn, request):
                if isinstance(item, ModelResponse):  # the last item: hooks see it first
                    plugins.agent_after_response(agent, item)
                    for notice in plugins.notices(agent):
                        yield notice
                yield item
            return
        except ContextOverflowError as overflow:
            yield Notice(kind="context", text=f"context window exceeded: {overflow.detail}")
            async for room_event in _make_room(agent, turn, _size(request)):
                yield room_event


async def _stream(
    agent: Agent, turn: Turn, request: ModelRequest
) -> AsyncIterator[AgentEvent | ModelResponse]:
    response: ModelResponse | None = None
    progress = turn.model = ModelProgress(agent.compactor.settings.chars_per_token)
    try:
        async for event in agent.provider.stream(request, cancel=turn.token):
            if isinstance(event, ModelText):
                progress.chars += len(event.text)
                yield TextDelta(text=event.text)
            elif isinstance(event, ThinkingDelta):
                progress.chars += len(event.thinking)
                yield Thinking(text=event.thinking)
            elif isinstance(event, ToolCallDelta):
                progress.chars += len(event.partial_json)
            elif isinstance(event, UsageUpdate):
                progress.reported = event.usage
            elif isinstance(event, Retrying):
                yield Notice(
                    kind="retrying",
                    text=f"attempt {event.attempt} failed "
                    f"({event.error}); retrying in {event.delay:.1f}s",
                )
            elif isinstance(event, FailedOver):
                yield Notice(
                    kind="failover", text=f"{event.from_model} -> {event.to_model}: {event.reason}"
                )
            elif isinstance(event, Done):
                response = event.response
    except StreamInterrupted as exc:
        turn.usage = turn.usage + exc.partial.usage
        _keep_text(agent, exc.partial.text, "[the answer was cut off by a provider error]")
        raise
    finally:
        turn.model = None
    assert response is not None, "a provider stream ended without its Done event"
    yield _keep(agent, turn, response)


def _keep(agent: Agent, turn: Turn, response: ModelResponse) -> ModelResponse:
    """Append the answer to the session; a cancelled one keeps its text only."""
    turn.usage = turn.usage + response.usage
    content = [b for b in response.content if not (isinstance(b, TextBlock) and not b.text)]
    if response.stop_reason == "cancelled" or turn.token.cancelled:
        turn.token.cancel()
        _keep_text(agent, response.text, "[interrupted by the user]")
        return response
    message = Message(role="assistant", content=content or [TextBlock(text="(no answer)")])
    tokens = response.usage.output_tokens or agent.compactor.estimate(message)
    agent.session.append(message, tokens=tokens)
    if response.usage.total_input_tokens:
        agent.session.record_usage(response.usage)
    return response


def _keep_text(agent: Agent, text: str, note: str) -> None:
    """Append an incomplete answer's text (its tool calls dropped), marked with `note`."""
    text = text.strip()
    message = Message.assistant(f"{text}\n{note}" if text else note)
    agent.session.append(message, tokens=agent.compactor.estimate(message))
