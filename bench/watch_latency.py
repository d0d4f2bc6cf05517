"""Save-to-applied latency: `liveforge watch` side by side with jurigged on the same edit.

One small program runs under each watcher in its own child process. It calls a function of
a project module in a loop (every millisecond) and prints the time whenever the returned
value changes. The benchmark saves a new body of that function and measures from just before
the write to the moment the running program first returns the new value. Two save styles,
as editors do them: "in place" (the file rewritten, e.g. VS Code) and "rename" (a temporary
file renamed over the old one, e.g. vim, Emacs, JetBrains "safe write"). Both engines see the
same files, the same edits and the same program in one run. The first edit of each run is a
warm-up and not counted. The target is a median at or below 300 ms.

jurigged comes from the `bench` extra: pip install -e ".[bench]".

Run: python bench/watch_latency.py [--edits 15]
"""

from __future__ import annotations

import argparse
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

MODULE = "lf_watch_target"
TARGET_MS = 300.0
PROGRAM = f"""\
import time
from {MODULE} import value

last = None
while True:
    now = value()
    if now != last:
        print(now, time.time(), flush=True)
        last = now
    time.sleep(0.001)
"""
ENGINES = {
    "liveforge watch": ["-m", "liveforge", "watch", "--project", ".", "--", "app.py"],
    "jurigged": ["-m", "jurigged", "app.py"],
}


def module_source(n: int) -> str:
    """The watched module; `n` is what `value()` returns."""
    return f'"""Target of the watch benchmark."""\n\n\ndef value():\n    return {n}\n'


def save_in_place(path: Path, text: str) -> None:
    """Rewrite the file itself."""
    path.write_text(text)


def save_by_rename(path: Path, text: str) -> None:
    """Write a temporary file and rename it over the old one."""
    tmp = path.with_name(path.name + ".swp")
    tmp.write_text(text)
    os.replace(tmp, path)


STYLES = {"in place": save_in_place, "rename": save_by_rename}


class Child:
    """One watcher running the program; `seen[n]` is when the program first returned n."""

    def __init__(self, argv: list[str], cwd: Path) -> None:
        self.proc = subprocess.Popen(
            [sys.executable, *argv],
            cwd=cwd,
            stdout=subprocess.PIPE,
            stderr=subprocess.DEVNULL,
            text=True,
        )
        self.seen: dict[int, float] = {}
        self.changed = threading.Condition()
        threading.Thread(target=self._read, daemon=True).start()

    def _read(self) -> None:
        assert self.proc.stdout is not None
        for line in self.proc.stdout:
            value, _, stamp = line.partition(" ")
            with self.changed:
                self.seen.setdefault(int(value), float(stamp))
                self.changed.notify_all()

    def wait_for(self, n: int, timeout: float) -> float | None:
        with self.changed:
            self.changed.wait_for(lambda: n in self.seen, timeout)
            return self.seen.get(n)

    def stop(self) -> None:
        self.proc.kill()
        self.proc.wait()


def measure(name: str, style: str, edits: int, workdir: Path) -> list[float | None]:
    """Latencies in ms of `edits` saves under engine `name` (None: never applied)."""
    save = STYLES[style]
    project = workdir / f"{name}-{style}".replace(" ", "_")
    shutil.rmtree(project, ignore_errors=True)
    project.mkdir(parents=True)
    (project / "app.py").write_text(PROGRAM)
    target = project / f"{MODULE}.py"
    target.write_text(module_source(0))
    child = Child(ENGINES[name], project)
    try:
        if child.wait_for(0, 30) is None:
            raise SystemExit(f"{name}: the program did not start")
        time.sleep(1.5)  # both watchers set up their file notifications after start
        out: list[float | None] = []
        for n in range(1, edits + 2):
            started = time.time()
            save(target, module_source(n))
            applied = child.wait_for(n, 5)
            if n > 1:  # the first edit warms the engine up
                out.append(None if applied is None else (applied - started) * 1000)
            time.sleep(0.4)  # past any debounce window, so each save is its own event
        return out
    finally:
        child.stop()


Results = dict[tuple[str, str], list[float | None]]


def _median(values: list[float | None]) -> float | None:
    done = [v for v in values if v is not None]
    return statistics.median(done) if done else None


def table(results: Results) -> str:
    rows = [
        "| save | engine | applied | median ms | p90 ms | max ms | median vs liveforge |",
        "|---|---|---|---|---|---|---|",
    ]
    for (style, name), values in results.items():
        done = sorted(v for v in values if v is not None)
        base = _median(results[(style, "liveforge watch")])
        if not done:
            rows.append(f"| {style} | {name} | 0/{len(values)} | - | - | - | never applied |")
            continue
        median = statistics.median(done)
        p90 = done[min(len(done) - 1, int(len(done) * 0.9))]
        ratio = f"{median / base:.2f}x" if base else "-"
        rows.append(
            f"| {style} | {name} | {len(done)}/{len(values)} | {median:.1f} | {p90:.1f} | "
            f"{done[-1]:.1f} | {ratio} |"
        )
    return "\n".join(rows)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--edits", type=int, default=15, help="timed saves per engine")
    args = parser.parse_args()
    try:
        import jurigged  # noqa: F401
    except ImportError:
        raise SystemExit('jurigged is missing: pip install -e ".[bench]"') from None
    with tempfile.TemporaryDirectory(prefix="lf-watch-bench-") as tmp:
        results: Results = {
            (style, name): measure(name, style, args.edits, Path(tmp))
            for style in STYLES
            for name in ENGINES
        }
    print(
        f"save-to-applied latency, {args.edits} saves each (target: median <= {TARGET_MS:.0f} ms)"
    )
    print(table(results))
    for style in STYLES:
        median = _median(results[(style, "liveforge watch")])
        verdict = "never applied" if median is None else f"{median:.1f} ms"
        ok = median is not None and median <= TARGET_MS
        print(f"liveforge watch, {style}: median {verdict}: {'ok' if ok else 'MISSED'}")


if __name__ == "__main__":
    main()
