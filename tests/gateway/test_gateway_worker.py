"""The project worker process on its own: commands in on stdin, messages out on stdout."""

from __future__ import annotations

import json
from pathlib import Path

from framework_tables import HOOKS_MODULE
from gateway_support import worker_process

from liveforge.testing import FakeProvider, reply


def test_an_abort_sent_with_its_run_stops_that_run(sample: Path):
    """`run` and `abort` arriving together: the run still starts, and ends cancelled."""
    with (
        FakeProvider(script=[reply.text("too late " * 40).chunked(5).slow(0.05)]) as fake,
        worker_process(sample, fake) as (worker, send),
    ):
        assert worker.stdout is not None
        send({"op": "run", "run": "r-1", "agent_session": "", "input": "long"})
        send({"op": "abort", "run": "r-1"})
        while (message := json.loads(worker.stdout.readline()))["kind"] != "ended":
            pass
        assert message["run"] == "r-1" and message["reason"] == "cancelled"


def test_an_undo_that_leaves_a_registered_function_in_its_table_says_so(sample: Path):
    """The session's change adds `@HOOKS.register def audit`; `changes.undo` rolls it back,
    and its result carries the rollback's note: `HOOKS.by_name['audit']` still holds the
    function, and a restart of the program drops it."""
    (sample / "pricing" / "hooks.py").write_text(HOOKS_MODULE)
    added = "@HOOKS.register\ndef audit(total):\n    return total\n"
    script = [
        reply.tool_call("patch", {"path": "pricing.hooks.audit", "source": added}),
        reply.text("added"),
    ]
    with FakeProvider(script=script) as fake, worker_process(sample, fake) as (worker, send):
        assert worker.stdout is not None
        send({"op": "run", "run": "r-1", "agent_session": "", "input": "add audit"})
        session = ""
        while (message := json.loads(worker.stdout.readline()))["kind"] != "ended":
            session = message.get("agent_session", session)
        assert message["reason"] == "answer", message
        send({"op": "query", "req": "q-1", "what": "changes.undo", "session": session})
        while (message := json.loads(worker.stdout.readline()))["kind"] != "reply":
            pass
        assert message["ok"], message
        (undone,) = message["result"]["undone"]
        (note,) = undone["notes"]
        assert undone["target"] == "pricing.hooks.audit"
        assert "pricing.hooks.HOOKS.by_name['audit']" in note
        assert "may still be called there" in note and "Restart the program" in note
