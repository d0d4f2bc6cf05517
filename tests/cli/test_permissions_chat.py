"""Permission modes in `liveforge chat`, driven through a pseudo-terminal."""

from __future__ import annotations

from pathlib import Path

import pexpect
from cli_support import FIX
from test_chat import PROMPT, _say, _shown, _spawn

from liveforge.testing import FakeProvider, reply

SCRIBBLE = "with open('pricing/cart.py', 'a') as f:\n    f.write('# scribbled by execute\\n')"


def test_ask_mode_shows_the_patch_and_execute_writes_are_reported_diffed_and_undone(
    sample: Path,
):
    """In ask mode a patch waits for y with its diff shown; an execute that writes a project
    file asks with its code, is reported to the model, shows in /diff, and /undo restores
    the file before it rolls back the patch."""
    script = [
        reply.tool_call("patch", {"path": "pricing.cart.Line.subtotal", "source": FIX}),
        reply.tool_call("execute", {"code": SCRIBBLE}),
        reply.text("Done both."),
    ]
    cart = sample / "pricing" / "cart.py"
    before = cart.read_text()
    with FakeProvider(script=script) as fake:
        child = _spawn(sample, fake)
        _say(child, "fix it and scribble")
        _shown(child, "The agent wants to run patch (memory):")
        _shown(child, "-    if self.quantity > BULK_QUANTITY:")
        _shown(child, "+    if self.quantity >= BULK_QUANTITY:")
        _shown(child, "Allow patch? [y]es / [N]o / [a]lways in this chat")
        child.send("y\r")
        _shown(child, "The agent wants to run execute (execute):")
        _shown(child, "scribbled by execute")
        _shown(child, "Allow execute?")
        child.send("y\r")
        _shown(child, "Done both.")
        child.expect_exact(PROMPT)
        reported = fake.requests[2].body["messages"][-1]["content"][0]["content"]
        assert cart.read_text().endswith("# scribbled by execute\n")

        _say(child, "/diff")
        _shown(child, "files written by code the agent ran")
        _shown(child, "+# scribbled by execute")
        child.expect_exact(PROMPT)
        _say(child, "/undo")
        _shown(child, "restored pricing/cart.py")
        child.expect_exact(PROMPT)
        assert cart.read_text() == before
        _say(child, "/undo")
        _shown(child, "rolled back")
        child.expect_exact(PROMPT)
        child.sendcontrol("d")
        child.expect(pexpect.EOF)
        child.close()
    assert "this code changed project files: pricing/cart.py" in str(reported)
    assert "+# scribbled by execute" in str(reported)


def test_read_only_chat_refuses_the_patch_and_no_declines_it_in_ask(sample: Path):
    """--mode read-only refuses a patch without asking; in ask mode answering n declines
    it, and the model is told either way."""
    script = [
        reply.tool_call("patch", {"path": "pricing.cart.Line.subtotal", "source": FIX}),
        reply.text("Read-only, so I only looked."),
    ]
    with FakeProvider(script=script) as fake:
        child = _spawn(sample, fake, "--mode", "read-only")
        _say(child, "fix it")
        _shown(child, "Read-only, so I only looked.")
        child.expect_exact(PROMPT)
        refused = fake.requests[1].body["messages"][-1]["content"][0]
        child.sendcontrol("d")
        child.expect(pexpect.EOF)
        child.close()
    assert refused["is_error"] and "refused by 'read-only' mode" in str(refused["content"])
    script = [
        reply.tool_call("patch", {"path": "pricing.cart.Line.subtotal", "source": FIX}),
        reply.text("Left it alone."),
    ]
    with FakeProvider(script=script) as fake:
        child = _spawn(sample, fake)
        _say(child, "fix it")
        _shown(child, "Allow patch?")
        child.send("n\r")
        _shown(child, "Left it alone.")
        child.expect_exact(PROMPT)
        declined = fake.requests[1].body["messages"][-1]["content"][0]
        _say(child, "/diff")
        _shown(child, "no unpersisted changes")
        child.expect_exact(PROMPT)
        child.sendcontrol("d")
        child.expect(pexpect.EOF)
        child.close()
    assert declined["is_error"] and "the user declined patch" in str(declined["content"])


def test_ask_mode_shows_the_exact_command_and_its_file_changes_undo(sample: Path):
    """A shell command waits for y with the exact command, its folder, the boundary and the
    network shown; what it changed shows in /diff under the command and /undo puts it back."""
    command = "sed -i 's/BULK_QUANTITY = 10/BULK_QUANTITY = 12/' pricing/cart.py && echo ok"
    script = [reply.tool_call("exec", {"command": command}), reply.text("Changed it.")]
    cart = sample / "pricing" / "cart.py"
    before = cart.read_text()
    assert "BULK_QUANTITY = 10" in before
    with FakeProvider(script=script) as fake:
        child = _spawn(sample, fake)
        _say(child, "raise the bulk quantity")
        _shown(child, "The agent wants to run exec (shell):")
        _shown(child, command)
        _shown(child, "in: .")  # the absolute folder follows (wrapped when long)
        _shown(child, "inside the check boundary")
        _shown(child, "network off")
        _shown(child, "Allow exec?")
        child.send("y\r")
        _shown(child, "Changed it.")
        child.expect_exact(PROMPT)
        assert "BULK_QUANTITY = 12" in cart.read_text()
        _say(child, "/diff")
        _shown(child, f"# $ {command}")
        _shown(child, "+BULK_QUANTITY = 12")
        child.expect_exact(PROMPT)
        _say(child, "/undo")
        _shown(child, "restored")
        child.expect_exact(PROMPT)
        assert cart.read_text() == before
        child.sendcontrol("d")
        child.expect(pexpect.EOF)
        child.close()
