"""The gateway over a real WebSocket: runs, idempotency, lanes, abort, approvals, auth."""

from __future__ import annotations

import json
import signal
import time
from pathlib import Path
from typing import Any

import pytest
from gateway_support import FIX, Client, GatewayProcess, check_server_message, ended, gateway_env
from websockets.exceptions import ConnectionClosed, InvalidStatus
from websockets.sync.client import ClientConnection, connect

from liveforge.testing import FakeProvider, reply


@pytest.fixture
def gateway(sample: Path, fake: FakeProvider):
    process = GatewayProcess(sample, gateway_env(fake))
    yield process
    process.stop()


def test_a_run_streams_events_and_a_retry_does_not_start_a_second_run(gateway, fake):
    """Events arrive in order with seq numbers; the same idempotency key gives the same run."""
    fake.add(reply.text("Hello from the gateway."))
    client = Client(gateway.ws_url)
    first = client.request("run", session="main", input="say hello", idempotency_key="k-1")
    assert first["ok"] and first["result"]["duplicate"] is False
    run = first["result"]["run"]
    messages = client.until(ended(run))
    events = [m for m in messages if m["type"] == "event"]
    assert [e["seq"] for e in events] == list(range(len(events)))
    assert events[-1]["event"]["type"] == "turn_ended"
    assert any(e["event"].get("text") == "Hello from the gateway." for e in events)
    assert messages[-1]["status"] == "done" and messages[-1]["reason"] == "answer"
    again = client.request("run", session="main", input="say hello", idempotency_key="k-1")
    assert again["result"] == {**first["result"], "duplicate": True, "status": "done"}
    assert len(fake.requests) == 1
    history = client.request("sessions.history", session="main")["result"]["messages"]
    assert [m["role"] for m in history] == ["user", "assistant"]
    client.close()


def test_runs_of_one_session_queue_and_each_session_sees_its_own(gateway, fake):
    """A session's second run queues behind its first (its lane) while another session runs
    at once; watchers of one session get none of the other's events."""
    fake.add(reply.text("first answer").slow(0.5), reply.text("other"), reply.text("second"))
    one, two = Client(gateway.ws_url), Client(gateway.ws_url)
    a = one.request("run", session="alpha", input="one")["result"]["run"]
    one.until(lambda m: m.get("type") == "run_status" and m["status"] == "running")
    b = two.request("run", session="beta", input="two")["result"]["run"]
    a2 = one.request("run", session="alpha", input="three")["result"]["run"]
    seen_two = two.until(ended(b))
    assert {m["run"] for m in seen_two if "run" in m} == {b}
    assert seen_two[-1]["status"] == "done"
    seen_one = one.until(ended(a2))
    queued = [m for m in seen_one if m.get("status") == "queued" and m["run"] == a2]
    assert queued[0]["position"] == 1
    assert {m["run"] for m in seen_one if "run" in m} == {a, a2}
    finals = [m["run"] for m in seen_one if m.get("status") == "done"]
    assert finals == [a, a2]
    listed = one.request("sessions.list")["result"]["sessions"]
    assert {s["session"] for s in listed} == {"alpha", "beta"}
    one.close()
    two.close()


def test_abort_stops_a_running_turn_and_the_session_goes_on(gateway, fake):
    """An aborted run ends as aborted; the next run on the session answers."""
    nap = {"code": "import time\ntime.sleep(3)"}
    fake.add(reply.tool_call("execute", nap), reply.text("after the abort"))
    client = Client(gateway.ws_url)
    run = client.request("run", session="main", input="slow")["result"]["run"]
    client.until(lambda m: m.get("event", {}).get("type") == "tool_started")
    assert client.request("abort", run=run)["ok"]
    assert client.until(ended(run))[-1]["status"] == "aborted"
    nxt = client.request("run", session="main", input="again")["result"]["run"]
    final = client.until(ended(nxt))
    assert final[-1]["status"] == "done"
    assert any(m.get("event", {}).get("text") == "after the abort" for m in final)
    client.close()


@pytest.mark.parametrize("allow", [True, False])
def test_an_approval_goes_to_the_runs_owner_and_decides(sample, fake, allow):
    """persist asks the client that started the run; approve writes the file, deny keeps it."""
    gateway = GatewayProcess(sample, gateway_env(fake), mode="auto-edit")
    fake.add(
        reply.tool_call("patch", {"path": "pricing.cart.Line.subtotal", "source": FIX}),
        reply.tool_call("persist", {"force": True}),
        reply.text("done"),
    )
    owner, other = Client(gateway.ws_url), Client(gateway.ws_url)
    run = owner.request("run", session="main", input="fix and save")["result"]["run"]
    [*_, question] = owner.until(lambda m: m.get("type") == "approval")
    assert "pricing/cart.py" in question["question"] and question["run"] == run
    answer = owner.request("approve" if allow else "deny", request=question["request"])
    assert answer["ok"] and answer["result"]["allowed"] is allow
    owner.until(ended(run))
    text = (sample / "pricing" / "cart.py").read_text()
    assert ("quantity >= BULK" in text) is allow
    assert not [m for m in other.inbox if m.get("type") == "approval"]
    again = owner.request("deny", request=question["request"])
    assert not again["ok"] and "no open question" in again["error"]["message"]
    owner.close()
    other.close()
    gateway.stop()


def test_a_shell_approval_shows_the_command_where_and_how_and_deny_keeps_it_from_running(
    fake, sample
):
    """In ask mode the question a client gets for exec carries the exact command, its
    folder, the boundary and the network, as the terminal shows them; deny: nothing runs."""
    gateway = GatewayProcess(sample, gateway_env(fake), mode="ask")
    marker = sample / "ran.txt"
    command = f"touch {marker} && echo 'quoted; $HOME'"
    fake.add(reply.tool_call("exec", {"command": command}), reply.text("declined"))
    owner = Client(gateway.ws_url)
    run = owner.request("run", session="main", input="touch it")["result"]["run"]
    [*_, question] = owner.until(lambda m: m.get("type") == "approval")
    text = question["question"]
    assert text.startswith("Allow exec (shell)?\nrun in bash:\n" + command + "\nin: . (")
    assert "inside the check boundary" in text and "network off" in text
    owner.request("deny", request=question["request"])
    owner.until(ended(run))
    assert not marker.exists()
    owner.close()
    gateway.stop()


def test_bad_messages_get_errors_that_name_the_field(gateway):
    """Invalid JSON or fields are answered with an error; the connection stays usable."""
    client = Client(gateway.ws_url)
    client.ws.send('{"type": "run", "id": "x", "session": "bad name!", "input": "hi"}')
    error = client.receive()
    assert error["ok"] is False and "session" in error["error"]["message"]
    assert client.request("health")["result"]["ok"] is True
    missing = client.request("abort", run="r-nope")
    assert "runs.list" in missing["error"]["message"]
    client.close()


def test_requests_before_connect_are_refused(gateway):
    """Only `connect` is answered until the connection is authenticated."""
    with connect(gateway.ws_url) as ws:
        refused = _exchange(ws, {"type": "health", "id": "1"})
        assert refused["error"]["type"] == "Unauthorized"


def test_a_browser_page_from_another_origin_is_refused(gateway):
    """Cross-origin WebSocket connections are closed before they can send anything."""
    with pytest.raises(Exception):  # noqa: B017 - closed during or right after the handshake
        with connect(gateway.ws_url, origin="http://evil.example") as ws:
            ws.send('{"type": "connect", "id": "1"}')
            ws.recv(timeout=5)


def test_listening_beyond_loopback_needs_a_token(sample, fake):
    """Without LIVEFORGE_GATEWAY_TOKEN a 0.0.0.0 bind is refused; with it, connect checks it."""
    with pytest.raises(RuntimeError, match="LIVEFORGE_GATEWAY_TOKEN"):
        GatewayProcess(sample, gateway_env(fake), host="0.0.0.0")
    process = GatewayProcess(
        sample, gateway_env(fake, LIVEFORGE_GATEWAY_TOKEN="s3cret-token"), host="0.0.0.0"
    )
    try:
        good = Client(process.ws_url, token="s3cret-token")
        assert good.hello["ok"]
        good.close()
        with connect(process.ws_url) as ws:
            refused = _exchange(ws, {"type": "connect", "id": "1", "token": "wrong"})
            assert refused["error"]["type"] == "Unauthorized"
    finally:
        process.stop()


def test_off_loopback_no_token_and_requests_before_connect_are_refused(sample, fake):
    """On a 0.0.0.0 bind with a token: a connect without any token is refused and the
    connection closed (4401); requests sent before connect are refused, saying to connect
    first, and start nothing."""
    fake.add(reply.text("must not run"))
    env = gateway_env(fake, LIVEFORGE_GATEWAY_TOKEN="s3cret-token")
    process = GatewayProcess(sample, env, host="0.0.0.0")
    try:
        with connect(process.ws_url) as ws:
            refused = _exchange(ws, {"type": "connect", "id": "1"})
            assert refused["ok"] is False and refused["error"]["type"] == "Unauthorized"
            assert "token" in refused["error"]["message"]
            with pytest.raises(ConnectionClosed) as closed:
                ws.recv(timeout=10)
            assert closed.value.rcvd is not None and closed.value.rcvd.code == 4401
        with connect(process.ws_url) as ws:
            early = {"type": "run", "id": "2", "session": "main", "input": "hi"}
            for request in (early, {"type": "health", "id": "3"}):
                answer = _exchange(ws, request)
                assert answer["id"] == request["id"] and answer["ok"] is False
                assert answer["error"]["type"] == "Unauthorized"
                assert "send connect first" in answer["error"]["message"]
        client = Client(process.ws_url, token="s3cret-token")
        assert client.request("runs.list")["result"]["runs"] == []
        assert client.request("sessions.list")["result"]["sessions"] == []
        client.close()
        assert fake.requests == []
    finally:
        process.stop()


def _exchange(ws: ClientConnection, request: dict[str, Any]) -> dict[str, Any]:
    """Send `request` on a raw connection; its answer, checked against the schema."""
    ws.send(json.dumps(request))
    return check_server_message(json.loads(ws.recv(timeout=10)))


def test_a_restart_keeps_queued_input_and_marks_the_running_run_interrupted(sample, fake):
    """SIGKILL during a run: after a restart that run is interrupted and the queued one runs."""
    fake.add(reply.text("cut off").slow(60), reply.text("after restart"))
    first = GatewayProcess(sample, gateway_env(fake))
    client = Client(first.ws_url)
    a = client.request("run", session="main", input="long one")["result"]["run"]
    client.until(lambda m: m.get("type") == "run_status" and m["status"] == "running")
    b = client.request("run", session="main", input="queued one")["result"]["run"]
    client.close()
    deadline = time.monotonic() + 60
    while not fake.requests and time.monotonic() < deadline:  # run a reached the model
        time.sleep(0.05)
    first.stop(signal.SIGKILL)
    second = GatewayProcess(sample, gateway_env(fake))
    try:
        client = Client(second.ws_url)
        health = client.request("health")["result"]
        assert health["interrupted"] == [a]
        client.request("watch", session="main")
        client.until(ended(b))
        runs = {r["run"]: r for r in client.request("runs.list")["result"]["runs"]}
        assert runs[a]["status"] == "interrupted" and "send the input again" in runs[a]["error"]
        assert runs[b]["status"] == "done" and runs[b]["answer"] == "after restart"
        client.close()
    finally:
        second.stop()


def test_the_protocol_schema_shipped_is_the_one_the_code_speaks():
    """protocol-v1.json equals the schema built from the message models."""
    from liveforge.gateway.protocol import schema, shipped_schema

    assert shipped_schema() == schema()


def test_http_health_answers(gateway):
    """GET /health is a cheap liveness check."""
    import httpx

    assert httpx.get(gateway.url + "health", timeout=10).json()["ok"] is True


def test_invalid_status_is_importable():
    """The websockets client's handshake error type is what cross-origin refusals raise."""
    assert issubclass(InvalidStatus, Exception)


def test_steer_cancels_the_running_turn_and_runs_next(gateway, fake):
    """Steering a busy session stops its turn and runs the new input before its queued ones."""
    nap = {"code": "import time\ntime.sleep(3)"}
    fake.add(reply.tool_call("execute", nap), reply.text("steered answer"), reply.text("queued"))
    client = Client(gateway.ws_url)
    first = client.request("run", session="main", input="slow")["result"]["run"]
    client.until(lambda m: m.get("event", {}).get("type") == "tool_started")
    later = client.request("run", session="main", input="waits")["result"]["run"]
    steered = client.request("steer", session="main", input="do this instead")["result"]["run"]
    statuses = [
        m
        for m in client.until(ended(later))
        if m["type"] == "run_status" and m["status"] != "queued"
    ]
    order = [(m["run"], m["status"]) for m in statuses if m["status"] != "running"]
    assert order == [(first, "aborted"), (steered, "done"), (later, "done")]
    client.close()


def test_server_messages_are_built_to_the_schema():
    """`server_message` completes a message with its defaults, so it carries every field the
    schema requires, and refuses one the schema would not allow."""
    from pydantic import ValidationError

    from liveforge.gateway.protocol import server_message

    status = server_message(
        {"type": "run_status", "run": "r-1", "session": "main", "status": "done"}
    )
    assert check_server_message(status)["position"] == 0 and status["project"] == ""
    with pytest.raises(ValidationError, match="status"):
        server_message({"type": "run_status", "run": "r-1", "session": "main", "status": "late"})
    with pytest.raises(ValidationError, match="type"):
        event = {"type": "event", "run": "r", "session": "s", "seq": 0, "at": 0.0, "event": {}}
        server_message(event)
