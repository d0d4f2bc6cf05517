"""`Compactor` bodies: estimates, bounded tool results, and summarising old turns.

The conversation is cut before an assistant message, so the kept part starts with the
model's turn and every tool call in it keeps its result; the summary goes into a new first
user message together with the pinned texts (unpersisted changes) and the user's recent
instructions, verbatim. The older part is rendered as plain text for the summarisation
request, which is sized before it is sent and made strictly smaller after an overflow. A
result no smaller than the conversation it would replace is dropped: compaction never grows
the context.
"""

from __future__ import annotations

import json

import forwardpy

from liveforge.declarations.compaction import Compaction, CompactionError, Compactor
from liveforge.declarations.messages import (
    ContentBlock,
    Message,
    ModelRequest,
    TextBlock,
    ToolResultBlock,
    ToolUseBlock,
    Usage,
)
from liveforge.declarations.provider import CancelToken, Provider
from liveforge.declarations.provider_errors import ContextOverflowError

__all__ = ["SUMMARY_INSTRUCTIONS", "cut_text", "render_transcript"]

SUMMARY_INSTRUCTIONS = (
    "You compact the conversation of a coding agent that works on a live Python program. "
    "Summarise the transcript below for the agent itself, so it can continue without it. "
    "Keep: the user's goals and every decision or preference they stated; dotted paths, "
    "file names, change ids and run ids mentioned; what was patched, verified, tested and "
    "persisted, and what failed and why; open questions and the next step. Be dense; use "
    "short bullet points; do not invent anything."
)
_OUTPUT_LIMITS = (2000, 500, 120, 0)
"""Tool output characters kept in the summarisation transcript, tried in order."""
_ATTEMPTS = 4


def cut_text(text: str, limit: int, what: str = "tool result") -> str:
    """`text` bounded to about `limit` characters: head and tail kept, a marker between."""
    if len(text) <= limit:
        return text
    head, tail = int(limit * 0.75), int(limit * 0.2)
    left_out = text[head : len(text) - tail]
    marker = (
        f"\n[... {len(left_out)} characters ({left_out.count(chr(10))} lines) of this "
        f"{what} cut; ask for a narrower part ...]\n"
    )
    return text[:head] + marker + (text[len(text) - tail :] if tail else "")


@forwardpy.impl(Compactor.estimate)
def estimate(self: Compactor, message: Message) -> int:
    size = 0
    for block in message.content:
        if isinstance(block, TextBlock):
            size += len(block.text)
        elif isinstance(block, ToolResultBlock):
            size += len(block.content) + 40
        else:
            size += len(json.dumps(block.model_dump(mode="json")))
    return int(size / self.settings.chars_per_token) + 4


@forwardpy.impl(Compactor.needs_compaction)
def needs_compaction(self: Compactor, tokens: int) -> bool:
    return tokens > self.settings.threshold * self.settings.usable


@forwardpy.impl(Compactor.clip_result)
def clip_result(self: Compactor, text: str) -> str:
    return cut_text(text, self.settings.tool_result_limit)


@forwardpy.impl(Compactor.shrink)
def shrink(self: Compactor, messages: list[Message], limit: int) -> tuple[list[Message], int]:
    out, cut = [], 0
    for position, message in enumerate(messages):
        keep_whole = position == len(messages) - 1 and limit > 0
        blocks: list[ContentBlock] = []
        for block in message.content:
            if isinstance(block, ToolResultBlock) and len(block.content) > limit and not keep_whole:
                block = block.model_copy(update={"content": cut_text(block.content, limit)})
                cut += 1
            blocks.append(block)
        out.append(Message(role=message.role, content=blocks))
    return out, cut


def render_transcript(messages: list[Message], output_limit: int) -> str:
    """Messages as plain text for the summariser; tool outputs cut to `output_limit`."""
    lines = []
    for message in messages:
        lines.append(f"## {message.role}")
        for block in message.content:
            if isinstance(block, TextBlock):
                lines.append(block.text)
            elif isinstance(block, ToolUseBlock):
                args = cut_text(json.dumps(block.input), max(output_limit, 200), "argument")
                lines.append(f"-> {block.name}({args}) [{block.id}]")
            elif isinstance(block, ToolResultBlock):
                flag = " (error)" if block.is_error else ""
                body = (
                    cut_text(block.content, output_limit)
                    if output_limit
                    else f"[{len(block.content)} characters left out]"
                )
                lines.append(f"<- result{flag} [{block.tool_use_id}]: {body}")
    return "\n".join(lines)


def _cut_index(self: Compactor, messages: list[Message], force: bool) -> int | None:
    """Where the kept part starts: an assistant message, the kept part within budget."""
    budget = self.settings.keep_fraction * self.settings.usable
    candidates = [i for i, m in enumerate(messages) if m.role == "assistant" and i >= 1]
    if not candidates:
        return None
    kept, chosen = 0, candidates[-1]
    sizes = [self.estimate(m) for m in messages]
    for index in range(len(messages) - 1, 0, -1):
        kept += sizes[index]
        if kept > budget:
            break
        if index in candidates:
            chosen = index
    if chosen < 2 and not force:
        return None
    return chosen


_NOT_INSTRUCTIONS = ("[Conversation summary", "[liveforge]")
"""User-role texts that liveforge wrote (summaries, notes to the model), not the user."""


def _instructions(messages: list[Message], count: int) -> list[str]:
    """The user's last `count` inputs, one per text block (an input added to an unanswered
    one is its own block), without liveforge's own notes."""
    texts = [
        b.text
        for m in messages
        if m.role == "user"
        for b in m.content
        if isinstance(b, TextBlock) and b.text.strip() and not b.text.startswith(_NOT_INSTRUCTIONS)
    ]
    return [cut_text(t, 4000, "instruction") for t in texts[-count:]] if count else []


def _request(self: Compactor, old: list[Message], budget: int) -> tuple[ModelRequest, int]:
    """The summarisation request fitting `budget` tokens; old tool outputs cut first, then
    the oldest messages left out."""
    chars = budget * self.settings.chars_per_token
    for limit in _OUTPUT_LIMITS:
        text = render_transcript(old, limit)
        if len(text) <= chars:
            break
    skipped = 0
    while len(text) > chars and skipped < len(old) - 1:
        skipped += 1
        text = f"[{skipped} earliest messages left out]\n" + render_transcript(old[skipped:], 0)
    if len(text) > chars:
        text = cut_text(text, int(chars), "transcript")
    messages = [Message.system(SUMMARY_INSTRUCTIONS), Message.user(text)]
    request = ModelRequest(messages=messages, max_tokens=self.settings.summary_tokens)
    return request, len(text)


async def _summarise(
    self: Compactor, old: list[Message], provider: Provider, cancel: CancelToken | None
) -> tuple[str, Usage, int] | None:
    """The summary, its usage and the requests sent; None when cancelled before it was
    complete (a cut-off summary must never replace the conversation)."""
    budget = self.settings.usable - self.settings.summary_tokens - 200
    if budget <= 0:
        raise CompactionError(
            "the context window is too small to hold a summary request; configure a larger window.",
            window=self.settings.window,
        )
    usage, last_size = Usage(), None
    for attempt in range(1, _ATTEMPTS + 1):
        request, size = _request(self, old, budget)
        if last_size is not None and size >= last_size:
            break
        last_size = size
        try:
            response = await provider.complete(request, cancel=cancel)
        except ContextOverflowError:
            budget = int(size * 0.6 / self.settings.chars_per_token)
            continue
        if response.incomplete:
            return None
        return response.text.strip(), usage + response.usage, attempt
    raise CompactionError(
        "the summarisation request kept overflowing the context window "
        "even after cutting it down; start a new session or configure a "
        "model with a larger window.",
        window=self.settings.window,
    )


def _summary_message(
    summary: str, summarised: int, pinned: list[str], instructions: list[str]
) -> Message:
    parts = [
        f"[Conversation summary: {summarised} earlier messages were summarised]",
        summary or "(the summariser returned nothing)",
    ]
    parts += [p for p in pinned if p.strip()]
    if instructions:
        parts.append(
            "The user's most recent instructions, verbatim:\n"
            + "\n".join(f"- {t}" for t in instructions)
        )
    return Message.user("\n\n".join(parts))


@forwardpy.impl(Compactor.compact)
async def compact(
    self: Compactor,
    messages: list[Message],
    provider: Provider,
    *,
    pinned: list[str],
    cancel: CancelToken | None = None,
    force: bool = False,
) -> Compaction | None:
    cut = _cut_index(self, messages, force)
    if cut is None:
        return None
    before = sum(self.estimate(m) for m in messages)
    old, kept = messages[:cut], messages[cut:]
    summarised = await _summarise(self, old, provider, cancel)
    if summarised is None:
        return None
    summary, usage, requests = summarised
    head = _summary_message(
        summary, len(old), pinned, _instructions(old, self.settings.keep_instructions)
    )
    new = [head, *kept]
    truncated = 0
    if self.needs_compaction(sum(self.estimate(m) for m in new)):
        new, truncated = self.shrink(new, max(500, self.settings.tool_result_limit // 8))
    tokens = [self.estimate(m) for m in new]
    if sum(tokens) >= before:
        return None  # a summary no shorter than what it replaces: compaction never grows
    return Compaction(
        messages=new,
        tokens=tokens,
        summary=summary,
        tokens_before=before,
        tokens_after=sum(tokens),
        messages_summarised=len(old),
        outputs_truncated=truncated,
        usage=usage,
        requests=requests,
    )
