"""The project worker: one process per project, holding its live runtime and its agents.

The gateway starts `python -m liveforge.gateway.worker PROJECT` and speaks JSON lines with it:
commands on standard input, replies and events on standard output (the process's own
prints go to standard error, so nothing else can corrupt the channel). A project's program
lives in its own process, so two projects whose packages share a name never meet, and a
crash of one project's program never takes the gateway down.

Commands: ``run`` {run, agent_session, input} (one at a time: the project's turn lock
allows no more), ``abort`` {run}, ``answer`` {request, allow}, ``query`` {req, what,
session}. Replies: ``ready``, ``started`` {run, agent_session}, ``event`` {run, event},
``ended`` {run, reason, answer, error}, ``ask`` {run, request, question} and ``reply``
{req, ok, result | error}.
"""

from __future__ import annotations

import asyncio
import json
import os
import sys
import threading
import time
from pathlib import Path
from typing import IO, Any

__all__ = ["main"]


class _Channel:
    """The JSON-lines channel to the gateway, writable from any thread."""

    def __init__(self, out: IO[str]) -> None:
        self._out = out
        self._lock = threading.Lock()

    def send(self, kind: str, **fields: Any) -> None:
        line = json.dumps({"kind": kind, **fields}, ensure_ascii=False, default=str)
        with self._lock:
            self._out.write(line + "\n")
            self._out.flush()


class _Questions:
    """Approval questions asked from tool threads, answered by the gateway."""

    def __init__(self, channel: _Channel) -> None:
        self.channel = channel
        self._pending: dict[str, tuple[threading.Event, list[bool]]] = {}
        self._count = 0
        self.run = ""

    def ask(self, question: str) -> bool:
        """Block until the gateway answers (a closed gateway is a refusal)."""
        self._count += 1
        request = f"q{self._count}"
        done, answer = threading.Event(), [False]
        self._pending[request] = (done, answer)
        self.channel.send("ask", run=self.run, request=request, question=question)
        done.wait()
        del self._pending[request]
        return answer[0]

    def answer(self, request: str, allow: bool) -> None:
        entry = self._pending.get(request)
        if entry:
            entry[1][0] = allow
            entry[0].set()

    def refuse_all(self) -> None:
        for done, answer in list(self._pending.values()):
            answer[0] = False
            done.set()


class Worker:
    """Runs the gateway's commands against one project."""

    def __init__(self, project: Path, channel: _Channel, mode: str = "") -> None:
        from liveforge.config import load_config
        from liveforge.kernel import Runtime

        self.project = project
        self.channel = channel
        self.runtime = Runtime(project_root=project)
        self.questions = _Questions(channel)
        self.policy = load_config(project).permissions.policy(mode or None)  # type: ignore[arg-type]
        self.agents: dict[str, Any] = {}
        self.current: Any = None
        self.current_run = ""
        self.cancelled = ""  # a run asked to stop, perhaps before its turn began

    def _approve(self, request: Any) -> bool:
        """The permission policy asks: the question goes to the run's client."""
        preview = f"\n{request.preview}" if request.preview else ""
        return self.questions.ask(f"Allow {request.tool} ({request.effect})?{preview}")

    def _agent(self, agent_session: str) -> Any:
        from liveforge.agent_setup import build_agent

        agent = self.agents.get(agent_session) if agent_session else None
        if agent is None:
            agent = build_agent(
                self.project,
                runtime=self.runtime,
                resume=agent_session or None,
                policy=self.policy,
                approver=self._approve,
            )
            self.agents[agent.session.id] = agent
        return agent

    async def run(self, command: dict[str, Any]) -> None:
        """One run: build or reuse the session's agent, stream its events, report the end."""
        run = command["run"]
        self.questions.run = self.current_run = run
        reason, answer, error = "error", "", ""
        try:
            agent = self.current = self._agent(command.get("agent_session", ""))
            self.channel.send("started", run=run, agent_session=agent.session.id)
            async for event in agent.run(command["input"]):
                if self.cancelled == run:  # an abort that came before the turn began
                    self.cancelled = ""
                    agent.cancel()
                data = event.model_dump(mode="json")
                self.channel.send("event", run=run, event=data, at=time.time())
                if data["type"] == "final_answer":
                    answer = data["text"]
                elif data["type"] == "turn_ended":
                    reason = data["reason"]
        except Exception as exc:  # the run fails; the worker and the other sessions go on
            error = f"{type(exc).__name__}: {exc}"
        finally:
            self.questions.refuse_all()  # a question the ended turn left open is a "no"
            self.current, self.current_run, self.cancelled = None, "", ""
        self.channel.send("ended", run=run, reason=reason, answer=answer, error=error)

    def abort(self, run: str) -> None:
        """Cancel the running turn when it is `run`."""
        if self.current_run == run:
            self.cancelled = run  # again at the next event: the turn may not have begun
            if self.current is not None:
                self.current.cancel()

    def query(self, what: str, session: str) -> Any:
        """Read-only answers: the diff, sandbox run records, a transcript."""
        if what == "changes.diff":
            return {"diff": self.runtime.diff()}
        if what == "checks":
            return {"checks": [r.model_dump(mode="json") for r in self.runtime.runs()]}
        if what == "sessions.history":
            return {"messages": _history(self.project, session)}
        raise ValueError(f"unknown query {what!r}")


def _history(project: Path, agent_session: str) -> list[dict[str, Any]]:
    from liveforge.declarations.messages import TextBlock, ToolUseBlock
    from liveforge.declarations.session import Session

    if not agent_session:
        return []
    session = Session.open(project, agent_session)
    out = []
    for message in session.messages:
        text = "".join(b.text for b in message.content if isinstance(b, TextBlock))
        tools = [b.name for b in message.content if isinstance(b, ToolUseBlock)]

        out.append({"role": message.role, "text": text, "tools": tools})
    return out


async def _serve(worker: Worker, inbox: asyncio.Queue[dict[str, Any] | None]) -> None:
    running: asyncio.Task[None] | None = None
    while (command := await inbox.get()) is not None:
        op = command.get("op")
        if op == "run":
            running = asyncio.create_task(worker.run(command))
        elif op == "abort":
            worker.abort(command["run"])
        elif op == "answer":
            worker.questions.answer(command["request"], bool(command["allow"]))
        elif op == "query":
            try:
                result = worker.query(command["what"], command.get("session", ""))
                worker.channel.send("reply", req=command["req"], ok=True, result=result)
            except Exception as exc:
                error = {"type": type(exc).__name__, "message": str(exc)}
                worker.channel.send("reply", req=command["req"], ok=False, error=error)
    worker.questions.refuse_all()
    if running is not None:
        worker.abort(worker.current_run)
        await asyncio.gather(running, return_exceptions=True)


def _read(loop: asyncio.AbstractEventLoop, inbox: asyncio.Queue[dict[str, Any] | None]) -> None:
    for line in sys.stdin:
        if line.strip():
            loop.call_soon_threadsafe(inbox.put_nowait, json.loads(line))
    loop.call_soon_threadsafe(inbox.put_nowait, None)  # the gateway went away


async def _main(project: Path, channel: _Channel, mode: str) -> None:
    worker = Worker(project, channel, mode)
    inbox: asyncio.Queue[dict[str, Any] | None] = asyncio.Queue()
    loop = asyncio.get_running_loop()
    threading.Thread(target=_read, args=(loop, inbox), daemon=True).start()
    channel.send("ready", pid=os.getpid())
    try:
        await _serve(worker, inbox)
    finally:
        for agent in worker.agents.values():
            await agent.aclose()
        worker.runtime.close()


def _die_with_parent() -> None:
    """Ask Linux to kill this process when the gateway dies, however it dies (a SIGKILLed
    gateway cannot close the pipe in time to stop a turn, and an orphan would hold the
    project's turn lock)."""
    if sys.platform != "linux":
        return
    import ctypes
    import signal

    libc = ctypes.CDLL(None, use_errno=True)
    pr_set_pdeathsig = 1
    libc.prctl(pr_set_pdeathsig, signal.SIGKILL, 0, 0, 0)
    if os.getppid() == 1:  # the gateway died before the request took effect
        os._exit(1)


def main(argv: list[str] | None = None) -> int:
    """Entry point: `python -m liveforge.gateway.worker PROJECT [MODE]` (MODE: the
    permission mode chosen on the command line; empty: the configured one)."""
    args = sys.argv[1:] if argv is None else argv
    if len(args) not in (1, 2):
        sys.stderr.write("usage: python -m liveforge.gateway.worker PROJECT [MODE]\n")
        return 2
    _die_with_parent()
    channel = _Channel(os.fdopen(os.dup(1), "w", encoding="utf-8"))
    os.dup2(2, 1)  # stray prints go to stderr, never into the channel
    sys.stdout = sys.stderr
    asyncio.run(_main(Path(args[0]).resolve(), channel, args[1] if len(args) > 1 else ""))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
