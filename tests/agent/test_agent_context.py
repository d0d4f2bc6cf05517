"""Context management: bounded tool results, compaction before the window fills, and
overflow handling that never grows a request."""

from __future__ import annotations

import asyncio
import json

from agent_support import make_agent, of_type, run_turn

from liveforge.declarations.compaction import Compactor, ContextSettings
from liveforge.declarations.messages import Message
from liveforge.declarations.tool_settings import ToolSettings
from liveforge.impls.providers.pairing import pairing_problems
from liveforge.testing import fault, reply

SMALL = ContextSettings(
    window=8000, reserve=0, threshold=0.75, keep_fraction=0.25, summary_tokens=300
)
INSTRUCTION = "Always use math.pi, never literals."
#: the live tools only: these window sizes were measured with that catalogue
LIVE_TOOLS = ToolSettings(profile="live")


def _big(letter: str) -> reply:
    return reply.tool_call("execute", {"code": f"'{letter}' * 8000"})


def _two_turns(agent, fake) -> None:
    fake.add(reply.text("Noted."), _big("a"), reply.text("That was long."))
    run_turn(agent, INSTRUCTION)
    run_turn(agent, "show me a big output")


def _size(request) -> int:
    return len(json.dumps(request.body["messages"]))


def _summary_requests(fake) -> list:
    return [r for r in fake.requests if "You compact" in json.dumps(r.body.get("system"))]


def test_small_window_compacts_older_turns_keeping_instructions_verbatim(project, fake):
    """Past the threshold, older turns are summarised by the model; the next request starts
    with the summary, the user's instruction word for word, and the recent messages."""
    root, _ = project
    agent = make_agent(root, fake, context=SMALL, tool_settings=LIVE_TOOLS)
    _two_turns(agent, fake)
    fake.add(_big("b"), reply.text("SUMMARY: the user wants math.pi."), reply.text("Done."))
    events = run_turn(agent, "another big one")
    compacted = of_type(events, "compacted")[0]
    assert compacted.tokens_after < compacted.tokens_before
    summary_request = _summary_requests(fake)[0]
    assert not summary_request.body.get("stream") and "tools" not in summary_request.body
    head = fake.requests[-1].body["messages"][0]["content"][0]["text"]
    assert head.startswith("[Conversation summary: 7 earlier messages were summarised]")
    assert "SUMMARY: the user wants math.pi." in head and f"- {INSTRUCTION}" in head
    sent = [Message.model_validate(m) for m in fake.requests[-1].body["messages"]]
    assert sent[1].tool_calls and sent[1].tool_calls[0].input == {"code": "'b' * 8000"}
    assert pairing_problems(sent, allow_open_last=False) == []
    assert events[-1].reason == "answer"
    assert '"t": "compaction"' in agent.session.path.read_text()


def test_overflow_during_compaction_retries_a_smaller_summary_request(project, fake):
    """When the summarisation request itself overflows, old tool outputs are cut and it is
    sent again strictly smaller; the turn then goes on."""
    root, _ = project
    agent = make_agent(root, fake, context=SMALL, tool_settings=LIVE_TOOLS)
    _two_turns(agent, fake)
    fake.add(
        _big("b"), fault.context_overflow(), reply.text("SUMMARY after retry"), reply.text("Done.")
    )
    events = run_turn(agent, "another big one")
    first, second = _summary_requests(fake)
    assert _size(second) < _size(first)
    assert of_type(events, "compacted") and events[-1].reason == "answer"
    assert "SUMMARY after retry" in json.dumps(fake.requests[-1].body["messages"][0])


def test_context_overflow_on_a_request_compacts_and_retries_smaller(project, fake):
    """A ContextOverflowError from the model makes the conversation smaller (never larger:
    no error text is appended) before the request is sent again."""
    root, _ = project
    loose = SMALL.model_copy(update={"threshold": 1.0, "window": 100_000})
    agent = make_agent(root, fake, context=loose)
    _two_turns(agent, fake)
    fake.add(fault.context_overflow(), reply.text("SUMMARY short"), reply.text("Fits now."))
    events = run_turn(agent, "continue")
    overflowed, retried = fake.requests[-3], fake.requests[-1]
    assert _size(retried) < _size(overflowed)
    assert "prompt is too long" not in json.dumps(retried.body)
    assert of_type(events, "notice")[0].kind == "context"
    assert events[-1].reason == "answer"


def test_oversized_tool_results_are_cut_with_a_marker(project, fake):
    """A tool result past the limit enters the context cut, saying so."""
    root, _ = project
    tight = ContextSettings(tool_result_limit=1000)
    agent = make_agent(root, fake, context=tight)
    code = "print('\\n'.join(f'line {i}' for i in range(3000)))"
    fake.add(reply.tool_call("execute", {"code": code}), reply.text("ok"))
    run_turn(agent, "big")
    result = fake.requests[-1].body["messages"][-1]["content"][0]["content"]
    assert len(result) <= 1000 and "line 0" in result and "omitted" in result


def test_clip_result_keeps_head_and_tail_around_a_marker():
    """The compactor's own bound keeps the start and the end and says what was cut."""
    compactor = Compactor(settings=ContextSettings(tool_result_limit=1000))
    text = "HEAD\n" + "x" * 5000 + "\nTAIL"
    clipped = compactor.clip_result(text)
    assert clipped.startswith("HEAD") and clipped.endswith("TAIL")
    assert len(clipped) < 1100 and "characters (0 lines) of this tool result cut" in clipped
    assert compactor.clip_result("short") == "short"


def test_compact_between_turns_on_request(project, fake):
    """Agent.compact() summarises now (the /compact command), keeping the session valid."""
    root, _ = project
    agent = make_agent(root, fake, context=SMALL, tool_settings=LIVE_TOOLS)
    _two_turns(agent, fake)
    fake.add(reply.text("SUMMARY on request"), reply.text("after"))
    compacted = asyncio.run(agent.compact())
    assert compacted is not None and compacted.messages_summarised >= 2
    assert agent.session.messages[0].text.startswith("[Conversation summary")
    assert run_turn(agent, "go on")[-1].reason == "answer"
