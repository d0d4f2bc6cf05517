"""Which names the gateway answers to: every request is checked before it is handled.

A page on another site can make a browser send requests to a local gateway by pointing its
own name at 127.0.0.1 (DNS rebinding): the browser then treats the gateway as that site,
sends that site's name as `Host` and `Origin`, and lets the page read the answers. So the
gateway answers only requests addressed to one of its own names:

- the loopback names: `localhost` (and `*.localhost`), `127.0.0.0/8`, `::1`;
- the address it listens on (`--host`); when that is every address (`0.0.0.0`, `::`), the
  address the request actually arrived on, and this machine's host names;
- the names the user lists (`--allow-host NAME`), which need a token like any address
  beyond loopback (`check_names`).

Anything else is refused with 403 before any HTTP or WebSocket handling (a WebSocket
handshake is denied, never accepted), and the gateway says so once per name on standard
error, so a user who reached it through a name of their own sees how to allow it.
"""

from __future__ import annotations

import ipaddress
import socket
import sys
from collections.abc import Iterable
from typing import TextIO

from starlette.datastructures import Headers
from starlette.responses import PlainTextResponse
from starlette.types import ASGIApp, Receive, Scope, Send

__all__ = ["HostCheck", "host_name", "is_loopback_name"]

_EVERY_ADDRESS = frozenset({"", "0.0.0.0", "::"})


def host_name(host_header: str) -> str:
    """The name in a `Host` header, without its port, brackets or trailing dot, lowercased:
    `"[::1]:8765"` -> `"::1"`, `"LocalHost.:80"` -> `"localhost"`."""
    host = host_header.strip().lower()
    if host.startswith("["):
        host = host[1 : host.find("]")] if "]" in host else host[1:]
    elif host.count(":") == 1:
        host = host.partition(":")[0]
    return host.rstrip(".")


def is_loopback_name(name: str) -> bool:
    """True for names only this machine can be reached by: `localhost`, `*.localhost`
    (browsers resolve them to loopback themselves) and loopback addresses."""
    name = host_name(name)
    if name == "localhost" or name.endswith(".localhost"):
        return True
    try:
        return ipaddress.ip_address(name).is_loopback
    except ValueError:
        return False


class HostCheck:
    """ASGI middleware: requests (HTTP and WebSocket) addressed to a name that is not the
    gateway's own get 403 and never reach `app`."""

    def __init__(
        self,
        app: ASGIApp,
        *,
        bind: str = "127.0.0.1",
        allowed: Iterable[str] = (),
        log: TextIO | None = None,
    ) -> None:
        self.app = app
        self.bind = host_name(bind)
        self.names = {host_name(name) for name in allowed} | {self.bind} - _EVERY_ADDRESS
        if self.bind in _EVERY_ADDRESS:
            self.names |= _machine_names()
        self.log = log
        self._told: set[str] = set()

    def allows(self, host_header: str, arrived_on: str = "") -> bool:
        """True when a request with `Host: host_header`, accepted on the local address
        `arrived_on`, is addressed to this gateway."""
        name = host_name(host_header)
        if not name:
            return False
        if is_loopback_name(name) or name in self.names:
            return True
        # listening on every address: the address a client reached it by is its own
        return self.bind in _EVERY_ADDRESS and bool(arrived_on) and _same_ip(name, arrived_on)

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] not in ("http", "websocket"):
            await self.app(scope, receive, send)
            return
        host = Headers(scope=scope).get("host", "")
        server = scope.get("server") or ("", 0)
        if self.allows(host, str(server[0] or "")):
            await self.app(scope, receive, send)
            return
        self._tell(host)
        response = PlainTextResponse(self.refusal(host), status_code=403)
        await response(scope, receive, send)

    def refusal(self, host: str) -> str:
        """What a refused client is told."""
        name = host_name(host)
        shown = ", ".join(sorted({"localhost", "127.0.0.1", "::1", *self.names}))
        allow = f"--allow-host {name}" if name else "--allow-host NAME"
        return (
            f"refused: this request is addressed to {host or '(no Host header)'!r}, which is "
            f"not a name of this liveforge gateway (it answers to {shown}). A web page of "
            "another site may be trying to reach it through its own name (DNS rebinding). "
            f"If the name is yours, start the gateway with {allow} (names beyond loopback "
            "also need a token in LIVEFORGE_GATEWAY_TOKEN)."
        )

    def _tell(self, host: str) -> None:
        if host in self._told or len(self._told) > 100:
            return
        self._told.add(host)
        out = self.log or sys.stderr
        out.write(
            f"liveforge gateway: refused a request addressed to {host or '(no Host)'!r}, "
            "not a name of this gateway (a page of another site?); if it is yours, "
            f"restart with --allow-host {host_name(host) or 'NAME'}\n"
        )
        out.flush()


def _same_ip(name: str, address: str) -> bool:
    try:
        return ipaddress.ip_address(name) == ipaddress.ip_address(address)
    except ValueError:
        return False


def _machine_names() -> set[str]:
    """This machine's host names (for a gateway listening on every address)."""
    names = {socket.gethostname(), socket.getfqdn()}
    return {host_name(n) for n in names if n}
