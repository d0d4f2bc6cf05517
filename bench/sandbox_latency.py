"""Sandbox latency: a forked, pre-imported child versus a fresh interpreter.

Table 1 — round trip of a verification snippet with one patched module in the overlay (the
fixture package imports pydantic and httpx at module level):

    Sandbox.verify(snippet, overlay)            the template made the check ahead while idle
                                                (in namespaces the host maker made, where
                                                this process may enter them: root; else in
                                                namespaces of its own), overlay from memory
    Sandbox.verify, check forked when asked     the same with `make_ahead=False`: the
                                                template forks the check per request
    live fork in the boundary (run_live)        fork of this loaded process itself, the
                                                patch live (a check that sees the program),
                                                inside the check boundary as verify runs it:
                                                it joins namespaces made ahead while idle
                                                (`_hosts`) and forks the check into them
    live fork, namespaces entered when asked    the same with `make_ahead=False`: the fork
                                                makes its own namespaces (relay, pid 1, check)
    live fork, no boundary                      the same fork bare, for reference
    Runtime.verify(snippet, live=False)         the fresh-import check through the public API
    Runtime.verify(snippet)                     both checks, as verify runs by default, right
                                                after the call before (the work that one's
                                                checks left competes with it)
    Runtime.verify, 50 ms after the last check  the same after 50 ms untimed: as a verify
                                                that comes after its caller read the last
                                                result
    python -c snippet                           fresh interpreter, overlay written to a temp
                                                directory first on sys.path

Every check runs with isolation on (Landlock, network off, the project copy-on-write and a
pid namespace where the kernel offers them); the boundary line of one result is printed.

The benchmark process is a loaded program: besides the fixture package (pydantic, httpx) it
holds a ballast of small objects (--ballast, default 500,000 dicts), whose resident size the
table's title gives, since forking the live process costs more as it grows.

Table 2 — CPU time one `Runtime.verify` costs across every process it involves, as a mean
over --runs calls of each kind one after another: this process (all its threads), the live
forks (its children, reaped), the sandbox's template with the checks it forks, and the host
maker with the namespaces it makes for the checks. On a machine of 2 cores, CPU time is
what bounds the checks when they run at the same time.

Table 3 — the fixture project's own test suite with the patched module:

    Sandbox.run_tests(["-q"], overlay)          forked child, overlay from memory
    python -m pytest -q                         fresh interpreter on the same code persisted

With --provider the process also holds a provider built from the configuration, its keys
read from the environment (e.g. `OPENAI_API_KEY=sk-... python bench/sandbox_latency.py
--provider`), as an agent session does: the live fork then has keys to overwrite before
its snippet runs.

Targets: verify (the fresh-import fork) and the live fork median <= 20 ms each, and
<= 0.1x the fresh interpreter; `Runtime.verify` with both checks <= 20 ms (<= 0.12x);
run_tests <= 1.15x plain pytest.

`--before REF` measures table 1 (and table 2's `Runtime.verify` rows) for another revision
too (`git archive REF` unpacked in a temporary folder) and prints the two side by side: two
worker processes, one per revision, each a loaded program as above, take turns call by
call, so both see the same load of the machine.

Run: `python bench/sandbox_latency.py [--runs 30] [--test-runs 10] [--ballast 500000]
[--provider] [--before REF]`.
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from _trees import unpack

from liveforge import Runtime
from liveforge.kernel.checks._livefork import run_live
from liveforge.kernel.checks._overlayhook import OverlayModule
from liveforge.kernel.checks._sandbox import Sandbox

ROOT = Path(__file__).resolve().parent.parent
FIXTURE = ROOT / "tests" / "fixtures" / "sandbox" / "project"
SNIPPET = "from fixture_pkg.mod import f; assert f(1) == 2"
ORIGINAL = "    return x + 1\n"
PATCHED = "    successor = 1 + x\n    return successor\n"


IDLE = 0.05
"""Seconds an `Idle` call waits, untimed, before it runs: as a verify that comes after its
caller read the last result (the work the last checks left, exits and namespaces made ahead
for the next, is done by then)."""


@dataclass
class Idle:
    """A call measured after `IDLE` seconds of nothing (see `timed`)."""

    call: Callable[[], object]

    def __call__(self) -> object:
        return self.call()


def timed(
    calls: dict[str, Callable[[], object]], runs: int, warmup: int = 3
) -> dict[str, list[float]]:
    """Wall-clock seconds per call, the variants interleaved so they share the machine's load;
    an `Idle` call after `IDLE` seconds untimed, every other right after the call before."""
    for call in calls.values():
        for _ in range(warmup):
            call()
    samples: dict[str, list[float]] = {label: [] for label in calls}
    for _ in range(runs):
        for label, call in calls.items():
            if isinstance(call, Idle):
                time.sleep(IDLE)
            start = time.perf_counter()
            call()
            samples[label].append(time.perf_counter() - start)
    return samples


def row(label: str, samples: list[float], baseline: list[float] | None) -> str:
    median = statistics.median(samples)
    p90 = sorted(samples)[int(0.9 * (len(samples) - 1))]
    ratio = f"{median / statistics.median(baseline):6.3f}x" if baseline else "  1.000x"
    return f"| {label:<42} | {median * 1000:9.1f} | {p90 * 1000:9.1f} | {ratio} |"


def table(title: str, rows: list[str]) -> None:
    print(f"\n{title}\n")
    print(f"| {'measure':<42} | {'median ms':>9} | {'p90 ms':>9} | {'ratio':>7} |")
    print(f"|{'-' * 44}|{'-' * 11}|{'-' * 11}|{'-' * 9}|")
    for line in rows:
        print(line)


def _resident_mb() -> int:
    with open("/proc/self/statm") as statm:
        return int(statm.read().split()[1]) * os.sysconf("SC_PAGE_SIZE") // 2**20


def _provider() -> object:
    """A provider of the default configuration's models whose keys are in the environment."""
    from liveforge.config import LiveforgeConfig, build_provider

    models = [m for m, var in _MODELS if os.environ.get(var)]
    if not models:
        raise SystemExit("--provider: set OPENAI_API_KEY or ANTHROPIC_API_KEY")
    config = LiveforgeConfig(model=models[0], fallback_models=models[1:])
    print(f"holding a provider: {', '.join(models)}")
    return build_provider(config)


_MODELS = [
    ("openai:gpt-4o", "OPENAI_API_KEY"),
    ("anthropic:claude-sonnet-4-5", "ANTHROPIC_API_KEY"),
]


def _process_cpu(pid: int | None) -> float:
    """CPU seconds of process `pid` and of its children it reaped (0 when it is gone)."""
    if pid is None:
        return 0.0
    try:
        with open(f"/proc/{pid}/stat") as stat:
            fields = stat.read().rsplit(")", 1)[1].split()
    except OSError:
        return 0.0
    return sum(int(x) for x in fields[11:15]) / os.sysconf("SC_CLK_TCK")


def cpu_per_call(rt: Runtime, call: Callable[[], object], runs: int) -> dict[str, float]:
    """Mean CPU milliseconds of `call` in each process it involves (see the module's text)."""
    sandbox = rt.checks.sandbox
    # the host maker, once checks started it (`_live_hosts` in revisions before the
    # fresh-import checks joined hosts too)
    hosts = getattr(sandbox, "_hosts", None) or sandbox._live_hosts
    maker_process = hosts._process
    template = sandbox.template_pid
    maker = maker_process.pid if maker_process is not None else None

    def now() -> tuple[float, ...]:
        mine = resource.getrusage(resource.RUSAGE_SELF)
        forks = resource.getrusage(resource.RUSAGE_CHILDREN)
        return (
            mine.ru_utime + mine.ru_stime,
            forks.ru_utime + forks.ru_stime,
            _process_cpu(template),
            _process_cpu(maker),
            float(mine.ru_minflt),
        )

    time.sleep(1.0)  # what came before is reaped and done
    before = now()
    for _ in range(runs):
        call()
    time.sleep(1.0)  # the last forks reaped, the next host made
    spent = [(b - a) / runs for a, b in zip(before, now(), strict=True)]
    labels = ("front end", "live forks", "template + checks", "host maker", "faults")
    cpu = {label: value * (1 if label == "faults" else 1000) for label, value in zip(labels, spent)}
    cpu["total"] = sum(v for k, v in cpu.items() if k != "faults")
    return cpu


def checked(ok: bool, what: str) -> None:
    if not ok:
        raise SystemExit(f"benchmark run failed: {what}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=30)
    parser.add_argument("--test-runs", type=int, default=10)
    parser.add_argument("--ballast", type=int, default=500_000)
    parser.add_argument("--provider", action="store_true", help="hold a configured provider")
    parser.add_argument("--before", metavar="REF", help="also measure this git revision")
    parser.add_argument("--worker", action="store_true", help=argparse.SUPPRESS)
    options = parser.parse_args()
    ballast = [{"i": i} for i in range(options.ballast)]  # noqa: F841 - a loaded program
    provider = _provider() if options.provider else None  # noqa: F841 - held, as a session does
    work = Path(tempfile.mkdtemp(prefix="sandbox-bench-"))
    if not options.worker:
        print(
            f"{os.cpu_count()} CPUs, load average at start: "
            + " ".join(f"{load:.2f}" for load in os.getloadavg())
        )
    try:
        if options.worker:
            serve_rounds(work)
        elif options.before:
            compare(work, options)
        else:
            run(work, options.runs, options.test_runs)
    finally:
        shutil.rmtree(work, ignore_errors=True)
    if not options.worker:
        print("\nload average at end: " + " ".join(f"{load:.2f}" for load in os.getloadavg()))


def setup(work: Path) -> tuple[Runtime, list[OverlayModule], dict[str, list[str]]]:
    """The fixture project copied into `work`, loaded in this process and patched; the
    runtime, the overlay, and the environment and command of the fresh interpreter."""
    project = work / "project"
    shutil.copytree(FIXTURE, project, ignore=shutil.ignore_patterns("__pycache__"))
    mod_path = project / "fixture_pkg" / "mod.py"
    patched_source = mod_path.read_text().replace(ORIGINAL, PATCHED)
    assert patched_source != mod_path.read_text()
    sys.path.insert(0, str(project))
    import fixture_pkg.mod  # noqa: F401  - the parent has the project loaded, as a session does

    overlay = [OverlayModule("fixture_pkg.mod", patched_source, str(mod_path))]
    persisted = work / "persisted"
    shutil.copytree(project, persisted)
    (persisted / "fixture_pkg" / "mod.py").write_text(patched_source)
    rt = Runtime(project_root=project)
    rt.patch_module("fixture_pkg.mod", patched_source)
    fresh = {"PYTHONPATH": [str(persisted)], "cmd": [sys.executable, "-c", SNIPPET]}
    return rt, overlay, fresh


# Table 1's rows measured for `--before`, and table 2's.
ROWS = {
    "sandbox": "Sandbox.verify (check made ahead)",
    "forked": "Sandbox.verify, check forked when asked",
    "live": "live fork in the boundary (run_live)",
    "live-asked": "live fork, namespaces entered when asked",
    "bare": "live fork, no boundary",
    "fresh-only": "Runtime.verify(live=False): fresh import",
    "runtime": "Runtime.verify: fresh import + live fork",
    "runtime-idle": "Runtime.verify, 50 ms after the last check",
    "fresh": "fresh `python -c`, overlay on sys.path",
}


def serve_rounds(work: Path) -> None:
    """`--worker`: for each line `round` on stdin, each of `ROWS` once (seconds, a JSON line
    on stdout); for `cpu N`, table 2's `Runtime.verify` rows over N calls each."""
    rt, overlay, fresh = setup(work)
    box = rt.checks.sandbox
    forking = Sandbox(
        work / "project", runs_dir=work / "runs-forked", keep_runs=5, make_ahead=False
    )
    env = {**os.environ, "PYTHONPATH": fresh["PYTHONPATH"][0]}
    calls: dict[str, Callable[[], object]] = {
        "sandbox": lambda: box.verify(SNIPPET, overlay),
        "forked": lambda: forking.verify(SNIPPET, overlay),
        "live": lambda: box.run_live(SNIPPET, timeout=30),
        "live-asked": lambda: forking.run_live(SNIPPET, timeout=30),
        "bare": lambda: run_live(SNIPPET, timeout=30),
        "fresh-only": lambda: rt.verify(SNIPPET, live=False),
        "runtime": lambda: rt.verify(SNIPPET),
        "runtime-idle": Idle(lambda: rt.verify(SNIPPET)),
        "fresh": lambda: subprocess.run(fresh["cmd"], env=env, cwd=work, check=True),
    }
    checked(rt.verify(SNIPPET).ok and box.run_live(SNIPPET, timeout=30).ok, "verify")
    timed(calls, 0)  # warm-up
    for line in sys.stdin:
        if line.startswith("cpu"):
            runs = int(line.split()[1])
            answer: dict[str, Any] = {
                ROWS["runtime"]: cpu_per_call(rt, calls["runtime"], runs),
                ROWS["fresh-only"]: cpu_per_call(rt, calls["fresh-only"], runs),
            }
        else:
            answer = {
                label: timed({label: call}, 1, warmup=0)[label][0] for label, call in calls.items()
            }
        print(json.dumps(answer), flush=True)
    forking.close()
    rt.close()


def compare(work: Path, options: argparse.Namespace) -> None:
    """`--before`: this checkout and revision `options.before`, each in a worker, taking
    turns call by call; table 1's rows side by side, then table 2's `Runtime.verify` rows."""
    tree = unpack(options.before, work / "before")
    argv = [sys.executable, __file__, "--worker", "--ballast", str(options.ballast)]
    workers = {}
    for name, path in (("before", str(tree)), ("this", None)):
        env = dict(os.environ)
        if path is not None:
            env["PYTHONPATH"] = path
        workers[name] = subprocess.Popen(
            argv, stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True, env=env
        )

    def ask(name: str, line: str) -> dict[str, Any]:
        worker = workers[name]
        assert worker.stdin is not None and worker.stdout is not None
        worker.stdin.write(line + "\n")
        worker.stdin.flush()
        answer: dict[str, Any] = json.loads(worker.stdout.readline())
        return answer

    samples: dict[str, dict[str, list[float]]] = {name: {k: [] for k in ROWS} for name in workers}
    try:
        for _ in range(options.runs):
            for name in workers:
                for label, seconds in ask(name, "round").items():
                    samples[name][label].append(seconds)
        cpu = {name: ask(name, f"cpu {options.runs}") for name in workers}
    finally:
        for worker in workers.values():
            assert worker.stdin is not None
            worker.stdin.close()
            worker.wait()
    side_by_side(options.before, options.runs, samples, cpu)


def side_by_side(
    ref: str, runs: int, samples: dict[str, dict[str, list[float]]], cpu: dict[str, Any]
) -> None:
    print(
        f"\nverify round trip, {runs} runs each, revision {ref} ('before') and this checkout "
        "taking turns (ratios: this / before, this / fresh interpreter)\n"
    )
    print(
        f"| {'measure':<42} | {'before ms':>9} | {'this ms':>9} | {'this p90':>9} "
        f"| {'/before':>7} | {'/fresh':>7} |"
    )
    print(f"|{'-' * 44}|{'-' * 11}|{'-' * 11}|{'-' * 11}|{'-' * 9}|{'-' * 9}|")
    fresh = statistics.median(samples["this"]["fresh"])
    for key, label in ROWS.items():
        before = statistics.median(samples["before"][key])
        this = samples["this"][key]
        median = statistics.median(this)
        p90 = sorted(this)[int(0.9 * (len(this) - 1))]
        print(
            f"| {label:<42} | {before * 1000:9.1f} | {median * 1000:9.1f} | {p90 * 1000:9.1f} "
            f"| {median / before:6.3f}x | {median / fresh:6.3f}x |"
        )
    print(f"\nCPU ms per call across processes, mean of {runs} calls one after another\n")
    columns = ("front end", "live forks", "template + checks", "host maker", "total")
    print(f"| {'measure':<50} | " + " | ".join(f"{c:>9}" for c in columns) + " | faults |")
    print(f"|{'-' * 52}|" + "|".join("-" * 11 for _ in columns) + "|--------|")
    for label in (ROWS["runtime"], ROWS["fresh-only"]):
        for name in ("before", "this"):
            spent = cpu[name][label]
            cells = " | ".join(f"{spent[c]:>9.1f}" for c in columns)
            print(f"| {label + ', ' + name:<50} | {cells} | {spent['faults']:6.0f} |")


def run(work: Path, runs: int, test_runs: int) -> None:
    rt, overlay, fresh_run = setup(work)
    project, persisted = work / "project", work / "persisted"
    fresh_env = {**os.environ, "PYTHONPATH": str(persisted)}
    fresh_cmd = fresh_run["cmd"]
    pytest_cmd = [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider"]
    forking = Sandbox(project, runs_dir=work / "runs-forked", keep_runs=5, make_ahead=False)
    with Sandbox(project, runs_dir=work / "runs", keep_runs=5) as box, forking:
        checked(box.verify(SNIPPET, overlay).ok and rt.verify(SNIPPET).ok, "verify")
        live = box.run_live(SNIPPET, timeout=30)
        checked(live.ok and run_live(SNIPPET, timeout=30).ok, "live fork")
        boundary = box.verify(SNIPPET, overlay).boundary
        print(f"boundary: {boundary.line() if boundary else None}")
        print(f"live fork: {live.headline()}")
        verify = timed(
            {
                "sandbox": lambda: box.verify(SNIPPET, overlay),
                "live": lambda: box.run_live(SNIPPET, timeout=30),
                "bare": lambda: run_live(SNIPPET, timeout=30),
                "live-asked": lambda: forking.run_live(SNIPPET, timeout=30),
                "fresh-only": lambda: rt.verify(SNIPPET, live=False),
                "runtime": lambda: rt.verify(SNIPPET),
                "runtime-idle": Idle(lambda: rt.verify(SNIPPET)),
                "fresh": lambda: subprocess.run(fresh_cmd, env=fresh_env, cwd=work, check=True),
            },
            runs,
        )
        fresh = verify["fresh"]
        ahead = timed(
            {
                "ahead": lambda: box.verify(SNIPPET, overlay),
                "forked": lambda: forking.verify(SNIPPET, overlay),
                "fresh": lambda: subprocess.run(fresh_cmd, env=fresh_env, cwd=work, check=True),
            },
            runs,
        )
        table(
            f"verify round trip, {runs} runs each, interleaved, this process {_resident_mb()} MB "
            "resident (targets: <= 20 ms, <= 0.1x fresh)",
            [
                row("Sandbox.verify (check made ahead)", verify["sandbox"], fresh),
                row("live fork in the boundary (run_live)", verify["live"], fresh),
                row("live fork, namespaces entered when asked", verify["live-asked"], fresh),
                row("live fork, no boundary", verify["bare"], fresh),
                row("Runtime.verify(live=False): fresh import", verify["fresh-only"], fresh),
                row("Runtime.verify: fresh import + live fork", verify["runtime"], fresh),
                row(ROWS["runtime-idle"], verify["runtime-idle"], fresh),
                row("fresh `python -c`, overlay on sys.path", fresh, None),
            ],
        )

        table(
            f"Sandbox.verify made ahead or forked when asked, {runs} runs each, interleaved",
            [
                row("Sandbox.verify (check made ahead)", ahead["ahead"], ahead["fresh"]),
                row("Sandbox.verify, check forked when asked", ahead["forked"], ahead["fresh"]),
                row("fresh `python -c`, overlay on sys.path", ahead["fresh"], None),
            ],
        )

        cpu = {
            "Runtime.verify: fresh import + live fork": cpu_per_call(
                rt, lambda: rt.verify(SNIPPET), runs
            ),
            "Runtime.verify(live=False): fresh import": cpu_per_call(
                rt, lambda: rt.verify(SNIPPET, live=False), runs
            ),
            "live fork in the boundary (run_live)": cpu_per_call(
                rt, lambda: rt.checks.sandbox.run_live(SNIPPET, timeout=30), runs
            ),
        }
        columns = ("front end", "live forks", "template + checks", "host maker", "total")
        print(
            f"\nCPU ms per call across processes, mean of {runs} calls one after another "
            "(faults: minor page faults of this process per call)\n"
        )
        widths = {c: max(len(c), 8) for c in columns}
        print(
            f"| {'measure':<42} | "
            + " | ".join(f"{c:>{widths[c]}}" for c in columns)
            + " | faults |"
        )
        print(f"|{'-' * 44}|" + "|".join("-" * (widths[c] + 2) for c in columns) + "|--------|")
        for label, spent in cpu.items():
            cells = " | ".join(f"{spent[c]:>{widths[c]}.1f}" for c in columns)
            print(f"| {label:<42} | {cells} | {spent['faults']:6.0f} |")

        checked(box.run_tests(["-q"], overlay).ok, "Sandbox.run_tests")
        tests = timed(
            {
                "sandbox": lambda: box.run_tests(["-q"], overlay),
                "plain": lambda: subprocess.run(
                    pytest_cmd, cwd=persisted, env=fresh_env, check=True, stdout=subprocess.DEVNULL
                ),
            },
            test_runs,
            warmup=1,
        )
    rt.close()
    table(
        f"fixture project test suite, {test_runs} runs each, interleaved "
        "(target: <= 1.15x plain pytest)",
        [
            row("Sandbox.run_tests(['-q'], overlay)", tests["sandbox"], tests["plain"]),
            row("plain `python -m pytest -q`, persisted", tests["plain"], None),
        ],
    )


if __name__ == "__main__":
    main()
