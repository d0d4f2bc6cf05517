"""`run -p` with sub-agents, as real processes: a forked child ends as soon as its parent
is SIGKILLed, whatever it is doing (here: waiting for a model request that streams on)."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

from cli_support import cli_env
from process_tree import alive, descendants

from liveforge.testing import FakeProvider, reply


def _fork_child(parent: int, timeout: float = 60) -> int:
    """The pid of the forked sub-agent process under `parent`, once it exists."""
    end = time.monotonic() + timeout
    while time.monotonic() < end:
        for pid in descendants(parent):
            try:
                argv = Path(f"/proc/{pid}/cmdline").read_bytes()
            except OSError:
                continue
            if b"liveforge.subagent_process" in argv:
                return pid
        time.sleep(0.05)
    raise AssertionError("no forked sub-agent process appeared")


def test_a_forked_child_ends_when_its_parent_is_killed(sample: Path):
    """`run -p` spawns a forked child whose model request streams for ~50 s; SIGKILL of the
    parent ends the child (and what it started) well before that request would return."""
    with FakeProvider() as fake:
        fake.add(
            reply.tool_call("spawn_agent", {"task": "slowly", "model": "slow", "fork": True}),
            reply.tool_call("agent_result", {"agent_id": "a.1", "wait": 120}),
            reply.text("never reached"),
        )
        fake.add(reply.text("word " * 400).chunked(2).slow(0.05), model="slow")
        env = cli_env(
            ANTHROPIC_BASE_URL=fake.base_url,
            ANTHROPIC_API_KEY="test-key",
            LIVEFORGE_MODEL="anthropic:test-model",
        )
        parent = subprocess.Popen(
            [sys.executable, "-m", "liveforge", "run", "-p", "fork it", "--yes"],
            cwd=sample,
            env=env,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )
        try:
            child = _fork_child(parent.pid)
            while not any(r.body.get("model") == "slow" for r in fake.requests):
                time.sleep(0.05)  # the child is in its model request now
            family = {child, *descendants(child)}
            os.kill(parent.pid, signal.SIGKILL)
            parent.wait()
            end = time.monotonic() + 20  # the request would stream for ~50 s more
            while any(alive(pid) for pid in family) and time.monotonic() < end:
                time.sleep(0.05)
            assert not [pid for pid in family if alive(pid)], "the forked child outlived it"
        finally:
            if parent.poll() is None:
                parent.kill()
                parent.wait()
