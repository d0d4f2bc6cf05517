"""Stopping a sandbox's checks (the front end's Ctrl-C) also stops a run whose process had
not started yet: it is killed as it starts, not left to run to its timeout."""

from __future__ import annotations

import threading
import time
from pathlib import Path

from liveforge.kernel.checks._records import RunResult
from liveforge.kernel.checks._sandbox import Sandbox

SLEEPER = "import time\ntime.sleep(120)"


def test_a_run_stopped_before_its_child_started_is_killed_as_it_starts(tmp_path: Path) -> None:
    (tmp_path / "slowpkg").mkdir()
    (tmp_path / "slowpkg" / "__init__.py").write_text("import time\ntime.sleep(1.5)\n")
    runs = tmp_path / "runs"
    results: list[RunResult] = []
    with Sandbox(tmp_path, runs_dir=runs, preload=["slowpkg"]) as box:
        thread = threading.Thread(target=lambda: results.append(box.verify(SLEEPER, timeout=60)))
        started = time.monotonic()
        thread.start()
        while not (runs.exists() and any(runs.iterdir())):  # the run has begun
            time.sleep(0.01)
        assert box.template_pid is None  # its template is still importing slowpkg
        box.stop_running()
        thread.join(60)
    assert results and results[0].status == "crashed", results
    assert "stopped before it reported a result" in results[0].message
    assert time.monotonic() - started < 30
