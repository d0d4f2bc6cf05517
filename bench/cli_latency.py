"""How long `liveforge` one-shot commands take from a shell, before and after a change.

The "before" tree is `git archive REF` of this repository (default: `main`) unpacked in a
temporary folder; "after" is this checkout. Each command runs as a child process with
`PYTHONPATH` pointing at one tree, the two trees taking turns, and the table shows the median
wall time of each side, their ratio, and each against `python -c pass` measured in the same
rounds. Projects: the demo's sample (two files) and a copy of the pygments package that rich
installs (about 125,000 lines: a big project). Also measured, in one process of each tree:
`Runtime.verify` with both checks (a fresh import and a fork of the live process) against
each check alone, as a median, next to a fresh interpreter's start.

    python bench/cli_latency.py [--before main] [--rounds 5]
"""

from __future__ import annotations

import argparse
import io
import os
import shutil
import statistics
import subprocess
import sys
import tarfile
import tempfile
import time
from pathlib import Path

import pygments

HERE = Path(__file__).resolve().parents[1]
SAMPLE = HERE / "liveforge" / "demo" / "sample"

VERIFY_TIMES = r"""
import statistics, sys, time
from pathlib import Path
import liveforge

rt = liveforge.Runtime(project_root=sys.argv[1])
code = "from pricing.cart import Line\nLine('a', 100, 10).subtotal()"
for live in (None, True, False):
    rt.verify(code, live=live)  # warm the template and the fork helpers
for label, live in (("both", None), ("fresh import only", False)):
    times = []
    for _ in range(int(sys.argv[2])):
        start = time.perf_counter()
        result = rt.verify(code, live=live)
        times.append(time.perf_counter() - start)
        assert result.ok, result.summary()
    print(label, statistics.median(times))
rt.close()
"""


def _unpack(ref: str, into: Path) -> Path:
    """`git archive ref` of this repository, unpacked under `into`."""
    data = subprocess.run(
        ["git", "-C", str(HERE), "archive", ref], capture_output=True, check=True
    ).stdout
    with tarfile.open(fileobj=io.BytesIO(data)) as archive:
        archive.extractall(into, filter="tar")
    return into


def _timed(command: list[str], tree: Path | None, cwd: Path) -> float:
    env = {k: v for k, v in os.environ.items() if not k.endswith(("_API_KEY", "_BASE_URL"))}
    if tree is not None:
        env["PYTHONPATH"] = str(tree)
    start = time.perf_counter()
    done = subprocess.run(command, cwd=cwd, env=env, capture_output=True, text=True)
    elapsed = time.perf_counter() - start
    if done.returncode != 0:
        raise SystemExit(f"{' '.join(command)} failed in {cwd}:\n{done.stderr[-2000:]}")
    return elapsed


def _projects(base: Path) -> dict[str, Path]:
    small = base / "small"
    shutil.copytree(SAMPLE, small, ignore=shutil.ignore_patterns("__pycache__"))
    big = base / "big"
    big.mkdir()
    shutil.copytree(
        Path(pygments.__file__).parent, big / "pygments", ignore=shutil.ignore_patterns("*.pyc")
    )
    lines = sum(len(p.read_bytes().splitlines()) for p in big.rglob("*.py"))
    print(f"big project: pygments {pygments.__version__}, {lines:,} lines")
    return {"small": small, "big": big}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--before", default="main", help="git ref of the 'before' tree")
    parser.add_argument("--rounds", type=int, default=5)
    args = parser.parse_args()
    python = [sys.executable]
    lf = [*python, "-m", "liveforge"]
    with tempfile.TemporaryDirectory() as scratch:
        base = Path(scratch)
        trees = {"before": _unpack(args.before, base / "before"), "after": HERE}
        projects = _projects(base)
        # each side answers `find` on the big project once first: "after" keeps its index
        for side, tree in trees.items():
            first = _timed([*lf, "find", "get_lexer_by_name"], tree, projects["big"])
            print(f"find on the big project, first call ({side}): {first:.2f}s")
        rows = [
            ("python -c pass", [*python, "-c", "pass"], "small", None),
            ("liveforge --help", [*lf, "--help"], "small", "≤ 0.25 s, ≤ 10× python"),
            ("liveforge find (small project)", [*lf, "find", "subtotal"], "small", "≤ 0.25 s"),
            (
                "liveforge find (big, later call)",
                [*lf, "find", "get_lexer_by_name"],
                "big",
                "≤ 0.4 s",
            ),
            ("liveforge verify CODE", [*lf, "verify", "1 + 1"], "small", "≤ 0.5 s"),
        ]
        times: dict[tuple[str, str], list[float]] = {}
        for _ in range(args.rounds):
            for label, command, project, _ in rows:
                for side, tree in trees.items():
                    key = (label, side)
                    times.setdefault(key, []).append(_timed(command, tree, projects[project]))
        floor = {side: statistics.median(times[("python -c pass", side)]) for side in trees}
        print(f"\nmedian wall seconds of {args.rounds} rounds, before = {args.before}")
        print(
            f"{'command':34} {'before':>8} {'after':>8} {'after/before':>13} "
            f"{'before/py':>10} {'after/py':>9}  target"
        )
        for label, _, _, target in rows:
            before = statistics.median(times[(label, "before")])
            after = statistics.median(times[(label, "after")])
            print(
                f"{label:34} {before:8.3f} {after:8.3f} {after / before:12.2f}× "
                f"{before / floor['before']:9.1f}× {after / floor['after']:8.1f}×  {target or ''}"
            )
        print("\nRuntime.verify in one process, median of 10 (seconds), next to python -c pass")
        for side, tree in trees.items():
            env = {**os.environ, "PYTHONPATH": str(tree)}
            out = subprocess.run(
                [*python, "-c", VERIFY_TIMES, str(projects["small"]), "10"],
                env=env,
                capture_output=True,
                text=True,
                check=True,
            ).stdout
            for line in out.splitlines():
                label, _, seconds = line.rpartition(" ")
                value = float(seconds)
                print(
                    f"  {side:7} {label:18} {value * 1000:7.1f} ms  "
                    f"{value / floor[side]:.2f}× a fresh interpreter"
                )


if __name__ == "__main__":
    main()
