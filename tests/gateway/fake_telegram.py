"""A fake Telegram Bot API on loopback: getUpdates long polling, sendMessage, editMessageText,
and Telegram's rate limit (429 with `retry_after`) on request."""

from __future__ import annotations

import itertools
import json
import threading
from collections.abc import Callable
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

TOKEN = "123456:TEST-token"


class FakeTelegram:
    """Queue updates with `say`; read what the bot sent in `calls`, and what each of its
    messages showed over time in `shown`."""

    def __init__(self) -> None:
        self.updates: list[dict[str, Any]] = []
        self.calls: list[tuple[str, dict[str, Any]]] = []
        self.shown: dict[int, list[str]] = {}
        """Each message the bot sent, by id: its texts in order (sent, then each edit)."""
        self.chat_of: dict[int, int] = {}
        """The chat of each message the bot sent, by id."""
        self.throttled: list[tuple[str, dict[str, Any]]] = []
        """The calls answered 429, in order."""
        self._throttle: list[tuple[Callable[[str, dict[str, Any]], bool], int]] = []
        self.changed = threading.Condition()
        self._update_ids = itertools.count(1)
        self._message_ids = itertools.count(100)
        fake = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *args: Any) -> None:
                return None

            def do_POST(self) -> None:
                length = int(self.headers.get("content-length", 0))
                params = json.loads(self.rfile.read(length) or b"{}")
                token, _, method = self.path.removeprefix("/bot").partition("/")
                if token != TOKEN:
                    self._reply(401, {"ok": False, "description": "Unauthorized"})
                    return
                wait = fake.throttles(method, params)
                if wait is not None:
                    self._reply(
                        429,
                        {
                            "ok": False,
                            "error_code": 429,
                            "description": f"Too Many Requests: retry after {wait}",
                            "parameters": {"retry_after": wait},
                        },
                    )
                    return
                self._reply(200, {"ok": True, "result": fake.handle(method, params)})

            def _reply(self, status: int, body: dict[str, Any]) -> None:
                data = json.dumps(body).encode()
                self.send_response(status)
                self.send_header("content-type", "application/json")
                self.send_header("content-length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.server.daemon_threads = True
        threading.Thread(target=self.server.serve_forever, daemon=True).start()
        self.base = f"http://127.0.0.1:{self.server.server_address[1]}"

    def throttle_once(
        self, matches: Callable[[str, dict[str, Any]], bool], retry_after: int = 1
    ) -> None:
        """Answer the first call for which `matches(method, params)` holds with 429 and
        `retry_after`, as Telegram does to a bot that sends too fast."""
        with self.changed:
            self._throttle.append((matches, retry_after))

    def throttles(self, method: str, params: dict[str, Any]) -> int | None:
        """The retry_after to answer this call with, when a throttle matches it (once)."""
        with self.changed:
            for i, (matches, wait) in enumerate(self._throttle):
                if matches(method, params):
                    del self._throttle[i]
                    self.throttled.append((method, params))
                    self.changed.notify_all()
                    return wait
        return None

    def handle(self, method: str, params: dict[str, Any]) -> Any:
        if method == "getUpdates":
            with self.changed:
                self.changed.wait_for(
                    lambda: any(u["update_id"] >= params.get("offset", 0) for u in self.updates),
                    timeout=min(float(params.get("timeout", 0)), 2.0),
                )
                return [u for u in self.updates if u["update_id"] >= params.get("offset", 0)]
        with self.changed:
            self.calls.append((method, params))
            result: Any = True
            if method == "sendMessage":
                result = {"message_id": next(self._message_ids), "chat": {"id": params["chat_id"]}}
                self.shown[result["message_id"]] = [params["text"]]
                self.chat_of[result["message_id"]] = params["chat_id"]
            elif method == "editMessageText":
                self.shown[params["message_id"]].append(params["text"])
            self.changed.notify_all()
        return result

    def say(self, text: str, *, user: int, chat: int | None = None) -> None:
        """A user sends `text` to the bot."""
        update = {
            "update_id": next(self._update_ids),
            "message": {"from": {"id": user}, "chat": {"id": chat or user}, "text": text},
        }
        with self.changed:
            self.updates.append(update)
            self.changed.notify_all()

    def chat_texts(self, chat: int) -> list[str]:
        """What `chat` shows now: the latest text of each message the bot sent it, in order."""
        with self.changed:
            return [texts[-1] for m, texts in self.shown.items() if self.chat_of[m] == chat]

    def wait_for(self, done: Any, timeout: float = 60) -> None:
        with self.changed:
            if not self.changed.wait_for(lambda: done(self.calls), timeout=timeout):
                raise AssertionError(f"timed out; the bot sent {self.calls}")

    def close(self) -> None:
        self.server.shutdown()
        self.server.server_close()
