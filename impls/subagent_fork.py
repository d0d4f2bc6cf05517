"""Forked sub-agents: a process on a copy of the parent's live state, and what a child reports.

A forked child is a process (`python -m liveforge.subagent_process`, in a session of its own)
fed one JSON line on its standard input, which stays open while it runs: when this process
dies, however, the pipe closes and the child ends at once (it watches the pipe). A watcher
thread waits for it (killing it at the timeout or on cancel) and reads the result file it
writes, with the modules it changed. `fork_conflicts` names the
proposed modules the parent changed since the fork, which accepting would undo.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tempfile
import threading
from collections import deque
from pathlib import Path
from typing import IO, TYPE_CHECKING, Any, Protocol

from liveforge.declarations.subagents import ChildSpec, SubAgentInfo, SubAgentStatus

if TYPE_CHECKING:
    from liveforge.kernel import Runtime

__all__ = ["ChildView", "ForkChild", "child_info", "fork_conflicts"]


class ChildView(Protocol):
    """What every kind of child (in-process or forked) exposes to `child_info`."""

    spec: ChildSpec
    task: str
    status: SubAgentStatus
    answer: str
    error: str
    turns: int
    tokens: int
    inbox: deque[str]
    fork: bool
    proposal: dict[str, Any]
    accepted: bool

    @property
    def session_id(self) -> str: ...

    @property
    def transcript(self) -> str: ...


class ForkChild:
    """A forked sub-agent: a process on a copy of the parent's live state."""

    fork = True

    def __init__(self, spec: ChildSpec, task: str, payload: dict[str, Any], timeout: float):
        self.spec, self.task, self.payload, self.timeout = spec, task, payload, timeout
        self.status: SubAgentStatus = "running"
        self.answer = self.error = self.session_id = self.transcript = ""
        self.turns = self.tokens = 0
        self.inbox: deque[str] = deque()
        self.proposal: dict[str, Any] = {}
        self.cancelled = self.timed_out = self.accepted = False
        self.process: subprocess.Popen[str] | None = None
        self.stderr: IO[bytes] | None = None
        self.thread: threading.Thread | None = None

    def start(self) -> None:
        handle, path = tempfile.mkstemp(prefix="liveforge-fork-", suffix=".json")
        os.close(handle)
        self.payload["result_path"] = path
        self.stderr = tempfile.TemporaryFile()  # read and closed by _watch
        self.process = subprocess.Popen(
            [sys.executable, "-m", "liveforge.subagent_process"],
            stdin=subprocess.PIPE,
            stdout=subprocess.DEVNULL,
            stderr=self.stderr,
            text=True,
            start_new_session=True,  # a Ctrl-C at the terminal is the parent's to handle
        )
        self.thread = threading.Thread(
            target=self._watch, args=(Path(path),), name=f"subagent-{self.spec.agent_id}"
        )
        self.thread.daemon = True
        self.thread.start()

    def _watch(self, result: Path) -> None:
        process = self.process
        assert process is not None and process.stdin is not None
        try:
            process.stdin.write(json.dumps(self.payload) + "\n")
            process.stdin.flush()  # and kept open: its closing tells the child we are gone
            process.wait(self.timeout)
        except subprocess.TimeoutExpired:
            self.timed_out = True
            self._stop()
        except OSError:
            process.wait()  # the child ended before it read its task; stderr says why
        finally:
            process.stdin.close()
        self._read(result, self._errors())
        result.unlink(missing_ok=True)

    def _errors(self) -> str:
        """The end of what the child wrote to its standard error."""
        assert self.stderr is not None
        with self.stderr:
            self.stderr.seek(0)
            return self.stderr.read()[-4000:].decode("utf-8", "replace")

    def _read(self, result: Path, err: str) -> None:
        try:
            data = json.loads(result.read_text(encoding="utf-8") or "{}")
        except (OSError, json.JSONDecodeError):
            data = {}
        self.answer, self.error = data.get("answer", ""), data.get("error", "")
        self.session_id, self.transcript = data.get("session_id", ""), data.get("transcript", "")
        self.tokens, self.turns = data.get("tokens", 0), 1 if data.get("reason") else 0
        self.proposal = data.get("changes") or {}
        if not data and not (self.cancelled or self.timed_out):
            self.error = (err or "the forked sub-agent ended without a result").strip()[-2000:]
        if self.timed_out or self.cancelled:
            self.status = "timed out" if self.timed_out else "cancelled"
        else:
            self.status = "failed" if self.error and not self.answer else "done"

    def cancel(self) -> None:
        self.cancelled = True
        self._stop()

    def _stop(self) -> None:
        process = self.process
        if process is None or process.poll() is not None:
            return
        process.terminate()
        try:
            process.wait(5)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()

    def info(self, limit: int) -> SubAgentInfo:
        return child_info(self, limit)


def child_info(child: ChildView, limit: int) -> SubAgentInfo:
    """What `SubAgents.list`/`result` say of one child, its answer cut to `limit` characters."""
    answer = child.answer
    if len(answer) > limit:
        answer = answer[:limit] + f"\n[... cut; the whole answer is in {child.transcript}]"
    return SubAgentInfo(
        id=child.spec.agent_id,
        task=child.task,
        status=child.status,
        depth=child.spec.depth,
        profile=child.spec.profile,
        session_id=child.session_id,
        transcript=child.transcript,
        answer=answer,
        error=child.error,
        turns=child.turns,
        tokens=child.tokens,
        pending=len(child.inbox),
        fork=child.fork,
        proposal=sorted(child.proposal),
        accepted=child.accepted,
    )


def fork_conflicts(rt: Runtime, child: ForkChild) -> list[str]:
    """Proposed modules this agent changed since the fork (accepting would undo that)."""
    base = child.payload["overlay"]
    found = []
    records = {r.name: r for r in rt.changed_modules()}
    for name in child.proposal:
        now = records[name].source if name in records else None
        if now != (base.get(name) or {}).get("source"):
            found.append(name)
    return found
