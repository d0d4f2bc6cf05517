"""Context overflow always recovers or says exactly why not, against a fake provider with a
hard token limit that answers "prompt is too long" like the real APIs: every re-sent request
is smaller than the refused one and within the limit, compaction really shrinks (measured
by the provider's own count), and `/compact` never grows the context."""

from __future__ import annotations

import asyncio
import json

import pytest
from agent_support import make_agent, of_type, run_turn

from liveforge.declarations.tool_settings import ToolSettings
from liveforge.testing import FakeProvider, reply

LIVE_TOOLS = ToolSettings(profile="live")
INSTRUCTION = "Always use math.pi, never literals."


def _summariser(text: str = "SUMMARY: the user wants math.pi; outputs were long."):
    """An `answer` for the fake: summarisation requests get `text`, others the script."""

    def answer(body: dict):
        return reply.text(text) if _summary_body(body) else None

    return answer


def _tokens(request) -> int:
    """The fake's own count of a request (its size in bytes / 4)."""
    return len(json.dumps(request.body)) // 4


def _summary_body(body: dict) -> bool:
    """A summarisation request, told by its system prompt (wherever each API puts it)."""
    system = json.dumps([body.get("system"), body.get("systemInstruction")])
    system += json.dumps(body.get("messages", [])[:1])
    return "You compact" in system


def _is_summary(request) -> bool:
    return _summary_body(request.body)


@pytest.fixture(params=["anthropic", "openai", "gemini"])
def protocol(request):
    return request.param


def test_twenty_turns_of_large_tool_results_against_a_hard_limit(project, protocol):
    """Twenty turns, each with a ~1,500-token tool result, against an 8,000-token window the
    agent was not told of: every turn is answered; every request re-sent after a refusal is
    smaller than the refused one and fits; compaction shrinks the conversation and keeps the
    user's recent instructions verbatim."""
    root, _ = project
    limit = 8000
    with FakeProvider(context_limit=limit, answer=_summariser()) as fake:
        agent = make_agent(root, fake, protocol=protocol, tool_settings=LIVE_TOOLS)
        for n in range(20):
            code = f"print('{chr(97 + n)}' * 6000)"
            fake.add(reply.tool_call("execute", {"code": code}), reply.text(f"answer {n}"))
        turns = [run_turn(agent, INSTRUCTION if n == 0 else f"turn {n}") for n in range(20)]
        requests = list(fake.requests)
    assert [t[-1].reason for t in turns] == ["answer"] * 20
    refused = [i for i, r in enumerate(requests) if r.outcome == "fault"]
    assert refused, "the limit must have been hit for the test to mean much"
    for i in refused:
        again = next(r for r in requests[i + 1 :] if _is_summary(r) == _is_summary(requests[i]))
        assert _tokens(again) < _tokens(requests[i]) and _tokens(again) <= limit
    assert all(_tokens(r) <= limit for r in requests if r.outcome == "complete")
    compactions = [e for t in turns for e in of_type(t, "compacted")]
    assert compactions and all(c.tokens_after < c.tokens_before for c in compactions)
    for i in [i for i, r in enumerate(requests) if _is_summary(r)]:  # by the provider's count
        before = [r for r in requests[:i] if not _is_summary(r)][-1]
        after = next(r for r in requests[i:] if not _is_summary(r))
        assert _tokens(after) < _tokens(before), (i, _tokens(before), _tokens(after))
    head = json.dumps(requests[-1].body)
    assert "[Conversation summary" in head and "instructions, verbatim" in head
    first_summary = next(r for r in requests if _is_summary(r))
    assert INSTRUCTION in json.dumps(first_summary.body)  # the summariser saw it
    notices = [e.text for t in turns for e in of_type(t, "notice")]
    learned = [text for text in notices if "8,000 tokens by the provider" in text]
    assert learned and agent.compactor.settings.window == limit


def test_a_message_too_large_on_its_own_is_cut_with_a_note(project):
    """A user input larger than the window alone is cut (head and tail kept) with a note
    saying so, and the turn is answered."""
    root, _ = project
    with FakeProvider(context_limit=4000) as fake:
        agent = make_agent(root, fake, tool_settings=LIVE_TOOLS)
        fake.add(reply.text("read what fits"))
        events = run_turn(agent, "START " + "y" * 20000 + " END")
        sent = fake.requests[-1]
    assert events[-1].reason == "answer" and _tokens(sent) <= 4000
    text = json.dumps(sent.body)
    assert "too large for the context window" in text and "START" in text and "END" in text
    assert "cut 1 message parts" in " ".join(e.text for e in of_type(events, "notice"))


def test_an_overflow_that_cannot_shrink_says_why_and_what_to_do(project):
    """When the system prompt and tools alone exceed the window, nothing bigger is sent: the
    turn ends with an error naming the window, the tools and what the user can do; the
    session answers again once the window allows."""
    root, _ = project
    with FakeProvider(context_limit=1000) as fake:
        agent = make_agent(root, fake)
        events = run_turn(agent, "hello")
        (error,) = of_type(events, "error")
        assert error.error_type == "CompactionError" and len(fake.requests) == 1
        assert "1,000-token window" in error.message and "tool definitions" in error.message
        assert "--profile minimal" in error.message and "larger" in error.message
        fake.context_limit = None
        fake.add(reply.text("fine now"))
        assert run_turn(agent, "again")[-1].reason == "answer"


def test_compact_on_a_small_conversation_never_grows_it(project):
    """/compact where a summary would be longer than the conversation changes nothing."""
    root, _ = project
    with FakeProvider(answer=_summariser("a long summary " * 300)) as fake:
        agent = make_agent(root, fake, tool_settings=LIVE_TOOLS)
        fake.add(reply.text("hello"), reply.text("hello again"))
        run_turn(agent, "hi")
        run_turn(agent, "hi again")
        messages, tokens = list(agent.session.messages), agent.context_tokens()
        assert asyncio.run(agent.compact()) is None
        assert agent.session.messages == messages and agent.context_tokens() <= tokens
