"""Event latency through the gateway, side by side with the agent driven in-process.

Every run is the same scripted answer: CHUNKS text deltas ("w000 ", "w001 ", ...), paced
PACE ms apart by the fake provider over loopback HTTP. The provider stands in for a model
service on another machine: it runs in a process of its own at a lower CPU priority (nice
10), so that on a small machine its fifty streaming threads do not take the cores the paths
being measured need (its threads would otherwise also compete with the consumers for this
process's interpreter). It notes when it wrote each chunk (`RecordedRequest.written`);
each path notes when its consumer got the text delta of that chunk: per-event latency is the
difference, on every path (same machine clock; each run's input is a tag that finds its
provider request).

* direct serial      `agent.run` in this process, the runs one after another: the agent
                     loop alone.
* direct concurrent  SESSIONS agents in this process sharing one runtime (one live program),
                     all runs at once with asyncio.gather: the baseline the gateway is
                     compared with, the same load without the gateway.
* gateway            `liveforge serve` in a child process with one project; SESSIONS
                     WebSocket clients connect at once and each starts one run on its own
                     session of that project (the runs go at once over the project's one
                     live program in its worker).

"added" is what the gateway adds to an event: the gateway's chunk-to-client percentile minus
the direct concurrent chunk-to-consumer one. "hop" is the gateway's own part, measured on
each event: arrival at the WebSocket client minus the moment the project worker took the
event from the agent (its `at`): the worker pipe, JSON, the fan-out and the WebSocket. The
"gateway worker" line is the part before it: the provider's chunk flushed to the worker
taking the text delta from its agent (the agent loop in the worker process).
"in flight", "streaming" and "starts ms" say what load a path carried, so the paths can be
compared at all: the most runs in flight at one moment (from the turn_started event their
consumer got to their end), the most streaming at one moment (from their first text delta
to their last), and the ms from the first run's start to the last one's. The direct
concurrent path and the gateway carry the same load when they show the same numbers here
(SESSIONS in flight, starts close together); "run p50 ms" (a run's turn_started to its end)
and "all runs ms" (the first start to the last end) show it too.
Nothing lost: each run's consumer got each of its CHUNKS text deltas ("lost" counts the
missing ones), and the deltas joined and the final answer are the scripted text ("wrong
text" counts runs where not); nothing reordered: the deltas came in the provider's order
(and, through the gateway, `seq` is 0..n-1).

Run: python bench/gateway_latency.py [--sessions 50] [--chunks 40] [--pace 2]
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from websockets.asyncio.client import connect

from liveforge.demo import SAMPLE_DIR
from liveforge.testing import FakeProvider, reply

TARGET_P99_MS = 20.0


@dataclass
class Run:
    """What one run's consumer saw."""

    tag: str
    deltas: list[tuple[str, float]] = field(default_factory=list)
    """Each text delta and when the consumer got it (time.time())."""
    hops: list[float] = field(default_factory=list)
    taken: dict[str, float] = field(default_factory=dict)
    """Gateway only: when the project worker took each text delta from its agent (`at`)."""
    """Gateway only: each event's arrival minus its `at`."""
    seqs: list[int] = field(default_factory=list)
    final: str = ""
    """The text of the run's final_answer event."""
    began: float = 0.0
    """When the consumer got the run's turn_started event (time.perf_counter())."""
    ended: float = 0.0
    """When the consumer saw the run end: its events ran out, or its run_status said so."""


def _words(chunks: int) -> list[str]:
    return [f"w{i:03d} " for i in range(chunks)]


def _answer(chunks: int, pace_ms: float):  # type: ignore[no-untyped-def]
    return reply.text("".join(_words(chunks))).chunked(5).slow(pace_ms / 1000)


def _env(base_url: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.endswith(("_API_KEY", "_BASE_URL"))}
    env.update(
        ANTHROPIC_BASE_URL=base_url,
        ANTHROPIC_API_KEY="bench-key",
        LIVEFORGE_MODEL="anthropic:test-model",
    )
    return env


def _project(root: Path, name: str) -> Path:
    target = root / name
    shutil.copytree(SAMPLE_DIR, target, ignore=shutil.ignore_patterns("__pycache__"))
    return target


async def _direct(project: Path, tags: list[str], together: bool) -> list[Run]:
    """The runs driven in this process: each text delta noted as the agent yields it."""
    from liveforge.agent_setup import build_agent
    from liveforge.kernel import Runtime

    runtime = Runtime(project_root=project)
    agents = [build_agent(project, runtime=runtime) for _ in (tags if together else tags[:1])]

    async def one(agent: Any, tag: str) -> Run:
        run = Run(tag)
        async for event in agent.run(tag):
            if event.type == "turn_started":
                run.began = time.perf_counter()
            elif event.type == "text_delta":
                run.deltas.append((event.text, time.time()))
            elif event.type == "final_answer":
                run.final = event.text
        run.ended = time.perf_counter()
        return run

    try:
        if together:
            return list(await asyncio.gather(*(one(a, t) for a, t in zip(agents, tags))))
        return [await one(agents[0], tag) for tag in tags]
    finally:
        for agent in agents:
            await agent.aclose()
        runtime.close()


async def _client(url: str, tag: str) -> Run:
    """One WebSocket client: a run on its own session, every message noted."""
    run = Run(tag)
    async with connect(url, max_size=None) as ws:
        await ws.send(json.dumps({"type": "connect", "id": "c"}))
        await ws.recv()
        await ws.send(json.dumps({"type": "run", "id": "r", "session": tag, "input": tag}))
        while True:
            message = json.loads(await ws.recv())
            now = time.time()
            if message["type"] == "event":
                run.seqs.append(message["seq"])
                run.hops.append(now - message["at"])
                event = message["event"]
                if event["type"] == "turn_started":
                    run.began = time.perf_counter()
                elif event["type"] == "text_delta":
                    run.deltas.append((event["text"], now))
                    run.taken[event["text"]] = message["at"]
                elif event["type"] == "final_answer":
                    run.final = event["text"]
            elif message["type"] == "run_status" and message["status"] in ("done", "failed"):
                run.ended = time.perf_counter()
                return run


async def _gateway(project: Path, base_url: str, tags: list[str]) -> list[Run]:
    process = subprocess.Popen(
        [sys.executable, "-m", "liveforge", "serve", "--project", str(project), "--port", "0"],
        stdout=subprocess.PIPE,
        text=True,
        env=_env(base_url),
    )
    assert process.stdout is not None
    url = process.stdout.readline().split()[3].replace("http://", "ws://") + "ws"
    try:
        return list(await asyncio.gather(*(_client(url, tag) for tag in tags)))
    finally:
        process.terminate()
        process.wait(timeout=30)


def _stamps(requests: list[dict[str, Any]], tag: str) -> dict[str, float]:
    """When the provider flushed each text chunk of the request whose input is `tag`."""
    [request] = [r for r in requests if f'"{tag}"' in r["last"]]
    stamps: dict[str, float] = {}
    for at, raw in request["written"]:
        for line in raw.splitlines():
            if line.startswith("data: "):
                delta = json.loads(line[6:]).get("delta") or {}
                if delta.get("type") == "text_delta":
                    stamps.setdefault(delta["text"], at)
    return stamps


@dataclass
class Measured:
    """One path's numbers."""

    name: str
    runs: list[Run]
    latencies: list[float] = field(default_factory=list)
    lost: int = 0
    """Text deltas that never reached their consumer (CHUNKS expected per run)."""
    reordered: int = 0
    """Runs whose deltas (or, through the gateway, seq numbers) came out of order."""
    wrong: int = 0
    """Runs whose deltas joined, or whose final answer, is not the scripted answer."""
    before_hop: list[float] = field(default_factory=list)
    """Gateway only: provider chunk flushed -> the worker took the text delta."""


def _score(name: str, runs: list[Run], requests: list[dict[str, Any]], chunks: int) -> Measured:
    words = _words(chunks)
    path = Measured(name, runs)
    for run in runs:
        stamps = _stamps(requests, run.tag)
        texts = [text for text, _at in run.deltas]
        path.lost += len(set(words) - set(texts))
        order = [words.index(t) for t in texts if t in words]
        path.reordered += order != sorted(order) or run.seqs != list(range(len(run.seqs)))
        path.wrong += "".join(texts) != "".join(words) or run.final != "".join(words)
        path.latencies += [at - stamps[text] for text, at in run.deltas if text in stamps]
        path.before_hop += [at - stamps[text] for text, at in run.taken.items() if text in stamps]
    return path


def _ms(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return 1000 * ordered[min(len(ordered) - 1, int(q * len(ordered)))] if ordered else 0.0


def _most_at_once(spans: list[tuple[float, float]]) -> int:
    """The largest number of the (start, end) spans open at one moment."""
    moves = sorted([(start, 1) for start, _ in spans] + [(end, -1) for _, end in spans])
    open_now = most = 0
    for _, move in moves:  # at a tie the end comes first: touching spans do not overlap
        open_now += move
        most = max(most, open_now)
    return most


def _load(runs: list[Run]) -> tuple[int, int, float]:
    """How much the path carried at once: the most runs in flight (turn started, not ended),
    the most streaming (between their first and last text delta), and the ms from the first
    run's start to the last one's."""
    flight = _most_at_once([(r.began, r.ended) for r in runs])
    streams = [(r.deltas[0][1], r.deltas[-1][1]) for r in runs if r.deltas]
    starts = [r.began for r in runs]
    return flight, _most_at_once(streams), 1000 * (max(starts) - min(starts))


def _table(paths: list[Measured], hops: list[float]) -> None:
    head = (
        f"{'path':<18} {'runs':>5} {'deltas':>7} {'p50 ms':>7} {'p99 ms':>7} {'max ms':>7} "
        f"{'added p50':>9} {'added p99':>9} {'run p50 ms':>10} {'all runs ms':>11} "
        f"{'lost':>5} {'reordered':>9} {'wrong text':>10} "
        f"{'in flight':>9} {'streaming':>9} {'starts ms':>9}"
    )
    print("per-event latency: provider chunk flushed -> text delta at the consumer")
    print(head)
    base = paths[1].latencies
    for path in paths:
        walls = [r.ended - r.began for r in path.runs]
        whole = max(r.ended for r in path.runs) - min(r.began for r in path.runs)
        added = path.name == "gateway"
        flight, streaming, starts = _load(path.runs)
        print(
            f"{path.name:<18} {len(path.runs):>5} {len(path.latencies):>7} "
            f"{_ms(path.latencies, 0.5):>7.2f} {_ms(path.latencies, 0.99):>7.2f} "
            f"{_ms(path.latencies, 1.0):>7.2f} "
            f"{_added(path, base, 0.5) if added else '-':>9} "
            f"{_added(path, base, 0.99) if added else '-':>9} "
            f"{1000 * statistics.median(walls):>10.1f} {1000 * whole:>11.1f} "
            f"{path.lost:>5} {path.reordered:>9} {path.wrong:>10} "
            f"{flight:>9} {streaming:>9} {starts:>9.1f}"
        )
    inside = paths[2].before_hop
    print(
        f"gateway worker (provider chunk flushed -> worker took the text delta), {len(inside)} "
        f"deltas: p50 {_ms(inside, 0.5):.2f} ms, p99 {_ms(inside, 0.99):.2f} ms"
    )
    print(
        f"gateway hop (worker took the event -> WebSocket client), {len(hops)} events: "
        f"p50 {_ms(hops, 0.5):.2f} ms, p99 {_ms(hops, 0.99):.2f} ms, max {_ms(hops, 1.0):.2f} ms"
    )


def _added(path: Measured, base: list[float], q: float) -> str:
    return f"{_ms(path.latencies, q) - _ms(base, q):.2f}"


def _serve_provider(answers: int, chunks: int, pace: float) -> int:
    """The provider's process: serve `answers` scripted answers, print the base URL, and
    once stdin closes print what each request was sent as JSON (its last message and when
    each chunk was flushed)."""
    os.nice(10)
    with FakeProvider() as fake:
        for _ in range(answers):
            fake.add(_answer(chunks, pace))
        print(fake.base_url, flush=True)
        sys.stdin.read()
        requests = [
            {
                "last": json.dumps(r.body["messages"][-1]),
                "written": [(at, raw.decode()) for at, raw in r.written],
            }
            for r in fake.requests
        ]
    print(json.dumps(requests))
    return 0


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sessions", type=int, default=50)
    parser.add_argument("--chunks", type=int, default=40)
    parser.add_argument("--pace", type=float, default=2.0, help="ms between streamed chunks")
    parser.add_argument("--serve-provider", action="store_true", help=argparse.SUPPRESS)
    args = parser.parse_args()
    tags = {n: [f"{n}-{i:04d}" for i in range(args.sessions)] for n in ("ds", "dc", "gw")}
    if args.serve_provider:
        return _serve_provider(args.sessions * 3, args.chunks, args.pace)
    command = [sys.executable, __file__, "--serve-provider", "--sessions", str(args.sessions)]
    command += ["--chunks", str(args.chunks), "--pace", str(args.pace)]
    provider = subprocess.Popen(command, stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
    assert provider.stdin is not None and provider.stdout is not None
    with tempfile.TemporaryDirectory() as tmp:
        base_url = provider.stdout.readline().strip()
        os.environ.update(_env(base_url))
        serial = asyncio.run(_direct(_project(Path(tmp), "serial"), tags["ds"], False))
        together = asyncio.run(_direct(_project(Path(tmp), "together"), tags["dc"], True))
        through = asyncio.run(_gateway(_project(Path(tmp), "served"), base_url, tags["gw"]))
        provider.stdin.close()
        requests = json.loads(provider.stdout.read())
        provider.wait(timeout=30)
    paths = [
        _score("direct serial", serial, requests, args.chunks),
        _score("direct concurrent", together, requests, args.chunks),
        _score("gateway", through, requests, args.chunks),
    ]
    hops = [h for run in through for h in run.hops]
    print(f"{args.sessions} sessions of one project, {args.chunks} chunks at {args.pace} ms")
    _table(paths, hops)
    added = _ms(paths[2].latencies, 0.99) - _ms(paths[1].latencies, 0.99)
    clean = all(p.lost == p.reordered == p.wrong == 0 for p in paths)
    ok = added <= TARGET_P99_MS and _ms(hops, 0.99) <= TARGET_P99_MS and clean
    print(
        f"target: p99 added <= {TARGET_P99_MS} ms (and the hop's p99), nothing lost or "
        f"reordered: {'met' if ok else 'NOT met'}"
    )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
