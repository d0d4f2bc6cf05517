"""`liveforge chat` driven for real in a pseudo-terminal against the fake provider."""

from __future__ import annotations

import json
import re
import sys
from pathlib import Path

import pexpect
from cli_support import FIX, cli_env

from liveforge.testing import FakeProvider, reply

PROMPT = "› "
_ANSI = r"(?:\x1b\[[0-9;?]*[A-Za-z])*"


def _shown(child: pexpect.spawn, text: str) -> None:
    """Wait until `text` is on screen, whatever colour codes rich put between its characters."""
    child.expect(_ANSI.join(re.escape(ch) for ch in text))


def _spawn(
    project: Path, fake: FakeProvider, *args: str, header: tuple[str, ...] = ()
) -> pexpect.spawn:
    """A chat in a pty, at its first prompt; `header`: texts its header shows, in order."""
    env = cli_env(
        ANTHROPIC_BASE_URL=fake.base_url,
        ANTHROPIC_API_KEY="test-key",
        LIVEFORGE_MODEL="anthropic:test-model",
        TERM="xterm-256color",
        PROMPT_TOOLKIT_NO_CPR="1",
    )
    child = pexpect.spawn(
        sys.executable,
        ["-m", "liveforge", "chat", "--project", str(project), *args],
        cwd=str(project),
        env=env,
        encoding="utf-8",
        timeout=60,
        dimensions=(50, 160),
    )
    for text in header:
        _shown(child, text)
    _shown(child, "/help for commands")
    child.expect_exact(PROMPT)
    return child


def _say(child: pexpect.spawn, text: str) -> None:
    child.send(text + "\r")


def _leave_with_changes(child: pexpect.spawn) -> None:
    """Ctrl-D with changes only in memory warns and stays; a second Ctrl-D leaves."""
    child.sendcontrol("d")
    _shown(child, "changed only in memory: pricing.cart")
    child.expect_exact(PROMPT)
    child.sendcontrol("d")
    child.expect(pexpect.EOF)


def _transcript(project: Path) -> list[dict]:
    files = list((project / ".liveforge" / "sessions").glob("*.jsonl"))
    assert len(files) == 1
    return [json.loads(line) for line in files[0].read_text().splitlines()]


def test_chat_streams_patches_undoes_cancels_and_saves(sample: Path):
    """Prompt -> streamed text and a coloured patch diff; /undo; Ctrl-C mid-turn; Ctrl-D."""
    script = [
        reply.text("Looking at the cart now.").tool_call(
            "patch", {"path": "pricing.cart.Line.subtotal", "source": FIX}
        ),
        reply.text("Patched `subtotal` in memory."),
        reply.text("word " * 400).chunked(4).slow(0.02),
        reply.text("Yes, still here."),
    ]
    with FakeProvider(script=script) as fake:
        child = _spawn(sample, fake, "--mode", "auto-edit")
        _say(child, "fix the bulk discount")
        _shown(child, "Looking at the cart now.")
        _shown(child, "● patch(")
        _shown(child, "patch c1 method pricing.cart.Line.subtotal")
        _shown(child, ">= BULK_QUANTITY")
        _shown(child, "Patched")
        _shown(child, "tokens: ")
        child.expect_exact(PROMPT)

        _say(child, "/undo")
        _shown(child, "rolled back")
        child.expect_exact(PROMPT)
        _say(child, "/diff")
        _shown(child, "no unpersisted changes")
        child.expect_exact(PROMPT)

        _say(child, "tell me a long story")
        _shown(child, "word word word")
        child.sendcontrol("c")
        _shown(child, "turn cancelled")
        child.expect_exact(PROMPT)
        _say(child, "still there?")
        _shown(child, "Yes, still here.")
        child.expect_exact(PROMPT)

        child.sendcontrol("d")
        child.expect("transcript saved: ")
        child.expect(pexpect.EOF)
        child.close()
    assert child.exitstatus == 0
    assert "quantity > BULK" in (sample / "pricing" / "cart.py").read_text()
    records = _transcript(sample)
    texts = json.dumps(records)
    assert "fix the bulk discount" in texts and "still there?" in texts
    assert "Yes, still here." in texts
    assert any(r.get("t") == "turn" and "cancelled" in json.dumps(r) for r in records)


def test_chat_asks_before_persisting_and_honours_no(sample: Path):
    """In auto-edit a patch runs at once, a persist call shows the diff and waits for the
    person; answering n leaves the file untouched."""
    script = [
        reply.tool_call("patch", {"path": "pricing.cart.Line.subtotal", "source": FIX}),
        reply.tool_call("persist", {}),
        reply.text("Understood, not saved."),
    ]
    with FakeProvider(script=script) as fake:
        child = _spawn(sample, fake, "--mode", "auto-edit")
        _say(child, "fix and save")
        _shown(child, "The agent wants to run persist (write):")
        _shown(child, "+        if self.quantity >= BULK_QUANTITY:")
        _shown(child, "Allow persist? [y]es / [N]o")
        child.send("n\r")
        _shown(child, "Understood, not saved.")
        child.expect_exact(PROMPT)
        declined = fake.requests[2].body["messages"][-1]["content"][0]
        _leave_with_changes(child)
        child.close()
    assert declined["is_error"] is True and "declined" in str(declined["content"])
    assert "quantity > BULK" in (sample / "pricing" / "cart.py").read_text()


def test_slash_help_and_unknown_command(sample: Path):
    """/help lists the commands; an unknown command suggests close ones; an unknown change
    id is said in chat words (no `history()`)."""
    with FakeProvider(script=[]) as fake:
        child = _spawn(sample, fake)
        _say(child, "/help")
        for name in ("/undo", "/persist", "/sessions", "/quit"):
            _shown(child, name)
        child.expect_exact(PROMPT)
        _say(child, "/perist")
        _shown(child, "unknown command /perist; did you mean /persist")
        child.expect_exact(PROMPT)
        _say(child, "/undo c9")
        _shown(child, "no change 'c9'; recent changes: none yet.")
        child.expect_exact(PROMPT)
        assert "history()" not in child.before
        child.send("/quit\r")
        child.expect("transcript saved")
        child.expect(pexpect.EOF)
        child.close()
    assert child.exitstatus == 0


def test_chat_without_a_provider_names_what_to_set(sample: Path):
    """No key configured: exit 2 with the variable to set and a pointer to the demo."""
    child = pexpect.spawn(
        sys.executable,
        ["-m", "liveforge", "chat"],
        cwd=str(sample),
        env=cli_env(TERM="xterm"),
        encoding="utf-8",
        timeout=60,
    )
    _shown(child, "ANTHROPIC_API_KEY")
    _shown(child, "liveforge demo")
    child.expect(pexpect.EOF)
    child.close()
    assert child.exitstatus == 2


def test_slash_commands_check_and_switch_without_the_model(sample: Path):
    """/tests and /runs use the sandbox (an unknown run id points to /runs), /model
    switches, /clear and /sessions manage sessions (a sub-agent's session is counted, not
    listed); none of them sends a model request."""
    from liveforge.declarations.messages import Message
    from liveforge.declarations.session import Session
    from liveforge.impls.session_store import close_transcript

    sub = Session.create(sample, session_id="20250101-000000-child0")
    sub.note("parent", "sub-agent a1 of session 20250101-000000-parent", parent_session="x")
    sub.append(Message.user("a sub-agent's task"))
    close_transcript(sub)
    with FakeProvider(script=[]) as fake:
        child = _spawn(sample, fake)
        _say(child, "/tests -q")
        _shown(child, "2 failed")
        child.expect_exact(PROMPT)
        _say(child, "/runs")
        _shown(child, "tests failed")
        child.expect_exact(PROMPT)
        _say(child, "/runs nosuch")
        _shown(child, "is not a run id; list the runs with /runs")
        child.expect_exact(PROMPT)
        _say(child, "/model nowhere:model-x")
        _shown(child, "unknown provider 'nowhere'")
        child.expect_exact(PROMPT)
        _say(child, "/model anthropic:other-model")
        _shown(child, "model: anthropic:other-model")
        child.expect_exact(PROMPT)
        _say(child, "/clear")
        _shown(child, "new session")
        child.expect_exact(PROMPT)
        _say(child, "/sessions")
        _shown(child, "not shown: 1 of sub-agents")
        listed = child.before
        _shown(child, "resume one with")
        child.expect_exact(PROMPT)
        child.sendcontrol("d")
        child.expect(pexpect.EOF)
        child.close()
        assert "unpersisted" in listed and "child0" not in listed
        assert fake.requests == []
    assert len(list((sample / ".liveforge" / "sessions").glob("*.jsonl"))) == 3


def test_tab_completes_dotted_paths_and_commands(sample: Path):
    """Tab after a dotted prefix completes from the live modules; after / it completes commands."""
    script = [reply.text("ok")]
    with FakeProvider(script=script) as fake:
        child = _spawn(sample, fake)
        child.send("look at pricing.coup\t")
        _shown(child, "pricing.coupons")
        child.send("\r")
        _shown(child, "ok")
        child.expect_exact(PROMPT)
        child.send("/sess\t")
        _shown(child, "/sessions")
        child.send("\r")
        _shown(child, "resume one with")
        child.expect_exact(PROMPT)
        child.sendcontrol("d")
        child.expect(pexpect.EOF)
        child.close()
        asked = fake.requests[0].body["messages"][-1]["content"]
    assert "look at pricing.coupons" in json.dumps(asked)


def test_tab_after_a_slash_lists_commands_with_their_descriptions(sample: Path):
    """Tab after `/` opens a menu of the commands, each with what it does beside it."""
    with FakeProvider(script=[]) as fake:
        child = _spawn(sample, fake)
        child.send("/\t")
        _shown(child, "/clear")
        _shown(child, "start a new conversation")
        _shown(child, "/diff")
        _shown(child, "unpersisted changes (memory vs files)")
        child.close(force=True)  # what closing the menu does is not this test's question
        assert fake.requests == []


def test_resume_brings_back_the_conversation_and_unpersisted_patch(sample: Path):
    """--resume continues the latest session: earlier messages are sent again, the
    unpersisted patch is re-applied to the new process under the id shown before (c2, after
    an undone c1, not a fresh c1), `/undo` takes that id, and the session's token totals
    continue."""
    wrong = FIX.replace(">= BULK_QUANTITY", ">= BULK_QUANTITY + 1")
    first = [
        reply.tool_call("patch", {"path": "pricing.cart.Line.subtotal", "source": wrong}),
        reply.tool_call("rollback", {}),
        reply.tool_call("patch", {"path": "pricing.cart.Line.subtotal", "source": FIX}),
        reply.text("Patched in memory."),
    ]
    with FakeProvider(script=first) as fake:
        child = _spawn(sample, fake, "--mode", "auto-edit")
        _say(child, "remember the word avocado and fix the discount")
        shown = []
        for _ in range(2):
            child.expect(r"patch (c\d+) \S+ pricing\.cart\.Line\.subtotal")
            shown.append(child.match.group(1))
        _shown(child, "Patched in memory.")
        child.expect_exact(PROMPT)
        _leave_with_changes(child)
        child.close()
    undone, kept = shown
    assert undone != kept
    with FakeProvider(script=[reply.text("The word was avocado.")]) as fake:
        resumed = (f"resumed: {kept} ", f": re-applied as {kept} ")
        child = _spawn(sample, fake, "--resume", "--mode", "auto-edit", header=resumed)
        _say(child, "/diff")
        _shown(child, "+        if self.quantity >= BULK_QUANTITY:")
        child.expect_exact(PROMPT)
        _say(child, "which word?")
        _shown(child, "The word was avocado.")
        child.expect(r"tokens: ([\d,]+) in / [\d,]+ out this turn · session ([\d,]+) in")
        this_turn, session = (int(g.replace(",", "")) for g in child.match.groups())
        assert session > this_turn  # the first process's tokens are carried over
        child.expect_exact(PROMPT)
        _say(child, f"/undo {kept}")
        child.expect(rf"rolled back:\s*{_ANSI}{kept} \S+ pricing\.cart")
        child.expect_exact(PROMPT)
        _say(child, "/diff")
        _shown(child, "no unpersisted changes")
        child.expect_exact(PROMPT)
        child.sendcontrol("d")
        child.expect(pexpect.EOF)
        child.close()
        sent = json.dumps(fake.requests[0].body["messages"])
    assert "remember the word avocado" in sent


def test_ctrl_c_abandons_a_slash_command_not_the_chat(sample: Path):
    """Ctrl-C during /tests returns to the prompt; the chat keeps working."""
    with FakeProvider(script=[reply.text("still alive")]) as fake:
        child = _spawn(sample, fake)
        _say(child, "/tests -q")
        _shown(child, "running the tests")
        child.sendcontrol("c")
        _shown(child, "command cancelled")
        child.expect_exact(PROMPT)
        _say(child, "hello")
        _shown(child, "still alive")
        child.expect_exact(PROMPT)
        child.sendcontrol("d")
        child.expect(pexpect.EOF)
        child.close()
    assert child.exitstatus == 0


def test_a_busy_project_is_reported_and_the_chat_goes_on(sample: Path):
    """While another front end holds the project's turn lock, a turn says so; the chat lives."""
    import liveforge.impls  # noqa: F401  (registers the Session bodies)
    from liveforge.declarations.session import Session

    holder = Session.create(sample)
    with FakeProvider(script=[reply.text("now it works")]) as fake:
        child = _spawn(sample, fake)
        with holder.turn_lock():
            _say(child, "hello")
            _shown(child, "SessionBusy")
            child.expect_exact(PROMPT)
        _say(child, "hello again")
        _shown(child, "now it works")
        child.expect_exact(PROMPT)
        child.sendcontrol("d")
        child.expect(pexpect.EOF)
        child.close()
    assert child.exitstatus == 0


def test_undo_after_persist_restores_the_file_then_the_memory(sample: Path):
    """With --yes the agent persists a verified fix; /undo puts the file back, a second /undo
    rolls the change back in memory."""
    check = "from pricing import Line\nassert Line('pen', 100, 10).subtotal() == 900"
    script = [
        reply.tool_call("patch", {"path": "pricing.cart.Line.subtotal", "source": FIX}),
        reply.tool_call("verify", {"code": check}),
        reply.tool_call("persist", {}),
        reply.text("Saved."),
    ]
    cart = sample / "pricing" / "cart.py"
    with FakeProvider(script=script) as fake:
        child = _spawn(sample, fake, "--yes")
        _say(child, "fix and save")
        _shown(child, "Saved.")
        child.expect_exact(PROMPT)
        assert ">= BULK_QUANTITY" in cart.read_text()
        _say(child, "/undo")
        _shown(child, "restored pricing.cart")
        child.expect_exact(PROMPT)
        assert "quantity > BULK" in cart.read_text()
        _say(child, "/diff")
        _shown(child, "+        if self.quantity >= BULK_QUANTITY:")
        child.expect_exact(PROMPT)
        _say(child, "/undo")
        _shown(child, "rolled back")
        child.expect_exact(PROMPT)
        _say(child, "/diff")
        _shown(child, "no unpersisted changes")
        child.expect_exact(PROMPT)
        child.sendcontrol("d")
        child.expect(pexpect.EOF)
        child.close()
    assert "quantity > BULK" in cart.read_text()
    assert "fix and save" in (sample / ".liveforge" / "chat_history").read_text()


def test_multi_line_input_with_alt_enter_and_trailing_backslash(sample: Path):
    """Alt-Enter and a trailing backslash both start a new line; Enter sends all lines."""
    with FakeProvider(script=[reply.text("got three lines")]) as fake:
        child = _spawn(sample, fake)
        child.send("first\x1b\r")
        child.send("second\\\r")
        child.send("third\r")
        _shown(child, "got three lines")
        child.expect_exact(PROMPT)
        child.sendcontrol("d")
        child.expect(pexpect.EOF)
        child.close()
        sent = fake.requests[0].body["messages"][-1]["content"]
    assert "first\nsecond\nthird" in json.dumps(sent).replace("\\n", "\n")


def test_undo_says_what_a_registry_s_dict_keeps_in_the_chat_s_words(sample: Path):
    """/undo of the agent's change that added `@HOOKS.register def audit`: the function
    stays in `HOOKS.by_name`, and the undo says so, naming the entry, and how to drop it in
    the chat's words (restart the chat, resume the session)."""
    (sample / "pricing" / "hooks.py").write_text(
        "class Registry:\n    def __init__(self):\n        self.by_name = {}\n\n"
        "    def register(self, fn):\n        self.by_name[fn.__name__] = fn\n        return fn\n"
        "\n\nHOOKS = Registry()\n"
    )
    added = "@HOOKS.register\ndef audit(total):\n    return total\n"
    script = [
        reply.tool_call("patch", {"path": "pricing.hooks.audit", "source": added}),
        reply.text("Added audit."),
    ]
    with FakeProvider(script=script) as fake:
        child = _spawn(sample, fake, "--mode", "auto-edit")
        _say(child, "add an audit hook")
        _shown(child, "Added audit.")
        child.expect_exact(PROMPT)
        _say(child, "/undo")
        _shown(child, "note: audit: this change defined it")
        _shown(child, "pricing.hooks.HOOKS.by_name['audit']")
        _shown(child, "may still be called there")
        _shown(child, "Restart the chat to drop it (/quit, then `liveforge chat --resume`")
        child.expect_exact(PROMPT)
        child.close(force=True)
