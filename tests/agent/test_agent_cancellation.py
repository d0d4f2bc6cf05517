"""Cancelling a turn stops the turn, not the session, and leaves every request valid."""

from __future__ import annotations

import asyncio
import threading

import pytest
from agent_support import collect, make_agent, of_type, run_turn

from liveforge.impls.providers.pairing import CANCELLED_RESULT, pairing_problems
from liveforge.testing import fault, reply

SLOW = {"code": "import time\ntime.sleep(1.5)\n'done'", "timeout": 10}


def _results_in(body: dict) -> list[dict]:
    return [
        b
        for m in body["messages"]
        for b in m["content"]
        if isinstance(b, dict) and b.get("type") == "tool_result"
    ]


async def _cancel_at(agent, text: str, kind: str) -> list:
    events = []
    async for event in agent.run(text):
        events.append(event)
        if event.type == kind:
            agent.cancel()
    return events


def test_cancel_mid_tool_call_closes_the_call_and_the_next_turn_is_valid(project, fake):
    """Cancel while a tool runs: the call gets a cancelled result, the turn ends Cancelled,
    and the next turn's request pairs every tool call with a result."""
    root, _ = project
    fake.add(reply.tool_call("execute", SLOW, id="toolu_slow"), reply.text("fresh answer"))
    agent = make_agent(root, fake)
    events = asyncio.run(_cancel_at(agent, "run something slow", "tool_started"))
    assert of_type(events, "cancelled")[0].open_calls == ["toolu_slow"]
    assert events[-1].reason == "cancelled"
    assert len(fake.requests) == 1
    after = run_turn(agent, "now just answer")
    assert after[-1].reason == "answer"
    body = fake.requests[-1].body
    result = _results_in(body)[0]
    assert result["tool_use_id"] == "toolu_slow" and result["is_error"]
    assert result["content"] == CANCELLED_RESULT
    assert pairing_problems(agent.session.messages) == []


def test_cancel_while_the_model_streams_keeps_the_partial_text(project, fake):
    """Cancel during streaming: the partial answer is kept, marked interrupted."""
    root, _ = project
    fake.add(
        reply.text("a long answer that streams slowly").chunked(2).slow(0.02), reply.text("next")
    )
    agent = make_agent(root, fake)
    events = asyncio.run(_cancel_at(agent, "talk", "text_delta"))
    assert events[-1].reason == "cancelled"
    last = agent.session.messages[-1]
    assert last.role == "assistant" and "[interrupted by the user]" in last.text
    assert run_turn(agent, "go on")[-1].reason == "answer"


def test_cancelling_the_task_mid_tool_leaves_the_session_usable(project, fake):
    """asyncio cancellation (a front end cancelling its task) also closes open calls."""
    root, _ = project
    fake.add(reply.tool_call("execute", SLOW, id="toolu_task"), reply.text("ok"))
    agent = make_agent(root, fake)

    async def scenario() -> None:
        started = asyncio.Event()

        async def consume() -> None:
            async for event in agent.run("slow"):
                if event.type == "tool_started":
                    started.set()

        task = asyncio.create_task(consume())
        await started.wait()
        task.cancel()
        try:
            await task
        except asyncio.CancelledError:
            pass

    asyncio.run(scenario())
    assert agent.session.messages[-1].content[0].tool_use_id == "toolu_task"
    assert run_turn(agent, "again")[-1].reason == "answer"
    assert _results_in(fake.requests[-1].body)[0]["content"] == CANCELLED_RESULT


def test_closing_the_event_stream_early_ends_the_turn_cleanly(project, fake):
    """A consumer that stops reading after TurnStarted still leaves a closed turn and a
    free lock behind."""
    root, _ = project
    fake.add(reply.text("unused"), reply.text("second"))
    agent = make_agent(root, fake)

    async def first_event_only() -> None:
        stream = agent.run("hello")
        await stream.__anext__()
        await stream.aclose()

    asyncio.run(first_event_only())
    assert agent.session.info().state == "idle"
    assert run_turn(agent, "again")[-1].reason == "answer"


@pytest.mark.parametrize("protocol", ["anthropic", "openai"])
def test_a_turn_cancelled_mid_request_leaves_the_next_turn_unharmed(project, fake, protocol):
    """Cancel while the server holds the request (it would answer nothing for 20 s): the
    next turn on the same agent and event loop gets its own connection and answer, and the
    cancelled exchange was closed rather than left for the next request to queue behind."""
    root, _ = project
    fake.add(fault.hang(20), reply.text("prompt answer"))
    agent = make_agent(root, fake, protocol=protocol)
    canceller = threading.Thread(target=lambda: (fake.wait_for_requests(1), agent.cancel()))

    async def both_turns() -> tuple[list, list]:
        canceller.start()
        first = await collect(agent, "wait for it")
        second = await collect(agent, "are you there?")
        await agent.aclose()
        return first, second

    first, second = asyncio.run(both_turns())
    canceller.join()
    assert first[-1].reason == "cancelled"
    assert second[-1].reason == "answer"
    assert of_type(second, "final_answer")[0].text == "prompt answer"
    assert [r.outcome for r in fake.requests] == ["fault", "complete"]


def test_a_call_cancelled_before_its_request_left_uses_no_script_item(project, fake):
    """A turn cancelled before its request reached the server: the fake's next item answers
    the next turn (what a cancel "mid-request" must wait for: the request's arrival)."""
    root, _ = project
    fake.add(reply.text("first item"))
    agent = make_agent(root, fake)

    async def both_turns() -> tuple[list, list]:
        first = await _cancel_at(agent, "go", "turn_started")
        second = await collect(agent, "again")
        await agent.aclose()
        return first, second

    first, second = asyncio.run(both_turns())
    assert first[-1].reason == "cancelled"
    assert of_type(second, "final_answer")[0].text == "first item"
    assert len(fake.requests) == 1
