"""A real gateway in a child process, and a small synchronous WebSocket client for tests."""

from __future__ import annotations

import itertools
import json
import os
import signal
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from jsonschema import Draft202012Validator
from jsonschema.exceptions import best_match
from websockets.sync.client import ClientConnection, connect

from liveforge.gateway.protocol import shipped_schema
from liveforge.testing import FakeProvider

_ids = itertools.count(1)


#: The fix the scripted models patch into the cart fixture.
FIX = """def subtotal(self) -> int:
    cents = self.unit_cents * self.quantity
    if self.quantity >= BULK_QUANTITY:
        cents -= round(cents * BULK_DISCOUNT)
    return cents
"""


_SERVER_SCHEMA = shipped_schema()["server"]
_SERVER_CHECK = Draft202012Validator(_SERVER_SCHEMA)


def check_server_message(message: Any) -> dict[str, Any]:
    """`message` if it is a server message as protocol-v1.json describes it; else an
    AssertionError naming the broken rule (checked against the message's own type first,
    so the error is about that type, not about every alternative)."""
    kind = message.get("type") if isinstance(message, dict) else None
    ref = _SERVER_SCHEMA["discriminator"]["mapping"].get(kind)
    if ref is not None:
        own = {"$defs": _SERVER_SCHEMA["$defs"], "$ref": ref}
        error = best_match(Draft202012Validator(own).iter_errors(message))
        if error is not None:
            where = "/".join(str(p) for p in error.absolute_path) or "(top)"
            raise AssertionError(f"{kind} message breaks the schema at {where}: {error.message}")
    error = best_match(_SERVER_CHECK.iter_errors(message))
    if error is not None:
        raise AssertionError(f"not a server message of the protocol: {error.message}: {message}")
    return message  # type: ignore[no-any-return]


def gateway_env(fake: FakeProvider | None, **extra: str) -> dict[str, str]:
    """The gateway's environment: no outside keys or config, the fake as the model."""
    env = {
        k: v
        for k, v in os.environ.items()
        if not k.endswith(("_API_KEY", "_API_KEYS", "_BASE_URL", "_TOKEN"))
        and not k.startswith("LIVEFORGE_")
    }
    if fake is not None:
        env.update(
            ANTHROPIC_BASE_URL=fake.base_url,
            ANTHROPIC_API_KEY="test-key",
            LIVEFORGE_MODEL="anthropic:test-model",
        )
    env.update(extra)
    return env


class GatewayProcess:
    """`liveforge serve` on a free loopback port (or `host`), started and stopped by tests."""

    def __init__(
        self,
        project: Path | list[str],
        env: dict[str, str],
        host: str = "127.0.0.1",
        mode: str = "full-auto",
        args: tuple[str, ...] = (),
    ) -> None:
        projects = project if isinstance(project, list) else [str(project)]
        command = ["serve", *(a for p in projects for a in ("--project", p))]
        command += ["--host", host, "--port", "0", "--mode", mode, *args]
        self.process = subprocess.Popen(
            [sys.executable, "-m", "liveforge", *command],
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
            env=env,
        )
        assert self.process.stdout is not None
        line = self.process.stdout.readline()
        if not line:
            raise RuntimeError(f"gateway did not start: {self.process.stderr.read()}")  # type: ignore[union-attr]
        self.url = line.split()[3]
        self.ws_url = self.url.replace("http://", "ws://").replace("0.0.0.0", "127.0.0.1") + "ws"

    def stop_and_read_log(self) -> str:
        """Stop the gateway (SIGTERM); what it wrote on standard error."""
        if self.process.poll() is None:
            self.process.send_signal(signal.SIGTERM)
        _out, err = self.process.communicate(timeout=20)
        return err

    def stop(self, sig: int = signal.SIGTERM) -> int:
        """Stop the gateway with `sig`; its exit code."""
        if self.process.poll() is None:
            self.process.send_signal(sig)
        try:
            return self.process.wait(timeout=20)
        finally:
            for stream in (self.process.stdout, self.process.stderr):
                if stream:
                    stream.close()


class Client:
    """A protocol client: requests wait for their result; everything else is collected."""

    def __init__(self, url: str, token: str = "", **options: Any) -> None:
        self.ws: ClientConnection = connect(url, open_timeout=10, **options).__enter__()
        self.inbox: list[dict[str, Any]] = []
        self.hello = self.request("connect", token=token)

    def request(self, kind: str, **fields: Any) -> dict[str, Any]:
        """Send one request and return its result message (other messages are kept)."""
        request_id = str(next(_ids))
        self.ws.send(json.dumps({"type": kind, "id": request_id, **fields}))
        while True:
            message = self.receive()
            if message.get("type") == "result" and message.get("id") == request_id:
                return message
            self.inbox.append(message)

    def receive(self, timeout: float = 30) -> dict[str, Any]:
        """The next message from the server, checked against the shipped schema."""
        return check_server_message(json.loads(self.ws.recv(timeout=timeout)))

    def until(
        self, done: Callable[[dict[str, Any]], bool], timeout: float = 60
    ) -> list[dict[str, Any]]:
        """Messages up to and including the first for which `done` is true."""
        seen: list[dict[str, Any]] = []
        deadline = time.monotonic() + timeout
        while True:
            if self.inbox:
                message = self.inbox.pop(0)
            else:
                try:
                    message = self.receive(timeout=max(0.1, deadline - time.monotonic()))
                except TimeoutError:
                    raise AssertionError(f"timed out; messages so far: {seen}") from None
            seen.append(message)
            if done(message):
                return seen

    def close(self) -> None:
        self.ws.close()


@contextmanager
def worker_process(
    sample: Path, fake: FakeProvider, mode: str = "full-auto"
) -> Iterator[tuple[subprocess.Popen[str], Callable[[dict[str, Any]], None]]]:
    """A real project worker (`python -m liveforge.gateway.worker`) for `sample`, talking to
    `fake`, once it said it is ready: the process and a function sending it one message.
    Its input is closed and the worker waited for at the end."""
    worker = subprocess.Popen(
        [sys.executable, "-m", "liveforge.gateway.worker", str(sample), mode],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
        env=gateway_env(fake),
        cwd=sample,
    )
    assert worker.stdin is not None and worker.stdout is not None
    stdin = worker.stdin

    def send(message: dict[str, Any]) -> None:
        stdin.write(json.dumps(message) + "\n")
        stdin.flush()

    try:
        assert json.loads(worker.stdout.readline())["kind"] == "ready"
        yield worker, send
    finally:
        stdin.close()
        worker.wait(timeout=30)


def ended(run: str) -> Callable[[dict[str, Any]], bool]:
    """True for the final run_status message of `run`."""
    final = {"done", "aborted", "interrupted", "failed"}
    return lambda m: m.get("type") == "run_status" and m["run"] == run and m["status"] in final
