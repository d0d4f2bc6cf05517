"""One model request of a turn: size the context, stream the answer, keep it.

Before the request the conversation is compacted when the `Compactor` says it must be.
After a `ContextOverflowError` (`_make_room`), the conversation is made to fit, in order,
until the request is within the window the provider stated (its own token counts, which
also recalibrate the compactor for the rest of the session), else well under the refused
size: the largest old tool outputs cut, then older turns summarised (the pinned facts kept),
then a message too large on its own cut with a note. The request is sent again only when it
became strictly smaller; nothing is ever appended to a retried request; when nothing can be
made smaller a `CompactionError` says why and what to do. The answer's text and thinking
stream out as events; the assembled response is appended to the session with its usage.
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
    ContentBlock,
    Done,
    FailedOver,
    Message,
    ModelRequest,
    ModelResponse,
    Retrying,
    TextBlock,
    ThinkingDelta,
    ToolCallDelta,
    ToolResultBlock,
    UsageUpdate,
)
from liveforge.declarations.messages import TextDelta as ModelText
from liveforge.declarations.provider_errors import (
    ContextOverflowError,
    StreamInterrupted,
)
from liveforge.declarations.turn import ModelProgress, Turn
from liveforge.impls import plugins
from liveforge.impls.compaction import cut_text

if TYPE_CHECKING:
    from liveforge.declarations.agent import Agent

__all__ = ["LAST_STEP_NOTE", "build_request", "call_model", "compact_now", "pinned_notes"]

LAST_STEP_NOTE = (
    "\n\nThis is the last step of the current turn: answer the user now, "
    "without calling tools, saying what is done and what is left."
)
_SHRINK_LIMITS = (4000, 1000)
"""Tool output characters kept after an overflow, tried in order before summarising."""
_LAST_CUT = 200
_MARGIN = 0.9
"""Share of the provider's window a retried request aims for (its count is not ours)."""
_UNKNOWN_TARGET = 0.7
"""Share of the refused request aimed for when the provider did not say its window."""
_OVERFLOW_RETRIES = 6
_PLAUSIBLE = (1.0, 8.0)
"""Characters per token a provider's count may imply; outside, it is not taken."""


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
    """Characters of what the request carries: messages (system prompt included) and tools."""
    messages = json.dumps([m.model_dump(mode="json") for m in request.messages])
    return len(messages) + len(json.dumps([t.model_dump(mode="json") for t in request.tools]))


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


async def _make_room(
    agent: Agent, turn: Turn, overflow: ContextOverflowError, refused: ModelRequest
) -> AsyncIterator[AgentEvent]:
    """After an overflow: make the next request fit (see the module docstring), or raise
    `CompactionError` saying why it cannot be made smaller and what the user can do."""
    chars = _size(refused)
    learned = _learn_window(agent, overflow, chars)
    if learned is not None:
        yield learned
    target = chars * _share(overflow)
    steps = [
        *(_cut_outputs(agent, limit) for limit in _SHRINK_LIMITS),  # the largest old outputs
        _summarise(agent, turn),  # then older turns, the pinned facts kept
        _cut_outputs(agent, _LAST_CUT),
        _cut_messages(agent, target),  # last, a message too large on its own
    ]
    for step in steps:
        if _size(build_request(agent)) <= target:
            return
        async for event in step:
            yield event
    if _size(build_request(agent)) >= chars:
        raise CompactionError(_why_not_smaller(agent, overflow), window=overflow.limit or 0)


def _counts(overflow: ContextOverflowError) -> tuple[int, int] | None:
    """(the refused request's tokens, the window) by the provider's count, if it said."""
    tokens, limit = overflow.tokens, overflow.limit
    return (tokens, limit) if tokens and limit and limit < tokens else None


def _share(overflow: ContextOverflowError) -> float:
    """The share of the refused request's size that a retry aims for."""
    counts = _counts(overflow)
    return counts[1] / counts[0] * _MARGIN if counts else _UNKNOWN_TARGET


def _learn_window(agent: Agent, overflow: ContextOverflowError, chars: int) -> Notice | None:
    """Take the provider's window and its characters per token (measured on the refused
    request) for every later estimate of this session; the notice that says so."""
    counts = _counts(overflow)
    if counts is None:
        return None
    tokens, limit = counts
    settings = agent.compactor.settings
    measured = round(chars / tokens, 2)
    if not _PLAUSIBLE[0] <= measured <= _PLAUSIBLE[1]:
        measured = settings.chars_per_token  # a count that cannot be this request's
    if settings.window <= limit and measured == settings.chars_per_token:
        return None
    agent.compactor.settings = settings.model_copy(
        update={
            "window": min(settings.window, limit),
            "reserve": min(settings.reserve, limit // 4),
            "chars_per_token": measured,
        }
    )
    return Notice(
        kind="context",
        text=f"the model's context window is {limit:,} tokens by the provider's count "
        f"(configured: {settings.window:,}), at {measured:g} characters per token; this "
        "session compacts for that from now on",
    )


async def _cut_outputs(agent: Agent, limit: int) -> AsyncIterator[AgentEvent]:
    """Cut the tool outputs longer than `limit` characters (the newest results kept)."""
    messages, cut = agent.compactor.shrink(list(agent.session.messages), limit)
    if cut:
        tokens = [agent.compactor.estimate(m) for m in messages]
        agent.session.replace_messages(messages, tokens, {"truncated_outputs": cut})
        yield Notice(
            kind="context",
            text=f"cut {cut} long tool outputs to {limit} characters to fit the context window",
        )


async def _summarise(agent: Agent, turn: Turn) -> AsyncIterator[AgentEvent]:
    """Summarise older turns (kept only when that makes the conversation smaller)."""
    event = await compact_now(agent, turn, force=True)
    if event is not None:
        yield event


async def _cut_messages(agent: Agent, target: float) -> AsyncIterator[AgentEvent]:
    """Cut the largest texts of the conversation (the user's input too, when it alone is
    too large for the window), each with a note saying so, until it fits `target`."""
    excess = _size(build_request(agent)) - target
    messages = list(agent.session.messages)
    blocks = sorted(
        ((len(_text_of(b)), i, j) for i, m in enumerate(messages) for j, b in enumerate(m.content)),
        reverse=True,
    )
    cut = 0
    for length, i, j in blocks:
        if excess <= 0 or length <= _LAST_CUT:
            break
        keep = max(_LAST_CUT, int(length - excess))
        content = list(messages[i].content)
        content[j] = _cut_block(content[j], keep)
        messages[i] = Message(role=messages[i].role, content=content)
        excess -= length - len(_text_of(content[j]))
        cut += 1
    if cut:
        tokens = [agent.compactor.estimate(m) for m in messages]
        agent.session.replace_messages(messages, tokens, {"truncated_messages": cut})
        yield Notice(
            kind="context",
            text=f"cut {cut} message parts too large for the context window, each with a note",
        )


def _text_of(block: ContentBlock) -> str:
    if isinstance(block, TextBlock):
        return block.text
    return block.content if isinstance(block, ToolResultBlock) else ""


def _cut_block(block: ContentBlock, keep: int) -> ContentBlock:
    what = "message (too large for the context window)"
    if isinstance(block, TextBlock):
        return block.model_copy(update={"text": cut_text(block.text, keep, what)})
    assert isinstance(block, ToolResultBlock)
    return block.model_copy(update={"content": cut_text(block.content, keep, what)})


def _why_not_smaller(agent: Agent, overflow: ContextOverflowError) -> str:
    """Why a refused request cannot be made smaller, and what the user can do."""
    specs = agent.toolbox.specs()
    fixed = _size(ModelRequest(messages=[Message.system(agent.prompt.render())], tools=specs))
    per_token = agent.compactor.settings.chars_per_token
    window = f"{overflow.limit:,}-token" if overflow.limit else "context"
    return (
        "the conversation overflows the model's context window and cannot be made smaller: "
        f"the system prompt and the {len(specs)} tool definitions alone take about "
        f"{fixed / per_token:,.0f} tokens of the model's {window} window, and the "
        "conversation is cut and summarised as far as it goes. Use a model with a larger "
        "window (--model), fewer tools (--profile minimal), or shorter instruction files "
        "and skills; or start a new session."
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
    for _ in range(_OVERFLOW_RETRIES):
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
            async for room_event in _make_room(agent, turn, overflow, request):
                yield room_event
    raise CompactionError(
        f"the provider refused {_OVERFLOW_RETRIES} ever smaller requests as too long for its "
        "context window; start a new session or use a model with a larger window."
    )


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
