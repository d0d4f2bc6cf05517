"""The tool-call pairing rule, checked and repaired before a conversation is sent.

Both APIs reject (HTTP 400) a conversation where an assistant's tool call is not answered by
a tool result in the very next user message, or where a tool result answers no call of the
previous assistant message. An interrupted turn (Ctrl-C mid-tool, a crash, a resumed
session) leaves exactly that behind; `repair_pairing` closes it:

* a missing result gets a `ToolResultBlock(is_error=True)` saying the call was cancelled,
  placed in the next user message (inserted if the next message is not a user message);
* results in a user message come first, in call order (Anthropic requires them first);
* a result that answers no call is turned into a text block, so nothing is lost.

Example::

    messages = repair_pairing(messages)        # safe to send
    assert pairing_problems(messages) == []
"""

from __future__ import annotations

from liveforge.declarations.messages import ContentBlock, Message, TextBlock, ToolResultBlock

__all__ = ["CANCELLED_RESULT", "pairing_problems", "repair_pairing"]

CANCELLED_RESULT = "Cancelled: this tool call was interrupted before it returned a result."


def _expected(previous: Message | None) -> list[str]:
    if previous is None or previous.role != "assistant":
        return []
    return [call.id for call in previous.tool_calls]


def pairing_problems(messages: list[Message], *, allow_open_last: bool = True) -> list[str]:
    """Human-readable pairing violations, empty when the conversation is valid.

    A final assistant message with unanswered calls counts only if not `allow_open_last`.
    """
    problems: list[str] = []
    previous: Message | None = None
    for position, message in enumerate(messages):
        if message.role == "system":
            continue
        expected = _expected(previous)
        results = [b.tool_use_id for b in message.content if isinstance(b, ToolResultBlock)]
        answered = results if message.role == "user" else []
        for call_id in expected:
            if call_id not in answered:
                problems.append(f"message {position}: tool call {call_id} has no result")
        for result_id in results:
            if result_id not in expected:
                problems.append(f"message {position}: result for unknown call {result_id}")
        previous = message
    if not allow_open_last:
        problems.extend(f"end: tool call {c} has no result" for c in _expected(previous))
    return problems


def _repair_user(message: Message, expected: list[str], note: str) -> Message:
    results = {b.tool_use_id: b for b in message.content if isinstance(b, ToolResultBlock)}
    ordered: list[ContentBlock] = [
        results.get(call_id) or ToolResultBlock(tool_use_id=call_id, content=note, is_error=True)
        for call_id in expected
    ]
    rest: list[ContentBlock] = []
    for block in message.content:
        if isinstance(block, ToolResultBlock):
            if block.tool_use_id not in expected:
                rest.append(
                    TextBlock(text=f"[result of tool call {block.tool_use_id}]\n{block.content}")
                )
        else:
            rest.append(block)
    return Message(role="user", content=ordered + rest)


def repair_pairing(
    messages: list[Message], *, note: str = CANCELLED_RESULT, close_last: bool = False
) -> list[Message]:
    """A copy of `messages` that satisfies the pairing rule (see the module docstring).

    A final assistant message with tool calls is left open (the caller is about to run
    them) unless `close_last` is true, as when a turn was abandoned.
    """
    out: list[Message] = []
    previous: Message | None = None
    for message in messages:
        if message.role == "system":
            out.append(message)
            continue
        expected = _expected(previous)
        if message.role == "user":
            needs = expected or any(isinstance(b, ToolResultBlock) for b in message.content)
            message = _repair_user(message, expected, note) if needs else message
        elif expected:
            out.append(_repair_user(Message(role="user", content=[]), expected, note))
        out.append(message)
        previous = message
    if close_last and _expected(previous):
        out.append(_repair_user(Message(role="user", content=[]), _expected(previous), note))
    return out
