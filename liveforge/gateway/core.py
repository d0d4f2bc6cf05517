"""The gateway's core: sessions, the run queue, event fan-out and approvals, for one project.

Independent of the transport: a client is anything with `async send(message)`. Each session
runs one run at a time (its lane), in the order the store keeps: steered runs first, then
oldest first; a run sent to a busy session queues or steers as it says (`busy`), else as the
gateway is configured. Runs of different sessions go at once: their model requests and
streamed text run side by side in the project's worker, and their tool calls take turns on
the live program there (`liveforge.impls.live_program`). Events go to the client that
started the run and to every client watching its session; an approval question goes to the
run's owner (else to its session's watchers) and is refused when nobody answers within
`approval_timeout`. A client that starts watching a busy session (a reloaded page) is told
the running run and every question still open, so it can answer them or stop the run.
Every message the gateway sends names its project and is built by `protocol.server_message`,
so it is what the shipped schema says.
"""

from __future__ import annotations

import asyncio
import contextlib
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Protocol

from liveforge.gateway.protocol import PROTOCOL_VERSION, server_message
from liveforge.gateway.store import GatewayStore, RunRow
from liveforge.gateway.workers import ProjectWorker
from liveforge.kernel import __version__
from liveforge.kernel.errors import LiveforgeError

__all__ = ["Client", "Gateway", "GatewayError"]


class GatewayError(LiveforgeError):
    """A request the gateway refuses; the message says what to do instead."""


@dataclass
class _Question:
    """An approval question waiting for its answer."""

    run: str
    message: dict[str, Any]
    """The `approval` message that asked it (sent again to a client that comes back)."""
    timer: asyncio.TimerHandle


class Client(Protocol):
    """A connected client: the gateway only sends to it."""

    async def send(self, message: dict[str, Any]) -> None: ...


class Gateway:
    """One project's sessions and runs, served to any number of clients."""

    def __init__(
        self,
        project: Path,
        *,
        approval_timeout: float = 300.0,
        busy: str = "queue",
        mode: str = "",
        name: str = "",
        model: str = "",
    ) -> None:
        self.project = project
        self.name = name or project.name
        self.model = model
        """The model the project's agents use ("provider:model"), as its config says."""
        self.busy = busy
        """What a run sent to a busy session does unless it says: "queue" or "steer"."""
        self.store = GatewayStore(project / ".liveforge" / "gateway.db")
        self.worker = ProjectWorker(project, self._on_worker, mode)
        self.approval_timeout = approval_timeout
        self.watchers: dict[str, set[Client]] = {}
        self.owners: dict[str, Client] = {}
        self.questions: dict[str, _Question] = {}
        self.running: dict[str, RunRow] = {}
        """The running run of each busy session, by session name."""
        self.aborted: set[str] = set()
        self.seq: dict[str, int] = {}
        self.interrupted: list[RunRow] = []
        self._wake = asyncio.Event()
        self._dispatcher: asyncio.Task[None] | None = None

    async def start(self) -> None:
        """Recover the store after a restart and start dispatching queued runs."""
        self.interrupted, _queued = self.store.recover()
        self._dispatcher = asyncio.create_task(self._dispatch())
        self._wake.set()

    async def stop(self) -> None:
        """Stop dispatching; the running runs are aborted and the worker ends."""
        if self._dispatcher is not None:
            self._dispatcher.cancel()
            await asyncio.gather(self._dispatcher, return_exceptions=True)
        for run in list(self.running.values()):
            await self.worker.send("abort", run=run.id)
        await self.worker.stop()
        self.store.close()

    def forget(self, client: Client) -> None:
        """A client disconnected: it watches nothing and owns nothing any more."""
        for clients in self.watchers.values():
            clients.discard(client)
        for run, owner in list(self.owners.items()):
            if owner is client:
                del self.owners[run]

    # -- requests --------------------------------------------------------------------------

    async def request(self, client: Client | None, message: Any) -> dict[str, Any]:
        """Answer one client request (after `connect`); raises GatewayError to refuse.
        A run requested without a client (a scheduled one) reports to its session's
        watchers."""
        handler = getattr(self, "_" + message.type.replace(".", "_"))
        result: dict[str, Any] = await handler(client, message)
        return result

    async def _run(self, client: Client | None, message: Any) -> dict[str, Any]:
        known = self.store.by_key(message.idempotency_key)
        if known is not None:  # a retry, from this client or another: the run it started
            if client is not None:
                self.watchers.setdefault(known.session, set()).add(client)
            return {**self._summary(known), "duplicate": True}
        steer = (message.busy or self.busy) == "steer"
        run = await self._enqueue(client, message, message.idempotency_key, steer=steer)
        return {**self._summary(run), "duplicate": False}

    async def _steer(self, client: Client, message: Any) -> dict[str, Any]:
        return self._summary(await self._enqueue(client, message, "", steer=True))

    async def _enqueue(
        self, client: Client | None, message: Any, key: str, *, steer: bool
    ) -> RunRow:
        """Queue `message.input` on its session; steering goes first and stops the session's
        running turn."""
        self.store.ensure_session(message.session, message.input)
        run, _ = self.store.add_run(message.session, message.input, key, priority=int(steer))
        if client is not None:
            self.owners[run.id] = client
            self.watchers.setdefault(message.session, set()).add(client)
        busy = self.running.get(message.session) if steer else None
        if busy is not None:
            self.aborted.add(busy.id)
            await self.worker.send("abort", run=busy.id)
        await self._status(run, "queued", position=self._position(run.id))
        self._wake.set()
        return run

    @staticmethod
    def _summary(run: RunRow) -> dict[str, Any]:
        return {"run": run.id, "session": run.session, "status": run.status}

    async def _abort(self, client: Client, message: Any) -> dict[str, Any]:
        run = self.store.run(message.run)
        if run is None:
            raise GatewayError(f"no run {message.run!r}; runs.list shows the known runs")
        if run.status == "queued":
            self.store.finish(run.id, "aborted", reason="aborted")
            await self._status(run, "aborted")
        elif self._running(run.id) is not None:
            self.aborted.add(run.id)
            await self.worker.send("abort", run=run.id)
        else:
            raise GatewayError(f"run {run.id} has already ended ({run.status})")
        return {"run": run.id, "aborting": True}

    async def _approve(self, client: Client, message: Any) -> dict[str, Any]:
        return await self._answer(message.request, True)

    async def _deny(self, client: Client, message: Any) -> dict[str, Any]:
        return await self._answer(message.request, False)

    async def _answer(self, request: str, allow: bool) -> dict[str, Any]:
        entry = self.questions.pop(request, None)
        if entry is None:
            raise GatewayError(f"no open question {request!r}: it was answered or timed out")
        entry.timer.cancel()
        await self.worker.send("answer", request=request.split("/", 1)[1], allow=allow)
        return {"request": request, "allowed": allow}

    async def _watch(self, client: Client, message: Any) -> dict[str, Any]:
        self.watchers.setdefault(message.session, set()).add(client)
        run = self.running.get(message.session)
        if run is not None:  # a client coming back to a busy session: where the run is
            await _send(client, self._status_message(run, "running"))
            for question in list(self.questions.values()):
                if question.run == run.id:
                    await _send(client, question.message)
        return {"session": message.session}

    async def _sessions_list(self, client: Client, message: Any) -> dict[str, Any]:
        sessions = [
            {"session": s.name, "title": s.title, "created": s.created}
            for s in self.store.sessions()
        ]
        return {"sessions": sessions}

    async def _sessions_history(self, client: Client, message: Any) -> dict[str, Any]:
        session = self.store.session(message.session or "")
        if session is None:
            raise GatewayError(f"no session {message.session!r}; sessions.list shows them")
        reply = await self.worker.query("sessions.history", session.agent_session)
        return {"session": session.name, **self._reply(reply)}

    async def _changes_diff(self, client: Client, message: Any) -> dict[str, Any]:
        agent_session = self._agent_session(message.session) if message.session else ""
        if message.session and not agent_session:
            return {"session": message.session, "diff": ""}  # it has not run yet
        reply = await self.worker.query("changes.diff", agent_session)
        return {"session": message.session, **self._reply(reply)}

    async def _changes_list(self, client: Client, message: Any) -> dict[str, Any]:
        session = self.store.session(message.session) if message.session else None
        agent_session = session.agent_session if session is not None else ""
        if message.session and not agent_session:
            return {"session": message.session, "modules": []}  # it has not run yet
        reply = await self.worker.query("changes.list", agent_session)
        return {"session": message.session, **self._reply(reply)}

    async def _changes_undo(self, client: Client, message: Any) -> dict[str, Any]:
        agent_session = self._agent_session(message.session)
        if not agent_session:
            raise GatewayError(f"session {message.session!r} has made no changes to undo")
        reply = await self.worker.query("changes.undo", agent_session, change=message.change)
        return {"session": message.session, **self._reply(reply)}

    def _agent_session(self, name: str) -> str:
        """The agent transcript behind the gateway session `name`."""
        session = self.store.session(name)
        if session is None:
            raise GatewayError(f"no session {name!r}; sessions.list shows them")
        return session.agent_session

    async def _runs_list(self, client: Client, message: Any) -> dict[str, Any]:
        runs = [r.public() for r in self.store.runs(message.session)]
        checks = self._reply(await self.worker.query("checks")) if self.worker.alive else {}
        return {"runs": runs, "missed_schedules": self.store.missed(), **checks}

    async def _health(self, client: Client, message: Any) -> dict[str, Any]:
        return {
            "ok": True,
            "protocol": PROTOCOL_VERSION,
            "version": __version__,
            "project": self.name,
            "path": str(self.project),
            "worker": self.worker.alive,
            "running": [r.id for r in self.running.values()],
            "queued": len(self.store.queued()),
            "interrupted": [r.id for r in self.interrupted],
            "missed_schedules": self.store.missed(),
        }

    @staticmethod
    def _reply(reply: dict[str, Any]) -> dict[str, Any]:
        if not reply.get("ok"):
            error = reply.get("error") or {}
            raise GatewayError(error.get("message", "the project worker failed"))
        result: dict[str, Any] = reply["result"]
        return result

    # -- runs ----------------------------------------------------------------------------

    def _running(self, run_id: str) -> RunRow | None:
        return next((r for r in self.running.values() if r.id == run_id), None)

    def _position(self, run_id: str) -> int:
        """How many runs of its session are ahead of it, the running one included (0: it
        starts at once)."""
        run = self.store.run(run_id)
        if run is None:
            return 0
        ids = [r.id for r in self.store.queued() if r.session == run.session]
        busy = 1 if run.session in self.running else 0
        return ids.index(run_id) + busy if run_id in ids else 0

    async def _dispatch(self) -> None:
        while True:
            await self._wake.wait()
            self._wake.clear()
            for run in self.store.queued():
                now = self.store.run(run.id)  # a launch awaits: it may have been aborted since
                if run.session not in self.running and now and now.status == "queued":
                    await self._launch(run)

    async def _launch(self, run: RunRow) -> None:
        """Start `run` in the worker: the first queued run of an idle session."""
        self.running[run.session] = run
        self.store.start(run.id)
        self.seq[run.id] = 0
        session = self.store.session(run.session)
        try:
            await self.worker.send(
                "run",
                run=run.id,
                input=run.input,
                agent_session=session.agent_session if session else "",
            )
        except (RuntimeError, OSError) as exc:
            await self._ended(run, "failed", error=f"the project worker did not start: {exc}")

    async def _on_worker(self, message: dict[str, Any]) -> None:
        kind = message["kind"]
        if kind == "exited":
            for busy in list(self.running.values()):
                await self._ended(
                    busy, "failed", error=f"the project worker exited ({message['code']})"
                )
            return
        run = self._running(message.get("run", ""))
        if run is None:
            return
        if kind == "started":
            self.store.bind_agent_session(run.session, message["agent_session"])
            await self._status(run, "running")
        elif kind == "event":
            seq = self.seq[run.id]
            self.seq[run.id] = seq + 1
            event = {"type": "event", "project": self.name, "run": run.id, "session": run.session}
            await self._fan_out(
                run,
                server_message(
                    {**event, "seq": seq, "at": message["at"], "event": message["event"]}
                ),
            )
        elif kind == "ask":
            await self._ask(run, message["request"], message["question"])
        elif kind == "ended":
            status = (
                "aborted"
                if run.id in self.aborted
                else ("done" if not message["error"] else "failed")
            )
            await self._ended(
                run,
                status,
                reason=message["reason"],
                answer=message["answer"],
                error=message["error"],
                refused=message.get("refused") or [],
                tool_errors=message.get("tool_errors") or [],
            )

    async def _ended(
        self,
        run: RunRow,
        status: str,
        *,
        reason: str = "",
        answer: str = "",
        error: str = "",
        refused: list[dict[str, Any]] | None = None,
        tool_errors: list[dict[str, Any]] | None = None,
    ) -> None:
        """Store how `run` ended (with the tool calls that were refused or failed) and say
        so to its owner and its session's watchers."""
        refused, tool_errors = refused or [], tool_errors or []
        self.store.finish(
            run.id,
            status,
            reason=reason,
            answer=answer,
            error=error,
            refused=refused,
            tool_errors=tool_errors,
        )
        self.aborted.discard(run.id)
        self.seq.pop(run.id, None)
        for key, question in list(self.questions.items()):
            if question.run == run.id:
                question.timer.cancel()
                del self.questions[key]
        if self.running.get(run.session) is run:
            del self.running[run.session]
        await self._fan_out(
            run,
            self._status_message(run, status, reason, refused=refused, tool_errors=tool_errors),
        )
        self.owners.pop(run.id, None)
        self._wake.set()

    async def _ask(self, run: RunRow, request: str, question: str) -> None:
        key = f"{run.id}/{request}"
        loop = asyncio.get_running_loop()
        timer = loop.call_later(
            self.approval_timeout, lambda: asyncio.ensure_future(self._expire(key))
        )
        owner = self.owners.get(run.id)
        targets = [owner] if owner else list(self.watchers.get(run.session, ()))
        message = server_message(
            {
                "type": "approval",
                "project": self.name,
                "request": key,
                "run": run.id,
                "session": run.session,
                "question": question,
            }
        )
        self.questions[key] = _Question(run.id, message, timer)
        for client in targets:
            await _send(client, message)

    async def _expire(self, key: str) -> None:
        if key in self.questions:
            with contextlib.suppress(GatewayError):
                await self._answer(key, False)

    async def _status(
        self, run: RunRow, status: str, *, reason: str = "", position: int = 0
    ) -> None:
        await self._fan_out(run, self._status_message(run, status, reason, position))

    def _status_message(
        self,
        run: RunRow,
        status: str,
        reason: str = "",
        position: int = 0,
        *,
        refused: list[dict[str, Any]] | None = None,
        tool_errors: list[dict[str, Any]] | None = None,
    ) -> dict[str, Any]:
        message = {
            "type": "run_status",
            "project": self.name,
            "run": run.id,
            "session": run.session,
            "status": status,
            "reason": reason,
            "position": position,
            "refused": refused or [],
            "tool_errors": tool_errors or [],
        }
        return server_message(message)

    async def _fan_out(self, run: RunRow, message: dict[str, Any]) -> None:
        targets = set(self.watchers.get(run.session, ()))
        owner = self.owners.get(run.id)
        if owner is not None:
            targets.add(owner)
        for client in targets:
            await _send(client, message)


async def _send(client: Client, message: dict[str, Any]) -> None:
    with contextlib.suppress(Exception):  # a client that went away misses the message
        await client.send(message)
