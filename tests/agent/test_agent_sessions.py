"""Sessions: append-only transcripts, resume after a crash, listing, the turn lock, secrets."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest
from agent_support import make_agent, of_type, run_turn

from liveforge.declarations.messages import Message
from liveforge.declarations.session import Session, SessionBusy, SessionError
from liveforge.impls.providers.pairing import CANCELLED_RESULT, pairing_problems
from liveforge.testing import reply

KEY = "sk-test-secret-key-0123456789"

CHILD = textwrap.dedent("""
    import asyncio, sys
    from pydantic import SecretStr
    from liveforge.agent_setup import build_agent
    from liveforge.declarations.permissions import Policy
    from liveforge.declarations.provider import Credential, Provider, RetryPolicy, Route

    root, url = sys.argv[1], sys.argv[2]
    route = Route(name="anthropic:test-model", protocol="anthropic", model="test-model",
                  base_url=url, credentials=[Credential(name="k", key=SecretStr({key!r}))])
    agent = build_agent(root, provider=Provider([route], retry=RetryPolicy(max_attempts=1)),
                        env={{}}, policy=Policy(mode="full-auto"))
    print(agent.session.id, flush=True)

    async def main():
        async for event in agent.run("make area exact"):
            print(event.type, flush=True)

    asyncio.run(main())
    """).format(key=KEY)

HOLD_LOCK = textwrap.dedent("""
    import sys, time
    import liveforge.impls
    from liveforge.declarations.session import Session
    session = Session.create(sys.argv[1])
    with session.turn_lock():
        print(session.id, flush=True)
        time.sleep(60)
    """)

EXACT = "def area(radius: float) -> float:\n    return 3.141592653589793 * radius * radius\n"


def _child(script: str, *args: str) -> subprocess.Popen[str]:
    return subprocess.Popen(
        [sys.executable, "-c", script, *args],
        stdout=subprocess.PIPE,
        text=True,
        env={**os.environ, "PYTHONUNBUFFERED": "1"},
    )


def _wait_for(path: Path, text: str, timeout: float = 30.0) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if path.exists() and text in path.read_text():
            return
        time.sleep(0.05)
    raise AssertionError(f"{text!r} never appeared in {path}")


def test_transcript_round_trips_the_conversation(project, fake):
    """Opening a session rebuilds the same messages, token estimates and title."""
    root, pkg = project
    fake.add(reply.tool_call("view_source", {"path": f"{pkg}.geometry"}), reply.text("seen"))
    agent = make_agent(root, fake)
    run_turn(agent, "show me geometry")
    again = Session.open(root, agent.session.id)
    assert again.messages == agent.session.messages
    assert again.tokens == agent.session.tokens
    assert again.title == "show me geometry" and again.turns == 1


def test_torn_last_line_is_skipped_on_open(project, fake):
    """A record cut short by a crash is ignored; everything before it is kept."""
    root, _ = project
    fake.add(reply.text("one"))
    agent = make_agent(root, fake)
    run_turn(agent, "first")
    with agent.session.path.open("a") as handle:
        handle.write('{"t": "message", "message": {"role": "us')
    again = Session.open(root, agent.session.id)
    assert [m.text for m in again.messages] == ["first", "one"]


def test_secrets_never_reach_the_transcript(project, fake):
    """A key value in model output or tool results is written as [redacted]."""
    root, _ = project
    fake.add(reply.tool_call("execute", {"code": f"'{KEY}'"}), reply.text(f"key is {KEY}"))
    agent = make_agent(root, fake)
    run_turn(agent, "print the key")
    text = agent.session.path.read_text()
    assert KEY not in text and "[redacted]" in text
    assert KEY not in str(fake.requests[-1].body["messages"][-1])


def test_sessions_are_listed_newest_first_with_title_and_state(project, fake):
    """list_sessions shows each session's title, turn count, state and unpersisted count."""
    root, pkg = project
    fake.add(
        reply.text("a"),
        reply.tool_call("patch", {"path": f"{pkg}.geometry.area", "source": EXACT}),
        reply.text("b"),
    )
    first = make_agent(root, fake)
    run_turn(first, "first session")
    second = make_agent(root, fake, runtime=first.runtime)
    run_turn(second, "second session")
    rows = Session.list_sessions(root)
    assert [r.title for r in rows] == ["second session", "first session"]
    assert rows[0].state == "idle" and rows[0].turns == 1 and rows[0].unpersisted == 1
    with pytest.raises(SessionError, match="no session 'nope'"):
        Session.open(root, "nope")


def test_turn_lock_names_the_process_holding_it(project, fake):
    """A second front end of the same project gets SessionBusy naming the holder's pid; the
    lock is gone once that process is killed."""
    root, _ = project
    holder = _child(HOLD_LOCK, str(root))
    try:
        assert holder.stdout is not None
        held_session = holder.stdout.readline().strip()
        fake.add(reply.text("now it works"))
        agent = make_agent(root, fake)
        with pytest.raises(SessionBusy) as caught:
            run_turn(agent, "hi")
        assert caught.value.holder_pid == holder.pid
        assert str(holder.pid) in str(caught.value) and held_session in str(caught.value)
    finally:
        holder.kill()
        holder.wait()
    assert run_turn(agent, "hi")[-1].reason == "answer"


def test_killed_process_resumes_with_conversation_and_unpersisted_patches(project, fake):
    """SIGKILL mid-turn, then resume: the whole conversation is back, the open tool call is
    closed, the unpersisted patch is re-applied, and the next turn's request is valid."""
    root, pkg = project
    fake.add(
        reply.tool_call("patch", {"path": f"{pkg}.geometry.area", "source": EXACT}),
        reply.tool_call(
            "execute", {"code": "import time\ntime.sleep(60)", "timeout": 90}, id="toolu_hang"
        ),
        reply.text("Resumed fine."),
    )
    child = _child(CHILD, str(root), fake.base_url)
    try:
        assert child.stdout is not None
        session_id = child.stdout.readline().strip()
        transcript = root / ".liveforge" / "sessions" / f"{session_id}.jsonl"
        _wait_for(transcript, "toolu_hang")
        time.sleep(0.2)
        child.send_signal(signal.SIGKILL)
        child.wait()
    finally:
        if child.poll() is None:
            child.kill()
            child.wait()
    assert next(r for r in Session.list_sessions(root) if r.id == session_id).state == "interrupted"
    agent = make_agent(root, fake, resume=session_id)
    assert agent.session.messages[0].text == "make area exact"
    assert [c.name for m in agent.session.messages for c in m.tool_calls] == ["patch", "execute"]
    closing = agent.session.messages[-1].content[0]
    assert closing.tool_use_id == "toolu_hang" and closing.content == CANCELLED_RESULT
    assert "3.141592653589793" in agent.runtime.source(f"{pkg}.geometry.area")
    area = __import__(f"{pkg}.geometry", fromlist=["area"]).area
    assert area(1.0) == pytest.approx(3.141592653589793)
    assert "3 * radius" in (root / pkg / "geometry.py").read_text()
    events = run_turn(agent, "continue")
    restored = of_type(events, "notice")
    assert restored and "re-applied" in restored[0].text
    assert events[-1].reason == "answer"
    sent = [Message.model_validate(m) for m in fake.requests[-1].body["messages"]]
    assert pairing_problems(sent, allow_open_last=False) == []
    assert Session.list_sessions(root)[0].state == "idle"


def test_resume_reports_a_change_that_no_longer_applies(project, fake):
    """When the module changed on disk since the patch, a whole-module change is reported as
    no longer applying instead of overwriting the new file."""
    root, pkg = project
    fake.add(
        reply.tool_call("patch", {"path": f"{pkg}.geometry", "module": True, "source": "X = 1\n"}),
        reply.text("done"),
    )
    first = make_agent(root, fake)
    run_turn(first, "replace the module")
    first.runtime.rollback_to(None)
    (root / pkg / "geometry.py").write_text("Y = 2\n")
    for name in [m for m in sys.modules if m.startswith(pkg)]:
        del sys.modules[name]
    lines = make_agent(root, fake, resume="latest").session.live.restored
    assert "no longer applies" in lines[0]
