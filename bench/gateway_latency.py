"""Event latency through the gateway, side by side with the agent driven in-process.

Every run is the same scripted answer: CHUNKS text deltas, paced PACE ms apart by the fake
provider over loopback HTTP.

* direct serial      `agent.run` in this process, the runs one after another: the baseline
                     wall time of one run (provider pacing plus the agent loop).
* direct concurrent  SESSIONS agents in this process sharing one runtime (one live program),
                     all runs at once with asyncio.gather.
* gateway            `liveforge serve` in a child process with one project; SESSIONS
                     WebSocket clients connect at once and each starts one run on its own
                     session of that project. The runs go at once over the project's one
                     live program (each session is a lane; tool calls would take turns).

"all runs" is the wall time from the first turn's start to the last run's end (the worker's
start-up left out): close to one
run's time when the runs really overlap, SESSIONS times it when they queue. Event latency
is what the gateway adds to each event: its arrival at the WebSocket client minus the moment
the project worker took it from the agent (the event's `at`, same machine clock): the worker
pipe, JSON, the gateway's fan-out and the WebSocket. The run also checks that each client got
every event of its run once and in order (`seq` 0..n-1).

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
from pathlib import Path
from typing import Any

from websockets.asyncio.client import connect

from liveforge.demo import SAMPLE_DIR
from liveforge.testing import FakeProvider, reply

TARGET_P99_MS = 20.0


def _answer(chunks: int, pace_ms: float):  # type: ignore[no-untyped-def]
    text = "".join(f"w{i:03d} " for i in range(chunks))
    return reply.text(text).chunked(5).slow(pace_ms / 1000)


def _env(fake: FakeProvider) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.endswith(("_API_KEY", "_BASE_URL"))}
    env.update(
        ANTHROPIC_BASE_URL=fake.base_url,
        ANTHROPIC_API_KEY="bench-key",
        LIVEFORGE_MODEL="anthropic:test-model",
    )
    return env


def _project(root: Path, name: str) -> Path:
    target = root / name
    shutil.copytree(SAMPLE_DIR, target, ignore=shutil.ignore_patterns("__pycache__"))
    return target


async def _direct(project: Path, runs: int, together: bool) -> tuple[list[float], float]:
    """Per-run wall times and the wall time of them all, driven in this process."""
    from liveforge.agent_setup import build_agent
    from liveforge.kernel import Runtime

    runtime = Runtime(project_root=project)
    agents = [build_agent(project, runtime=runtime) for _ in range(runs if together else 1)]

    async def one(agent: Any) -> float:
        started = time.perf_counter()
        async for _event in agent.run("go"):
            pass
        return time.perf_counter() - started

    began = time.perf_counter()
    try:
        if together:
            walls = list(await asyncio.gather(*(one(a) for a in agents)))
        else:
            walls = [await one(agents[0]) for _ in range(runs)]
    finally:
        for agent in agents:
            await agent.aclose()
        runtime.close()
    return walls, time.perf_counter() - began


async def _client(url: str, session: str, results: dict[str, object]) -> None:
    async with connect(url, max_size=None) as ws:
        await ws.send(json.dumps({"type": "connect", "id": "c"}))
        await ws.recv()
        await ws.send(json.dumps({"type": "run", "id": "r", "session": session, "input": "go"}))
        latencies, seqs, started, wall = [], [], None, 0.0
        while True:
            message = json.loads(await ws.recv())
            now = time.time()
            if message["type"] == "event":
                seqs.append(message["seq"])
                latencies.append(now - message["at"])
                if message["event"]["type"] == "turn_started":
                    started = time.perf_counter()
            elif message["type"] == "run_status" and message["status"] in ("done", "failed"):
                ended = time.perf_counter()
                wall = ended - (started or ended)
                break
        results[session] = (latencies, seqs, wall, message["status"])
        results[f"span-{session}"] = (started or ended, ended)


async def _gateway(project: Path, fake: FakeProvider, sessions: int) -> dict[str, object]:
    process = subprocess.Popen(
        [sys.executable, "-m", "liveforge", "serve", "--project", str(project), "--port", "0"],
        stdout=subprocess.PIPE,
        text=True,
        env=_env(fake),
    )
    assert process.stdout is not None
    url = process.stdout.readline().split()[3].replace("http://", "ws://") + "ws"
    results: dict[str, object] = {}
    try:
        await asyncio.gather(*(_client(url, f"s{i}", results) for i in range(sessions)))
    finally:
        process.terminate()
        process.wait(timeout=30)
    return results


def _ms(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return 1000 * ordered[min(len(ordered) - 1, int(q * len(ordered)))]


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sessions", type=int, default=50)
    parser.add_argument("--chunks", type=int, default=40)
    parser.add_argument("--pace", type=float, default=2.0, help="ms between streamed chunks")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp, FakeProvider() as fake:
        for _ in range(args.sessions * 3):
            fake.add(_answer(args.chunks, args.pace))
        os.environ.update(_env(fake))
        serial = asyncio.run(_direct(_project(Path(tmp), "serial"), args.sessions, False))
        together = asyncio.run(_direct(_project(Path(tmp), "together"), args.sessions, True))
        through = asyncio.run(_gateway(_project(Path(tmp), "served"), fake, args.sessions))
    spans = [through.pop(k) for k in [k for k in through if k.startswith("span-")]]
    whole = max(e for _s, e in spans) - min(s for s, _e in spans)  # type: ignore[misc]
    runs = list(through.values())
    latencies = [x for lat, _s, _w, _st in runs for x in lat]  # type: ignore[misc]
    walls = [w for _l, _s, w, _st in runs]  # type: ignore[misc]
    lost = sum(1 for _l, seqs, _w, st in runs if st != "done")  # type: ignore[misc]
    disordered = sum(
        1
        for _l, seqs, _w, _st in runs
        if seqs != list(range(len(seqs)))  # type: ignore[misc]
    )
    events = len(latencies)
    print(f"{args.sessions} sessions of one project, {args.chunks} chunks at {args.pace} ms")
    print(
        f"{'path':<18} {'runs':>5} {'events':>7} {'run p50 ms':>11} {'all runs ms':>12} "
        f"{'added p50':>10} {'added p99':>10} {'max':>8} {'lost':>5} {'reordered':>10}"
    )
    for name, (w, total) in (("direct serial", serial), ("direct concurrent", together)):
        print(
            f"{name:<18} {len(w):>5} {'':>7} {1000 * statistics.median(w):>11.1f} "
            f"{1000 * total:>12.1f} {'-':>10} {'-':>10} {'-':>8} {'-':>5} {'-':>10}"
        )
    print(
        f"{'gateway':<18} {len(walls):>5} {events:>7} {1000 * statistics.median(walls):>11.1f} "
        f"{1000 * whole:>12.1f} {_ms(latencies, 0.5):>10.2f} {_ms(latencies, 0.99):>10.2f} "
        f"{1000 * max(latencies):>8.2f} {lost:>5} {disordered:>10}"
    )
    ok = _ms(latencies, 0.99) <= TARGET_P99_MS and lost == 0 and disordered == 0
    print(
        f"target: p99 added <= {TARGET_P99_MS} ms, nothing lost or reordered: "
        f"{'met' if ok else 'NOT met'}; gateway runs overlap: all runs took "
        f"{whole / statistics.median(walls):.1f}x one run ({args.sessions}x if they queued)"
    )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
