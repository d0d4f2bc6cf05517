"""The agent loop end to end on the fake Gemini server: streaming, tool calls with thought
signatures, usage, a retried rate limit, and a fatal error that ends the turn cleanly."""

from __future__ import annotations

from agent_support import FAST_RETRY, make_agent, of_type, run_turn

from liveforge.agent_setup import build_agent
from liveforge.declarations.agent import AgentSettings
from liveforge.declarations.provider import Provider
from liveforge.impls.providers.pairing import pairing_problems
from liveforge.testing import fault, reply

RETRYING = FAST_RETRY.model_copy(update={"max_attempts": 3})


def test_a_turn_on_gemini_runs_tools_and_answers(project, fake):
    """A rate limit is retried, two parallel calls run, their results go back as
    functionResponses with the signature on the call, and usage adds up over the turn."""
    root, pkg = project
    fake.add(
        fault.rate_limit(retry_after=0.01),
        reply.thinking("Look at the code.", signature="U0lHTg==")
        .text("Reading.")
        .tool_call("view_source", {"path": f"{pkg}.geometry.area"})
        .tool_call("no_such_tool", {})
        .with_usage(input=100, output=20),
        reply.text("area() uses 3 for pi.").chunked(3).with_usage(input=300, output=10),
    )
    provider = Provider([fake.route("gemini")], retry=RETRYING)
    agent = build_agent(root, provider=provider, settings=AgentSettings(), env={})
    events = run_turn(agent, "look at area")
    agent.runtime.close()
    assert events[-1].reason == "answer"
    assert [n.kind for n in of_type(events, "notice")][:1] == ["retrying"]
    assert "".join(e.text for e in of_type(events, "text_delta")).endswith("area() uses 3 for pi.")
    finished = of_type(events, "tool_finished")
    assert [(f.name, f.is_error) for f in finished] == [
        ("view_source", False),
        ("no_such_tool", True),
    ]
    assert events[-1].usage.input_tokens == 400 and events[-1].usage.output_tokens == 30
    sent = fake.requests[-1]
    assert sent.path.endswith(":streamGenerateContent?alt=sse")
    contents = sent.body["contents"]
    calls = [p for p in contents[-2]["parts"] if "functionCall" in p]
    assert calls[0]["thoughtSignature"] == "U0lHTg==" and "thoughtSignature" not in calls[1]
    answers = [p["functionResponse"] for p in contents[-1]["parts"]]
    assert [a["name"] for a in answers] == ["view_source", "no_such_tool"]
    assert "return 3 * radius * radius" in answers[0]["response"]["result"]
    assert "error" in answers[1]["response"]
    assert "systemInstruction" in sent.body
    assert pairing_problems(agent.session.messages) == []


def test_a_fatal_gemini_error_ends_the_turn_with_its_class(project, fake):
    """An invalid key (Gemini's 400 API_KEY_INVALID) is an authentication error, not retried."""
    root, _ = project
    fake.add(fault.auth(), reply.text("never"))
    agent = make_agent(root, fake, protocol="gemini")
    events = run_turn(agent, "hi")
    errors = of_type(events, "error")
    assert events[-1].reason == "error" and errors[0].error_type == "AuthenticationError"
    assert "API key not valid" in errors[0].message
    assert len(fake.requests) == 1
