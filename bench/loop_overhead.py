"""Per-turn overhead of the agent loop, excluding model latency and tool execution time.

200 scripted turns against the FakeProvider over loopback HTTP, alternating two shapes:

* answer     the model answers at once (1 request);
* tool+answer the model calls the `history` tool, then answers (2 requests, 1 tool call).

For every turn, wall time is measured around `agent.run(...)` (all events consumed), and
the time spent inside the provider's stream (from the request until its last event, i.e.
the HTTP exchange with the fake server) and inside tool calls (`ToolFinished.duration`) is
subtracted. What remains is the loop's own cost: the turn lock, the transcript writes,
the system prompt and tool specs, context estimates, change tracking and event objects.

Run: python bench/loop_overhead.py [--turns 200]
"""

from __future__ import annotations

import argparse
import asyncio
import statistics
import sys
import tempfile
import time
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

from liveforge.agent_setup import build_agent
from liveforge.declarations.agent import Agent, AgentSettings
from liveforge.declarations.messages import ModelRequest, StreamEvent
from liveforge.declarations.provider import Provider, RetryPolicy
from liveforge.testing import FakeProvider, reply

TARGET_MS = 5.0


class TimedProvider:
    """Passes calls to a Provider, adding up the time spent waiting on it."""

    def __init__(self, inner: Provider) -> None:
        self.inner = inner
        self.waited = 0.0

    async def stream(self, request: ModelRequest, **kwargs: Any) -> AsyncIterator[StreamEvent]:
        iterator = self.inner.stream(request, **kwargs).__aiter__()
        while True:
            started = time.perf_counter()
            try:
                event = await iterator.__anext__()
            except StopAsyncIteration:
                self.waited += time.perf_counter() - started
                return
            self.waited += time.perf_counter() - started
            yield event

    async def complete(self, request: ModelRequest, **kwargs: Any) -> Any:
        started = time.perf_counter()
        try:
            return await self.inner.complete(request, **kwargs)
        finally:
            self.waited += time.perf_counter() - started

    async def aclose(self) -> None:
        await self.inner.aclose()


def _project(root: Path) -> None:
    (root / "benchpkg").mkdir(parents=True)
    (root / "benchpkg" / "__init__.py").write_text('"""Bench package."""\n')
    (root / "benchpkg" / "mod.py").write_text('"""A module."""\n\n\ndef f(x):\n    return x\n')


async def _turn(agent: Agent, timed: TimedProvider, text: str) -> tuple[float, float, float]:
    """(wall, provider, tools) seconds of one turn."""
    timed.waited = 0.0
    tools = 0.0
    started = time.perf_counter()
    async for event in agent.run(text):
        if event.type == "tool_finished":
            tools += event.duration
    wall = time.perf_counter() - started
    return wall, timed.waited, tools


async def _measure(turns: int, root: Path) -> dict[str, list[float]]:
    with FakeProvider() as fake:
        for number in range(turns):
            if number % 2:
                fake.add(reply.tool_call("history", {}), reply.text("done"))
            else:
                fake.add(reply.text("answer"))
        inner = Provider([fake.route("anthropic")], retry=RetryPolicy(max_attempts=1))
        timed = TimedProvider(inner)
        agent = build_agent(root, provider=inner, settings=AgentSettings(), env={})
        agent.provider = timed  # type: ignore[assignment]
        rows: dict[str, list[float]] = {
            "answer": [],
            "tool+answer": [],
            "all": [],
            "wall": [],
            "provider": [],
            "tools": [],
        }
        for number in range(turns):
            wall, provider, tools = await _turn(agent, timed, f"turn {number}")
            overhead = (wall - provider - tools) * 1000
            rows["tool+answer" if number % 2 else "answer"].append(overhead)
            rows["all"].append(overhead)
            rows["wall"].append(wall * 1000)
            rows["provider"].append(provider * 1000)
            rows["tools"].append(tools * 1000)
        await agent.aclose()
    return rows


def _p95(values: list[float]) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, round(0.95 * (len(ordered) - 1)))]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--turns", type=int, default=200)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as folder:
        root = Path(folder) / "project"
        _project(root)
        sys.path.insert(0, str(root))
        rows = asyncio.run(_measure(args.turns, root))
    wall = statistics.median(rows["wall"])
    print(f"agent loop overhead per turn, {args.turns} scripted turns (fake provider over HTTP)")
    print(f"{'turn shape':<14}{'turns':>7}{'median ms':>11}{'p95 ms':>9}{'share of wall':>15}")
    for name in ("answer", "tool+answer", "all"):
        values = rows[name]
        share = statistics.median(values) / wall
        print(
            f"{name:<14}{len(values):>7}{statistics.median(values):>11.2f}"
            f"{_p95(values):>9.2f}{share:>15.0%}"
        )
    print(f"{'(wall)':<14}{len(rows['wall']):>7}{wall:>11.2f}{_p95(rows['wall']):>9.2f}")
    print(
        f"{'(provider)':<14}{len(rows['provider']):>7}"
        f"{statistics.median(rows['provider']):>11.2f}{_p95(rows['provider']):>9.2f}"
    )
    print(
        f"{'(tools)':<14}{len(rows['tools']):>7}{statistics.median(rows['tools']):>11.2f}"
        f"{_p95(rows['tools']):>9.2f}"
    )
    median = statistics.median(rows["all"])
    verdict = "meets" if median <= TARGET_MS else "misses"
    print(f"target: median <= {TARGET_MS:.0f} ms per turn -> {median:.2f} ms ({verdict} it)")


if __name__ == "__main__":
    main()
