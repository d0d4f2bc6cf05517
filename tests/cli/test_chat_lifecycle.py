"""The chat's change lifecycle in a pseudo-terminal: /verify, /persist of unverified changes,
the exit warning, and Ctrl-C stopping a running check (its processes gone)."""

from __future__ import annotations

import re
import time
from pathlib import Path

import pexpect
from cli_support import FIX
from process_tree import descendants, parent
from test_chat import PROMPT, _say, _shown, _spawn

from liveforge.testing import FakeProvider, reply

PATCH = reply.tool_call("patch", {"path": "pricing.cart.Line.subtotal", "source": FIX})
SLEEPER = "import time\ntime.sleep(120)"


def _wait_for(condition, timeout: float = 30.0) -> bool:
    end = time.monotonic() + timeout
    while time.monotonic() < end:
        if condition():
            return True
        time.sleep(0.05)
    return False


def _run_process(chat_pid: int) -> set[int]:
    """Sandbox runs in progress: processes two levels below the chat (under the template, or
    under a live fork), not the namespaces the host maker keeps ready for live checks."""
    children = {p for p in descendants(chat_pid) if parent(p) == chat_pid and not _host_maker(p)}
    return {p for p in descendants(chat_pid) if parent(p) in children}


def _host_maker(pid: int) -> bool:
    try:
        return b"'_hosts'" in Path(f"/proc/{pid}/cmdline").read_bytes()
    except OSError:
        return False


def _interrupt_check(child: pexpect.spawn, started: str, stopped: str) -> None:
    """Once `started` shows and the run's process exists, Ctrl-C; `stopped` shows and the
    process is gone."""
    _shown(child, started)
    assert _wait_for(lambda: _run_process(child.pid))
    child.sendcontrol("c")
    _shown(child, stopped)
    child.expect_exact(PROMPT)
    assert _wait_for(lambda: not _run_process(child.pid), 10)


def test_verify_persist_refusal_force_and_exit_warning(sample: Path):
    """/persist names the unverified change and the commands that help, without asking;
    /verify shows the value in one line and makes the change ready; Ctrl-D warns once
    about changes only in memory."""
    with FakeProvider(script=[PATCH, reply.text("Patched in memory.")]) as fake:
        child = _spawn(sample, fake, "--mode", "auto-edit")
        _say(child, "fix the discount")
        _shown(child, "Patched in memory.")
        child.expect_exact(PROMPT)

        _say(child, "/model")
        child.expect(rf"anthropic +anthropic +{re.escape(fake.base_url)}")  # columns aligned
        _shown(child, "(key set)")
        _shown(child, "(set OPENAI_API_KEY)")
        child.expect_exact(PROMPT)

        _say(child, "/persist")
        _shown(child, "c1 pricing.cart.Line.subtotal: not verified since its last edit")
        _shown(child, "/persist --force")
        child.expect_exact(PROMPT)
        assert "quantity > BULK" in (sample / "pricing" / "cart.py").read_text()

        _say(child, "/verify from pricing import Line; Line('pen', 100, 10).subtotal()")
        child.expect(r"verify passed in [0-9.]+s [^\n]*value 900")
        child.expect_exact(PROMPT)
        _say(child, "/verify assert 1 == 2, 'nope'")
        child.expect(r"verify failed in [0-9.]+s [^\n]*AssertionError: nope")
        child.expect_exact(PROMPT)

        child.sendcontrol("d")
        _shown(child, "1 module(s) changed only in memory: pricing.cart")
        child.expect_exact(PROMPT)
        _say(child, "/persist")
        _shown(child, "Write these changes to the files? [y/N]")
        child.send("y\r")
        _shown(child, "wrote pricing.cart ->")
        child.expect_exact(PROMPT)
        child.sendcontrol("d")  # nothing only in memory now: leaves at once
        child.expect(pexpect.EOF)
        child.close()
    assert child.exitstatus == 0
    assert ">= BULK_QUANTITY" in (sample / "pricing" / "cart.py").read_text()


def test_persist_force_writes_an_unverified_change_after_saying_why(sample: Path):
    """/persist --force shows the reason the change is not ready, asks, then writes."""
    with FakeProvider(script=[PATCH, reply.text("Patched.")]) as fake:
        child = _spawn(sample, fake, "--mode", "auto-edit")
        _say(child, "fix it")
        _shown(child, "Patched.")
        child.expect_exact(PROMPT)
        _say(child, "/persist --force")
        _shown(child, "writing anyway (--force): c1 pricing.cart.Line.subtotal: not verified")
        _shown(child, "[y/N]")
        child.send("y\r")
        _shown(child, "wrote pricing.cart ->")
        child.expect_exact(PROMPT)
        child.sendcontrol("d")
        child.expect(pexpect.EOF)
        child.close()
    assert ">= BULK_QUANTITY" in (sample / "pricing" / "cart.py").read_text()


def test_ctrl_c_stops_a_running_check_and_its_processes(sample: Path):
    """Ctrl-C during /verify and during the model's verify call kills the sandbox run; the
    session goes on."""
    script = [
        reply.tool_call("verify", {"code": SLEEPER, "timeout": 120}),
        reply.text("back again"),
    ]
    with FakeProvider(script=script) as fake:
        child = _spawn(sample, fake)
        _say(child, f"/verify {SLEEPER.replace(chr(10), '; ')}")
        _interrupt_check(child, "verifying in the sandbox", "its sandbox run was stopped")
        _say(child, "check something slow")
        _interrupt_check(child, "● verify(", "turn cancelled")
        _say(child, "are you there?")
        _shown(child, "back again")
        child.expect_exact(PROMPT)
        child.sendcontrol("d")
        child.expect(pexpect.EOF)
        child.close()
    assert child.exitstatus == 0
