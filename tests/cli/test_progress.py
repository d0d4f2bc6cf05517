"""One-shot checks show progress while they run: pytest's live count in a terminal, the
output itself with -v; Ctrl-C stops the run's processes."""

from __future__ import annotations

import signal
import sys
from pathlib import Path

import pexpect
from cli_support import cli_env

from liveforge.cli.checks._progress import PytestTally

GATED = """\
import time
from pathlib import Path


def test_first():
    pass


def test_waits_for_the_go_file():
    gate = Path(__file__).parent.parent.parent / "gate" / "go"
    end = time.monotonic() + 60
    while not gate.exists() and time.monotonic() < end:
        time.sleep(0.02)
    assert gate.exists()
"""


def _project(tmp_path: Path) -> Path:
    """The gated project; its gate is a folder beside it that checks may read (a check sees
    its project copy-on-write, where a file made from outside during the run may not show)."""
    root = tmp_path / "proj"
    (root / "tests").mkdir(parents=True)
    (root / "tests" / "test_gated.py").write_text(GATED)
    (tmp_path / "gate").mkdir()
    (root / "pyproject.toml").write_text('[tool.liveforge.sandbox]\nreadable = ["../gate"]\n')
    return root


def _spawn(root: Path, *args: str) -> pexpect.spawn:
    return pexpect.spawn(
        sys.executable,
        ["-m", "liveforge", *args],
        cwd=str(root),
        env=cli_env(TERM="xterm-256color"),
        encoding="utf-8",
        timeout=60,
        dimensions=(40, 200),
        preexec_fn=_interruptible,
    )


def _interruptible() -> None:
    """In the child before it starts: Ctrl-C interrupts it, as it does a command typed at a
    terminal. A test run started in the background (`pytest ... &` from a script) ignores
    SIGINT, and an ignored signal stays ignored in every child, so Ctrl-C would do nothing."""
    signal.signal(signal.SIGINT, signal.SIG_DFL)


def test_live_count_while_tests_run_then_the_report(tmp_path: Path):
    """The status line counts the first test as passed while the second still runs."""
    root = _project(tmp_path)
    child = _spawn(root, "test", "--", "tests")
    child.expect(r"1 passed, 0 failed")
    (root.parent / "gate" / "go").write_text("")
    child.expect(r"tests: 2 passed")
    child.expect(pexpect.EOF)
    child.close()
    assert child.exitstatus == 0


def test_ctrl_c_stops_the_running_tests(tmp_path: Path):
    """-v shows each result as it comes (the second test is still waiting); Ctrl-C then ends
    the command with 130 and leaves no test process behind."""
    root = _project(tmp_path)
    child = _spawn(root, "test", "-v", "--", "-v", "tests")
    child.expect(r"test_first PASSED")
    child.sendcontrol("c")
    child.expect("interrupted")
    child.expect(pexpect.EOF)
    child.close()
    assert child.exitstatus == 130
    leftovers = [
        p
        for p in Path("/proc").glob("[0-9]*/cmdline")
        if str(root).encode() in _read(p) and b"liveforge" not in _read(p)
    ]
    assert leftovers == []


def test_a_line_printed_in_two_pieces_is_shown_whole_under_the_status_line(tmp_path: Path):
    """With -v, a line of output written in two pieces a second apart reaches the terminal
    in one piece: the status line, redrawn meanwhile, is not drawn into its middle."""
    root = tmp_path / "proj"
    (root / "tests").mkdir(parents=True)
    (root / "tests" / "test_slow_line.py").write_text(
        "import sys, time\n\n\ndef test_halves():\n"
        "    sys.stdout.write('first-half-'); sys.stdout.flush()\n"
        "    time.sleep(1.5)\n"
        "    sys.stdout.write('second-half\\n'); sys.stdout.flush()\n"
    )
    child = _spawn(root, "test", "-v", "--", "-s", "tests")
    child.expect(r"first-half-(.*?)second-half", timeout=120)
    between = child.match.group(1)
    child.expect(pexpect.EOF)
    child.close()
    assert between == "", repr(between)
    assert child.exitstatus == 0


def test_verify_shows_its_elapsed_time_rising(tmp_path: Path):
    """While a snippet runs, the status line counts the seconds (0.5s, 1.0s, ... rising);
    then the result replaces it."""
    root = tmp_path / "proj"
    root.mkdir()
    child = _spawn(root, "verify", "--no-live", "import time; time.sleep(2)")
    seen: list[float] = []
    while not seen or seen[-1] < 1.5:
        child.expect(r"verifying in the sandbox · (\d+\.\d)s")
        seen.append(float(child.match.group(1)))
    assert seen == sorted(seen) and len(set(seen)) >= 3, seen
    child.expect("snippet passed")
    child.expect(pexpect.EOF)
    child.close()
    assert child.exitstatus == 0


def _read(path: Path) -> bytes:
    try:
        return path.read_bytes()
    except OSError:
        return b""


def test_tally_reads_quiet_and_verbose_pytest_output():
    """Dots, result words and the unfinished line all count."""
    quiet = PytestTally()
    quiet.feed("tests/test_a.py ..F")
    assert (quiet.passed, quiet.failed, quiet.current) == (2, 1, "tests/test_a.py")
    quiet.feed(".s [100%]\n")
    assert (quiet.passed, quiet.failed, quiet.skipped) == (3, 1, 1)
    verbose = PytestTally()
    verbose.feed("tests/t.py::test_x PASSED [ 50%]\ntests/t.py::test_y[1] ")
    assert (verbose.passed, verbose.current) == (1, "tests/t.py::test_y[1]")
    verbose.feed("FAILED [100%]\n")
    assert (verbose.passed, verbose.failed) == (1, 1)
    verbose.feed("tests/t.py::test_z ERROR\n")
    assert verbose.line().startswith("1 passed, 1 failed, 1 error ·")
    verbose.feed("tests/t.py::test_w ERROR\n")
    assert verbose.line().startswith("1 passed, 1 failed, 2 errors ·")
