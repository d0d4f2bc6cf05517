"""A session's lane over a real WebSocket: retries from another client while the run runs,
and whether input for a busy session queues or steers (configured, or said per request)."""

from __future__ import annotations

from pathlib import Path

import pytest
from gateway_support import Client, GatewayProcess, ended, gateway_env

from liveforge.testing import reply

NAP = {"code": "import time\ntime.sleep(3)"}


def _configure(project: Path, text: str) -> None:
    with (project / "pyproject.toml").open("a", encoding="utf-8") as handle:
        handle.write("\n" + text)


def test_a_retry_from_another_client_while_the_run_runs_joins_that_run(sample, fake):
    """The same idempotency key sent by a second client while the first client's run is
    still running starts nothing: the model is asked once, the second client gets the run's
    id and status and then its events and end."""
    fake.add(reply.text("one answer, slowly").chunked(3).slow(0.15))
    gateway = GatewayProcess(sample, gateway_env(fake))
    try:
        first, second = Client(gateway.ws_url), Client(gateway.ws_url)
        started = first.request("run", session="main", input="go", idempotency_key="k-9")
        run = started["result"]["run"]
        first.until(lambda m: m.get("event", {}).get("type") == "text_delta")
        retry = second.request("run", session="main", input="go", idempotency_key="k-9")
        assert retry["ok"] and retry["result"] == {
            "run": run,
            "session": "main",
            "status": "running",
            "duplicate": True,
        }
        seen = second.until(ended(run))
        assert seen[-1]["status"] == "done"
        assert {m["run"] for m in seen} == {run}
        assert any(m["type"] == "event" for m in seen)
        first.until(ended(run))
        assert len(fake.requests) == 1
        runs = second.request("runs.list")["result"]["runs"]
        assert [r["run"] for r in runs] == [run]
        first.close()
        second.close()
    finally:
        gateway.stop()


def test_configured_steer_stops_the_running_turn_and_a_request_may_still_queue(sample, fake):
    """With `busy = "steer"`, a run sent to a busy session stops its turn and runs next; a
    request saying `busy: "queue"` waits behind the running one instead."""
    _configure(sample, '[tool.liveforge.gateway]\nbusy = "steer"\n')
    fake.add(
        reply.tool_call("execute", NAP),
        reply.text("steered answer"),
        reply.text("long answer " * 8).chunked(6).slow(0.1),
        reply.text("queued answer"),
    )
    gateway = GatewayProcess(sample, gateway_env(fake))
    try:
        client = Client(gateway.ws_url)
        first = client.request("run", session="main", input="slow")["result"]["run"]
        client.until(lambda m: m.get("event", {}).get("type") == "tool_started")
        steered = client.request("run", session="main", input="this instead")["result"]["run"]
        client.until(ended(steered))
        long = client.request("run", session="main", input="talk")["result"]["run"]
        client.until(lambda m: m.get("event", {}).get("type") == "text_delta")
        queued = client.request("run", session="main", input="then this", busy="queue")
        later = queued["result"]["run"]
        client.until(ended(later))
        runs = {r["run"]: r for r in client.request("runs.list")["result"]["runs"]}
        assert runs[first]["status"] == "aborted"
        assert runs[steered]["status"] == "done" and runs[steered]["answer"] == "steered answer"
        assert runs[long]["status"] == "done" and runs[long]["answer"].startswith("long answer")
        assert runs[later]["status"] == "done" and runs[later]["answer"] == "queued answer"
        assert runs[later]["started"] >= runs[long]["ended"]
        client.close()
    finally:
        gateway.stop()


def test_by_default_a_run_sent_to_a_busy_session_queues_and_a_request_may_steer(sample, fake):
    """Without configuration input for a busy session queues (and says its place); a request
    saying `busy: "steer"` stops the running turn instead."""
    fake.add(
        reply.tool_call("execute", NAP),
        reply.text("steered answer"),
        reply.text("queued answer"),
    )
    gateway = GatewayProcess(sample, gateway_env(fake))
    try:
        client = Client(gateway.ws_url)
        first = client.request("run", session="main", input="slow")["result"]["run"]
        client.until(lambda m: m.get("event", {}).get("type") == "tool_started")
        later = client.request("run", session="main", input="waits")["result"]["run"]
        [*_, place] = client.until(lambda m: m.get("status") == "queued" and m["run"] == later)
        assert place["position"] == 1
        steer = client.request("run", session="main", input="now this", busy="steer")
        steered = steer["result"]["run"]
        client.until(ended(later))
        runs = {r["run"]: r for r in client.request("runs.list")["result"]["runs"]}
        assert runs[first]["status"] == "aborted"
        assert runs[steered]["answer"] == "steered answer"
        assert runs[later]["answer"] == "queued answer"
        client.close()
    finally:
        gateway.stop()


def test_a_busy_setting_that_is_neither_queue_nor_steer_is_a_config_error(sample: Path):
    """`busy = "sideways"` is refused naming the key and the values it takes."""
    from liveforge.config import load_config
    from liveforge.kernel.errors import ConfigError

    _configure(sample, '[tool.liveforge.gateway]\nbusy = "sideways"\n')
    with pytest.raises(ConfigError, match="busy") as caught:
        load_config(sample)
    assert "queue" in str(caught.value) and "steer" in str(caught.value)
