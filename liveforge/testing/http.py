"""The HTTP side of the fake provider: the request handler, the server, and each request as
it was received (`RecordedRequest`). What to answer is `FakeProvider`'s (`server.py`)."""

from __future__ import annotations

import json
import socket
import sys
import time
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any, Literal, Protocol

__all__ = ["CutRequest", "ProtocolName", "RecordedRequest"]

_SECRET_HEADERS = {"x-api-key", "authorization", "api-key", "x-goog-api-key"}
ProtocolName = Literal["anthropic", "openai", "gemini"]


@dataclass
class RecordedRequest:
    """One request as received. Key headers read "<redacted>"; `key_suffix` is the key's
    last 4 characters, enough for tests to tell which key was used."""

    protocol: ProtocolName
    path: str
    headers: dict[str, str]
    body: dict[str, Any]
    key_suffix: str | None = None
    received_at: float = field(default_factory=time.monotonic)
    outcome: str = "pending"
    """"complete", "fault" or "client disconnected" (the client closed a stream early)."""
    written: list[tuple[float, bytes]] = field(default_factory=list)
    """Each streamed event as it went out: when its chunk was handed to the socket
    (`time.time()` taken just before the write, so another process on this machine can
    compare, and no client can have received it earlier) and its bytes. Latency measurements
    start here."""

    @property
    def stream(self) -> bool:
        """True if the client asked for a streamed response."""
        if self.protocol == "gemini":
            return ":streamGenerateContent" in self.path
        return bool(self.body.get("stream"))


@dataclass(frozen=True)
class CutRequest:
    """A request whose body ended before its declared length (the client closed the
    connection mid-write: it was cancelled, or its process died). A real API never sees it as
    a request, so it is kept apart from `requests` and takes no script item."""

    protocol: ProtocolName
    path: str
    received: int
    declared: int
    user_agent: str | None


def _api_key(headers: dict[str, str]) -> str | None:
    key = headers.get("x-api-key") or headers.get("api-key") or headers.get("x-goog-api-key")
    auth = headers.get("authorization", "")
    if not key and auth.lower().startswith("bearer "):
        key = auth[7:]
    return key or None


class RequestHandler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    disable_nagle_algorithm = True  # each streamed event leaves when written, as from an API
    server: LoopbackServer

    def log_message(self, format: str, *args: Any) -> None:
        """Silence the default stderr access log."""

    def do_POST(self) -> None:
        declared = int(self.headers.get("content-length") or 0)
        try:
            raw = self.rfile.read(declared)
        except ConnectionError:  # reset mid-body
            raw, self.close_connection = b"", True
        protocol = self._protocol()
        if protocol is None:
            self._send(404, b'{"error": "unknown path"}')
            return
        headers = {k.lower(): v for k, v in self.headers.items()}
        if len(raw) < declared:  # the client went away mid-body: no request arrived
            self.server.fake.cut_short(
                CutRequest(protocol, self.path, len(raw), declared, headers.get("user-agent"))
            )
            self.close_connection = True
            return
        key = _api_key(headers)
        try:
            body = json.loads(raw or b"{}")
        except json.JSONDecodeError:
            body = {"_unparsed": raw.decode("utf-8", "replace")}
        redacted = {k: ("<redacted>" if k in _SECRET_HEADERS else v) for k, v in headers.items()}
        record = RecordedRequest(protocol, self.path, redacted, body, key[-4:] if key else None)
        self.server.fake.record(record)
        self.server.fake.respond(self, protocol, body, len(raw), key, record)

    def _protocol(self) -> ProtocolName | None:
        path = self.path.split("?")[0].rstrip("/")
        if path.endswith((":generateContent", ":streamGenerateContent")):
            return "gemini"
        if path.endswith("/messages"):
            return "anthropic"
        if path.endswith("/chat/completions"):
            return "openai"
        return None

    def _send(self, status: int, body: bytes, headers: dict[str, str] | None = None) -> None:
        self.send_response(status)
        self.send_header("content-type", "application/json")
        self.send_header("content-length", str(len(body)))
        for name, value in (headers or {}).items():
            self.send_header(name, value)
        self.end_headers()
        self.wfile.write(body)

    def _drop(self) -> None:
        """Close the connection abruptly."""
        self.close_connection = True
        try:
            self.wfile.flush()
            self.connection.shutdown(socket.SHUT_RDWR)
        except OSError:
            pass


class Responder(Protocol):
    """What answers the requests the server receives (`FakeProvider`)."""

    def record(self, request: RecordedRequest) -> None:
        """Keep `request` as received."""

    def cut_short(self, request: CutRequest) -> None:
        """Keep a request whose body never arrived whole."""

    def respond(
        self,
        handler: RequestHandler,
        protocol: ProtocolName,
        body: dict[str, Any],
        size: int,
        key: str | None,
        record: RecordedRequest,
    ) -> None:
        """Answer the request `handler` holds."""


class LoopbackServer(ThreadingHTTPServer):
    daemon_threads = True
    fake: Responder

    def handle_error(self, request: Any, client_address: Any) -> None:
        """A client that went away (reset, closed mid-answer) is no server fault: nothing is
        printed for it; anything else is printed as usual."""
        if isinstance(sys.exc_info()[1], ConnectionError):
            return
        super().handle_error(request, client_address)
