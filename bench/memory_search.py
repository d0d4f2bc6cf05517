"""Memory search: the FTS5 index (bm25) against a naive scan, over 10,000 memories.

    Memory.search(query)          liveforge's memory: SQLite FTS5, bm25 ranking, top 5
    naive scan                    every row read from the same database and scored in
                                  Python by the number of query words it contains, top 5

Both search the same file with the same queries, interleaved so they share the machine's
load (the CPU column is this process's CPU time per call, which a loaded machine bends
less than the wall clock). Target: FTS5 median <= 20 ms.
Run: `python bench/memory_search.py [--memories 10000]`.
"""

from __future__ import annotations

import argparse
import os
import random
import re
import sqlite3
import statistics
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

import liveforge.impls  # noqa: F401  (the Memory bodies)
from liveforge.declarations.memory import Memory
from liveforge.declarations.tool_settings import MemorySettings

WORDS = re.compile(r"\w+")


def vocabulary(rng: random.Random, size: int = 3000) -> list[str]:
    """Made-up words with a skewed frequency, like the words of real notes."""
    letters = "abcdefghijklmnopqrstuvwxyz"
    return ["".join(rng.choices(letters, k=rng.randint(3, 9))) for _ in range(size)]


def fill(memory: Memory, count: int, words: list[str], rng: random.Random) -> None:
    weights = [1.0 / (rank + 1) for rank in range(len(words))]
    with sqlite3.connect(memory.path) as db:  # one transaction: setup is not what is measured
        db.executemany(
            "INSERT INTO memories(text, tags, created, updated) VALUES (?, '[]', ?, ?)",
            [
                (" ".join(rng.choices(words, weights, k=rng.randint(8, 30))), 0.0, 0.0)
                for _ in range(count)
            ],
        )


def naive_search(path: Path, query: str, limit: int = 5) -> list[int]:
    wanted = set(WORDS.findall(query.lower()))
    with sqlite3.connect(path) as db:
        rows = db.execute("SELECT id, text FROM memories").fetchall()
    scored = [(len(wanted & set(WORDS.findall(text.lower()))), i) for i, text in rows]
    return [i for score, i in sorted(scored, reverse=True)[:limit] if score]


def timed(
    calls: dict[str, Callable[[str], object]], queries: list[str]
) -> dict[str, tuple[list[float], list[float]]]:
    """Per call: wall-clock seconds, and CPU seconds of this process (less bent by load)."""
    samples: dict[str, tuple[list[float], list[float]]] = {label: ([], []) for label in calls}
    for query in queries:
        for label, call in calls.items():
            wall, cpu = time.perf_counter(), time.process_time()
            call(query)
            samples[label][0].append(time.perf_counter() - wall)
            samples[label][1].append(time.process_time() - cpu)
    return samples


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--memories", type=int, default=10_000)
    parser.add_argument("--queries", type=int, default=200)
    options = parser.parse_args()
    rng = random.Random(16)
    words = vocabulary(rng)
    print(f"{os.cpu_count()} CPUs, load average: {' '.join(f'{x:.2f}' for x in os.getloadavg())}")
    with tempfile.TemporaryDirectory(prefix="memory-bench-") as folder:
        memory = Memory(path=Path(folder) / "memory.sqlite", settings=MemorySettings())
        memory.items(1)  # creates the schema
        fill(memory, options.memories, words, rng)
        queries = [" ".join(rng.choices(words[:1500], k=rng.randint(2, 5))) for _ in range(50)]
        timed({"warm": memory.search}, queries[:5])
        samples = timed(
            {
                "Memory.search (FTS5, bm25)": memory.search,
                "naive scan (Python word overlap)": lambda q: naive_search(memory.path, q),
            },
            [queries[i % len(queries)] for i in range(options.queries)],
        )
    print(f"\nsearch over {options.memories:,} memories, {options.queries} queries, top 5\n")
    print(f"| {'measure':<34} | {'median ms':>9} | {'p90 ms':>9} | {'CPU ms':>7} | {'ratio':>7} |")
    print(f"|{'-' * 36}|{'-' * 11}|{'-' * 11}|{'-' * 9}|{'-' * 9}|")
    base = statistics.median(next(iter(samples.values()))[0])
    for label, (values, cpu) in samples.items():
        median = statistics.median(values)
        p90 = sorted(values)[int(0.9 * (len(values) - 1))]
        print(
            f"| {label:<34} | {median * 1e3:9.2f} | {p90 * 1e3:9.2f} | "
            f"{statistics.median(cpu) * 1e3:7.2f} | {median / base:6.2f}x |"
        )
    fts = base * 1e3
    print(f"\ntarget FTS5 median <= 20 ms: {'met' if fts <= 20 else 'NOT met'} ({fts:.2f} ms)")


if __name__ == "__main__":
    main()
