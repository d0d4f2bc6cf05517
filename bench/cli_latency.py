"""How long `liveforge` one-shot commands take from a shell, before and after a change.

The "before" tree is `git archive REF` of this repository (default: `main`) unpacked in a
temporary folder; "after" is this checkout. Each command runs as a child process with
`PYTHONPATH` pointing at one tree, the two trees taking turns, and the table shows the median
wall time of each side, their ratio, and each against `python -c pass` measured in the same
rounds, and each target of issue #28 with whether it is met (by "after"). Both trees are
compiled to bytecode first (as an installed package is), so neither pays for compiling its
modules on every call. Projects: the demo's sample (two files) and a copy of the pygments
package that rich installs (about 125,000 lines: a big project). Also measured, in one
process of each tree: `Runtime.verify` with both checks (a fresh import and a fork of the
live process) against each check alone, as a median of `--verify-runs` calls one after
another, next to a fresh interpreter's start (`python -c pass`). The load average is
printed at the start and the end: the machine is shared, so only figures of one run
compare.

    python bench/cli_latency.py [--before main] [--rounds 5] [--verify-runs 30]
"""

from __future__ import annotations

import argparse
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import pygments
from _trees import unpack

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
checks = {
    "both": lambda: rt.verify(code),
    "fresh import only": lambda: rt.verify(code, live=False),
    "live fork only": lambda: rt.checks.sandbox.run_live(code),
}
times = {label: [] for label in checks}
for _ in range(int(sys.argv[2])):  # interleaved: the three share the machine's load
    for label, check in checks.items():
        start = time.perf_counter()
        result = check()
        times[label].append(time.perf_counter() - start)
        assert result.ok, result
for label, samples in times.items():
    print(label, statistics.median(samples))
rt.close()
"""


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


Target = tuple[float, float | None]
"""A target: wall seconds at most, and at most so many times `python -c pass` (or None)."""


def _met(seconds: float, floor: float, target: Target) -> str:
    limit, times_python = target
    ok = seconds <= limit and (times_python is None or seconds / floor <= times_python)
    return "yes" if ok else "no"


def _said(target: Target, unit: str = "s") -> str:
    limit, times_python = target
    shown = f"≤ {limit * 1000:g} ms" if unit == "ms" else f"≤ {limit:g} s"
    return shown + (f", ≤ {times_python:g}× python" if times_python is not None else "")


def _compile(tree: Path) -> None:
    """Bytecode for every module of `tree`, as an installed package has it."""
    subprocess.run(
        [sys.executable, "-m", "compileall", "-q", str(tree / "liveforge")],
        capture_output=True,
        check=False,  # the demo's sample and broken test data need not compile
    )


def _load() -> str:
    return " ".join(f"{x:.2f}" for x in os.getloadavg())


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--before", default="main", help="git ref of the 'before' tree")
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--verify-runs", type=int, default=30)
    args = parser.parse_args()
    python = [sys.executable]
    lf = [*python, "-m", "liveforge"]
    print(f"{os.cpu_count()} CPUs, load average at start: {_load()}")
    with tempfile.TemporaryDirectory() as scratch:
        base = Path(scratch)
        trees = {"before": unpack(args.before, base / "before"), "after": HERE}
        for tree in trees.values():
            _compile(tree)
        projects = _projects(base)
        # each side answers `find` on the big project once first: "after" keeps its index
        for side, tree in trees.items():
            first = _timed([*lf, "find", "get_lexer_by_name"], tree, projects["big"])
            print(f"find on the big project, first call ({side}): {first:.2f}s")
        rows: list[tuple[str, list[str], str, Target | None]] = [
            ("python -c pass", [*python, "-c", "pass"], "small", None),
            ("liveforge --help", [*lf, "--help"], "small", (0.25, 10)),
            ("liveforge find (small project)", [*lf, "find", "subtotal"], "small", (0.25, 10)),
            (
                "liveforge find (big, later call)",
                [*lf, "find", "get_lexer_by_name"],
                "big",
                (0.4, None),
            ),
            ("liveforge verify CODE", [*lf, "verify", "1 + 1"], "small", (0.5, None)),
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
            f"{'before/py':>10} {'after/py':>9}  {'target':24} met"
        )
        for label, _, _, target in rows:
            before = statistics.median(times[(label, "before")])
            after = statistics.median(times[(label, "after")])
            print(
                f"{label:34} {before:8.3f} {after:8.3f} {after / before:12.2f}× "
                f"{before / floor['before']:9.1f}× {after / floor['after']:8.1f}×  "
                + (f"{_said(target):24} {_met(after, floor['after'], target)}" if target else "")
            )
        runs = args.verify_runs
        print(
            f"\nRuntime.verify in one process, median of {runs} calls one after another, "
            "next to python -c pass"
        )
        verify: dict[tuple[str, str], float] = {}
        for side, tree in trees.items():
            env = {**os.environ, "PYTHONPATH": str(tree)}
            out = subprocess.run(
                [*python, "-c", VERIFY_TIMES, str(projects["small"]), str(runs)],
                env=env,
                capture_output=True,
                text=True,
                check=True,
            ).stdout
            for line in out.splitlines():
                label, _, seconds = line.rpartition(" ")
                verify[(label, side)] = float(seconds)
        print(f"{'check':20} {'before':>10} {'after':>10} {'after/before':>13} {'after/py':>9}")
        for label in ("both", "fresh import only", "live fork only"):
            before, after = verify[(label, "before")], verify[(label, "after")]
            print(
                f"{label:20} {before * 1000:7.1f} ms {after * 1000:7.1f} ms "
                f"{after / before:12.2f}× {after / floor['after']:8.3f}×"
            )
        both: Target = (0.020, 0.12)
        print(
            f"{'both: target':20} {_said(both, 'ms')}: "
            f"{_met(verify[('both', 'after')], floor['after'], both)}"
        )
    print(f"\nload average at end: {_load()}")


if __name__ == "__main__":
    main()
