"""Sessions of one project at once over a real WebSocket: streams interleave, patches land
and stay each session's own (events, transcripts, diff and undo), and runs sent together
start together."""

from __future__ import annotations

import asyncio
import itertools
import json
from pathlib import Path
from typing import Any

import pytest
from gateway_support import Client, GatewayProcess, ended, gateway_env

from liveforge.gateway.core import Gateway
from liveforge.gateway.protocol import parse_client
from liveforge.testing import reply

# many sessions and processes at once: CI runs this on one Python version
pytestmark = pytest.mark.one_python

SUBTOTAL = """def subtotal(self) -> int:
    cents = self.unit_cents * self.quantity
    if self.quantity >= BULK_QUANTITY:
        cents -= round(cents * BULK_DISCOUNT)
    return cents
"""
APPLY = """def apply(self, total_cents: int) -> int:
    reduced = total_cents - total_cents * self.percent // 100 - self.cents
    return max(reduced, 0)
"""


def _deltas(messages: list[dict[str, Any]]) -> list[str]:
    """The session of each text delta, in the order the client received them."""
    return [
        m["session"]
        for m in messages
        if m["type"] == "event" and m["event"]["type"] == "text_delta"
    ]


def _transcript_targets(project: Path) -> list[list[str]]:
    """For each agent transcript of the project: the targets of its recorded changes."""
    found = []
    for path in sorted((project / ".liveforge" / "sessions").glob("*.jsonl")):
        records = [json.loads(line) for line in path.read_text().splitlines() if line.strip()]
        found.append(sorted(r["change"]["target"] for r in records if r.get("t") == "change"))
    return sorted(found)


def _transcript_statuses(project: Path) -> list[list[str]]:
    """For each agent transcript: the status moves it recorded."""
    found = []
    for path in sorted((project / ".liveforge" / "sessions").glob("*.jsonl")):
        records = [json.loads(line) for line in path.read_text().splitlines() if line.strip()]
        found.append([r["status"] for r in records if r.get("t") == "status"])
    return found


def test_two_sessions_stream_at_once_and_each_keeps_its_own_patch(sample, fake):
    """Text deltas of two sessions interleave in time; each session's patch is applied, shown
    to that session only, recorded in its transcript only, and diffed and undone per session."""
    talk = "thinking about it " * 12
    fake.add(
        reply.text(talk)
        .chunked(9)
        .slow(0.08)
        .tool_call("patch", {"path": "pricing.cart.Line.subtotal", "source": SUBTOTAL}),
        reply.text(talk)
        .chunked(9)
        .slow(0.08)
        .tool_call("patch", {"path": "pricing.coupons.Coupon.apply", "source": APPLY}),
        reply.text("alpha or beta done"),
        reply.text("alpha or beta done"),
    )
    gateway = GatewayProcess(sample, gateway_env(fake))
    try:
        client = Client(gateway.ws_url)
        alpha = client.request("run", session="alpha", input="fix subtotal")["result"]["run"]
        first = client.until(lambda m: m.get("event", {}).get("type") == "text_delta")
        beta = client.request("run", session="beta", input="fix apply")["result"]["run"]
        during = client.request("sessions.history", session="alpha")  # alpha is in its turn
        assert during["ok"], during
        assert during["result"]["messages"][0] == {
            "role": "user",
            "text": "fix subtotal",
            "tools": [],
        }
        rest = client.until(_all_ended({alpha, beta}))
        messages = first + rest
        order = _deltas(messages)
        switches = sum(1 for x, y in itertools.pairwise(order) if x != y)
        assert switches >= 4, f"the two streams did not interleave: {order}"
        finals = {m["run"]: m for m in messages if m["type"] == "run_status" and m["run"]}
        assert finals[alpha]["status"] == finals[beta]["status"] == "done"

        patched = {
            m["session"]: (m["event"]["target"], m["event"]["change_id"])
            for m in messages
            if m["type"] == "event" and m["event"]["type"] == "patch_applied"
        }
        assert {s: target for s, (target, _) in patched.items()} == {
            "alpha": "pricing.cart.Line.subtotal",
            "beta": "pricing.coupons.Coupon.apply",
        }
        assert _transcript_targets(sample) == [
            ["pricing.cart.Line.subtotal"],
            ["pricing.coupons.Coupon.apply"],
        ]
        diff_alpha = client.request("changes.diff", session="alpha")["result"]["diff"]
        diff_beta = client.request("changes.diff", session="beta")["result"]["diff"]
        assert "BULK_QUANTITY" in diff_alpha and "percent // 100" not in diff_alpha
        assert "percent // 100" in diff_beta and "BULK_QUANTITY" not in diff_beta

        undone = client.request("changes.undo", session="alpha")["result"]["undone"]
        assert [u["target"] for u in undone] == ["pricing.cart.Line.subtotal"]
        assert ["rolled_back"] in _transcript_statuses(sample)  # a restart will not re-apply
        assert client.request("changes.diff", session="alpha")["result"]["diff"] == ""
        assert "percent // 100" in client.request("changes.diff", session="beta")["result"]["diff"]
        whole = client.request("changes.diff")["result"]["diff"]
        assert "coupons.py" in whole and "cart.py" not in whole
        again = client.request("changes.undo", session="alpha")
        assert not again["ok"] and "no change in effect" in again["error"]["message"]
        foreign = client.request("changes.undo", session="alpha", change=patched["beta"][1])
        assert not foreign["ok"] and "not a change of this session" in foreign["error"]["message"]
        client.close()
    finally:
        gateway.stop()


def test_a_question_waiting_for_a_person_does_not_hold_up_another_session(sample, fake):
    """While one session's persist waits for approval, another session's patch runs and its
    run ends; then the approval is answered and the first run ends too."""
    fake.add(
        reply.tool_call("persist", {"force": True}),
        reply.tool_call("patch", {"path": "pricing.coupons.Coupon.apply", "source": APPLY}),
        reply.text("beta done"),
        reply.text("alpha done"),
    )
    gateway = GatewayProcess(sample, gateway_env(fake), mode="auto-edit")
    try:
        client = Client(gateway.ws_url)
        alpha = client.request("run", session="alpha", input="save")["result"]["run"]
        [*_, question] = client.until(lambda m: m.get("type") == "approval")
        beta = client.request("run", session="beta", input="patch")["result"]["run"]
        beta_seen = client.until(ended(beta), timeout=30)
        assert beta_seen[-1]["status"] == "done"
        assert any(m.get("event", {}).get("type") == "patch_applied" for m in beta_seen)
        assert client.request("deny", request=question["request"])["ok"]
        assert client.until(ended(alpha))[-1]["status"] == "done"
        client.close()
    finally:
        gateway.stop()


def test_a_session_that_never_ran_has_an_empty_diff_of_its_own(sample):
    """`changes.diff` of a session with no turn yet is empty (not the project's whole diff),
    and answering it starts no worker."""

    async def scenario() -> dict[str, object]:
        gateway = Gateway(sample)
        try:
            gateway.store.ensure_session("idle", "queued, never started")
            ask = parse_client('{"type": "changes.diff", "id": "1", "session": "idle"}')
            result = await gateway.request(None, ask)
            assert not gateway.worker.alive
            return result
        finally:
            await gateway.stop()

    assert asyncio.run(scenario()) == {"session": "idle", "diff": ""}


def test_a_queued_run_aborted_while_another_launches_never_starts(sample):
    """Two queued runs at start-up; the second is aborted while the first is launching (the
    worker starting): it stays aborted."""

    async def scenario() -> str:
        gateway = Gateway(sample)
        gateway.store.ensure_session("one", "first")
        gateway.store.ensure_session("two", "second")
        gateway.store.add_run("one", "first", "")
        second, _ = gateway.store.add_run("two", "second", "")
        try:
            await gateway.start()
            await asyncio.sleep(0)  # the dispatcher takes both and starts launching the first
            abort = parse_client(json.dumps({"type": "abort", "id": "1", "run": second.id}))
            assert (await gateway.request(None, abort))["aborting"]
            while gateway.running or not gateway.worker.alive:
                await asyncio.sleep(0.05)
            found = gateway.store.run(second.id)
            assert found is not None
            return found.status
        finally:
            await gateway.stop()

    assert asyncio.run(scenario()) == "aborted"


#: A project plugin: each session's start waits until MEETING sessions have started (or, at
#: worst, until a generous deadline so a failing gateway still ends), then notes how many it
#: met. Session starts run while the worker builds the session's agent.
MEETING = 3
MEETING_PLUGIN = f"""
import time
from pathlib import Path

from liveforge.declarations.plugins import hookimpl

ARRIVED = Path(__file__).parent.parent / "meeting"


@hookimpl
def on_session_start(session):
    ARRIVED.mkdir(exist_ok=True)
    (ARRIVED / session.id).touch()
    deadline = time.monotonic() + 15
    while len(list(ARRIVED.iterdir())) < {MEETING} and time.monotonic() < deadline:
        time.sleep(0.01)
    (ARRIVED.parent / f"met-{{session.id}}").write_text(str(len(list(ARRIVED.iterdir()))))
"""


def test_runs_sent_together_build_their_agents_and_stream_at_once(sample, fake):
    """Runs of three sessions sent at once (one client each) are built at the same time in
    the worker (each session's start meets the other two; built one after another, the
    first would never meet the rest), and then all three stream at once: every run's first
    text delta comes before any run's last one."""
    plugins = sample / ".liveforge" / "plugins"
    plugins.mkdir(parents=True)
    (plugins / "meeting.py").write_text(MEETING_PLUGIN)
    fake.add(*(reply.text("streaming along " * 10).chunked(8).slow(0.05) for _ in range(MEETING)))
    sessions = [f"s{i}" for i in range(MEETING)]
    gateway = GatewayProcess(sample, gateway_env(fake))
    try:
        watcher = Client(gateway.ws_url)
        for session in sessions:
            watcher.request("watch", session=session)
        clients = [Client(gateway.ws_url) for _ in sessions]
        runs = [
            client.request("run", session=session, input="go")["result"]["run"]
            for client, session in zip(clients, sessions, strict=True)
        ]
        seen = watcher.until(_all_ended(set(runs)))
        for client, run in zip(clients, runs, strict=True):
            assert client.until(ended(run))[-1]["status"] == "done"  # each owner heard its end
        met = sorted(p.read_text() for p in (sample / ".liveforge").glob("met-*"))
        assert met == [str(MEETING)] * MEETING, f"sessions met {met}, not all at once"
        order = [
            m["session"]
            for m in seen
            if m["type"] == "event" and m["event"]["type"] == "text_delta"
        ]
        firsts = [order.index(s) for s in sessions]
        lasts = [len(order) - 1 - order[::-1].index(s) for s in sessions]
        assert max(firsts) < min(lasts), f"the streams did not overlap: {order}"
        for client in [watcher, *clients]:
            client.close()
    finally:
        gateway.stop()


def _all_ended(runs: set[str]) -> Any:
    """True once every run of `runs` has had its final run_status message."""
    left = set(runs)

    def done(message: dict[str, Any]) -> bool:
        if message.get("type") == "run_status" and ended(message["run"])(message):
            left.discard(message["run"])
        return not left

    return done
