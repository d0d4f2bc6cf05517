"""The gateway's HTTP face (Starlette): the WebSocket protocol at `/ws`, `/health`, the web UI.

Every request must be addressed to one of the gateway's own names (`trust.HostCheck`);
anything else is refused before it is handled. A WebSocket connection must `connect` first.
When the gateway has a token (it must when it listens beyond loopback), `connect` carries
it; tokens are compared in constant time. A browser's `Origin` must be the gateway's own
address (or one of `allowed_origins`), so a page from elsewhere cannot drive a local
gateway. A frame that is not a JSON text message (a binary frame, say) is answered with a
`BadMessage` error; the connection stays.
"""

from __future__ import annotations

import asyncio
import hmac
import json
from importlib import resources
from typing import Any
from urllib.parse import urlsplit

from pydantic import ValidationError
from starlette.applications import Starlette
from starlette.middleware import Middleware
from starlette.requests import Request
from starlette.responses import HTMLResponse, JSONResponse, Response
from starlette.routing import Route, WebSocketRoute
from starlette.websockets import WebSocket, WebSocketDisconnect

from liveforge.gateway.core import GatewayError
from liveforge.gateway.hub import Hub
from liveforge.gateway.protocol import parse_client, server_message
from liveforge.gateway.trust import HostCheck

__all__ = ["build_app"]

_STATIC = {"app.js": "text/javascript", "style.css": "text/css", "index.html": "text/html"}


class _WsClient:
    """A WebSocket as a gateway client; sends are serialised."""

    def __init__(self, socket: WebSocket) -> None:
        self.socket = socket
        self._lock = asyncio.Lock()

    async def send(self, message: dict[str, Any]) -> None:
        async with self._lock:
            await self.socket.send_text(json.dumps(message, ensure_ascii=False))


def _origin_ok(origin: str | None, host: str | None, allowed: tuple[str, ...]) -> bool:
    if not origin:
        return True  # not a browser: non-browser clients send no Origin
    if origin in allowed:
        return True
    return bool(host) and urlsplit(origin).netloc == host


def build_app(
    hub: Hub,
    *,
    token: str = "",
    allowed_origins: tuple[str, ...] = (),
    bind: str = "127.0.0.1",
    allowed_hosts: tuple[str, ...] = (),
) -> Starlette:
    """The ASGI app serving the projects of `hub`, listening on `bind`; it answers requests
    addressed to a loopback name, to `bind` or to one of `allowed_hosts`."""

    async def health(request: Request) -> Response:
        return JSONResponse({"ok": True, **hub.hello()})

    async def static(request: Request) -> Response:
        name = request.path_params.get("name", "index.html")
        if name not in _STATIC:
            return Response("not found", status_code=404)
        text = resources.files("liveforge.gateway").joinpath("web", name).read_text("utf-8")
        if name == "index.html":
            return HTMLResponse(text)
        return Response(text, media_type=_STATIC[name])

    async def ws(socket: WebSocket) -> None:
        if not _origin_ok(
            socket.headers.get("origin"), socket.headers.get("host"), allowed_origins
        ):
            await socket.close(code=4403, reason="origin not allowed")
            return
        await socket.accept()
        client = _WsClient(socket)
        try:
            await _serve(hub, socket, client, token)
        except WebSocketDisconnect:
            pass
        finally:
            hub.forget(client)

    routes = [
        Route("/health", health),
        Route("/", static),
        Route("/static/{name}", static),
        WebSocketRoute("/ws", ws),
    ]
    check = Middleware(HostCheck, bind=bind, allowed=allowed_hosts)
    return Starlette(routes=routes, middleware=[check])


async def _serve(hub: Hub, socket: WebSocket, client: _WsClient, token: str) -> None:
    authenticated = False
    while True:
        text = await _receive_text(socket)
        if text is None:
            await client.send(_error("", "BadMessage", _NOT_TEXT))
            continue
        try:
            message = parse_client(text)
        except (ValidationError, ValueError, RecursionError) as exc:
            await client.send(_error(_request_id(text), "BadMessage", _describe(exc)))
            continue
        if message.type == "connect":
            if token and not hmac.compare_digest(message.token.encode(), token.encode()):
                await client.send(
                    _error(
                        message.id,
                        "Unauthorized",
                        "wrong or missing token; pass the gateway's token in connect",
                    )
                )
                await socket.close(code=4401, reason="unauthorized")
                return
            authenticated = True
            await client.send(_ok(message.id, hub.hello()))
            continue
        if not authenticated:
            await client.send(
                _error(
                    message.id,
                    "Unauthorized",
                    "this connection is not authenticated: send connect first (with the "
                    "gateway's token when it has one); nothing else is answered until then",
                )
            )
            continue
        try:
            result = await hub.request(client, message)
        except GatewayError as exc:
            await client.send(_error(message.id, "GatewayError", str(exc)))
        else:
            await client.send(_ok(message.id, result))


_NOT_TEXT = (
    "invalid message: a binary frame; the protocol's messages are JSON objects sent as text "
    "frames (see the protocol schema, protocol-v1.json)"
)


async def _receive_text(socket: WebSocket) -> str | None:
    """The next text frame's text; None for a binary frame. Raises WebSocketDisconnect when
    the client has gone."""
    message = await socket.receive()
    if message["type"] == "websocket.disconnect":
        raise WebSocketDisconnect(message.get("code", 1000), message.get("reason"))
    text = message.get("text")
    return text if isinstance(text, str) else None


def _ok(request_id: str, result: dict[str, Any]) -> dict[str, Any]:
    return server_message({"type": "result", "id": request_id, "ok": True, "result": result})


def _error(request_id: str, kind: str, text: str) -> dict[str, Any]:
    error = {"type": kind, "message": text}
    return server_message({"type": "result", "id": request_id, "ok": False, "error": error})


def _request_id(text: str) -> str:
    try:
        data = json.loads(text)
    except (ValueError, RecursionError):
        return ""
    return str(data.get("id", "")) if isinstance(data, dict) else ""


def _describe(exc: Exception) -> str:
    if isinstance(exc, ValidationError):
        first = exc.errors()[0]
        where = ".".join(str(p) for p in first["loc"])
        return (
            f"invalid message: {where}: {first['msg']} (see the protocol schema, protocol-v1.json)"
        )
    if isinstance(exc, RecursionError):
        return "invalid message: nested too deeply to read"
    return f"invalid message: {exc}"
