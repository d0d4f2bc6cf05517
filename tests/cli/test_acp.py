"""`liveforge acp` driven by the ACP SDK's client side, as an editor drives it: a child process
over stdio, a scripted model over loopback HTTP, permission questions answered."""

from __future__ import annotations

import asyncio
import sys
from pathlib import Path
from typing import Any

import pytest
from cli_support import FIX

from liveforge.testing import FakeProvider, reply

acp = pytest.importorskip("acp")
from acp import PROTOCOL_VERSION, text_block  # noqa: E402
from acp.schema import AllowedOutcome, DeniedOutcome, RequestPermissionResponse  # noqa: E402
from acp_support import acp_agent  # noqa: E402

PRICE = "from pricing.cart import Line\nLine('tea', 100, 10).subtotal()"


class Editor:
    """The client side: records every session update and answers permission questions."""

    def __init__(self, answer: str = "allow_once") -> None:
        self.answer = answer
        self.updates: list[Any] = []
        self.questions: list[Any] = []
        self.said = ""
        self.heard = asyncio.Event()
        self.watch = ""
        """`heard` is set once the streamed text holds `watch`."""
        self.asked = asyncio.Event()
        self.cancelled = asyncio.Event()

    async def session_update(self, session_id: str, update: Any, **_: Any) -> None:
        self.updates.append(update)
        if update.session_update == "agent_message_chunk":
            self.said += update.content.text
            if self.watch and self.watch in self.said:
                self.heard.set()

    async def request_permission(
        self, options: list[Any], session_id: str, tool_call: Any, **_: Any
    ) -> RequestPermissionResponse:
        self.questions.append((tool_call, [o.option_id for o in options]))
        self.asked.set()
        if self.answer == "wait":  # as the protocol asks: a cancel answers open questions
            await self.cancelled.wait()
        if self.answer in ("cancel", "wait"):
            return RequestPermissionResponse(outcome=DeniedOutcome(outcome="cancelled"))
        return RequestPermissionResponse(
            outcome=AllowedOutcome(outcome="selected", option_id=self.answer)
        )

    def of(self, kind: str) -> list[Any]:
        return [u for u in self.updates if u.session_update == kind]


async def _session(editor: Editor, fake: FakeProvider, project: Path, run: Any) -> Any:
    async with acp_agent(editor, fake, project) as (conn, process):
        init = await conn.initialize(protocol_version=PROTOCOL_VERSION)
        assert init.protocol_version == PROTOCOL_VERSION
        assert init.agent_capabilities.load_session is True
        session = await conn.new_session(cwd=str(project), mcp_servers=[])
        assert session.modes.current_mode_id == "ask"
        result = await run(conn, session.session_id)
    await asyncio.wait_for(process.wait(), 30)
    return result


def test_a_prompt_patches_the_running_program_after_the_editor_allows_it(sample: Path):
    """initialize, new session, a prompt whose scripted answer patches code: the editor is
    asked with the diff, allows it once, gets the tool call's diff as diff content and the
    streamed answer; the patch is live (the next call runs the fixed code); then a cancel
    during a slow stream ends the next prompt with `cancelled`."""
    script = [
        reply.tool_call("patch", {"path": "pricing.cart.Line.subtotal", "source": FIX}),
        reply.tool_call("execute", {"code": PRICE}),
        reply.text("Fixed: ten units now get the bulk discount.").chunked(6),
        reply.text("A long answer that the editor will cancel. " * 20).chunked(4).slow(0.05),
    ]
    editor = Editor()

    async def run(conn: Any, sid: str) -> Any:
        first = await conn.prompt(session_id=sid, prompt=[text_block("fix the bulk discount")])
        chunks_before = len(editor.of("agent_message_chunk"))
        editor.watch = "A long answer"  # the second answer is streaming
        second = asyncio.ensure_future(
            conn.prompt(session_id=sid, prompt=[text_block("explain at length")])
        )
        await asyncio.wait_for(editor.heard.wait(), 30)
        await conn.cancel(session_id=sid)
        stopped = await asyncio.wait_for(second, 30)
        return first, stopped, chunks_before

    with FakeProvider(script=script) as fake:
        first, stopped, chunks_before = asyncio.run(_session(editor, fake, sample, run))
    assert first.stop_reason == "end_turn"
    patch_q, run_q = editor.questions
    assert patch_q[0].kind == "edit" and "quantity >= BULK_QUANTITY" in str(patch_q[0].content)
    assert patch_q[1] == ["allow_once", "allow_always", "reject_once", "reject_always"]
    assert run_q[0].kind == "execute" and "subtotal()" in str(run_q[0].content)
    started = {u.tool_call_id: u for u in editor.of("tool_call")}
    patch_id = next(i for i, u in started.items() if u.title.startswith("patch"))
    assert started[patch_id].kind == "edit"
    progress = [u for u in editor.of("tool_call_update") if u.tool_call_id == patch_id]
    [diff] = [c for u in progress for c in (u.content or []) if c.type == "diff"]
    assert diff.path.endswith("pricing/cart.py")
    assert "if self.quantity > BULK_QUANTITY" in diff.old_text
    assert "if self.quantity >= BULK_QUANTITY" in diff.new_text
    assert [u.status for u in progress if u.status] == ["in_progress", "completed"]  # allowed
    run_id = next(i for i, u in started.items() if u.title.startswith("execute"))
    ran = [u for u in editor.of("tool_call_update") if u.tool_call_id == run_id]
    assert ran[-1].status == "completed" and "900" in str(ran[-1].content)  # the fixed price
    said = "".join(u.content.text for u in editor.of("agent_message_chunk")[:chunks_before])
    assert "Fixed: ten units now get the bulk discount." in said
    assert len(editor.of("agent_message_chunk")[:chunks_before]) > 1  # streamed in chunks
    assert stopped.stop_reason == "cancelled"
    assert editor.said.count("A long answer") < 20  # the stream stopped early
    assert "quantity > BULK" in (sample / "pricing" / "cart.py").read_text()  # memory only


def test_modes_checks_and_a_rejected_question(sample: Path):
    """In `auto-edit` (set by the editor) the patch runs unasked and a check of it shows its
    result line; the editor rejects the execute for good: the tool call fails, the model is
    told, and the next execute is refused without a question."""
    check = "from pricing.cart import Line\nassert Line('tea', 100, 10).subtotal() == 900"
    script = [
        reply.tool_call("patch", {"path": "pricing.cart.Line.subtotal", "source": FIX}),
        reply.tool_call("verify", {"code": check}),
        reply.tool_call("execute", {"code": PRICE}),
        reply.tool_call("execute", {"code": PRICE + " + 1"}),
        reply.text("I left it as it was."),
    ]
    editor = Editor(answer="reject_always")

    async def run(conn: Any, sid: str) -> Any:
        await conn.set_session_mode(session_id=sid, mode_id="auto-edit")
        return await conn.prompt(session_id=sid, prompt=[text_block("fix it")])

    with FakeProvider(script=script) as fake:
        result = asyncio.run(_session(editor, fake, sample, run))
        patched = fake.requests[1].body["messages"][-1]["content"][0]
        ran = fake.requests[3].body["messages"][-1]["content"][0]
        again = fake.requests[4].body["messages"][-1]["content"][0]
    assert result.stop_reason == "end_turn"
    # auto-edit: the patch runs unasked; execute is asked about and rejected
    [(question, _)] = editor.questions
    assert question.kind == "execute"
    assert not patched.get("is_error")
    assert ran["is_error"] is True and "declined" in str(ran["content"])
    # "always reject" is a rule of the session now: refused without a second question
    assert again["is_error"] is True and "refused by a deny rule" in str(again["content"])
    failed = [u for u in editor.of("tool_call_update") if u.status == "failed"]
    assert [u.tool_call_id for u in failed] == [ran["tool_use_id"], again["tool_use_id"]]
    [checked] = [u for u in editor.of("tool_call") if u.title.startswith("verify")]
    assert checked.kind == "execute"
    shown = [u for u in editor.of("tool_call_update") if u.tool_call_id == checked.tool_call_id]
    assert "snippet" in str(shown[-1].content) and "passed" in str(shown[-1].content)


SERVER = Path(__file__).resolve().parent.parent / "fixtures" / "mcp" / "tool_server.py"


def test_editor_mcp_servers_are_used_and_a_session_loads_back(sample: Path):
    """An MCP server the editor offers in session/new is the agent's (its read-only tool runs
    in `ask` mode); a second `liveforge acp` loads that session by its id and sends its
    conversation back as message chunks and tool calls."""
    from acp.schema import McpServerStdio

    script = [
        reply.tool_call("mcp__shop__lookup", {"item": "apple"}),
        reply.text("Apples cost 30 cents."),
    ]
    editor = Editor()
    offered = McpServerStdio(name="shop", command=sys.executable, args=[str(SERVER)], env=[])
    offered.args.append("stdio")

    async def first(conn: Any, _: str) -> Any:
        new = await conn.new_session(cwd=str(sample), mcp_servers=[offered])
        done = await conn.prompt(session_id=new.session_id, prompt=[text_block("apples?")])
        return new.session_id, done

    with FakeProvider(script=script) as fake:
        sid, done = asyncio.run(_session(editor, fake, sample, first))
    assert done.stop_reason == "end_turn"
    [call] = [u for u in editor.of("tool_call") if u.title.startswith("mcp__shop__lookup")]
    assert call.kind == "read" and not editor.questions
    finished = [u for u in editor.of("tool_call_update") if u.tool_call_id == call.tool_call_id]
    assert finished[-1].status == "completed" and "apple costs 30 cents" in str(finished[-1])

    later = Editor()

    async def load(conn: Any, _: str) -> Any:
        return await conn.load_session(cwd=str(sample), session_id=sid, mcp_servers=[])

    with FakeProvider(script=[]) as fake:
        loaded = asyncio.run(_session(later, fake, sample, load))
    assert loaded.modes.current_mode_id == "ask"
    assert [u.content.text for u in later.of("user_message_chunk")] == ["apples?"]
    assert [u.content.text for u in later.of("agent_message_chunk")] == ["Apples cost 30 cents."]
    assert [u.title for u in later.of("tool_call")] == ["mcp__shop__lookup"]


def test_a_cancel_while_a_question_is_open_ends_the_prompt_and_changes_nothing(sample: Path):
    """The editor cancels while the patch's question is open (and answers it "cancelled", as
    the protocol asks): the prompt ends with `cancelled`, the call is closed as failed, the
    program is not patched, and the session takes the next prompt."""
    script = [
        reply.tool_call("patch", {"path": "pricing.cart.Line.subtotal", "source": FIX}),
        reply.tool_call("execute", {"code": PRICE}),
        reply.text("Still the old price."),
    ]
    editor = Editor(answer="wait")

    async def run(conn: Any, sid: str) -> Any:
        first = asyncio.ensure_future(conn.prompt(session_id=sid, prompt=[text_block("fix")]))
        await asyncio.wait_for(editor.asked.wait(), 30)
        await conn.cancel(session_id=sid)
        editor.cancelled.set()
        stopped = await asyncio.wait_for(first, 30)
        editor.answer = "allow_once"
        after = await conn.prompt(session_id=sid, prompt=[text_block("price?")])
        return stopped, after

    with FakeProvider(script=script) as fake:
        stopped, after = asyncio.run(_session(editor, fake, sample, run))
        ran = fake.requests[-1].body["messages"][-1]["content"][0]
    assert stopped.stop_reason == "cancelled" and after.stop_reason == "end_turn"
    patch_id = editor.questions[0][0].tool_call_id
    closed = [u for u in editor.of("tool_call_update") if u.tool_call_id == patch_id]
    # an update carries only what changed: its last status is the call's last word
    assert [u.status for u in closed if u.status is not None][-1] == "failed"
    assert not [c for u in closed for c in (u.content or []) if c.type == "diff"]
    assert "1000" in str(ran["content"])  # the old code still runs: no bulk discount
