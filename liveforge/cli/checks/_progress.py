"""Progress of a one-shot check while it runs: elapsed time, pytest's live pass/fail count
and current test, and (with -v) the run's output as it comes.

The check runs in a worker thread; this thread follows the output file of the run's record
(`sandbox_runs/<id>/stdout.txt`, written as the output arrives) and draws one status line on
standard error when that is a terminal. Ctrl-C stops the check's processes, then interrupts.
"""

from __future__ import annotations

import os
import re
import sys
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import IO, TYPE_CHECKING, Any, TypeVar

from liveforge.cli.checks._cancel import stop_running_checks

if TYPE_CHECKING:
    from rich.console import Console

__all__ = ["PytestTally", "follow_check", "stream_for"]

T = TypeVar("T")
_RESULT = re.compile(r"^(\S+::\S+?)\s+(PASSED|FAILED|ERROR|SKIPPED|XFAIL|XPASS)\b", re.M)
_PROGRESS = re.compile(r"^(?:(\S+\.py) )?([.FEsxX]+)\s*(?:\[\s*\d+%\])?\s*$", re.M)
_WORDS = {"PASSED": ".", "FAILED": "F", "ERROR": "E", "SKIPPED": "s", "XFAIL": "x", "XPASS": "X"}


class PytestTally:
    """Counts from pytest's terminal output, fed in pieces; `line()` describes them."""

    def __init__(self) -> None:
        self.text = ""
        self.passed = self.failed = self.errors = self.skipped = 0
        self.current = ""

    def feed(self, chunk: str) -> None:
        """Take more output; the last, unfinished line names the current test (or file)."""
        self.text += chunk
        partial = self.text.rpartition("\n")[2]
        marks = "".join(_WORDS[word] for _, word in _RESULT.findall(self.text))
        marks += "".join(m.group(2) for m in _PROGRESS.finditer(self.text))
        self.passed, self.failed = marks.count("."), marks.count("F")
        self.errors, self.skipped = marks.count("E"), marks.count("s")
        if partial.strip():
            self.current = partial.split()[0]

    def line(self) -> str:
        parts = [f"{self.passed} passed", f"{self.failed} failed"]
        if self.errors:
            parts.append(f"{self.errors} error" + ("s" if self.errors != 1 else ""))
        return ", ".join(parts) + (f" · {self.current}" if self.current else "")


def follow_check(
    rt: Any,
    label: str,
    work: Callable[[], T],
    *,
    tests: bool,
    stream: IO[str] | None = None,
    console: Console | None = None,
) -> T:
    """Run `work()` (one sandbox check of `rt`) showing progress; its result."""
    console = console or _status_console()
    runs_dir = Path(rt.project_root) / "sandbox_runs"
    before = _folders(runs_dir)
    outcome: dict[str, Any] = {}
    worker = threading.Thread(target=_capture, args=(work, outcome), daemon=True)
    tally, offset, output = PytestTally(), 0, None
    started = time.monotonic()
    status = console.status(label) if console is not None and console.is_terminal else None
    if status is not None:
        status.start()
    shown = _Lines(stream, console if status is not None else None)
    worker.start()
    try:
        while worker.is_alive():
            worker.join(0.1)
            output = output or _new_output(runs_dir, before)
            if output is not None:
                chunk, offset = _read_from(output, offset)
                if chunk:
                    tally.feed(chunk)
                    shown.feed(chunk)
            if status is not None:
                elapsed = f"{time.monotonic() - started:.1f}s"
                status.update(f"{label} · {elapsed}" + (f" · {tally.line()}" if tests else ""))
    except KeyboardInterrupt:
        stop_running_checks(rt)
        worker.join(10)
        raise
    finally:
        if status is not None:
            status.stop()
        shown.end()
    if "error" in outcome:
        raise outcome["error"]
    result: T = outcome["result"]
    return result


class _Lines:
    """The run's output shown with -v, a whole line at a time: the status line is redrawn
    several times a second on the same terminal, and a line written in two pieces would have
    it drawn in the middle ("test_first " ... "PASSED"). While the status line shows, lines
    bound for that terminal go through its console, which prints them above it."""

    def __init__(self, stream: IO[str] | None, console: Console | None) -> None:
        self.stream = stream
        same = console is not None and stream is not None and stream is console.file
        self.console = console if same or (stream is not None and _is_terminal(stream)) else None
        self.pending = ""

    def feed(self, chunk: str) -> None:
        if self.stream is None:
            return
        whole, newline, self.pending = (self.pending + chunk).rpartition("\n")
        if newline:
            self._write(whole)

    def end(self) -> None:
        """Show what is left of an unfinished last line (the status line is gone by now)."""
        if self.stream is not None and self.pending:
            self.stream.write(self.pending)
            self.stream.flush()
            self.pending = ""

    def _write(self, lines: str) -> None:
        if self.console is not None:
            from rich.text import Text

            self.console.print(Text(lines), soft_wrap=True, highlight=False)
        elif self.stream is not None:
            self.stream.write(lines + "\n")
            self.stream.flush()


def _is_terminal(stream: IO[str]) -> bool:
    try:
        return stream.isatty()
    except (AttributeError, ValueError):
        return False


def _status_console() -> Console | None:
    """A console on standard error for the status line; None, without importing rich,
    where rich would not draw one (not a terminal, and neither FORCE_COLOR nor
    TTY_COMPATIBLE=1 says otherwise)."""
    env = os.environ
    if not sys.stderr.isatty() and not env.get("FORCE_COLOR") and env.get("TTY_COMPATIBLE") != "1":
        return None
    from rich.console import Console

    return Console(stderr=True, highlight=False)


def _capture(work: Callable[[], Any], outcome: dict[str, Any]) -> None:
    try:
        outcome["result"] = work()
    except BaseException as exc:  # handed to the waiting thread
        outcome["error"] = exc


def _folders(runs_dir: Path) -> set[str]:
    try:
        return {p.name for p in runs_dir.iterdir()}
    except OSError:
        return set()


def _new_output(runs_dir: Path, before: set[str]) -> Path | None:
    fresh = sorted(_folders(runs_dir) - before)
    return runs_dir / fresh[-1] / "stdout.txt" if fresh else None


def _read_from(path: Path, offset: int) -> tuple[str, int]:
    try:
        with path.open("rb") as handle:
            handle.seek(offset)
            data = handle.read()
    except OSError:
        return "", offset
    return data.decode("utf-8", "replace"), offset + len(data)


def stream_for(verbose: bool, json_output: bool) -> IO[str] | None:
    """Where -v sends the run's output: stderr under --json (stdout holds the object)."""
    if not verbose:
        return None
    return sys.stderr if json_output else sys.stdout
