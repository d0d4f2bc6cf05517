"""The project worker: one process per project, holding its live runtime and its agents.

The gateway starts `python -m liveforge.gateway.worker PROJECT` and speaks JSON lines with it:
commands on standard input, replies and events on standard output (the process's own
prints go to standard error, so nothing else can corrupt the channel). A project's program
lives in its own process, so two projects whose packages share a name never meet, and a
crash of one project's program never takes the gateway down.

Commands: ``run`` {run, agent_session, input} (runs of different agent sessions go at
once; the gateway sends one run per session at a time), ``abort`` {run}, ``answer``
{request, allow}, ``query`` {req, what, session, change}. Replies: ``ready``, ``started``
{run, agent_session}, ``event`` {run, event}, ``ended`` {run, reason, answer, error, refused,
tool_errors} (the tool calls that were not run, and those that ran and failed: each {tool,
call_id, by, reason}), ``ask`` {run, request, question} and ``reply`` {req, ok, result | error}.
"""

from __future__ import annotations

import asyncio
import itertools
import json
import os
import sys
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import IO, Any

from liveforge.impls.live_program import changes_of, holding, owner_of
from liveforge.kernel.live._holders import freeze_own

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
        self._pending: dict[str, tuple[str, threading.Event, list[bool]]] = {}
        self._ids = itertools.count(1)

    def ask(self, run: str, question: str) -> bool:
        """Block until the gateway answers (a closed gateway, or an ended run, is a refusal)."""
        request = f"q{next(self._ids)}"
        done, answer = threading.Event(), [False]
        self._pending[request] = (run, done, answer)
        self.channel.send("ask", run=run, request=request, question=question)
        done.wait()
        del self._pending[request]
        return answer[0]

    def answer(self, request: str, allow: bool) -> None:
        entry = self._pending.get(request)
        if entry:
            entry[2][0] = allow
            entry[1].set()

    def refuse(self, run: str | None = None) -> None:
        """Refuse the open questions of `run` (None: of every run)."""
        for owner, done, answer in list(self._pending.values()):
            if run is None or owner == run:
                answer[0] = False
                done.set()


class Worker:
    """Runs the gateway's commands against one project: runs of different sessions at once
    (one per session), their tool calls taking turns on the live program."""

    def __init__(self, project: Path, channel: _Channel, mode: str = "") -> None:
        from liveforge.config import load_config
        from liveforge.kernel import Runtime

        self.project = project
        self.channel = channel
        config = load_config(project)
        checks = config.sandbox.settings(project)
        self.runtime = Runtime(project_root=project, check_settings=checks)
        self.questions = _Questions(channel)
        self.policy = config.permissions.policy(mode or None)  # type: ignore[arg-type]
        self.agents: dict[str, Any] = {}
        """Agents by their session id (a session's lane)."""
        self.runs: dict[str, Any] = {}
        """The agent of each run from its start to its end (None while it is being built)."""
        self.lanes: dict[str, str] = {}
        """The run each agent session is in."""
        self.cancelled: set[str] = set()  # runs asked to stop, perhaps before their turn began
        self._building: dict[str, asyncio.Future[Any]] = {}
        """The builds under way of resumed sessions' agents, by session id."""

    def _approver(self, lane: list[str]) -> Callable[[Any], bool]:
        """The permission policy asks: the question goes to the client of the run that the
        agent whose session id `lane` will hold is in."""

        def approve(request: Any) -> bool:
            preview = f"\n{request.preview}" if request.preview else ""
            question = f"Allow {request.tool} ({request.effect})?{preview}"
            return self.questions.ask(self.lanes.get(lane[0], ""), question)

        return approve

    def _build(self, agent_session: str) -> Any:
        from liveforge.agent_setup import build_agent

        lane = [agent_session]
        agent = build_agent(
            self.project,
            runtime=self.runtime,
            resume=agent_session or None,
            policy=self.policy,
            approver=self._approver(lane),
        )
        lane[0] = agent.session.id
        return agent

    async def _agent(self, agent_session: str) -> Any:
        """The session's agent; built in a thread (resuming re-applies changes, which waits
        for the live program) so the other sessions keep streaming meanwhile. Builds of
        different sessions go at once: runs sent together start together, never one build
        after another; a second run of a session whose agent is being built waits for it."""
        found: Any = self.agents.get(agent_session) if agent_session else None
        if found is not None:
            return found
        building = self._building.get(agent_session) if agent_session else None
        if building is None:
            building = asyncio.ensure_future(asyncio.to_thread(self._build, agent_session))
            if agent_session:
                self._building[agent_session] = building
                building.add_done_callback(lambda _: self._building.pop(agent_session, None))
        found = await asyncio.shield(building)
        self.agents[found.session.id] = found
        return found

    async def run(self, command: dict[str, Any]) -> None:
        """One run: build or reuse the session's agent, stream its events, report the end."""
        run = command["run"]
        self.runs.setdefault(run, None)
        reason, answer, error = "error", "", ""
        refused: list[dict[str, Any]] = []
        tool_errors: list[dict[str, Any]] = []
        agent = None
        try:
            agent = await self._agent(command.get("agent_session", ""))
            self.runs[run], self.lanes[agent.session.id] = agent, run
            self.channel.send("started", run=run, agent_session=agent.session.id)
            async for event in agent.run(command["input"]):
                if run in self.cancelled:  # an abort that came before the turn began
                    self.cancelled.discard(run)
                    agent.cancel()
                data = event.model_dump(mode="json")
                self.channel.send("event", run=run, event=data, at=time.time())
                if data["type"] == "final_answer":
                    answer = data["text"]
                elif data["type"] == "turn_ended":
                    reason = data["reason"]
                elif data["type"] == "tool_finished" and data["is_error"]:
                    failed = _failed_call(data)
                    (refused if failed["by"] else tool_errors).append(failed)
        except Exception as exc:  # the run fails; the worker and the other sessions go on
            error = f"{type(exc).__name__}: {exc}"
        finally:
            self.questions.refuse(run)  # a question the ended turn left open is a "no"
            self.runs.pop(run, None)
            self.cancelled.discard(run)
            if agent is not None:
                self.lanes.pop(agent.session.id, None)
        self.channel.send(
            "ended",
            run=run,
            reason=reason,
            answer=answer,
            error=error,
            refused=refused,
            tool_errors=tool_errors,
        )

    def abort(self, run: str) -> None:
        """Cancel `run`'s turn (at its next event when the turn has not begun yet)."""
        if run in self.runs:
            self.cancelled.add(run)
            if self.runs[run] is not None:
                self.runs[run].cancel()

    def query(self, what: str, session: str, change: str = "") -> Any:
        """Answers about the project (`session`: an agent session id, or empty): the diff
        (of that session's live changes), undoing a session's change, sandbox run records,
        a transcript. Runs in a thread: it may wait for the live program."""
        if what == "changes.diff":
            with holding(self.runtime, session or "gateway"):
                if not session:
                    return {"diff": self.runtime.diff()}
                mine = set(changes_of(self.runtime, session, persisted=False))
                changes = [c for c in self.runtime.history() if c.id in mine]
                return {"diff": "".join(c.diff() for c in changes)}
        if what == "changes.undo":
            return {"undone": self._undo(session, change)}
        if what == "changes.list":
            from liveforge.gateway.program import program

            with holding(self.runtime, session or "gateway"):
                return program(self.runtime, session)
        if what == "checks":
            return {"checks": [r.model_dump(mode="json") for r in self.runtime.runs()]}
        if what == "sessions.history":
            return {"messages": _history(self.project, session, self.agents.get(session))}
        raise ValueError(f"unknown query {what!r}")

    def track_all(self) -> None:
        """Record the runtime's status moves (an undo) in every transcript now, so a restart
        does not re-apply what was undone (on the event loop, where turns write too)."""
        for agent in self.agents.values():
            agent.session.track(agent.runtime, agent.settings.self_packages)

    def _undo(self, lane: str, change: str) -> list[dict[str, Any]]:
        """Roll back `change` (default: the session's newest live one) and the later changes
        of its module; which session made each is said, and the notes the rollback gave it
        (what it could not take back: a function a framework's table keeps)."""
        with holding(self.runtime, lane):
            mine = changes_of(self.runtime, lane)
            if change and change not in mine:
                raise ValueError(
                    f"{change} is not a change of this session still in effect; "
                    f"its live changes: {', '.join(mine) or 'none'} (changes.diff shows them)"
                )
            if not mine:
                raise ValueError("this session has no change in effect to undo")
            undone = self.runtime.rollback(change or mine[-1])
        return [
            {
                "change": c.id,
                "target": c.target,
                "by": owner_of(self.runtime, c.id) or "",
                "notes": c.rollback_notes,
            }
            for c in undone
        ]


def _failed_call(event: dict[str, Any]) -> dict[str, Any]:
    """A tool call that did not do its work, from its `tool_finished` event, as `run --json`
    reports it: `by` says what refused it (None: it ran and failed)."""
    return {
        "tool": event["name"],
        "call_id": event["call_id"],
        "by": event.get("refused"),
        "reason": event["summary"].strip(),
    }


def _history(project: Path, agent_session: str, agent: Any = None) -> list[dict[str, Any]]:
    """A transcript's messages: the live session's when its agent is here (it may be in a
    turn), else read from its file."""
    from liveforge.declarations.messages import TextBlock, ToolUseBlock
    from liveforge.declarations.session import Session

    if not agent_session:
        return []
    if agent is not None:
        messages = list(agent.session.messages)
    else:
        messages = Session.open(project, agent_session).messages
    out = []
    for message in messages:
        text = "".join(b.text for b in message.content if isinstance(b, TextBlock))
        tools = [b.name for b in message.content if isinstance(b, ToolUseBlock)]

        out.append({"role": message.role, "text": text, "tools": tools})
    return out


async def _answer(worker: Worker, command: dict[str, Any]) -> None:
    """Reply to one query (in a thread: it may wait for another session's tool call)."""
    try:
        args = (command["what"], command.get("session", ""), command.get("change", ""))
        result = await asyncio.to_thread(worker.query, *args)
        if command["what"] == "changes.undo":
            worker.track_all()
        worker.channel.send("reply", req=command["req"], ok=True, result=result)
    except Exception as exc:
        error = {"type": type(exc).__name__, "message": str(exc)}
        worker.channel.send("reply", req=command["req"], ok=False, error=error)


async def _serve(worker: Worker, inbox: asyncio.Queue[dict[str, Any] | None]) -> None:
    tasks: set[asyncio.Task[None]] = set()
    while (command := await inbox.get()) is not None:
        op = command.get("op")
        if op == "run":
            worker.runs[command["run"]] = None  # an abort right behind it finds it
            task = asyncio.create_task(worker.run(command))
        elif op == "query":
            task = asyncio.create_task(_answer(worker, command))
        else:
            if op == "abort":
                worker.abort(command["run"])
            elif op == "answer":
                worker.questions.answer(command["request"], bool(command["allow"]))
            continue
        tasks.add(task)
        task.add_done_callback(tasks.discard)
    worker.questions.refuse()
    for run in list(worker.runs):
        worker.abort(run)
    await asyncio.gather(*tasks, return_exceptions=True)


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
    _warm()
    freeze_own()  # what startup made stays out of later collections (they stall the streams)
    # agents are built (and tools run) in threads while other sessions stream: the event
    # loop waits for the interpreter at most this long, not the default 5 ms, each time
    sys.setswitchinterval(0.001)
    channel.send("ready", pid=os.getpid())
    try:
        await _serve(worker, inbox)
    finally:
        for agent in worker.agents.values():
            await agent.aclose()
        worker.runtime.close()


def _warm() -> None:
    """Import what building an agent and its turns need (the agent's setup, every built-in
    tool module, jedi with them) before the first run: done later, the imports of the first
    build hold the interpreter for a good part of a second while other runs stream."""
    import importlib
    import pkgutil

    import liveforge.agent_setup  # noqa: F401
    from liveforge.impls.toolbox import BUILTIN_PACKAGE

    package = importlib.import_module(BUILTIN_PACKAGE)
    for info in pkgutil.iter_modules(package.__path__):
        if not info.name.startswith("_"):
            importlib.import_module(f"{BUILTIN_PACKAGE}.{info.name}")


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
