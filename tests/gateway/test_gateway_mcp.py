"""The gateway's project worker gives its sessions the project's MCP servers, and stops them
when it stops."""

from __future__ import annotations

import json
import sys
import time
from pathlib import Path

from gateway_support import worker_process

from liveforge.testing import FakeProvider, reply

SERVER = Path(__file__).resolve().parent.parent / "fixtures" / "mcp" / "tool_server.py"


def test_a_gateway_session_calls_an_mcp_tool_and_the_server_stops_with_the_worker(sample: Path):
    """A run's model calls a tool of the project's stdio MCP server and gets its answer; once
    the worker has ended, the server process is gone."""
    report = sample / "report.json"
    entry = {"command": sys.executable, "args": [str(SERVER), "stdio"]}
    entry["env"] = {"REPORT_FILE": str(report)}
    (sample / ".mcp.json").write_text(json.dumps({"mcpServers": {"shop": entry}}))
    script = [reply.tool_call("mcp__shop__lookup", {"item": "pear"}), reply.text("45 cents.")]
    with FakeProvider(script=script) as fake:
        events = []
        with worker_process(sample, fake, "ask") as (worker, send):
            assert worker.stdout is not None
            send({"op": "run", "run": "r-1", "agent_session": "", "input": "pear?"})
            while (message := json.loads(worker.stdout.readline()))["kind"] != "ended":
                if message["kind"] == "event":
                    events.append(message["event"])
            assert message["reason"] == "answer"
        [answer] = [b for b in fake.requests[1].body["messages"][-1]["content"]]
    [finished] = [e for e in events if e["type"] == "tool_finished"]
    assert finished["name"] == "mcp__shop__lookup" and not finished["is_error"]
    assert "pear costs 45 cents" in str(answer["content"])
    pid = json.loads(report.read_text())["pid"]
    assert _gone(pid, 2.0), "the MCP server outlived the gateway's worker"


def _gone(pid: int, seconds: float) -> bool:
    """True once process `pid` has exited (gone, or a zombie) within `seconds`."""
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        try:
            if "State:\tZ" in Path(f"/proc/{pid}/status").read_text():
                return True
        except OSError:
            return True
        time.sleep(0.05)
    return False
