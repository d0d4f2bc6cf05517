"""While the model works, the status line shows the time and the tokens so far: in the chat's
terminal, and on `run`'s standard error — never in the `--json` object on standard output."""

from __future__ import annotations

import json
import os
import pty
import re
import subprocess
import sys
import threading
from pathlib import Path

import pexpect
from cli_support import FIX, cli_env
from test_chat import PROMPT, _say, _spawn

from liveforge.testing import FakeProvider, reply

WAIT = re.compile(
    r"(waiting for the model|answering)… (\d+\.\d)s · ~(\d+) tokens? out · ([\d,]+) in"
)
SLOW_PATCH = (
    reply.tool_call("patch", {"path": "pricing.cart.Line.subtotal", "source": FIX})
    .chunked(3)
    .slow(0.02)
)


def _counts(text: str) -> list[tuple[str, float, int, int]]:
    plain = re.sub(r"\x1b\[[0-9;?]*[A-Za-z]", "", text)
    return [
        (label, float(secs), int(out), int(given.replace(",", "")))
        for label, secs, out, given in WAIT.findall(plain)
    ]


def test_chat_status_counts_tokens_while_the_model_writes_a_tool_call(sample: Path):
    """A patch streaming as tool arguments shows no text, yet the status line's clock and
    token count rise; the answer's text then streams with the same line under it."""
    answer = reply.text("Patched it. " * 30).chunked(6).slow(0.02)
    with FakeProvider(script=[SLOW_PATCH, answer]) as fake:
        child = _spawn(sample, fake, "--mode", "auto-edit")
        _say(child, "fix the discount")
        child.expect("patch c1 method")
        seen = _counts(child.before)
        child.expect_exact(PROMPT)
        later = _counts(child.before)
        child.sendcontrol("d")  # warns once about the change only in memory
        child.expect("changed only in memory")
        child.expect_exact(PROMPT)  # a Ctrl-D sent before the prompt is back is not read
        child.sendcontrol("d")
        child.expect(pexpect.EOF)
    writing = [c for c in seen if c[0] == "waiting for the model"]
    assert len({c[2] for c in writing}) > 2, seen  # the count moves while nothing else shows
    assert writing[-1][2] > writing[0][2] and writing[-1][1] >= writing[0][1]
    assert all(c[3] > 1000 for c in writing)  # the request's input tokens, as reported
    assert any(c[0] == "answering" and c[2] > 0 for c in later), later


def test_run_json_keeps_the_status_line_on_stderr(sample: Path):
    """`run --json` on a terminal: stderr shows the live token count, stdout is one JSON
    object and nothing else."""
    env = cli_env(
        ANTHROPIC_API_KEY="test-key", LIVEFORGE_MODEL="anthropic:test-model", TERM="xterm"
    )
    with FakeProvider(script=[SLOW_PATCH, reply.text("Done.")]) as fake:
        env["ANTHROPIC_BASE_URL"] = fake.base_url
        master, slave = pty.openpty()
        args = ["run", "--json", "--mode", "auto-edit", "-p", "fix it"]
        child = subprocess.Popen(
            [sys.executable, "-m", "liveforge", *args],
            cwd=sample,
            env=env,
            stdin=subprocess.DEVNULL,
            stdout=subprocess.PIPE,
            stderr=slave,
        )
        os.close(slave)
        stderr: list[bytes] = []
        reader = threading.Thread(target=_drain, args=(master, stderr))
        reader.start()
        stdout, _ = child.communicate(timeout=120)
        reader.join(10)
    report = json.loads(stdout)
    assert report["ok"] and report["answer"] == "Done."
    assert len({c[2] for c in _counts(b"".join(stderr).decode())}) > 2
    assert b"tokens out" not in stdout


def _drain(master: int, into: list[bytes]) -> None:
    """Read the pty until the child closed it."""
    while True:
        try:
            data = os.read(master, 65536)
        except OSError:
            break
        if not data:
            break
        into.append(data)
    os.close(master)
