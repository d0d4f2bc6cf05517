"""Channels: where a project's runs come from besides the protocol, and where answers go.

A channel (Telegram; others implement the same `Channel`) takes input from people and shows
them the runs it started. Each project keeps its channels in a `Channels` registry, by name;
the registry starts and stops them and turns a delivery address into the gateway client
that shows a run there:

    "ui"                   nobody in particular: the session's watchers (the web UI)
    "telegram:123456789"   the channel named telegram, its chat 123456789

A schedule delivers its result through the registry, so it reaches any channel a project
has, and an address naming a channel the project lacks is refused when the gateway starts.

Messaging services slow senders down ("retry after N seconds"). A channel raises
`RetryAfter` for such an answer and sends what must arrive (an answer's final text, a
question) through `deliver`, which waits as asked and tries again, so a rate limit delays
the end of an answer but never loses it.
"""

from __future__ import annotations

import asyncio
import sys
from collections.abc import Awaitable, Callable
from typing import Protocol, TypeVar

import httpx

from liveforge.gateway.core import Client

__all__ = ["UI", "Channel", "Channels", "RetryAfter", "deliver"]

T = TypeVar("T")

MAX_WAIT = 600.0
"""Seconds `deliver` keeps trying before it gives up on one message (and says so)."""


class RetryAfter(Exception):
    """The messaging service asked to wait `seconds` before the next request."""

    def __init__(self, seconds: float, message: str) -> None:
        super().__init__(f"{message} (retry after {seconds:g}s)")
        self.seconds = seconds


async def deliver(send: Callable[[], Awaitable[T]], *, max_wait: float = MAX_WAIT) -> T:
    """`send()`'s result, calling it again after each `RetryAfter` (waiting as asked) and
    each network failure (waiting 1, 2, 4… seconds), until `max_wait` seconds of waiting are
    spent; then the last error is raised."""
    waited, backoff = 0.0, 1.0
    while True:
        try:
            return await send()
        except RetryAfter as exc:
            pause = max(exc.seconds, 0.0)
            error: Exception = exc
        except httpx.TransportError as exc:
            pause, backoff, error = backoff, min(backoff * 2, 30.0), exc
        if waited + pause > max_wait:
            raise error
        sys.stderr.write(f"liveforge gateway: {error}; sending again in {pause:g}s\n")
        await asyncio.sleep(pause)
        waited += pause


UI = "ui"
"""The delivery address of the session's watchers."""


class Channel(Protocol):
    """A messaging channel of a project's gateway."""

    @property
    def name(self) -> str:
        """The channel's name, the first part of its delivery addresses."""
        ...

    async def start(self) -> None:
        """Start taking input and showing runs."""
        ...

    async def stop(self) -> None:
        """Stop; release connections."""
        ...

    def client_for(self, address: str) -> Client:
        """The client that shows a run at `address` (a chat, say); ValueError for an address
        the channel cannot reach, saying what one looks like."""
        ...


class Channels:
    """A project's channels by name."""

    def __init__(self, channels: list[Channel] | None = None) -> None:
        self.by_name: dict[str, Channel] = {}
        for channel in channels or []:
            self.add(channel)

    def add(self, channel: Channel) -> None:
        """Register `channel`; ValueError when one of that name is there already."""
        if channel.name in self.by_name or channel.name == UI:
            raise ValueError(f"a channel named {channel.name!r} is registered already")
        self.by_name[channel.name] = channel

    def client_for(self, address: str) -> Client | None:
        """The client that shows a run at `address` ("ui" or "NAME:WHERE"); None for "ui".
        ValueError for an unknown channel or an address it cannot reach."""
        if address == UI:
            return None
        name, sep, where = address.partition(":")
        channel = self.by_name.get(name)
        if not sep or channel is None:
            known = ", ".join([UI, *(f"{n}:..." for n in self.by_name)])
            raise ValueError(
                f"cannot deliver to {address!r}: this project's channels are {known} "
                "(a channel is on when its table, e.g. [tool.liveforge.gateway.telegram], "
                "is configured)"
            )
        return channel.client_for(where)

    async def start(self) -> None:
        """Start every channel."""
        for channel in self.by_name.values():
            await channel.start()

    async def stop(self) -> None:
        """Stop every channel."""
        for channel in self.by_name.values():
            await channel.stop()
