"""Scheduled runs: cron entries start runs on a session; missed firings are reported.

At start-up each entry's firings between the last check and now (the gateway was down) are
recorded as *missed* — listed by `health` and `runs.list` — rather than silently dropped or
all run at once. While running, each matching minute starts one run whose idempotency key is
the entry and the minute, so a restart within that minute never starts it twice.
"""

from __future__ import annotations

import asyncio
import time
from datetime import datetime

from liveforge.gateway.channels import Channels
from liveforge.gateway.core import Gateway
from liveforge.gateway.cron import Cron
from liveforge.gateway.protocol import Run
from liveforge.gateway.settings import ScheduleEntry

__all__ = ["Scheduler"]


class Scheduler:
    """Fires the configured entries on the gateway; each run's messages go where its entry's
    `deliver` says, through the project's `channels` ("ui": the session's watchers)."""

    def __init__(self, gateway: Gateway, entries: list[ScheduleEntry], channels: Channels) -> None:
        self.gateway = gateway
        self.entries = [(entry, Cron(entry.cron)) for entry in entries]
        self.channels = channels
        self._task: asyncio.Task[None] | None = None

    def note_missed(self, now: float | None = None) -> None:
        """Record the firings each entry missed since it was last checked."""
        now = time.time() if now is None else now
        store = self.gateway.store
        for entry, cron in self.entries:
            last = store.schedule_last(entry.name)
            if last is not None:
                gaps = list(cron.between(datetime.fromtimestamp(last), datetime.fromtimestamp(now)))
                if gaps:
                    store.add_missed(
                        entry.name, len(gaps), gaps[0].timestamp(), gaps[-1].timestamp()
                    )
            store.set_schedule_last(entry.name, now)

    async def start(self) -> None:
        """Report missed firings, then fire entries as their minutes come."""
        self.note_missed()
        self._task = asyncio.create_task(self._loop())

    async def stop(self) -> None:
        if self._task is not None:
            self._task.cancel()
            await asyncio.gather(self._task, return_exceptions=True)

    async def fire_due(self, minute: datetime) -> list[str]:
        """Start the runs of every entry that matches `minute`; their run ids."""
        started = []
        for entry, cron in self.entries:
            if not cron.matches(minute):
                continue
            key = f"schedule:{entry.name}:{minute:%Y-%m-%dT%H:%M}"
            run = Run(
                type="run",
                id="schedule",
                session=entry.session,
                input=entry.input,
                idempotency_key=key,
                busy="queue",  # a schedule never cuts a person's turn short
            )
            result = await self.gateway.request(self.channels.client_for(entry.deliver), run)
            started.append(result["run"])
            self.gateway.store.set_schedule_last(entry.name, minute.timestamp())
        return started

    async def _loop(self) -> None:
        while True:
            now = time.time()
            await asyncio.sleep(60 - now % 60 + 0.01)
            await self.fire_due(
                datetime.fromtimestamp(time.time()).replace(second=0, microsecond=0)
            )
