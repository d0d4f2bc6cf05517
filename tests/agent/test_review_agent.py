"""Review findings in the agent loop, each pinned by a test that failed before its fix."""

from __future__ import annotations

from agent_support import make_agent, of_type, run_turn

from liveforge.impls.providers.pairing import pairing_problems
from liveforge.testing import reply


def test_a_stream_broken_after_text_keeps_the_partial_answer_in_the_session(project, fake):
    """StreamInterrupted says "the partial answer was kept": the session really keeps it,
    and the next turn's request shows the model what it had said."""
    root, _ = project
    fake.add(reply.text("the first half of an answer").chunked(4).error_after(6),
             reply.text("second try"))
    agent = make_agent(root, fake)
    events = run_turn(agent, "explain")
    assert of_type(events, "error")[0].error_type == "StreamInterrupted"
    last = agent.session.messages[-1]
    assert last.role == "assistant" and last.text.startswith("the first")
    assert "cut off" in last.text
    assert run_turn(agent, "go on")[-1].reason == "answer"
    sent = fake.requests[-1].body["messages"]
    assert [m["role"] for m in sent] == ["user", "assistant", "user"]
    assert pairing_problems(agent.session.messages) == []
