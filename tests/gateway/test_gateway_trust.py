"""The gateway answers only to its own names; bad frames; questions survive a reconnect;
Telegram's rate limit never loses an answer's end."""

from __future__ import annotations

import json
import socket
from urllib.parse import urlsplit

import httpx
import pytest
from fake_telegram import TOKEN, FakeTelegram
from gateway_support import FIX, Client, GatewayProcess, check_server_message, ended, gateway_env
from websockets.exceptions import InvalidStatus
from websockets.sync.client import connect

from liveforge.gateway.trust import HostCheck, host_name, is_loopback_name
from liveforge.testing import FakeProvider, reply

SECRET = "s3cret-token"


def _port(process: GatewayProcess) -> int:
    return int(urlsplit(process.url).port or 0)


def _handshake_as(process: GatewayProcess, host: str, *, origin: str | None = None):
    """A WebSocket handshake sent to the gateway's socket, addressed to `host` (as a browser
    does once a page's own name resolves to 127.0.0.1), from `origin` (default: that host)."""
    sock = socket.create_connection(("127.0.0.1", _port(process)), timeout=10)
    url = f"ws://{host}/ws"
    return connect(url, sock=sock, origin=origin or f"http://{host}", open_timeout=10)


def _refused(process: GatewayProcess, host: str) -> InvalidStatus:
    with pytest.raises(InvalidStatus) as refused:
        with _handshake_as(process, host) as ws:
            ws.send(json.dumps({"type": "connect", "id": "1", "token": SECRET}))
            ws.recv(timeout=5)
    return refused.value


@pytest.mark.parametrize("token", ["", SECRET], ids=["no-token", "token"])
def test_a_handshake_addressed_to_a_foreign_name_is_refused(sample, fake, token):
    """DNS rebinding: Host and Origin both `attacker.example:PORT` on a loopback gateway,
    with and without a token, is refused 403 before any WebSocket or HTTP handling; the
    gateway says so on its standard error; the same handshake addressed to localhost works."""
    env = gateway_env(fake, **({"LIVEFORGE_GATEWAY_TOKEN": token} if token else {}))
    process = GatewayProcess(sample, env)
    try:
        port = _port(process)
        refused = _refused(process, f"attacker.example:{port}")
        assert refused.response.status_code == 403
        assert b"DNS rebinding" in refused.response.body
        assert b"--allow-host attacker.example" in refused.response.body
        page = httpx.get(process.url, headers={"Host": f"attacker.example:{port}"}, timeout=10)
        assert (
            page.status_code == 403 and page.text.startswith("refused") and "<html" not in page.text
        )
        health = httpx.get(process.url + "health", headers={"Host": "attacker.example"})
        assert health.status_code == 403 and str(sample) not in health.text
        with _handshake_as(process, f"localhost:{port}") as ws:
            ws.send(json.dumps({"type": "connect", "id": "1", "token": token}))
            hello = check_server_message(json.loads(ws.recv(timeout=10)))
            assert hello["ok"] is True
        assert fake.requests == []
    finally:
        said = process.stop_and_read_log()
    assert "refused a request addressed to 'attacker.example" in said


def test_allowed_names_need_a_token_and_are_then_answered(sample, fake):
    """`--allow-host` adds a name; without a token the gateway refuses to start, with one the
    name is answered (and a foreign one still refused)."""
    allow = ("--allow-host", "box.example")
    with pytest.raises(RuntimeError, match=r"box\.example.*LIVEFORGE_GATEWAY_TOKEN"):
        GatewayProcess(sample, gateway_env(fake), args=allow)
    process = GatewayProcess(sample, gateway_env(fake, LIVEFORGE_GATEWAY_TOKEN=SECRET), args=allow)
    try:
        with _handshake_as(process, f"box.example:{_port(process)}") as ws:
            ws.send(json.dumps({"type": "connect", "id": "1", "token": SECRET}))
            assert check_server_message(json.loads(ws.recv(timeout=10)))["ok"] is True
        assert _refused(process, "other.example").response.status_code == 403
    finally:
        process.stop()


def test_names_in_host_headers():
    """Ports, brackets, case and a trailing dot do not change the name; loopback names are
    localhost, *.localhost and loopback addresses."""
    assert host_name("[::1]:8765") == "::1"
    assert host_name("LocalHost.:80") == "localhost"
    assert host_name("127.0.0.1") == "127.0.0.1"
    assert all(map(is_loopback_name, ["localhost", "app.localhost", "127.0.0.2", "[::1]:1"]))
    assert not any(map(is_loopback_name, ["attacker.example", "localhost.example", "10.0.0.1"]))
    every = HostCheck(lambda *a: None, bind="0.0.0.0")  # type: ignore[arg-type, return-value]
    assert every.allows("192.168.1.5:8765", arrived_on="192.168.1.5")
    assert not every.allows("attacker.example:8765", arrived_on="192.168.1.5")
    assert not every.allows("", arrived_on="127.0.0.1")


def test_a_binary_or_malformed_frame_gets_a_protocol_error_and_the_connection_goes_on(sample, fake):
    """A binary frame, text that is not JSON, and JSON nested too deep are each answered
    with BadMessage; the connection then still answers requests; nothing in the log is a
    traceback."""
    process = GatewayProcess(sample, gateway_env(fake))
    try:
        with connect(process.ws_url) as ws:
            for frame in (b"\x00\x01binary", "not json", "[" * 100_000):
                ws.send(frame)
                answer = check_server_message(json.loads(ws.recv(timeout=10)))
                assert answer["ok"] is False and answer["error"]["type"] == "BadMessage"
                assert answer["error"]["message"].startswith("invalid message")
            ws.send(json.dumps({"type": "connect", "id": "7"}))
            assert check_server_message(json.loads(ws.recv(timeout=10)))["ok"] is True
    finally:
        log = process.stop_and_read_log()
    assert "Traceback" not in log and "KeyError" not in log


def test_a_client_that_comes_back_gets_the_open_question_and_can_answer_it(sample, fake):
    """The client that started a run goes away during its approval question; a new client
    watching the session is told the run is running and gets the question; its answer
    decides (the file is written)."""
    process = GatewayProcess(sample, gateway_env(fake), mode="auto-edit")
    fake.add(
        reply.tool_call("patch", {"path": "pricing.cart.Line.subtotal", "source": FIX}),
        reply.tool_call("persist", {"force": True}),
        reply.text("saved"),
    )
    try:
        first = Client(process.ws_url)
        run = first.request("run", session="main", input="fix and save")["result"]["run"]
        [*_, asked] = first.until(lambda m: m.get("type") == "approval")
        first.close()
        again = Client(process.ws_url)
        assert again.request("watch", session="main")["ok"]
        told = again.inbox + again.until(lambda m: m.get("type") == "approval")
        status = [m for m in told if m.get("type") == "run_status"]
        assert status and status[0]["run"] == run and status[0]["status"] == "running"
        [question] = [m for m in told if m.get("type") == "approval"]
        assert question == asked
        assert again.request("approve", request=question["request"])["result"]["allowed"]
        assert again.until(ended(run))[-1]["status"] == "done"
        again.close()
    finally:
        process.stop()
    assert "quantity >= BULK" in (sample / "pricing" / "cart.py").read_text()


def test_a_telegram_429_on_the_final_edit_still_delivers_the_whole_answer(sample):
    """The answer's first chunk is sent as a message; the final edit carrying the whole
    answer is answered 429 (retry after 1) once; the channel waits and edits again, and the
    chat shows the whole answer."""
    telegram = FakeTelegram()
    answer = "The whole answer: " + " ".join(f"word{i}" for i in range(60))
    with (sample / "pyproject.toml").open("a", encoding="utf-8") as handle:
        handle.write(
            "\n[tool.liveforge.gateway.telegram]\n"
            f'allowed_users = [4242]\napi_base = "{telegram.base}"\npoll_timeout = 1\n'
        )
    telegram.throttle_once(lambda m, p: m == "editMessageText" and p["text"] == answer)
    chunk = len(answer) // 2 + 1  # two deltas, well inside one edit interval
    try:
        with FakeProvider(script=[reply.text(answer).chunked(chunk)]) as fake:
            process = GatewayProcess(sample, gateway_env(fake, TELEGRAM_BOT_TOKEN=TOKEN))
            try:
                telegram.say("hello", user=4242)
                telegram.wait_for(lambda calls: telegram.chat_texts(4242) == [answer])
            finally:
                process.stop()
        [(method, params)] = telegram.throttled
        assert method == "editMessageText" and params["text"] == answer
        edits = [p["text"] for m, p in telegram.calls if m == "editMessageText"]
        assert edits == [answer]
    finally:
        telegram.close()


def test_deliver_waits_as_asked_and_gives_up_only_after_its_limit():
    """`deliver` sends again after each RetryAfter until the send succeeds; when the waits
    asked for pass its limit it raises the last refusal instead of waiting on."""
    import asyncio

    from liveforge.gateway.channels import RetryAfter, deliver

    attempts: list[int] = []

    async def flaky() -> str:
        attempts.append(1)
        if len(attempts) < 3:
            raise RetryAfter(0, "sendMessage: Too Many Requests")
        return "sent"

    assert asyncio.run(deliver(flaky)) == "sent" and len(attempts) == 3

    async def refusing() -> str:
        raise RetryAfter(30, "sendMessage: Too Many Requests")

    with pytest.raises(RetryAfter, match="retry after 30s"):
        asyncio.run(deliver(refusing, max_wait=10))
