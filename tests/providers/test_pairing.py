"""The tool-call pairing rule: problems are found and repaired without losing anything."""

from __future__ import annotations

from provider_support import complete, provider, run

from liveforge.declarations.messages import (
    Message,
    ModelRequest,
    TextBlock,
    ToolResultBlock,
    ToolUseBlock,
)
from liveforge.impls.providers.pairing import (
    CANCELLED_RESULT,
    pairing_problems,
    repair_pairing,
)
from liveforge.testing import FakeProvider, reply


def _calls(*ids: str) -> Message:
    return Message(
        role="assistant",
        content=[TextBlock(text="calling")] + [ToolUseBlock(id=i, name="t", input={}) for i in ids],
    )


def _results(*ids: str) -> Message:
    return Message.tool_results([ToolResultBlock(tool_use_id=i, content=f"r{i}") for i in ids])


def test_valid_conversation_has_no_problems_and_is_unchanged() -> None:
    """Every call answered in the next user message: nothing to report or change."""
    messages = [Message.user("go"), _calls("a", "b"), _results("b", "a"), Message.user("ok")]
    assert pairing_problems(messages) == []
    repaired = repair_pairing(messages)
    assert [c.tool_use_id for c in repaired[2].content] == ["a", "b"]  # call order
    assert repaired[3] == messages[3]


def test_unanswered_call_gets_a_cancelled_error_result() -> None:
    """An interrupted call is answered with is_error=True 'cancelled' in the next message."""
    messages = [
        Message.user("go"),
        _calls("a", "b"),
        Message(
            role="user",
            content=[ToolResultBlock(tool_use_id="a", content="ra"), TextBlock(text="stop")],
        ),
    ]
    assert pairing_problems(messages) == ["message 2: tool call b has no result"]
    repaired = repair_pairing(messages)
    assert pairing_problems(repaired) == []
    blocks = repaired[2].content
    assert blocks[1] == ToolResultBlock(tool_use_id="b", content=CANCELLED_RESULT, is_error=True)
    assert blocks[2] == TextBlock(text="stop")


def test_assistant_followed_by_assistant_gets_a_results_message_inserted() -> None:
    """Two assistant turns in a row: a user message with results is inserted between."""
    messages = [Message.user("go"), _calls("a"), Message.assistant("more")]
    repaired = repair_pairing(messages)
    assert [m.role for m in repaired] == ["user", "assistant", "user", "assistant"]
    assert pairing_problems(repaired) == []


def test_orphan_results_become_text_so_nothing_is_lost() -> None:
    """A result for no call turns into a text block carrying its content."""
    messages = [Message.user("go"), Message.assistant("no calls"), _results("zz")]
    assert pairing_problems(messages) == ["message 2: result for unknown call zz"]
    repaired = repair_pairing(messages)
    assert repaired[2].content == [TextBlock(text="[result of tool call zz]\nrzz")]


def test_open_last_turn_is_kept_unless_closing_is_asked() -> None:
    """A final assistant turn with calls stays open by default, closed with close_last."""
    messages = [Message.user("go"), _calls("a")]
    assert repair_pairing(messages) == messages
    assert pairing_problems(messages, allow_open_last=False) == ["end: tool call a has no result"]
    closed = repair_pairing(messages, close_last=True)
    assert pairing_problems(closed, allow_open_last=False) == []


def test_repaired_conversation_is_accepted_on_the_wire(fake: FakeProvider) -> None:
    """A repaired interrupted conversation is sent with the cancelled result in place."""
    fake.add(reply.text("fine"))
    messages = repair_pairing([Message.user("go"), _calls("a"), Message.user("again")])
    run(complete(provider(fake.route("anthropic")), ModelRequest(messages=messages)))
    sent = fake.requests[-1].body["messages"]
    assert sent[2]["content"][0]["tool_use_id"] == "a"
    assert sent[2]["content"][0]["is_error"] is True
