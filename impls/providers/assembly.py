"""Assembles a `ModelResponse` from streamed fragments, emitting neutral stream events.

Every wire decoder feeds it: text and thinking pieces, tool calls started then filled with
JSON fragments (joined and parsed when the call ends), whole blocks, usage. Blocks keep the
order in which they started; each gets a position that is the `index` of its events.
A decoder names blocks by its own keys (Anthropic: the block index; OpenAI: "text",
"reasoning" or the tool-call index; Gemini: part kind and position).
"""

from __future__ import annotations

import json
from collections.abc import Hashable
from typing import Any

from liveforge.declarations.messages import (
    ContentBlock,
    ModelResponse,
    StopReason,
    TextBlock,
    TextDelta,
    ThinkingBlock,
    ThinkingDelta,
    ToolCallDelta,
    ToolCallEnd,
    ToolCallStart,
    ToolUseBlock,
    Usage,
)
from liveforge.declarations.provider_errors import MalformedResponse

__all__ = ["ResponseBuilder"]

# The stream hot path builds one of these per SSE event. Calling the model's validator with
# a dict gives the same validated object as the constructor, without the constructor's
# Python-level keyword handling (about a third of its cost).
_text_delta = TextDelta.__pydantic_validator__.validate_python
_thinking_delta = ThinkingDelta.__pydantic_validator__.validate_python
_tool_call_delta = ToolCallDelta.__pydantic_validator__.validate_python


class _Open:
    """A block being assembled."""

    __slots__ = ("done", "id", "kind", "name", "parts", "position", "signature", "whole")

    def __init__(self, kind: str, position: int) -> None:
        self.kind = kind
        self.position = position
        self.parts: list[str] = []
        self.id = ""
        self.name = ""
        self.signature: str | None = None
        self.whole: ContentBlock | None = None
        self.done = False


class ResponseBuilder:
    """Accumulates one response; methods return the stream event to deliver (or None)."""

    def __init__(self, *, provider: str, model: str) -> None:
        self.provider = provider
        self.model = model
        self.id = ""
        self.usage = Usage()
        self.has_content = False
        self._blocks: dict[Hashable, _Open] = {}

    def _open(self, key: Hashable, kind: str) -> _Open:
        block = self._blocks.get(key)
        if block is None:
            block = self._blocks[key] = _Open(kind, len(self._blocks))
        return block

    def text(self, key: Hashable, text: str) -> TextDelta:
        """Append text to block `key` (opened as a text block on first use)."""
        block = self._blocks.get(key) or self._open(key, "text")
        event: TextDelta = _text_delta({"index": block.position, "text": text})
        block.parts.append(text)
        if text:
            self.has_content = True
        return event

    def thinking(self, key: Hashable, text: str) -> ThinkingDelta:
        """Append thinking to block `key`."""
        block = self._blocks.get(key) or self._open(key, "thinking")
        event: ThinkingDelta = _thinking_delta({"index": block.position, "thinking": text})
        block.parts.append(text)
        if text:
            self.has_content = True
        return event

    def signature(self, key: Hashable, signature: str) -> None:
        """Set (or extend) the signature of thinking block (or started tool call) `key`."""
        block = self._open(key, "thinking")
        block.signature = (block.signature or "") + signature

    def whole_block(self, key: Hashable, content: ContentBlock) -> None:
        """Add a block that arrives complete (e.g. redacted thinking)."""
        block = self._open(key, "whole")
        block.whole = content
        block.done = True
        self.has_content = True

    def tool_start(self, key: Hashable, call_id: str, name: str) -> ToolCallStart:
        """Open tool call `key`."""
        block = self._open(key, "tool")
        block.id, block.name = call_id, name
        self.has_content = True
        return ToolCallStart(index=block.position, id=call_id, name=name)

    def is_open(self, key: Hashable) -> bool:
        """True if block `key` was started."""
        return key in self._blocks

    def tool_json(self, key: Hashable, fragment: str) -> ToolCallDelta:
        """Append a fragment of tool call `key`'s JSON arguments."""
        block = self._blocks[key]
        event: ToolCallDelta = _tool_call_delta({"index": block.position, "partial_json": fragment})
        block.parts.append(fragment)
        return event

    def close(self, key: Hashable) -> ToolCallEnd | None:
        """Close block `key`; for a tool call, parse its input and return ToolCallEnd."""
        block = self._blocks.get(key)
        if block is None or block.done:
            return None
        block.done = True
        if block.kind != "tool":
            return None
        block.whole = ToolUseBlock(
            id=block.id, name=block.name, input=_parse_input(block), signature=block.signature
        )
        return ToolCallEnd(index=block.position, call=block.whole)

    def close_all(self) -> list[ToolCallEnd]:
        """Close every open block (end of message); return the tool-call ends."""
        ends = [self.close(key) for key in list(self._blocks)]
        return [end for end in ends if end is not None]

    def finish(
        self, *, stop_reason: StopReason, raw_stop_reason: str | None, incomplete: bool = False
    ) -> ModelResponse:
        """The assembled response. Unfinished tool calls are dropped when `incomplete`."""
        content: list[ContentBlock] = []
        for block in self._blocks.values():
            item = self._render(block, incomplete)
            if item is not None:
                content.append(item)
        return ModelResponse(
            content=content,
            stop_reason="cancelled" if incomplete else stop_reason,
            raw_stop_reason=raw_stop_reason,
            usage=self.usage,
            model=self.model,
            provider=self.provider,
            id=self.id,
            incomplete=incomplete,
        )

    @staticmethod
    def _render(block: _Open, incomplete: bool) -> ContentBlock | None:
        if block.kind == "text":
            return TextBlock(text="".join(block.parts))
        if block.kind == "thinking":
            return ThinkingBlock(thinking="".join(block.parts), signature=block.signature)
        if block.kind == "tool" and not block.done:
            if incomplete:
                return None
            raise MalformedResponse(f"tool call {block.name!r} was never closed")
        return block.whole


def _parse_input(block: _Open) -> dict[str, Any]:
    text = "".join(block.parts).strip()
    if not text:
        return {}
    try:
        value = json.loads(text)
    except json.JSONDecodeError as exc:
        raise MalformedResponse(
            f"tool call {block.name!r} arguments are not valid JSON ({exc.msg}): {text[:200]!r}"
        ) from None
    if not isinstance(value, dict):
        raise MalformedResponse(f"tool call {block.name!r} arguments are not a JSON object")
    return value
