"""Review findings in the agent loop, each pinned by a test that failed before its fix."""

from __future__ import annotations

import asyncio

import pytest
from agent_support import make_agent, of_type, run_turn

from liveforge.declarations.compaction import Compactor, ContextSettings
from liveforge.declarations.messages import Message, TextBlock
from liveforge.declarations.provider import CancelToken
from liveforge.declarations.session import Session, SessionBusy
from liveforge.impls.providers.pairing import pairing_problems
from liveforge.testing import reply


def test_a_stream_broken_after_text_keeps_the_partial_answer_in_the_session(project, fake):
    """StreamInterrupted says "the partial answer was kept": the session really keeps it,
    and the next turn's request shows the model what it had said."""
    root, _ = project
    fake.add(
        reply.text("the first half of an answer").chunked(4).error_after(6),
        reply.text("second try"),
    )
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


def test_compaction_cancelled_before_the_summary_is_complete_changes_nothing(project, fake):
    """A cancelled summarisation returns None: a cut-off summary never replaces history."""
    root, _ = project
    agent = make_agent(root, fake)
    fake.add(reply.text("Noted."), reply.text("Also noted."), reply.text("SUMMARY"))
    run_turn(agent, "first instruction")
    run_turn(agent, "second instruction")
    token = CancelToken()
    token.cancel()
    result = asyncio.run(
        agent.compactor.compact(
            list(agent.session.messages), agent.provider, pinned=[], cancel=token, force=True
        )
    )
    assert result is None


def test_opening_a_session_while_its_turn_runs_elsewhere_is_refused(tmp_path):
    """Resuming a session whose turn is running (turn lock held) raises SessionBusy and
    writes nothing: the live turn is not marked interrupted nor its calls cancelled."""
    running = Session.create(tmp_path)
    with running.turn_lock():
        running.turn_started("long task")
        before = running.path.read_text()
        with pytest.raises(SessionBusy):
            Session.open(tmp_path, running.id)
        assert running.path.read_text() == before
        running.turn_ended("answer")
    assert Session.open(tmp_path, running.id).turns == 1


def test_the_project_overview_forgets_a_definition_once_its_patch_is_rolled_back(project, fake):
    """The system prompt's overview follows rollbacks, not only new changes."""
    root, pkg = project
    agent = make_agent(root, fake)
    module = f"{pkg}.geometry"
    source = agent.runtime.source(module) + "\n\ndef brand_new_helper() -> int:\n    return 1\n"
    assert not agent.toolbox.call("patch", {"path": module, "source": source}).is_error
    assert "brand_new_helper" in agent.system_prompt()
    assert not agent.toolbox.call("rollback", {}).is_error
    assert "brand_new_helper" not in agent.system_prompt()


def test_a_change_finished_by_a_cancelled_call_is_reported_to_the_model(project, fake):
    """A call cancelled mid-run that still applies its patch in the background: the next
    request tells the model the change is in effect (the call's result only said
    "cancelled")."""
    root, pkg = project
    code = (
        f"import time\ntime.sleep(1)\nrt.patch('{pkg}.geometry.perimeter', "
        "'def perimeter(radius: float) -> float:\\n    return 6.28 * radius\\n')"
    )
    fake.add(reply.tool_call("execute", {"code": code, "timeout": 10}), reply.text("ok"))
    agent = make_agent(root, fake)

    async def cancel_when_started() -> None:
        async for event in agent.run("patch slowly"):
            if event.type == "tool_started":
                agent.cancel()

    asyncio.run(cancel_when_started())
    agent.state.tool_worker().submit(lambda: None).result(timeout=30)  # call done
    assert run_turn(agent, "what now?")[-1].reason == "answer"
    note = fake.requests[-1].body["messages"][-1]["content"][-1]["text"]
    assert f"{pkg}.geometry.perimeter" in note and "in effect" in note


def test_compaction_keeps_the_users_instructions_not_liveforges_notes(project, fake):
    """The verbatim "recent instructions" are the user's own inputs: liveforge's notes to
    the model (step limit, rollbacks) do not crowd them out."""
    root, _ = project
    agent = make_agent(root, fake)
    fake.add(reply.text("SUMMARY"))
    note = "[liveforge] The previous turn stopped at its limit of 40 steps."
    messages = [
        Message.user("Always use math.pi."),
        Message.assistant("ok " * 400),  # long enough that a summary makes it smaller
        Message(role="user", content=[TextBlock(text=note)]),
        Message.assistant("noted " * 400),
        Message.user("latest question"),
        Message.assistant("answer"),
    ]
    compactor = Compactor(
        settings=ContextSettings(
            window=4000, reserve=0, summary_tokens=300, keep_fraction=0.001, keep_instructions=2
        )
    )
    result = asyncio.run(compactor.compact(messages, agent.provider, pinned=[], force=True))
    assert result is not None
    head = result.messages[0].text
    assert "- Always use math.pi.\n- latest question" in head and note not in head
