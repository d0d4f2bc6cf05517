"""The project worker process on its own: commands in on stdin, messages out on stdout."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

from gateway_support import gateway_env

from liveforge.testing import FakeProvider, reply


def test_an_abort_sent_with_its_run_stops_that_run(sample: Path):
    """`run` and `abort` arriving together: the run still starts, and ends cancelled."""
    with FakeProvider(script=[reply.text("too late " * 40).chunked(5).slow(0.05)]) as fake:
        worker = subprocess.Popen(
            [sys.executable, "-m", "liveforge.gateway.worker", str(sample), "full-auto"],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            text=True,
            env=gateway_env(fake),
            cwd=sample,
        )
        assert worker.stdin is not None and worker.stdout is not None
        try:
            assert json.loads(worker.stdout.readline())["kind"] == "ready"
            run = {"op": "run", "run": "r-1", "agent_session": "", "input": "long"}
            worker.stdin.write(json.dumps(run) + "\n" + json.dumps({"op": "abort", "run": "r-1"}))
            worker.stdin.write("\n")
            worker.stdin.flush()
            while (message := json.loads(worker.stdout.readline()))["kind"] != "ended":
                pass
            assert message["run"] == "r-1" and message["reason"] == "cancelled"
        finally:
            worker.stdin.close()
            worker.wait(timeout=30)
