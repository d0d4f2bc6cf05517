"""`liveforge acp`'s session lifecycle as an editor drives it: session/list, session/resume,
session/fork and their errors, against real `liveforge acp` child processes (the ACP SDK's
client side), a scripted model over loopback HTTP, and real transcripts."""

from __future__ import annotations

import asyncio
import os
from datetime import datetime
from pathlib import Path
from typing import Any

import pytest
from cli_support import FIX

from liveforge.testing import FakeProvider, reply

acp = pytest.importorskip("acp")
from acp import PROTOCOL_VERSION, RequestError, text_block  # noqa: E402
from acp.schema import AllowedOutcome, RequestPermissionResponse  # noqa: E402
from acp_support import acp_agent  # noqa: E402

PRICE = "from pricing.cart import Line\nLine('tea', 100, 10).subtotal()"


class Editor:
    """The client side: records session updates, allows every permission question once."""

    def __init__(self) -> None:
        self.updates: list[tuple[str, Any]] = []
        self.heard = asyncio.Event()
        self.init: Any = None

    async def session_update(self, session_id: str, update: Any, **_: Any) -> None:
        self.updates.append((session_id, update))
        self.heard.set()

    async def request_permission(self, **_: Any) -> RequestPermissionResponse:
        return RequestPermissionResponse(
            outcome=AllowedOutcome(outcome="selected", option_id="allow_once")
        )

    def said(self, session_id: str) -> str:
        return "".join(
            u.content.text
            for sid, u in self.updates
            if sid == session_id and u.session_update == "agent_message_chunk"
        )


async def _agent(editor: Editor, fake: FakeProvider, project: Path, run: Any) -> Any:
    """Start `liveforge acp` in `project`, initialize, `run(conn, pid)`, let it exit."""
    async with acp_agent(editor, fake, project, append=True) as (conn, process):
        editor.init = await conn.initialize(protocol_version=PROTOCOL_VERSION)
        result = await run(conn, process.pid)
    await asyncio.wait_for(process.wait(), 30)
    return result


def _one(editor: Editor, fake: FakeProvider, project: Path, run: Any) -> Any:
    return asyncio.run(_agent(editor, fake, project, run))


def _plain(value: Any) -> Any:
    """A request's messages without prompt-caching marks (they move to the newest turn)."""
    if isinstance(value, dict):
        return {k: _plain(v) for k, v in value.items() if k != "cache_control"}
    if isinstance(value, list):
        return [_plain(v) for v in value]
    return value


def _texts(messages: list[dict[str, Any]]) -> list[str]:
    """Every text of a request's messages, in order (strings and text blocks)."""
    out = []
    for message in messages:
        content = message["content"]
        blocks = [{"type": "text", "text": content}] if isinstance(content, str) else content
        out += [block["text"] for block in blocks if block.get("type") == "text"]
    return out


def test_list_gives_the_projects_sessions_newest_first_with_titles(sample: Path):
    """After two sessions with prompts (and one without), session/list gives the two, newest
    first, with the project as cwd, the first prompt as title (shortened), an ISO time; each
    title reached the editor in a session_info_update at the first prompt; the capabilities
    say list, resume, fork and close."""
    long = "please explain " + "the bulk discount rules of the cart in every detail " * 3
    script = [reply.text("First answer."), reply.text("Second answer.")]

    async def run(conn: Any, _: int) -> Any:
        first = await conn.new_session(cwd=str(sample), mcp_servers=[])
        await conn.prompt(session_id=first.session_id, prompt=[text_block("what is a Line?")])
        second = await conn.new_session(cwd=str(sample), mcp_servers=[])
        await conn.prompt(session_id=second.session_id, prompt=[text_block(long)])
        empty = await conn.new_session(cwd=str(sample), mcp_servers=[])
        listed = await conn.list_sessions(cwd=str(sample))
        everywhere = await conn.list_sessions()  # no cwd: the projects of this process
        ids = (first.session_id, second.session_id, empty.session_id)
        return ids, listed, everywhere

    editor = Editor()
    with FakeProvider(script=script) as fake:
        (first, second, empty), listed, everywhere = _one(editor, fake, sample, run)
    named = [
        (sid, u.title) for sid, u in editor.updates if u.session_update == "session_info_update"
    ]
    assert named == [(first, "what is a Line?"), (second, listed.sessions[0].title)]
    capabilities = editor.init.agent_capabilities.session_capabilities
    assert capabilities.list is not None and capabilities.resume is not None
    assert capabilities.fork is not None and capabilities.close is not None
    assert [s.session_id for s in listed.sessions] == [second, first]  # newest first
    assert empty not in [s.session_id for s in everywhere.sessions]  # no message yet
    assert [s.session_id for s in everywhere.sessions] == [second, first]
    assert listed.next_cursor is None
    newest, older = listed.sessions
    assert {newest.cwd, older.cwd} == {str(sample.resolve())}
    assert older.title == "what is a Line?"
    assert len(newest.title) <= 60 and newest.title.endswith("…")
    assert newest.title.startswith("please explain the bulk discount rules")
    times = [datetime.fromisoformat(s.updated_at) for s in listed.sessions]
    assert times[0] >= times[1] and times[0].tzinfo is not None
    assert older.field_meta == {"liveforge": {"turns": 1, "state": "idle", "unpersistedChanges": 0}}


def test_list_pages_by_cursor_and_leaves_out_sub_agents(sample: Path):
    """More sessions than a page: the pages, joined by nextCursor, hold each session once,
    newest first; a sub-agent's session is not listed; a cursor it never gave is refused."""
    from liveforge.acp.agent import PAGE_SIZE
    from liveforge.declarations.messages import Message
    from liveforge.declarations.session import Session
    from liveforge.impls.session_store import close_transcript

    made = []
    for number in range(PAGE_SIZE + 3):
        session = Session.create(sample, session_id=f"20250101-000000-{number:06x}")
        session.turn_started(f"question {number}")
        session.append(Message.user(f"question {number}"))
        session.turn_ended("answer")
        close_transcript(session)
        os.utime(session.path, (1_700_000_000 + number, 1_700_000_000 + number))
        made.append(session.id)
    child = Session.create(sample, session_id="20250101-000000-child0")
    child.note("parent", f"sub-agent a1 of session {made[0]}", parent_session=made[0])
    child.append(Message.user("a sub-agent's task"))
    close_transcript(child)

    async def run(conn: Any, _: int) -> Any:
        pages = [await conn.list_sessions(cwd=str(sample))]
        while pages[-1].next_cursor:
            pages.append(await conn.list_sessions(cwd=str(sample), cursor=pages[-1].next_cursor))
        with pytest.raises(RequestError) as bad:
            await conn.list_sessions(cwd=str(sample), cursor="not-a-cursor")
        return pages, bad.value

    with FakeProvider(script=[]) as fake:
        pages, bad = _one(Editor(), fake, sample, run)
    assert [len(page.sessions) for page in pages] == [PAGE_SIZE, 3]
    listed = [s.session_id for page in pages for s in page.sessions]
    assert listed == made[::-1]  # each once, newest first; the sub-agent's left out
    assert pages[0].sessions[0].title == f"question {PAGE_SIZE + 2}"
    assert bad.code == -32602 and "not-a-cursor" in str(bad)


def test_resume_gives_the_model_the_whole_conversation_and_the_programs_changes(sample: Path):
    """A session patches the program (allowed) in one `liveforge acp`; a second one resumes
    it: nothing is replayed to the editor, the next prompt's request holds the whole earlier
    conversation (the patch's tool call and result, the answer), the patch is live again
    (the price is the fixed one) and the editor is told it was re-applied."""
    first_script = [
        reply.tool_call("patch", {"path": "pricing.cart.Line.subtotal", "source": FIX}),
        reply.text("Patched the bulk discount."),
    ]

    async def first(conn: Any, _: int) -> str:
        new = await conn.new_session(cwd=str(sample), mcp_servers=[])
        await conn.prompt(session_id=new.session_id, prompt=[text_block("fix the discount")])
        return new.session_id

    with FakeProvider(script=first_script) as fake:
        sid = _one(Editor(), fake, sample, first)
        before = _plain(fake.requests[-1].body["messages"])
    later = Editor()

    async def resume(conn: Any, _: int) -> Any:
        resumed = await conn.resume_session(cwd=str(sample), session_id=sid, mcp_servers=[])
        replayed = list(later.updates)
        done = await conn.prompt(session_id=sid, prompt=[text_block("what does it cost now?")])
        return resumed, replayed, done

    second_script = [reply.tool_call("execute", {"code": PRICE}), reply.text("900 cents.")]
    with FakeProvider(script=second_script) as fake:
        resumed, replayed, done = _one(later, fake, sample, resume)
        sent = _plain(fake.requests[0].body["messages"])
        ran = fake.requests[1].body["messages"][-1]["content"][0]
    assert resumed.modes.current_mode_id == "ask"
    assert replayed == []  # unlike session/load: no history sent back
    assert done.stop_reason == "end_turn"
    # the whole conversation: the earlier request's messages, the answer, the new prompt
    assert sent[: len(before)] == before
    assert _texts(sent[len(before) :]) == ["Patched the bulk discount.", "what does it cost now?"]
    assert [m["role"] for m in sent] == ["user", "assistant", "user", "assistant", "user"]
    assert sent[1]["content"][-1]["type"] == "tool_use" and sent[2]["content"][0]["type"] == (
        "tool_result"
    )
    assert "900" in str(ran["content"])  # the patch was applied again
    assert "re-applied" in later.said(sid)


def test_fork_copies_the_conversation_and_each_branch_keeps_its_own(sample: Path):
    """A fork of an open session, then a prompt in each: each request holds the shared start
    and only its own branch; the fork has the original's permission mode, shares the patch
    the original made (nothing to re-apply); session/close ends it. A later process forks
    the (closed) original: its copy holds the original's whole conversation, applies the
    original's patch again (the fixed price), and the original's transcript is left as it
    was."""
    script = [
        reply.tool_call("patch", {"path": "pricing.cart.Line.subtotal", "source": FIX}),
        reply.text("Apples cost 30 cents."),
        reply.text("Pears cost 40 cents."),
        reply.text("Plums cost 50 cents."),
    ]

    async def run(conn: Any, _: int) -> Any:
        new = await conn.new_session(cwd=str(sample), mcp_servers=[])
        sid = new.session_id
        await conn.set_session_mode(session_id=sid, mode_id="auto-edit")
        await conn.prompt(session_id=sid, prompt=[text_block("apples?")])
        fork = await conn.fork_session(cwd=str(sample), session_id=sid, mcp_servers=[])
        await conn.prompt(session_id=sid, prompt=[text_block("pears?")])
        await conn.prompt(session_id=fork.session_id, prompt=[text_block("plums?")])
        listed = await conn.list_sessions(cwd=str(sample))
        await conn.close_session(session_id=fork.session_id)
        with pytest.raises(RequestError) as closed:
            await conn.prompt(session_id=fork.session_id, prompt=[text_block("more?")])
        return sid, fork, listed, closed.value

    editor = Editor()
    with FakeProvider(script=script) as fake:
        sid, fork, listed, closed = _one(editor, fake, sample, run)
        original = _texts(fake.requests[2].body["messages"])
        branch = _texts(fake.requests[3].body["messages"])
    assert fork.session_id != sid
    assert fork.modes.current_mode_id == "auto-edit"  # the original's permissions
    assert original == ["apples?", "Apples cost 30 cents.", "pears?"]
    assert branch == ["apples?", "Apples cost 30 cents.", "plums?"]
    assert {s.session_id for s in listed.sessions} == {sid, fork.session_id}
    assert closed.code == -32002  # session/close ended the fork in that process
    assert "unpersisted changes" not in editor.said(fork.session_id)  # shared, not re-applied

    transcript = sample / ".liveforge" / "sessions" / f"{sid}.jsonl"
    kept = transcript.read_bytes()

    async def again(conn: Any, _: int) -> Any:
        copy = await conn.fork_session(cwd=str(sample), session_id=sid, mcp_servers=[])
        unchanged = transcript.read_bytes() == kept
        await conn.prompt(session_id=copy.session_id, prompt=[text_block("cherries?")])
        return copy, unchanged

    third = Editor()
    cherries = [reply.tool_call("execute", {"code": PRICE}), reply.text("Cherries: 60.")]
    with FakeProvider(script=cherries) as fake:
        copy, unchanged = _one(third, fake, sample, again)
        later = _texts(fake.requests[0].body["messages"])
        ran = fake.requests[1].body["messages"][-1]["content"][0]
    assert unchanged
    assert "900" in str(ran["content"])  # the original's patch, applied again in the copy
    assert "re-applied" in third.said(copy.session_id)
    assert copy.session_id not in (sid, fork.session_id)
    assert later == [
        "apples?",
        "Apples cost 30 cents.",
        "pears?",
        "Pears cost 40 cents.",
        "cherries?",
    ]


def test_unknown_ids_and_a_session_in_another_process_are_errors_the_editor_shows(
    sample: Path,
):
    """An unknown id in resume, load, fork and prompt is a JSON-RPC error naming the id and
    how to list the sessions; a session another `liveforge acp` is running a turn of cannot
    be resumed or forked: the error says which process holds it."""
    unknown = "20990101-000000-abcdef"
    script = [reply.text("A long answer that keeps streaming. " * 40).chunked(4).slow(0.05)]

    async def run(conn: Any, pid: int) -> Any:
        errors = []
        for call in (
            conn.resume_session(cwd=str(sample), session_id=unknown, mcp_servers=[]),
            conn.load_session(cwd=str(sample), session_id=unknown, mcp_servers=[]),
            conn.fork_session(cwd=str(sample), session_id=unknown, mcp_servers=[]),
            conn.prompt(session_id=unknown, prompt=[text_block("hi")]),
            conn.resume_session(cwd=str(sample), session_id="../../etc/x", mcp_servers=[]),
        ):
            with pytest.raises(RequestError) as caught:
                await call
            errors.append(caught.value)
        new = await conn.new_session(cwd=str(sample), mcp_servers=[])
        turn = asyncio.ensure_future(
            conn.prompt(session_id=new.session_id, prompt=[text_block("talk")])
        )
        await asyncio.wait_for(busy_editor.heard.wait(), 30)  # the turn is streaming
        other = Editor()
        busy = await _agent(other, fake, sample, lambda c, _: _refused(c, new.session_id))
        await conn.cancel(session_id=new.session_id)
        await asyncio.wait_for(turn, 30)
        return errors, busy, pid

    async def _refused(conn: Any, sid: str) -> list[RequestError]:
        refused = []
        for call in (
            conn.resume_session(cwd=str(sample), session_id=sid, mcp_servers=[]),
            conn.fork_session(cwd=str(sample), session_id=sid, mcp_servers=[]),
        ):
            with pytest.raises(RequestError) as caught:
                await call
            refused.append(caught.value)
        return refused

    busy_editor = Editor()
    with FakeProvider(script=script) as fake:
        errors, busy, pid = _one(busy_editor, fake, sample, run)
    resume, load, fork, prompt, path = errors
    for error in (resume, load, fork):
        assert error.code == -32002
        assert unknown in str(error) and "session/list" in str(error)
        assert error.data["sessionId"] == unknown
    assert prompt.code == -32002 and unknown in str(prompt) and "session/resume" in str(prompt)
    assert path.code == -32602 and "not a liveforge session id" in str(path)
    for error in busy:
        assert f"process {pid}" in str(error) and "running a turn" in str(error)
        assert error.data["holderPid"] == pid
    log = (sample / "acp-stderr.log").read_text()
    assert "Traceback" not in log
