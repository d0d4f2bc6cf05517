"""What the terminal chat shows, read off a real pseudo-terminal: a tool's time, slash
command results in one line, the provider table, a shell command's output and files, and
files the shell wrote surviving --resume."""

from __future__ import annotations

import re
import time
from pathlib import Path

import pexpect
from cli_support import FIX
from test_chat import _ANSI, PROMPT, _say, _shown, _spawn

from liveforge.testing import FakeProvider, reply

_CODES = re.compile(r"\x1b\[[0-9;?]*[A-Za-z]|\x1b\][^\x07]*\x07|\r")


def _plain(text: str) -> str:
    """Terminal output without colour codes and carriage returns."""
    return _CODES.sub("", text)


def _answer_of(child: pexpect.spawn, command: str) -> list[str]:
    """The non-empty lines a slash command printed before the next prompt."""
    _say(child, command)
    child.expect(rf"\n{_ANSI}{PROMPT}")  # the next prompt, on a line of its own
    text = _plain(child.before)
    lines = [line.strip() for line in text.splitlines() if line.strip()]
    return [line for line in lines if command not in line and not line.startswith("⠋")]


def test_a_tools_time_leaves_out_the_time_its_approval_waited(sample: Path):
    """The person takes three seconds to approve a patch; the patch's time shown after it
    is its own, under those three seconds."""
    script = [
        reply.tool_call("patch", {"path": "pricing.cart.Line.subtotal", "source": FIX}),
        reply.text("Patched."),
    ]
    with FakeProvider(script=script) as fake:
        child = _spawn(sample, fake, "--mode", "ask")
        _say(child, "fix the discount")
        _shown(child, "Allow patch? [y]es / [N]o")
        time.sleep(3)
        child.send("y\r")
        child.expect(rf"✓ {_ANSI}patch (\d+\.\d+)s")
        took = float(child.match.group(1))
        _shown(child, "Patched.")
        child.expect_exact(PROMPT)
        child.sendcontrol("d")  # warns once about the change only in memory
        _shown(child, "changed only in memory")
        child.expect_exact(PROMPT)  # a second Ctrl-D before the prompt is back is not read
        child.sendcontrol("d")
        child.expect(pexpect.EOF)
        child.close()
    assert took < 3.0, f"the patch's time includes the wait for its approval: {took}s"


def test_slash_verify_tests_and_model_read_as_the_readme_says(sample: Path):
    """`/verify 1/0` names the error once; `/tests` says its result in one line (counts
    and the failing tests); `/model` lists providers in aligned columns, the long
    openai-compatible name included."""
    with FakeProvider(script=[]) as fake:
        child = _spawn(sample, fake)
        said = _answer_of(child, "/verify 1/0")
        assert sum(line.count("ZeroDivisionError") for line in said) == 1, said
        said = _answer_of(child, "/tests -q")
        assert len(said) == 1, said
        assert said[0].startswith("✗ tests failed") and "2 failed" in said[0]
        assert "failing: " in said[0] and " · run " in said[0]
        said = _answer_of(child, "/model")
        rows = [line for line in said if re.match(r"^(anthropic|openai|ollama|gemini)", line)]
        assert any(line.startswith("openai-compatible ") for line in rows), said
        columns = {_column_of_protocol(line) for line in rows}
        assert len(rows) >= 3 and len(columns) == 1, said
        child.sendcontrol("d")
        child.expect(pexpect.EOF)
        child.close()
        assert fake.requests == []


def _column_of_protocol(line: str) -> int:
    """Where the second column of a provider row starts."""
    match = re.match(r"^\S+\s+", line)
    assert match is not None
    return match.end()


def test_exec_shows_its_output_and_files_and_they_survive_resume(sample: Path):
    """A successful exec shows its exit, the files it wrote and its output; /diff shows the
    file the shell wrote; after --resume /diff still shows it and /undo puts it back
    (the file is gone again)."""
    command = "echo hello-from-the-shell; echo made > made.txt"
    script = [
        reply.tool_call("exec", {"command": command}),
        reply.text("Ran it."),
    ]
    with FakeProvider(script=script) as fake:
        child = _spawn(sample, fake, "--mode", "full-auto")
        _say(child, "run the command")
        child.expect(rf"✓ {_ANSI}exec \d+\.\d+s")
        _shown(child, "exit 0")
        _shown(child, "files: ")
        _shown(child, "made.txt")
        _shown(child, "hello-from-the-shell")
        _shown(child, "Ran it.")
        child.expect_exact(PROMPT)
        _say(child, "/diff")
        _shown(child, "+made")
        child.expect_exact(PROMPT)
        child.sendcontrol("d")
        if child.expect_exact([PROMPT, pexpect.EOF]) == 0:  # it warned first: leave for good
            child.sendcontrol("d")
            child.expect(pexpect.EOF)
        child.close()
    assert (sample / "made.txt").read_text() == "made\n"
    with FakeProvider(script=[]) as fake:
        child = _spawn(sample, fake, "--resume", "--mode", "full-auto")
        _say(child, "/diff")
        _shown(child, "$ " + command)
        _shown(child, "+made")
        child.expect_exact(PROMPT)
        _say(child, "/undo")
        _shown(child, "made.txt")
        child.expect_exact(PROMPT)
        child.sendcontrol("d")
        child.expect(pexpect.EOF)
        child.close()
    assert not (sample / "made.txt").exists()
