"""The gateway's side of a project worker: start it, send it commands, read its messages.

The worker (`liveforge.gateway.worker`) is a child process with the gateway's environment,
on the project's own interpreter when it has one with liveforge (else the gateway's). When it
dies unexpectedly, `on_message` gets a synthetic ``exited`` message and the next run starts a
new worker.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import sys
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

__all__ = ["ProjectWorker", "interpreter"]

Handler = Callable[[dict[str, Any]], Awaitable[None]]


def interpreter(project: Path) -> str:
    """The Python to run `project`'s worker with: the project's own environment when it has
    one with liveforge installed (`liveforge.project_env`), else the gateway's."""
    from liveforge.project_env import find_environment

    env = find_environment(project)
    if env is None or env.is_current:
        return sys.executable
    if env.has_liveforge():
        return str(env.python)
    sys.stderr.write(
        f"liveforge gateway: {project}'s environment {env.prefix} has no liveforge; its worker "
        f"runs on {sys.executable}. {env.install_advice()}\n"
    )
    return sys.executable


class ProjectWorker:
    """One running worker process for a project."""

    def __init__(self, project: Path, on_message: Handler, mode: str = "") -> None:
        self.project = project
        self.mode = mode
        self.on_message = on_message
        self.process: asyncio.subprocess.Process | None = None
        self._reader: asyncio.Task[None] | None = None
        self._ready: asyncio.Future[None] | None = None
        self._replies: dict[str, asyncio.Future[dict[str, Any]]] = {}
        self._count = 0

    @property
    def alive(self) -> bool:
        """True while the process runs."""
        return self.process is not None and self.process.returncode is None

    async def start(self) -> None:
        """Start the process (if not running) and wait until it is ready."""
        if self.alive:
            return
        self._ready = asyncio.get_running_loop().create_future()
        python = await asyncio.to_thread(interpreter, self.project)
        self.process = await asyncio.create_subprocess_exec(
            python,
            "-m",
            "liveforge.gateway.worker",
            str(self.project),
            self.mode,
            stdin=asyncio.subprocess.PIPE,
            stdout=asyncio.subprocess.PIPE,
            cwd=self.project,
            limit=64 * 1024 * 1024,
        )
        self._reader = asyncio.create_task(self._read(self.process))
        await self._ready

    async def send(self, op: str, **fields: Any) -> None:
        """Send one command (starting the worker first when needed)."""
        await self.start()
        assert self.process is not None and self.process.stdin is not None
        self.process.stdin.write((json.dumps({"op": op, **fields}) + "\n").encode())
        await self.process.stdin.drain()

    async def query(
        self, what: str, session: str = "", timeout: float = 60.0, **fields: Any
    ) -> dict[str, Any]:
        """Ask the worker something (`what`, about `session`) and wait for its reply."""
        self._count += 1
        req = f"q{self._count}"
        future = asyncio.get_running_loop().create_future()
        self._replies[req] = future
        try:
            await self.send("query", req=req, what=what, session=session, **fields)
            return await asyncio.wait_for(future, timeout)
        finally:
            self._replies.pop(req, None)

    async def _read(self, process: asyncio.subprocess.Process) -> None:
        assert process.stdout is not None
        while line := await process.stdout.readline():
            message = json.loads(line)
            kind = message.get("kind")
            if kind == "ready" and self._ready and not self._ready.done():
                self._ready.set_result(None)
            elif kind == "reply" and message.get("req") in self._replies:
                future = self._replies[message["req"]]
                if not future.done():
                    future.set_result(message)
            else:
                await self.on_message(message)
        code = await process.wait()
        if self._ready and not self._ready.done():
            self._ready.set_exception(
                RuntimeError(f"the project worker exited with code {code} before it was ready")
            )
        for future in self._replies.values():
            if not future.done():
                future.set_exception(RuntimeError("the project worker exited"))
        await self.on_message({"kind": "exited", "code": code})

    async def stop(self, timeout: float = 5.0) -> None:
        """Close the worker's input (it finishes and exits); kill it after `timeout`."""
        if self.process is None:
            return
        if self.process.stdin is not None and not self.process.stdin.is_closing():
            self.process.stdin.close()
        try:
            await asyncio.wait_for(self.process.wait(), timeout)
        except TimeoutError:
            with contextlib.suppress(ProcessLookupError):
                self.process.kill()
            await self.process.wait()
        if self._reader is not None:
            await asyncio.gather(self._reader, return_exceptions=True)
