"""Ctrl-C while the answer streams: the partial text is on screen exactly once, the turn ends
with a note, and (in chat) the session goes on — for both wire protocols, on the rendered
markdown path (a terminal) and the plain one (`run` with its output in a pipe).

What the user sees is read from a terminal emulator (pyte) fed the raw output, since a live
view redraws its lines many times and only the final screen tells whether one was repeated.
"""

from __future__ import annotations

import os
import pty
import signal
import subprocess
import sys
import threading
from pathlib import Path

import pexpect
import pyte
import pytest
from cli_support import cli_env
from test_chat import PROMPT, _say, _shown

from liveforge.testing import FakeProvider, reply

WORDS = "".join(f"w{i:03d}" + ("\n\n" if i % 10 == 9 else " ") for i in range(300))
SLOW = reply.text(WORDS).chunked(5).slow(0.02)  # 300 events 20 ms apart: ~6 s in full
COLUMNS, ROWS = 100, 14  # the partial answer (12 paragraphs) is taller: it scrolls


def _env(fake: FakeProvider, protocol: str) -> dict[str, str]:
    return cli_env(
        ANTHROPIC_BASE_URL=fake.base_url,
        OPENAI_BASE_URL=fake.openai_base_url,
        ANTHROPIC_API_KEY="test-key",
        OPENAI_API_KEY="test-key",
        LIVEFORGE_MODEL=f"{protocol}:test-model",
        TERM="xterm-256color",
        PROMPT_TOOLKIT_NO_CPR="1",
    )


def _screen_lines(raw: str) -> list[str]:
    """Every line a terminal of COLUMNS x ROWS shows after `raw`, scrollback included."""
    screen = pyte.HistoryScreen(COLUMNS, ROWS, history=2000)
    pyte.Stream(screen).feed(raw)
    history = [
        "".join(line[x].data for x in range(COLUMNS)).rstrip() for line in screen.history.top
    ]
    return [line for line in history + [row.rstrip() for row in screen.display] if line]


def _assert_shown_once(lines: list[str]) -> None:
    text = "\n".join(lines)
    assert text.count("w000 w001") == 1, text
    assert "answering…" not in text  # the status line went with the live view
    partial = [w for w in WORDS.split() if w in text]
    assert 1 <= len(partial) < 300, text  # cut where Ctrl-C came: neither empty nor whole
    for word in partial:
        assert text.count(word) == 1, f"{word} shown twice:\n{text}"
    assert "turn cancelled; the session continues" in text


class _Log:
    def __init__(self) -> None:
        self.parts: list[str] = []

    def write(self, data: str) -> None:
        self.parts.append(data)

    def flush(self) -> None:
        pass


@pytest.mark.parametrize("protocol", ["anthropic", "openai"])
def test_chat_ctrl_c_while_markdown_streams(sample: Path, protocol: str):
    """In the chat's terminal: Ctrl-C mid-answer, the partial answer once, then a new turn."""
    with FakeProvider(script=[SLOW, reply.text("Yes, still here.")]) as fake:
        child = pexpect.spawn(
            sys.executable,
            ["-m", "liveforge", "chat", "--project", str(sample)],
            cwd=str(sample),
            env=_env(fake, protocol),
            encoding="utf-8",
            timeout=60,
            dimensions=(ROWS, COLUMNS),
        )
        log = child.logfile_read = _Log()
        child.expect_exact(PROMPT)
        _say(child, "talk")
        child.expect("w120")
        child.sendcontrol("c")
        _shown(child, "turn cancelled")
        child.expect_exact(PROMPT)
        _say(child, "still there?")
        _shown(child, "Yes, still here.")
        child.expect_exact(PROMPT)
        child.sendcontrol("d")
        child.expect(pexpect.EOF)
    _assert_shown_once(_screen_lines("".join(log.parts)))


@pytest.mark.parametrize("protocol", ["anthropic", "openai"])
def test_run_ctrl_c_while_plain_text_streams(sample: Path, protocol: str):
    """`run -p` with stdout in a pipe: SIGINT once the answer streams (the status line on
    the terminal says so) prints the partial text once, then the note; exit 130."""
    with FakeProvider(script=[SLOW]) as fake:
        master, slave = pty.openpty()
        child = subprocess.Popen(
            [sys.executable, "-m", "liveforge", "run", "-p", "talk"],
            cwd=sample,
            env=_env(fake, protocol),
            stdin=subprocess.DEVNULL,
            stdout=subprocess.PIPE,
            stderr=slave,
            text=True,
        )
        os.close(slave)
        answering = threading.Event()
        reader = threading.Thread(target=_watch, args=(master, answering))
        reader.start()
        assert answering.wait(60), "the status line never said the answer streams"
        child.send_signal(signal.SIGINT)
        stdout, _ = child.communicate(timeout=60)
        reader.join(10)
    assert child.returncode == 130
    _assert_shown_once(_screen_lines(stdout.replace("\n", "\r\n")))


def _watch(master: int, answering: threading.Event) -> None:
    """Read the terminal until it closes; set `answering` once the status line says so."""
    seen = b""
    while True:
        try:
            data = os.read(master, 65536)
        except OSError:
            break
        if not data:
            break
        seen = (seen + data)[-4096:]
        if b"answering" in seen:
            answering.set()
    os.close(master)
