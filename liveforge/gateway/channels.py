"""Channels: where a project's runs come from besides the protocol, and where answers go.

A channel (Telegram; others implement the same `Channel`) takes input from people and shows
them the runs it started. Each project keeps its channels in a `Channels` registry, by name;
the registry starts and stops them and turns a delivery address into the gateway client
that shows a run there:

    "ui"                   nobody in particular: the session's watchers (the web UI)
    "telegram:123456789"   the channel named telegram, its chat 123456789

A schedule delivers its result through the registry, so it reaches any channel a project
has, and an address naming a channel the project lacks is refused when the gateway starts.
"""

from __future__ import annotations

from typing import Protocol

from liveforge.gateway.core import Client

__all__ = ["UI", "Channel", "Channels"]

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
