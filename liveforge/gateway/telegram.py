"""A Telegram bot as a gateway channel: Bot API long polling in, streamed answers out.

A `Channel` named "telegram": its delivery addresses are chat ids (`telegram:CHAT_ID`, as a
schedule's `deliver` names them). Each chat is its own session (`telegram:CHAT_ID`); only
`allowed_users` are heard. An update
is run with its update id as the idempotency key, so an update delivered twice (say, after
a restart) never starts two runs. The answer streams into one message, edited as text
arrives (at most once a second, Telegram's pace), and is split at line breaks when it
outgrows Telegram's 4096 characters. Questions of the permission policy are asked in the
chat and answered with /approve or /deny. The last message of a run lists, one line each,
the tool calls that were refused ("not run: patch — refused by policy").

Telegram slows bots down with `429 Too Many Requests` and `parameters.retry_after`: the
channel then sends nothing before that many seconds have passed. An edit made while text is
still streaming is skipped (the next one carries the text), but the final text, questions
and whole messages are sent again until Telegram takes them (`channels.deliver`), so an
answer never ends truncated.
"""

from __future__ import annotations

import asyncio
import contextlib
import sys
import time
from dataclasses import dataclass, field
from functools import partial
from typing import Any

import httpx

from liveforge.gateway.channels import RetryAfter, deliver
from liveforge.gateway.core import Gateway, GatewayError
from liveforge.gateway.protocol import Answer, Run
from liveforge.gateway.settings import TelegramSettings

__all__ = ["LIMIT", "TelegramChannel", "split_message"]

LIMIT = 4096
_EDIT_EVERY = 1.0


def split_message(text: str, limit: int = LIMIT) -> list[str]:
    """`text` in pieces of at most `limit` characters, cut at line breaks where possible."""
    pieces = []
    while len(text) > limit:
        cut = text.rfind("\n", 0, limit)
        cut = cut if cut > limit // 2 else limit
        pieces.append(text[:cut])
        text = text[cut:].lstrip("\n")
    return [*pieces, text] if text or not pieces else pieces


@dataclass
class _Reply:
    """The answer being streamed to one chat."""

    chat: int
    text: str = ""
    message_id: int | None = None
    shown: str = ""
    edited: float = field(default=0.0)


@dataclass(eq=False)
class _Chat:
    """One chat as a gateway client: the runs it owns or watches are shown there."""

    channel: TelegramChannel
    chat: int

    async def send(self, message: dict[str, Any]) -> None:
        """Queue `message` for the chat (the gateway never waits for Telegram)."""
        self.channel.outbox.put_nowait((self.chat, message))


class TelegramChannel:
    """Serves a gateway to Telegram chats (the channel named "telegram")."""

    name = "telegram"

    def __init__(self, gateway: Gateway, settings: TelegramSettings, token: str) -> None:
        self.gateway = gateway
        self.settings = settings
        self.base = f"{settings.api_base.rstrip('/')}/bot{token}"
        self.http = httpx.AsyncClient(timeout=settings.poll_timeout + 15)
        self.replies: dict[tuple[int, str], _Reply] = {}
        """The answer of each run being shown, by chat and run."""
        self.questions: dict[int, str] = {}
        self.outbox: asyncio.Queue[tuple[int, dict[str, Any]]] = asyncio.Queue()
        self._chats: dict[int, _Chat] = {}
        self.quiet_until = 0.0
        """Telegram asked for no request before this time (monotonic): its retry_after."""
        self._tasks: list[asyncio.Task[None]] = []

    async def start(self) -> None:
        """Start polling for updates and delivering answers."""
        self._tasks = [asyncio.create_task(self._poll()), asyncio.create_task(self._deliver())]

    async def stop(self) -> None:
        """Stop polling; close the HTTP client."""
        for task in self._tasks:
            task.cancel()
        await asyncio.gather(*self._tasks, return_exceptions=True)
        await self.http.aclose()

    def client_for(self, address: str) -> _Chat:
        """The client showing runs in the chat `address` (a chat id, as digits)."""
        try:
            chat = int(address)
        except ValueError:
            raise ValueError(
                f"telegram:{address} is not a chat; deliver to telegram:CHAT_ID, the chat's "
                "number (a user's chat id is the user's id)"
            ) from None
        return self._chats.setdefault(chat, _Chat(self, chat))

    # -- in ------------------------------------------------------------------------------

    async def _poll(self) -> None:
        offset, pause = 0, 1.0
        while True:
            try:
                updates = await self._call(
                    "getUpdates", offset=offset, timeout=self.settings.poll_timeout
                )
                pause = 1.0
            except (httpx.HTTPError, ValueError) as exc:
                sys.stderr.write(f"liveforge gateway: telegram getUpdates failed: {exc}\n")
                await asyncio.sleep(pause)
                pause = min(pause * 2, 30.0)
                continue
            for update in updates:
                offset = max(offset, update["update_id"] + 1)
                with contextlib.suppress(GatewayError):
                    await self._handle(update)

    async def _handle(self, update: dict[str, Any]) -> None:
        message = update.get("message") or {}
        user = (message.get("from") or {}).get("id")
        chat = (message.get("chat") or {}).get("id")
        text = (message.get("text") or "").strip()
        if user not in self.settings.allowed_users or chat is None or not text:
            return
        client = self.client_for(str(chat))
        if text in ("/approve", "/deny") and chat in self.questions:
            request = self.questions.pop(chat)
            answer = Answer.model_validate({"type": text[1:], "id": "telegram", "request": request})
            await self.gateway.request(client, answer)
            return
        run = Run(
            type="run",
            id="telegram",
            session=f"telegram:{chat}",
            input=text,
            idempotency_key=f"telegram:{update['update_id']}",
        )
        await self.gateway.request(client, run)

    # -- out -----------------------------------------------------------------------------

    async def _deliver(self) -> None:
        while True:
            chat, message = await self.outbox.get()
            try:
                await self._show(chat, message)
            except (httpx.HTTPError, ValueError, RetryAfter) as exc:
                sys.stderr.write(f"liveforge gateway: telegram delivery failed: {exc}\n")

    async def _show(self, chat: int, message: dict[str, Any]) -> None:
        key = (chat, message["run"])
        reply = self.replies.setdefault(key, _Reply(chat=chat))
        kind = message["type"]
        if kind == "event" and message["event"]["type"] == "text_delta":
            reply.text += message["event"]["text"]
            now = time.monotonic()
            if now - reply.edited >= _EDIT_EVERY and now >= self.quiet_until:
                with contextlib.suppress(RetryAfter):  # skipped: a later edit carries it
                    await self._render(reply, reply.text[:LIMIT])
        elif kind == "approval":
            self.questions[reply.chat] = message["request"]
            text = f"{message['question']}\nReply /approve or /deny."
            await deliver(partial(self._call, "sendMessage", chat_id=reply.chat, text=text))
        elif kind == "run_status" and message["status"] in ("done", "aborted", "failed"):
            del self.replies[key]
            text = reply.text or f"(no answer: the run ended {message['status']})"
            refused = [
                f"not run: {call['tool']} — refused by {call['by']}"
                for call in message.get("refused") or []
            ]
            if refused:  # what the run did not do, one line each, under its answer
                text += "\n\n" + "\n".join(refused)
            first, *rest = split_message(text)
            await deliver(partial(self._render, reply, first))
            for piece in rest:
                await deliver(partial(self._call, "sendMessage", chat_id=reply.chat, text=piece))

    async def _render(self, reply: _Reply, text: str) -> None:
        reply.edited = time.monotonic()
        if reply.message_id is None:
            sent = await self._call("sendMessage", chat_id=reply.chat, text=text)
            reply.message_id, reply.shown = sent["message_id"], text
        elif text != reply.shown:
            await self._call(
                "editMessageText", chat_id=reply.chat, message_id=reply.message_id, text=text
            )
            reply.shown = text

    async def _call(self, method: str, **params: Any) -> Any:
        """One Bot API call; RetryAfter when Telegram asks to wait (after waiting for any
        wait it asked for before)."""
        if method != "getUpdates":
            await asyncio.sleep(max(0.0, self.quiet_until - time.monotonic()))
        response = await self.http.post(f"{self.base}/{method}", json=params)
        data = response.json()
        if data.get("ok"):
            return data["result"]
        wait = (data.get("parameters") or {}).get("retry_after")
        if response.status_code == 429 or wait is not None:
            seconds = float(wait if wait is not None else 1)
            self.quiet_until = max(self.quiet_until, time.monotonic() + seconds)
            raise RetryAfter(seconds, f"{method}: {data.get('description', '429')}")
        raise ValueError(f"{method}: {data.get('description', response.status_code)}")
